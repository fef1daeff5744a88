"""Run artefacts: `runs/<UTC time>-<git sha7>[-label].json`, one per scoring.

An artefact explains every failure without rerunning anything: the workspace's git SHA
and dirty flag, the run file's and the set's sha256, the full config, metrics overall
and per slice, latency, gate verdicts, and per question its ranks, metrics, top results
and failure kind. Schema: docs/scoring.md.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from curator.errors import InputError
from curator.scoring.runs import loads

SCHEMA = "curator.run/1"
_LABEL_RE = re.compile(r"[^A-Za-z0-9._-]+")


def git_state(root: Path) -> tuple[str | None, bool | None]:
    """(HEAD sha, dirty) of the git work tree at root; (None, None) outside git."""
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=10)
        if head.returncode != 0:
            return None, None
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None, None
    return head.stdout.strip(), bool(status.stdout.strip())


def _dumps(artefact: dict[str, Any]) -> bytes:
    try:  # optional: orjson writes a 10,000-question artefact about 8x faster; same values
        import orjson
    except ImportError:
        return dumps_stdlib(artefact)
    return orjson.dumps(artefact, default=str, option=orjson.OPT_APPEND_NEWLINE)


def dumps_stdlib(artefact: dict[str, Any]) -> bytes:
    text = json.dumps(artefact, ensure_ascii=False, separators=(",", ":"), default=str)
    return text.encode("utf-8") + b"\n"


def artefact_name(created_at: datetime, sha: str | None, label: str | None) -> str:
    stamp = created_at.strftime("%Y%m%dT%H%M%SZ")
    name = f"{stamp}-{sha[:7] if sha else 'nogit'}"
    if label:
        clean = _LABEL_RE.sub("-", label).strip("-")
        if clean:
            name += f"-{clean}"
    return name


def write_artefact(runs_dir: Path, artefact: dict[str, Any]) -> Path:
    """Write atomically under a name no other artefact has; returns the path."""
    runs_dir.mkdir(parents=True, exist_ok=True)
    created = datetime.strptime(artefact["created_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    base = artefact_name(created, artefact["workspace"].get("git_sha"), artefact.get("label"))
    data = _dumps(artefact)
    for n in range(1, 1000):
        path = runs_dir / (f"{base}.json" if n == 1 else f"{base}-{n}.json")
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        try:
            os.link(tmp, path)  # fails if the name is taken: never overwrite an artefact
        except FileExistsError:
            continue
        finally:
            tmp.unlink(missing_ok=True)
        return path
    raise InputError(str(runs_dir), f"could not find a free artefact name for {base}")


def read_artefact(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    try:
        data = loads(path.read_bytes())
    except FileNotFoundError:
        raise InputError(str(path), "no such run artefact") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(str(path), f"not a JSON run artefact ({exc})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise InputError(str(path), f"not a curator run artefact (expected schema {SCHEMA!r})")
    data["_path"] = str(path)
    return data


def list_artefacts(runs_dir: Path) -> list[Path]:
    """Stored artefacts, oldest first: by the UTC time their names start with, then by
    modification time (two runs stored in the same second)."""
    if not runs_dir.is_dir():
        return []
    found = [p for p in runs_dir.glob("*.json") if not p.name.startswith(".")]
    return sorted(found, key=lambda p: (p.name[:16], p.stat().st_mtime_ns, p.name))


def resolve_artefact(runs_dir: Path, ref: str) -> Path:
    """A path, a file name in runs/, a unique prefix or label part of one, or `latest`,
    `previous` (`latest~N` for older ones)."""
    path = Path(ref)
    if path.is_file():
        return path
    stored = list_artefacts(runs_dir)
    back = {"latest": 0, "previous": 1}.get(ref)
    tilde = re.fullmatch(r"latest~(\d+)", ref)
    if tilde:
        back = int(tilde.group(1))
    if back is not None:
        if back >= len(stored):
            raise InputError(str(runs_dir), f"{ref}: only {len(stored)} stored run artefacts")
        return stored[-1 - back]
    matches = [p for p in stored if p.name.startswith(ref) or p.stem == ref]
    if not matches:
        matches = [p for p in stored if ref in p.stem]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise InputError(ref, "no such run artefact (a path, a name in runs/, latest or previous)")
    raise InputError(ref, f"matches {len(matches)} artefacts: " + ", ".join(p.name for p in matches[:5]))

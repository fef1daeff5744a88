"""Taking a freeze: `datasets/<set>/frozen/<name>-<YYYYMMDD>[-N].jsonl` and its manifest.

A freeze holds the current rev of every active case tagged with the freeze's tag (or every
active case), plus every case an earlier freeze of the same name held: a later freeze never
drops a frozen case. A case that was retired since is carried as it was frozen.

Frozen files and manifests are created once (temporary name, fsync, hard link to the final
name, which fails rather than overwrite) and never modified; each freeze is also recorded
as one line of the set's append-only `freezes.jsonl`, and its manifest names the earlier
manifests of its name with their sha256 (a chain). Checking them is curator.freezecheck's
work; docs/export.md explains every check.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curator import __version__
from curator._process import paused_gc
from curator.appendonly import (
    JsonLines,
    append_line,
    create_once,
    file_sha256,
    line_hash,
    whole_lines,
)
from curator.errors import CuratorError, InputError
from curator.freezecheck import (
    FREEZES,
    FROZEN_DIR,
    MANIFEST_FORMAT,
    FreezeInfo,
    check_freezes,
    manifests,
)
from curator.models import Case
from curator.questionset import QuestionSet, read_cases

if TYPE_CHECKING:
    from curator.workspace import Workspace

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


@dataclass
class FreezeResult:
    name: str
    path: Path
    manifest_path: Path
    manifest: dict[str, Any]
    carried_retired: list[str] = field(default_factory=list)  # retired since, kept as frozen
    carried_untagged: list[str] = field(default_factory=list)  # no longer tagged, kept (current rev)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "file": str(self.path), "manifest": str(self.manifest_path),
            "cases": self.manifest["cases"], "count_per_slice": self.manifest["count_per_slice"],
            "carried_retired": self.carried_retired, "carried_untagged": self.carried_untagged,
        }


# ---- freezing -----------------------------------------------------------------------------


@paused_gc()
def freeze(
    ws: Workspace,
    set_name: str | None = None,
    *,
    tag: str = "regression",
    name: str | None = None,
    all_active: bool = False,
    now: datetime | None = None,
) -> FreezeResult:
    """Write a new freeze of `set_name`: active cases tagged `tag` (every active case with
    `all_active`) plus every case an earlier freeze called `name` held."""
    name = name or tag
    if not _NAME.match(name):
        raise CuratorError(f"freeze name {name!r}: use lowercase letters, digits, '-' and '_'")
    qs = ws.existing_set(set_name)
    folder = qs.root / FROZEN_DIR
    with qs.locked():
        earlier = _earlier_freezes(qs, name)
        cases = JsonLines.read(qs.cases_path)  # read once: parsed, digested and hashed below
        result = read_cases(str(qs.cases_path), cases.lines)
        bad = [p for p in result.problems if p.fatal]
        if bad:
            raise CuratorError(
                f"{qs.cases_path} has invalid lines (first: {bad[0]}); a freeze needs a clean set",
                "Run `curator verify` and fix the file first.",
            )
        prefix_lines, prefix_sha = cases.digest()
        hashes = [line_hash(line) for line in cases.lines]
        frozen_before: dict[str, str] = {}  # query_id -> the line it was last frozen as
        for _, manifest in earlier:
            frozen_path = folder / manifest["file"]
            if file_sha256(frozen_path) != manifest["sha256"]:
                raise CuratorError(
                    f"{frozen_path} does not match its manifest; refusing to build on it",
                    "Run `curator verify` to see what changed.",
                )
            for raw in whole_lines(frozen_path):
                frozen_before[json.loads(raw)["query_id"]] = raw

        chosen: list[str] = []
        carried_retired: list[str] = []
        carried_untagged: list[str] = []
        for case in result.cases.values():
            wanted = case.status == "active" and (all_active or tag in case.tags)
            if wanted:
                chosen.append(case.line())
            elif case.query_id in frozen_before:
                if case.status == "active":
                    chosen.append(case.line())
                    carried_untagged.append(case.query_id)
                else:
                    chosen.append(frozen_before[case.query_id])
                    carried_retired.append(case.query_id)
        missing = sorted(set(frozen_before) - set(result.cases))
        if missing:
            raise CuratorError(
                f"frozen cases are missing from {qs.cases_path}: {', '.join(missing[:10])}",
                "Run `curator verify`; cases.jsonl is append-only.",
            )

        if not chosen:
            raise CuratorError(
                f"nothing to freeze: no active case of set {qs.name!r}"
                + ("" if all_active else f" is tagged {tag!r}")
                + (f" and there is no earlier freeze called {name!r}" if not earlier else ""),
                f"Tag the cases that must never regress with {tag!r}, or freeze every active case with --all.",
            )
        when = now or datetime.now(UTC)
        stem = _free_stem(folder, name, when)
        slices = Counter(Case.model_validate_json(raw).slice for raw in chosen)
        body = "".join(raw + "\n" for raw in chosen)
        frozen_path = folder / f"{stem}.jsonl"
        manifest = {
            "format": MANIFEST_FORMAT,
            "name": name,
            "set": qs.name,
            "file": frozen_path.name,
            "created_at": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "selection": {"tag": None if all_active else tag, "all": all_active},
            "cases": len(chosen),
            "count_per_slice": dict(sorted(slices.items())),
            "sha256": hashlib.sha256(body.encode("utf-8")).hexdigest(),
            "line_hashes": [line_hash(raw) for raw in chosen],
            "cases_prefix": {"lines": prefix_lines, "sha256": prefix_sha, "line_hashes": hashes},
            "git": git_state(ws.root),
            "curator_version": __version__,
            "previous": [
                {"manifest": path.name, "sha256": file_sha256(path)} for path, _ in earlier
            ],
            "query_ids": [json.loads(raw)["query_id"] for raw in chosen],
            "carried_retired": carried_retired,
        }
        folder.mkdir(parents=True, exist_ok=True)
        create_once(frozen_path, body)
        manifest_path = folder / f"{stem}.json"
        create_once(manifest_path, json.dumps(manifest, indent=1) + "\n")
        record = {"manifest": manifest_path.name, "sha256": file_sha256(manifest_path), "cases": len(chosen),
                  "created_at": manifest["created_at"]}
        append_line(qs.root / FREEZES, json.dumps(record, separators=(",", ":")))
    return FreezeResult(name, frozen_path, manifest_path, manifest, carried_retired, carried_untagged)


def git(root: Path, *args: str) -> str:
    """The output of a git command in `root` (CalledProcessError if it fails)."""
    run = subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=True, text=True, errors="replace")
    return run.stdout


def git_state(root: Path) -> dict[str, Any]:
    """The workspace's git commit and whether its work tree has uncommitted changes."""
    try:
        commit = git(root, "rev-parse", "--verify", "--quiet", "HEAD").strip()
    except (subprocess.CalledProcessError, FileNotFoundError):
        return {"commit": None, "dirty": None}
    try:
        dirty = bool(git(root, "status", "--porcelain", "--untracked-files=no", "--", ".").strip())
    except subprocess.CalledProcessError:
        dirty = None
    return {"commit": commit or None, "dirty": dirty}


def _free_stem(folder: Path, name: str, when: datetime) -> str:
    base = f"{name}-{when.strftime('%Y%m%d')}"
    stem, n = base, 1
    while (folder / f"{stem}.jsonl").exists() or (folder / f"{stem}.json").exists():
        n += 1
        stem = f"{base}-{n}"
    return stem


# ---- finding freezes -------------------------------------------------------------------------


def _earlier_freezes(qs: QuestionSet, name: str) -> list[tuple[Path, dict[str, Any]]]:
    found = []
    for path, manifest, error in manifests(qs):
        if error:
            raise InputError(str(path), error, hint="Run `curator verify`.")
        assert manifest is not None
        if manifest["name"] == name:
            found.append((path, manifest))
    return found


def find_freeze(qs: QuestionSet, ref: str) -> tuple[Path, dict[str, Any]] | None:
    """A freeze by file stem (`regression-20261130`, `-2`), manifest path, or name (the
    newest freeze of that name)."""
    candidates = [(p, m) for p, m, err in manifests(qs) if m is not None]
    for path, manifest in candidates:
        if ref in (path.stem, path.name, str(path), manifest["file"]):
            return path, manifest
    named = [(p, m) for p, m in candidates if m["name"] == ref]
    return named[-1] if named else None


# ---- listing ------------------------------------------------------------------------------------


def list_freezes(ws: Workspace, set_name: str | None = None) -> list[FreezeInfo]:
    """Every freeze of a set, oldest first, each with its verify status."""
    qs = ws.existing_set(set_name)
    return check_freezes(qs)[0]



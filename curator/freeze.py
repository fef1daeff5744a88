"""Frozen subsets: `datasets/<set>/frozen/<name>-<YYYYMMDD>[-N].jsonl` and their manifests.

A freeze holds the current rev of every active case tagged with the freeze's tag (or every
active case), plus every case an earlier freeze of the same name held: a later freeze never
drops a frozen case. A case that was retired since is carried as it was frozen.

Frozen files and manifests are created once (temporary name, fsync, hard link to the final
name, which fails rather than overwrite) and never modified. `check_freezes` is what
`curator verify` runs over them (and `curator freezes` lists); docs/export.md explains every
check.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from collections import Counter
from dataclasses import asdict, dataclass, field
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
    first_change,
    is_subsequence,
    line_hash,
    whole_lines,
)
from curator.errors import CuratorError, InputError
from curator.models import Case
from curator.problems import Problem
from curator.questionset import QuestionSet, query_id_of, read_cases

if TYPE_CHECKING:
    from curator.workspace import Workspace

MANIFEST_FORMAT = "curator-freeze/1"
FROZEN_DIR = "frozen"
FREEZES = "freezes.jsonl"  # in the set folder: one line per freeze, append-only like cases.jsonl
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


@dataclass
class FreezeInfo:
    """One freeze as `curator freezes` lists it."""

    manifest_path: Path
    manifest: dict[str, Any] | None
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(p.fatal for p in self.problems)

    def to_dict(self) -> dict[str, Any]:
        m = self.manifest or {}
        listed = {key: m.get(key) for key in ("name", "file", "created_at", "cases")}
        return {
            "manifest": str(self.manifest_path), **listed, "count_per_slice": m.get("count_per_slice", {}),
            "git": m.get("git"), "ok": self.ok, "problems": [asdict(p) for p in self.problems],
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


# ---- reading manifests ----------------------------------------------------------------------


def manifests(qs: QuestionSet) -> list[tuple[Path, dict[str, Any] | None, str | None]]:
    """(path, manifest or None, error) for each manifest of a set, oldest first."""
    folder = qs.root / FROZEN_DIR
    if not folder.is_dir():
        return []
    out: list[tuple[Path, dict[str, Any] | None, str | None]] = []
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            _require_keys(data)
        except (ValueError, KeyError, TypeError) as exc:
            out.append((path, None, f"not a freeze manifest: {exc}"))
            continue
        out.append((path, data, None))
    out.sort(key=lambda item: ((item[1] or {}).get("created_at", ""), _stem_order(item[0])))
    return out


def _stem_order(path: Path) -> tuple[str, int]:
    match = re.match(r"^(.*-\d{8})(?:-(\d+))?$", path.stem)
    return (match.group(1), int(match.group(2) or 1)) if match else (path.stem, 0)


def _require_keys(data: Any) -> None:
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
        raise ValueError(f"expected an object with format {MANIFEST_FORMAT!r}")
    for key in ("name", "file", "sha256", "line_hashes", "cases_prefix", "query_ids"):
        if key not in data:
            raise KeyError(f"missing key {key!r}")


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


# ---- checking ---------------------------------------------------------------------------------


@paused_gc()
def check_freezes(
    qs: QuestionSet,
    cases: JsonLines | None = None,
    *,
    line_hashes: list[str] | None = None,
    query_ids: set[str] | None = None,
) -> tuple[list[FreezeInfo], list[str]]:
    """Check every manifest of a set. `cases` (cases.jsonl as read), its line hashes and
    query_ids are what verify already has; what is not given is worked out here. Gives an
    info per manifest and per frozen file without one, and notes for the verify report."""
    folder = qs.root / FROZEN_DIR
    infos: list[FreezeInfo] = []
    notes: list[str] = []
    listed = manifests(qs)
    records = _freeze_records(qs)
    if not listed and not folder.is_dir() and not records:
        return infos, notes
    file = cases or JsonLines.read(qs.cases_path)
    if line_hashes is None:
        line_hashes = [line_hash(line) for line in file.lines]
    if query_ids is None:
        query_ids = {query_id for query_id in map(query_id_of, file.lines) if query_id is not None}
    claimed: set[str] = set()
    merged = False  # a freeze's prefix is there only with lines inserted (a union merge)
    by_name: dict[str, list[tuple[Path, dict[str, Any]]]] = {}
    for path, manifest, error in listed:
        info = FreezeInfo(path, manifest)
        infos.append(info)
        if error or manifest is None:
            info.problems.append(Problem(str(path), None, error or "unreadable manifest"))
            continue
        claimed.add(manifest["file"])
        merged |= _check_one(qs, path, manifest, (file, line_hashes, query_ids), info, by_name.get(manifest["name"], []))
        by_name.setdefault(manifest["name"], []).append((path, manifest))
    _check_records(qs, records, infos)
    for orphan in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
        if orphan.name not in claimed:
            problem = Problem(
                str(orphan), None,
                "frozen file without a manifest (deleted, or a freeze was interrupted); "
                "restore the manifest from git, or remove the file if the freeze never finished",
            )
            infos.append(FreezeInfo(orphan, None, [problem]))
    if infos:
        good = sum(1 for i in infos if i.ok)
        notes.append(f"{good} of {len(infos)} freeze manifest(s) check out")
    if merged and all(i.ok for i in infos):
        notes.append(
            "cases.jsonl has lines inserted after a freeze's prefix (a union merge); "
            "every line the freezes were taken from is intact and in order"
        )
    return infos, notes


def _check_one(
    qs: QuestionSet,
    path: Path,
    manifest: dict[str, Any],
    cases: tuple[JsonLines, list[str], set[str]],
    info: FreezeInfo,
    earlier: list[tuple[Path, dict[str, Any]]],
) -> bool:
    """Add the manifest's problems to `info`; `cases` is cases.jsonl, its line hashes and
    query_ids. True if its prefix is intact only with lines inserted (a union merge)."""
    file, hashes, ids = cases
    merged = False
    problems = info.problems
    frozen = path.parent / manifest["file"]
    # 1. The frozen file is exactly what was written.
    if not frozen.is_file():
        problems.append(Problem(str(frozen), None, f"frozen file named by {path.name} is missing"))
    elif file_sha256(frozen) != manifest["sha256"]:
        problems.append(_frozen_difference(frozen, manifest["line_hashes"]))
    # 2. Every frozen case still exists in cases.jsonl.
    for number, query_id in enumerate(manifest["query_ids"], start=1):
        if query_id not in ids:
            message = f"frozen case {query_id!r} no longer exists in {qs.cases_path}"
            problems.append(Problem(str(frozen), number, message))
    # 3. The cases.jsonl prefix it was taken from is still there.
    prefix = manifest["cases_prefix"]
    if file.digest(int(prefix["lines"])) != (prefix["lines"], prefix["sha256"]):
        old = prefix.get("line_hashes", [])
        if is_subsequence(old, hashes):
            merged = True
        else:
            index, verb = first_change(old, hashes)
            message = f"line {index} as of freeze {path.name} was {verb}; cases.jsonl is append-only"
            problems.append(Problem(str(qs.cases_path), index, message))
    # 3b. Its counts are recomputed from the frozen file, and each frozen line is a case
    #     revision of cases.jsonl (byte for byte, or the same record).
    if frozen.is_file():
        _check_counts(qs, path, manifest, frozen, set(hashes), file, problems)
    # 4. A later freeze never drops what an earlier one of the same name held.
    held = set(manifest["query_ids"])
    for earlier_path, earlier_manifest in earlier:
        dropped = [q for q in earlier_manifest["query_ids"] if q not in held]
        if dropped:
            problems.append(Problem(
                str(path), None, f"drops {len(dropped)} case(s) frozen in {earlier_path.name}: {', '.join(dropped[:5])}"
            ))
    # 5. Earlier freezes it was built on are still there, unchanged.
    for previous in manifest.get("previous", []):
        earlier_manifest = path.parent / previous["manifest"]
        if not earlier_manifest.is_file():
            problems.append(Problem(str(earlier_manifest), None, f"earlier freeze named by {path.name} is missing"))
        elif file_sha256(earlier_manifest) != previous["sha256"]:
            problems.append(Problem(str(earlier_manifest), None, f"changed since {path.name} was built on it"))
    return merged


def _frozen_difference(frozen: Path, expected: list[str]) -> Problem:
    file = JsonLines.read(frozen)
    actual = [line_hash(line) for line in file.lines]
    if file.torn:
        return Problem(str(frozen), file.count + 1, "last line is cut off (file truncated or appended to)")
    present = set(actual)
    for index, wanted in enumerate(expected):
        if index < len(actual) and actual[index] == wanted:
            continue
        if wanted not in present:
            return Problem(str(frozen), index + 1, "frozen line was edited or removed")
        return Problem(str(frozen), index + 1, "frozen lines were reordered")
    if len(actual) > len(expected):
        return Problem(str(frozen), len(expected) + 1, "lines were added to a frozen file")
    return Problem(str(frozen), None, "contents differ from the manifest's sha256")


# ---- listing ------------------------------------------------------------------------------------


def list_freezes(ws: Workspace, set_name: str | None = None) -> list[FreezeInfo]:
    """Every freeze of a set, oldest first, each with its verify status."""
    qs = ws.existing_set(set_name)
    return check_freezes(qs)[0]


def _freeze_records(qs: QuestionSet) -> list[tuple[int, dict[str, Any]]]:
    """(line number, record) of each line of the set's freezes.jsonl."""
    path = qs.root / FREEZES
    out = []
    for number, line in enumerate(JsonLines.read(path).lines, start=1):
        try:
            record = json.loads(line)
        except ValueError:
            record = {}
        out.append((number, record if isinstance(record, dict) else {}))
    return out


def _check_records(qs: QuestionSet, records: list[tuple[int, dict[str, Any]]], infos: list[FreezeInfo]) -> None:
    """Every freeze freezes.jsonl records still has its manifest, unchanged, and its file:
    deleting the newest freeze, any freeze or frozen/ is caught."""
    where = str(qs.root / FREEZES)
    folder = qs.root / FROZEN_DIR
    problems: list[Problem] = []
    for number, record in records:
        name = record.get("manifest")
        if not isinstance(name, str) or "sha256" not in record:
            problems.append(Problem(where, number, "not a freeze record (expected manifest and sha256)"))
            continue
        path = folder / name
        if not path.is_file():
            problems.append(Problem(where, number, f"the freeze {name} recorded here is missing from {folder}"))
        elif file_sha256(path) != record["sha256"]:
            problems.append(Problem(where, number, f"the manifest {name} changed since it was recorded here"))
    if problems:
        infos.append(FreezeInfo(qs.root / FREEZES, None, problems))


def _check_counts(
    qs: QuestionSet, path: Path, manifest: dict[str, Any], frozen: Path, case_hashes: set[str],
    cases: JsonLines, problems: list[Problem],
) -> None:
    file = JsonLines.read(frozen)
    slices: Counter[str] = Counter()
    by_key: dict[tuple[str, int], bytes] | None = None
    for number, line in enumerate(file.lines, start=1):
        try:
            case = Case.model_validate_json(line)
        except ValueError:
            problems.append(Problem(str(frozen), number, "not a valid case"))
            continue
        slices[case.slice] += 1
        if line_hash(line) in case_hashes:
            continue
        if by_key is None:
            by_key = {}
            for raw in cases.lines:
                match = re.match(rb'^\{"query_id":"([a-z0-9-]+)","rev":([0-9]+),', raw)
                if match:
                    by_key[(match.group(1).decode(), int(match.group(2)))] = raw
        original = by_key.get((case.query_id, case.rev))
        same = False
        if original is not None:
            try:
                same = Case.model_validate_json(original) == case
            except ValueError:
                same = False
        if not same:
            problems.append(Problem(
                str(frozen), number, f"{case.query_id} rev {case.rev} is not that case revision of {qs.cases_path}"
            ))
    if manifest.get("cases") != file.count:
        problems.append(Problem(str(path), None, f"says {manifest.get('cases')} cases; the frozen file has {file.count}"))
    if manifest.get("count_per_slice") != dict(sorted(slices.items())):
        problems.append(Problem(str(path), None, "count_per_slice does not match the frozen file"))

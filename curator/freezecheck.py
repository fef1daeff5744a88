"""Checking frozen subsets: their manifests, the chain of freezes and `freezes.jsonl`.

A freeze is `frozen/<name>-<YYYYMMDD>[-N].jsonl` plus a manifest `<same stem>.json`
(`MANIFEST_FORMAT`), and one line of the set's append-only `freezes.jsonl` (the manifest's
name and sha256). `check_freezes` is what `curator verify` runs over them and `curator
freezes` lists: the frozen file is what was written; its counts are recomputed; each frozen
line is a case revision of cases.jsonl; the cases.jsonl prefix it came from is intact; a
later freeze drops nothing an earlier one held; every freeze freezes.jsonl records, and
every earlier manifest a later one names, is still there unchanged. docs/export.md lists
each problem as it is reported. Writing a freeze is curator.freeze's.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from curator._process import paused_gc
from curator.appendonly import JsonLines, file_sha256, first_change, is_subsequence, line_hash
from curator.appendonly import fingerprints as line_fingerprints
from curator.models import Case
from curator.problems import Problem
from curator.questionset import QuestionSet, query_id_of

MANIFEST_FORMAT = "curator-freeze/1"
FROZEN_DIR = "frozen"
FREEZES = "freezes.jsonl"  # in the set folder: one line per freeze, append-only like cases.jsonl


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


# ---- reading manifests ---------------------------------------------------------------------


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


# ---- checking ---------------------------------------------------------------------------------


@paused_gc()
def check_freezes(
    qs: QuestionSet,
    cases: JsonLines | None = None,
    *,
    fingerprints: list[int] | None = None,
    query_ids: set[str] | None = None,
) -> tuple[list[FreezeInfo], list[str]]:
    """Check every manifest of a set. `cases` (cases.jsonl as read), its line fingerprints
    (`appendonly.fingerprints`) and query_ids are what verify already has; what is not
    given is worked out here. Gives an info per manifest and per frozen file without one,
    and notes for the verify report."""
    folder = qs.root / FROZEN_DIR
    infos: list[FreezeInfo] = []
    notes: list[str] = []
    listed = manifests(qs)
    records = _freeze_records(qs)
    if not listed and not folder.is_dir() and not records:
        return infos, notes
    file = cases or JsonLines.read(qs.cases_path)
    if fingerprints is None:
        fingerprints = line_fingerprints(file.lines)
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
        merged |= _check_one(qs, path, manifest, (file, fingerprints, query_ids), info, by_name.get(manifest["name"], []))
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
    cases: tuple[JsonLines, list[int], set[str]],
    info: FreezeInfo,
    earlier: list[tuple[Path, dict[str, Any]]],
) -> bool:
    """Add the manifest's problems to `info`; `cases` is cases.jsonl, its line fingerprints
    and query_ids. True if its prefix is intact only with lines inserted (a union merge)."""
    file, case_fingerprints, ids = cases
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
        hashes = [line_hash(line) for line in file.lines]  # as the manifest has them: only now needed
        if is_subsequence(old, hashes):
            merged = True
        else:
            index, verb = first_change(old, hashes)
            message = f"line {index} as of freeze {path.name} was {verb}; cases.jsonl is append-only"
            problems.append(Problem(str(qs.cases_path), index, message))
    # 3b. Its counts are recomputed from the frozen file, and each frozen line is a case
    #     revision of cases.jsonl (byte for byte, or the same record).
    if frozen.is_file():
        _check_counts(qs, path, manifest, frozen, (file, case_fingerprints), problems)
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
    qs: QuestionSet, path: Path, manifest: dict[str, Any], frozen: Path,
    case_lines: tuple[JsonLines, list[int]], problems: list[Problem],
) -> None:
    file = JsonLines.read(frozen)
    cases, case_fingerprints = case_lines
    # the frozen lines found among the case lines by fingerprint, then compared byte for byte
    wanted = set(line_fingerprints(file.lines))
    in_cases = {cases.lines[index] for index, mark in enumerate(case_fingerprints) if mark in wanted}
    in_cases.intersection_update(file.lines)
    slices: Counter[str] = Counter()
    by_key: dict[tuple[str, int], bytes] | None = None
    for number, line in enumerate(file.lines, start=1):
        try:
            case = Case.model_validate_json(line)
        except ValueError:
            problems.append(Problem(str(frozen), number, "not a valid case"))
            continue
        slices[case.slice] += 1
        if line in in_cases:
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

"""The local checkpoint: what a passing verify saw, and the gate that builds on it.

A checkpoint (`.curator/checkpoints/<set>.json`, git-ignored) records, for each of the
set's append-only files (cases.jsonl, changelog.jsonl, freezes.jsonl), how many bytes and
lines a passing verify read and the sha256 of those bytes; beside it, a fingerprint per
line (`<set>.<file>.lines`: each line's CRC-32 and length), read only when the prefix no
longer matches, to say which line changed or to accept a union merge. It also holds each case's latest rev and whether
it is retired, and a seal of what else verify depended on (git HEAD, frozen/, a journal).

- `check_history`: without git, the append-only rule over the three files;
- `advance`: the gate's incremental path. If the checkpoint's bytes are still the files'
  prefix (one sha256 over them), frozen/ is unchanged and any commit since only appended
  (`githistory.only_appended_since`), only the lines appended since are parsed in full;
  when they are clean appends the checkpoint moves past them. Anything else (an edited
  prefix, a new freeze, a rewritten commit, an odd rev) is left to a full verify.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from curator import __version__
from curator.appendonly import (
    JsonLines,
    byte_problems,
    fingerprints,
    first_change,
    is_subsequence,
    line_hash,
    write_durably,
)
from curator.githistory import only_appended_since
from curator.models import Case, ChangeEntry, utcnow
from curator.problems import Problem

if TYPE_CHECKING:
    from curator.questionset import QuestionSet

FORMAT = 3  # 3: line fingerprints (2: a sha1 prefix per line, as text; 1: no number)
FILES = ("cases.jsonl", "changelog.jsonl", "freezes.jsonl")
FROZEN_DIR = "frozen"


@dataclass
class Verified:
    """What a passing verify read, as its checkpoint records it: each file as read, the
    hash of each of its lines, and each case's latest rev and whether it is retired."""

    files: dict[str, JsonLines]
    hashes: dict[str, list[int]]  # each line's fingerprint
    revs: dict[str, int]
    retired: set[str]


# ---- reading and writing ------------------------------------------------------------------------


def load(qs: QuestionSet) -> dict[str, Any] | None:
    """The set's checkpoint record (a checkpoint of an earlier format is read as one)."""
    path = qs.checkpoint_path
    try:
        record: Any = json.loads(path.read_text(encoding="utf-8")) if path else None
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict):
        return None
    if record.get("format") not in (2, FORMAT):  # format 2 is read for its history check
        return _from_format_1(record)
    return record


def _from_format_1(record: dict[str, Any]) -> dict[str, Any] | None:
    """A checkpoint written before the format had a number: cases.jsonl by line count,
    its line hashes inline, changelog.jsonl by line count without line hashes."""
    if "lines" not in record or "sha256" not in record:
        return None
    files = {"cases.jsonl": {"lines": record["lines"], "sha256": record["sha256"],
                             "hashes": record.get("line_hashes", [])}}
    if "changelog_lines" in record:
        files["changelog.jsonl"] = {"lines": record["changelog_lines"], "sha256": record["changelog_sha256"]}
    return {"format": 1, "at": record.get("at", "?"), "curator": record.get("curator"), "files": files,
            "seal": record.get("seal")}


HASH_LINE = 17  # format 2: a line's hash in its text sidecar, 16 hex digits and a newline
FINGERPRINT = array("Q").itemsize  # format 3: 8 bytes a line, in this machine's byte order


def line_hashes(qs: QuestionSet, checkpoint: dict[str, Any], name: str) -> list[int] | list[str]:
    """What the checkpoint has of each line of `name` it covers: fingerprints (format 3) or
    the sha1 prefixes of `appendonly.line_hash` (formats 1 and 2); [] if unknown, or if the
    sidecar file does not match the digest the checkpoint recorded of it."""
    entry = checkpoint["files"].get(name, {})
    if "hashes" in entry:
        return list(entry["hashes"])
    current = checkpoint.get("format") == FORMAT
    path = _hashes_path(qs, name, current)
    size = int(entry.get("lines", 0)) * (FINGERPRINT if current else HASH_LINE)
    if path is None:
        return []
    try:
        with open(path, "rb") as fh:
            data = fh.read(size)
    except OSError:
        return []
    if len(data) != size or hashlib.sha256(data).hexdigest() != entry.get("hashes_sha256"):
        return []
    return array("Q", data).tolist() if current else data.decode("ascii").split()


def save(qs: QuestionSet, verified: Verified) -> dict[str, Any] | None:
    """Record what a passing verify read (the files exactly as verified: a line appended
    meanwhile is checked by the next verify, never trusted unseen)."""
    path = qs.checkpoint_path
    if path is None:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    files = {}
    for name, file in verified.files.items():
        data = array("Q", verified.hashes[name]).tobytes()
        digest = hashlib.sha256(data).hexdigest()
        sidecar = path.with_name(f"{qs.name}.{name}.lines")
        if digest != _sidecar_digest(sidecar, len(data)):  # else it holds these fingerprints already
            write_durably(sidecar, data)
        path.with_name(f"{qs.name}.{name}.hashes").unlink(missing_ok=True)  # format 2's
        files[name] = {"bytes": file.size, "lines": file.count, "sha256": file.digest()[1],
                       "hashes_sha256": digest}
    return _write(qs, files, verified.revs, verified.retired)


def _sidecar_digest(path: Path, size: int) -> str | None:
    """The sha256 of a sidecar file if it is `size` bytes long (None if not, or unreadable)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(size + 1)
    except OSError:
        return None
    return hashlib.sha256(data).hexdigest() if len(data) == size else None


def _write(qs: QuestionSet, files: dict[str, Any], revs: dict[str, int], retired: set[str]) -> dict[str, Any]:
    assert qs.checkpoint_path is not None
    record = {"format": FORMAT, "at": utcnow(), "curator": __version__, "files": files,
              "revs": " ".join(f"{query_id} {rev}" for query_id, rev in revs.items()),
              "retired": " ".join(sorted(retired)), "seal": seal(qs)}
    qs.checkpoint_path.parent.mkdir(parents=True, exist_ok=True)
    write_durably(qs.checkpoint_path, json.dumps(record, separators=(",", ":")))
    return record


def recorded_revs(checkpoint: dict[str, Any]) -> dict[str, int]:
    """Each case's latest rev as the checkpoint records it."""
    words = checkpoint["revs"].split()  # "query_id rev query_id rev ...": quicker to read than JSON
    return dict(zip(words[::2], map(int, words[1::2]), strict=True))


def _hashes_path(qs: QuestionSet, name: str, current: bool = True) -> Path | None:
    """The sidecar of `name`: fingerprints (format 3), else format 2's text hashes."""
    path = qs.checkpoint_path
    return path.with_name(f"{qs.name}.{name}.{'lines' if current else 'hashes'}") if path else None


def _append_hashes(qs: QuestionSet, name: str, entry: dict[str, Any], lines: list[bytes]) -> str | None:
    """Append the fingerprints of `lines` to the sidecar after the `entry["lines"]` it holds
    (anything after those, left by a crash, is cut); gives the digest of the sidecar as it
    now is, or None if its recorded part no longer matches."""
    path = _hashes_path(qs, name)
    assert path is not None
    size = int(entry["lines"]) * FINGERPRINT
    new = array("Q", fingerprints(lines)).tobytes()
    try:
        with open(path, "r+b") as fh:
            data = fh.read(size)
            if len(data) != size or hashlib.sha256(data).hexdigest() != entry.get("hashes_sha256"):
                return None
            fh.seek(size)
            fh.truncate()
            fh.write(new)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError:
        return None
    return hashlib.sha256(data + new).hexdigest()


def seal(qs: QuestionSet) -> dict[str, Any]:
    """What else a passing verify depended on: the git HEAD, frozen/ and a pending journal."""
    try:
        run = subprocess.run(["git", "-C", str(qs.root), "rev-parse", "--verify", "--quiet", "HEAD"],
                             capture_output=True, text=True, check=False)
        head = run.stdout.strip() if run.returncode == 0 else ""
    except OSError:
        head = ""
    frozen = qs.root / FROZEN_DIR
    listing = []
    for path in sorted(frozen.iterdir()) if frozen.is_dir() else []:
        stat = path.stat()
        listing.append([path.name, stat.st_size, stat.st_mtime_ns])
    return {"head": head, "frozen": listing, "pending": (qs.root / ".pending.json").exists()}


def prefix_intact(file: JsonLines, entry: dict[str, Any]) -> bool:
    """Whether the file still starts with the bytes the checkpoint entry describes."""
    if "bytes" not in entry:  # format 1: by line count
        lines = int(entry["lines"])
        return file.digest(lines) == (lines, entry["sha256"])
    size, lines = int(entry["bytes"]), int(entry["lines"])
    if size == file.size:  # the whole file: its digest is kept for the next checkpoint
        return file.digest()[1] == entry["sha256"]
    # the same digest of as many lines: the same bytes, so the same `size` too
    return size < file.size and file.digest(lines) == (lines, entry["sha256"])


# ---- the append-only rule without git -----------------------------------------------------------


def check_history(
    qs: QuestionSet, checkpoint: dict[str, Any], files: dict[str, JsonLines], hashes: Callable[[str], list[int]]
) -> tuple[list[Problem], list[str]]:
    """The lines the checkpoint saw in each file are still there, unchanged and in order (a
    union merge may have inserted lines among them); `hashes(name)` gives the fingerprint of
    each line of a file as read (a checkpoint of an earlier format has sha1 hashes: the
    lines are hashed that way for it). Gives problems and notes."""
    problems: list[Problem] = []
    notes: list[str] = []
    for name, file in files.items():
        entry = checkpoint["files"].get(name)
        if entry is None or prefix_intact(file, entry):
            continue
        old = line_hashes(qs, checkpoint, name)
        if not old:
            problems.append(Problem(
                str(file.path), None,
                f"changed since the checkpoint of {checkpoint['at']} (its line hashes are gone, so the line is "
                f"unknown); {name} is append-only",
            ))
            continue
        current: list[int] | list[str] = (
            hashes(name) if checkpoint.get("format") == FORMAT else [line_hash(line) for line in file.lines])
        if is_subsequence(old, current):
            notes.append(f"{name}: lines were inserted after the shared prefix (a union merge); "
                         "every checkpointed line is intact")
            continue
        index, verb = first_change(old, current)
        problems.append(Problem(
            str(file.path), index,
            f"line {index} as of the checkpoint of {checkpoint['at']} was {verb}; {name} is append-only",
        ))
    return problems, notes


# ---- the gate's incremental path ----------------------------------------------------------------


def advance(qs: QuestionSet) -> bool:
    """True if the set is sound as far as the gate is concerned (no error verify would
    report), proven from the checkpoint and the lines appended since, which are parsed in
    full; the checkpoint then moves past them. False: a full verify must decide."""
    checkpoint = load(qs)
    if not checkpoint or checkpoint.get("format") != FORMAT or checkpoint.get("curator") != __version__:
        return False
    now, before = seal(qs), checkpoint.get("seal") or {}
    if now["pending"] or before.get("frozen") != now["frozen"]:  # a pending journal, a freeze
        return False
    moved = before.get("head") != now["head"]  # commits since: only appends, or a full verify
    if moved and not only_appended_since(qs.root, str(before.get("head", "")), [*FILES, "judgments.jsonl"]):
        return False
    appended: dict[str, list[bytes]] = {}
    files: dict[str, Any] = {}
    for name in FILES:
        tail = _appended(qs.root / name, checkpoint["files"].get(name))
        if tail is None:
            return False
        appended[name], files[name] = tail
    if appended["freezes.jsonl"]:  # a freeze is checked in full
        return False
    state = _check_appended_lines(checkpoint, appended["cases.jsonl"], appended["changelog.jsonl"])
    if state is None:
        return False
    if not appended["cases.jsonl"] and not appended["changelog.jsonl"] and not moved:
        return True  # unchanged: nothing to record
    for name, lines in appended.items():  # the sidecars first: a crash leaves extra hashes, never too few
        if lines:
            digest = _append_hashes(qs, name, checkpoint["files"][name], lines)
            if digest is None:
                return False  # a damaged sidecar: the full verify writes it anew
            files[name]["hashes_sha256"] = digest
        else:
            files[name]["hashes_sha256"] = checkpoint["files"][name].get("hashes_sha256")
    revs, retired = state
    _write(qs, files, revs, retired)
    return True


def _appended(path: Path, entry: dict[str, Any] | None) -> tuple[list[bytes], dict[str, Any]] | None:
    """The whole lines appended to `path` after the checkpoint `entry`, and the entry that
    covers them too; None if the file no longer starts with the checkpoint's bytes or the
    new bytes are not clean UTF-8 with LF line ends. The checkpointed bytes are hashed block
    by block as they are read; only the new ones are kept."""
    if entry is None:
        return None
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            if not _hash_exactly(fh, int(entry["bytes"]), digest) or digest.hexdigest() != entry["sha256"]:
                return None
            data = fh.read()
    except FileNotFoundError:
        if entry["bytes"]:
            return None
        data = b""
    end = data.rfind(b"\n") + 1  # a torn last line is no line yet
    if not end:
        return [], entry
    new = data[:end]
    if byte_problems(new):
        return None
    digest.update(new)
    lines = new.split(b"\n")[:-1]
    return lines, {"bytes": int(entry["bytes"]) + end, "lines": int(entry["lines"]) + len(lines),
                   "sha256": digest.hexdigest()}


def _hash_exactly(fh: io.BufferedReader, size: int, digest: Any) -> bool:
    """Feed the next `size` bytes of `fh` to `digest`; False if the file is shorter."""
    block = memoryview(bytearray(1 << 20))
    while size:
        got = fh.readinto(block[: min(size, len(block))])
        if not got:
            return False
        digest.update(block[:got])
        size -= got
    return True


def _check_appended_lines(
    checkpoint: dict[str, Any], cases: list[bytes], changes: list[bytes]
) -> tuple[dict[str, int], set[str]] | None:
    """Each appended case line is a valid case and its rev the next of its case; each
    appended change-log line is a valid entry with an action that fits; the two explain
    each other. Gives the new (revs, retired), or None at the first thing that does not fit."""
    revs = recorded_revs(checkpoint)
    retired = set(checkpoint["retired"].split())
    was_retired: dict[tuple[str, int], bool] = {}
    validate_case = Case.__pydantic_validator__.validate_json
    case_keys = set()
    for line in cases:
        try:
            case = validate_case(line)
        except ValidationError:
            return None
        if case.rev != revs.get(case.query_id, 0) + 1:
            return None  # a skipped rev or a second line of one rev: verify explains it
        was_retired[(case.query_id, case.rev - 1)] = case.query_id in retired
        revs[case.query_id] = case.rev
        if case.status == "retired":
            retired.add(case.query_id)
        else:
            retired.discard(case.query_id)
        was_retired[(case.query_id, case.rev)] = case.status == "retired"
        case_keys.add((case.query_id, case.rev))
    validate_entry = ChangeEntry.__pydantic_validator__.validate_json
    change_keys = set()
    for line in changes:
        try:
            entry = validate_entry(line)
        except ValidationError:
            return None
        key = (entry.query_id, entry.rev)
        if key not in case_keys or key in change_keys:
            return None  # no case line appended for it: verify explains it
        if (entry.action == "add") != (entry.rev == 1):
            return None
        is_retired, was = was_retired[key], was_retired.get((entry.query_id, entry.rev - 1), False)
        if (entry.action == "retire" and not is_retired) or (is_retired and not was and entry.action != "retire"):
            return None  # the action does not fit the revision (setchecks.check_actions)
        change_keys.add(key)
    if case_keys != change_keys:
        return None
    return revs, retired

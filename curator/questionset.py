"""Append-only question-set files: `datasets/<set>/cases.jsonl` and `changelog.jsonl`.

Writing rules (docs/formats.md):

- one whole line per record, written with a single `write`, flushed and fsynced;
- every write happens under an exclusive `flock` on `<set>/.lock`, so two processes never
  interleave and `query_id`s are allocated without races;
- a case line and its change-log line form one unit: both are first written to
  `<set>/.pending.json` (fsynced), then appended; a crash between the two appends is
  finished by the next writer or reader that takes the lock, so neither is left alone;
- a torn last line (a crash mid-write) is never parsed as data; the next append moves it
  to `<set>/.torn-<time>` and truncates the file back to its last whole line.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import marshal
import mmap
import os
import re
import struct
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property, partial
from itertools import count
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import ValidationError

from curator import __version__
from curator._process import can_fork, fork, paused_gc
from curator.errors import CuratorError
from curator.models import Case, ChangeAction, ChangeEntry, utcnow
from curator.text import query_slug

CASES = "cases.jsonl"
CHANGELOG = "changelog.jsonl"


@dataclass
class Problem:
    path: str
    line: int | None
    message: str
    fatal: bool = True

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.message}"


@dataclass
class ReadResult:
    cases: dict[str, Case]  # latest rev of each query_id, in first-seen order
    history: dict[str, list[Case]]  # every rev of each query_id, in file order
    lines: int
    problems: list[Problem] = field(default_factory=list)


class QuestionSet:
    """One question set on disk. Safe for several processes at once."""

    def __init__(self, root: str | os.PathLike[str], *, checkpoint_dir: Path | None = None):
        self.root = Path(root)
        self.name = self.root.name
        self.cases_path = self.root / CASES
        self.changelog_path = self.root / CHANGELOG
        self._lock_path = self.root / ".lock"
        self._pending_path = self.root / ".pending.json"
        self._checkpoint_dir = checkpoint_dir
        self._ids_cache: tuple[int, int, set[str]] = (0, 0, set())  # offset, inode, ids

    def exists(self) -> bool:
        return self.cases_path.is_file()

    def create(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        for path in (self.cases_path, self.changelog_path):
            path.touch(exist_ok=True)

    # ---- locking and recovery ---------------------------------------------------------

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the set's exclusive write lock; finishes any interrupted append first."""
        self.create()
        with open(self._lock_path, "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                self._recover()
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _recover(self) -> None:
        for path in (self.cases_path, self.changelog_path):
            _repair_torn_tail(path)
        if not self._pending_path.exists():
            return
        try:
            pending = json.loads(self._pending_path.read_text(encoding="utf-8"))
            units = [(self.cases_path, pending["case"]), (self.changelog_path, pending["change"])]
        except (ValueError, KeyError):
            # The journal itself was torn: neither line was appended yet, drop it.
            self._pending_path.unlink()
            return
        for path, line in units:
            if line not in _tail_lines(path, 4):
                _append_line(path, line)
        self._pending_path.unlink()
        _fsync_dir(self.root)

    def _append_unit(self, case: Case, change: ChangeEntry) -> None:
        case_line, change_line = case.line(), change.line()
        _write_durably(self._pending_path, json.dumps({"case": case_line, "change": change_line}))
        _append_line(self.cases_path, case_line)
        _append_line(self.changelog_path, change_line)
        self._pending_path.unlink()

    # ---- writing ------------------------------------------------------------------------

    def add(
        self, case: Case | dict[str, Any], *, reviewer: str = "", versions: dict[str, str] | None = None
    ) -> Case:
        """Append a new case (a Case, or a dict of its fields without `query_id`). Its
        `query_id` is the one given if still unused, else a slug of the query made unique
        within the set; ids are never reused, retired ones included. `rev` is 1."""
        data = case.model_dump() if isinstance(case, Case) else dict(case)
        with self.locked():
            used = self._used_ids()
            wanted = data.get("query_id") or query_slug(str(data.get("query", "")))
            query_id = wanted if wanted not in used else _next_free(wanted, used)
            data.update(query_id=query_id, rev=1, at=utcnow(), reviewer=reviewer or data.get("reviewer", ""))
            try:
                stored = Case.model_validate(data)
            except ValidationError as exc:
                raise CuratorError(f"{self.cases_path}: not a valid case: {_errors(exc)}") from None
            change = ChangeEntry(
                query_id=query_id, rev=1, action="add", reviewer=stored.reviewer, versions=versions or {}
            )
            self._append_unit(stored, change)
            return stored

    def revise(
        self,
        query_id: str,
        change: Callable[[Case], dict[str, Any]] | dict[str, Any],
        *,
        action: ChangeAction,
        reason: str,
        reviewer: str = "",
        versions: dict[str, str] | None = None,
    ) -> Case:
        """Append rev+1 of a case with `change` applied (a dict of fields, or a function of
        the latest rev returning one). The latest rev is read under the lock, parsing only
        the lines that mention this case (`latest_rev`), so an edit costs the same in a set
        of 10 cases or 10,000."""
        with self.locked():
            latest = self.latest_rev(query_id)
            if latest is None:
                raise CuratorError(f"{self.cases_path}: no case with query_id {query_id!r}")
            updates = change(latest) if callable(change) else dict(change)
            data = latest.model_dump()
            data.update(updates)
            data.update(rev=latest.rev + 1, at=utcnow(), reviewer=reviewer or latest.reviewer)
            if action == "retire":
                data["status"] = "retired"
            try:
                revised = Case.model_validate(data)
            except ValidationError as exc:
                raise CuratorError(f"{query_id}: the change would make an invalid case: {_errors(exc)}") from None
            entry = ChangeEntry(
                query_id=query_id,
                rev=revised.rev,
                action=action,
                reason=reason,
                reviewer=revised.reviewer,
                versions=versions or {},
            )
            self._append_unit(revised, entry)
            return revised

    def retire(self, query_id: str, *, reason: str, reviewer: str = "", versions: dict[str, str] | None = None) -> Case:
        return self.revise(query_id, {}, action="retire", reason=reason, reviewer=reviewer, versions=versions)

    def _used_ids(self) -> set[str]:
        """Every query_id the file ever held. Called under the lock; reads only the lines
        appended since the last call (the file is append-only), so a keep costs the same
        in a set of 10 cases or 10,000. Anything else (a shorter file, another inode)
        means a full re-read."""
        try:
            stat = self.cases_path.stat()
        except FileNotFoundError:
            return set()
        offset, inode, used = self._ids_cache
        if inode != stat.st_ino or stat.st_size < offset:
            offset, used = 0, set()
        with open(self.cases_path, "rb") as fh:
            fh.seek(offset)
            for raw in fh:
                if not raw.endswith(b"\n"):
                    break  # a torn tail: not an id yet
                offset += len(raw)
                match = _KEY.match(raw)
                if match:
                    used.add(match.group(1).decode())
                    continue
                try:
                    used.add(json.loads(raw)["query_id"])
                except (ValueError, KeyError, TypeError):
                    continue
        self._ids_cache = (offset, stat.st_ino, used)
        return used

    # ---- reading -----------------------------------------------------------------------

    @paused_gc()
    def read(self, *, until_line: int | None = None, until_time: str | None = None) -> ReadResult:
        """The latest rev of each case. `until_line` / `until_time` read the set as it was
        (only lines up to that line number / written at or before that time)."""
        cases: dict[str, Case] = {}
        history: dict[str, list[Case]] = {}
        problems: list[Problem] = []
        count = 0
        for number, raw, whole in _iter_lines(self.cases_path):
            if until_line is not None and number > until_line:
                break
            if not whole:
                problems.append(
                    Problem(str(self.cases_path), number, "torn last line (interrupted write) ignored", fatal=False)
                )
                break
            count = number
            if not raw.strip():
                problems.append(Problem(str(self.cases_path), number, "empty line"))
                continue
            try:
                case = Case.model_validate_json(raw)
            except ValidationError as exc:
                problems.append(Problem(str(self.cases_path), number, f"not a valid case: {_errors(exc)}"))
                continue
            if until_time is not None and case.at > until_time:
                continue
            cases[case.query_id] = case
            history.setdefault(case.query_id, []).append(case)
        return ReadResult(cases=cases, history=history, lines=count, problems=problems)

    def active(self) -> list[Case]:
        return [c for c in self.read().cases.values() if c.status == "active"]

    def changelog(self) -> list[ChangeEntry]:
        entries = []
        for _, raw, whole in _iter_lines(self.changelog_path):
            if whole and raw.strip():
                try:
                    entries.append(ChangeEntry.model_validate_json(raw))
                except ValidationError:
                    continue
        return entries

    def prefix_digest(self, lines: int | None = None) -> tuple[int, str]:
        """(line count, sha256) of the first `lines` whole lines of cases.jsonl (all if None)."""
        return _prefix_digest(self.cases_path, lines)

    # ---- checkpoints -------------------------------------------------------------------

    @property
    def checkpoint_path(self) -> Path | None:
        return self._checkpoint_dir / f"{self.name}.json" if self._checkpoint_dir else None

    def load_checkpoint(self) -> dict[str, Any] | None:
        path = self.checkpoint_path
        if not path or not path.exists():
            return None
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            return None

    def save_checkpoint(self, scan: SetScan) -> dict[str, Any] | None:
        """Remember the files as a passing verify read them (`report.scan`), so a later
        verify can tell whether any earlier line was edited, removed or reordered, and need
        not check the unchanged lines again."""
        path = self.checkpoint_path
        if not path:
            return None
        count, digest = scan.cases.digest()
        changes, changes_digest = scan.changelog.digest()
        record = {
            "at": utcnow(), "curator": __version__, "lines": count, "sha256": digest, "line_hashes": scan.line_hashes,
            "changelog_lines": changes, "changelog_sha256": changes_digest,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_durably(path, json.dumps(record))
        return record

    def latest_rev(self, query_id: str) -> Case | None:
        """`read().cases.get(query_id)`, parsing only the lines that mention the id: a set of
        many thousand cases answers in a few milliseconds instead of a full read."""
        needle = json.dumps(query_id).encode()
        latest = None
        if not self.cases_path.exists():
            return None
        with open(self.cases_path, "rb") as fh:
            for raw in fh:
                if needle not in raw or not raw.endswith(b"\n"):  # a torn last line is no data
                    continue
                try:
                    case = Case.model_validate_json(raw)
                except ValidationError:
                    continue
                if case.query_id == query_id:
                    latest = case
        return latest


# ---- verification -------------------------------------------------------------------------


@dataclass
class VerifyReport:
    set_name: str
    cases: int = 0
    active: int = 0
    lines: int = 0
    problems: list[Problem] = field(default_factory=list)
    unknown_ids: dict[str, list[str]] = field(default_factory=dict)  # passage id -> query_ids
    notes: list[str] = field(default_factory=list)
    scan: SetScan | None = field(default=None, repr=False)  # what verify read (None if no set)

    @property
    def ok(self) -> bool:
        return not any(p.fatal for p in self.problems)

    def to_dict(self) -> dict[str, Any]:
        return {
            "set": self.set_name,
            "ok": self.ok,
            "cases": self.cases,
            "active": self.active,
            "lines": self.lines,
            "problems": [
                {"path": p.path, "line": p.line, "message": p.message, "fatal": p.fatal} for p in self.problems
            ],
            "unknown_passage_ids": self.unknown_ids,
            "notes": self.notes,
        }


@dataclass
class SetScan:
    """What one verify read of a set. Its checkpoint and the freeze checks use this instead of
    reading the files again, so they describe the files exactly as they were verified."""

    cases: JsonLines
    changelog: JsonLines
    line_hashes: list[str]  # of each whole cases.jsonl line
    query_ids: set[str]  # every query_id with a valid line in cases.jsonl


@paused_gc()
def verify(qs: QuestionSet, *, known_ids: Callable[[set[str]], set[str]] | None = None, strict: bool = False) -> VerifyReport:
    """Check a set's files: schema, rev order, change-log pairing, labelled passage ids
    (via `known_ids`), and that no earlier line changed since the last checkpoint.

    Each file is read once. The schema checks of a big set run in two processes
    (`_in_two_processes`); lines a passing verify of this curator version already checked,
    byte for byte unchanged since, get no second schema check."""
    report = VerifyReport(qs.name)
    if not qs.exists():
        report.problems.append(Problem(str(qs.cases_path), None, "no such question set (file missing)"))
        return report
    checkpoint = qs.load_checkpoint()
    cases, changelog = JsonLines.read(qs.cases_path), JsonLines.read(qs.changelog_path)
    cases_path, changelog_path = str(qs.cases_path), str(qs.changelog_path)

    # Per cases.jsonl line: hash, query_id (None if invalid), rev, and (status, relevant ids)
    # or the error message; per change-log line: query_id, rev, error message. Trusted
    # lines give only their key, read off the line.
    trusted, keys = _trusted_keys(checkpoint, cases, "lines", "sha256", _KEY)
    trusted_changes, change_keys = _trusted_keys(checkpoint, changelog, "changelog_lines", "changelog_sha256", _CHANGE_KEY)
    hashes = checkpoint.get("line_hashes", [])[:trusted] if checkpoint and trusted else []
    if len(hashes) != trusted:
        hashes = _line_hashes(cases.lines[:trusted])
    ids, revs = [key[1].decode() for key in keys], [int(key[2]) for key in keys]
    details: list[Any] = [None] * trusted
    last_rev: dict[str, int] = {}
    latest: dict[str, int] = {}  # query_id -> index of its latest valid rev
    _check_revs(report, cases_path, 1, (ids, revs, details), last_rev, latest)
    change_ids, change_revs = [key[1].decode() for key in change_keys], [int(key[2]) for key in change_keys]
    change_problems: list[Problem] = []
    jobs = [(_check_cases, cases.blob[cases.offset(trusted):]),
            (partial(_check_lines, ChangeEntry), changelog.blob[changelog.offset(trusted_changes):])]
    for (*checked, more_hashes), (more_ids, more_revs, messages) in _in_two_processes(jobs):
        _check_revs(report, cases_path, len(ids) + 1, checked, last_rev, latest)
        for column, more in zip((ids, revs, details), checked, strict=True):
            column += more
        hashes += more_hashes
        if None in more_ids:
            change_problems += [
                Problem(changelog_path, number, message)
                for number, query_id, message in zip(count(len(change_ids) + 1), more_ids, messages, strict=False)
                if query_id is None
            ]
        change_ids += more_ids
        change_revs += more_revs
        for file in (cases, changelog):  # digests for the checkpoint and freezes, computed once:
            file.sha256()  # after the first part, while the child still works
    report.lines = cases.count = len(ids)  # the parts counted the lines: no count of the whole blob
    changelog.count = len(change_ids)
    if cases.torn:
        report.problems.append(
            Problem(cases_path, len(ids) + 1, "torn last line (interrupted write); the next append repairs it", fatal=False)
        )
    # A trusted case's latest line still has to be read for its status and labels.
    unread = [index for index in latest.values() if index < trusted]
    unread_lines = b"".join(cases.lines[i] + b"\n" for i in unread)
    done = 0
    for ((unread_ids, _, unread_details),) in _in_two_processes([(partial(_check_lines, Case), unread_lines)]):
        for index, query_id, detail in zip(unread[done:], unread_ids, unread_details, strict=False):
            if query_id is None:  # only if the schema changed without a version bump
                report.problems.append(Problem(cases_path, index + 1, detail))
                del latest[ids[index]]
            details[index] = detail
        done += len(unread_ids)

    report.problems += change_problems
    if changelog.torn:
        report.problems.append(Problem(changelog_path, len(change_ids) + 1, "torn last line ignored", fatal=False))
    _check_pairing(report, cases_path, changelog_path, (ids, revs), (change_ids, change_revs))

    _check_labels(report, cases_path, latest, details, known_ids, strict)
    _check_history(checkpoint, cases, hashes, report)
    report.scan = SetScan(cases, changelog, hashes, set(latest))
    return report


Columns = tuple[list[Any], ...]  # one entry per line in each


def _check_revs(
    report: VerifyReport, path: str, first: int, checked: Columns, last_rev: dict[str, int], latest: dict[str, int]
) -> None:
    """Report the invalid lines and the revs out of order (each case's run 1, 2, 3...) among
    checked cases.jsonl lines numbered from `first`. `last_rev` (query_id -> highest rev yet)
    and `latest` (query_id -> index of its last valid line) carry on across calls."""
    ids, revs, details = checked
    for number, query_id, rev in zip(count(first), ids, revs, strict=False):
        if query_id is None:
            report.problems.append(Problem(path, number, details[number - first]))
            continue
        latest[query_id] = number - 1
        previous = last_rev.get(query_id, 0)
        if rev != previous + 1:
            report.problems.append(Problem(path, number, f"{query_id}: rev {rev} where {previous + 1} was expected"))
        if rev > previous:
            last_rev[query_id] = rev


def _check_pairing(
    report: VerifyReport, cases_path: str, changelog_path: str, case_keys: tuple[list[Any], list[int]],
    change_keys: tuple[list[Any], list[int]]
) -> None:
    """Each valid case line (query_id, rev) needs a valid change-log line and the other way
    round. Curator appends the two in the same order, so equal columns settle it without
    building sets; a union merge may interleave them differently, which is no problem."""
    if case_keys == change_keys:
        return
    cases, changes = set(zip(*case_keys, strict=True)), set(zip(*change_keys, strict=True))
    cases.discard((None, 0))
    changes.discard((None, 0))
    for query_id, rev in sorted(cases - changes):
        report.problems.append(Problem(changelog_path, None, f"{query_id} rev {rev} has no change-log entry"))
    for query_id, rev in sorted(changes - cases):
        report.problems.append(Problem(cases_path, None, f"change-log entry for {query_id} rev {rev} has no case line"))


def _check_cases(lines: list[bytes]) -> Columns:
    """`_check_lines` of cases, and the line hashes as a fourth column."""
    return (*_check_lines(Case, lines), _line_hashes(lines))


def _check_lines(model: type[Case] | type[ChangeEntry], lines: list[bytes]) -> Columns:
    """Schema-check lines of `model`. Columns, one entry per line: query_id (None if the line
    is invalid), rev (0), and a case's (status, relevant passage ids) (the error message)."""
    validate = model.__pydantic_validator__.validate_json  # model_validate_json, minus a call
    noun = "case" if model is Case else "change entry"
    ids: list[str | None] = []
    revs: list[int] = []
    details: list[Any] = []
    for line in lines:
        try:
            record = validate(line)
        except ValidationError as exc:
            ids.append(None)
            revs.append(0)
            details.append(f"not a valid {noun}: {_errors(exc)}")
            continue
        ids.append(record.query_id)
        revs.append(record.rev)
        details.append((record.status, [rel.id for rel in record.relevant]) if model is Case else None)
    return ids, revs, details


# Below this many lines in all a second process costs more than it saves.
PARALLEL_MIN_LINES = 10_000


# Work is split into this many chunks: this process takes them from the front, the child
# from the back, until they meet, so each does as much as its core allows (on a shared
# machine the child may get far less than half a core).
CHUNKS = 128


def _in_two_processes(jobs: list[tuple[Callable[[list[bytes]], Columns], bytes]]) -> Iterator[list[Columns]]:
    """`[check(lines) for check, lines in jobs]` (each gives columns, one entry per line),
    where each job's lines come as one bytes of whole lines, yielded in parts in line order,
    with a forked child on another core checking parts too: schema checks are pure Python
    under the GIL, so threads would not help. A part is a run of whole lines cut at about
    1/CHUNKS of the bytes, split into lines by whichever process checks it. Each part
    this process checks is yielded at once, so what the caller does with it overlaps the
    child's work (and leaves the child more parts). The two claim parts through a shared
    page (each writes only its own end; at worst both check the same part, never neither).
    The child writes each part's columns with `marshal` (plain lists, tuples, strings and
    ints: several times faster than pickle) to an in-memory file as soon as it has them,
    and publishes how far it got in the shared page; this process loads them between its
    own parts, so little is left to receive when the two meet. Parts the child did not
    deliver (it failed in any way) are checked here. A process with other threads running
    never forks (a lock one of them held would stay held in the child)."""

    parts_file = _parts_file() if _has_lines([blob for _, blob in jobs], PARALLEL_MIN_LINES) and can_fork() else None
    if parts_file is None:
        yield [check(_split(blob)) for check, blob in jobs]
        return
    cuts = [_cuts(blob, CHUNKS) for _, blob in jobs]

    def part(index: int) -> list[Columns]:
        return [check(_split(blob[at[index] : at[index + 1]])) for (check, blob), at in zip(jobs, cuts, strict=True)]

    # Shared with the child: [last part claimed here, first part claimed there, bytes it wrote].
    ends = mmap.mmap(-1, 24)
    struct.pack_into("qqq", ends, 0, -1, CHUNKS, 0)
    with parts_file as sent:
        pid = fork()
        if pid == 0:  # the child: claim parts from the back until the two meet, write each, exit
            code = 1
            try:
                for index in range(CHUNKS - 1, -1, -1):
                    if index <= struct.unpack_from("q", ends, 0)[0]:
                        break
                    struct.pack_into("q", ends, 8, index)
                    record = marshal.dumps((index, part(index)))
                    sent.write(struct.pack("q", len(record)) + record)
                    sent.flush()
                    struct.pack_into("q", ends, 16, sent.tell())
                code = 0
            finally:
                os._exit(code)
        theirs: dict[int, list[Columns]] = {}
        received = 0

        def receive() -> None:  # what the child published (only whole records)
            nonlocal received
            while received < struct.unpack_from("q", ends, 16)[0]:
                (size,) = struct.unpack("q", os.pread(sent.fileno(), 8, received))
                index, columns = marshal.loads(os.pread(sent.fileno(), size, received + 8))
                theirs[index] = columns
                received += 8 + size

        index = 0
        try:
            while index < struct.unpack_from("q", ends, 8)[0]:
                struct.pack_into("q", ends, 0, index)
                yield part(index)
                index += 1
                receive()
        finally:
            struct.pack_into("q", ends, 0, CHUNKS)  # if the caller stopped early, so does the child
            os.waitpid(pid, 0)
        receive()
    for rest in range(index, CHUNKS):
        yield theirs[rest] if rest in theirs else part(rest)


def _parts_file() -> BinaryIO | None:
    """An in-memory file for the child's results, if the system gives one."""
    try:
        return open(os.memfd_create("curator-verify-parts"), "r+b")
    except (AttributeError, OSError):  # no memfd_create (not Linux), or a sandbox forbids it
        return None


def _has_lines(blobs: list[bytes], wanted: int) -> bool:
    """Whether the blobs hold `wanted` lines in all, counted no further than needed (counting
    the newlines of 100 MB costs 30-50 ms)."""
    for blob in blobs:
        for start in range(0, len(blob), 1 << 20):
            wanted -= blob.count(b"\n", start, start + (1 << 20))
            if wanted <= 0:
                return True
    return wanted <= 0


def _split(blob: bytes) -> list[bytes]:
    """The lines of a bytes of whole lines."""
    return blob.split(b"\n")[:-1]


def _cuts(blob: bytes, parts: int) -> list[int]:
    """Offsets cutting a bytes of whole lines into `parts` runs of whole lines of about the
    same size: part k is blob[cuts[k] : cuts[k + 1]]."""
    cuts = [0]
    for k in range(1, parts):
        at = len(blob) * k // parts
        cuts.append(blob.find(b"\n", at - 1) + 1 if at else 0)
    cuts.append(len(blob))
    return cuts


def _check_labels(
    report: VerifyReport,
    path: str,
    latest: dict[str, int],  # query_id -> index of its latest rev in `details`
    details: list[tuple[str, list[str]]],  # per line: (status, relevant passage ids)
    known_ids: Callable[[set[str]], set[str]] | None,
    strict: bool,
) -> None:
    report.cases = len(latest)
    labelled: set[str] = set()
    for index in latest.values():  # one pass: the details lie all over memory, each pass costs
        status, passage_ids = details[index]
        if status == "active":
            report.active += 1
            labelled.update(passage_ids)
    if known_ids is None:
        return
    unknown = labelled - known_ids(labelled)
    if not unknown:
        return
    # Which cases name them: only worked out when there are some.
    named: dict[str, list[str]] = {}
    for query_id, index in latest.items():
        status, passage_ids = details[index]
        for pid in unknown.intersection(passage_ids) if status == "active" else ():
            named.setdefault(pid, []).append(query_id)
    report.unknown_ids = dict(sorted(named.items()))
    for pid, qids in report.unknown_ids.items():
        report.problems.append(
            Problem(path, None, f"passage {pid!r} (in {', '.join(qids)}) is not in the corpus", fatal=strict)
        )


def _check_history(checkpoint: dict[str, Any] | None, cases: JsonLines, hashes: list[str], report: VerifyReport) -> None:
    if not checkpoint:
        report.notes.append("no earlier checkpoint: this verify records the first one")
        return
    n = checkpoint["lines"]
    count, digest = cases.digest(n)
    if count == n and digest == checkpoint["sha256"]:
        return
    # Not a plain prefix any more. A union merge of two branches keeps every line of each
    # side in order, so accept the file when the checkpointed lines are a subsequence of it.
    old = checkpoint.get("line_hashes", [])
    if _is_subsequence(old, hashes):
        report.notes.append(
            "lines were inserted after the shared prefix (a union merge); every checkpointed line is intact"
        )
        return
    present = set(hashes)
    missing = next((i for i, h in enumerate(old) if h not in present), None)
    if missing is not None:
        index, verb = missing + 1, "edited or removed"
    else:
        index = next(i for i, h in enumerate(old) if i >= len(hashes) or hashes[i] != h) + 1
        verb = "moved (lines reordered)"
    report.problems.append(
        Problem(
            str(cases.path),
            index,
            f"line {index} as of the checkpoint of {checkpoint['at']} was {verb}; cases.jsonl is append-only",
        )
    )


_KEY = re.compile(rb'^\{"query_id":"([a-z0-9][a-z0-9-]*)","rev":([1-9][0-9]*),')


_CHANGE_KEY = re.compile(rb'^\{"at":"[^"]*","query_id":"([a-z0-9][a-z0-9-]*)","rev":([1-9][0-9]*),')


def _trusted_keys(
    checkpoint: dict[str, Any] | None, file: JsonLines, lines_key: str, sha_key: str, pattern: re.Pattern[bytes]
) -> tuple[int, list[re.Match[bytes]]]:
    """How many leading lines of the file a passing verify by this curator version checked,
    unchanged since, and their keys read off each line with `pattern` (curator writes the
    key first). Trust ends at the first line the pattern does not fit."""
    if not checkpoint or checkpoint.get("curator") != __version__ or lines_key not in checkpoint:
        return 0, []
    lines, digest = file.digest(checkpoint[lines_key])
    if lines != checkpoint[lines_key] or digest != checkpoint[sha_key]:
        return 0, []
    keys = [pattern.match(line) for line in file.lines[:lines]]
    if None in keys:
        del keys[keys.index(None):]
    return len(keys), keys  # type: ignore[return-value]


def _is_subsequence(needle: list[str], haystack: list[str]) -> bool:
    it = iter(haystack)
    return all(any(h == wanted for h in it) for wanted in needle)


# ---- file primitives ---------------------------------------------------------------------


@dataclass
class JsonLines:
    """One read of a JSONL file: its whole lines as UTF-8 bytes (invalid UTF-8 as U+FFFD, as
    a reader sees it), which is also what digests and line hashes are computed over. A torn
    last line is left out. The blob is split into `lines` only when asked: a first verify
    lets each process split the parts it checks."""

    path: Path
    blob: bytes
    torn: bool
    _digests: dict[int | None, str] = field(default_factory=dict, repr=False)

    @classmethod
    def read(cls, path: Path) -> JsonLines:
        data = path.read_bytes() if path.exists() else b""
        return cls(path, _whole_lines_blob(data), not data.endswith(b"\n") and bool(data))

    @cached_property
    def lines(self) -> list[bytes]:
        return _split(self.blob)

    @cached_property
    def count(self) -> int:
        return self.blob.count(b"\n")

    def offset(self, lines: int) -> int:
        """Where the line after the first `lines` lines starts."""
        if not lines:
            return 0  # without counting or splitting the blob
        if lines >= self.count:
            return len(self.blob)
        return sum(map(len, self.lines[:lines])) + lines

    def digest(self, lines: int | None = None) -> tuple[int, str]:
        """(line count, sha256) of the first `lines` whole lines (all if None)."""
        if lines is not None and lines >= self.count:
            lines = None
        return self.count if lines is None else lines, self.sha256(lines)

    def sha256(self, lines: int | None = None) -> str:
        """The sha256 of the first `lines` whole lines (all if None), computed once."""
        if lines not in self._digests:
            end = len(self.blob) if lines is None else self.offset(lines)
            self._digests[lines] = hashlib.sha256(memoryview(self.blob)[:end]).hexdigest()
        return self._digests[lines]


def _iter_lines(path: Path) -> Iterator[tuple[int, str, bool]]:
    """(line number, text, whole) for each line; `whole` is False for a last line with no
    newline, which is what a crash mid-write leaves behind."""
    if not path.exists():
        return
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            whole = raw.endswith(b"\n")
            yield number, raw.rstrip(b"\n").decode("utf-8", errors="replace"), whole


def _prefix_digest(path: Path, lines: int | None = None) -> tuple[int, str]:
    """(line count, sha256) of the first `lines` whole lines of a file (all if None), each
    hashed as its UTF-8 text plus a newline."""
    return _digest(_whole_lines_blob(path.read_bytes() if path.exists() else b""), lines)


def _whole_lines_blob(data: bytes) -> bytes:
    """The whole lines of a file's bytes (a torn last line is no part of any prefix) as a
    reader sees them: invalid UTF-8 as U+FFFD."""
    blob = data[: data.rfind(b"\n") + 1]
    if blob.isascii():  # much faster than decoding to find out
        return blob
    try:
        blob.decode("utf-8")
    except UnicodeDecodeError:
        return blob.decode("utf-8", errors="replace").encode("utf-8")
    return blob


def _digest(blob: bytes, lines: int | None) -> tuple[int, str]:
    count, end = blob.count(b"\n"), len(blob)
    if lines is not None and lines < count:
        end = 0
        for _ in range(lines):
            end = blob.index(b"\n", end) + 1
        count = lines
    return count, hashlib.sha256(memoryview(blob)[:end]).hexdigest()


def _line_hashes(lines: list[bytes]) -> list[str]:
    sha1 = hashlib.sha1
    return [sha1(line).hexdigest()[:16] for line in lines]


def _tail_lines(path: Path, count: int) -> list[str]:
    if not path.exists():
        return []
    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        fh.seek(max(0, size - 1_000_000))
        data = fh.read().decode("utf-8", errors="replace")
    return data.splitlines()[-count:]


def _repair_torn_tail(path: Path) -> None:
    if not path.exists():
        return
    with open(path, "rb+") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        if size == 0:
            return
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return
        # Find the last newline; everything after it is a torn fragment.
        block = 65536
        end = size
        cut = 0
        while end > 0:
            start = max(0, end - block)
            fh.seek(start)
            chunk = fh.read(end - start)
            index = chunk.rfind(b"\n")
            if index >= 0:
                cut = start + index + 1
                break
            end = start
        fh.seek(cut)
        fragment = fh.read()
        quarantine = path.parent / f".torn-{path.stem}-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
        _write_durably(quarantine, fragment.decode("utf-8", errors="replace"))
        fh.truncate(cut)
        fh.flush()
        os.fsync(fh.fileno())


def _append_line(path: Path, line: str) -> None:
    if "\n" in line:
        raise ValueError("a record must be one line")
    data = (line + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        written = os.write(fd, data)
        while written < len(data):  # os.write may write less than asked on some filesystems
            written += os.write(fd, data[written:])
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_durably(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _next_free(stem: str, used: set[str]) -> str:
    n = 2
    while f"{stem}-{n}" in used:
        n += 1
    return f"{stem}-{n}"


def _errors(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'record'}: {err['msg']}" for err in exc.errors()
    )

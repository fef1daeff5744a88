"""Question sets: `datasets/<set>/cases.jsonl` and `changelog.jsonl`, append-only.

Every write takes the set's `flock` (`<set>/.lock`, so `query_id`s are allocated without
races) and appends a case line and its change-log line as one unit through the journal
`<set>/.pending.json`, with the primitives and rules of `curator.appendonly`
(docs/formats.md). Checking the files is `curator.verify`'s work; this module only reads
and appends.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from curator._process import paused_gc
from curator.appendonly import (
    JsonLines,
    append_together,
    exclusive_lock,
    finish_interrupted,
    lines_holding,
)
from curator.errors import CuratorError
from curator.linefields import case_fields
from curator.models import Case, ChangeAction, ChangeEntry, utcnow, validation_problems
from curator.problems import Problem
from curator.text import query_slug

CASES = "cases.jsonl"
CHANGELOG = "changelog.jsonl"


@dataclass
class ReadResult:
    cases: dict[str, Case]  # latest rev of each query_id, in first-seen order
    lines: int
    problems: list[Problem] = field(default_factory=list)
    revisions: dict[str, list[bytes]] = field(default_factory=dict, repr=False)  # each case's valid lines

    @cached_property
    def history(self) -> dict[str, list[Case]]:
        """Every rev of each query_id, in file order: made from the lines when first asked
        for (most readers want only the latest revs, and a model per line of a 200k-line
        set is 2.4M objects for the collector to scan)."""
        return {query_id: [Case.model_validate_json(line) for line in lines]
                for query_id, lines in self.revisions.items()}


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

    @property
    def checkpoint_path(self) -> Path | None:
        """Where verify keeps this set's checkpoint (outside the set: it is no shared data)."""
        return self._checkpoint_dir / f"{self.name}.json" if self._checkpoint_dir else None

    # ---- writing ------------------------------------------------------------------------

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the set's exclusive write lock; finishes any interrupted append first."""
        self.create()
        with exclusive_lock(self._lock_path):
            finish_interrupted(self._pending_path, {"case": self.cases_path, "change": self.changelog_path})
            yield

    def _append(
        self, data: dict[str, Any], invalid: str, action: ChangeAction, reason: str, versions: dict[str, str] | None
    ) -> Case:
        """Validate `data` as a case and append it with its change-log entry, as one unit.
        Call under the lock; `invalid` starts the message if `data` is no valid case."""
        try:
            case = Case.model_validate(data)
        except ValidationError as exc:
            raise CuratorError(f"{invalid}: {validation_problems(exc, 'record')}") from None
        entry = ChangeEntry(
            query_id=case.query_id, rev=case.rev, action=action, reason=reason, reviewer=case.reviewer,
            versions=versions or {},
        )
        lines = {"case": (self.cases_path, case.line()), "change": (self.changelog_path, entry.line())}
        append_together(self._pending_path, lines)
        return case

    def add(
        self, case: Case | dict[str, Any], *, reviewer: str = "", versions: dict[str, str] | None = None,
        reason: str = "",
    ) -> Case:
        """Append a new case (a Case, or a dict of its fields without `query_id`). Its
        `query_id` is the one given if still unused, else a slug of the query made unique
        within the set; ids are never reused for another question, retired ones included.
        `rev` is 1, except for a candidate kept again after an undo retired its case: that
        case's id comes back as its next rev, a `relabel` with reason "kept again" (no
        `-2` twin)."""
        data = case.model_dump() if isinstance(case, Case) else dict(case)
        with self.locked():
            used = self._used_ids()
            wanted = data.get("query_id") or query_slug(str(data.get("query", "")))
            query_id = wanted if wanted not in used else _next_free(wanted, used)
            rev = 1  # `reason`: the add's change-log reason (an adjudication's, curator.adjudicate)
            action: ChangeAction = "add"
            candidate = (data.get("source") or {}).get("candidate_id")
            latest = self.latest_rev(wanted) if wanted in used and candidate is not None else None
            if latest is not None and latest.status == "retired" and latest.source.candidate_id == candidate:
                query_id, rev, action, reason = wanted, latest.rev + 1, "relabel", reason or "kept again"
            data.update(query_id=query_id, rev=rev, at=utcnow(), reviewer=reviewer or data.get("reviewer", ""))
            return self._append(data, f"{self.cases_path}: not a valid case", action, reason, versions)

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
            return self._append(data, f"{query_id}: the change would make an invalid case", action, reason, versions)

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
                query_id = query_id_of(raw)
                if query_id is not None:
                    used.add(query_id)
        self._ids_cache = (offset, stat.st_ino, used)
        return used

    # ---- reading -----------------------------------------------------------------------

    def read(self, *, until_line: int | None = None, until_time: str | None = None) -> ReadResult:
        """The latest rev of each case. `until_line` / `until_time` read the set as it was
        (only lines up to that line number / written at or before that time)."""
        file = JsonLines.read(self.cases_path)
        lines = file.lines if until_line is None else file.lines[:until_line]
        result = read_cases(str(self.cases_path), lines, until_time=until_time)
        if file.torn and (until_line is None or until_line > file.count):
            message = "torn last line (interrupted write) ignored"
            result.problems.append(Problem(str(self.cases_path), file.count + 1, message, fatal=False))
        return result

    @paused_gc()
    def read_latest(self) -> ReadResult:
        """`read()` validating only each case's last line, found by the query_id the writer
        puts first: what an export or a set a passing verify vouches for needs (its older
        lines were checked). A last line that is no case is a problem, as in `read()`; an
        older line is not looked at (its history is left empty)."""
        file = JsonLines.read(self.cases_path)
        where = str(self.cases_path)
        last: dict[str, tuple[int, bytes]] = {}
        problems: list[Problem] = []
        for number, raw in enumerate(file.lines, start=1):
            query_id = query_id_of(raw)
            if query_id is None:
                problems.append(Problem(where, number, "not a valid case (expected a JSON object with a query_id)"))
                continue
            last[query_id] = (number, raw)
        cases: dict[str, Case] = {}
        for query_id, (number, raw) in last.items():
            try:
                cases[query_id] = Case.model_validate_json(raw)
            except ValidationError as exc:
                problems.append(Problem(where, number, f"not a valid case: {validation_problems(exc, 'record')}"))
        problems.sort(key=lambda problem: problem.line or 0)
        if file.torn:
            problems.append(Problem(where, file.count + 1, "torn last line (interrupted write) ignored", fatal=False))
        return ReadResult(cases=cases, lines=file.count, problems=problems)

    def changelog(self) -> list[ChangeEntry]:
        entries = []
        for raw in JsonLines.read(self.changelog_path).lines:
            try:
                entries.append(ChangeEntry.model_validate_json(raw))
            except ValidationError:
                continue
        return entries

    def prefix_digest(self, lines: int | None = None) -> tuple[int, str]:
        """(line count, sha256) of the first `lines` whole lines of cases.jsonl (all if None)."""
        return JsonLines.read(self.cases_path).digest(lines)

    def latest_rev(self, query_id: str) -> Case | None:
        """`read().cases.get(query_id)`, parsing only the lines that name the id."""
        revisions = self.revisions(query_id)
        return revisions[-1] if revisions else None

    def revisions(self, query_id: str) -> list[Case]:
        """`read().history.get(query_id, [])`: every valid rev of one case in file order,
        parsing only the lines that name the id (a set of many thousand cases answers in a
        few milliseconds instead of a full read)."""
        return _records_of(self.cases_path, query_id, Case)

    def changes(self, query_id: str) -> list[ChangeEntry]:
        """The change-log entries of one case in file order (`changelog()`'s), parsing only
        the lines that name the id."""
        return _records_of(self.changelog_path, query_id, ChangeEntry)


_Record = TypeVar("_Record", Case, ChangeEntry)


def _records_of(path: Path, query_id: str, model: type[_Record]) -> list[_Record]:
    """The valid `model` records of a line file whose query_id is `query_id`, in file order,
    from the lines that hold it as a JSON string."""
    records = []
    for line in lines_holding(path, json.dumps(query_id).encode()):
        try:
            record = model.model_validate_json(line)
        except ValidationError:
            continue
        if record.query_id == query_id:
            records.append(record)
    return records


@paused_gc()
def read_cases(where: str, lines: Iterable[str | bytes], *, until_time: str | None = None) -> ReadResult:
    """Parse case lines (of a file named `where`): the latest rev of each case, and a problem
    for each line that is no case. `until_time`: only cases written by then. Each line is
    checked as verify checks it (curator.linefields, no model object); a model is made for
    each case's latest line, and for the older ones only when `history` is asked for."""
    revisions: dict[str, list[bytes]] = {}
    problems: list[Problem] = []
    count = 0
    for count, raw in enumerate(lines, start=1):
        if not raw.strip():
            problems.append(Problem(where, count, "empty line"))
            continue
        line = raw.encode("utf-8") if isinstance(raw, str) else raw
        try:
            fields = case_fields(line)
        except ValidationError as exc:
            problems.append(Problem(where, count, f"not a valid case: {validation_problems(exc, 'record')}"))
            continue
        if until_time is not None and fields["at"] > until_time:
            continue
        revisions.setdefault(fields["query_id"], []).append(line)
    cases = {query_id: Case.model_validate_json(revs[-1]) for query_id, revs in revisions.items()}
    return ReadResult(cases=cases, lines=count, problems=problems, revisions=revisions)


_QUERY_ID = re.compile(rb'^\{"query_id":"([a-z0-9][a-z0-9-]*)"')


def query_id_of(raw: bytes) -> str | None:
    """The query_id of a cases.jsonl line without parsing all of it (the writer always puts
    it first); falls back to a full JSON parse for hand-written lines."""
    match = _QUERY_ID.match(raw)
    if match:
        return match.group(1).decode()
    try:
        value = json.loads(raw)["query_id"]
    except (ValueError, KeyError, TypeError):
        return None
    return value if isinstance(value, str) else None


def _next_free(stem: str, used: set[str]) -> str:
    n = 2
    while f"{stem}-{n}" in used:
        n += 1
    return f"{stem}-{n}"

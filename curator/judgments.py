"""Second judgments: a second reviewer's blind keep/bin and labels of an item the first
reviewer already decided, in `datasets/<set>/judgments.jsonl` and the workspace.

`judgments.jsonl` sits beside `cases.jsonl` and follows its rules (curator.appendonly):
one whole line per record, fsynced, appended under the set's lock, a torn tail moved aside,
never rewritten; git holds it to the append-only rule like the set (curator.verify). The
file is the record that survives a clone; the workspace's `judgments` table (migration
m009_second_judgments) holds every line this workspace wrote or found, with its hash, so
a verify without git can tell a line was removed or edited. This is the storage module of that
table: its only SQL.

A judgment judges a target: `case:<query_id>` (a kept case, at the rev shown) or
`candidate:<id>` (a candidate the first reviewer binned; ids are this workspace's). An
undo appends a line with `decision: "undo"` for the same target and reviewer: the latest
line of each (target, reviewer) is the one that counts.

A line with `kind: "adjudication"` settles a disagreement that no case revision records
(a binned candidate whose bin was confirmed): it names the target, both reviewers, the
side taken and the adjudicator, and must follow a judgment of its target by its second
reviewer. A later judgment of that target by that reviewer opens the disagreement again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, ValidationError, model_validator

from curator.appendonly import (
    JsonLines,
    append_line,
    exclusive_lock,
    is_subsequence,
    line_hash,
    repair_torn_tail,
)
from curator.errors import CuratorError
from curator.models import GRADE_FOR_ROLE, Freshness, Relevant, _Strict, utcnow, validation_problems
from curator.problems import Problem

if TYPE_CHECKING:
    from curator.questionset import QuestionSet
    from curator.workspace import Workspace

JUDGMENTS = "judgments.jsonl"
TABLE = "judgments"
Decision = Literal["keep", "bin", "undo"]
TARGET = r"^(case:[a-z0-9][a-z0-9-]*|candidate:[0-9]+)$"


class Judgment(_Strict):
    """One line of judgments.jsonl (docs/review.md, "Second pass")."""

    target: str = Field(pattern=TARGET)
    query: str = Field(min_length=1)
    rev: int | None = Field(None, ge=1)  # the case rev the second reviewer judged
    first_reviewer: str = ""  # whose decision this is compared with
    first_decision: Literal["keep", "bin"] = "keep"
    decision: Decision
    slice: str | None = None
    relevant: list[Relevant] = Field(default_factory=list)
    expect_empty: bool = False
    require_all: bool = False
    max_rank: int | None = Field(None, ge=1)
    freshness: Freshness | None = None
    reviewer: str = Field(min_length=1)
    session: str = ""
    at: str = Field(default_factory=utcnow)

    @model_validator(mode="after")
    def _grades(self) -> Judgment:
        for rel in self.relevant:  # as in a case: a passage without a grade has its role's
            if rel.grade is None:
                rel.grade = GRADE_FOR_ROLE[rel.role]
        return self

    @property
    def query_id(self) -> str | None:
        kind, _, key = self.target.partition(":")
        return key if kind == "case" else None

    def line(self) -> str:
        return json.dumps(self.model_dump(exclude_none=True), ensure_ascii=False, separators=(",", ":"))


class Adjudication(_Strict):
    """A line of judgments.jsonl that settles a disagreement without a case revision: a
    binned candidate's bin confirmed (docs/formats.md, "Adjudication")."""

    kind: Literal["adjudication"]
    target: str = Field(pattern=TARGET)
    query: str = Field(min_length=1)
    first_reviewer: str = ""  # as the judgment names them ("" when the bin's reviewer is unknown)
    second_reviewer: str = Field(min_length=1)
    side: Literal["first", "second"]
    decision: Literal["keep", "bin"]  # what the side taken decided
    reason: str = Field(pattern=r"^adjudicated")
    reviewer: str = Field(min_length=1)  # the adjudicator
    session: str = ""
    at: str = Field(default_factory=utcnow)

    def line(self) -> str:
        return json.dumps(self.model_dump(), ensure_ascii=False, separators=(",", ":"))


@dataclass
class JudgmentFile:
    """One read of a set's judgments.jsonl."""

    judgments: list[tuple[int, Judgment]] = field(default_factory=list)  # (line number, judgment)
    adjudications: list[tuple[int, Adjudication]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    hashes: list[str] = field(default_factory=list)  # of each whole line

    def standing(self) -> dict[tuple[str, str], Judgment]:
        """The judgment that counts per (target, reviewer): the latest, unless an undo."""
        latest: dict[tuple[str, str], Judgment] = {}
        for _, judgment in self.judgments:
            latest[(judgment.target, judgment.reviewer)] = judgment
        return {key: j for key, j in latest.items() if j.decision != "undo"}

    def settled(self, target: str, second_reviewer: str) -> Adjudication | None:
        """The latest adjudication of (target, second reviewer) after that reviewer's latest
        judgment of it: None when there is none, or a judgment came after it."""
        last_judged = 0
        for number, judgment in self.judgments:
            if judgment.target == target and judgment.reviewer == second_reviewer:
                last_judged = number
        found = None
        for number, adjudication in self.adjudications:
            if number > last_judged and adjudication.target == target and adjudication.second_reviewer == second_reviewer:
                found = adjudication
        return found


def path_of(qs: QuestionSet) -> Path:
    return qs.root / JUDGMENTS


def read(path: Path) -> JudgmentFile:
    """Every valid line of `path` (missing: none); an invalid line is a problem naming its
    line, and the good lines around it still count."""
    file = JudgmentFile()
    data = JsonLines.read(path)
    validate = Judgment.__pydantic_validator__.validate_json
    judged: set[tuple[str, str]] = set()  # (target, reviewer) of the judgments so far
    for number, raw in enumerate(data.lines, start=1):
        file.hashes.append(line_hash(raw))
        try:
            judgment = validate(raw)
        except ValidationError as exc:
            if b'"adjudication"' in raw:  # a line of the other kind (a judgment has no `kind`)
                _adjudication(file, path, number, raw, judged)
            else:
                file.problems.append(Problem(str(path), number,
                                             f"not a valid judgment: {validation_problems(exc, 'record')}"))
            continue
        file.judgments.append((number, judgment))
        judged.add((judgment.target, judgment.reviewer))
    for number, what in data.bad_bytes:
        file.problems.append(Problem(str(path), number, what))
    if data.torn:
        file.problems.append(Problem(str(path), data.count + 1, "torn last line (interrupted write); the next "
                                     "append moves it aside", fatal=False))
    return file


def _adjudication(file: JudgmentFile, path: Path, number: int, raw: bytes, judged: set[tuple[str, str]]) -> None:
    """Keep an adjudication line that follows a judgment of its target by its second
    reviewer; one that is invalid or settles nothing is a problem naming its line."""
    try:
        adjudication = Adjudication.model_validate_json(raw)
    except ValidationError as exc:
        file.problems.append(Problem(str(path), number, f"not a valid adjudication: {validation_problems(exc, 'record')}"))
        return
    if (adjudication.target, adjudication.second_reviewer) not in judged:
        file.problems.append(Problem(str(path), number, f"adjudication of {adjudication.target} follows no judgment "
                                     f"of it by {adjudication.second_reviewer}"))
        return
    file.adjudications.append((number, adjudication))


def append_adjudication(ws: Workspace, qs: QuestionSet, adjudication: Adjudication) -> Adjudication:
    """Append `adjudication` (fsynced) under the set's lock and record it in the workspace;
    refused when no standing judgment of its target by its second reviewer is in the file."""
    path = path_of(qs)
    with exclusive_lock(qs.root / ".lock"):
        repair_torn_tail(path)
        if read(path).standing().get((adjudication.target, adjudication.second_reviewer)) is None:
            raise CuratorError(f"{adjudication.second_reviewer} has no standing judgment of {adjudication.target} "
                               "to adjudicate")
        text = adjudication.line()
        append_line(path, text)
    record(ws, qs.name, [text])
    return adjudication


def append(ws: Workspace, qs: QuestionSet, judgment: Judgment) -> Judgment:
    """Append `judgment` (fsynced) under the set's lock, then record its line hash in the
    workspace. Refused when this reviewer's standing judgment of the target exists already
    (two sessions of one reviewer), or, for an undo, when there is none."""
    qs.create()
    path = path_of(qs)
    with exclusive_lock(qs.root / ".lock"):
        repair_torn_tail(path)
        standing = read(path).standing().get((judgment.target, judgment.reviewer))
        if judgment.decision == "undo" and standing is None:
            raise CuratorError(f"nothing to undo: {judgment.reviewer} has no judgment of {judgment.target}")
        if judgment.decision != "undo" and standing is not None:
            raise CuratorError(f"{judgment.reviewer} already judged {judgment.target} (line of {standing.at})")
        text = judgment.line()
        append_line(path, text)
    record(ws, qs.name, [text])
    return judgment


def record(ws: Workspace, set_name: str, lines: list[str]) -> None:
    """Remember these lines of the set's judgments.jsonl as written (or seen) here."""
    rows = []
    for text in lines:
        try:
            fields = json.loads(text)
        except ValueError:
            fields = {}  # a line that is no judgment: verify names it; its hash still counts
        if not isinstance(fields, dict):
            fields = {}
        rows.append({"set_name": set_name, "line_hash": line_hash(text), "target": fields.get("target"),
                     "reviewer": fields.get("reviewer"), "decision": fields.get("kind") or fields.get("decision"), "line": text,
                     "at": utcnow()})
    with ws.transaction():
        ws.db.table(TABLE).insert_all(rows, pk="id")


def recorded(ws: Workspace, set_name: str) -> list[str]:
    """The line hashes this workspace wrote or saw, in the order it did."""
    with ws.lock:
        rows = ws.db.table(TABLE).rows_where("set_name = ?", [set_name], order_by="id", select="line_hash")
        return [row["line_hash"] for row in rows]


def sync(ws: Workspace, qs: QuestionSet) -> int:
    """Record the file's lines the workspace has not seen (a fresh clone, a merge, a crash
    between the append and its record); returns how many."""
    path = path_of(qs)
    if not path.exists():
        return 0
    known = set(recorded(ws, qs.name))
    new = [raw.decode("utf-8", "replace") for raw in JsonLines.read(path).lines if line_hash(raw) not in known]
    if new:
        record(ws, qs.name, new)
    return len(new)


def check_file(problems: list[Problem], set_root: Path) -> None:
    """verify: every line of judgments.jsonl is a valid judgment (when the file exists)."""
    path = set_root / JUDGMENTS
    if path.exists():
        problems.extend(read(path).problems)


def check_recorded(ws: Workspace, qs: QuestionSet) -> list[Problem]:
    """verify, with the workspace: every line this workspace wrote is still in the file, in
    order (lines merged in between are fine). Git checks committed versions itself."""
    path = path_of(qs)
    mine = recorded(ws, qs.name)
    if not mine:
        return []
    current = read(path).hashes
    if is_subsequence(mine, current):
        return []
    present = set(current)
    gone = sum(1 for h in mine if h not in present)
    what = f"{gone} line(s) this workspace wrote were edited or removed" if gone else "lines were reordered"
    return [Problem(str(path), None, f"{what}; judgments.jsonl is append-only")]


def as_dict(judgment: Judgment) -> dict[str, Any]:
    return judgment.model_dump(exclude_none=True)

"""verify's checks over the lines of cases.jsonl and changelog.jsonl, each file read once.

- `check_cases`: every case line after the trusted ones is a valid case; each case's revs
  run 1, 2, 3...; a second line of one rev is a merge conflict (setchecks.check_conflicts);
- `check_latest`: the checks on each case's latest rev (one case per candidate, the slice
  rules), from facts the case loop gathered on its last line;
- `check_changelog`: every change-log line after the trusted ones is a valid entry;
- `check_pairing`: each case line has its change-log entry and the other way round;
- `check_torn`: a torn last line of either file (a warning).

Lines are read with curator.linefields (a dict of the fields, no model object per line).
Trusted lines are those a passing verify of this curator version checked, unchanged since
(curator.verify reads their key off the line). Each check adds `Problem`s to a list.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

from curator.appendonly import JsonLines
from curator.linefields import case_fields, change_fields
from curator.models import validation_problems
from curator.problems import Problem
from curator.setchecks import Duplicate, check_candidate
from curator.slicerules import rule_problems

Key = tuple[str, int]  # (query_id, rev) of a line; None stands for an invalid line
Labels = tuple[str, list[str]]  # a case line's status and relevant passage ids
Facts = tuple[int, str, list[str], "tuple[str, int] | None", list[str]]  # of a case's latest line

_QUERY_ID = re.compile(rb'^\{"query_id":"([a-z0-9][a-z0-9-]*)"')

def check_cases(
    problems: list[Problem], duplicates: list[Duplicate], cases: JsonLines, trusted: list[Key],
    facts: dict[str, Facts],
) -> tuple[list[Key | None], dict[str, int], dict[str, int], set[Key]]:
    """Schema-check each cases.jsonl line after the trusted ones, and check that each case's
    revs run 1, 2, 3... Gives each line's key (None if invalid), the index of each case's
    latest valid line, its highest rev, and the revisions that are retired; `duplicates` gets
    each second line of one (query_id, rev) (a merge conflict), and `facts` gets
    what the checks on latest revs need of each case's last line. The lines are read newest
    first, so a case's first valid line met is its latest: its facts are taken there, and no
    parsed line is kept (keeping the latest of each made the loop a third slower: fresh
    memory for every line); a line is read into a dict (curator.linefields), no model object
    is made. The revs are then checked oldest first, from the keys alone."""
    path = str(cases.path)
    found: list[Problem] = []  # this file's problems, put in line order at the end
    lines, count = cases.lines, len(trusted)
    keys: list[Key | None] = [*trusted, *([None] * (len(lines) - count))]
    retired: set[Key] = set()
    newest: dict[str, int] = {}  # query_id -> index of its latest valid line
    for index in range(len(lines) - 1, -1, -1):
        line = lines[index]
        if index < count:
            query_id, _ = key = trusted[index]
            if line_retired(line):
                retired.add(key)
            newest.setdefault(query_id, index)
            continue
        try:
            case = case_fields(line)
        except ValidationError as exc:
            found.append(Problem(path, index + 1, f"not a valid case: {validation_problems(exc, 'record')}"))
            continue
        query_id, rev = key = case["query_id"], case["rev"]
        keys[index] = key
        if case["status"] == "retired":
            retired.add(key)
        if query_id not in newest:
            newest[query_id] = index
            facts[query_id] = _facts(index, case)
    latest: dict[str, int] = {}  # the same, in the order the cases first appear
    last_rev: dict[str, int] = {}
    odd: list[tuple[int, int]] = []  # (index, rev expected) of lines whose rev is not the next
    for index, valid in enumerate(keys):
        if valid is None:
            continue
        query_id, rev = valid
        previous = last_rev.get(query_id)
        if previous is None:
            latest[query_id] = newest[query_id]
            previous = 0
        if rev != previous + 1:  # a skipped rev, or a second line of one (explained below)
            odd.append((index, previous + 1))
        if rev > previous:
            last_rev[query_id] = rev
    _explain_revs(found, duplicates, path, keys, odd)
    found.sort(key=lambda problem: problem.line or 0)
    problems.extend(found)
    return keys, latest, last_rev, retired


def _explain_revs(
    problems: list[Problem], duplicates: list[Duplicate], path: str, keys: list[Key | None],
    odd: list[tuple[int, int]],
) -> None:
    """Each line whose rev is not the next of its case is a second line of an earlier
    (query_id, rev), a merge conflict (`duplicates`), or a rev out of order (`problems`).
    A line whose rev is the next cannot repeat one, so only these lines are looked up."""
    if not odd:
        return
    first: dict[Key, int] = {}  # (query_id, rev) -> its first line number
    for number, key in enumerate(keys, start=1):
        if key is not None:
            first.setdefault(key, number)
    for index, expected in odd:
        key = keys[index]
        assert key is not None
        query_id, rev = key
        if first[key] != index + 1:
            duplicates.append(Duplicate(query_id, rev, first[key], index + 1))
        else:
            problems.append(Problem(path, index + 1, f"{query_id}: rev {rev} where {expected} was expected"))


def _facts(index: int, case: dict[str, Any]) -> Facts:
    """What the checks on latest revs need of a case line (its `case_fields`): its index,
    status, passage ids, (source kind, candidate id) and why it breaks its slice's rule."""
    status, source, relevant = case["status"], case["source"], case["relevant"]
    candidate = source.get("candidate_id")
    kind = (source["kind"], candidate) if candidate is not None else None
    reasons = []
    if status == "active":
        primaries = sum(1 for rel in relevant if rel["role"] == "primary")
        reasons = rule_problems(case["slice"], primaries, case["expect_empty"], case["require_all"], case.get("freshness"))
    return index, status, [rel["id"] for rel in relevant], kind, reasons


def latest_lines(cases: JsonLines) -> dict[str, int] | None:
    """Each case's last line (its index), by the query_id the writer puts first; None if a
    line does not start with one."""
    latest: dict[bytes, int] = {}
    match = _QUERY_ID.match
    for index, line in enumerate(cases.lines):
        found = match(line)
        if found is None:
            return None
        latest[found.group(1)] = index
    return {query_id.decode(): index for query_id, index in latest.items()}


def check_latest(
    problems: list[Problem], cases: JsonLines, latest: dict[str, int], facts: dict[str, Facts]
) -> dict[str, Labels]:
    """The checks on latest revs (one case per candidate, the slice rules), from the facts
    the case loop gathered on each case's last line; a latest line it did not gather them
    on (a trusted one) is read once more. Gives each
    case's labels."""
    path = str(cases.path)
    labels: dict[str, Labels] = {}
    candidates: dict[tuple[str, int], str] = {}
    for query_id, index in latest.items():
        fact = facts.get(query_id)
        if fact is None or fact[0] != index:
            try:
                fact = _facts(index, case_fields(cases.lines[index]))
            except ValidationError as exc:  # a trusted line, only if the schema changed without a version bump
                problems.append(Problem(path, index + 1, f"not a valid case: {validation_problems(exc, 'record')}"))
                continue
        _, status, ids, source, reasons = fact
        labels[query_id] = (status, ids)
        if status == "active":
            if source is not None:
                check_candidate(problems, path, index + 1, query_id, source, candidates)
            for reason in reasons:
                problems.append(Problem(path, index + 1, f"{query_id}: {reason}", fatal=False))
    return labels


def check_changelog(
    problems: list[Problem], changelog: JsonLines, trusted: list[Key]
) -> tuple[list[Key | None], list[str | None]]:
    """Schema-check each change-log line after the trusted ones; gives each line's key and
    action (None for a trusted line, and both None for an invalid one)."""
    path = str(changelog.path)
    keys: list[Key | None] = list(trusted)
    actions: list[str | None] = [None] * len(trusted)
    for number, line in enumerate(changelog.lines[len(trusted):], start=len(trusted) + 1):
        try:
            entry = change_fields(line)
        except ValidationError as exc:
            problems.append(Problem(path, number, f"not a valid change entry: {validation_problems(exc, 'record')}"))
            keys.append(None)
            actions.append(None)
            continue
        keys.append((entry["query_id"], entry["rev"]))
        actions.append(entry["action"])
    return keys, actions


def check_torn(problems: list[Problem], cases: JsonLines, changelog: JsonLines) -> None:
    """A torn last line (an interrupted write) of either file is a warning: it is no line yet."""
    for file, message in ((cases, "torn last line (interrupted write); the next append repairs it"),
                          (changelog, "torn last line ignored")):
        if file.torn:
            problems.append(Problem(str(file.path), file.count + 1, message, fatal=False))


def check_pairing(
    problems: list[Problem], cases_path: str, changelog_path: str,
    case_keys: list[Key | None], change_keys: list[Key | None],
) -> None:
    """Each valid case line (query_id, rev) needs a valid change-log line and the other way
    round. Curator appends the two in the same order, so equal lists settle it without
    building sets; a union merge may interleave them differently, which is no problem."""
    if case_keys == change_keys:
        return
    cases = {key for key in case_keys if key is not None}
    changes = {key for key in change_keys if key is not None}
    for query_id, rev in sorted(cases - changes):
        problems.append(Problem(changelog_path, None, f"{query_id} rev {rev} has no change-log entry"))
    for query_id, rev in sorted(changes - cases):
        problems.append(Problem(cases_path, None, f"change-log entry for {query_id} rev {rev} has no case line"))


def line_retired(line: bytes) -> bool:
    return b'"status":"retired"' in line

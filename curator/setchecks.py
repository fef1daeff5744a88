"""verify's checks beyond schema and pairing: bytes, a pending journal, merge conflicts,
change-log actions and one case per candidate (the slice rules are curator.slicerules').

Each is a plain function adding `Problem`s to a list; `curator.verify` calls them over what
it read once. Merge conflicts are resolved with `curator resolve QUERY_ID` (a later rev
whose change-log reason starts with `RESOLVE_REASON`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from curator.appendonly import JsonLines
from curator.judgments import check_file as check_judgments_file
from curator.problems import Problem

RESOLVE_REASON = "resolve merge conflict"
_CHANGE_ID = re.compile(rb'"query_id":"([a-z0-9][a-z0-9-]*)","rev":([1-9][0-9]*)')


def check_bytes(problems: list[Problem], file: JsonLines) -> None:
    """A BOM, CRLF line ends, NUL bytes and invalid UTF-8, with their lines."""
    for number, what in file.bad_bytes:
        problems.append(Problem(str(file.path), number, what))


def check_pending(problems: list[Problem], pending: Path) -> None:
    """A `.pending.json` journal is a write a crash interrupted: the case line, its
    change-log line, or both are not appended yet. It is git-ignored, so committing now
    would commit half a write."""
    if pending.exists():
        problems.append(Problem(
            str(pending), None,
            "an interrupted write is pending (a case and its change-log entry not both appended); "
            "run `curator verify --repair` to complete it, then commit",
        ))


@dataclass
class Duplicate:
    """Two lines with the same (query_id, rev): two branches revised the same case."""

    query_id: str
    rev: int
    first_line: int
    second_line: int


def check_conflicts(problems: list[Problem], path: str, duplicates: list[Duplicate], changelog: JsonLines) -> None:
    """Report each duplicate rev as a merge conflict unless `curator resolve` settled it
    (a later rev of the case whose change-log reason starts with RESOLVE_REASON)."""
    if not duplicates:
        return
    resolved: dict[str, int] = {}  # query_id -> highest rev a resolve wrote
    needle = RESOLVE_REASON.encode()
    for line in changelog.lines:
        if needle in line:
            match = _CHANGE_ID.search(line)
            if match:
                query_id, rev = match.group(1).decode(), int(match.group(2))
                resolved[query_id] = max(rev, resolved.get(query_id, 0))
    for dup in duplicates:
        if resolved.get(dup.query_id, 0) > dup.rev:
            continue
        problems.append(Problem(
            path, dup.second_line,
            f"merge conflict: {dup.query_id} rev {dup.rev} at line {dup.first_line} and rev {dup.rev} at line "
            f"{dup.second_line} both revise rev {dup.rev - 1} (two branches changed the same case); "
            f"keep one with `curator resolve {dup.query_id} --line {dup.first_line}` (or --line {dup.second_line}), "
            "which appends it as the next rev",
        ))


def check_actions(
    problems: list[Problem], path: str, keys: list[tuple[str, int] | None], actions: list[str | None],
    retired: set[tuple[str, int]], cases: set[tuple[str, int]] | None,
) -> None:
    """Each change-log line names an action that fits the case revision it explains: `add`
    for rev 1 only, `retire` exactly where the case turns retired. `keys` and `actions` are
    each line's (query_id, rev) and action (None: not checked here); `retired` the case
    revisions that are retired, `cases` every case revision cases.jsonl has (None: every
    line's key is one)."""
    for index, action in enumerate(actions):
        key = keys[index]
        if action is None or key is None:
            continue  # trusted, or not a valid entry (the schema check reports it)
        query_id, rev = key
        number = index + 1
        if (action == "add") != (rev == 1):
            expected = "add" if rev == 1 else "an action other than add"
            problems.append(Problem(path, number, f"{query_id} rev {rev}: action {action!r} where {expected} fits"))
        if cases is not None and key not in cases:
            continue  # the pairing check reports it
        is_retired, was_retired = key in retired, (query_id, rev - 1) in retired
        if action == "retire" and not is_retired:
            problems.append(Problem(path, number, f"{query_id} rev {rev}: action 'retire' but the case is active"))
        if is_retired and not was_retired and action != "retire":
            problems.append(Problem(path, number, f"{query_id} rev {rev} retires the case but the action is {action!r}"))


def check_candidate(
    problems: list[Problem], path: str, line: int, query_id: str, source: tuple[str, int],
    seen: dict[tuple[str, int], str],
) -> None:
    """An active case kept from the same candidate (`source`: its source kind and candidate
    id) as an earlier one (`seen`: source -> query_id). A warning: candidate ids are one
    workspace's, so cases merged from another clone may share one by chance."""
    if source in seen:
        problems.append(Problem(
            path, line,
            f"{query_id} and {seen[source]} are both active and came from the same candidate {source[1]}; "
            f"retire one in the set browser (`curator review`, `b`, then `x`)",
            fatal=False,
        ))
    else:
        seen[source] = query_id


def check_judgments(problems: list[Problem], set_root: Path) -> None:
    """judgments.jsonl beside the set (curator.judgments, the second pass): every line is a
    valid judgment. Its append-only rule is checked with the set's files (git, or the
    workspace's record of the lines it wrote)."""
    check_judgments_file(problems, set_root)

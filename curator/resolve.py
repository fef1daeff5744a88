"""`curator resolve`: settle a merge conflict (two branches revised the same case) by
appending the chosen revision as the case's next rev, with a change-log entry whose reason
starts with `setchecks.RESOLVE_REASON` (verify then counts the conflict as resolved)."""

from __future__ import annotations

from pydantic import ValidationError

from curator.appendonly import JsonLines
from curator.errors import CuratorError
from curator.models import Case
from curator.questionset import QuestionSet
from curator.setchecks import RESOLVE_REASON

_KEPT_FIELDS = ("rev", "at", "reviewer", "query_id")


def resolve_conflict(qs: QuestionSet, query_id: str, line: int, *, reviewer: str = "") -> Case:
    """Append the case revision at cases.jsonl line `line` as rev+1 of `query_id`."""
    file = JsonLines.read(qs.cases_path)
    if not 1 <= line <= file.count:
        raise CuratorError(f"{qs.cases_path}: no line {line} (the file has {file.count})")
    try:
        chosen = Case.model_validate_json(file.lines[line - 1])
    except ValidationError:
        raise CuratorError(f"{qs.cases_path}:{line}: not a valid case; pick one of the colliding lines") from None
    if chosen.query_id != query_id:
        raise CuratorError(f"{qs.cases_path}:{line} is a line of {chosen.query_id!r}, not {query_id!r}")
    fields = {k: v for k, v in chosen.model_dump().items() if k not in _KEPT_FIELDS}
    reason = f"{RESOLVE_REASON}: kept rev {chosen.rev} of line {line}"
    return qs.revise(query_id, fields, action="edit", reason=reason, reviewer=reviewer)

"""The fields of a cases.jsonl or changelog.jsonl line, as verify reads 400k of them.

`case_fields(line)` and `change_fields(line)` give a valid line's fields as a dict, or
raise pydantic's `ValidationError` (the message verify reports: what was expected where).
A line is parsed with orjson (pydantic's own JSON parser where orjson is not installed)
and held to the model by plain checks of exact JSON types: a line shaped as curator
writes it (`Case.line()`, `ChangeEntry.line()`: every field present) passes them without
a model object being made, in about 60% (cases) and 70% (change entries) of the model's
time. Any other line, valid or not, goes to the model (`Case`, `ChangeEntry`), which
accepts it with its coercions (`"rev": 1.0`) and defaults (the dict is then its
`model_dump()`) or raises.

So these checks may only be stricter than the models, never looser: a line they accept,
the model accepts too, with the same values. tests/unit/test_linefields.py holds them to
that over lines changed field by field; a field added to a model fails the test until it
is checked here.
"""

from __future__ import annotations

import re
from functools import partial
from typing import Any, get_args

from curator.models import (
    Case,
    CaseSource,
    ChangeAction,
    ChangeEntry,
    Freshness,
    Relevant,
    SourceKind,
)

try:  # optional speed-up (about twice as fast as pydantic's parser on these lines)
    import orjson

    _loads: Any = orjson.loads
except ImportError:  # pragma: no cover - depends on the environment
    from pydantic_core import from_json

    _loads = partial(from_json, allow_inf_nan=False)  # NaN and Infinity: the model decides

CASE_FIELDS = frozenset(Case.model_fields)
RELEVANT_FIELDS = frozenset(Relevant.model_fields)
FRESHNESS_FIELDS = frozenset(Freshness.model_fields)
SOURCE_FIELDS = frozenset(CaseSource.model_fields)  # typed; others are kept as they are
# a tuple, not a set: `in` compares with ==, so a list where a kind belongs is simply no match
SOURCE_KINDS: tuple[str, ...] = (*get_args(SourceKind), "edited")
ACTIONS: tuple[str, ...] = get_args(ChangeAction)

_QUERY_ID = re.compile(r"[a-z0-9][a-z0-9-]*")  # Case.query_id's pattern, whole string
# pydantic's parser refuses JSON nested deeper than its recursion limit (about 200) where
# orjson's goes to 1,024: a line whose source keeps nested values is accepted here only if
# it has too few brackets to come near it.
_FEW_BRACKETS = 64

_case_model = Case.__pydantic_validator__.validate_json
_change_model = ChangeEntry.__pydantic_validator__.validate_json


def case_fields(line: bytes) -> dict[str, Any]:
    """A valid case line's fields: query_id, rev, status, relevant (each with id and role),
    source (with kind), slice, expect_empty and require_all are always there; freshness
    only if set. ValidationError if the line is not a valid case."""
    try:
        fields = _loads(line)
    except ValueError:  # broken JSON: the model says where
        fields = None
    if type(fields) is dict and _fits_case(fields, line):
        return fields
    return _case_model(line).model_dump()


def change_fields(line: bytes) -> dict[str, Any]:
    """A valid change-log line's fields (query_id, rev and action always there);
    ValidationError if the line is not a valid change entry."""
    try:
        fields = _loads(line)
    except ValueError:
        fields = None
    if type(fields) is dict and _fits_change(fields):
        return fields
    return _change_model(line).model_dump()


def _fits_case(case: dict[str, Any], line: bytes) -> bool:
    """Whether `Case` accepts these fields as they are (see the module's docstring). Written
    for speed, as one function: it runs on every line, and each call saved is 200k saved.
    A field missing (KeyError) leaves the line to the model."""
    try:
        query_id, rev, query, slice_name = case["query_id"], case["rev"], case["query"], case["slice"]
        status, expect_empty, relevant, source = case["status"], case["expect_empty"], case["relevant"], case["source"]
        require_all, explanation, tags = case["require_all"], case["explanation"], case["tags"]
        reviewer, at = case["reviewer"], case["at"]
        # those are the 13 fields curator always writes; a line with more may only add max_rank
        # and freshness (extra="forbid")
        if len(case) > 13 and not (CASE_FIELDS.issuperset(case) and _fits_rank_and_freshness(case)):
            return False
        if not (
            type(query_id) is str and type(rev) is int and rev >= 1 and type(query) is str and query != ""
            and type(slice_name) is str and slice_name != "" and (status == "active" or status == "retired")
            and type(expect_empty) is bool and type(require_all) is bool and type(relevant) is list
            and type(source) is dict and type(explanation) is str and type(tags) is list
            and type(reviewer) is str and type(at) is str and _QUERY_ID.fullmatch(query_id) is not None
        ):
            return False
        for tag in tags:
            if type(tag) is not str:
                return False
        primary = False
        ids: set[str] = set()  # a passage listed twice is no valid case
        for rel in relevant:
            if type(rel) is not dict:
                return False
            passage_id, role = rel["id"], rel["role"]
            if type(passage_id) is not str or passage_id == "" or passage_id in ids:
                return False
            ids.add(passage_id)
            if role == "primary":
                primary = True
            elif role != "secondary":
                return False
            if len(rel) != 3 or "grade" not in rel:  # id, role and grade are what curator writes
                if not RELEVANT_FIELDS.issuperset(rel):
                    return False
                revision = rel.get("revision")
                if revision is not None and type(revision) is not str:
                    return False
            grade = rel.get("grade")
            if grade is not None and (type(grade) is not int or not 0 <= grade <= 3):
                return False
        if status == "active" and (relevant != [] if expect_empty else not primary):
            return False  # the model's rule on labels
        if len(source) == 1:  # {"kind": ...}, as most cases have it
            return source.get("kind") in SOURCE_KINDS
        return _fits_source(source, line)
    except KeyError:
        return False


def _fits_rank_and_freshness(case: dict[str, Any]) -> bool:
    max_rank, freshness = case.get("max_rank"), case.get("freshness")
    if max_rank is not None and (type(max_rank) is not int or max_rank < 1):
        return False
    return freshness is None or _fits_freshness(freshness)


def _fits_source(source: dict[str, Any], line: bytes) -> bool:
    """Known keys typed, others kept as they are (any JSON the model's parser reads)."""
    count, candidate, first_seen, last_seen = (
        source.get("count"), source.get("candidate_id"), source.get("first_seen"), source.get("last_seen"))
    if not (
        source.get("kind") in SOURCE_KINDS and (count is None or type(count) is int)
        and (candidate is None or type(candidate) is int)
        and (first_seen is None or type(first_seen) is str) and (last_seen is None or type(last_seen) is str)
    ):
        return False
    if SOURCE_FIELDS.issuperset(source):
        return True
    nested = any(type(value) in (dict, list) for key, value in source.items() if key not in SOURCE_FIELDS)
    return not nested or line.count(b"[") + line.count(b"{") <= _FEW_BRACKETS


def _fits_freshness(freshness: Any) -> bool:
    if type(freshness) is not dict or not FRESHNESS_FIELDS.issuperset(freshness):
        return False
    revision, max_age = freshness.get("revision"), freshness.get("max_age_days")
    if revision is not None and type(revision) is not str:
        return False
    if max_age is not None and (type(max_age) is not int or max_age < 0):
        return False
    return revision is not None or max_age is not None


def _fits_change(entry: dict[str, Any]) -> bool:
    """Whether `ChangeEntry` accepts these fields as they are: its seven fields, each of its
    type (a missing one leaves the line to the model), and a reason for all but an add."""
    try:
        query_id, rev, action, reason = entry["query_id"], entry["rev"], entry["action"], entry["reason"]
        at, reviewer, versions = entry["at"], entry["reviewer"], entry["versions"]
    except KeyError:
        return False
    if len(entry) != 7 or not (
        type(query_id) is str and type(rev) is int and rev >= 1 and action in ACTIONS and type(reason) is str
        and type(at) is str and type(reviewer) is str and type(versions) is dict
    ):
        return False
    if action != "add" and not reason.strip():
        return False
    for value in versions.values():  # noqa: SIM110 - all() over a generator: a fifth of this check's time
        if type(value) is not str:
            return False
    return True

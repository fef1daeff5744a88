"""curator.linefields: its plain checks never accept a line the model (`Case`,
`ChangeEntry`) refuses, read the same fields the model does, and leave every line they do
not take to the model (its message)."""

from __future__ import annotations

import json
from functools import partial
from typing import Any, get_args

import pytest
from pydantic import ValidationError
from pydantic_core import from_json

from curator import linefields
from curator.linefields import case_fields, change_fields
from curator.models import (
    Case,
    CaseSource,
    CaseStatus,
    ChangeAction,
    ChangeEntry,
    Freshness,
    Relevant,
    Role,
)

# Every line shape curator writes, and a few it does not: each is changed field by field.
BASES: list[dict[str, Any]] = [
    Case(query_id="q1", query="how do I ship", slice="paraphrase",
         relevant=[{"id": "a.md#x", "role": "primary"}, {"id": "b.md#y", "role": "secondary"}]).model_dump(mode="json", exclude_none=True),
    Case(query_id="q2", rev=3, query="what changed", slice="freshness", relevant=[{"id": "a.md#x", "revision": "abc"}],
         freshness={"max_age_days": 90}, max_rank=5, tags=["regression"], explanation="why",
         source={"kind": "log", "count": 4, "first_seen": "2026-01-01", "candidate_id": 7, "log": "search.jsonl",
                 "ids": ["x", "y"], "user": {"name": "ana"}}).model_dump(mode="json", exclude_none=True),
    Case(query_id="n-1", query="nothing here", slice="negative", expect_empty=True).model_dump(mode="json", exclude_none=True),
    Case(query_id="r9", rev=2, query="gone", slice="multi_hop", status="retired", require_all=True,
         relevant=[{"id": "a.md#x", "grade": 3}], source={"kind": "edited", "original": {"kind": "generated"}}
         ).model_dump(mode="json", exclude_none=True),
    {"query_id": "q5", "query": "hand written", "slice": "s", "relevant": [{"id": "a"}]},  # defaults left out
]
ODD: list[Any] = [None, "", "x", "primary", "retired", "log", 0, 1, -1, 4, 2**70, 1.0, 1.5, True, False,
                  [], ["a"], [1], {}, {"id": "a"}, {"kind": "log"}, {"max_age_days": 0}, {"revision": None},
                  [{"id": "a", "role": "primary"}], [{"id": "a"}, {"id": "a"}], [{"id": "a", "role": "secondary"}],
                  "q-1", "Q1", "q 1", "q1\n", "-q",
                  [{"id": "a", "role": "primary"}, {"id": "a", "role": "secondary"}]]


def _parsers() -> list[Any]:
    parsers = [pytest.param(partial(from_json, allow_inf_nan=False), id="pydantic_core")]
    try:
        import orjson
    except ImportError:  # not installed: curator reads with pydantic's parser
        return parsers
    return [pytest.param(orjson.loads, id="orjson"), *parsers]


@pytest.fixture(params=_parsers(), autouse=True)
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs with each JSON parser curator may read the lines with."""
    monkeypatch.setattr(linefields, "_loads", request.param)


def _variants(case: dict[str, Any]) -> list[dict[str, Any]]:
    """The case with each field (and each field of its relevant entries, freshness and
    source) left out, set to each odd value, and one unknown field added."""
    out = [case, {**case, "unknown": 1}]
    for name in [*Case.model_fields, "unknown"]:
        out.append({k: v for k, v in case.items() if k != name})
        out.extend({**case, name: value} for value in ODD)
    for nested, names in (("source", CaseSource.model_fields), ("freshness", Freshness.model_fields)):
        inner = case.get(nested) or {}
        for name in [*names, "extra"]:
            out.append({**case, nested: {k: v for k, v in inner.items() if k != name}})
            out.extend({**case, nested: {**inner, name: value}} for value in ODD)
    for index, rel in enumerate(case.get("relevant", [])):
        for name in [*Relevant.model_fields, "extra"]:
            for value in [*ODD, "<gone>"]:
                changed = {k: v for k, v in rel.items() if k != name} if value == "<gone>" else {**rel, name: value}
                relevant = list(case["relevant"])
                relevant[index] = changed
                out.append({**case, "relevant": relevant})
    return out


def _read_by_model(line: bytes) -> dict[str, Any]:
    """What verify reads of a line, as the model gives it."""
    case = Case.model_validate_json(line)
    return {"query_id": case.query_id, "rev": case.rev, "status": case.status, "slice": case.slice,
            "expect_empty": case.expect_empty, "require_all": case.require_all,
            "relevant": [(rel.id, rel.role) for rel in case.relevant],
            "freshness": case.freshness.model_dump() if case.freshness else None,
            "source": (case.source.kind, case.source.candidate_id)}


def _read_here(fields: dict[str, Any]) -> dict[str, Any]:
    freshness = fields.get("freshness")
    return {"query_id": fields["query_id"], "rev": fields["rev"], "status": fields["status"], "slice": fields["slice"],
            "expect_empty": fields["expect_empty"], "require_all": fields["require_all"],
            "relevant": [(rel["id"], rel["role"]) for rel in fields["relevant"]],
            "freshness": None if freshness is None else {"revision": freshness.get("revision"),
                                                         "max_age_days": freshness.get("max_age_days")},
            "source": (fields["source"]["kind"], fields["source"].get("candidate_id"))}


@pytest.mark.parametrize("base", range(len(BASES)))
def test_the_checks_accept_only_what_the_model_accepts_and_read_the_same_fields(base: int) -> None:
    taken = 0
    for variant in _variants(BASES[base]):
        line = json.dumps(variant, separators=(",", ":")).encode()
        fast = linefields._fits_case(json.loads(line), line)
        try:
            expected = _read_by_model(line)
        except ValidationError as exc:
            assert not fast, f"accepted a line the model refuses ({exc.errors()[0]['msg']}): {line!r}"
            with pytest.raises(ValidationError) as raised:
                case_fields(line)
            assert str(raised.value) == str(exc)  # the model's own message, for verify to report
            continue
        assert _read_here(case_fields(line)) == expected, line
        taken += fast
    # the checks take lines themselves, but none of the hand-written one (its defaults left out)
    assert taken > 10 if base < 4 else taken == 0


def test_every_line_curator_writes_is_taken_without_the_model() -> None:
    for base in BASES[:4]:
        line = Case.model_validate(base).line().encode()
        assert linefields._fits_case(json.loads(line), line), line


def test_what_the_checks_know_is_what_the_models_say() -> None:
    # A field added to a model (or a role, a status) fails here until _fits_case checks it.
    assert set(Case.model_fields) == {
        "query_id", "rev", "query", "slice", "status", "relevant", "require_all", "max_rank", "expect_empty",
        "freshness", "explanation", "source", "tags", "reviewer", "at"}
    assert set(Relevant.model_fields) == {"id", "role", "grade", "revision"}
    assert set(Freshness.model_fields) == {"revision", "max_age_days"}
    assert set(CaseSource.model_fields) == {"kind", "count", "first_seen", "last_seen", "candidate_id"}
    assert get_args(Role) == ("primary", "secondary") and get_args(CaseStatus) == ("active", "retired")
    assert set(ChangeEntry.model_fields) == {"at", "query_id", "rev", "action", "reason", "reviewer", "versions"}
    assert get_args(ChangeAction) == linefields.ACTIONS


CHANGES: list[dict[str, Any]] = [
    ChangeEntry(query_id="q1", rev=1, action="add", versions={"curator": "0.1.0"}).model_dump(mode="json"),
    ChangeEntry(query_id="Any Id", rev=4, action="relabel", reason="moved", reviewer="ana").model_dump(mode="json"),
    ChangeEntry(query_id="q2", rev=2, action="retire", reason="obsolete").model_dump(mode="json"),
    {"query_id": "q5", "rev": 1, "action": "add"},  # defaults left out
]


@pytest.mark.parametrize("base", range(len(CHANGES)))
def test_the_change_checks_accept_only_what_the_model_accepts(base: int) -> None:
    entry = CHANGES[base]
    variants = [entry, {**entry, "unknown": 1}, {**entry, "reason": "  "}, {**entry, "action": "edit", "reason": ""},
                {**entry, "versions": {"curator": 1}}, {**entry, "versions": {}}]
    for name in [*ChangeEntry.model_fields, "unknown"]:
        variants.append({k: v for k, v in entry.items() if k != name})
        variants.extend({**entry, name: value} for value in [*ODD, "add", "edit", "retire", {"a": "b"}])
    taken = 0
    for variant in variants:
        line = json.dumps(variant, separators=(",", ":")).encode()
        fast = linefields._fits_change(json.loads(line))
        try:
            model = ChangeEntry.model_validate_json(line)
        except ValidationError as exc:
            assert not fast, f"accepted a line the model refuses: {line!r}"
            with pytest.raises(ValidationError) as raised:
                change_fields(line)
            assert str(raised.value) == str(exc)
            continue
        fields = change_fields(line)
        assert (fields["query_id"], fields["rev"], fields["action"]) == (model.query_id, model.rev, model.action), line
        taken += fast
    assert taken > 10 if base < 3 else taken == 0


def test_a_line_nested_past_the_models_parser_is_left_to_it() -> None:
    # orjson reads 300 levels; pydantic's parser refuses them, and so verify must
    written = Case.model_validate(BASES[0]).line().encode()
    assert written.count(b'"source":{"kind":"manual"}') == 1
    deep = written.replace(b'"source":{"kind":"manual"}', b'"source":{"kind":"log","x":' + b"[" * 300 + b"]" * 300 + b"}")
    with pytest.raises(ValidationError, match="recursion limit"):
        case_fields(deep)
    shallow = deep.replace(b"[" * 300 + b"]" * 300, b"[" * 20 + b"]" * 20)
    assert case_fields(shallow)["source"]["kind"] == "log"


def test_broken_json_gets_the_models_message() -> None:
    with pytest.raises(ValidationError, match="Invalid JSON"):
        case_fields(b'{"query_id":"q1",')
    with pytest.raises(ValidationError, match="Invalid JSON"):  # a lone surrogate
        case_fields(b'{"query_id":"q1","rev":1,"query":"\\ud800","slice":"s"}')

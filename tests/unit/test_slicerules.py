"""The slice rules (curator.slicerules.slice_problems) on real Case objects and dicts."""

from __future__ import annotations

from curator.models import Case
from curator.slicerules import slice_problems


def _case(**fields: object) -> Case:
    data: dict[str, object] = {"query_id": "q", "query": "how?", "slice": "paraphrase"}
    data.update(fields)
    return Case.model_validate(data)


P = {"id": "a", "role": "primary"}
P2 = {"id": "b", "role": "primary"}
S = {"id": "c", "role": "secondary"}


def test_good_cases_have_no_problems() -> None:
    assert slice_problems(_case(relevant=[P])) == []
    assert slice_problems(_case(slice="multi_hop", relevant=[P, P2], require_all=True)) == []
    assert slice_problems(_case(slice="freshness", relevant=[P], freshness={"revision": "abc"})) == []
    assert slice_problems(_case(slice="freshness", relevant=[P], freshness={"max_age_days": 30})) == []
    assert slice_problems(_case(slice="negative", expect_empty=True)) == []


def test_multi_hop_needs_two_primaries_and_require_all() -> None:
    problems = slice_problems(_case(slice="multi_hop", relevant=[P, S]))
    assert problems == ["a multi_hop case needs at least two primary passages", "a multi_hop case needs require_all"]
    assert slice_problems(_case(slice="multi_hop", relevant=[P, P2])) == ["a multi_hop case needs require_all"]


def test_freshness_needs_a_pin_or_max_age() -> None:
    assert slice_problems(_case(slice="freshness", relevant=[P])) == [
        "a freshness case needs a revision pin or max_age_days"
    ]


def test_negative_needs_expect_empty_and_no_primaries() -> None:
    assert slice_problems({"slice": "negative", "relevant": [P]}) == [
        "a negative case needs expect_empty", "a negative case must not have primary passages"
    ]
    # a retired negative with a primary (the model allows it) still breaks the rule
    assert "a negative case must not have primary passages" in slice_problems(
        _case(slice="negative", status="retired", relevant=[P], expect_empty=False)
    )


def test_non_negative_needs_a_primary() -> None:
    assert slice_problems({"slice": "paraphrase", "relevant": [S]}) == ["a paraphrase case needs a primary passage"]
    assert slice_problems({"slice": "paraphrase", "expect_empty": True, "relevant": []}) == [
        "a paraphrase case needs a primary passage"
    ]


def test_primaries_may_be_given_as_count_or_list() -> None:
    assert slice_problems({"slice": "multi_hop", "primaries": 2, "require_all": True}) == []
    assert slice_problems({"slice": "multi_hop", "primaries": ["a"], "require_all": True}) == [
        "a multi_hop case needs at least two primary passages"
    ]

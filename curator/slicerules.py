"""What each slice's cases must carry (issue 20): one pure function, used by `verify`
(as warnings for cases written before the rule) and by the review app at keep time.

- `multi_hop`: at least two primary passages and `require_all`;
- `freshness`: a `freshness` constraint with a revision pin or a max age;
- `negative`: `expect_empty` and no primary passage;
- any other slice: at least one primary passage.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any

MULTI_HOP = "multi_hop"
FRESHNESS = "freshness"
NEGATIVE = "negative"


def _getter(case_like: Any) -> Callable[[str, Any], Any]:
    """`get(name, default)` for a mapping's keys or an object's attributes (asked once per
    object: the check for a mapping is the slow part of a lookup)."""
    if type(case_like) is dict or isinstance(case_like, Mapping):  # verify's dicts skip the ABC check
        return case_like.get
    return partial(getattr, case_like)


def _primaries(get: Callable[[str, Any], Any]) -> int:
    """The number of primary passages: `primaries` (a count or a list) if given, else
    those in `relevant` (a relevant entry without a role is a primary)."""
    given = get("primaries", None)
    if isinstance(given, int):
        return given
    if isinstance(given, list):  # a Case's `primaries`
        return len(given)
    if given is not None and isinstance(given, Iterable) and not isinstance(given, str | bytes):
        return len(list(given))
    count = 0
    for rel in get("relevant", None) or []:
        if (_getter(rel)("role", "primary") or "primary") == "primary":
            count += 1
    return count


def _freshness_pinned(freshness: Any) -> bool:
    if not freshness:
        return False
    get = _getter(freshness)
    return get("revision", None) is not None or get("max_age_days", None) is not None


def slice_problems(case_like: Any) -> list[str]:
    """Why a case (a `Case`, a dict of its fields, or any object with them: `slice`,
    `relevant` or `primaries`, `expect_empty`, `require_all`, `freshness`) breaks its slice's
    rule; empty when it does not. Retired cases are not checked by callers, not here."""
    get = _getter(case_like)
    return rule_problems(str(get("slice", "") or ""), _primaries(get), bool(get("expect_empty", False)),
                         bool(get("require_all", False)), get("freshness", None))


def rule_problems(slice_name: str, primaries: int, expect_empty: bool, require_all: bool, freshness: Any) -> list[str]:
    """The rules themselves, on a case's values (verify reads 50k cases this way, without
    `slice_problems`' look-ups): its slice, how many primary passages it has, its marks and
    its freshness constraint (a mapping, an object with its fields, or None)."""
    problems: list[str] = []
    if slice_name == NEGATIVE:
        if not expect_empty:
            problems.append("a negative case needs expect_empty")
        if primaries:
            problems.append("a negative case must not have primary passages")
        return problems
    if primaries == 0:
        problems.append(f"a {slice_name or 'non-negative'} case needs a primary passage")
    if slice_name == MULTI_HOP:
        if primaries < 2:
            problems.append("a multi_hop case needs at least two primary passages")
        if not require_all:
            problems.append("a multi_hop case needs require_all")
    elif slice_name == FRESHNESS and not _freshness_pinned(freshness):
        problems.append("a freshness case needs a revision pin or max_age_days")
    return problems

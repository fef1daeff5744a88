"""What each slice's cases must carry (issue 20): one pure function, used by `verify`
(as warnings for cases written before the rule) and by the review app at keep time.

- `multi_hop`: at least two primary passages and `require_all`;
- `freshness`: a `freshness` constraint with a revision pin or a max age;
- `negative`: `expect_empty` and no primary passage;
- any other slice: at least one primary passage.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

MULTI_HOP = "multi_hop"
FRESHNESS = "freshness"
NEGATIVE = "negative"


def _get(case_like: Any, name: str, default: Any = None) -> Any:
    if isinstance(case_like, Mapping):
        return case_like.get(name, default)
    return getattr(case_like, name, default)


def _role(rel: Any) -> str:
    return str(_get(rel, "role", "primary") or "primary")


def _primaries(case_like: Any) -> int:
    """The number of primary passages: `primaries` (a count or a list) if given, else
    those in `relevant` (a relevant entry without a role is a primary)."""
    given = _get(case_like, "primaries")
    if isinstance(given, int):
        return given
    if isinstance(given, Iterable) and not isinstance(given, str | bytes):
        return len(list(given))
    relevant = _get(case_like, "relevant") or []
    return sum(1 for rel in relevant if _role(rel) == "primary")


def _freshness_pinned(freshness: Any) -> bool:
    if not freshness:
        return False
    return _get(freshness, "revision") is not None or _get(freshness, "max_age_days") is not None


def slice_problems(case_like: Any) -> list[str]:
    """Why a case (a `Case`, a dict of its fields, or any object with them: `slice`,
    `relevant` or `primaries`, `expect_empty`, `require_all`, `freshness`) breaks its slice's
    rule; empty when it does not. Retired cases are not checked by callers, not here."""
    slice_name = str(_get(case_like, "slice", "") or "")
    primaries = _primaries(case_like)
    expect_empty = bool(_get(case_like, "expect_empty", False))
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
        if not _get(case_like, "require_all", False):
            problems.append("a multi_hop case needs require_all")
    elif slice_name == FRESHNESS and not _freshness_pinned(_get(case_like, "freshness")):
        problems.append("a freshness case needs a revision pin or max_age_days")
    return problems

"""Choosing which clusters a reviewer sees, within a budget.

`top` takes the most frequent; `random` draws uniformly; `pps` draws with probability
proportional to frequency (the way OpenSearch's query-set sampler does), without
replacement (weighted keys u^(1/w), Efraimidis and Spirakis, compared as log(u)/w), so
the budget is spent on distinct queries. All of them return an order to walk, so that
duplicates found later can be skipped without shrinking the sample. The orders are
numpy arrays of cluster numbers, drawn in one vectorised step: a long-tail log has
millions of one-off clusters, and a Python list (of keys, of tuples) per cluster was
the biggest thing a drawn sample built.
"""

from __future__ import annotations

from typing import Any

SAMPLERS = ("top", "random", "pps")


def sample_order(counts: list[int], how: str = "top", seed: int | None = None) -> list[int]:
    """Indices of `counts` in the order to take them."""
    return [int(i) for i in _order(_ints(counts), how, seed)]


def _ints(values: Any) -> Any:
    """`values` (a list of counts, or an array already) as a numpy array: int64, or Python
    ints as objects where pre-aggregated counts pass what int64 holds."""
    import numpy as np

    if isinstance(values, np.ndarray):
        return values
    big = bool(values) and max(values) >= 1 << 62
    return np.asarray(values, dtype=object if big else np.int64)


def _order(counts: Any, how: str, seed: int | None) -> Any:
    """`sample_order` of the array `counts`, as a numpy array."""
    import numpy as np

    if how not in SAMPLERS:
        raise ValueError(f"unknown sampler {how!r}; expected one of {', '.join(SAMPLERS)}")
    if how == "top":  # most frequent first, ties in index order
        if counts.dtype != object and len(counts) and counts.max() < 1 << 31 and counts.min() > -(1 << 31):
            counts = counts.astype(np.int32)  # the negated copy at half the size: a long tail has millions
            np.negative(counts, out=counts)
            return np.argsort(counts, kind="stable")
        return np.argsort(-counts, kind="stable")
    rng = np.random.default_rng(seed)
    if how == "random":
        return rng.permutation(len(counts))
    # pps: the largest keys u^(1/w) first; log(u)/w orders them alike without underflow
    weights = np.maximum(counts.astype(np.float64), 1.0)
    keys = np.log(1.0 - rng.random(len(counts))) / weights  # 1 - u: in (0, 1], so the log is finite
    return np.argsort(-keys, kind="stable")


def sample_walk(totals: list[int], eligible: Any, how: str = "top", seed: int | None = None) -> Any:
    """The clusters to walk, in order (a numpy array): `sample_order` of the `eligible`
    clusters' `totals` (None: every cluster; else an array of cluster numbers)."""
    import numpy as np

    position = np.int32 if len(totals) < 1 << 31 else np.int64  # a long tail has millions of clusters
    if eligible is None:
        return _order(_ints(totals), how, seed).astype(position)
    eligible = np.asarray(eligible, dtype=position)
    return eligible[_order(_ints(totals)[eligible], how, seed)]


def at_least(totals: list[int], min_count: int) -> Any:
    """The clusters whose total is `min_count` or more, as a numpy array (a long tail has
    millions of clusters: no list of them)."""
    import numpy as np

    return np.flatnonzero(_ints(totals) >= min_count)

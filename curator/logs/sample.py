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
    return [int(i) for i in _order(counts, how, seed)]


def _order(counts: Any, how: str, seed: int | None) -> Any:
    """`sample_order` as a numpy array (`counts`: a list or an array)."""
    import numpy as np

    if how not in SAMPLERS:
        raise ValueError(f"unknown sampler {how!r}; expected one of {', '.join(SAMPLERS)}")
    n = len(counts)
    if how == "top":  # most frequent first, ties in index order
        if not isinstance(counts, np.ndarray) and n and max(counts) >= 1 << 62:  # past what int64 holds
            return np.array(sorted(range(n), key=counts.__getitem__, reverse=True), dtype=np.int64)
        return np.argsort(-np.asarray(counts, dtype=np.int64), kind="stable")
    rng = np.random.default_rng(seed)
    if how == "random":
        return rng.permutation(n)
    # pps: the largest keys u^(1/w) first; log(u)/w orders them alike without underflow
    weights = np.maximum(np.asarray(counts, dtype=np.float64), 1.0)
    keys = np.log(1.0 - rng.random(n)) / weights  # 1 - u: in (0, 1], so the log is finite
    return np.argsort(-keys, kind="stable")


def sample_walk(totals: list[int], eligible: Any, how: str = "top", seed: int | None = None) -> Any:
    """The clusters to walk, in order (a numpy array): `sample_order` of the `eligible`
    clusters' `totals` (None: every cluster; else an array of cluster numbers)."""
    import numpy as np

    if eligible is None:
        return _order(totals, how, seed)
    eligible = np.asarray(eligible, dtype=np.int64)
    picked = [totals[c] for c in eligible.tolist()] if len(totals) and max(totals) >= 1 << 62 else (
        np.asarray(totals, dtype=np.int64)[eligible])
    return eligible[_order(picked, how, seed)]


def at_least(totals: list[int], min_count: int) -> Any:
    """The clusters whose total is `min_count` or more, as a numpy array (a long tail has
    millions of clusters: no list of them)."""
    import numpy as np

    big = bool(totals) and max(totals) >= 1 << 62  # pre-aggregated counts past what int64 holds
    return np.flatnonzero(np.asarray(totals, dtype=object if big else np.int64) >= min_count)

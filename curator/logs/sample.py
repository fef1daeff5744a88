"""Choosing which clusters a reviewer sees, within a budget.

`top` takes the most frequent; `random` draws uniformly; `pps` draws with probability
proportional to frequency (the way OpenSearch's query-set sampler does), without
replacement (weighted keys u^(1/w), Efraimidis and Spirakis), so the budget is spent
on distinct queries. All of them return an order to walk, so that duplicates found
later can be skipped without shrinking the sample.
"""

from __future__ import annotations

import random
from typing import Any

SAMPLERS = ("top", "random", "pps")


def sample_order(counts: list[int], how: str = "top", seed: int | None = None) -> list[int]:
    """Indices of `counts` in the order to take them."""
    if how == "top":  # most frequent first, ties in index order (a reverse sort stays stable)
        return sorted(range(len(counts)), key=counts.__getitem__, reverse=True)
    rng = random.Random(seed)
    if how == "random":
        order = list(range(len(counts)))
        rng.shuffle(order)
        return order
    if how == "pps":
        keys = [(rng.random() ** (1.0 / max(c, 1)), i) for i, c in enumerate(counts)]
        return [i for _k, i in sorted(keys, reverse=True)]
    raise ValueError(f"unknown sampler {how!r}; expected one of {', '.join(SAMPLERS)}")


def sample_walk(totals: list[int], eligible: list[int] | None, how: str = "top", seed: int | None = None) -> Any:
    """The clusters to walk, in order: `sample_order` of the `eligible` clusters' `totals`
    (None: every cluster). The most frequent first is a stable numpy sort (the same
    order as `sample_order`'s), so a log of millions of one-off clusters needs no list
    of them."""
    if how == "top" and eligible is None and totals and max(totals) < 1 << 62:
        import numpy as np

        return np.argsort(-np.asarray(totals, dtype=np.int64), kind="stable")
    if eligible is None:
        return sample_order(totals, how, seed)
    order = sample_order([totals[c] for c in eligible], how, seed)
    return [eligible[i] for i in order]

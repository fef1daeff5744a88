"""Noise: bootstrap confidence intervals and the paired randomization test, over queries.

- `bootstrap_cis`: a 95% percentile interval of each metric's mean, from `resamples`
  resamples of the queries with replacement (seeded, so an artefact is reproducible). The
  resamples are drawn once per group and shared by its metrics.
- `paired_test`: the two-sided paired randomization (sign-flip) test of the mean
  difference, as scipy's `permutation_test(..., permutation_type="samples")` computes it:
  every sign assignment when 2**n <= resamples (exact), else `resamples` random ones with
  the +1 correction; p = 2 * min(P(T >= t), P(T <= t)), at most 1.
- `min_detectable_difference`: the smallest difference in a success rate two runs of n
  cases can tell apart at alpha 0.05 with 80% power (two proportions near 0.5).

numpy does the arithmetic (it is already a dependency); a 10k-query, 5-slice artefact
costs well under a second.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

RESAMPLES = 1000
SEED = 0
ALPHA = 0.05
BATCH = 200  # resamples drawn at a time: bounds memory to BATCH x queries counts


def bootstrap_cis(
    columns: Mapping[str, Sequence[float]], resamples: int = RESAMPLES, seed: int = SEED, alpha: float = ALPHA
) -> dict[str, list[float]]:
    """{metric: [low, high]} for each column of per-query values (all of one length)."""
    names = list(columns)
    if not names:
        return {}
    values = np.array([columns[name] for name in names], dtype=np.float64).T  # queries x metrics
    n = values.shape[0]
    if n == 0:
        return {}
    rng = np.random.default_rng(seed)
    means = np.empty((resamples, len(names)))
    done = 0
    while done < resamples:
        size = min(BATCH, resamples - done)
        picks = rng.integers(0, n, size=(size, n), dtype=np.int32)
        offsets = (np.arange(size, dtype=np.int32) * n)[:, None]
        counts = np.bincount((picks + offsets).ravel(), minlength=size * n).reshape(size, n)
        means[done:done + size] = counts.astype(np.float64) @ values / n  # BLAS, not an int loop
        done += size
    low = np.percentile(means, 100 * alpha / 2, axis=0)
    high = np.percentile(means, 100 * (1 - alpha / 2), axis=0)
    return {name: [float(low[i]), float(high[i])] for i, name in enumerate(names)}


def paired_test(a: Sequence[float], b: Sequence[float], resamples: int = RESAMPLES, seed: int = SEED) -> float:
    """Two-sided p-value of mean(b - a) under random sign flips of the paired differences."""
    diff = np.asarray(b, dtype=np.float64) - np.asarray(a, dtype=np.float64)
    n = len(diff)
    if n == 0:
        return 1.0
    observed = diff.mean()
    if 2**n <= resamples:  # every assignment, as scipy does
        signs = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1) * 2 - 1
        null = signs @ diff / n
        adjust, total = 0, len(null)
    else:
        rng = np.random.default_rng(seed)
        null = np.empty(resamples)
        done = 0
        while done < resamples:
            size = min(BATCH, resamples - done)
            signs = rng.integers(0, 2, size=(size, n)) * 2 - 1
            null[done:done + size] = signs.astype(np.float64) @ diff / n
            done += size
        adjust, total = 1, resamples + 1
    eps = 1e-14 * max(1.0, abs(observed))  # scipy's tolerance for ties with the observed value
    greater = (np.count_nonzero(null >= observed - eps) + adjust) / total
    less = (np.count_nonzero(null <= observed + eps) + adjust) / total
    return float(min(1.0, 2 * min(greater, less)))


def min_detectable_difference(n: int, alpha: float = ALPHA, power: float = 0.8) -> float | None:
    """The smallest success-rate difference n cases per run detect (normal approximation,
    two-sided alpha, the given power, variance at p = 0.5); None without cases."""
    if n <= 0:
        return None
    z_alpha = _z(1 - alpha / 2)
    z_power = _z(power)
    return min(1.0, (z_alpha + z_power) * math.sqrt(2 * 0.25 / n))


def _z(p: float) -> float:
    """The standard normal quantile (statistics.NormalDist, no scipy at run time)."""
    from statistics import NormalDist

    return NormalDist().inv_cdf(p)

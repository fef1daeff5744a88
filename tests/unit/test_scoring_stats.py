"""Bootstrap intervals and the paired randomization test against scipy's reference
implementations; the intervals and p-values in score and compare artefacts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import curator
from curator.scoring.compare import compare
from curator.scoring.stats import bootstrap_cis, min_detectable_difference, paired_test

scipy_stats = pytest.importorskip("scipy.stats")


def _mean_diff(x, y, axis):
    return np.mean(y - x, axis=axis)


def test_bootstrap_interval_agrees_with_scipy() -> None:
    rng = np.random.default_rng(7)
    values = (rng.random(300) < 0.7).astype(float)
    ndcg = rng.random(300)
    ours = bootstrap_cis({"success@5": list(values), "ndcg@5": list(ndcg)}, resamples=4000, seed=3)
    for name, data in (("success@5", values), ("ndcg@5", ndcg)):
        ref = scipy_stats.bootstrap((data,), np.mean, method="percentile", n_resamples=4000, random_state=1)
        low, high = ours[name]
        # two Monte Carlo estimates of the same quantiles: within a small fraction of the width
        width = ref.confidence_interval.high - ref.confidence_interval.low
        assert abs(low - ref.confidence_interval.low) < 0.08 * width
        assert abs(high - ref.confidence_interval.high) < 0.08 * width
    assert bootstrap_cis({"s": [1.0, 0.0, 1.0]}, seed=5) == bootstrap_cis({"s": [1.0, 0.0, 1.0]}, seed=5)  # seeded


def test_exact_paired_test_equals_scipy() -> None:
    rng = np.random.default_rng(11)
    for n in (3, 6, 9):
        a, b = (rng.random(n) < 0.5).astype(float), rng.random(n)
        ref = scipy_stats.permutation_test((a, b), _mean_diff, permutation_type="samples", n_resamples=1000,
                                           vectorized=True)
        assert paired_test(list(a), list(b), resamples=1000) == pytest.approx(ref.pvalue, abs=1e-12)


def test_random_paired_test_agrees_with_scipy() -> None:
    rng = np.random.default_rng(5)
    a = (rng.random(400) < 0.55).astype(float)
    b = np.where(rng.random(400) < 0.1, 1 - a, a)  # b flips 10% of a
    ref = scipy_stats.permutation_test((a, b), _mean_diff, permutation_type="samples", n_resamples=5000,
                                       vectorized=True, random_state=2)
    assert paired_test(list(a), list(b), resamples=5000, seed=9) == pytest.approx(ref.pvalue, abs=0.03)
    assert paired_test([0.0] * 50, [1.0] * 50) < 0.01


def test_min_detectable_difference_shrinks_with_cases() -> None:
    assert min_detectable_difference(10) == pytest.approx(0.626, abs=0.001)  # (1.96 + 0.84) * sqrt(0.05)
    assert min_detectable_difference(100) == pytest.approx(0.198, abs=0.001)
    assert min_detectable_difference(0) is None


def test_score_and_compare_carry_intervals_and_noise(demo_ws, tmp_path: Path) -> None:
    run = demo_ws.root / "retriever-runs" / "bm25.jsonl"
    a = curator.score(demo_ws.question_set(), run, workspace=demo_ws, gates=[]).artefact
    block = a["metrics"]["slices"]["paraphrase"]
    low, high = block["ci"]["success@5"]
    assert low <= block["success@5"] <= high and block["ci"]["recall@15"][0] <= block["recall@15"]
    assert a["config"]["bootstrap"] == {"resamples": 1000, "seed": 0, "level": 0.95}
    # B drops every result of one paraphrase case: a small swing on a tiny slice is noise
    rows = [json.loads(line) for line in run.read_text().splitlines()]
    target = next(q for q, v in a["questions"].items() if v["slice"] == "paraphrase" and v["metrics"]["success@5"])
    for row in rows:
        if row["query_id"] == target:
            row["results"] = []
    worse = tmp_path / "worse.jsonl"
    worse.write_text("".join(json.dumps(r) + "\n" for r in rows))
    b = curator.score(demo_ws.question_set(), worse, workspace=demo_ws, gates=[]).artefact
    cell = compare(a, b)["slices"]["paraphrase"]["metrics"]["success@5"]
    assert cell["delta"] < 0 and cell["significant"] is False and cell["n_paired"] == block["n"]
    assert cell["p"] == pytest.approx(1.0)  # one flipped pair of n: both signs equally extreme
    assert cell["ci_a"] == block["ci"]["success@5"]

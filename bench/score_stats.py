"""Noise statistics at scale: bootstrap intervals and the paired randomization test on
10,000 queries in 5 slices (issue 21: at most 1 s together).

What `curator score` adds (a 95% interval on each of the 10 per-query metrics at k=5 and
k=15, per slice and overall, 1,000 resamples) plus what `curator compare` adds (the paired
test per slice and overall on the headline metric), on synthetic per-query values. Needs
nothing from /work/shared. Prints the seconds; the goal is <= 1.0.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from curator.scoring.stats import bootstrap_cis, paired_test  # noqa: E402

QUERIES, SLICES, METRICS, GOAL = 10_000, 5, 10, 1.0


def main() -> None:
    rng = random.Random(1)
    per_slice = QUERIES // SLICES
    a = [[[float(rng.random() < 0.6) for _ in range(per_slice)] for _ in range(METRICS)] for _ in range(SLICES)]
    b = [[[v if rng.random() < 0.9 else 1 - v for v in col] for col in cols] for cols in a]
    times, cpu = [], []
    for _ in range(3):
        start, start_cpu = time.perf_counter(), time.process_time()
        groups = [*a, [[v for cols in a for v in cols[m]] for m in range(METRICS)]]
        for cols in groups:
            bootstrap_cis({f"m{m}": cols[m] for m in range(METRICS)})
        for s in range(SLICES):
            paired_test(a[s][0], b[s][0])
        paired_test([v for cols in a for v in cols[0]], [v for cols in b for v in cols[0]])
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    best = min(times)
    verdict = "ok" if best <= GOAL else "OVER" if min(cpu) > GOAL else "wall over, CPU within (a loaded machine)"
    print(f"bootstrap ({METRICS} metrics x {SLICES + 1} groups) + paired test ({SLICES + 1} groups) on "
          f"{QUERIES:,} queries: best {best:.3f} s, median {sorted(times)[1]:.3f} s, CPU {min(cpu):.3f} s "
          f"(goal <= {GOAL} s): {verdict}")


if __name__ == "__main__":
    main()

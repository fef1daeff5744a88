"""Benchmark: `curator import-logs` over a 5,000,000-line JSONL search log, beside
DuckDB's bare GROUP BY and a jq | sort | uniq -c pipeline on the same file.

Goal (issue 3): the whole import (normalising, redaction, clustering, queueing) within
1.5x of DuckDB's group-by, at least 3x faster than jq, peak memory under 500 MB.
The log is generated here (seeded) into bench/.data/; nothing from ../shared is read,
but like every benchmark this one only runs where ../shared exists (a dev machine).
"""

from __future__ import annotations

import bisect
import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA, SHARED, alternate, machine, median, record, spread, time_process, today  # noqa: E402

LINES = int(os.environ.get("BENCH_LOG_LINES", 5_000_000))
DISTINCT = 200_000
SEED = 20261130
BIN = Path(sys.executable).parent
JQ = "jq -r .query, LC_ALL=C sort, uniq -c"

_VOCABULARY = (
    "dhl ups fedex postnl royal mail dpd gls hermes cutoff time pickup window label backlog manifest "
    "queue stuck webhook retry retries parser error code carrier api rate limit outage depot hub "
    "sunday weekday holiday customs invoice refund duplicate shipment reference address validation "
    "packstation printer zpl pdf a4 barcode tracking delay escalation policy runbook alert severity "
    "page oncall replay dlq dead letter config flag key timeout latency p95 high low missing failed "
    "how to what is why does when where reset drain throttle enable disable default change status"
)
WORDS = _VOCABULARY.split()


def _queries(rng: random.Random) -> list[str]:
    """~200k distinct raw query strings: word combinations, codes, some upper-cased or
    padded variants of popular ones, and a few with personal data in them."""
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < DISTINCT * 0.9:
        k = rng.choice((2, 2, 3, 3, 3, 4, 4, 5, 6))
        q = " ".join(rng.choice(WORDS) for _ in range(k))
        if rng.random() < 0.15:
            q += f" {rng.choice(['CARRIER', 'PARSER', 'WEBHOOK'])}-E{rng.randint(1000, 9999)}"
        if rng.random() < 0.002:
            q += f" {rng.choice(['anna', 'j.smith', 'ops'])}{rng.randint(1, 999)}@example.com"
        if rng.random() < 0.001:
            q += f" from 203.0.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
        if q not in seen:
            seen.add(q)
            out.append(q)
    for q in out[:20_000]:  # variants of the popular ones: case and padding
        v = rng.choice((q.upper(), q.title(), f"  {q}", f"{q} ", q.replace(" ", "  ", 1)))
        if v not in seen:
            seen.add(v)
            out.append(v)
    return out


def generate(path: Path) -> None:
    rng = random.Random(SEED)
    queries = _queries(rng)
    weights = [1.0 / (rank + 1) ** 1.05 for rank in range(len(queries))]  # Zipf
    cum = list(itertools.accumulate(weights))
    total = cum[-1]
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        t0 = 1759276800  # 2025-10-01, one search every 6 seconds
        for i in range(LINES):
            q = queries[bisect.bisect_left(cum, rng.random() * total)]
            fh.write(
                json.dumps(
                    {
                        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0 + i * 6)),
                        "user_id": f"u-{rng.randint(1, 50_000)}",
                        "session_id": f"s-{rng.getrandbits(40):010x}",
                        "query": q,
                        "page": 1,
                    }
                )
                + "\n"
            )
    tmp.replace(path)


def main() -> int:
    if not SHARED.exists():
        print(f"skipped: {SHARED} is not here (benchmarks run on a dev machine)")
        return 0
    jq = shutil.which("jq")
    try:
        import duckdb  # noqa: F401
    except ImportError:
        print("skipped: duckdb is not installed (pip install -e '.[bench]')")
        return 0
    DATA.mkdir(parents=True, exist_ok=True)
    log = DATA / f"search-{LINES}.jsonl"
    if not log.exists():
        print(f"generating {log} ({LINES:,} lines) ...", flush=True)
        generate(log)
    size_mb = log.stat().st_size / 1e6
    print(f"{log.name}: {size_mb:,.0f} MB")

    work = Path(tempfile.mkdtemp(prefix="bench-logs-"))
    rss: dict[str, list[int]] = {"curator": [], "curator-q": [], "curator-pps": [], "curator-py": [], "duckdb": [],
                                 "jq": []}
    runs = itertools.count()
    last_json: dict = {}

    def run_curator(extra: list[str], key: str) -> float:
        ws = work / f"ws{next(runs)}"
        subprocess.run([str(BIN / "curator"), "init", str(ws)], check=True, capture_output=True)
        out = ws / "summary.json"
        with out.open("w") as fh:
            seconds, peak = time_process(
                [str(BIN / "curator"), "-w", str(ws), "import-logs", str(log), "--json", *extra], stdout=fh
            )
        rss[key].append(peak)
        if not extra:
            last_json.update(json.loads(out.read_text()))
        shutil.rmtree(ws)
        return seconds

    def curator() -> float:
        return run_curator([], "curator")

    def curator_queries_only() -> float:
        # the same import without first/last seen and distinct users
        return run_curator(["--time-field", "", "--user-field", ""], "curator-q")

    def curator_pps() -> float:
        # a sample that reaches queries asked a few times by several people: their users
        # are counted by a second DuckDB pass (curator/logs/duck_users.py)
        return run_curator(["--sample", "pps", "--seed", "1"], "curator-pps")

    duck_sql = (
        "import duckdb; con = duckdb.connect(); con.execute('PRAGMA disable_progress_bar'); "
        "con.sql(\"SELECT lower(trim(query)), count(*) FROM read_json("
        f"'{log}', format='newline_delimited', columns={{'query': 'VARCHAR'}}) GROUP BY 1\").fetchall()"
    )

    def duck() -> float:
        seconds, peak = time_process([sys.executable, "-c", duck_sql])
        rss["duckdb"].append(peak)
        return seconds

    def jq_pipeline() -> float:
        seconds, peak = time_process(
            ["sh", "-c", f"{jq} -r .query '{log}' | LC_ALL=C sort | uniq -c > /dev/null"]
        )
        rss["jq"].append(peak)
        return seconds

    def curator_python_engine() -> float:
        # the reference reader (what the import did before the DuckDB engine)
        return run_curator(["--engine", "python"], "curator-py")

    sides = {
        "curator import-logs": curator,
        "curator import-logs, query only": curator_queries_only,
        "curator import-logs --sample pps": curator_pps,
        "curator import-logs --engine python": curator_python_engine,
        "duckdb group-by": duck,
    }
    if jq:
        sides[JQ] = jq_pipeline
    repeat = int(os.environ.get("BENCH_REPEAT", 3))
    times = alternate(sides, repeat=repeat, warmup=1)
    shutil.rmtree(work, ignore_errors=True)

    cur = times["curator import-logs"]
    duck_ratio = median([c / d for c, d in zip(cur, times["duckdb group-by"], strict=True)])
    jq_ratio = median([j / c for c, j in zip(cur, times[JQ], strict=True)]) if jq else None
    cur_q = times["curator import-logs, query only"]
    duck_ratio_q = median([c / d for c, d in zip(cur_q, times["duckdb group-by"], strict=True)])
    jq_ratio_q = median([j / c for c, j in zip(cur_q, times[JQ], strict=True)]) if jq else None
    py_ratio = median([p / c for c, p in zip(cur, times["curator import-logs --engine python"], strict=True)])
    pps_ratio = median([p / d for p, d in zip(times["curator import-logs --sample pps"], times["duckdb group-by"],
                                              strict=True)])
    peak_mb = max(max(rss[k]) for k in ("curator", "curator-q", "curator-pps")) / 1024  # the default engine
    goal_duck, goal_jq, goal_mb = duck_ratio <= 1.5, (jq_ratio or 0) >= 3, peak_mb < 500
    rows = [
        "| side | median s | spread s | peak RSS MB |",
        "|---|---|---|---|",
    ]
    keys = dict(zip(sides, ["curator", "curator-q", "curator-pps", "curator-py", "duckdb", "jq"], strict=False))
    for name, values in times.items():
        key = keys[name]
        rows.append(f"| {name} | {median(values):.2f} | {spread(values)} | {max(rss[key]) / 1024:.0f} |")
    verdict = [
        f"- curator / DuckDB group-by: **{duck_ratio:.2f}x** (goal <= 1.5x: {'met' if goal_duck else 'NOT met'})",
        f"- jq pipeline / curator: **{jq_ratio:.2f}x** faster (goal >= 3x: {'met' if goal_jq else 'NOT met'})"
        if jq_ratio
        else "- jq not installed: no jq ratio",
        f"- without first/last seen and users (`--time-field '' --user-field ''`): "
        f"{duck_ratio_q:.2f}x DuckDB, jq / curator {jq_ratio_q or 0:.2f}x",
        f"- with `--sample pps --seed 1` (a users pass for the sampled queries pass 1 could not settle): "
        f"{pps_ratio:.2f}x DuckDB",
        f"- curator peak RSS (largest process, default engine, any sample): **{peak_mb:.0f} MB** (goal < 500 MB: {'met' if goal_mb else 'NOT met'})",
        f"- the DuckDB engine (default) is {py_ratio:.2f}x faster than `--engine python` on this log",
        f"- what the import did: {last_json.get('lines', 0):,} lines, "
        f"{last_json.get('distinct_queries', 0):,} distinct queries, "
        f"{last_json.get('distinct_normalised', 0):,} normalised, {last_json.get('clusters', 0):,} clusters, "
        f"redactions {last_json.get('redactions', {})}, {last_json.get('queued', 0)} queued",
    ]
    table = (
        f"{today()}, {machine()}; input: generated {LINES:,}-line JSONL ({size_mb:,.0f} MB, "
        f"Zipf over ~{DISTINCT // 1000}k distinct queries, seed {SEED}); {repeat} runs each after a "
        "warm-up, alternated; ratios are medians of per-pair ratios.\n\n" + "\n".join(rows) + "\n\n" + "\n".join(verdict)
    )
    print(table)
    record("import-logs (issue 3)", table)
    return 0


if __name__ == "__main__":
    sys.exit(main())

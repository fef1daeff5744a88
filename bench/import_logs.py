"""Benchmark: `curator import-logs` on five log shapes (bench/log_shapes.py) at several
sizes, beside two anchors measured in the same run on the same file: DuckDB's bare
`SELECT query, count(*) ... GROUP BY query` and `jq -r .query | LC_ALL=C sort | uniq -c`.

Goals (issue 22), on every shape at 5M lines: curator <= 4x DuckDB bare, >= 2.5x faster
than jq, the ratio to DuckDB not growing with size; peak RSS < 500 MB on shapes a, b, d
at 10M lines, < 1 GB on c. Environment: BENCH_LOG_SHAPES (default "abcde"),
BENCH_LOG_SIZES (default "500000,2000000,5000000"; 10M only when asked),
BENCH_REPEAT (default 1; runs alternate curator, DuckDB, jq). Logs are generated (seeded)
into bench/.data/; like every benchmark this one only runs where ../shared exists.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA, SHARED, alternate, machine, median, record, time_process, today  # noqa: E402
from log_shapes import SEED, SHAPES  # noqa: E402

BIN = Path(sys.executable).parent
SIZES = [int(s) for s in os.environ.get("BENCH_LOG_SIZES", "500000,2000000,5000000").split(",")]
WANTED = [s for s in os.environ.get("BENCH_LOG_SHAPES", "".join(SHAPES)) if s in SHAPES]
REPEAT = int(os.environ.get("BENCH_REPEAT", 1))
NAMES = {"a": "query+time+user, Zipf", "b": "a + hits, clicks, latency", "c": "long tail (50% one-off)",
         "d": "UBI records", "e": "a + 0.01% odd lines of each reject kind"}


def log_file(shape: str, lines: int) -> Path:
    path = DATA / f"shape-{shape}-{lines}.jsonl"
    if not path.exists():
        print(f"generating {path.name} ...", flush=True)
        # in a child: Linux keeps a process's peak RSS across fork and exec, so a big
        # parent would inflate every timed child's figure
        subprocess.run([sys.executable, str(Path(__file__).with_name("log_shapes.py")), shape, str(lines), str(path)],
                       check=True)
    return path


def measure(shape: str, lines: int, work: Path, runs: itertools.count) -> dict:
    log = log_file(shape, lines)
    field = "user_query" if shape == "d" else "query"
    rss: dict[str, int] = {}
    summary: dict = {}

    def curator() -> float:
        ws = work / f"ws{next(runs)}"
        subprocess.run([str(BIN / "curator"), "init", str(ws)], check=True, capture_output=True)
        out = ws / "summary.json"
        with out.open("w") as fh:
            seconds, peak = time_process([str(BIN / "curator"), "-w", str(ws), "import-logs", str(log), "--json"],
                                         ok=(0, 1, 3), stdout=fh)
        rss["curator"] = max(rss.get("curator", 0), peak)
        try:
            summary.update(json.loads(out.read_text()))
        except ValueError:  # exit 1: the import failed (an older build on a long tail, say)
            summary["failed"] = True
        shutil.rmtree(ws)
        return seconds

    duck_sql = (
        "import duckdb; con = duckdb.connect(); con.execute('PRAGMA disable_progress_bar'); "
        f"con.sql(\"SELECT {field}, count(*) FROM read_json('{log}', format='newline_delimited', "
        f"columns={{'{field}': 'VARCHAR'}}, ignore_errors=true) GROUP BY 1\").fetchall()"
    )

    def duck() -> float:
        seconds, peak = time_process([sys.executable, "-c", duck_sql])
        rss["duckdb"] = max(rss.get("duckdb", 0), peak)
        return seconds

    # shape e has broken JSON: jq stops at the first, so it reads each line as text
    jq = f"jq -R -r 'fromjson? | .{field} // empty'" if shape == "e" else f"jq -r .{field}"

    def jq_pipeline() -> float:
        seconds, peak = time_process(["sh", "-c", f"{jq} '{log}' | LC_ALL=C sort | uniq -c > /dev/null"])
        rss["jq"] = max(rss.get("jq", 0), peak)
        return seconds

    sides = {"curator": curator, "duckdb": duck}
    if shutil.which("jq"):
        sides["jq"] = jq_pipeline
    times = alternate(sides, repeat=REPEAT, warmup=0)
    cur = times["curator"]
    return {
        "shape": shape, "lines": lines, "mb": log.stat().st_size / 1e6,
        "curator": median(cur), "duckdb": median(times["duckdb"]),
        "to_duck": median([c / d for c, d in zip(cur, times["duckdb"], strict=True)]),
        "jq_over": median([j / c for c, j in zip(cur, times["jq"], strict=True)]) if "jq" in times else None,
        "rss_mb": {k: v / 1024 for k, v in rss.items()},
        "distinct": summary.get("distinct_queries", 0), "rejected": summary.get("rejected", 0),
        "failed": summary.get("failed", False),
    }


def main() -> int:
    if not SHARED.exists():
        print(f"skipped: {SHARED} is not here (benchmarks run on a dev machine)")
        return 0
    try:
        import duckdb  # noqa: F401
    except ImportError:
        print("skipped: duckdb is not installed")
        return 0
    DATA.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench-logs-"))
    runs = itertools.count()
    rows = ["| shape | lines | MB | distinct | curator s | DuckDB bare s | curator / DuckDB | jq / curator "
            "| peak RSS MB curator / DuckDB / jq |", "|---|---|---|---|---|---|---|---|---|"]
    try:
        for shape in WANTED:
            for lines in SIZES:
                m = measure(shape, lines, work, runs)
                r = m["rss_mb"]
                jq = f"{m['jq_over']:.2f}x" if m["jq_over"] is not None else "-"
                rows.append(
                    f"| {shape}: {NAMES[shape]} | {lines:,} | {m['mb']:,.0f} | {m['distinct']:,} | {m['curator']:.2f} "
                    f"| {m['duckdb']:.2f} | **{m['to_duck']:.2f}x**{' (FAILED)' if m['failed'] else ''} | {jq} "
                    f"| {r.get('curator', 0):.0f} / {r.get('duckdb', 0):.0f} / {r.get('jq', 0):.0f} |")
                print(rows[-1], flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    table = (f"{today()}, {machine()}; generated logs (bench/log_shapes.py, seed {SEED}); {REPEAT} run(s) of "
             "each side, alternated; ratios are medians of per-pair ratios.\n\n" + "\n".join(rows))
    print(table)
    record("import-logs (issue 22: log shapes)", table)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: `curator import-logs` on five log shapes (bench/log_shapes.py) at several
sizes, beside two anchors measured in the same run on the same file: DuckDB's bare
`SELECT query, count(*) ... GROUP BY query` and `jq -r .query | LC_ALL=C sort | uniq -c`.

Goals (issue 22), on every shape at 5M lines: curator <= 4x DuckDB bare, >= 2.5x faster
than jq, the ratio to DuckDB not growing with size; peak RSS < 500 MB on shapes a, b, d
at 10M lines, < 1 GB on c. Environment: BENCH_LOG_SHAPES (default "abcde"),
BENCH_LOG_SIZES (default "500000,2000000,5000000"; 10M only when asked),
BENCH_REPEAT (default 1; runs alternate curator, DuckDB, jq), BENCH_JQ_MAX (lines; jq is
not run on bigger logs, default 5M), BENCH_ANCHOR_CURATOR (another build's `curator`,
e.g. main's, run beside this one in every round). Wall and CPU seconds (user + system,
DuckDB's threads included) are medians; ratios are medians of per-round ratios. Logs are
generated (seeded) into bench/.data/; like every benchmark this one only runs where
../shared exists.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA, SHARED, alternate, machine, median, record, today  # noqa: E402
from log_shapes import SEED, SHAPES  # noqa: E402

BIN = Path(sys.executable).parent
SIZES = [int(s) for s in os.environ.get("BENCH_LOG_SIZES", "500000,2000000,5000000").split(",")]
WANTED = [s for s in os.environ.get("BENCH_LOG_SHAPES", "".join(SHAPES)) if s in SHAPES]
REPEAT = int(os.environ.get("BENCH_REPEAT", 1))
JQ_MAX = int(os.environ.get("BENCH_JQ_MAX", 5_000_000))
ANCHOR = os.environ.get("BENCH_ANCHOR_CURATOR")  # another build's curator, run beside this one
# what the two builds' --json summaries must agree on
COMPARED = ("lines", "distinct_queries", "distinct_normalised", "rejected", "clusters", "queued", "preview")
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


def timed(cmd: list[str], ok: tuple[int, ...] = (0,), **kwargs) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system, with the child's children: jq's sort) and
    peak RSS (KB) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, **kwargs)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in ok:
        raise RuntimeError(f"{cmd[0]} exited {os.waitstatus_to_exitcode(status)}")
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def measure(shape: str, lines: int, work: Path, runs: itertools.count) -> dict:
    log = log_file(shape, lines)
    field = "user_query" if shape == "d" else "query"
    rss: dict[str, int] = {}
    cpu: dict[str, list[float]] = {}
    summary: dict = {}

    def side(name: str, cmd: list[str], ok: tuple[int, ...] = (0,), **kwargs) -> float:
        seconds, used, peak = timed(cmd, ok, **kwargs)
        rss[name] = max(rss.get(name, 0), peak)
        cpu.setdefault(name, []).append(used)
        return seconds

    def curator(name: str, binary: str) -> float:
        ws = work / f"ws{next(runs)}"
        subprocess.run([binary, "init", str(ws)], check=True, capture_output=True)
        out = ws / "summary.json"
        with out.open("w") as fh:
            seconds = side(name, [binary, "-w", str(ws), "import-logs", str(log), "--json"], ok=(0, 1, 3), stdout=fh)
        try:
            summary.setdefault(name, {}).update(json.loads(out.read_text()))
        except ValueError:  # exit 1: the import failed (an older build on a long tail, say)
            summary.setdefault(name, {})["failed"] = True
        shutil.rmtree(ws)
        return seconds

    duck_sql = (
        "import duckdb; con = duckdb.connect(); con.execute('PRAGMA disable_progress_bar'); "
        f"con.sql(\"SELECT {field}, count(*) FROM read_json('{log}', format='newline_delimited', "
        f"columns={{'{field}': 'VARCHAR'}}, ignore_errors=true) GROUP BY 1\").fetchall()"
    )

    def duck() -> float:
        return side("duckdb", [sys.executable, "-c", duck_sql])

    # shape e has broken JSON: jq stops at the first, so it reads each line as text
    jq = f"jq -R -r 'fromjson? | .{field} // empty'" if shape == "e" else f"jq -r .{field}"

    def jq_pipeline() -> float:
        return side("jq", ["sh", "-c", f"{jq} '{log}' | LC_ALL=C sort | uniq -c > /dev/null"])

    sides = {"curator": lambda: curator("curator", str(BIN / "curator"))}
    if ANCHOR:
        sides["anchor"] = lambda: curator("anchor", ANCHOR)
    sides["duckdb"] = duck
    if shutil.which("jq") and lines <= JQ_MAX:
        sides["jq"] = jq_pipeline
    times = alternate(sides, repeat=REPEAT, warmup=0)
    cur, bare = times["curator"], times["duckdb"]

    def ratio(top: list[float], bottom: list[float]) -> float:
        return median([t / b for t, b in zip(top, bottom, strict=True)])

    if ANCHOR and [summary["anchor"].get(k) for k in COMPARED] != [summary["curator"].get(k) for k in COMPARED]:
        print(f"  note: shape {shape} at {lines:,}: the two builds' --json summaries differ", flush=True)
    return {
        "shape": shape, "lines": lines, "mb": log.stat().st_size / 1e6,
        "curator": median(cur), "duckdb": median(bare),
        "cpu": {k: median(v) for k, v in cpu.items()},
        "to_duck": ratio(cur, bare), "cpu_to_duck": ratio(cpu["curator"], cpu["duckdb"]),
        "anchor_to_duck": ratio(times["anchor"], bare) if ANCHOR else None,
        "to_anchor": ratio(cur, times["anchor"]) if ANCHOR else None,
        "cpu_to_anchor": ratio(cpu["curator"], cpu["anchor"]) if ANCHOR else None,
        "jq_over": ratio(times["jq"], cur) if "jq" in times else None,
        "rss_mb": {k: v / 1024 for k, v in rss.items()},
        "distinct": summary["curator"].get("distinct_queries", 0), "rejected": summary["curator"].get("rejected", 0),
        "failed": summary["curator"].get("failed", False), "load": os.getloadavg()[0],
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
    rows = ["| shape | lines | MB | distinct | curator wall s / CPU s | DuckDB bare wall s / CPU s "
            "| curator ÷ DuckDB wall / CPU | anchor ÷ DuckDB wall | curator ÷ anchor wall / CPU | jq ÷ curator wall "
            "| peak RSS MB curator / anchor / DuckDB / jq | load |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def x(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}x"

    try:
        for shape in WANTED:
            for lines in SIZES:
                m = measure(shape, lines, work, runs)
                r, c = m["rss_mb"], m["cpu"]
                rows.append(
                    f"| {shape}: {NAMES[shape]} | {lines:,} | {m['mb']:,.0f} | {m['distinct']:,} "
                    f"| {m['curator']:.2f} / {c['curator']:.2f} | {m['duckdb']:.2f} / {c['duckdb']:.2f} "
                    f"| **{x(m['to_duck'])}** / {x(m['cpu_to_duck'])}{' (FAILED)' if m['failed'] else ''} "
                    f"| {x(m['anchor_to_duck'])} | {x(m['to_anchor'])} / {x(m['cpu_to_anchor'])} | {x(m['jq_over'])} "
                    f"| {r.get('curator', 0):.0f} / {r.get('anchor', 0):.0f} / {r.get('duckdb', 0):.0f} / "
                    f"{r.get('jq', 0):.0f} | {m['load']:.1f} |")
                print(rows[-1], flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    anchor = f"; anchor build: {ANCHOR}" if ANCHOR else ""
    table = (f"{today()}, {machine()}; generated logs (bench/log_shapes.py, seed {SEED}); {REPEAT} run(s) of "
             f"each side, alternated{anchor}; ratios are medians of per-round ratios; load is the 1-minute "
             "load average after each row.\n\n" + "\n".join(rows))
    print(table)
    record("import-logs (issue 22: log shapes)", table)
    return 0


if __name__ == "__main__":
    sys.exit(main())

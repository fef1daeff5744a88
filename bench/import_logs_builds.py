"""Benchmark: `curator import-logs` of this checkout against another build (a checkout of
main, say) on the log shapes of bench/log_shapes.py, beside DuckDB's bare group-by and
jq, all alternated in the same run; wall and CPU seconds (user + system of the child)
and peak RSS of each side, ratios as medians of pairs.

Environment: BENCH_BASELINE (a checkout whose `curator` package is the other build; without
it only this build runs), BENCH_LOG_SHAPES (default "ace"), BENCH_LOG_SIZES (default
"2000000,5000000"), BENCH_REPEAT (default 2). Both builds run with this checkout's
interpreter and packages.
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
from common import DATA, SHARED, machine, median, record, today  # noqa: E402
from import_logs import NAMES, log_file  # noqa: E402
from log_shapes import SEED, SHAPES  # noqa: E402

BIN = Path(sys.executable).parent
BASELINE = os.environ.get("BENCH_BASELINE")
SIZES = [int(s) for s in os.environ.get("BENCH_LOG_SIZES", "2000000,5000000").split(",")]
WANTED = [s for s in os.environ.get("BENCH_LOG_SHAPES", "ace") if s in SHAPES]
REPEAT = int(os.environ.get("BENCH_REPEAT", 2))
_CLI = "import sys; sys.path.insert(0, {path!r}); from curator.cli import main; sys.argv[0] = 'curator'; sys.exit(main())"


def run(cmd: list[str], ok: tuple[int, ...] = (0,), **kwargs: object) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and peak RSS (MB) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, **kwargs)  # type: ignore[call-overload]
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in ok:
        raise RuntimeError(f"{cmd[:3]} exited {code}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024


def main() -> int:
    if not SHARED.exists():
        print(f"skipped: {SHARED} is not here (benchmarks run on a dev machine)")
        return 0
    DATA.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench-builds-"))
    runs = itertools.count()
    builds = {"this": str(Path(__file__).resolve().parent.parent)}
    if BASELINE:
        builds["main"] = BASELINE
    rows = []
    try:
        for shape in WANTED:
            for lines in SIZES:
                rows.append(measure(shape, lines, builds, work, runs))
                print(rows[-1], flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load = os.getloadavg()
    head = ("| shape | lines | distinct | this s (CPU s) | main s (CPU s) | DuckDB bare s | this / DuckDB | "
            "main / DuckDB | this / main | jq / this | peak RSS MB this / main / DuckDB |")
    table = (f"{today()}, {machine()}, load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}; "
             f"generated logs (bench/log_shapes.py, seed {SEED}); {REPEAT} run(s) of each side, alternated "
             "(this, main, DuckDB, jq); ratios are medians of per-pair ratios of wall seconds.\n\n"
             f"{head}\n" + "|---" * (head.count("|") - 1) + "|\n" + "\n".join(rows))
    print(table)
    record("import-logs: this build against main on the log shapes (bench/import_logs_builds.py)", table)
    return 0


def measure(shape: str, lines: int, builds: dict[str, str], work: Path, runs: itertools.count) -> str:
    log = log_file(shape, lines)
    field = "user_query" if shape == "d" else "query"
    wall: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    rss: dict[str, int] = {}
    distinct: dict[str, int] = {}
    duck_sql = (
        "import duckdb; con = duckdb.connect(); con.execute('PRAGMA disable_progress_bar'); "
        f"con.sql(\"SELECT {field}, count(*) FROM read_json('{log}', format='newline_delimited', "
        f"columns={{'{field}': 'VARCHAR'}}, ignore_errors=true) GROUP BY 1\").fetchall()"
    )
    jq = f"jq -R -r 'fromjson? | .{field} // empty'" if shape == "e" else f"jq -r .{field}"
    for _ in range(REPEAT):
        for name, path in builds.items():
            ws = work / f"ws{next(runs)}"
            subprocess.run([str(BIN / "curator"), "init", str(ws)], check=True, capture_output=True)
            out = ws / "summary.json"
            with out.open("w") as fh:
                w, c, r = run([sys.executable, "-c", _CLI.format(path=path), "-w", str(ws), "import-logs", str(log),
                               "--json"], ok=(0, 1, 3), stdout=fh)
            try:
                distinct[name] = json.loads(out.read_text()).get("distinct_queries", 0)
            except ValueError:
                distinct[name] = -1
            shutil.rmtree(ws)
            wall.setdefault(name, []).append(w)
            cpu.setdefault(name, []).append(c)
            rss[name] = max(rss.get(name, 0), r)
        for name, cmd in (("duckdb", [sys.executable, "-c", duck_sql]),
                          ("jq", ["sh", "-c", f"{jq} '{log}' | LC_ALL=C sort | uniq -c > /dev/null"])):
            if name == "jq" and not shutil.which("jq"):
                continue
            w, c, r = run(cmd)
            wall.setdefault(name, []).append(w)
            cpu.setdefault(name, []).append(c)
            rss[name] = max(rss.get(name, 0), r)

    def ratio(a: str, b: str) -> str:
        if a not in wall or b not in wall:
            return "-"
        return f"{median([x / y for x, y in zip(wall[a], wall[b], strict=True)]):.2f}x"

    def secs(name: str) -> str:
        return f"{median(wall[name]):.2f} ({median(cpu[name]):.2f})" if name in wall else "-"

    return (f"| {shape}: {NAMES[shape]} | {lines:,} | {distinct.get('this', 0):,} | {secs('this')} | {secs('main')} "
            f"| {secs('duckdb')} | **{ratio('this', 'duckdb')}** | {ratio('main', 'duckdb')} | {ratio('this', 'main')} "
            f"| {ratio('jq', 'this')} | {rss.get('this', 0)} / {rss.get('main', '-')} / {rss.get('duckdb', 0)} |")


if __name__ == "__main__":
    sys.exit(main())

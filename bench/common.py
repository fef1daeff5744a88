"""Helpers shared by the benchmarks: timing beside anchors, and docs/benchmarks.md."""

from __future__ import annotations

import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
CORPORA = SHARED / "corpora"
DATA = ROOT / "bench" / ".data"  # generated inputs, never committed
BENCH_DOC = ROOT / "docs" / "benchmarks.md"


def _bytecode() -> None:
    """Byte-compile curator's modules, as an install does and a user's first run does: a
    shell with PYTHONDONTWRITEBYTECODE set (this machine's) would otherwise have every
    timed curator process compile its changed modules from source (20-40 ms each)."""
    import compileall

    compileall.compile_dir(ROOT / "curator", quiet=1)


_bytecode()


def need_shared(*parts: str) -> Path:
    """The path under ../shared/corpora, or exit 0 with a note when it is absent."""
    path = CORPORA.joinpath(*parts)
    if not path.exists():
        print(f"skipped: {path} is not here (benchmarks need ../shared/corpora)")
        sys.exit(0)
    return path


def machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def today() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d")


def time_process(cmd: list[str], ok: tuple[int, ...] = (0,), **kwargs) -> tuple[float, int]:
    """Wall seconds and peak RSS (KB) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, **kwargs)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in ok:
        raise RuntimeError(f"{cmd[0]} exited {proc.returncode}")
    return elapsed, usage.ru_maxrss


def alternate(runs: dict[str, Callable[[], float]], repeat: int = 5, warmup: int = 1) -> dict[str, list[float]]:
    """Run each side `repeat` times after `warmup`, alternating A B A B, return timings."""
    for _ in range(warmup):
        for fn in runs.values():
            fn()
    out: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, fn in runs.items():
            out[name].append(fn())
    return out


def median(values: list[float]) -> float:
    return statistics.median(values)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def spread(values: list[float]) -> str:
    return f"{min(values):.3f}–{max(values):.3f}"


def peak_rss_children_mb() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def record(section: str, markdown: str) -> None:
    """Replace `## section` in docs/benchmarks.md with fresh results (or add it)."""
    text = BENCH_DOC.read_text(encoding="utf-8") if BENCH_DOC.exists() else "# Benchmarks\n"
    block = f"## {section}\n\n{markdown.strip()}\n"
    pattern = re.compile(rf"^## {re.escape(section)}\n.*?(?=^## |\Z)", re.S | re.M)
    text = pattern.sub(lambda _m: block + "\n", text) if pattern.search(text) else text.rstrip() + "\n\n" + block
    BENCH_DOC.write_text(text, encoding="utf-8")

"""DuckDB's memory limit comes from the memory the machine has available (page cache
included), not from its free pages: a machine that has just read a few GB of logs has
little MemFree and plenty MemAvailable."""

from __future__ import annotations

from pathlib import Path

from curator.logs.duck_sql import available_memory, machine_memory_limit

MEMINFO = """MemTotal:       24683520 kB
MemFree:          479572 kB
MemAvailable:   22192352 kB
Buffers:            2048 kB
Cached:         21000000 kB
"""


def test_the_limit_counts_the_page_cache_the_kernel_would_drop(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(MEMINFO)
    assert available_memory(meminfo) == 22192352 * 1024
    assert machine_memory_limit(meminfo) == "384MB"  # MemFree's quarter would be 117 MB


def test_a_machine_short_of_memory_still_gets_the_floor_that_counting_needs(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(MEMINFO.replace("22192352", "600000"))
    assert machine_memory_limit(meminfo) == "256MB"
    meminfo.write_text(MEMINFO.replace("22192352", "1200000"))  # a quarter: 292 MB
    assert machine_memory_limit(meminfo) == "292MB"


def test_without_meminfo_the_free_pages_are_used(tmp_path: Path) -> None:
    limit = int(machine_memory_limit(tmp_path / "no-such-file").removesuffix("MB"))
    assert 256 <= limit <= 384

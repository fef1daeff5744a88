"""The DuckDB engine on odd lines, list fields and memory (issue 22): the same import as
the python reader, field by field, without a second pass over the file for odd lines;
hits and clicks counted in SQL; a private spill folder."""

from __future__ import annotations

import gzip
import json
import os
import stat
from collections import Counter
from pathlib import Path

import pytest

from curator.logs.duck_odd import locate
from curator.logs.duck_sql import Reader, machine_memory_limit, spill_folder
from curator.logs.reading import read_source
from curator.logs.sources import Source
from tests.unit.test_logs_engines import _import

ODD = [  # one of each reject kind, and a line with the query equal to a key name
    b'{"timestamp": "2026-10-01T08:00:00Z", "user_id": "u1", "query": "label printer',
    b'{"timestamp": "2026-10-01T08:00:00Z", "user_id": "u2", "query": "query", "page": 1}',
    b'{"timestamp": "2026-10-01T08:00:00Z", "query": "\xff\xfe\x00 bin"}',
    b'{"timestamp": "2026-10-01T08:00:00Z", "query": "' + b"x" * (1 << 20) + b'"}',
    b'{"timestamp": "2026-10-01T08:00:00Z", "user_id": "u3", "page": 1}',
    b'{"timestamp": "2026-10-03T08:00:00Z", "user_id": "u4", "query": "query", "query": "dhl cutoff time"}',
]


def _odd_log(path: Path, lines: int = 3000, every: int = 97) -> Path:
    """A log of plain lines (hits and clicks as lists of strings, some as other forms)
    with the odd lines of ODD spread through it, each several times."""
    out = []
    for i in range(lines):
        if i % every == 5:
            out.append(ODD[(i // every) % len(ODD)])
            continue
        q = ["dhl cutoff time", "label backlog", "pickup window", f"rare {i % 40}"][i % 4]
        record = {"timestamp": f"2026-10-{1 + i % 28:02d}T08:{i % 60:02d}:00Z", "user_id": f"u{i % 150}",
                  "query": q, "hits": [f"carriers.md#{(i + k) % 7}" for k in range(3)],
                  "clicks": [f"carriers.md#{i % 7}"] if i % 3 else []}
        if i % 50 == 7:  # the other forms id_list reads: objects, a comma-separated string
            record["hits"] = [{"id": "carriers.md#0"}, {"_id": "carriers.md#9"}]
            record["clicks"] = "carriers.md#1, carriers.md#2"
        out.append(json.dumps(record).encode())
    path.write_bytes(b"\n".join(out) + b"\n")
    return path


@pytest.mark.parametrize("name", ["odd.jsonl", "odd.jsonl.gz"])
def test_odd_lines_give_the_python_readers_import_field_by_field(tmp_path: Path, name: str) -> None:
    log = _odd_log(tmp_path / "odd.jsonl")
    if name.endswith(".gz"):
        log = tmp_path / name
        log.write_bytes(gzip.compress((tmp_path / "odd.jsonl").read_bytes()))
    py = read_source(Source(name, log), engine="python")
    duck = read_source(Source(name, log), engine="duckdb")
    assert duck.engine == "duckdb"
    for part in ("counts", "first", "last", "zero_results", "latency", "ignored"):
        assert getattr(duck.agg, part) == getattr(py.agg, part), part
    assert (duck.agg.lines, duck.agg.parsed) == (py.agg.lines, py.agg.parsed)
    assert {r: (x.count, x.lines) for r, x in duck.agg.rejected.items()} == \
           {r: (x.count, x.lines) for r, x in py.agg.rejected.items()}
    assert len(py.agg.rejected) == 4  # broken JSON, binary data, line too long, no query field
    assert duck.agg.counts["query"] == py.agg.counts["query"] > 0  # the key-name query is counted
    for role in ("hits", "clicks"):
        assert getattr(duck.agg, role) == getattr(py.agg, role), role
    assert py.agg.clicks["dhl cutoff time"]["carriers.md#2"] > 0  # the comma-separated form counted


def test_odd_lines_and_list_fields_give_the_python_engines_whole_import(tmp_path: Path) -> None:
    """Users, suggestions, provenance and the summary too: the whole import compared."""
    log = _odd_log(tmp_path / "odd.jsonl")
    py_engines, py_summary, py_candidates = _import(tmp_path, "python", log, {})
    duck_engines, duck_summary, duck_candidates = _import(tmp_path, "duckdb", log, {})
    assert (py_engines, duck_engines) == ({"python"}, {"duckdb"})
    assert py_summary["queued"] > 0 and py_summary["rejected"] > 0
    for key in py_summary:
        assert duck_summary[key] == py_summary[key], key
    assert duck_candidates == py_candidates


def test_finding_the_line_numbers_of_odd_lines_stops_at_the_last_one_needed(tmp_path: Path) -> None:
    """The first five line numbers of a reason are near the start of a log: the file is
    read only that far, not again to its end. Here what follows is damaged gzip data,
    which reading further would fail on."""
    lines = [json.dumps({"query": f"q{i}"}).encode() for i in range(20)]
    lines[3] = lines[11] = b'{"query": "broken'
    good = gzip.compress(b"\n".join(lines) + b"\n" + b'{"query": "more"}\n' * 200_000)
    log = tmp_path / "damaged.jsonl.gz"
    log.write_bytes(good[: len(good) // 2])  # cut: the rest cannot be decompressed
    found = locate(Source("damaged.jsonl.gz", log), {b'{"query": "broken': "broken JSON"}, Counter({"broken JSON": 2}))
    assert found == {"broken JSON": [4, 12]}


def test_duckdb_spills_to_a_private_folder_that_is_removed_afterwards(tmp_path: Path) -> None:
    state = tmp_path / ".curator"
    with spill_folder(state) as folder:
        assert folder.parent == state
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
        reader = Reader(lambda _fraction: None, temp=folder)
        try:
            (where,) = reader.con.execute("SELECT current_setting('temp_directory')").fetchone() or ("",)
        finally:
            reader.close()
        assert Path(where) == folder
        (folder / "spilled.tmp").write_bytes(b"raw queries")
    assert list(state.iterdir()) == []
    with pytest.raises(RuntimeError), spill_folder(state) as folder:
        raise RuntimeError("an import that fails")
    assert not folder.exists()


def test_an_import_leaves_no_spill_folder_behind(tmp_path: Path) -> None:
    log = _odd_log(tmp_path / "odd.jsonl", lines=400)
    _import(tmp_path, "duckdb", log, {})
    assert sorted(p.name for p in (tmp_path / "duckdb" / ".curator").iterdir()) == ["workspace.db"]


def test_duckdbs_memory_is_sized_from_the_machine() -> None:
    limit = int(machine_memory_limit().removesuffix("MB"))
    assert 256 <= limit <= 384

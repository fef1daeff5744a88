"""A forked child never collects its parent's garbage: an unreachable cycle left in the
parent is finalised once, by the parent, whichever of curator's forks ran meanwhile.
A child that collected it would run the finalizers a second time, without the parent's
threads: an open DuckDB connection in such a cycle crashes the child (it did, once, in
a worker of the parallel log reader)."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest

import curator
from curator._process import fork
from curator.logs import reading
from curator.logs.helper import helper
from curator.logs.reading import Source, read_source
from curator.models import Case, Relevant
from curator.scoring import runfile
from curator.scoring.runfile import RunFile


class _Cycle:
    """Refers to itself, so only the cyclic collector frees it; notes where it was."""

    def __init__(self, notes: Path, con=None) -> None:
        self.notes, self.con, self.me = notes, con, self

    def __del__(self) -> None:
        with self.notes.open("a") as fh:
            fh.write(f"{os.getpid()}\n")


@pytest.fixture
def garbage(tmp_path: Path):
    """Leaves one unreachable cycle in this process, with the collector off so that it
    stays there until a collection someone asks for; gives a function that collects
    here and returns the processes the cycle was finalised in."""
    notes = tmp_path / "finalised"
    was = gc.isenabled()
    gc.disable()
    _Cycle(notes)

    def finalised_in() -> list[int]:
        gc.collect()
        return [int(pid) for pid in notes.read_text().split()]

    try:
        yield finalised_in
    finally:
        if was:
            gc.enable()


def _then_collect(fn):
    """`fn`, followed by a full collection wherever it runs."""

    def collecting(*args, **kwargs):
        result = fn(*args, **kwargs)
        gc.collect()
        return result

    return collecting


def test_a_forked_child_leaves_an_open_duckdb_connection_alone(tmp_path: Path) -> None:
    """The crash itself: with `os.fork()` this child dies of SIGSEGV in its collector."""
    duckdb = pytest.importorskip("duckdb")
    notes = tmp_path / "finalised"
    was = gc.isenabled()
    gc.disable()
    try:
        con = duckdb.connect()
        con.execute("SELECT sum(i) FROM range(1000000) t(i)").fetchall()  # its threads ran
        _Cycle(notes, con)
        del con
        pid = fork()
        if pid == 0:  # pragma: no cover - the child
            gc.collect()
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"child ended by signal {os.WTERMSIG(status)}"
        gc.collect()
        assert notes.read_text().split() == [str(os.getpid())]
    finally:
        if was:
            gc.enable()


def test_the_import_helper_leaves_the_parents_garbage_alone(garbage) -> None:
    with helper() as process:
        assert process is not None
        assert process.run(gc.collect)() is not None  # collected in the helper
    assert garbage() == [os.getpid()]


def test_the_parallel_log_reader_leaves_the_parents_garbage_alone(garbage, tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "search.jsonl"
    path.write_text("".join(f'{{"query": "query {i % 50}"}}\n' for i in range(5000)))
    monkeypatch.setattr(reading, "BLOCK", 1 << 14)
    monkeypatch.setattr(reading, "PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr(reading, "_init_worker", _then_collect(reading._init_worker))  # runs in each worker
    read = read_source(Source(str(path), path), workers=2, engine="python")
    assert read.agg.parsed == 5000
    assert garbage() == [os.getpid()]


def test_scoring_in_two_processes_leaves_the_parents_garbage_alone(garbage, tmp_path: Path, monkeypatch) -> None:
    cases = [Case(query_id=f"q{i}", query=f"question {i}", slice="s", relevant=[Relevant(id=f"d{i}", role="primary")])
             for i in range(50)]
    path = tmp_path / "run.trec"
    path.write_text("".join(f"q{i} Q0 d{i + r} {r + 1} {10 - r} sys\n" for i in range(50) for r in range(5)))
    monkeypatch.setattr(runfile, "parse_range", _then_collect(runfile.parse_range))
    with RunFile(path, parallel=True) as source:
        result = curator.score(cases, source, k=[5])
        assert source.split  # the worker's part was used
    assert result.artefact["questions"]["q49"]["ranks"] == {"d49": 1}  # from the worker's half
    assert garbage() == [os.getpid()]


def test_a_child_still_collects_its_own_garbage(tmp_path: Path) -> None:
    notes = tmp_path / "finalised"
    pid = fork()
    if pid == 0:  # pragma: no cover - the child
        _Cycle(notes)
        gc.collect()
        os._exit(0 if notes.exists() else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert notes.read_text().split() == [str(pid)]


def test_the_parent_collects_as_before_a_fork(tmp_path: Path) -> None:
    """A fork freezes nothing of the parent, even one that froze objects itself (as the
    review app does after startup): its garbage is still collected here."""
    notes = tmp_path / "finalised"
    was = gc.isenabled()
    gc.disable()
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        _Cycle(notes)
        pid = fork()
        if pid == 0:  # pragma: no cover - the child
            os._exit(0)
        os.waitpid(pid, 0)
        assert gc.get_freeze_count() <= frozen and gc.isenabled() is False  # none added (some may be freed)
        gc.collect()
        assert notes.read_text().split() == [str(os.getpid())]
    finally:
        gc.unfreeze()
        if was:
            gc.enable()

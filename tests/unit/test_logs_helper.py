"""The helper process that shares an import's per-query work: the same results as
without it, and it only ever makes an import faster (a helper that is gone or fails
leaves its task to the import itself)."""

from __future__ import annotations

import os
import random
import signal
from collections import Counter
from contextlib import nullcontext

import pytest

from curator.logs import cluster as clustering
from curator.logs import pipeline
from curator.logs.aggregate import Aggregate
from curator.logs.cluster import PARALLEL_MIN, cluster
from curator.logs.helper import Helper, helper
from curator.logs.pipeline import ImportOptions, ImportSummary, _group, import_logs
from curator.logs.redact import Redactor

WORDS = ["label", "printer", "offline", "dhl", "cutoff", "time", "manifest", "retry", "webhook", "customs", "invoice", "pickup", "window", "carrier", "outage", "backlog", "depot", "hub", "latency", "parcel", "tracking", "zpl", "reset", "password"]


def _queries(n_digits: int, n_plain: int, seed: int = 7) -> tuple[list[str], list[int]]:
    """Distinct normalised queries, with typos and word-order variants among them, and
    Zipf-like counts; `n_digits` of them carry numbers (error codes, tickets)."""
    rng = random.Random(seed)
    out: dict[str, int] = {}
    while len(out) < n_plain:
        words = rng.sample(WORDS, rng.randint(2, 4))
        if rng.random() < 0.3:  # a typo
            w = rng.randrange(len(words))
            cut = rng.randrange(len(words[w]))
            words[w] = words[w][:cut] + words[w][cut + 1 :]
        out.setdefault(" ".join(words), int(1000 / (1 + len(out))) + 1)
    plain = len(out)
    while len(out) < plain + n_digits:
        words = rng.sample(WORDS, rng.randint(1, 3))
        words.insert(rng.randrange(len(words) + 1), f"carrier-e{rng.randrange(400)}")
        out.setdefault(" ".join(words), rng.randint(1, 50))
    return list(out), list(out.values())


def _spied(monkeypatch) -> list[str]:
    """The names of the tasks handed to a helper (the real one runs them)."""
    asked: list[str] = []
    run = Helper.run
    monkeypatch.setattr(Helper, "run", lambda self, fn, *args: asked.append(fn.__name__) or run(self, fn, *args))
    return asked


def test_clustering_with_a_helper_is_clustering_without_it(monkeypatch) -> None:
    norms, counts = _queries(PARALLEL_MIN + 500, 6000)
    alone = cluster(norms, counts, 88)
    asked = _spied(monkeypatch)
    with helper() as process:
        assert process is not None  # one thread, a fork: nothing stops it here
        shared = cluster(norms, counts, 88, process)
    assert asked == ["_joins"]
    assert len(shared) == len(alone) < len(norms)  # typos did join
    assert (shared.of == alone.of).all() and (shared.leaders == alone.leaders).all()
    assert (shared.members_in == alone.members_in).all()


def test_grouping_with_a_helper_is_grouping_without_it(monkeypatch) -> None:
    norms, counts = _queries(2000, PARALLEL_MIN)
    raws = [f"  {q.upper() if i % 3 else q}  mail ops{i}@example.com" if i % 50 == 0 else q for i, q in enumerate(norms)]
    agg = Aggregate(counts=Counter(dict(zip(raws, counts, strict=True))))
    alone_summary, shared_summary = ImportSummary(), ImportSummary()
    alone_redactor, shared_redactor = Redactor(), Redactor()
    alone = _group(agg, alone_redactor, alone_summary)
    asked = _spied(monkeypatch)
    with helper() as process:
        shared = _group(agg, shared_redactor, shared_summary, process)
    assert asked == ["_cleaned"]
    assert shared.norms == alone.norms and shared.surfaces == alone.surfaces and shared.counts == alone.counts
    assert shared_redactor.counts == alone_redactor.counts and alone_redactor.counts["email"] > 0
    assert shared_summary == alone_summary


def test_an_import_with_a_helper_is_an_import_without_it(ws, tmp_path, monkeypatch) -> None:
    """Grouping and clustering shared with a helper choose what the import alone does,
    with noise filtered out between them."""
    monkeypatch.setattr(pipeline, "PARALLEL_MIN", 500)
    monkeypatch.setattr(clustering, "PARALLEL_MIN", 500)
    norms, counts = _queries(900, 2500)
    log = tmp_path / "queries.txt"
    noise = ["https://example.com/x", "aaaaaaa", "ok"]
    log.write_text("".join(f"{q}\n" * min(n, 40) for q, n in zip([*noise, *norms], [5, 5, 5, *counts], strict=True)))
    options = ImportOptions(dry_run=True, limit=0, min_count=1)
    monkeypatch.setattr(pipeline, "start_helper", lambda: nullcontext(None))
    alone = import_logs(ws, [str(log)], options).to_dict()
    asked = _spied(monkeypatch)
    with helper() as process:
        shared = import_logs(ws, [str(log)], options, helper=process).to_dict()
    assert asked == ["_cleaned", "_joins"]
    assert shared == alone
    assert alone["filtered"] and alone["clusters"] < alone["distinct_normalised"] - 3  # typos joined


def test_a_task_the_helper_cannot_finish_is_done_here() -> None:
    with helper() as process:
        assert process is not None
        os.kill(process.pid, signal.SIGKILL)  # gone before it could answer
        os.waitpid(process.pid, 0)
        assert process.run(sorted, [3, 1, 2])() == [1, 2, 3]
    with helper() as process:  # a task that fails there is run here, where its error shows
        result = process.run(int, "not a number")
        with pytest.raises(ValueError):
            result()


def test_the_helper_is_gone_after_its_with(monkeypatch) -> None:
    with helper() as process:
        pid = process.pid
        assert process.run(sum, [1, 2, 3])() == 6
    with pytest.raises(ChildProcessError):  # reaped: no process left behind
        os.waitpid(pid, os.WNOHANG)


def test_no_helper_beside_another_thread() -> None:
    """A lock another thread holds at the fork would stay held in the child."""
    import threading

    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        with helper() as process:
            assert process is None
    finally:
        stop.set()
        thread.join()

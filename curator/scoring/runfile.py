"""A run file scored where it is read; a big TREC or JSONL file in two processes.

Reading a run is most of the work of `curator score` (a 10,000 x 100 TREC run is a
million lines for Python to split). For a big line-based file, `RunFile` forks a worker
that reads the last part of the file while this process reads the question set, then
the first part; each scores its own queries and the worker sends back only the scored
questions (a few hundred bytes each). The numbers are those of one process: a query id
in both parts (a TREC file whose queries are interleaved, or a JSONL query given twice
across the cut) makes this process read and score the whole file again, alone; so does
a worker that fails for any reason.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import marshal
import mmap
import os
import select
import signal
import struct
import threading
from collections.abc import Callable
from operator import attrgetter
from pathlib import Path
from typing import Any

from curator._process import can_fork, fork
from curator.problems import Problem
from curator.scoring.evaluate import CaseSpec, score_queries
from curator.scoring.runs import RunData, new_run, parse_range, read_run_bytes

PARALLEL_MIN_BYTES = 4 << 20  # below this, forking costs more than it saves
_COUNTERS = struct.Struct("qq")  # the worker's bytes read and questions scored, for progress
_SPEC_ROW = attrgetter(*(f.name for f in dataclasses.fields(CaseSpec)))  # what marshal can send
WORKER_SHARE = 0.5  # of the file (0.4-0.7 measured: 0.5 as good as any under load)

# progress(stage, done, total): stage "read" counts bytes, "score" counts questions.
Progress = Callable[[str, int, int], None]
Found = dict[str, dict[str, Any]]


class RunFile:
    """Use as a context manager around reading the set, then call `score(specs, ...)`.

    `parallel`: None decides by size and `can_fork()` (a second core, no other thread
    running); False never forks; True forks whenever the format allows it (TREC, JSONL)
    and the platform has `fork`.
    """

    def __init__(self, path: str | Path, fmt: str | None = None, parallel: bool | None = None):
        self.data = read_run_bytes(path)
        self.run = new_run(path, self.data, fmt)
        if parallel is None:
            parallel = len(self.data) >= PARALLEL_MIN_BYTES and can_fork()
        self.cut = _cut_point(self.data, self.run.format) if parallel and hasattr(os, "fork") else None
        self.worker: _Worker | None = None
        self.split = False  # True once the worker's part was scored and used

    def __enter__(self) -> RunFile:
        if self.cut is not None:
            self.worker = _Worker(self.run, self.data, self.cut)
        self.run.sha256 = hashlib.sha256(self.data).hexdigest()  # after the fork: the worker starts sooner
        return self

    def __exit__(self, *exc: object) -> None:
        if self.worker is not None:
            self.worker.stop()

    def score(
        self, specs: list[CaseSpec], ks: list[int], threshold: float | None, progress: Progress | None = None
    ) -> tuple[RunData, dict[str, float | None], Found]:
        """(the run's path, format, sha256 and problems, without its rankings; every
        query id with its latency; the scored questions of the queries in the run)."""
        report = progress or (lambda _stage, _done, _total: None)
        worker, self.worker = self.worker, None
        if worker is None:
            return self._score_alone(specs, ks, threshold, report)
        try:
            worker.send(specs, ks, threshold)
            size = len(self.data)
            parse_range(self.run, self.data, 0, self.cut,
                        progress=lambda done: report("read", done + worker.counters()[0], size))
            found = score_queries(specs, self.run.queries, ks, threshold,
                                  progress=lambda n: report("score", n + worker.counters()[1], len(specs)))
            seen = self._drop_rankings()  # freed while the worker may still be busy

            def waiting(read: int, scored: int) -> None:
                report("read", self.cut + read, size)
                report("score", len(found) + scored, len(specs))

            theirs = worker.result(waiting)
        finally:
            worker.stop()
        if theirs is None or not theirs["seen"].keys().isdisjoint(seen):
            self.run = RunData({}, self.run.path, self.run.format, self.run.sha256)
            return self._score_alone(specs, ks, threshold, report)
        seen.update(theirs["seen"])
        found.update(theirs["found"])
        self.split = True
        self.run.problems += [Problem(self.run.path, line, message, fatal=False) for line, message in theirs["problems"]]
        report("read", size, size)  # the worker may have finished before anyone asked
        report("score", len(specs), len(specs))
        return self.run, seen, found

    def _score_alone(
        self, specs: list[CaseSpec], ks: list[int], threshold: float | None, report: Progress
    ) -> tuple[RunData, dict[str, float | None], Found]:
        size = len(self.data)
        parse_range(self.run, self.data, 0, size, progress=lambda done: report("read", done, size))
        found = score_queries(specs, self.run.queries, ks, threshold,
                              progress=lambda n: report("score", n, len(specs)))
        report("score", len(specs), len(specs))
        return self.run, self._drop_rankings(), found

    def _drop_rankings(self) -> dict[str, float | None]:
        """Once scored, only the query ids and latencies are needed; returns those."""
        seen = self.run.seen()
        self.run.queries = {}
        return seen


def _cut_point(data: bytes, fmt: str) -> int | None:
    """A line start before the worker's share; for TREC, past the lines of the query there."""
    if fmt not in ("trec", "jsonl"):
        return None
    cut = data.find(b"\n", int(len(data) * (1 - WORKER_SHARE))) + 1
    if fmt == "trec" and cut:
        qid = _first_field(data, data.rfind(b"\n", 0, cut - 1) + 1)
        while cut < len(data) and _first_field(data, cut) == qid:
            cut = data.find(b"\n", cut) + 1 or len(data)
    return cut if 0 < cut < len(data) else None


def _first_field(data: bytes, start: int) -> list[bytes]:
    end = data.find(b"\n", start)
    return data[start : end if end >= 0 else len(data)].split(None, 1)[:1]


class _Worker:
    """A forked process that reads `data[cut:]`, waits for the prepared cases, scores its
    queries and sends back `{"seen", "found", "problems"}` (marshal), or None on failure."""

    def __init__(self, run: RunData, data: bytes, cut: int):
        self.shared = mmap.mmap(-1, _COUNTERS.size)
        spec_r, self.spec_w = os.pipe()
        self.result_r, result_w = os.pipe()
        self.sender: threading.Thread | None = None
        self.pid: int | None = fork()
        if self.pid == 0:  # pragma: no cover - the worker; its results are checked by the parent
            status = 1
            try:
                os.close(self.spec_w)
                os.close(self.result_r)
                _write_all(result_w, marshal.dumps(self._work(run, data, cut, spec_r)))
                status = 0
            finally:
                os._exit(status)
        os.close(spec_r)
        os.close(result_w)

    def _work(self, run: RunData, data: bytes, cut: int, spec_r: int) -> dict[str, Any] | None:  # pragma: no cover
        part = RunData({}, run.path, run.format, run.sha256)
        size = len(data) - cut
        try:
            parse_range(part, data, cut, len(data), first_line=data.count(b"\n", 0, cut) + 1,
                        progress=lambda done: _COUNTERS.pack_into(self.shared, 0, done, 0))
            rows, ks, threshold = marshal.loads(_read_all(spec_r))
            specs = [CaseSpec(*row) for row in rows]
            found = score_queries(specs, part.queries, ks, threshold,
                                  progress=lambda n: _COUNTERS.pack_into(self.shared, 0, size, n))
        except Exception:  # the parent reads the whole file itself, and raises what it raises
            return None
        problems = [(p.line, p.message) for p in part.problems]
        return {"seen": part.seen(), "found": found, "problems": problems}

    def send(self, specs: list[CaseSpec], ks: list[int], threshold: float | None) -> None:
        """Hand the prepared cases over; a thread writes them, so this process reads on."""
        rows = list(map(_SPEC_ROW, specs))
        blob = marshal.dumps((rows, list(ks), threshold))
        fd, self.spec_w = self.spec_w, None
        self.sender = threading.Thread(target=_write_all, args=(fd, blob), daemon=True)
        self.sender.start()

    def counters(self) -> tuple[int, int]:
        return _COUNTERS.unpack_from(self.shared, 0)

    def result(self, progress: Callable[[int, int], None]) -> dict[str, Any] | None:
        """Wait for the worker's answer, reporting its progress meanwhile."""
        chunks = []
        while True:
            ready, _, _ = select.select([self.result_r], [], [], 0.1)
            if not ready:
                progress(*self.counters())
                continue
            chunk = os.read(self.result_r, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        _, status = os.waitpid(self.pid, 0)
        self.pid = None
        if status != 0 or not chunks:
            return None
        return marshal.loads(b"".join(chunks))

    def stop(self) -> None:
        if self.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.pid = None
        if self.sender is not None:
            self.sender.join()
            self.sender = None
        for name in ("spec_w", "result_r"):
            fd = getattr(self, name)
            if fd is not None:
                os.close(fd)
                setattr(self, name, None)
        self.shared.close()


def _write_all(fd: int, blob: bytes) -> None:
    """Write everything and close; a reader that went away is not an error here."""
    try:
        view = memoryview(blob)
        while view:
            view = view[os.write(fd, view):]
    except BrokenPipeError:
        pass
    finally:
        os.close(fd)


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)

"""Reading a retriever's ranked output: JSONL, TREC run files and ranx JSON.

- JSONL, one query per line: `{"query_id": "...", "results": [{"id", "score", "revision"}],
  "latency_ms": 12.5}`. The list order is the rank; `score`, `revision` and `latency_ms`
  are optional.
- TREC: `qid Q0 docno rank score tag`, whitespace separated. Ranks are ignored and each
  query is sorted as trec_eval sorts it: score descending, then docno descending.
- ranx JSON: `{"qid": {"docno": score}}`, sorted like TREC.

A bad line is reported (file, line, what was expected) and skipped; the rest is read.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from operator import gt, itemgetter, methodcaller
from pathlib import Path
from typing import Any

from curator._process import paused_gc
from curator.errors import InputError
from curator.problems import Problem

try:  # orjson parses a big run file 3-4x faster; the stdlib parser is the fallback
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - depends on the environment
    _loads = json.loads

FORMATS = ("jsonl", "trec", "ranx")
_get_id, _get_score, _get_revision = itemgetter("id"), methodcaller("get", "score"), methodcaller("get", "revision")
_SCORE_TYPES, _REVISION_TYPES = {float, int, type(None)}, {str, type(None)}
CHUNK = 1 << 20  # bytes decoded and parsed at a time, between progress reports
_first, _second = itemgetter(0), itemgetter(1)


@dataclass(slots=True)
class Ranked:
    """One query's results, best first."""

    ids: list[str]
    scores: list[float | None]
    revisions: list[str | None] | None = None  # None: the run has no revisions for this query
    latency_ms: float | None = None


@dataclass
class RunData:
    queries: dict[str, Ranked]
    path: str = "<memory>"
    format: str = "python"
    sha256: str | None = None
    problems: list[Problem] = field(default_factory=list)

    def seen(self) -> dict[str, float | None]:
        """Every query id in the run, with its latency (or None)."""
        return {qid: ranked.latency_ms for qid, ranked in self.queries.items()}


def read_run(path: str | Path, fmt: str | None = None) -> RunData:
    """Read a run file in any supported format (detected from its content unless `fmt`)."""
    data = read_run_bytes(path)
    run = new_run(path, data, fmt)
    run.sha256 = hashlib.sha256(data).hexdigest()
    with paused_gc():
        parse_range(run, data, 0, len(data))
    return run


def read_run_bytes(path: str | Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError(str(path), "no such run file") from None
    except IsADirectoryError:
        raise InputError(str(path), "is a folder, expected a run file") from None


def new_run(path: str | Path, data: bytes, fmt: str | None = None) -> RunData:
    """An empty RunData for a file's bytes, in its format (detected unless given)."""
    fmt = fmt or detect_format(data)
    if fmt not in FORMATS:
        raise InputError(str(path), f"unknown run format {fmt!r}; expected one of {', '.join(FORMATS)}")
    return RunData({}, str(path), fmt)


def parse_range(
    run: RunData, data: bytes, start: int, end: int, first_line: int = 1, progress: Callable[[int], None] | None = None
) -> None:
    """Read the whole lines of `data[start:end]` into `run`, `first_line` being the line
    number at `start`. Reads ~1 MiB at a time and calls `progress(bytes read so far)`."""
    if run.format == "ranx":  # one JSON document
        _read_ranx(_decode(run, data, start, end), run)
        if progress is not None:
            progress(end - start)
    else:
        reader = _TrecReader(run) if run.format == "trec" else _JsonlReader(run)
        pos, line = start, first_line
        while pos < end:
            newline = data.find(b"\n", min(pos + CHUNK, end) - 1, end)
            stop = end if newline < 0 else newline + 1
            text = _decode(run, data, pos, stop)
            reader.feed(text, line)
            line += text.count("\n")
            pos = stop
            if progress is not None:
                progress(pos - start)
        reader.finish()


def _decode(run: RunData, data: bytes, start: int, end: int) -> str:
    try:
        return data[start:end].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(run.path, f"not UTF-8 text (byte {start + exc.start})") from None


def detect_format(data: bytes) -> str:
    data = data.lstrip()  # the same object unless the file starts with whitespace
    if data[:1] != b"{":
        return "trec"
    end = data.find(b"\n")
    first = data if end < 0 else data[:end]  # slicing, not splitting: no copy of the rest
    try:
        obj = _loads(first)
    except ValueError:
        return "ranx"  # a JSON document spread over several lines
    if isinstance(obj, dict) and "query_id" in obj:
        return "jsonl"
    return "ranx"


def _problem(run: RunData, line: int | None, message: str) -> None:
    run.problems.append(Problem(run.path, line, message, fatal=False))


class _JsonlReader:
    def __init__(self, run: RunData):
        self.run = run

    def feed(self, text: str, first_line: int) -> None:
        run = self.run
        queries = run.queries
        for number, line in enumerate(text.split("\n"), first_line):
            if not line.strip():
                continue
            try:
                obj = _loads(line)
            except ValueError as exc:
                _problem(run, number, f"not valid JSON ({exc}); expected one query object per line")
                continue
            if not isinstance(obj, dict):
                _problem(run, number, "expected a JSON object with query_id and results")
                continue
            qid = obj.get("query_id")
            results = obj.get("results")
            if not isinstance(qid, str) or not qid:
                _problem(run, number, "missing query_id (a non-empty string)")
                continue
            if not isinstance(results, list):
                _problem(run, number, f"query {qid}: results must be a list of {{id, score, revision}}")
                continue
            if qid in queries:
                _problem(run, number, f"query {qid} appears again; the first line is kept")
                continue
            try:
                ranked = _ranked_from_dicts(results)
            except ValueError as exc:
                _problem(run, number, f"query {qid}: {exc}")
                continue
            latency = obj.get("latency_ms")
            if latency is not None:
                if isinstance(latency, bool) or not isinstance(latency, int | float):
                    _problem(run, number, f"query {qid}: latency_ms must be a number; ignored")
                else:
                    ranked.latency_ms = float(latency)
            queries[qid] = ranked

    def finish(self) -> None:
        pass


def _ranked_from_dicts(results: list[Any]) -> Ranked:
    """A JSONL results list: checked in bulk when it is the usual dicts with a string id and
    a number (or no) score; anything else goes through the item-by-item check."""
    try:
        ids = list(map(_get_id, results))
        scores = list(map(_get_score, results))
        revisions = list(map(_get_revision, results))
    except (TypeError, KeyError, AttributeError):
        return _ranked_checked(results)
    score_types = set(map(type, scores))
    if set(map(type, ids)) - {str} or "" in ids or score_types - _SCORE_TYPES \
            or set(map(type, revisions)) - _REVISION_TYPES:
        return _ranked_checked(results)
    if int in score_types:
        scores = [None if score is None else float(score) for score in scores]
    return Ranked(ids, scores, None if revisions.count(None) == len(revisions) else revisions)


def _ranked_checked(results: list[Any]) -> Ranked:
    ids: list[str] = []
    scores: list[float | None] = []
    revisions: list[str | None] = []
    any_revision = False
    for pos, item in enumerate(results, 1):
        if isinstance(item, str):
            ids.append(item)
            scores.append(None)
            revisions.append(None)
            continue
        if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"]:
            raise ValueError(f"result {pos} needs an id (a non-empty string)")
        score = item.get("score")
        if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
            raise ValueError(f"result {pos}: score must be a number")
        revision = item.get("revision")
        if revision is not None:
            revision = str(revision)
            any_revision = True
        ids.append(item["id"])
        scores.append(None if score is None else float(score))
        revisions.append(revision)
    return Ranked(ids, scores, revisions if any_revision else None)


def _trec_ranked(docs: list[str], scores: list[float]) -> Ranked:
    """Sorted as trec_eval sorts: score descending, then docno descending."""
    if all(map(gt, scores, scores[1:])):  # already in that order, as most run files are
        return Ranked(docs, scores)
    pairs = sorted(zip(scores, docs, strict=True), reverse=True)
    return Ranked(list(map(_second, pairs)), list(map(_first, pairs)))


class _TrecReader:
    """Groups lines by query (they need not be contiguous); sorts each query at the end."""

    def __init__(self, run: RunData):
        self.run = run
        self.grouped: dict[str, tuple[list[str], list[float]]] = {}

    def feed(self, text: str, first_line: int) -> None:
        grouped = self.grouped
        last, docs, scores = None, [], []
        for number, line in enumerate(text.split("\n"), first_line):
            try:  # the common case in one step; bad lines are told apart below
                qid, _, doc, _, score, _ = line.split()
                value = float(score)
            except ValueError:
                self._bad(line, number)
                continue
            if qid != last:  # a query's lines usually come together
                entry = grouped.get(qid)
                if entry is None:
                    grouped[qid] = entry = ([], [])
                docs, scores = entry
                last = qid
            docs.append(doc)
            scores.append(value)

    def _bad(self, line: str, number: int) -> None:
        parts = line.split()
        if not parts:
            return
        if len(parts) != 6:
            _problem(self.run, number, f"expected 6 fields `qid Q0 docno rank score tag`, found {len(parts)}")
        else:
            _problem(self.run, number, f"score {parts[4]!r} is not a number")

    def finish(self) -> None:
        for qid, (docs, scores) in self.grouped.items():
            self.run.queries[qid] = _trec_ranked(docs, scores)


def _read_ranx(text: str, run: RunData) -> None:
    try:
        obj = _loads(text)
    except ValueError as exc:
        raise InputError(run.path, f"not valid JSON ({exc}); expected {{query_id: {{doc_id: score}}}}") from None
    if not isinstance(obj, dict):
        raise InputError(run.path, "expected a JSON object {query_id: {doc_id: score}}")
    for qid, docs in obj.items():
        if not isinstance(docs, dict):
            _problem(run, None, f"query {qid}: expected an object {{doc_id: score}}; skipped")
            continue
        ids, scores = [], []
        for doc, score in docs.items():
            if isinstance(score, bool) or not isinstance(score, int | float):
                _problem(run, None, f"query {qid}: score of {doc} is not a number; skipped")
                continue
            ids.append(doc)
            scores.append(float(score))
        run.queries[qid] = _trec_ranked(ids, scores)


def coerce_run(ranked: Any) -> RunData:
    """Accept what Python callers have: a path, a RunData, or a mapping of query_id to
    a list of ids, of (id, score) pairs, of {id, score, revision} dicts, or to {id: score}."""
    if isinstance(ranked, RunData):
        return ranked
    if isinstance(ranked, str | Path):
        return read_run(ranked)
    if not isinstance(ranked, Mapping):
        raise TypeError("ranked must be a path, a RunData or a mapping of query_id to results")
    run = RunData({})
    for qid, results in ranked.items():
        if isinstance(results, Ranked):
            run.queries[qid] = results
        elif isinstance(results, Mapping):
            run.queries[qid] = _trec_ranked(list(results), [float(s) for s in results.values()])
        else:
            items = [
                {"id": r[0], "score": r[1]} if isinstance(r, tuple | list) else r for r in results
            ]
            try:
                run.queries[qid] = _ranked_from_dicts(items)
            except ValueError as exc:
                raise ValueError(f"query {qid}: {exc}") from None
    return run


def write_jsonl_run(path: str | Path, rows: Iterable[tuple[str, list[dict[str, Any]], float | None]]) -> int:
    """Write `(query_id, results, latency_ms)` rows as a JSONL run file; returns the count."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", encoding="utf-8") as fh:
        for qid, results, latency in rows:
            record: dict[str, Any] = {"query_id": qid, "results": results}
            if latency is not None:
                record["latency_ms"] = round(latency, 3)
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
            count += 1
    return count


def bm25_rows(ws: Any, cases: Iterable[Any], limit: int = 20, clock: Callable[[], float] = time.perf_counter):
    """The workspace's own BM25 search for each case: a baseline any retriever should beat."""
    for case in cases:
        start = clock()
        hits = ws.search(case.query, limit=limit)
        elapsed = (clock() - start) * 1000
        results = [{"id": h.id, "score": round(h.score, 4), "revision": h.revision} for h in hits]
        yield case.query_id, results, elapsed


def write_bm25_run(ws: Any, set_name: str | None, path: str | Path, limit: int = 20) -> int:
    """Run the workspace's BM25 search over a set's active cases and write a JSONL run."""
    result = ws.question_set(set_name).read()
    cases = [c for c in result.cases.values() if c.status == "active"]
    return write_jsonl_run(path, bm25_rows(ws, cases, limit))

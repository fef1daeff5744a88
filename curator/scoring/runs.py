"""Reading a retriever's ranked output: JSONL, TREC run files and ranx JSON.

- JSONL, one query per line: `{"query_id": "...", "results": [{"id", "score", "revision"}],
  "latency_ms": 12.5, "timestamp": "2026-12-01T23:20:00Z"}`. The list order is the rank;
  `score`, `revision`, `latency_ms` (a number >= 0), `timestamp` (ISO 8601) are optional;
  `"error": "..."` marks a failed request (scored as a failure, never as an empty result).
- TREC: `qid Q0 docno rank score tag`, whitespace separated. Ranks are ignored and each
  query is sorted as trec_eval sorts it: score descending, then docno descending.
- ranx JSON: `{"qid": {"docno": score}}`, sorted like TREC.
- Beside a TREC or ranx run, `RUN.meta.jsonl` (e.g. `run.trec.meta.jsonl`) may carry per
  query `latency_ms`, `timestamp`, `error` and `empty: true` (a query that returned nothing).

A bad line is reported (file, line, what was expected) and skipped; the rest is read.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from operator import gt
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curator._process import paused_gc
from curator.errors import InputError
from curator.problems import Problem

if TYPE_CHECKING:
    from curator.workspace import Workspace

loads: Callable[[str | bytes], Any]
try:  # orjson parses a run file or an artefact 3-4x faster; the stdlib parser is the fallback
    import orjson

    loads = orjson.loads
except ImportError:  # pragma: no cover - depends on the environment
    loads = json.loads

FORMATS = ("jsonl", "trec", "ranx")
CHUNK = 1 << 20  # bytes decoded and parsed at a time, between progress reports


@dataclass(slots=True)
class Ranked:
    """One query's results, best first."""

    ids: list[str]
    scores: Sequence[float | None]
    revisions: list[str | None] | None = None  # None: the run has no revisions for this query
    latency_ms: float | None = None
    timestamp: str | None = None  # ISO 8601 time the request was made (JSONL `timestamp`)
    error: str | None = None  # the request failed (JSONL `error`): a miss, never an empty result


@dataclass
class RunData:
    queries: dict[str, Ranked]
    path: str = "<memory>"
    format: str = "python"
    sha256: str | None = None
    problems: list[Problem] = field(default_factory=list)


def read_run(path: str | Path, fmt: str | None = None, progress: Callable[[int, int], None] | None = None) -> RunData:
    """Read a run file in any supported format (detected from its content unless `fmt`).
    `progress(bytes read, file size)` is called about every MiB and at the end."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError(str(path), "no such run file") from None
    except IsADirectoryError:
        raise InputError(str(path), "is a folder, expected a run file") from None
    fmt = fmt or detect_format(data)
    if fmt not in FORMATS:
        raise InputError(str(path), f"unknown run format {fmt!r}; expected one of {', '.join(FORMATS)}")
    run = RunData({}, str(path), fmt, hashlib.sha256(data).hexdigest())
    with paused_gc():
        if fmt == "ranx":  # one JSON document
            _read_ranx(_decode(run, data, 0, len(data)), run)
        else:
            _read_lines(run, data, progress)
        if fmt != "jsonl":
            _read_sidecar(run, Path(str(path) + ".meta.jsonl"))
    if progress is not None:
        progress(len(data), len(data))
    return run


def _read_sidecar(run: RunData, path: Path) -> None:
    """`RUN.meta.jsonl` beside a TREC or ranx run: one `{query_id, latency_ms, timestamp,
    empty, error}` line per query. `empty: true` adds a query that returned nothing (a
    TREC file cannot say so), `error` marks a failed request."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return
    except (OSError, UnicodeDecodeError) as exc:
        run.problems.append(Problem(str(path), None, f"cannot read the run's sidecar: {exc}", fatal=False))
        return
    side = RunData(run.queries, str(path), "jsonl")
    for number, qid, obj in _query_objects(side, text, 1, "{query_id, latency_ms, empty}"):
        ranked = run.queries.get(qid)
        if ranked is None:
            if not (obj.get("empty") or obj.get("error")):
                _problem(side, number, f"query {qid} is not in the run and not marked empty; ignored")
                continue
            ranked = run.queries[qid] = Ranked([], [])
        _read_meta(side, number, qid, obj, ranked)
    run.problems.extend(side.problems)


def _read_lines(run: RunData, data: bytes, progress: Callable[[int, int], None] | None) -> None:
    """Read a line-based file ~1 MiB of whole lines at a time. TREC lines are grouped by
    query (they need not be contiguous) and each query sorted at the end."""
    grouped: dict[str, tuple[list[str], list[float]]] = {}
    pos, line, size = 0, 1, len(data)
    while pos < size:
        newline = data.find(b"\n", min(pos + CHUNK, size) - 1)
        stop = size if newline < 0 else newline + 1
        text = _decode(run, data, pos, stop)
        if run.format == "trec":
            _trec_lines(run, grouped, text, line)
        else:
            _jsonl_lines(run, text, line)
        line += text.count("\n")
        pos = stop
        if progress is not None:
            progress(pos, size)
    for qid, (docs, scores) in grouped.items():
        run.queries[qid] = _trec_ranked(docs, scores)


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
        obj = loads(first)
    except ValueError:
        return "ranx"  # a JSON document spread over several lines
    if isinstance(obj, dict) and "query_id" in obj:
        return "jsonl"
    return "ranx"


def _problem(run: RunData, line: int | None, message: str) -> None:
    run.problems.append(Problem(run.path, line, message, fatal=False))


def _query_objects(run: RunData, text: str, first_line: int, expected: str) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """The (line number, query_id, object) of each line of `text` that is a JSON object
    with a non-empty `query_id`; every other non-blank line is a problem of `run`."""
    for number, line in enumerate(text.split("\n"), first_line):
        if not line.strip():
            continue
        try:
            obj = loads(line)
        except ValueError as exc:
            _problem(run, number, f"not valid JSON ({exc}); expected {expected}")
            continue
        if not isinstance(obj, dict):
            _problem(run, number, f"expected a JSON object {expected}")
            continue
        qid = obj.get("query_id")
        if not isinstance(qid, str) or not qid:
            _problem(run, number, "missing query_id (a non-empty string)")
            continue
        yield number, qid, obj


def _jsonl_lines(run: RunData, text: str, first_line: int) -> None:
    queries = run.queries
    for number, qid, obj in _query_objects(run, text, first_line, "{query_id, results} per line"):
        results = obj.get("results")
        if not isinstance(results, list):
            _problem(run, number, f"query {qid}: results must be a list of {{id, score, revision}}")
            continue
        if qid in queries:
            _problem(run, number, f"query {qid} appears again; the first line is kept")
            continue
        try:
            ranked = ranked_from_list(results)
        except ValueError as exc:
            _problem(run, number, f"query {qid}: {exc}")
            continue
        _read_meta(run, number, qid, obj, ranked)
        queries[qid] = ranked


def _read_meta(run: RunData, number: int | None, qid: str, obj: dict[str, Any], ranked: Ranked) -> None:
    """`latency_ms`, `timestamp` and `error` of a JSONL line (or a sidecar line)."""
    latency = obj.get("latency_ms")
    if latency is not None:
        if isinstance(latency, bool) or not isinstance(latency, int | float) or not math.isfinite(latency):
            _problem(run, number, f"query {qid}: latency_ms must be a number, got {latency!r}; latency ignored")
        elif latency < 0:
            _problem(run, number, f"query {qid}: latency_ms must not be negative, got {latency!r}; latency ignored")
        else:
            ranked.latency_ms = float(latency)
    stamp = obj.get("timestamp")
    if isinstance(stamp, str) and stamp:
        ranked.timestamp = stamp
    error = obj.get("error")
    if error:
        ranked.error = str(error)
        ranked.ids, ranked.scores, ranked.revisions = [], [], None


def ranked_from_list(results: list[Any]) -> Ranked:
    """A results list in rank order: ids, or `{id, score, revision}` dicts (score and
    revision optional). ValueError names the first result that is neither."""
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
    return Ranked([doc for _, doc in pairs], [score for score, _ in pairs])


def _trec_lines(run: RunData, grouped: dict[str, tuple[list[str], list[float]]], text: str, first_line: int) -> None:
    last: str | None = None
    docs: list[str] = []
    scores: list[float] = []
    for number, line in enumerate(text.split("\n"), first_line):
        try:  # the common case in one step; bad lines are told apart below
            qid, _, doc, _, score, _ = line.split()
            value = float(score)
        except ValueError:
            _bad_trec_line(run, line, number)
            continue
        if qid != last:  # a query's lines usually come together
            entry = grouped.get(qid)
            if entry is None:
                grouped[qid] = entry = ([], [])
            docs, scores = entry
            last = qid
        docs.append(doc)
        scores.append(value)


def _bad_trec_line(run: RunData, line: str, number: int) -> None:
    parts = line.split()
    if not parts:
        return
    if len(parts) != 6:
        _problem(run, number, f"expected 6 fields `qid Q0 docno rank score tag`, found {len(parts)}")
    else:
        _problem(run, number, f"score {parts[4]!r} is not a number")


def _read_ranx(text: str, run: RunData) -> None:
    try:
        obj = loads(text)
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


def coerce_run(ranked: RunData | Mapping[str, Any]) -> RunData:
    """Accept what Python callers have: a RunData, or a mapping of query_id to a list of
    ids, of (id, score) pairs, of {id, score, revision} dicts, or to {id: score}."""
    if isinstance(ranked, RunData):
        return ranked
    if not isinstance(ranked, Mapping):
        raise TypeError("ranked must be a path, a RunData or a mapping of query_id to results")
    run = RunData({})
    for qid, results in ranked.items():
        if isinstance(results, Ranked):
            run.queries[qid] = results
        elif isinstance(results, Mapping):
            run.queries[qid] = _trec_ranked(list(results), [float(s) for s in results.values()])
        else:
            items = [{"id": r[0], "score": r[1]} if isinstance(r, tuple | list) else r for r in results]
            try:
                run.queries[qid] = ranked_from_list(items)
            except ValueError as exc:
                raise ValueError(f"query {qid}: {exc}") from None
    return run


def write_bm25_run(ws: Workspace, set_name: str | None, path: str | Path, limit: int = 20) -> int:
    """The workspace's own BM25 search for each active case of a set, written as a JSONL
    run with measured latency: a baseline any retriever should beat. Returns the count."""
    cases = [c for c in ws.question_set(set_name).read().cases.values() if c.status == "active"]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for case in cases:
            start = time.perf_counter()
            hits = ws.search(case.query, limit=limit)
            latency = (time.perf_counter() - start) * 1000
            results = [{"id": h.id, "score": round(h.score, 4), "revision": h.revision} for h in hits]
            record = {"query_id": case.query_id, "results": results, "latency_ms": round(latency, 3)}
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    return len(cases)

"""Hits and clicks of the DuckDB engine looked up for the queued queries only
(curator/logs/duck_ids.py): the same ids as the python reader counts, for the queries
asked and no others, and the same suggestions and provenance in an import that queues
only some clusters of several files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curator.corpus import add_paths
from curator.logs import duck_ids, import_logs
from curator.logs.duck_users import hash_users
from curator.logs.fields import Fields
from curator.logs.reading import read_source
from curator.logs.sources import Source
from curator.workspace import Workspace
from tests.unit.test_logs_duck_odd import ODD, _odd_log
from tests.unit.test_logs_engines import DATA


def test_a_duckdb_read_leaves_ids_to_a_look_up_for_the_queries_asked(tmp_path: Path) -> None:
    log = _odd_log(tmp_path / "odd.jsonl")
    py = read_source(Source("odd.jsonl", log), engine="python")
    duck = read_source(Source("odd.jsonl", log), engine="duckdb", later=True)
    assert duck.engine == "duckdb" and duck.agg.hits == {} and duck.agg.clicks == {}
    assert duck.ids_of is not None and not duck.ids_of.trusted  # odd lines: their ids came from python
    wanted = {"dhl cutoff time", "rare 3", "query", "never asked"}
    hits, clicks = duck.ids_of.look_up(wanted)
    assert set(hits) == {"dhl cutoff time", "rare 3"}  # only those asked that have ids ("query" lines have none)
    for q in hits:
        assert hits[q] == py.agg.hits[q], q
    assert set(clicks) == wanted & set(py.agg.clicks) and clicks["dhl cutoff time"] == py.agg.clicks["dhl cutoff time"]
    everything = duck.ids_of.look_up(None)
    assert everything == (py.agg.hits, py.agg.clicks)


def test_the_ids_of_lines_the_python_reader_counted_for_duckdb_are_looked_up_too(tmp_path: Path) -> None:
    log = _corpus_log(tmp_path / "log.jsonl", 3000, 0)
    py = read_source(Source("log.jsonl", log), engine="python")
    duck = read_source(Source("log.jsonl", log), engine="duckdb", later=True)
    assert duck.ids_of is not None and "label backlog" in duck.ids_of.left.clicks  # a key-twice line's
    hits, clicks = duck.ids_of.look_up({"label backlog"})
    assert clicks["label backlog"]["errors.md#carrier-e1043"] == py.agg.clicks["label backlog"]["errors.md#carrier-e1043"]
    assert (hits, clicks) == ({"label backlog": py.agg.hits["label backlog"]},
                              {"label backlog": py.agg.clicks["label backlog"]})


def test_a_plain_log_looks_up_ids_parsing_only_the_id_fields(tmp_path: Path) -> None:
    log = tmp_path / "plain.jsonl"
    lines = [{"query": f"q{i % 30}", "hits": [f"p{i % 7}", f"p{i % 5}"], "clicks": [f"p{i % 3}"]} for i in range(500)]
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    py = read_source(Source("plain.jsonl", log), engine="python")
    duck = read_source(Source("plain.jsonl", log), engine="duckdb", later=True)
    assert duck.ids_of is not None and duck.ids_of.trusted
    hits, clicks = duck.ids_of.look_up({"q1", "q29"})
    assert hits == {q: py.agg.hits[q] for q in ("q1", "q29")}
    assert clicks == {q: py.agg.clicks[q] for q in ("q1", "q29")}


def test_an_import_queueing_some_clusters_of_two_files_has_the_python_engines_suggestions(tmp_path: Path) -> None:
    first = _corpus_log(tmp_path / "first.jsonl", 3000, 0)
    second = _corpus_log(tmp_path / "second.jsonl", 2000, 1)
    for k, options in enumerate(({"limit": 2}, {"limit": 3, "sample": "random", "seed": 4})):
        py_engines, py_summary, py_candidates = _import_all(tmp_path / f"py{k}", "python", [first, second], options)
        duck_engines, duck_summary, duck_candidates = _import_all(tmp_path / f"duck{k}", "duckdb", [first, second],
                                                                  options)
        assert (py_engines, duck_engines) == (["python", "python"], ["duckdb", "duckdb"])
        assert py_summary["queued"] == options["limit"] < py_summary["eligible"]  # some clusters left out
        assert any(suggestions for *_, suggestions in py_candidates)  # the ids matter here
        assert duck_candidates == py_candidates
        assert duck_summary["preview"] == py_summary["preview"]


def _corpus_log(path: Path, lines: int, shift: int) -> Path:
    """A log whose hits and clicks are passages of the test corpus, with odd lines."""
    ids = ["carriers.md#dhl", "faq.md#cutoffs", "errors.md#carrier-e1042", "errors.md#carrier-e1043",
           "webhooks.md#retries"]
    queries = ["dhl cutoff time", "label backlog", "pickup window", "webhook retries", "carrier e1042"]
    out = []
    for i in range(lines):
        if i % 97 == 5:
            out.append(ODD[(i // 97) % len(ODD)])
            continue
        if i % 101 == 9:  # a key twice: the python reader counts it, and its ids, for DuckDB
            out.append(b'{"query": "query", "query": "label backlog", "hits": ["webhooks.md#retries"], '
                       b'"clicks": ["errors.md#carrier-e1043"]}')
            continue
        q = queries[(i + shift) % 5] if i % 3 else f"rare {i % 40}"
        out.append(json.dumps({"timestamp": f"2026-10-{1 + i % 28:02d}T08:00:00Z", "user_id": f"u{i % 150}",
                               "query": q, "hits": [ids[(i + k) % 5] for k in range(1 + i % 3)],
                               "clicks": [ids[(i * 7 + shift) % 5]] if i % 4 else []}).encode())
    path.write_bytes(b"\n".join(out) + b"\n")
    return path


def _import_all(where: Path, engine: str, logs: list[Path], options: dict):
    """An import of `logs` into a new workspace: the engine of each file, the summary and
    the queued candidates (query, count, slice, provenance, suggestions)."""
    ws = Workspace.init(where)
    try:
        add_paths(ws, [DATA / "corpus.jsonl"])
        summary = import_logs(ws, logs, engine=engine, **options).to_dict()
        candidates = sorted(
            (c.query, c.count, c.suggested_slice, c.provenance, [(s.id, s.role, s.reason) for s in c.suggestions])
            for c in ws.candidates()
        )
    finally:
        ws.close()
    return [f["engine"] for f in summary["files"]], summary, candidates


@pytest.mark.parametrize("odd", [True, False])
def test_the_users_and_ids_of_the_queued_queries_are_one_pass_over_the_file(tmp_path: Path, monkeypatch,
                                                                          odd: bool) -> None:
    """A log with users and ids is read once after choosing: the users look-up counts the
    ids of the queries it was asked about too, and the ids look-up that follows reads
    them from there; both as the python reader counts them (users as their hashes)."""
    if odd:
        log = _odd_log(tmp_path / "log.jsonl")
    else:
        log = tmp_path / "log.jsonl"
        lines = [{"query": f"q{i % 30}", "user_id": f"u{i % 17}", "hits": [f"p{i % 7}"], "clicks": [f"p{i % 3}"]}
                 for i in range(600)]
        log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    passes: list[str] = []
    real = duck_ids.count_ids
    monkeypatch.setattr(duck_ids, "count_ids", lambda *a, **k: passes.append(a[1]) or real(*a, **k))
    py = read_source(Source("log.jsonl", log), engine="python")
    hash_users(py.agg)
    duck = read_source(Source("log.jsonl", log), engine="duckdb", later=True)
    assert duck.users_of is not None and duck.ids_of is not None and duck.users_of.trusted is not odd
    wanted = {"dhl cutoff time", "label backlog", "rare 3", "never asked"} if odd else {"q1", "q2", "q29"}
    settled, left = duck.users_of.settled(wanted)
    assert left, "the test needs queries pass 1 could not settle"
    users = {**settled, **duck.users_of.unsettled(left)}
    hits, clicks = duck.ids_of.look_up(wanted)
    assert len(passes) == 1  # the ids came with the users
    assert users == {q: py.agg.users[q] for q in wanted if q in py.agg.users}
    assert hits == {q: py.agg.hits[q] for q in wanted if q in py.agg.hits}
    assert clicks == {q: py.agg.clicks[q] for q in wanted if q in py.agg.clicks}
    duck.ids_of.look_up({"q3" if not odd else "pickup window"})  # not asked about before: a pass of its own
    assert len(passes) == 2


def test_lines_with_the_same_lists_are_counted_by_their_lines_and_counts(tmp_path: Path) -> None:
    """The look-up groups a query's lines by their lists before counting ids: each list
    still counts once per line, times the line's count field, and lists of other kinds
    (numbers, a comma-separated string, an escape) beside plain ones come out as the
    python reader counts them."""
    log = tmp_path / "counted.jsonl"
    lists: list[object] = [["p1", "p2"], ["p1", "p2"], ["p2", "p3"], [7, "p1"], "p1,p4", ["p\\u0031"], None, []]
    lines = [{"query": f"q{i % 4}", "n": 1 + i % 3, "hits": lists[i % len(lists)], "clicks": lists[(i * 3) % 5]}
             for i in range(400)]
    log.write_text("".join(json.dumps(x).replace("\\\\u", "\\u") + "\n" for x in lines))
    py = read_source(Source("counted.jsonl", log), engine="python", fields=Fields(count="n"))
    duck = read_source(Source("counted.jsonl", log), engine="duckdb", fields=Fields(count="n"), later=True)
    assert duck.ids_of is not None and duck.ids_of.trusted
    assert py.agg.hits["q0"]["p1"] > 100  # many lines, each counted with its count
    assert duck.ids_of.look_up(None) == (py.agg.hits, py.agg.clicks)
    hits, clicks = duck.ids_of.look_up({"q1", "q3"})
    assert (hits, clicks) == ({q: py.agg.hits[q] for q in ("q1", "q3")}, {q: py.agg.clicks[q] for q in ("q1", "q3")})

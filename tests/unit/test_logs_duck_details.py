"""First and last seen, zero results and latency of the DuckDB engine, kept in a file in
the spill folder and looked up for the queued queries only (curator/logs/duck_details.py):
field by field what the python reader counts, for the queries asked and no others."""

from __future__ import annotations

from pathlib import Path

from curator.logs.aggregate import Aggregate
from curator.logs.reading import read_source
from curator.logs.sources import Source
from tests.unit.test_logs_duck_odd import _odd_log
from tests.unit.test_logs_engines import _plain_log


def _details(agg: Aggregate, found: dict, q: str) -> tuple:
    """One query's details as the python reader's Aggregate has them, after adding those
    looked up (each file's lines the python reader handled for DuckDB stay in its Aggregate)."""
    firsts = [d.first for d in found.get(q, []) if d.first] + ([agg.first[q]] if q in agg.first else [])
    lasts = [d.last for d in found.get(q, []) if d.last] + ([agg.last[q]] if q in agg.last else [])
    zero = sum(d.zero for d in found.get(q, [])) + agg.zero_results.get(q, 0)
    lat = agg.latency.get(q, [0.0, 0])
    lat_sum = sum(d.lat_sum for d in found.get(q, [])) + lat[0]
    lat_n = sum(d.lat_n for d in found.get(q, [])) + lat[1]
    return min(firsts, default=None), max(lasts, default=None), zero, round(lat_sum, 6), lat_n


def _expected(agg: Aggregate, q: str) -> tuple:
    lat = agg.latency.get(q, [0.0, 0])
    return agg.first.get(q), agg.last.get(q), agg.zero_results.get(q, 0), round(lat[0], 6), lat[1]


def test_details_are_looked_up_for_the_queries_asked_as_the_python_reader_counts_them(tmp_path: Path) -> None:
    log = _plain_log(tmp_path / "plain.jsonl")  # every time form DuckDB reads, escaped text
    py = read_source(Source("plain.jsonl", log), engine="python")
    duck = read_source(Source("plain.jsonl", log), engine="duckdb", later=True, temp=tmp_path)
    assert duck.details_of is not None and duck.details_of.path.parent == tmp_path
    assert duck.agg.first == duck.agg.last == {} and not duck.agg.zero_results and not duck.agg.latency
    assert duck.agg.counts == py.agg.counts
    wanted = {"dhl cutoff time", "café 😀 dhl", "rare 8", "never asked"}
    found = duck.details_of.look_up(wanted)
    assert set(found) == wanted - {"never asked"}
    for q in wanted - {"never asked"}:
        assert _details(duck.agg, found, q) == _expected(py.agg, q), q
    everything = duck.details_of.look_up(set(py.agg.counts))
    assert {q: _details(duck.agg, everything, q) for q in py.agg.counts} == {
        q: _expected(py.agg, q) for q in py.agg.counts}


def test_details_of_lines_the_python_reader_handled_stay_in_the_aggregate(tmp_path: Path) -> None:
    log = _odd_log(tmp_path / "odd.jsonl")
    py = read_source(Source("odd.jsonl", log), engine="python")
    duck = read_source(Source("odd.jsonl", log), engine="duckdb", later=True, temp=tmp_path)
    assert duck.details_of is not None and duck.agg.first  # the odd lines' own
    everything = duck.details_of.look_up(set(py.agg.counts))
    assert {q: _details(duck.agg, everything, q) for q in py.agg.counts} == {
        q: _expected(py.agg, q) for q in py.agg.counts}


def test_without_a_spill_folder_the_details_come_with_the_counts(tmp_path: Path) -> None:
    log = _plain_log(tmp_path / "plain.jsonl")
    py = read_source(Source("plain.jsonl", log), engine="python")
    duck = read_source(Source("plain.jsonl", log), engine="duckdb", later=True)
    assert duck.details_of is None
    assert (duck.agg.first, duck.agg.last, duck.agg.zero_results) == (py.agg.first, py.agg.last, py.agg.zero_results)


def test_the_counted_table_read_back_in_batches_is_the_table_row_for_row(tmp_path: Path) -> None:
    """`read_details` reads the file `write_details` wrote a batch of rows at a time (a
    long tail has millions of queries): every batch's rows, in number order, NULLs kept
    as masked values across batches."""
    from curator.logs.duck_details import read_details, write_details
    from curator.logs.duck_sql import Reader

    reader = Reader(lambda _fraction: None, temp=tmp_path)
    try:
        reader.con.execute(
            "CREATE TEMP TABLE counted AS SELECT i % 7 <> 0 AS ok, TRUE AS inside, 'q' || i AS q, i AS n, "
            "CASE WHEN i % 5 = 0 THEN NULL ELSE i * 2 END AS buckets, NULL::TIMESTAMP AS first, "
            "NULL::TIMESTAMP AS last, NULL::BIGINT AS zero, NULL::DOUBLE AS lat_sum, NULL::BIGINT AS lat_n "
            "FROM range(10000) t(i)")
        path = tmp_path / "details.parquet"
        rows = write_details(reader, path, ["q", "n", "buckets"])
        whole = reader.con.execute("SELECT q, n, buckets FROM counted WHERE ok AND inside").fetchall()
        assert rows == len(whole) == 8571
        got = read_details(reader, path, ["q", "n", "buckets"], rows, batch=1000)
    finally:
        reader.close()
    assert sorted(got["row"].tolist()) == list(range(1, rows + 1))
    buckets = [None if masked else int(b) for b, masked in zip(got["buckets"].data, got["buckets"].mask, strict=True)]
    assert isinstance(got["q"], list)  # texts as one list of str, not an array of objects
    assert sorted(zip(got["q"], got["n"].tolist(), buckets, strict=True)) == sorted(whole)

"""The DuckDB engine against the python readers: the same log must give the same
summary (lines, reasons with line numbers, distinct queries, clusters, redactions) and
the same queued candidates. Also Parquet, and the inputs only python may read."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import duckdb
import pytest

from curator.corpus import add_paths
from curator.errors import InputError
from curator.logs import duck_users, import_logs, reading
from curator.logs.duck_sql import OutOfMemory, Reader
from curator.logs.duck_users import FULL, UsersOf
from curator.logs.lines import Window
from curator.logs.reading import read_source
from curator.logs.sources import Source
from curator.workspace import Workspace
from tests.conftest import latency_and_zero, seen

DATA = Path(__file__).resolve().parent.parent / "data" / "logs"
MiB = 1 << 20


def _line(**record) -> bytes:
    return json.dumps(record).encode()


def _awkward_log(path: Path) -> Path:
    """Every kind of line each engine must treat exactly as the python reader does."""
    t = "2026-10-01T08:00:00Z"
    lines = [
        _line(timestamp=t, user_id=42, query="dhl cutoff time", hits=[{"id": "carriers.md#dhl"}]),
        b'{"timestamp": "2026-10-02 09:00:00", "user_id": "u1", "query": "NaN in the parser"}',
        b'{"query": "x", "latency_ms": NaN}',  # broken JSON to orjson, fine to DuckDB
        b'{"query": "trailing comma",}',  # read by both (DuckDB's parser takes one)
        b'{"query": "first", "query": "second"}',  # the python reader keeps the last
        b'{"query": "caf\\u00e9 \\ud83d\\ude00 dhl", "user_id": ""}',
        b'{"query": "lone \\ud800 surrogate"}',
        b"   \t",
        b"",
        b'{"_source": {"query": "wrapped in _source", "client_id": "c9"}}',
        b'{"query": "caf\xe9 latin-1"}',  # invalid UTF-8: DuckDB refuses the line
        _line(timestamp=1759305600000, user_id="u2", query="dhl cutoff time"),
        _line(query=42),
        b'{"query": "raw\ttab"}',
        b"\x00\x01\x02 binary",
        _line(timestamp="not a time", user_id=None, query="cutoff time dhl"),
        _line(timestamp=t, user_id="u3", query="  padded   query  ", clicked=["faq.md#cutoffs"]),
        b'["not", "an", "object"]',
        _line(timestamp=t, user_id="u3", query="reset password for anna@example.com"),
        _line(timestamp=t, user_id="u4", query="dhl cutoff time", result_count=0, latency_ms=12.5),
        # times: year 0 (a date to DuckDB only), an offset, no such day, no zone, fractions
        _line(timestamp="0000-10-01T08:00:00Z", user_id="u5", query="dhl cutoff time"),
        _line(timestamp="2026-10-01T10:00:00+05:00", user_id="u5", query="dhl cutoff time"),
        _line(timestamp="2026-02-30T08:00:00Z", user_id="u6", query="cutoff time dhl"),
        _line(timestamp="2026-10-03T07:00:00", query="cutoff time dhl"),
        _line(timestamp="2026-10-03T06:00:00.123456Z", query="cutoff time dhl"),
        _line(timestamp="2026-10-03T25:00:00Z", query="cutoff time dhl"),
        # DuckDB reads a padded year and hour 24 (the next day); the python reader does not
        _line(timestamp=" 026-10-04T08:00:00Z", user_id="u7", query="cutoff time dhl"),
        _line(timestamp="2026-10-04T24:00:00", user_id="u7", query="cutoff time dhl"),
        b'{"query": "two commas",,}',  # broken to both
        b'{"query": "comma, ] inside", "hits": [{"id": "faq.md#cutoffs"} ,] , }',
        _line(query="x" * (2 * MiB)),  # over the 1 MiB limit: refused too (last: fields are guessed from the first MiB)
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _counted_log(path: Path) -> Path:
    rows = [("escalation policy", 40), ("Escalation Policy", 2), ("zero", 0), ("minus", -1),
            ("half", 2.5), ("text count", "4"), ("big", 2**60), ("send invoice to billing@example.com", 3)]
    path.write_text("".join(json.dumps({"q": q, "n": n}) + "\n" for q, n in rows))
    return path


def _many_users_log(path: Path, clean: bool = False) -> Path:
    """Users in every way pass 1 settles them or leaves them to the users pass: one query
    asked by more people than are counted (USERS_CAP), one by just over that many (too
    few buckets to tell), one by a few (named in different ways), one by a single
    person, one on two lines, and one no one is named for. `clean` leaves out the one
    line only the python reader may read, so no line needs checking again."""
    lines = [_line(query="label printer offline", user_id=f"u{i % 300}") for i in range(600)]
    lines += [_line(query="pickup window", user_id=f"p{i}") for i in range(101)]
    lines += [_line(query="dhl cutoff time", user_id=u) for u in ("a", "b", "c", "a", 7, "7", "café", 'q"', "q\\")]
    lines.append(b'{"query": "dhl cutoff time", "user_id": "\\u0061"}')  # "a" again
    if not clean:
        lines.append('{"query": "dhl cutoff time", "user_id": "café", "n": NaN}'.encode())  # python reads it
    lines += [_line(query="anonymous question", user_id=None), _line(query="anonymous question", user_id="")]
    lines += [_line(query="customs invoice", user_id="solo") for _ in range(3)]
    lines += [_line(query="zpl printer", user_id=u) for u in ("x", "y")]
    data = b"\n".join(lines) + b"\n"
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
    return path


def _timed_users_log(path: Path) -> Path:
    """Every line plain and timed, and a query asked by 20 other people each day (180 in
    all, 80 in the window: too few buckets for pass 1 to settle), so its users pass
    parses the time for the window."""
    lines = [_line(timestamp=f"2026-10-{1 + i % 9:02d}T08:00:00Z", user_id=f"u{(1 + i % 9) * 20 + i // 9 % 20}",
                   query="label printer offline") for i in range(900)]
    lines += [_line(timestamp=f"2026-10-0{d}T09:00:00Z", user_id=u, query="dhl cutoff time")
              for d, u in [(2, "a"), (4, "b"), (5, "c"), (6, "a"), (8, "d")]]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _plain_log(path: Path) -> Path:
    """Lines DuckDB counts itself: times in each form it takes (ISO in UTC or with an
    offset or ` UTC`, nginx's $time_local, epoch seconds and milliseconds), users as text, numbers
    and null, ids, zero results, latencies, escaped text, and one query spelled two ways
    in JSON ("caf\\u00e9", "café"), and keys that end like the query key (`raw_query`:
    the key-twice check must not take them for it)."""
    rows = []
    for i in range(3000):
        rows.append({
            "timestamp": ["2026-10-01T08:00:00Z", "2026-10-02 09:30:00", "2026-10-03T10:00:00.250Z",
                          "2026-10-04T11:00:00+00:00", None, 1759572000, 1759575600999, "1759579200",
                          "2026-10-05T10:00:00+02:00", "2026-10-05 10:00:00.5-0130", "2026-10-06 08:00:00 UTC",
                          "06/Oct/2026:10:00:00 +0200"][i % 12],
            "user_id": [f"u{i % 170}", i % 7, "", None][i % 4],
            "query": ["dhl cutoff time", "Label Backlog", "carrier-e1042 retry", f"rare {i % 300}",
                      "caf\u00e9 \ud83d\ude00 dhl"][i % 5],
            "hits": [f"carriers.md#{i % 3}"] if i % 2 else [],
            "result_count": i % 4,
            "latency_ms": i % 9 * 1.5,
            **({"raw_query": "dhl query"} if i % 3 == 0 else {}),
        })
    data = b"".join(json.dumps(r).replace("\\\\", "\\").encode() + b"\n" for r in rows)
    data += '{"query": "café 😀 dhl", "user_id": "u9"}\n'.encode()
    path.write_bytes(data)
    return path


def _trailing_commas_log(path: Path) -> Path:
    """A writer that ends every object and array with a comma (JSON5 style): fields are
    still found, and DuckDB counts each line itself."""
    lines = []
    for i in range(300):
        hits = "".join(f'"carriers.md#{h}", ' for h in range(i % 3)).rstrip()  # `[,]` would be broken
        lines.append(f'{{"timestamp": "2026-10-0{1 + i % 5}T08:00:00Z", "user_id": "u{i % 40}", '
                     f'"query": "{["dhl cutoff time", "label backlog", "reset for ops@example.com"][i % 3]}", '
                     f'"hits": [{hits}] ,}}')
    path.write_text("\n".join(lines) + "\n")
    return path


def test_duckdb_counts_every_line_with_a_trailing_comma_itself(tmp_path: Path) -> None:
    read = read_source(Source("commas.jsonl", _trailing_commas_log(tmp_path / "commas.jsonl")), engine="duckdb")
    assert read.fields == {"query": "query", "time": "timestamp", "user": "user_id", "hits": "hits"}
    assert read.users_of.trusted and read.agg.lines == read.agg.parsed == 300


def test_duckdb_counts_every_line_of_an_export_of_hits_itself(tmp_path: Path) -> None:
    """Lines wrapped in `_source` are DuckDB's too (they all went to the python reader:
    a 400k-line export took 4.8 s against 1.9 now)."""
    read = read_source(Source("hits.jsonl", _hits_log(tmp_path / "hits.jsonl", odd=False)), engine="duckdb")
    assert read.fields == {"query": "user_query", "time": "timestamp", "user": "client_id",
                           "hits": "query_response_hit_ids"}
    assert read.users_of.trusted and read.agg.lines == read.agg.parsed == 400


def test_duckdb_counts_every_line_of_a_plain_log(tmp_path: Path) -> None:
    """What makes the `a plain log` comparison about DuckDB: no line of it (null times
    and users included) is left to the python reader."""
    read = read_source(Source("plain.jsonl", _plain_log(tmp_path / "plain.jsonl")), engine="duckdb")
    assert read.users_of.trusted and read.agg.lines == read.agg.parsed == 3001


CASES = {
    "search.jsonl": (lambda tmp: DATA / "search.jsonl", {}),
    "search.jsonl, a window": (lambda tmp: DATA / "search.jsonl", {"since": "2026-10-04", "until": "2026-10-07"}),
    "nested.jsonl.gz": (
        lambda tmp: DATA / "nested.jsonl.gz",
        {"query_field": "request.params.q", "time_field": "ts", "user_field": "session"},
    ),
    "ubi_queries.ndjson": (lambda tmp: DATA / "ubi_queries.ndjson", {}),
    "awkward lines": (lambda tmp: _awkward_log(tmp / "awkward.jsonl"), {}),
    # refused lines are read back from the decompressed stream, in order
    "search.jsonl, gzip": (lambda tmp: _gzipped(DATA / "search.jsonl", tmp / "search.jsonl.gz"), {}),
    "awkward lines, gzip": (lambda tmp: _gzipped(_awkward_log(tmp / "awkward.jsonl"), tmp / "awkward.jsonl.gz"), {}),
    "OpenSearch hits (_source), odd lines among them": (lambda tmp: _hits_log(tmp / "hits.jsonl"), {}),
    "OpenSearch hits (_source), a users pass": (lambda tmp: _hits_log(tmp / "hits.jsonl", odd=False),
                                                 {"sample": "pps", "seed": 3}),
    # a byte-order mark (Windows tools write one), on a log named without .jsonl
    "search.jsonl with a BOM, named search.log": (
        lambda tmp: _written(tmp / "search.log", b"\xef\xbb\xbf" + (DATA / "search.jsonl").read_bytes()), {}),
    # a rotated log that is gzip inside, without the suffix: found by its first bytes
    "search.jsonl, gzip, named search.log.1": (lambda tmp: _gzipped(DATA / "search.jsonl", tmp / "search.log.1"), {}),
    "awkward lines, a window": (lambda tmp: _awkward_log(tmp / "awkward.jsonl"), {"since": "2026-10-01T08:00:00"}),
    "pre-aggregated counts": (lambda tmp: _counted_log(tmp / "counts.jsonl"), {"count_field": "n"}),
    "many users": (lambda tmp: _many_users_log(tmp / "users.jsonl"), {}),
    "a plain log": (lambda tmp: _plain_log(tmp / "plain.jsonl"), {}),
    "trailing commas on every line": (lambda tmp: _trailing_commas_log(tmp / "commas.jsonl"), {}),
    "a plain log, a window": (lambda tmp: _plain_log(tmp / "plain.jsonl"), {"since": "2026-10-02", "until": "2026-10-04"}),
    "many users, a users pass": (lambda tmp: _many_users_log(tmp / "users.jsonl.gz"), {}),
    "timed users, a users pass with a window": (
        lambda tmp: _timed_users_log(tmp / "timed.jsonl"), {"since": "2026-10-03", "until": "2026-10-07"}
    ),
    "many users, a users pass, no line checked again": (
        lambda tmp: _many_users_log(tmp / "users.jsonl.gz", clean=True), {}
    ),
}


def _hits_log(path: Path, odd: bool = True) -> Path:
    """An export of OpenSearch hits: each record inside `_source` (UBI's ubi_queries index
    exported this way), and, if `odd`, the lines around it: a record without `_source`,
    `_source` as text, `_source` twice, a query at the top and another inside."""
    lines = []
    for i in range(400):
        record = {"user_query": ["dhl cutoff time", "label backlog", f"rare {i % 60}"][i % 3],
                  "timestamp": f"2026-10-0{1 + i % 9}T08:00:00Z", "client_id": f"c{i % 130}",
                  "query_response_hit_ids": [f"carriers.md#{i % 3}"]}
        lines.append(json.dumps({"_index": "ubi_queries", "_id": str(i), "_source": record}))
    if odd:
        lines += [
            json.dumps({"user_query": "label backlog", "client_id": "c1", "timestamp": "2026-10-02T08:00:00Z"}),
            json.dumps({"_source": "not an object", "user_query": "pickup window", "client_id": "c2"}),
            '{"_source": {"user_query": "first"}, "_source": {"user_query": "pickup window"}}',
            '{"user_query": "outer", "_source": {"user_query": "dhl cutoff time", "client_id": "c3"}}',
        ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _written(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _gzipped(log: Path, to: Path) -> Path:
    to.write_bytes(gzip.compress(log.read_bytes()))
    return to


def _import(tmp_path: Path, engine: str, log: Path, options: dict):
    ws = Workspace.init(tmp_path / engine)
    try:
        add_paths(ws, [DATA / "corpus.jsonl"])
        summary = import_logs(ws, [log], engine=engine, limit=0, **options).to_dict()
        candidates = sorted(
            (c.query, c.count, c.suggested_slice, c.provenance, [(s.id, s.role, s.reason) for s in c.suggestions])
            for c in ws.candidates()
        )
    finally:
        ws.close()
    engines = {f.pop("engine") for f in summary["files"]}
    return engines, summary, candidates


@pytest.mark.parametrize("case", list(CASES))
def test_duckdb_and_python_engines_give_the_same_import(tmp_path: Path, case: str) -> None:
    make, options = CASES[case]
    log = make(tmp_path)
    py_engines, py_summary, py_candidates = _import(tmp_path, "python", log, options)
    duck_engines, duck_summary, duck_candidates = _import(tmp_path, "duckdb", log, options)
    assert (py_engines, duck_engines) == ({"python"}, {"duckdb"})
    assert py_summary["queued"] > 0  # the comparison is about something
    for key in py_summary:
        assert duck_summary[key] == py_summary[key], key
    assert duck_candidates == py_candidates


@pytest.mark.parametrize("name", ["users.jsonl", "users.jsonl.gz"])
def test_users_are_counted_exactly_up_to_the_cap(tmp_path: Path, name: str) -> None:
    """What the `many users` comparisons lean on: distinct users per queued query, settled
    by pass 1 where its aggregates tell, by a users pass for the rest."""
    log = _many_users_log(tmp_path / name)
    users_of = read_source(Source(name, log), engine="duckdb").users_of
    settled, left = users_of.settled({"label printer offline", "pickup window", "dhl cutoff time",
                                      "anonymous question", "customs invoice", "zpl printer"})
    assert left == {"pickup window", "dhl cutoff time"}  # 101 users in too few buckets; 7 users
    assert settled["label printer offline"] is FULL and settled["anonymous question"] == set()
    assert len(settled["customs invoice"]) == 1 and len(settled["zpl printer"]) == 2
    assert users_of.unsettled({"pickup window"})["pickup window"] is FULL
    _, _, candidates = _import(tmp_path, "duckdb", log, {})
    users = {query: (prov.get("users"), prov.get("users_at_least")) for query, _, _, prov, _ in candidates}
    assert users == {
        "label printer offline": (100, True),
        "pickup window": (100, True),
        # 7 and "7" are one user, as in the python reader; so are a and \u0061, and café
        "dhl cutoff time": (7, None),
        "anonymous question": (None, None),
        "customs invoice": (1, None),
        "zpl printer": (2, None),
    }


def test_the_users_pass_of_a_plain_log_parses_only_what_it_needs(tmp_path: Path) -> None:
    """What the `timed users` comparison leans on: every line was counted by DuckDB, so
    the users pass parses the query, user and time alone, and keeps to the window."""
    log = _timed_users_log(tmp_path / "timed.jsonl")
    read = read_source(Source("timed.jsonl", log), window=Window("2026-10-03T00:00:00", "2026-10-07T00:00:00"),
                       engine="duckdb")
    assert read.users_of.trusted
    _, left = read.users_of.settled({"label printer offline"})
    assert left == {"label printer offline"}
    assert len(read.users_of.unsettled(left)["label printer offline"]) == 80


def test_a_cluster_with_enough_users_needs_no_users_pass(tmp_path: Path, monkeypatch) -> None:
    """A variant whose users pass 1 could not settle is not looked up when its cluster
    already shows USERS_CAP users: nothing it adds could change that."""
    log = tmp_path / "variants.jsonl"
    lines = [_line(query="label printer offline", user_id=f"u{i}") for i in range(300)]
    lines += [_line(query="Label printer offline ", user_id=u) for u in ("a", "b", "a")]
    log.write_bytes(b"\n".join(lines) + b"\n")
    asked: list[set[str]] = []
    call = UsersOf.unsettled
    monkeypatch.setattr(UsersOf, "unsettled", lambda self, queries: asked.append(queries) or call(self, queries))
    _, summary, candidates = _import(tmp_path, "duckdb", log, {})
    assert summary["clusters"] == 1 and asked == [set()]
    assert candidates[0][3]["users"] == 100 and candidates[0][3]["users_at_least"]


def test_the_awkward_log_really_is_awkward(tmp_path: Path) -> None:
    """What the engine comparison above leans on: each bad line is reported."""
    read = read_source(Source("awkward.jsonl", _awkward_log(tmp_path / "awkward.jsonl")), engine="duckdb")
    rejected = {reason: (r.count, r.lines) for reason, r in read.agg.rejected.items()}
    assert rejected == {
        "broken JSON": (4, [3, 7, 14, 29]),
        "invalid UTF-8": (1, [11]),
        "line too long": (1, [31]),
        "'query' is not text": (1, [13]),
        "binary data": (1, [15]),
        "not a JSON object": (1, [18]),
    }
    assert read.agg.ignored["blank line"] == 2
    assert read.agg.counts["second"] == 1 and "first" not in read.agg.counts
    assert read.agg.counts["café 😀 dhl"] == 1 and read.agg.counts["wrapped in _source"] == 1
    assert seen(read, "dhl cutoff time") == ("2025-10-01T08:00:00",  # the epoch one, not year 0
                                              "2026-10-01T08:00:00")  # 10:00+05:00 is 05:00 UTC
    assert seen(read, "cutoff time dhl")[1] == "2026-10-03T07:00:00"  # not 25:00
    assert latency_and_zero(read, "dhl cutoff time")[0] == [12.5, 1]


def _parquet(tmp_path: Path, rows: list[tuple]) -> Path:
    path = tmp_path / "queries.parquet"
    with duckdb.connect() as con:
        con.execute(
            "CREATE TABLE t (query VARCHAR, n BIGINT, timestamp TIMESTAMP, user_id VARCHAR, hits VARCHAR[])"
        )
        con.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", rows)
        con.execute(f"COPY t TO '{path}' (FORMAT parquet)")
    return path


def test_parquet_rows_are_read_like_json_lines(tmp_path: Path, ws, run_cli) -> None:
    add_paths(ws, [DATA / "corpus.jsonl"])
    path = _parquet(tmp_path, [
        ("dhl cutoff time", 30, "2026-10-01 08:00:00", "u1", ["carriers.md#dhl"]),
        ("DHL cutoff time", 5, "2026-10-03 08:00:00", "u2", None),
        (None, 7, "2026-10-02 08:00:00", "u3", None),  # no query: rejected, by row number
        ("mail anna@example.com about the outage", 2, None, None, None),
    ])
    result = run_cli(["-w", str(ws.root), "import-logs", str(path), "--count-field", "n", "--json"])
    summary = json.loads(result.output)
    assert result.exit_code == 3  # one row rejected
    file = summary["files"][0]
    assert (file["format"], file["engine"], file["lines"], file["parsed"]) == ("parquet", "duckdb", 4, 3)
    assert file["rejected"] == {"no 'query' field": {"count": 1, "lines": [3]}}
    by_query = {c.query: c for c in ws.candidates()}
    dhl = by_query["dhl cutoff time"]
    assert dhl.count == 35 and dhl.provenance["users"] == 2
    assert (dhl.provenance["first_seen"], dhl.provenance["last_seen"]) == ("2026-10-01T08:00:00Z", "2026-10-03T08:00:00Z")
    assert [s.id for s in dhl.suggestions] == ["carriers.md#dhl"]
    assert "mail <EMAIL> about the outage" in by_query


def test_zstd_logs_are_read_by_duckdb_without_the_zstandard_package(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "zstandard", None)  # as if it were not installed: importing it fails
    packed = tmp_path / "search.jsonl.zst"
    lines = [_line(timestamp=f"2026-10-0{d}T08:00:00Z", query=q).decode()
             for d, q in [(1, "dhl cutoff time"), (2, "label backlog"), (3, "dhl cutoff time")]]
    with duckdb.connect() as con:  # DuckDB writes zstd itself: no extra package for the test
        con.execute("CREATE TABLE t AS SELECT unnest($1::VARCHAR[]) AS line", [lines])
        con.execute(f"COPY t TO '{packed}' (FORMAT csv, HEADER false, QUOTE '', COMPRESSION zstd)")
    read = read_source(Source(str(packed), packed))
    assert read.engine == "duckdb" and read.fields["query"] == "query"
    assert read.agg.counts == {"dhl cutoff time": 2, "label backlog": 1}
    assert seen(read, "dhl cutoff time") == ("2026-10-01T08:00:00", "2026-10-03T08:00:00")


def test_a_damaged_parquet_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.parquet"
    path.write_bytes(b"PAR1 not really")
    with pytest.raises(InputError, match=r"broken.parquet.*Parquet"):
        read_source(Source(str(path), path))


def test_carriage_returns_send_the_file_to_the_python_reader(tmp_path: Path) -> None:
    """DuckDB's reader takes a CR for a line break, which would shift line numbers."""
    path = tmp_path / "windows.jsonl"
    path.write_bytes(b'{"query": "dhl cutoff time"}\r\n{"query": "broken\r\n{"query": "label backlog"}\r\n')
    read = read_source(Source(str(path), path))
    assert read.engine == "python"
    assert read.agg.counts == {"dhl cutoff time": 1, "label backlog": 1}
    assert read.agg.rejected["broken JSON"].lines == [2]
    with pytest.raises(InputError, match=r"windows.jsonl: the duckdb engine cannot read it exactly .*carriage"):
        read_source(Source(str(path), path), engine="duckdb")


def test_a_line_longer_than_duckdbs_buffer_is_not_lost(tmp_path: Path) -> None:
    """DuckDB drops a line longer than its read buffer (a few tens of MB) without a
    word; the line count taken while hashing catches it and python reads the file."""
    path = tmp_path / "huge.jsonl"
    path.write_bytes(b"\n".join([_line(query="before"), _line(query="y" * (48 * MiB)), _line(query="after")]))
    read = read_source(Source(str(path), path))
    assert read.engine == "python"
    assert read.agg.lines == 3 and read.agg.rejected["line too long"].lines == [2]
    with pytest.raises(InputError, match=r"huge.jsonl: the duckdb engine cannot read it exactly .*2 of its 3 lines"):
        read_source(Source(str(path), path), engine="duckdb")


def test_an_import_whose_last_file_turns_out_unreadable_to_duckdb_is_done_again(tmp_path: Path) -> None:
    """What the line count finds (DuckDB dropped a line longer than its buffer): python
    reads that file, reporting the line DuckDB dropped."""
    path = tmp_path / "huge.jsonl"
    path.write_bytes(b"\n".join([_line(query="before"), _line(query="y" * (48 * MiB)), _line(query="after")]))
    ws = Workspace.init(tmp_path / "ws")
    try:
        summary = import_logs(ws, [path])
        assert [(f.engine, f.lines, f.rejected) for f in summary.files] == [
            ("python", 3, {"line too long": {"count": 1, "lines": [2]}})
        ]
        assert sorted(c.query for c in ws.candidates()) == ["after", "before"]
    finally:
        ws.close()


def test_a_file_listed_twice_under_two_names_counts_once(tmp_path: Path) -> None:
    """The second name has the first's fingerprint: its lines are not counted again."""
    log = _plain_log(tmp_path / "plain.jsonl")
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(log.read_bytes())
    ws = Workspace.init(tmp_path / "ws")
    try:
        once = import_logs(ws, [log], dry_run=True, limit=0, engine="duckdb")
        twice = import_logs(ws, [log, copy], limit=0, engine="duckdb")
        assert [f.status for f in twice.files] == ["imported", "listed twice"]
        assert twice.parsed == once.parsed == 3001 and twice.queued == len(ws.candidates())
        assert {c.query: c.count for c in ws.candidates()}["dhl cutoff time"] == 600
    finally:
        ws.close()


def test_the_duckdb_engine_names_what_it_cannot_read() -> None:
    csv = DATA / "searches.csv"
    with pytest.raises(InputError, match=r"searches.csv: the duckdb engine reads JSON Lines and Parquet"):
        read_source(Source(str(csv), csv), engine="duckdb")


def test_python_engine_refuses_parquet(tmp_path: Path) -> None:
    path = _parquet(tmp_path, [("dhl cutoff time", 1, None, None, None)])
    with pytest.raises(InputError, match=r"queries.parquet: Parquet files are read by the duckdb engine"):
        read_source(Source(str(path), path), engine="python")


def test_a_reader_without_a_spill_folder_never_spills_to_disk() -> None:
    reader = Reader(lambda _fraction: None)
    try:
        settings = dict(reader.con.execute(
            "SELECT name, value FROM duckdb_settings() WHERE name IN ('temp_directory', 'memory_limit')"
        ).fetchall())
    finally:
        reader.close()
    assert settings["temp_directory"] == ""
    assert settings["memory_limit"] != ""


def test_a_users_pass_without_enough_memory_is_a_clear_error(tmp_path: Path, monkeypatch) -> None:
    """The users pass halves its queries when it runs out of memory; with too little
    memory for even one query it stops there and says so (DuckDB never spills)."""
    monkeypatch.setattr(duck_users, "USERS_MEMORY_LIMIT", "1MB")
    log = _many_users_log(tmp_path / "users.jsonl", clean=True)
    read = read_source(Source("users.jsonl", log), engine="duckdb")
    _, left = read.users_of.settled({"pickup window", "dhl cutoff time"})
    assert left == {"pickup window", "dhl cutoff time"}
    with pytest.raises(OutOfMemory, match=r"users.jsonl: DuckDB ran out of its 1MB"):
        read.users_of.unsettled(left)


def test_auto_reads_a_small_file_with_python_and_a_big_one_with_duckdb(tmp_path: Path, monkeypatch) -> None:
    """For a small uncompressed file DuckDB's start costs more than it saves; the
    engines give the same import either way (the comparisons above)."""
    log = _plain_log(tmp_path / "plain.jsonl")
    assert read_source(Source("plain.jsonl", log)).engine == "python"
    assert read_source(Source("plain.jsonl", log), engine="duckdb").engine == "duckdb"
    monkeypatch.setattr(reading, "DUCKDB_MIN_BYTES", log.stat().st_size)
    assert read_source(Source("plain.jsonl", log)).engine == "duckdb"
    # a compressed file by its stored size: many small rotated .gz logs are the usual glob
    packed = _gzipped(log, tmp_path / "plain.jsonl.gz")
    assert read_source(Source("plain.jsonl.gz", packed)).engine == "python"
    monkeypatch.setattr(reading, "DUCKDB_MIN_COMPRESSED_BYTES", packed.stat().st_size)
    assert read_source(Source("plain.jsonl.gz", packed)).engine == "duckdb"


def test_reading_progress_reaches_the_whole_file(tmp_path: Path) -> None:
    """The bar follows DuckDB's own measure of its query and ends at the file's size."""
    log = tmp_path / "big.jsonl"
    log.write_bytes(b'{"query": "dhl cutoff time", "user_id": "u1"}\n' * 200_000)  # 9 MB
    steps: list[int] = []
    read = read_source(Source("big.jsonl", log), engine="duckdb", progress=steps.append)
    assert read.engine == "duckdb" and read.agg.lines == 200_000
    assert all(n > 0 for n in steps) and sum(steps) == log.stat().st_size


@pytest.mark.parametrize("duckdb_first", [True, False])
def test_a_user_in_a_file_read_by_duckdb_and_one_read_by_python_counts_once(tmp_path: Path, monkeypatch,
                                                                             duckdb_first: bool) -> None:
    """`auto` reads a big file with DuckDB (users are hashes) and a small one with python
    (users are names): where they meet, the names are hashed."""
    big, small = tmp_path / "big.jsonl", tmp_path / "small.jsonl"
    lines = [json.dumps({"query": "dhl cutoff time", "user_id": f"u{i % 3}"}) + "\n" for i in range(9)]
    big.write_text("".join(lines) + json.dumps({"query": "label backlog", "user_id": 7}) + "\n" * 2000)
    small.write_text("".join(lines) + json.dumps({"query": "label backlog", "user_id": "7"}) + "\n")
    monkeypatch.setattr(reading, "DUCKDB_MIN_BYTES", small.stat().st_size + 1)  # big: duckdb, small: python
    ws = Workspace.init(tmp_path / "ws")
    try:
        summary = import_logs(ws, [big, small] if duckdb_first else [small, big], limit=0)
        assert {Path(f.path).name: f.engine for f in summary.files} == {"big.jsonl": "duckdb", "small.jsonl": "python"}
        users = {c.query: c.provenance.get("users") for c in ws.candidates()}
    finally:
        ws.close()
    assert users == {"dhl cutoff time": 3, "label backlog": 1}  # 7 and "7" are one user, as in either engine


def test_every_query_duckdb_counts_or_leaves_to_python_is_redacted(tmp_path: Path) -> None:
    """Lines DuckDB counts and lines it leaves to the python reader (a key twice): every
    e-mail and IP is redacted, once per line."""
    log = tmp_path / "search.jsonl"
    lines = [json.dumps({"query": f"dhl cutoff {i}"}) for i in range(200)]
    lines += [json.dumps({"query": "reset for anna@example.com"}), json.dumps({"query": "caf\u00e9 10.0.0.1"}),
              json.dumps({"query": "label  printer"}),  # two spaces: a suspect, nothing personal
              '{"query": "first", "query": "mail bob@example.org"}',  # the python reader's: the last value
              '{"query": "first", "query": "plain leftover"}']  # not screened, so checked
    log.write_text("\n".join(lines) + "\n")
    ws = Workspace.init(tmp_path / "ws")
    try:
        summary = import_logs(ws, [log], limit=0, engine="duckdb")
        assert summary.files[0].engine == "duckdb"
        assert summary.redactions == {"email": 2, "ipv4": 1}
        queries = {c.query for c in ws.candidates()}
        assert {"reset for <EMAIL>", "café <IP>", "mail <EMAIL>", "label printer"} <= queries
        assert not any("@" in q or "10.0.0.1" in q for q in queries)
    finally:
        ws.close()


def test_a_query_spelled_two_ways_in_json_counts_the_users_of_both(tmp_path: Path) -> None:
    """`caf\\u00e9` and `café` are one query, whose users are those of both spellings,
    with either engine (DuckDB's json_extract writes both as `"café"`: one row)."""
    log = tmp_path / "search.jsonl"
    log.write_bytes(b'{"query": "caf\\u00e9 hours", "user_id": "a", "timestamp": "2026-10-03T09:00:00.900Z"}\n'
                    b'{"query": "caf\xc3\xa9 hours", "user_id": "b", "timestamp": "2026-10-01T08:00:00Z"}\n'
                    b'{"query": "caf\xc3\xa9 hours", "user_id": "b", "timestamp": "2026-10-02T08:00:00Z"}\n'
                    b'{"query": "dhl cutoff", "user_id": "c"}\n')
    for engine in ("duckdb", "python"):
        ws = Workspace.init(tmp_path / f"ws-{engine}")
        try:
            assert import_logs(ws, [log], engine=engine).files[0].engine == engine
            queued = {c.query: c for c in ws.candidates()}
            cafe, dhl = queued["café hours"], queued["dhl cutoff"]
            assert (cafe.count, cafe.provenance["users"]) == (3, 2), engine
            # first and last seen over both spellings, the fraction of a second dropped
            assert (cafe.provenance["first_seen"], cafe.provenance["last_seen"]) == (
                "2026-10-01T08:00:00Z", "2026-10-03T09:00:00Z"), engine
            assert dhl.provenance.get("first_seen") is None and dhl.provenance.get("last_seen") is None, engine
        finally:
            ws.close()


def test_first_and_last_seen_span_every_file_of_an_import(tmp_path: Path) -> None:
    """The earliest and latest time over all files are shown, with either engine."""
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    one.write_bytes(_line(query="label backlog", timestamp="2026-10-05T10:00:00Z") + b"\n"
                    + _line(query="label backlog", timestamp="2026-10-09T10:00:00Z") + b"\n")
    two.write_bytes(_line(query="Label backlog", timestamp="2026-10-01T10:00:00Z") + b"\n"
                    + _line(query="label backlog", timestamp="2026-10-07T10:00:00Z") + b"\n")
    for engine in ("duckdb", "python"):
        ws = Workspace.init(tmp_path / f"ws-{engine}")
        try:
            summary = import_logs(ws, [one, two], engine=engine)
            assert {f.engine for f in summary.files} == {engine}
            (queued,) = ws.candidates()
            assert (queued.count, queued.provenance["first_seen"], queued.provenance["last_seen"]) == (
                4, "2026-10-01T10:00:00Z", "2026-10-09T10:00:00Z"), engine
        finally:
            ws.close()

"""Readers: every format, compression, stdin, and every kind of bad line."""

from __future__ import annotations

import gzip
import json
import shutil
import sys
from pathlib import Path

import pytest

from curator.errors import InputError
from curator.logs import python_reader
from curator.logs.fields import Fields
from curator.logs.lines import Window
from curator.logs.reading import read_source
from curator.logs.sources import Source, expand
from tests.conftest import latency_and_zero, seen

DATA = Path(__file__).resolve().parent.parent / "data" / "logs"


def _read(name: str, **kwargs):
    path = DATA / name
    return read_source(Source(str(path), path), **kwargs)


def test_jsonl_fields_are_detected_and_bad_lines_counted_with_line_numbers() -> None:
    read = _read("search.jsonl")
    agg = read.agg
    assert read.format == "jsonl"
    assert read.fields["query"] == "query" and read.fields["clicks"] == "clicked"
    assert agg.lines == 20
    assert {r: (x.count, x.lines) for r, x in agg.rejected.items()} == {
        "broken JSON": (1, [4]),
        "invalid UTF-8": (1, [7]),
        "binary data": (1, [9]),
        "no 'query' field": (1, [11]),
        "not a JSON object": (1, [14]),
    }
    assert agg.ignored["blank line"] == 1
    assert agg.parsed == 14  # every good line is there
    assert agg.counts["dhl cutoff time"] == 1 and agg.counts["DHL  cutoff time "] == 1
    assert agg.first["dhl cutoff time"] == "2026-10-01T08:00:00"
    assert agg.clicks["dhl cutoff time"]["carriers.md#dhl"] == 1
    assert agg.latency["dhl cutoff time"] == [30.0, 1]


def _users(read, query: str) -> set:
    """A query's users: those the python reader saw, and those DuckDB counts on demand."""
    found = set(read.agg.users.get(query, ()))
    if read.users_of:
        settled, left = read.users_of.settled({query})
        found |= settled.get(query, set()) | read.users_of.unsettled(left).get(query, set())
    return found


def test_a_10_mb_line_is_rejected_and_the_rest_read(tmp_path: Path) -> None:
    big = json.dumps({"query": "x" * (10 << 20)})
    path = tmp_path / "big.jsonl"
    path.write_text(json.dumps({"query": "before"}) + "\n" + big + "\n" + json.dumps({"query": "after"}) + "\n")
    agg = read_source(Source(str(path), path)).agg
    assert agg.rejected["line too long"].lines == [2]
    assert agg.counts == {"before": 1, "after": 1}
    assert agg.lines == 3


@pytest.mark.parametrize("engine", ["python", "duckdb"])
def test_dotted_query_field_epoch_times_and_gzip(engine: str) -> None:
    fields = Fields(query="request.params.q", time="ts", user="session")
    plain = _read("nested.jsonl", fields=fields, engine=engine)
    packed = _read("nested.jsonl.gz", fields=fields, engine=engine)
    for read in (plain, packed):
        assert read.engine == engine
        assert read.agg.counts["dhl pickup window"] == 2
        assert seen(read, "dhl pickup window") == ("2025-10-01T08:00:00", "2025-10-02T08:00:00")
        assert len(_users(read, "dhl pickup window")) == 2  # s1, s2 (hashed by duckdb)


def test_a_query_field_that_no_line_has_is_a_clear_error() -> None:
    with pytest.raises(InputError, match=r"nested.jsonl.*no query field found.*request"):
        _read("nested.jsonl")


def test_ubi_records_use_user_query_not_the_dsl() -> None:
    read = _read("ubi_queries.ndjson")
    assert read.fields["query"] == "user_query" and read.fields["hits"] == "query_response_hit_ids"
    assert read.agg.counts == {"webhook retries": 2, "email ops@example.net about outage": 1}
    assert read.agg.hits["webhook retries"]["webhooks.md#retries"] == 2
    assert read.agg.first["webhook retries"] == "2026-10-10T10:00:00"


def test_csv_with_quoted_commas_and_bad_rows() -> None:
    read = _read("searches.csv")
    assert read.format == "csv" and read.fields["query"] == "search_query"
    assert read.agg.counts["label backlog, how to drain"] == 1
    assert latency_and_zero(read, "my phone is +49 30 901820 77")[1] == 1
    assert read.agg.rejected["row has no 'search_query' value"].lines == [5]
    assert read.agg.parsed == 4 or read.agg.parsed == 3  # the unterminated quote swallows the rest
    assert "unterminated" not in " ".join(read.agg.counts) or read.agg.parsed == 4


def test_csv_rows_that_are_not_utf8_are_rejected_and_the_others_kept(tmp_path: Path) -> None:
    log = tmp_path / "export.csv"
    log.write_bytes("query,n\ncaf\u00e9 dhl,2\n".encode() + b"caf\xe9 latin,3\nlabel backlog,1\n")
    read = read_source(Source("export.csv", log), fields=Fields(count="n"))
    assert read.agg.counts == {"caf\u00e9 dhl": 2, "label backlog": 1}
    assert read.agg.rejected["invalid UTF-8"].lines == [3]
    # every line is accounted for, the header too
    assert read.agg.ignored == {"header row": 1}
    assert read.agg.lines == 4 == read.agg.parsed + read.agg.rejected["invalid UTF-8"].count + 1


def test_pre_aggregated_tsv_with_count_field() -> None:
    read = _read("aggregated.tsv", fields=Fields(count="n"))
    assert read.format == "tsv"
    assert read.agg.counts["escalation policy"] == 40
    assert read.agg.rejected["'n' is not a whole number up to 10^15"].lines == [5]
    assert read.agg.ignored["count of 0"] == 1


def test_csv_missing_column_names_the_header() -> None:
    with pytest.raises(InputError, match=r"searches.csv:1: no 'nope' column .*search_query"):
        _read("searches.csv", fields=Fields(query="nope"))


def test_plain_text() -> None:
    read = _read("queries.txt")
    assert read.format == "text"
    assert read.agg.counts["how to replay the dlq"] == 1 and read.agg.parsed == 4


def test_access_log_decodes_the_parameter_and_skips_bots_and_assets() -> None:
    read = _read("access.log")
    assert read.format == "access" and read.fields == {"param": "q"}
    assert read.agg.counts == {"dhl cutoff time": 1, "reset password for anna@example.com": 1, "CARRIER-E1042": 1}
    assert read.agg.ignored == {"request without the search parameter": 1, "bot user agent": 1}
    assert read.agg.rejected["not an access-log line"].lines == [6]
    assert read.agg.first["CARRIER-E1042"] == "2026-10-10T14:00:00"


def test_access_log_times_are_utc_and_legacy_percent_bytes_are_windows_1252(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    log.write_text(
        '10.0.0.1 - - [01/Oct/2026:08:00:00 +0200] "GET /search?q=caf%C3%A9 HTTP/1.1" 200 5\n'
        '10.0.0.2 - - [01/Oct/2026:08:00:00 +0000] "GET /search?q=r%E9sum%E9+%80 HTTP/1.1" 200 5\n'
        '10.0.0.3 - - [01/Oct/2026:08:00:00 +0000] "GET /search?q=%81x HTTP/1.1" 200 5\n'
        '10.0.0.4 - - [01/Jan/0001:00:30:00 +0100] "GET /search?q=too+early HTTP/1.1" 200 5\n'
    )
    read = read_source(Source("access.log", log))
    assert read.agg.first == {"café": "2026-10-01T06:00:00", "résumé €": "2026-10-01T08:00:00",
                              "\x81x": "2026-10-01T08:00:00"}  # 0x81: none in cp1252, so Latin-1
    later = read_source(Source("access.log", log), window=Window("2026-10-01T07:00:00", None))
    assert set(later.agg.counts) == {"résumé €", "\x81x"} and later.agg.ignored == {"outside --since/--until": 1}
    assert read.agg.counts["too early"] == 1  # a time before the year 1 in UTC is none, not a crash


def test_time_window() -> None:
    window = Window("2026-10-04T00:00:00", "2026-10-07T00:00:00")
    agg = _read("search.jsonl", window=window).agg
    assert "dhl cutoff time" not in agg.counts  # 1 October
    assert "CARRIER-E1042 packstation" in agg.counts  # 4 October
    assert "aws AKIAIOSFODNN7EXAMPLE leaked" not in agg.counts  # 8 October
    assert agg.ignored["outside --since/--until"] >= 8


def test_missing_files_and_empty_globs_are_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        expand([tmp_path / "nope.jsonl"])
    with pytest.raises(InputError, match="no file matches"):
        expand([str(tmp_path / "*.jsonl")])


def test_unreadable_file_is_an_error(tmp_path: Path) -> None:
    import os

    if os.geteuid() == 0:
        pytest.skip("root can read anything")
    path = tmp_path / "locked.jsonl"
    path.write_text('{"query": "x"}\n')
    path.chmod(0)
    with pytest.raises(InputError, match="cannot read"):
        expand([path])


def _lines_add_up(agg) -> None:
    """Every line is parsed, rejected or ignored, once."""
    assert agg.lines == agg.parsed + sum(r.count for r in agg.rejected.values()) + sum(agg.ignored.values())


def test_truncated_gzip_keeps_what_was_read(tmp_path: Path) -> None:
    body = "".join(json.dumps({"query": f"query number {i}"}) + "\n" for i in range(5000)).encode()
    packed = gzip.compress(body)
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(packed[: len(packed) * 2 // 3])
    read = read_source(Source(str(path), path))  # DuckDB refuses it; auto hands it to python
    assert read.engine == "python"
    agg = read.agg
    # the line it broke off in is one unreadable line, not also a broken JSON one
    assert list(agg.rejected) == ["unreadable data (Compressed file ended before the end-of-stream marker was reached)"]
    assert list(agg.rejected.values())[0].lines == [agg.lines]
    assert 100 < agg.parsed < 5000 and agg.parsed == agg.lines - 1
    assert set(agg.counts) == {f"query number {i}" for i in range(agg.parsed)}
    _lines_add_up(agg)


def _csv_log(n: int) -> bytes:
    return ("query,user\n" + "".join(f"query number {i},u{i}\n" for i in range(n))).encode()


def test_a_cut_off_gzip_csv_keeps_the_rows_before_the_cut(tmp_path: Path) -> None:
    packed = gzip.compress(_csv_log(100_000))
    path = tmp_path / "cut.csv.gz"
    path.write_bytes(packed[: len(packed) // 2])
    agg = read_source(Source(str(path), path)).agg
    reasons = list(agg.rejected)
    assert len(reasons) == 1 and reasons[0].startswith("unreadable data (Compressed file ended")
    assert agg.rejected[reasons[0]].lines == [agg.lines]
    assert 10_000 < agg.parsed < 100_000
    assert set(agg.counts) == {f"query number {i}" for i in range(agg.parsed)}  # the rows before it, in order
    _lines_add_up(agg)


def test_a_damaged_gzip_csv_is_reported_not_a_crash(tmp_path: Path) -> None:
    packed = bytearray(gzip.compress(_csv_log(100_000)))
    packed[-6] ^= 0xFF  # the CRC in the trailer: every row decompresses, the check fails at the end
    path = tmp_path / "damaged.csv.gz"
    path.write_bytes(bytes(packed))
    agg = read_source(Source(str(path), path)).agg
    assert [r.split(" (")[0] for r in agg.rejected] == ["unreadable data"]
    assert "CRC check failed" in next(iter(agg.rejected))
    assert agg.parsed == 100_000
    _lines_add_up(agg)


def test_a_small_cut_off_gzip_file_keeps_what_it_had(tmp_path: Path) -> None:
    """Smaller than the head read to guess its format: that read keeps what it had too."""
    body = "".join(json.dumps({"query": f"query number {i}"}) + "\n" for i in range(3000)).encode()
    packed = gzip.compress(body)
    path = tmp_path / "small.jsonl.gz"
    path.write_bytes(packed[: len(packed) // 2])
    agg = read_source(Source(str(path), path)).agg
    assert read_source(Source(str(path), path)).fields["query"] == "query"
    assert 100 < agg.parsed < 3000 and list(agg.rejected)[0].startswith("unreadable data")
    _lines_add_up(agg)


def _big_log(path: Path, n: int, *, hits: bool = False, ordered: bool = False) -> None:
    with path.open("w") as fh:
        for i in range(n):
            day, hour = (1 + i * 28 // n, i * 24 * 28 // n % 24) if ordered else (1 + i % 28, i % 24)
            rec = {"timestamp": f"2026-10-{day:02d}T{hour:02d}:00:00Z", "user_id": f"u{i % 97}",
                   "query": f"query {i % 501}" if i % 5000 else f'quote \\" {i % 7}'}
            if hits and i % 3 == 0:
                rec["hits"] = [f"doc{i % 5}"]
            fh.write(json.dumps(rec) + "\n")
            if i == 1234:
                fh.write('{"query": "broken\n')


@pytest.mark.parametrize(("hits", "ordered"), [(False, True), (False, False), (True, False)])
def test_the_fast_path_equals_the_slow_path(tmp_path: Path, monkeypatch, hits, ordered) -> None:
    """The regex fast path gives exactly what parsing every line with a JSON parser
    gives (counts, times, users, bad lines), block boundaries included."""
    path = tmp_path / "big.jsonl"
    _big_log(path, 20_000, hits=hits, ordered=ordered)
    monkeypatch.setattr(python_reader, "BLOCK", 1 << 16)  # many blocks on a small file
    src = Source(str(path), path)
    fast = python_reader.JsonlHandler.try_fast
    outcomes: list[bool] = []

    def counting(self, data, agg):
        outcomes.append(fast(self, data, agg))
        return outcomes[-1]

    monkeypatch.setattr(python_reader.JsonlHandler, "try_fast", counting)
    sequential = read_source(src, engine="python")
    assert any(outcomes) != hits and not all(outcomes)  # both paths ran (none fast with hits)
    monkeypatch.setattr(python_reader.JsonlHandler, "try_fast", lambda self, data, agg: False)
    slow = read_source(src, engine="python")
    assert sequential.agg.counts == slow.agg.counts
    assert sequential.agg.first == slow.agg.first and sequential.agg.last == slow.agg.last
    assert sequential.agg.users == slow.agg.users
    assert sequential.agg.lines == slow.agg.lines == 20_001
    for read in (sequential, slow):
        assert {r: (x.count, x.lines) for r, x in read.agg.rejected.items()} == {"broken JSON": (1, [1236])}
    assert sequential.fingerprint == slow.fingerprint


def test_fingerprint_is_of_the_content_not_the_name(tmp_path: Path) -> None:
    a = tmp_path / "a.jsonl"
    shutil.copy(DATA / "search.jsonl", a)
    b = tmp_path / "b.jsonl"
    shutil.copy(DATA / "search.jsonl", b)
    assert read_source(Source(str(a), a)).fingerprint == read_source(Source(str(b), b)).fingerprint


def test_a_file_that_is_not_what_its_name_says_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "search.jsonl.gz"
    path.write_bytes(b'{"query": "not gzip at all"}\n')
    with pytest.raises(InputError, match=r"search.jsonl.gz: cannot read: Not a gzipped file"):
        read_source(Source(str(path), path))


def test_zstd_without_the_package_says_how_to_fix_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "zstandard", None)  # as if it were not installed: importing it fails
    path = tmp_path / "search.jsonl.zst"
    path.write_bytes(b"\x28\xb5\x2f\xfd garbage")
    with pytest.raises(InputError, match="zstandard"):
        read_source(Source(str(path), path), fmt="jsonl", fields=Fields(query="query"), engine="python")


def _zstd(body: bytes) -> bytes:
    import zstandard

    return zstandard.ZstdCompressor().compress(body)


def test_zstd_files_are_read_with_their_fields_found(tmp_path: Path) -> None:
    """A small zstd file goes to the python reader, which guesses its fields from its
    decompressed head; a file of two frames (`cat a.zst b.zst`) is read to the end."""
    body = "".join(json.dumps({"q": f"query number {i % 40}", "ts": "2026-10-01T08:00:00Z"}) + "\n"
                   for i in range(20_000)).encode()
    path = tmp_path / "search.jsonl.zst"
    path.write_bytes(_zstd(body) + _zstd(body))
    read = read_source(Source(str(path), path))
    assert read.engine == "python" and read.fields == {"query": "q", "time": "ts"}
    assert read.agg.lines == read.agg.parsed == 40_000 and read.agg.counts["query number 7"] == 1000
    csv_path = tmp_path / "search.csv.zst"
    csv_path.write_bytes(_zstd(_csv_log(1000)))
    assert read_source(Source(str(csv_path), csv_path)).agg.parsed == 1000


def test_a_cut_off_zstd_file_says_so_and_keeps_what_came_before(tmp_path: Path) -> None:
    """zstandard's stream reader just stops where a cut-off file ends: the reader must not."""
    body = b"".join(json.dumps({"query": f"query number {i}", "n": "x" * (i % 97)}).encode() + b"\n"
                    for i in range(50_000))
    for name, packed in (("cut.jsonl.zst", _zstd(body)), ("cut.csv.zst", _zstd(_csv_log(50_000)))):
        path = tmp_path / name
        path.write_bytes(packed[: len(packed) // 2])
        agg = read_source(Source(str(path), path)).agg
        assert list(agg.rejected) == ["unreadable data (the zstd stream ends inside a frame)"], name
        assert 1000 < agg.parsed < 50_000
        assert set(agg.counts) == {f"query number {i}" for i in range(agg.parsed)}
        _lines_add_up(agg)


def test_times_in_the_forms_logs_write_that_are_not_iso() -> None:
    from curator.logs.aggregate import parse_time

    assert parse_time("2026-10-01 08:00:00.5 UTC") == "2026-10-01T08:00:00"  # BigQuery
    assert parse_time("01/Oct/2026:08:00:00 +0200") == "2026-10-01T06:00:00"  # nginx $time_local
    assert parse_time("Thu, 01 Oct 2026 08:00:00 GMT") == "2026-10-01T08:00:00"  # HTTP date
    assert parse_time("Thu, 01 Oct 2026 08:00:00 +0200") == "2026-10-01T06:00:00"
    for unclear in ("2026-10-01T08:00:00+02:00 UTC", "Thu, 01 Oct 0001 08:00:00 GMT", "31/Feb/2026:08:00:00 +0000",
                    "Thu, 31 Feb 2026 08:00:00 GMT", "yesterday"):
        assert parse_time(unclear) is None, unclear


def test_a_time_outside_the_years_python_has_once_in_utc_is_no_time_not_a_crash(tmp_path: Path) -> None:
    from curator.logs.aggregate import parse_time

    assert parse_time("2026-10-01T08:00:00.5+02:30") == "2026-10-01T05:30:00"
    assert parse_time("0001-01-01T00:30:00+01:00") is None  # the year 0 in UTC
    assert parse_time("9999-12-31T23:30:00-01:00") is None  # the year 10000
    log = tmp_path / "edge.jsonl"
    log.write_text('{"query": "dhl cutoff time", "timestamp": "0001-01-01T00:30:00+01:00"}\n')
    read = read_source(Source("edge.jsonl", log), engine="python")
    assert read.agg.parsed == 1 and read.agg.first == {}


def _docker_log(path: Path) -> Path:
    """Docker's json-file log of a search service: each line an envelope whose `log` is
    the service's own JSON line, and one line of plain output between them."""
    lines = []
    for k, (query, user) in enumerate([("dhl cutoff time", "u1"), ("ups pickup window", "u2"),
                                       ("dhl cutoff time", "u3")]):
        if k == 1:
            lines.append({"log": "server listening on :8080\n", "stream": "stderr", "time": "2026-10-01T07:59:59Z"})
        inner = {"query": query, "user": user, "hits": ["p1", "p2"]}
        lines.append({"log": json.dumps(inner) + "\n", "stream": "stdout", "time": f"2026-10-0{k + 1}T08:00:00.1234567Z"})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@pytest.mark.parametrize("engine", ["auto", "python"])
def test_a_docker_log_is_read_from_the_json_inside_its_envelope(tmp_path: Path, engine: str) -> None:
    """The search records are the text of each envelope's `log` (a container's JSON
    output): their fields are found there, the envelope's time is the line's time, and a
    line whose `log` holds no JSON object (the container's other output) is ignored and
    counted, one whose JSON is cut short rejected. It was 'no query field found'."""
    read = read_source(Source("docker.log", _docker_log(tmp_path / "docker.log")), engine=engine)
    assert read.format == "jsonl" and read.engine == "python"
    assert read.fields == {"json_in": "log", "query": "query", "time": "time", "user": "user", "hits": "hits"}
    agg = read.agg
    assert (agg.lines, agg.parsed) == (4, 3)
    assert dict(agg.counts) == {"dhl cutoff time": 2, "ups pickup window": 1}
    assert not agg.rejected and agg.ignored == {"'log' without a JSON record (another message)": 1}
    assert seen(read, "dhl cutoff time") == ("2026-10-01T08:00:00", "2026-10-03T08:00:00")
    assert agg.users["dhl cutoff time"] == {"u1", "u3"} and agg.hits["ups pickup window"] == {"p1": 1, "p2": 1}
    cut = tmp_path / "cut.log"
    cut.write_text((tmp_path / "docker.log").read_text()
                   + json.dumps({"log": '{"query": "cut sho', "stream": "stdout", "time": "2026-10-04T08:00:00Z"}) + "\n")
    read = read_source(Source("cut.log", cut), engine=engine)
    assert {r: x.lines for r, x in read.agg.rejected.items()} == {"broken JSON in 'log'": [5]}


def test_the_duckdb_engine_names_json_inside_an_envelope_and_the_engine_that_reads_it(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"cannot read it exactly \(its search records are JSON inside its lines \(json_in=log\)\)") as err:
        read_source(Source("docker.log", _docker_log(tmp_path / "docker.log")), engine="duckdb")
    assert "--engine python" in (err.value.hint or "")


@pytest.mark.parametrize("prefix", [
    "{time}.123456789Z stdout F ",  # a container runtime's (CRI) log
    "{date} {clock},123 INFO search.api ",  # Python logging
    "[{time}Z] ",
])
def test_json_after_a_line_prefix_is_read_with_the_time_the_prefix_starts_with(tmp_path: Path, prefix: str) -> None:
    """Each line of an app's log ends in the JSON of one search after a prefix: the
    records are that JSON, the time is the prefix's unless the record has its own, a line
    without JSON (the app's other messages) is ignored and counted, one whose JSON is cut
    short is rejected. Every whole line was queued as a query."""
    log = tmp_path / "app.log"
    rows = []
    for day, query in [(1, "dhl cutoff time"), (2, "ups pickup window"), (3, "dhl cutoff time")]:
        date, clock = f"2026-10-0{day}", "08:00:00"
        start = prefix.format(time=f"{date}T{clock}", date=date, clock=clock)
        rows.append(start + json.dumps({"q": query, "session": f"s{day}"}) + "\n")
    rows.insert(1, prefix.format(time="2026-10-01T08:00:01", date="2026-10-01", clock="08:00:01") + "cache warmed\n")
    log.write_text("".join(rows))
    read = read_source(Source("app.log", log))
    assert read.format == "jsonl"
    assert read.fields == {"json_in": "line", "query": "q", "time": "line_time", "user": "session"}
    assert dict(read.agg.counts) == {"dhl cutoff time": 2, "ups pickup window": 1}
    assert not read.agg.rejected and read.agg.ignored == {"line without a JSON record (another message)": 1}
    assert seen(read, "dhl cutoff time") == ("2026-10-01T08:00:00", "2026-10-03T08:00:00")
    since = read_source(Source("app.log", log), window=Window(since="2026-10-02T00:00:00"))
    assert dict(since.agg.counts) == {"ups pickup window": 1, "dhl cutoff time": 1}
    with log.open("a") as fh:
        fh.write(prefix.format(time="2026-10-04T08:00:00", date="2026-10-04", clock="08:00:00") + '{"q": "cut sh\n')
    assert {r: x.lines for r, x in read_source(Source("app.log", log)).agg.rejected.items()} == {
        "broken JSON after the line's prefix": [5]}


def test_a_list_of_queries_with_braces_in_some_stays_plain_text(tmp_path: Path) -> None:
    log = tmp_path / "queries.log"
    log.write_text('escape {"q": "a b"}\nhow to replay the dlq\nparser.max_retries default\n')
    read = read_source(Source("queries.log", log))
    assert read.format == "text" and read.agg.counts['escape {"q": "a b"}'] == 1

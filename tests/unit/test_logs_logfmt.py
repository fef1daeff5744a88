"""logfmt logs (an app's `key=value` lines, Heroku's router) are read as records: the
search lines among the app's other messages. They were queued whole as queries, or
stopped as `a log of another kind`."""

from __future__ import annotations

from pathlib import Path

import pytest

from curator.errors import InputError
from curator.logs.reading import DUCKDB_MIN_BYTES, read_source
from curator.logs.sources import Source

DATA = Path(__file__).resolve().parent.parent / "data" / "logs"
APP = (
    'time=2026-10-01T08:00:00Z level=info msg="server started" port=8080\n'
    'time=2026-10-01T08:00:01Z level=info msg=search query="reset password" user=u1 hits=3 took_ms=12\n'
    'time=2026-10-01T08:00:02Z level=info msg=search query="carrier \\"E1042\\" error" user=u2 hits=0 took_ms=30\n'
    'time=2026-10-01T08:00:03Z level=warn msg="slow request" path=/search duration=2.1s\n'
    'time=2026-10-01T08:00:04Z level=info msg=search query=vpn user=u1 hits=7 took_ms=5\n'
)


def test_an_apps_logfmt_lines_are_its_search_records(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_text(APP)
    read = read_source(Source(log.name, log))
    assert read.format == "jsonl" and read.engine == "python"
    assert read.fields == {"json_in": "logfmt", "query": "query", "time": "time", "user": "user",
                           "results": "hits", "latency": "took_ms"}  # hits=3 counts results: no ids
    agg = read.agg
    assert dict(agg.counts) == {"reset password": 1, 'carrier "E1042" error': 1, "vpn": 1}
    assert agg.ignored == {"line without 'query' (another message)": 2} and not agg.rejected
    assert agg.zero_results == {'carrier "E1042" error': 1} and agg.latency["vpn"] == [5.0, 1]
    assert agg.first["vpn"] == "2026-10-01T08:00:04" and agg.users["vpn"] == {"u1"} and not agg.hits


def test_heroku_router_lines_are_requests_with_a_search_parameter() -> None:
    read = read_source(Source("heroku-router.log", DATA / "heroku-router.log"))
    assert read.fields == {"json_in": "logfmt", "query": "path", "time": "line_time", "user": "fwd", "param": "q"}
    assert dict(read.agg.counts) == {"reset password": 1, "carrier e1042": 1}
    assert read.agg.ignored == {"request without the search parameter": 1, "line without 'path' (another message)": 1}
    assert read.agg.first["carrier e1042"] == "2026-10-01T08:00:04"


def test_logfmt_is_the_python_engines_and_text_with_an_equals_sign_is_no_logfmt(tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    line = 'time=2026-10-01T08:00:01Z level=info msg=search query="reset password" user=u1 hits=3\n'
    big.write_text(line * (DUCKDB_MIN_BYTES // len(line) + 100))
    assert read_source(Source(big.name, big), engine="auto").engine == "python"
    with pytest.raises(InputError, match="logfmt lines"):
        read_source(Source(big.name, big), engine="duckdb")
    queries = tmp_path / "queries.txt"
    queries.write_text("a=b formula\nreset password\nx=1 y=2 in excel\nvpn\n")
    assert read_source(Source(queries.name, queries)).format == "text"

"""JSON access logs (nginx's escape=json, Caddy, Google Cloud's load balancer): the query
is the search parameter of the request URL. They were `no query field found`, and no
flag could read them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curator.errors import InputError
from curator.logs.access import BOT, NO_PARAM
from curator.logs.fields import Fields
from curator.logs.reading import DUCKDB_MIN_BYTES, read_source
from curator.logs.sources import Source


def _nginx(k: int, request: str, agent: str = "Mozilla/5.0", addr: str | None = None) -> dict:
    return {"time_local": f"01/Oct/2026:10:00:{k % 60:02d} +0200", "remote_addr": addr or f"203.0.113.{k % 200}",
            "remote_user": "", "request": request, "status": 200, "body_bytes_sent": 512, "http_referer": "",
            "http_user_agent": agent, "request_time": 0.031}


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_an_nginx_json_log_is_read_for_its_search_parameter(tmp_path: Path) -> None:
    log = _write(tmp_path / "ingress.jsonl", [
        _nginx(1, "GET /search?q=reset+password&page=1 HTTP/1.1"),
        _nginx(2, "GET /search?q=carrier%20e1042 HTTP/1.1", addr="203.0.113.1"),
        _nginx(3, "GET /static/app.js HTTP/1.1"),
        _nginx(4, "GET /search?q=reset%20password HTTP/2.0", agent="Mozilla/5.0 (compatible; bingbot/2.0)"),
        _nginx(5, "GET /search?q=caf%E9 HTTP/1.1"),  # an old client's Windows-1252
    ])
    read = read_source(Source(log.name, log))
    assert read.format == "jsonl" and read.engine == "python"
    assert read.fields == {"query": "request", "time": "time_local", "user": "remote_addr", "param": "q"}
    assert dict(read.agg.counts) == {"reset password": 1, "carrier e1042": 1, "café": 1}
    assert read.agg.ignored == {NO_PARAM: 1, BOT: 1} and not read.agg.rejected
    assert read.agg.first["reset password"] == "2026-10-01T08:00:01"  # +0200 in UTC
    assert read.agg.users["carrier e1042"] == {"203.0.113.1"}


def test_caddy_and_cloud_load_balancer_records_nest_the_url(tmp_path: Path) -> None:
    caddy = _write(tmp_path / "caddy.jsonl", [
        {"level": "info", "ts": 1790841601.5, "logger": "http.log.access", "msg": "handled request", "user_id": "",
         "request": {"remote_ip": "203.0.113.9", "method": "GET", "uri": "/search?q=reset+password",
                     "headers": {"User-Agent": ["Mozilla/5.0"]}}, "status": 200},
        {"level": "info", "ts": 1790841602.5, "logger": "http.log.access", "msg": "handled request", "user_id": "",
         "request": {"remote_ip": "203.0.113.9", "method": "GET", "uri": "/search?q=vpn",
                     "headers": {"User-Agent": ["Googlebot/2.1 (+http://www.google.com/bot.html)"]}}, "status": 200},
    ])
    read = read_source(Source(caddy.name, caddy))
    assert read.fields["query"] == "request.uri" and read.fields["user"] == "request.remote_ip"
    assert dict(read.agg.counts) == {"reset password": 1} and read.agg.ignored == {BOT: 1}
    assert read.agg.first["reset password"] == "2026-10-01T08:00:01"
    gcp = _write(tmp_path / "lb.jsonl", [
        {"timestamp": "2026-10-01T08:00:01.123Z", "severity": "INFO",
         "httpRequest": {"requestMethod": "GET", "requestUrl": "https://docs.example.com/search?query=dhl+cutoff",
                         "remoteIp": "198.51.100.7", "userAgent": "Mozilla/5.0"}},
    ])
    read = read_source(Source(gcp.name, gcp))
    assert read.fields == {"query": "httpRequest.requestUrl", "time": "timestamp", "user": "httpRequest.remoteIp",
                           "param": "query"}
    assert dict(read.agg.counts) == {"dhl cutoff": 1}


def test_a_named_field_and_parameter_are_read_so_and_a_search_log_keeps_its_query_field(tmp_path: Path) -> None:
    log = _write(tmp_path / "app.jsonl", [{"ts": "2026-10-01T08:00:00Z", "link": "/find?kw=label+backlog&q=x"}])
    read = read_source(Source(log.name, log), fields=Fields(query="link"), param="kw")
    assert dict(read.agg.counts) == {"label backlog": 1} and read.fields["param"] == "kw"
    # a search log with a query field and a URL beside it: `param` (an access-log default) changes nothing
    search = _write(tmp_path / "search.jsonl", [{"query": "dhl cutoff", "url": "/search?q=dhl+cutoff&p=2"}])
    read = read_source(Source(search.name, search), param="q")
    assert read.fields == {"query": "query"} and dict(read.agg.counts) == {"dhl cutoff": 1}


def test_a_big_json_access_log_goes_to_the_python_engine_and_duckdb_says_why(tmp_path: Path) -> None:
    records, k = [], 0
    while len(records) * 260 < DUCKDB_MIN_BYTES * 1.5:
        records.append(_nginx(k, f"GET /search?q=query+{k % 97}&page=1 HTTP/1.1"))
        k += 1
    log = _write(tmp_path / "big.jsonl", records)
    assert log.stat().st_size > DUCKDB_MIN_BYTES
    read = read_source(Source(log.name, log), engine="auto")
    assert read.engine == "python" and read.agg.parsed == len(records)
    assert sum(read.agg.counts.values()) == len(records) and len(read.agg.counts) == 97
    with pytest.raises(InputError, match="its queries are the URL parameter 'q' of 'request'"):
        read_source(Source(log.name, log), engine="duckdb")


def test_a_vespa_access_log_gives_users_and_zero_results(tmp_path: Path) -> None:
    log = _write(tmp_path / "access.json.log", [
        {"ip": "203.0.113.9", "time": 1790841601.123, "duration": 0.012, "code": 200, "method": "GET",
         "uri": "/search/?query=reset+password&hits=10", "agent": "Mozilla/5.0", "search": {"totalhits": 42}},
        {"ip": "203.0.113.10", "time": 1790841602.123, "duration": 0.02, "code": 200, "method": "GET",
         "uri": "/search/?query=carrier+e1042&hits=10", "agent": "Mozilla/5.0", "search": {"totalhits": 0}},
        {"ip": "203.0.113.11", "time": 1790841603.1, "code": 200, "method": "GET", "uri": "/search/?query=vpn",
         "agent": "python-requests/2.31"},
        {"ip": "203.0.113.11", "time": 1790841603.2, "code": 200, "method": "GET", "uri": "/state/v1/health",
         "agent": "curl/8.0"},
    ])
    read = read_source(Source(log.name, log), fmt="jsonl")
    assert read.fields == {"query": "uri", "time": "time", "user": "ip", "results": "search.totalhits",
                           "param": "query"}
    assert dict(read.agg.counts) == {"reset password": 1, "carrier e1042": 1}
    assert read.agg.zero_results == {"carrier e1042": 1} and read.agg.ignored == {NO_PARAM: 1, BOT: 1}

"""Access logs as servers really write them (a virtual host first, fields after, IPv6,
a space or an escaped quote in the request, an empty request) and AWS load balancer
logs (ALB, classic ELB, tests/data/logs/alb.log): the search parameter is read from each."""

from __future__ import annotations

from pathlib import Path

from curator.logs.reading import read_source
from curator.logs.sources import Source

DATA = Path(__file__).resolve().parent.parent / "data" / "logs"

VARIANTS = (
    'www.example.com:443 203.0.113.9 - - [01/Oct/2026:10:00:01 +0200] "GET /search?q=vhost+prefix HTTP/1.1" '
    '200 512 "-" "Mozilla/5.0"\n'
    '2001:db8::1 - - [01/Oct/2026:10:00:02 +0200] "GET /search?q=ipv6+client HTTP/1.1" 200 512 "-" "Mozilla/5.0"\n'
    '203.0.113.9 - - [01/Oct/2026:10:00:03 +0200] "GET /search?q=extra+fields HTTP/1.1" 200 512 "-" "Mozilla/5.0" '
    '"198.51.100.7" 0.031\n'
    '203.0.113.9 - - [01/Oct/2026:10:00:04 +0200] "GET /search?q=space inside HTTP/1.1" 200 512 "-" "Mozilla/5.0"\n'
    '203.0.113.9 - - [01/Oct/2026:10:00:05 +0200] "-" 400 0 "-" "-"\n'
    '203.0.113.9 - - [01/Oct/2026:10:00:06 +0200] "GET /search?q=apache+\\"quoted\\"+and+\\\\ HTTP/1.1" 200 512 '
    '"-" "Mozilla/5.0 \\"x\\""\n'
    '203.0.113.9 - - [01/Oct/2026:10:00:07 +0200] "GET /search?q=nginx+\\x22quoted\\x22+caf\\xC3\\xA9 HTTP/1.1" '
    '200 512 "-" "Mozilla/5.0"\n'
    '203.0.113.9 - - [01/Oct/2026:10:00:08 +0200] "GET /search?q=old+caf\\xE9 HTTP/1.0" 200 512 "-" "Mozilla/4.0"\n'
    'www.example.com:443 203.0.113.9 - - [01/Oct/2026:10:00:09 +0200] "GET /search?q=crawl HTTP/1.1" '
    '200 512 "-" "Mozilla/5.0 (compatible; Googlebot/2.1)"\n'
)


def test_access_log_lines_as_servers_write_them_are_all_read(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    log.write_text(VARIANTS)
    read = read_source(Source(log.name, log))
    assert read.format == "access"
    assert set(read.agg.counts) == {"vhost prefix", "ipv6 client", "extra fields", "space inside",
                                    'apache "quoted" and \\', 'nginx "quoted" café', "old café"}
    assert not read.agg.rejected
    assert read.agg.ignored == {"request without the search parameter": 1, "bot user agent": 1}
    assert read.agg.first["vhost prefix"] == "2026-10-01T08:00:01"
    assert read.agg.users["ipv6 client"] == {"2001:db8::1"}


def test_load_balancer_logs_are_read_for_their_search_parameter() -> None:
    read = read_source(Source("alb.log", DATA / "alb.log"))
    assert read.format == "elb" and read.fields == {"param": "q"}
    assert dict(read.agg.counts) == {"reset password": 1, "carrier e1042": 1, "classic elb": 1}
    assert read.agg.ignored == {"bot user agent": 1, "request without the search parameter": 1}  # curl, health
    assert read.agg.first["reset password"] == "2026-10-01T08:00:01"
    assert read.agg.first["classic elb"] == "2026-10-01T08:00:05"
    assert read.agg.users["reset password"] == {"203.0.113.9"} == read.agg.users["carrier e1042"]  # no port


def test_a_line_of_neither_kind_is_rejected_with_its_number(tmp_path: Path) -> None:
    log = tmp_path / "alb.log"
    log.write_text((DATA / "alb.log").read_text() + "this is not a load balancer line\n")
    read = read_source(Source(log.name, log))
    assert read.agg.rejected["not a load balancer log line"].lines == [6]


def test_a_tls_handshake_sent_to_the_http_port_is_no_search_and_no_broken_line(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    log.write_text('203.0.113.9 - - [01/Oct/2026:10:00:01 +0200] "\\x16\\x03\\x01\\x00\\xF1\\x01\\x00" 400 157 "-" "-"\n'
                   '203.0.113.9 - - [01/Oct/2026:10:00:02 +0200] "GET /search?q=vpn HTTP/1.1" 200 5 "-" "Mozilla/5.0"\n')
    read = read_source(Source(log.name, log))
    assert dict(read.agg.counts) == {"vpn": 1} and not read.agg.rejected
    assert read.agg.ignored == {"request without the search parameter": 1}


def test_access_times_read_by_position_agree_with_strptime() -> None:
    """clf_time (and parse_time, for JSON logs' time_local) reads the usual stamp by
    position and leaves the rest to strptime: on stamps of every part in and out of
    range, the UTC time strptime gives (or none)."""
    import random
    import re
    from datetime import UTC, datetime

    from curator.logs.access import clf_time
    from curator.logs.aggregate import parse_time

    def reference(stamp: str) -> str | None:
        try:
            return datetime.strptime(stamp, "%d/%b/%Y:%H:%M:%S %z").astimezone(UTC).isoformat()[:19]
        except (ValueError, OverflowError):
            return None

    draw = random.Random(7)
    months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec", "oct", "Foo"]
    stamps = ["1/Oct/2026:10:00:03 +0200", "01/Oct/2026:10:00:03 +02:00", "01/Oct/2026:10:00:03 Z",
              "01/Jan/0001:00:30:00 +0100", "31/Dec/9999:23:30:00 -0100", "\u0661\u0661/Oct/2026:10:00:03 +0200"]
    stamps += [f"{draw.randint(0, 32):02d}/{draw.choice(months)}/{draw.randint(1, 9999):04d}:{draw.randint(0, 25):02d}:"
               f"{draw.randint(0, 61):02d}:{draw.randint(0, 61):02d} {draw.choice('+-')}{draw.randint(0, 25):02d}"
               f"{draw.randint(0, 61):02d}" for _ in range(20_000)]
    assert [s for s in stamps if clf_time(s) != reference(s)] == []
    # a JSON log's time_local: parse_time takes the strict form (two-digit day, `Oct`, `+0200`) the same way
    strict = re.compile(r"\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d [+-]\d{4}")
    assert [s for s in stamps if parse_time(s) != (reference(s) if strict.fullmatch(s) else None)] == []
    assert sum(reference(s) is not None for s in stamps) > 10_000  # most are times: both ways are tried


def test_the_first_value_of_a_parameter_is_what_parse_qs_gives() -> None:
    """first_value reads one parameter without decoding the others: on query strings
    of every awkward kind (encoded names and values, `+`, empty parts, a name alone,
    repeats, bytes that are not UTF-8), the first value parse_qs gives, or none."""
    import random
    from urllib.parse import parse_qs

    from curator.logs.access import first_value

    draw = random.Random(11)
    pieces = ["q", "q", "qq", "%71", "q+", "page", "", "=", "&", "+", "%20", "%E9", "%C3%A9", "%", "%2", "a=b", "x"]
    queries = ["".join(draw.choice(pieces) for _ in range(draw.randint(0, 8))) for _ in range(20_000)]
    queries += ["q=reset+password&page=2", "page=2&q=", "q", "&&q=a&q=b", "%71=encoded", "q+=name+with+space"]
    for param in ("q", "qq", "q "):
        for query in queries:
            found = parse_qs(query, keep_blank_values=True, errors="surrogateescape").get(param)
            assert first_value(query, param) == (found[0] if found else None), (query, param)


def test_path_keeps_the_search_page_and_leaves_autocomplete_out(tmp_path: Path, ws) -> None:
    """`--path /search` (a prefix): requests to other paths (an autocomplete endpoint, a
    request per letter typed) are ignored and counted, in every log of requests."""
    from curator.logs import import_logs

    access = tmp_path / "access.log"
    access.write_text("".join(
        f'203.0.113.9 - - [01/Oct/2026:10:00:0{k} +0200] "GET {url} HTTP/1.1" 200 51 "-" "Mozilla/5.0"\n'
        for k, url in enumerate(["/api/suggest?q=re", "/api/suggest?q=rese", "/search?q=reset+password",
                                 "/search/advanced?q=reset+password+admin", "http://docs.example.com/search?q=vpn"])))
    read = read_source(Source(access.name, access), search_paths=("/search",))
    assert set(read.agg.counts) == {"reset password", "reset password admin", "vpn"}
    assert read.agg.ignored == {"request to another path (--path)": 2}
    alb = read_source(Source("alb.log", DATA / "alb.log"), search_paths=("/search",))
    assert set(alb.agg.counts) == {"reset password", "carrier e1042", "classic elb"}  # full URLs' paths
    solr = read_source(Source("solr.log", DATA / "solr.log"), search_paths=("/suggest",))
    assert not solr.agg.counts and solr.agg.ignored["request to another path (--path)"] == 3  # *:* too
    ws.config.logs.search_paths = ["/search"]  # [logs] search_paths in curator.toml, as --path
    summary = import_logs(ws, [access], dry_run=True)
    assert summary.files[0].ignored == {"request to another path (--path)": 2}
    summary = import_logs(ws, [access], dry_run=True, search_paths=[])  # [] (the flag absent: None) is every path
    assert not summary.files[0].ignored


def test_path_in_w3c_and_json_access_logs(tmp_path: Path) -> None:
    import json

    iis = tmp_path / "u_ex.log"
    iis.write_text("#Fields: date time cs-uri-stem cs-uri-query c-ip\n"
                   "2026-10-01 08:00:01 /search.aspx q=vpn 203.0.113.1\n"
                   "2026-10-01 08:00:02 /_api/suggest q=vp 203.0.113.1\n")
    assert dict(read_source(Source(iis.name, iis), search_paths=("/search",)).agg.counts) == {"vpn": 1}
    nginx = tmp_path / "ingress.jsonl"
    nginx.write_text("".join(json.dumps({"time_local": "01/Oct/2026:10:00:01 +0000", "remote_addr": "203.0.113.9",
                                         "request": f"GET {url} HTTP/1.1"}) + "\n"
                             for url in ["/search?q=vpn+setup", "/suggest?q=vpn+s"]))
    read = read_source(Source(nginx.name, nginx), search_paths=("/search",))
    assert dict(read.agg.counts) == {"vpn setup": 1} and read.agg.ignored == {"request to another path (--path)": 1}

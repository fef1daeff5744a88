"""W3C extended logs (IIS, CloudFront) are read for their search parameter, and a log
of another kind is not read as one query per line (its whole lines were queued)."""

from __future__ import annotations

import gzip
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from curator.errors import InputError
from curator.logs.lines import Window
from curator.logs.reading import read_source
from curator.logs.sources import Source

IIS_FIELDS = ("#Fields: date time s-ip cs-method cs-uri-stem cs-uri-query s-port cs-username c-ip "
              "cs(User-Agent) cs(Referer) sc-status sc-substatus sc-win32-status time-taken\n")
IIS = (
    "#Software: Microsoft Internet Information Services 10.0\n#Version: 1.0\n#Date: 2026-10-01 00:00:00\n"
    + IIS_FIELDS
    + "2026-10-01 00:00:01 10.0.0.1 GET /search.aspx q=carrier+e1042+error&page=1 443 - 203.0.113.9 "
      "Mozilla/5.0+(Windows+NT+10.0;+Win64;+x64) - 200 0 0 46\n"
    "2026-10-01 00:00:05 10.0.0.1 GET /search.aspx q=reset%20password 443 CORP\\jdoe 203.0.113.10 "
    "Mozilla/5.0+(Macintosh) https://intranet/ 200 0 0 31\n"
    "2026-10-01 00:00:07 10.0.0.1 GET /styles.css - 443 - 203.0.113.10 Mozilla/5.0+(Macintosh) - 200 0 0 3\n"
    "2026-10-01 00:00:09 10.0.0.1 GET /search.aspx q=carrier+e1042+error 443 - 203.0.113.11 "
    "Mozilla/5.0+(compatible;+Googlebot/2.1;++http://www.google.com/bot.html) - 200 0 0 12\n"
    "2026-10-01 00:00:10 10.0.0.1 GET /search.aspx q=cut+off 443\n"  # a line cut short
    # the server restarted with fewer fields
    "#Software: Microsoft Internet Information Services 10.0\n#Version: 1.0\n#Date: 2026-10-02 00:00:00\n"
    "#Fields: date time cs-uri-query c-ip time-taken\n"
    "2026-10-02 09:30:00 q=reset+password 203.0.113.12 20\n"
)


def _iis(tmp_path: Path) -> Path:
    log = tmp_path / "u_ex261001.log"
    log.write_text(IIS)
    return log


def test_an_iis_log_is_read_by_its_fields_directives(tmp_path: Path) -> None:
    read = read_source(Source("u_ex261001.log", _iis(tmp_path)))
    assert read.format == "w3c" and read.fields == {"param": "q"}
    agg = read.agg
    assert dict(agg.counts) == {"carrier e1042 error": 1, "reset password": 2}
    assert agg.ignored == {"directive line": 8, "request without the search parameter": 1, "bot user agent": 1}
    assert agg.rejected["not a line of its #Fields directive (another number of values)"].lines == [9]
    assert agg.lines == 14 == agg.parsed + 1 + sum(agg.ignored.values())
    assert agg.first["reset password"] == "2026-10-01T00:00:05" and agg.last["reset password"] == "2026-10-02T09:30:00"
    assert len(agg.users["reset password"]) == 2  # CORP\jdoe, and 203.0.113.12 after the restart
    assert agg.latency["reset password"] == [51.0, 2]  # milliseconds


def test_an_iis_log_takes_param_and_window(tmp_path: Path) -> None:
    log = _iis(tmp_path)
    read = read_source(Source(log.name, log), param="page")
    assert dict(read.agg.counts) == {"1": 1}
    read = read_source(Source(log.name, log), window=Window(since="2026-10-02T00:00:00"))
    assert dict(read.agg.counts) == {"reset password": 1} and read.agg.ignored["outside --since/--until"] == 2


def test_a_cloudfront_log_has_its_values_decoded_once_more(tmp_path: Path) -> None:
    fields = ("date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status cs(Referer) "
              "cs(User-Agent) cs-uri-query cs(Cookie) x-edge-result-type x-edge-request-id time-taken")
    rows = [
        "2026-10-01 08:00:01 IAD89-C3 335 192.0.2.10 GET d1.cloudfront.net /search 200 - "
        "Mozilla/5.0%20(X11;%20Linux) q=reset%2520password&p=1 - Miss a1 0.338",
        "2026-10-01 08:00:02 IAD89-C3 335 192.0.2.11 GET d1.cloudfront.net /search 200 - "
        "Mozilla/5.0%20(X11) q=caf%25C3%25A9%2520menu%252B%2520100%2525 - Miss a2 0.012",
        "2026-10-01 08:00:03 IAD89-C3 335 192.0.2.12 GET d1.cloudfront.net /search 200 - "
        "Slackbot%201.0%20(+https://api.slack.com/robots) q=reset%2520password - Miss a3 0.1",
    ]
    log = tmp_path / "E2EXAMPLE.2026-10-01-08.abc.gz"
    with gzip.open(log, "wt") as fh:
        fh.write(f"#Version: 1.0\n#Fields: {fields}\n" + "".join(r.replace(" ", "\t") + "\n" for r in rows))
    read = read_source(Source(log.name, log))
    assert read.format == "w3c"
    assert dict(read.agg.counts) == {"reset password": 1, "café menu+ 100%": 1}
    assert read.agg.ignored["bot user agent"] == 1
    assert read.agg.latency["reset password"] == [338.0, 1]  # CloudFront writes seconds
    assert read.agg.first["café menu+ 100%"] == "2026-10-01T08:00:02"


def test_a_w3c_log_without_the_search_parameter_says_to_name_it(tmp_path: Path) -> None:
    log = tmp_path / "u_ex261002.log"
    log.write_text("#Version: 1.0\n" + IIS_FIELDS +
                   "2026-10-01 00:00:01 10.0.0.1 GET /find keyword=x 443 - 203.0.113.9 UA - 200 0 0 4\n")
    with pytest.raises(InputError, match="no search parameter found in cs-uri-query") as caught:
        read_source(Source(log.name, log))
    assert "--param" in (caught.value.hint or "")
    assert dict(read_source(Source(log.name, log), param="keyword").agg.counts) == {"x": 1}


@pytest.mark.parametrize("lines", [
    "Oct  1 08:00:01 web1 app[123]: search q=foo user=jdoe\nOct  1 08:00:02 web1 app[123]: search q=bar\n",
    "2026-10-01 08:00:01,123 INFO search query=foo user=jdoe\n2026-10-01 08:00:02,456 INFO search query=bar\n",
    "[2026-10-01T08:00:01Z] search foo by jdoe\n[2026-10-01T08:00:02Z] search bar\n",
    "2026/10/01 08:00:01 [error] 12#12: *1 open() failed\n2026/10/01 08:00:02 [error] 12#12: *2 open() failed\n",
])
def test_a_log_of_another_kind_is_not_queued_line_by_line(tmp_path: Path, lines: str) -> None:
    log = tmp_path / "app.log"
    log.write_text(lines)
    with pytest.raises(InputError, match="its lines start with a date and time") as caught:
        read_source(Source(log.name, log))
    assert "--format text" in (caught.value.hint or "")
    assert read_source(Source(log.name, log), fmt="text").agg.parsed == 2  # when asked for, it is read


def test_queries_that_mention_dates_are_still_one_query_per_line(tmp_path: Path) -> None:
    log = tmp_path / "queries.txt"
    log.write_text("outage 2026-10-01 08:00 report\nreset password\nvpn setup\ndhl cutoff\n")
    assert read_source(Source(log.name, log)).agg.parsed == 4


def test_an_iis_import_stores_neither_the_user_name_nor_the_address(ws, tmp_path: Path) -> None:
    log = _iis(tmp_path)
    exe = Path(sys.executable).parent / "curator"
    proc = subprocess.run([str(exe), "-w", str(ws.root), "import-logs", str(log)], capture_output=True,
                          env={**os.environ, "COLUMNS": "200"}, text=True)
    assert proc.returncode == 3, proc.stderr  # one rejected line: partial
    assert "u_ex261001.log (w3c, python; param=q)" in proc.stdout
    assert {c.query: c.count for c in ws.candidates()} == {"reset password": 2, "carrier e1042 error": 1}
    con = sqlite3.connect(ws.root / ".curator" / "workspace.db")
    try:
        dump = "\n".join(con.iterdump())
    finally:
        con.close()
    assert "jdoe" not in dump and "203.0.113" not in dump and "Googlebot" not in dump

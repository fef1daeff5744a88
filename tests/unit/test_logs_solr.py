"""Solr's own log (tests/data/logs/solr.log: requests among startup, error and update
lines) is read for its searches: one count per search, not per shard."""

from __future__ import annotations

from pathlib import Path

from curator.logs.lines import Window
from curator.logs.reading import read_source
from curator.logs.solr import MATCH_ALL, OTHER, SHARD
from curator.logs.sources import Source

DATA = Path(__file__).resolve().parent.parent / "data" / "logs"


def test_a_solr_log_counts_each_search_once_with_its_hits_and_time() -> None:
    read = read_source(Source("solr.log", DATA / "solr.log"))
    assert read.format == "solr" and read.fields == {"param": "q"}
    agg = read.agg
    assert dict(agg.counts) == {"reset password": 1, "carrier e1042": 1}  # {!edismax ...} taken off
    assert agg.ignored == {OTHER: 4, SHARD: 2, MATCH_ALL: 1} and not agg.rejected
    assert agg.lines == 9 == agg.parsed + sum(agg.ignored.values())
    assert agg.first["reset password"] == "2026-10-01T08:00:01"
    assert agg.zero_results["carrier e1042"] == 1 and "reset password" not in agg.zero_results
    assert agg.latency["carrier e1042"] == [7.0, 1]


def test_another_parameter_and_a_window(tmp_path: Path) -> None:
    log = tmp_path / "solr.log"
    log.write_text(
        "2026-10-01 08:00:01.123 INFO  (qtp-1) [c:docs] o.a.s.c.S.Request webapp=/solr path=/query "
        "params={qq=label+backlog&q=*:*} hits=3 status=0 QTime=2\n"
        "2026-10-02 08:00:01.123 INFO  (qtp-1) [c:docs] o.a.s.c.S.Request webapp=/solr path=/query "
        "params={qq=vpn+setup} hits=3 status=0 QTime=2\n"
    )
    read = read_source(Source(log.name, log), param="qq", window=Window(since="2026-10-02T00:00:00"))
    assert read.format == "solr" and dict(read.agg.counts) == {"vpn setup": 1}
    assert read.agg.ignored["outside --since/--until"] == 1

"""Solr's own logs: each search request is a line (`o.a.s.c.S.Request ... webapp=/solr
path=/select params={q=reset+password&rows=10} hits=42 status=0 QTime=3`), among the
startup, warning and stack-trace lines of the same file.

- The query is the `q` parameter (`--param` for another), URL-decoded as in access
  logs, without a leading local-params block (`{!edismax qf=title}reset password`).
- A shard's sub-request (`isShard=true`, `distrib=false`: SolrCloud asks every shard
  once per search) is ignored and counted, so each search counts once; so is a
  match-all `*:*` (a browse or a ping, not a search).
- `hits` gives the searches that found nothing (zero results), `QTime` the latency.
- The time is the one the line starts with, in UTC (Solr's default time zone).
- Lines that are not requests are ignored and counted (`other Solr log line`).
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs

from curator.logs.access import NO_PARAM, OTHER_PATH, SearchPaths, decoded
from curator.logs.aggregate import Aggregate, parse_time
from curator.logs.lines import MAX_LINE_BYTES, LineHandler, Window, in_window

REQUEST = re.compile(r" path=(?P<path>\S+) params=\{(?P<params>.*)\}(?= hits=| status=| QTime=|\s*$)"
                     r"(?: hits=(?P<hits>\d+))?(?: status=(?P<status>-?\d+))?(?: QTime=(?P<qtime>\d+))?")
_STAMP = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?")
_LOCAL_PARAMS = re.compile(r"^\{![^}]*\}\s*")
MATCH_ALL = "match-all query (*:*)"
SHARD = "shard sub-request (its search is counted once)"
OTHER = "other Solr log line"


def looks_like_solr_log(head: bytes) -> bool:
    """Does the head hold Solr request lines (a few among its other lines will do)?"""
    lines = [ln.decode("utf-8", "replace") for ln in head.split(b"\n")[:2000]]
    requests = sum(1 for ln in lines if " params={" in ln and REQUEST.search(ln))
    return requests >= min(3, max(1, len(lines) // 10))


class SolrHandler(SearchPaths, LineHandler):
    name = "solr"

    def __init__(self, param: str = "q", window: Window = Window(), max_line_bytes: int = MAX_LINE_BYTES) -> None:
        super().__init__(window, max_line_bytes)
        self.param = param

    def handle(self, text: str, lineno: int, agg: Aggregate) -> None:
        m = REQUEST.search(text) if " params={" in text else None
        if m is None:
            agg.ignored[OTHER] += 1
            return
        params = parse_qs(m["params"], keep_blank_values=True, errors="surrogateescape")
        if params.get("isShard") == ["true"] or params.get("distrib") == ["false"]:
            agg.ignored[SHARD] += 1
            return
        values = params.get(self.param)
        if not values:
            agg.ignored[NO_PARAM] += 1
            return
        if self.elsewhere(m["path"]):  # /suggest, /terms beside /select
            agg.ignored[OTHER_PATH] += 1
            return
        query = _LOCAL_PARAMS.sub("", decoded(values[0]))
        if query.strip() in ("*:*", "*", ""):
            agg.ignored[MATCH_ALL if query.strip() else NO_PARAM] += 1
            return
        stamp = _STAMP.search(text, 0, 40)
        ts = parse_time(stamp.group().replace(",", ".") + "Z") if stamp else None
        if not in_window(self.window, ts, lineno, agg):
            return
        hits = int(m["hits"]) if m["hits"] is not None else None
        latency = float(m["qtime"]) if m["qtime"] is not None else None
        agg.add(query, 1, ts, None, results=hits, latency=latency)

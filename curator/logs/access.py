"""nginx / Apache access logs (common and combined formats): the query parameter of
search requests, URL-decoded. Requests without the parameter (static files, health
checks) are counted as ignored, not rejected; so are requests from obvious bots."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from urllib.parse import parse_qs, urlsplit

from curator.logs.aggregate import Aggregate
from curator.logs.fields import URL_PARAMS
from curator.logs.lines import MAX_LINE_BYTES, LineHandler, Window, in_window

LINE = re.compile(
    r'^(?P<host>\S+) \S+ (?P<user>\S+) \[(?P<time>[^\]]+)\] '
    r'"(?P<method>[A-Z]+) (?P<url>\S+)(?: HTTP/[\d.]+)?" (?P<status>\d{3}) \S+'
    r'(?: "(?P<referer>[^"]*)" "(?P<agent>[^"]*)")?'
)
BOTS = re.compile(r"(?i)bot\b|crawler|spider|slurp|bingpreview|headless|curl/|wget/|python-requests")


def looks_like_access_log(head: bytes) -> bool:
    lines = [ln for ln in head.split(b"\n")[:20] if ln.strip()]
    hits = sum(1 for ln in lines if LINE.match(ln.decode("utf-8", "replace")))
    return bool(lines) and hits >= max(1, len(lines) // 2)


def guess_param(head: bytes) -> str | None:
    seen: dict[str, int] = {}
    for raw in head.split(b"\n")[:2000]:
        m = LINE.match(raw.decode("utf-8", "replace"))
        if m:
            for key in parse_qs(urlsplit(m["url"]).query):
                seen[key] = seen.get(key, 0) + 1
    for name in URL_PARAMS:
        if name in seen:
            return name
    return None


class AccessHandler(LineHandler):
    name = "access"

    def __init__(self, param: str, window: Window = Window(), max_line_bytes: int = MAX_LINE_BYTES):
        super().__init__(window, max_line_bytes)
        self.param = param

    def handle(self, text: str, lineno: int, agg: Aggregate) -> None:
        m = LINE.match(text)
        if not m:
            agg.reject("not an access-log line", lineno)
            return
        values = parse_qs(urlsplit(m["url"]).query, keep_blank_values=True, errors="surrogateescape").get(self.param)
        if not values:
            agg.ignored["request without the search parameter"] += 1
            return
        if m["agent"] and BOTS.search(m["agent"]):
            agg.ignored["bot user agent"] += 1
            return
        try:  # in UTC, like every other time (`+0200` is two hours ahead of it)
            ts = datetime.strptime(m["time"], "%d/%b/%Y:%H:%M:%S %z").astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
        except (ValueError, OverflowError):  # OverflowError: out of Python's years once in UTC
            ts = None
        if not in_window(self.window, ts, lineno, agg):
            return
        user = m["user"] if m["user"] != "-" else m["host"]  # counted, never stored
        agg.add(decoded(values[0]), 1, ts, user)


def decoded(value: str) -> str:
    """A URL-decoded value: UTF-8, or else what old clients sent, the page's Windows-1252
    (`%E9` for é), not U+FFFD in a queued query."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # bytes that were not UTF-8, kept by surrogateescape
        raw = value.encode("utf-8", "surrogateescape")
        try:
            return raw.decode("cp1252")
        except UnicodeDecodeError:  # the five bytes cp1252 leaves undefined
            return raw.decode("latin-1")
    return value

"""nginx / Apache access logs (common and combined formats, with a virtual host before
them or fields after) and AWS load balancer logs (ALB, classic ELB): the query parameter
of search requests, URL-decoded. Requests without the parameter (static files, health
checks, an empty request `"-"`) are counted as ignored, not rejected; so are requests
from obvious bots. A request line as the server escaped it (Apache's `\"`, nginx's
`\x22`) is unescaped first."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import NamedTuple
from urllib.parse import parse_qs, unquote, urlsplit

from curator.logs.aggregate import Aggregate, clf_by_position, parse_time
from curator.logs.fields import URL_PARAMS
from curator.logs.lines import MAX_LINE_BYTES, LineHandler, Window, in_window

_QUOTED = r'[^"\\]*(?:\\.[^"\\]*)*'  # a quoted field's text, escapes and all (unrolled: runs at C speed)
LINE = re.compile(
    r'^(?:(?P<vhost>\S+) )?(?P<host>\S+) \S+ (?P<user>\S+) \[(?P<time>[^\]]+)\] '
    rf'"(?P<request>{_QUOTED})" (?P<status>\d{{3}}) \S+'
    rf'(?: "(?P<referer>{_QUOTED})" "(?P<agent>{_QUOTED})")?'
)
# AWS load balancers: ALB (`https 2026-10-01T08:00:01.123456Z app/name/id client:port ...`)
# and the classic ELB (the same without the type); times in UTC
ELB_LINE = re.compile(
    r'^(?:[a-z0-9]+ )?(?P<time>\d{4}-\d\d-\d\dT[\d:.]+Z) \S+ (?P<host>\S+) \S+ [-\d.]+ [-\d.]+ [-\d.]+ '
    rf'\S+ \S+ [-\d]+ [-\d]+ "(?P<request>{_QUOTED})" "(?P<agent>{_QUOTED})"'
)
_VERSION = re.compile(r" HTTP/[\d.]+$")
BOTS = re.compile(r"(?i)bot\b|crawler|spider|slurp|bingpreview|headless|curl/|wget/|python-requests")
_ESCAPED = re.compile(r'\\(x[0-9A-Fa-f]{2}|["\\])')


def request_url(request: str) -> str | None:
    """The URL of a request line (`GET /search?q=x HTTP/1.1`, a space inside the URL
    too), or None: no request (`-`, ELB's `- - -`) or not one (a TLS handshake sent to
    the HTTP port, logged as `\x16\x03...`)."""
    method, _, rest = request.partition(" ")
    if not (method.isalpha() and method.isupper()) or not rest:
        return None
    return _VERSION.sub("", rest)


class Request(NamedTuple):
    url: str | None  # None: no request line (`"-"`), or not one
    agent: str | None
    time: str | None  # as the log writes it
    user: str | None  # counted, never stored


def looks_like_access_log(head: bytes) -> bool:
    return _most_match(head, LINE)


def looks_like_elb_log(head: bytes) -> bool:
    return _most_match(head, ELB_LINE)


def _most_match(head: bytes, pattern: re.Pattern[str]) -> bool:
    lines = [ln for ln in head.split(b"\n")[:20] if ln.strip()]
    hits = sum(1 for ln in lines if pattern.match(ln.decode("utf-8", "replace")))
    return bool(lines) and hits >= max(1, len(lines) // 2)


def guess_param(head: bytes, pattern: re.Pattern[str] = LINE) -> str | None:
    seen: dict[str, int] = {}
    for raw in head.split(b"\n")[:2000]:
        m = pattern.match(raw.decode("utf-8", "replace"))
        url = request_url(m["request"]) if m else None
        if url:
            for key in parse_qs(url_query(unescaped(url))):
                seen[key] = seen.get(key, 0) + 1
    for name in URL_PARAMS:
        if name in seen:
            return name
    return None


def first_value(query: str, param: str) -> str | None:
    """The first value of `param` in a query string, decoded (bytes that are not UTF-8
    kept by surrogateescape), exactly as `parse_qs(query, keep_blank_values=True)`
    gives it, or None; without decoding the other parameters (a third of a line's time)."""
    for part in query.split("&"):
        if not part:
            continue
        name, _, value = part.partition("=")
        if "+" in name or "%" in name:
            name = unquote(name.replace("+", " "), errors="surrogateescape")
        if name == param:
            return unquote(value.replace("+", " "), errors="surrogateescape")
    return None


OTHER_PATH = "request to another path (--path)"
NO_PARAM = "request without the search parameter"
BOT = "bot user agent"


class SearchPaths:
    """The paths a log's searches go to (`--path /search`), as prefixes; requests to
    others are ignored and counted, so a site's autocomplete (`/api/suggest?q=re`, a
    request per letter typed) stays out. Empty: every path."""

    search_paths: tuple[str, ...] = ()

    def elsewhere(self, path: str | None) -> bool:
        return bool(self.search_paths) and not (path or "").startswith(self.search_paths)


def url_path(url: str) -> str:
    """The path of a request's URL (`/search` of `/search?q=x` or of `https://host/search?q=x`)."""
    if "://" in url[:12]:
        return urlsplit(url).path
    return url.partition("?")[0].partition("#")[0]


def url_query(url: str) -> str:
    """The query string of a URL or path, as `urlsplit` gives it: without its cost
    where a partition gives the same (no fragment, nothing urlsplit takes out first)."""
    if "?" not in url:
        return ""
    if "#" in url or "\t" in url or "\r" in url or "\n" in url:
        return urlsplit(url).query
    return url.partition("?")[2]


class LastStamp:
    """A log's time read once per distinct stamp running (a busy second has many lines)."""

    def __init__(self, read: Callable[[str], str | None]) -> None:
        self.read = read
        self.stamp: str | None = None
        self.value: str | None = None

    def __call__(self, stamp: str) -> str | None:
        if stamp != self.stamp:
            self.stamp, self.value = stamp, self.read(stamp)
        return self.value


class BotCheck:
    """Is a user agent an obvious bot's? Remembered per distinct agent: a log has a few
    thousand agents in millions of lines, and the pattern took a line's 7 µs."""

    def __init__(self) -> None:
        self._known: dict[str, bool] = {}

    def __call__(self, agent: str) -> bool:
        bot = self._known.get(agent)
        if bot is None:
            bot = BOTS.search(agent) is not None
            if len(self._known) < 100_000:
                self._known[agent] = bot
        return bot


def unescaped(text: str) -> str:
    r"""A request line as written before the server escaped it for its log: `\xHH`,
    `\"` and `\\` become the percent-escapes of those bytes, which URL-decoding reads."""
    if "\\" not in text:
        return text
    return _ESCAPED.sub(lambda m: "%" + (m[1][1:] if m[1][0] == "x" else f"{ord(m[1]):02X}"), text)


class AccessHandler(SearchPaths, LineHandler):
    """An access log's lines. What repeats from line to line is worked out once: the
    bot check per distinct user agent (a log has a few thousand in millions of lines),
    the time per distinct stamp (a busy second has many lines); times are read by
    position, not by `strptime` (17 of a line's 23 µs went to those two)."""

    name = "access"
    what = "an access-log"

    def __init__(self, param: str, window: Window = Window(), max_line_bytes: int = MAX_LINE_BYTES):
        super().__init__(window, max_line_bytes)
        self.param = param
        self.bot = BotCheck()
        self.time = LastStamp(self.utc)

    def request(self, text: str) -> Request | None:
        """The line's request (its time as written), or None if it is no line of this log."""
        m = LINE.match(text)
        if not m:
            return None
        return Request(request_url(m["request"]), m["agent"], m["time"], m["user"] if m["user"] != "-" else m["host"])

    def utc(self, stamp: str) -> str | None:
        """A time as the log writes it, in UTC (`+0200` is two hours ahead of it)."""
        return clf_time(stamp)

    def handle(self, text: str, lineno: int, agg: Aggregate) -> None:
        request = self.request(text)
        if request is None:
            agg.reject(f"not {self.what} line", lineno)
            return
        query = url_query(request.url) if request.url else ""
        value = first_value(unescaped(query), self.param) if query else None
        if value is None:
            agg.ignored[NO_PARAM] += 1
            return
        if self.search_paths and self.elsewhere(url_path(request.url or "")):
            agg.ignored[OTHER_PATH] += 1
            return
        if request.agent and self.bot(request.agent):
            agg.ignored[BOT] += 1
            return
        ts = self.time(request.time) if request.time is not None else None
        if not in_window(self.window, ts, lineno, agg):
            return
        agg.add(decoded(value), 1, ts, request.user)


class ElbHandler(AccessHandler):
    """An AWS load balancer's log: the same requests, in its own line."""

    name = "elb"
    what = "a load balancer log"

    def request(self, text: str) -> Request | None:
        m = ELB_LINE.match(text)
        if not m:
            return None
        client = m["host"].rsplit(":", 1)[0] if m["host"] != "-" else None  # without the port
        agent = m["agent"] if m["agent"] != "-" else None
        return Request(request_url(m["request"]), agent, m["time"], client)

    def utc(self, stamp: str) -> str | None:
        return parse_time(stamp)


def clf_time(stamp: str) -> str | None:
    """`01/Oct/2026:10:00:03 +0200` (the common log format's time) in UTC as
    `2026-10-01T08:00:03`, read by position; what `strptime` reads beside (`1/oct/2026`,
    `+02:00`) by it; None when it is no time. (A year before 1000 is written with four
    digits, as every other time is: strftime wrote `502-06-05`.)"""
    fast = clf_by_position(stamp)
    if fast is not None:
        return fast
    try:
        return datetime.strptime(stamp, "%d/%b/%Y:%H:%M:%S %z").astimezone(UTC).replace(tzinfo=None).isoformat()
    except (ValueError, OverflowError):  # OverflowError: out of Python's years once in UTC
        return None


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

"""W3C extended logs: IIS (and so SharePoint and other Windows-hosted search pages) and
CloudFront's standard logs. Their `#Fields:` directive names the columns; the query is
a parameter of `cs-uri-query` (or of `cs-uri`), URL-decoded as in access logs.

- IIS separates values with spaces (it writes a space inside a value as `+`), CloudFront
  with tabs; CloudFront also URL-encodes each value once more (a `%` is `%25`), so its
  values are decoded once before the query string is.
- Times are `date` and `time`, in UTC (both servers write them so).
- The user is `cs-username`, else the client address (`c-ip`): counted, never stored.
- `time-taken` is the latency: milliseconds in IIS, seconds in CloudFront.
- Directive lines (`#Software`, `#Version`, `#Date`, `#Fields`) are ignored and counted;
  a server restart writes them again, and a new `#Fields:` applies to the lines after it.
- Requests without the parameter and requests from obvious bots are ignored, as in
  access logs.
"""

from __future__ import annotations

from urllib.parse import parse_qs, unquote

from curator.logs.access import (
    BOT,
    NO_PARAM,
    OTHER_PATH,
    BotCheck,
    LastStamp,
    SearchPaths,
    decoded,
    first_value,
    url_path,
    url_query,
)
from curator.logs.aggregate import Aggregate, parse_time
from curator.logs.fields import URL_PARAMS, as_number
from curator.logs.lines import MAX_LINE_BYTES, LineHandler, Window, in_window

FIELDS = "#Fields:"
CLOUDFRONT = ("x-edge-location", "x-edge-request-id")  # fields only CloudFront writes


def columns(head: bytes) -> list[str] | None:
    """The field names of the first `#Fields:` directive in `head`, or None."""
    for raw in head.split(b"\n")[:50]:
        line = raw.lstrip(b"\xef\xbb\xbf").decode("utf-8", "replace").strip()
        if line.startswith(FIELDS):
            return line[len(FIELDS):].split()
    return None


def looks_like_w3c(head: bytes) -> bool:
    names = columns(head)
    return names is not None and ("cs-uri-query" in names or "cs-uri" in names)


def guess_param(head: bytes) -> str | None:
    """The first of the usual search parameters that the head's requests carry."""
    handler = W3CHandler("", columns(head) or [])
    seen: set[str] = set()
    for raw in head.split(b"\n")[:2000]:
        text = raw.decode("utf-8", "replace").rstrip("\r")
        if text and not text.startswith("#"):
            seen.update(parse_qs(handler.query_string(text) or ""))
    return next((name for name in URL_PARAMS if name in seen), None)


class W3CHandler(SearchPaths, LineHandler):
    name = "w3c"

    def __init__(self, param: str, names: list[str], window: Window = Window(),
                 max_line_bytes: int = MAX_LINE_BYTES) -> None:
        super().__init__(window, max_line_bytes)
        self.param = param
        self.bot = BotCheck()
        self.time = LastStamp(parse_time)
        self._use(names)

    def _use(self, names: list[str]) -> None:
        self.names = names
        self.at = {name: i for i, name in enumerate(names)}
        self.cloudfront = any(name in self.at for name in CLOUDFRONT)

    def _values(self, text: str) -> list[str] | None:
        values = text.split("\t") if "\t" in text else text.split(" ")
        if len(values) != len(self.names):
            return None
        return [unquote(v, errors="surrogateescape") for v in values] if self.cloudfront else values

    def _get(self, values: list[str], name: str) -> str | None:
        i = self.at.get(name)
        return values[i] if i is not None and values[i] != "-" else None

    def query_string(self, text: str) -> str | None:
        """The query string of a data line, or None."""
        values = self._values(text)
        return None if values is None else self._query(values)

    def _query(self, values: list[str]) -> str | None:
        if (query := self._get(values, "cs-uri-query")) is not None:
            return query
        uri = self._get(values, "cs-uri")
        return url_query(uri) if uri else None

    def handle(self, text: str, lineno: int, agg: Aggregate) -> None:
        if text.startswith("#"):
            if text.startswith(FIELDS):
                self._use(text[len(FIELDS):].split())
            agg.ignored["directive line"] += 1
            return
        values = self._values(text)
        if values is None:
            agg.reject("not a line of its #Fields directive (another number of values)", lineno)
            return
        found = first_value(self._query(values) or "", self.param)
        if found is None:
            agg.ignored[NO_PARAM] += 1
            return
        if self.search_paths:
            uri = self._get(values, "cs-uri")
            if self.elsewhere(self._get(values, "cs-uri-stem") or (url_path(uri) if uri else None)):
                agg.ignored[OTHER_PATH] += 1
                return
        agent = self._get(values, "cs(User-Agent)")
        if agent and self.bot(agent.replace("+", " ")):
            agg.ignored[BOT] += 1
            return
        day, clock = self._get(values, "date"), self._get(values, "time")
        ts = self.time(f"{day}T{clock}Z") if day and clock else None
        if not in_window(self.window, ts, lineno, agg):
            return
        user = self._get(values, "cs-username") or self._get(values, "c-ip")  # counted, never stored
        taken = as_number(self._get(values, "time-taken"))
        latency = None if taken is None else taken * 1000 if self.cloudfront else taken
        agg.add(decoded(found), 1, ts, user, latency=latency)

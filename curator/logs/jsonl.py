"""JSON Lines search logs (and OpenSearch UBI query records, which are JSON Lines with
known field names).

Most lines of a big log look alike, so whole blocks are first tried on a fast path:
regular expressions pull the query, timestamp and user out of every line of the block
at C speed. The fast path is only taken when it provably sees one value per line; any
block it cannot vouch for (escaped quotes, nested or repeated keys, other fields to
carry, odd timestamps, over-long lines) is parsed line by line with a JSON parser
(`orjson` when it is installed, else the standard library).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import replace
from itertools import compress
from operator import not_
from typing import Any

from curator.logs.access import BOT, NO_PARAM, OTHER_PATH, SearchPaths
from curator.logs.aggregate import USERS_CAP, Aggregate, parse_time
from curator.logs.fields import Fields, as_number, get_path, guess_fields, id_list
from curator.logs.json_access import UrlQuery, request_path
from curator.logs.lines import MAX_LINE_BYTES, LineHandler, Window, in_window, line_count

try:  # optional speed-up; not a dependency
    import orjson

    loads: Any = orjson.loads
    JSON_ERRORS: tuple[type[Exception], ...] = (orjson.JSONDecodeError, ValueError)
except ImportError:  # pragma: no cover - depends on the environment
    loads = None
    JSON_ERRORS = (ValueError,)


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {text[:20]} is out of range")
    return value


def _int_like_orjson(text: str) -> int | float:
    value = int(text)
    return value if -(2**63) <= value < 2**64 else float(text)


_STRICT = json.JSONDecoder(
    parse_constant=_refuse_constant, parse_float=_finite_float, parse_int=_int_like_orjson
)
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


# Arrays and objects nested deeper than this make a line broken JSON, whichever parser
# reads it and on every Python: below orjson's own limit (1,024) and below what the
# standard library's parser reaches before Python's recursion limit (3.11: about 990;
# 3.12 and later take far more).
MAX_DEPTH = 512
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')


def check_depth(data: bytes | str) -> None:
    """ValueError if `data` nests arrays or objects deeper than MAX_DEPTH. Only a line
    with that many brackets is looked at closely (its strings left out)."""
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    if raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH:
        return
    depth = 0
    for byte in _STRING.sub(b"", raw):
        if byte in b"[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
        elif byte in b"]}":
            depth -= 1


def strict_loads(data: bytes | str) -> Any:
    """The standard library's parser held to what orjson accepts, so a log reads the same
    with or without orjson: NaN, Infinity, out-of-range numbers and lone surrogates
    (`"\\ud800"`) are broken JSON, and integers past 64 bits become floats; so is a
    line nested deeper than MAX_DEPTH."""
    return _decode(_STRICT, data)


def _decode(decoder: json.JSONDecoder, data: bytes | str) -> Any:
    check_depth(data)
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    value = decoder.decode(raw.decode("utf-8"))
    if _SURROGATE_ESCAPE.search(raw):
        json.dumps(value, ensure_ascii=False).encode("utf-8")  # UnicodeEncodeError on a lone one
    return value


if loads is None:  # pragma: no cover - depends on the environment
    loads = strict_loads

# Numbers past a double are valid JSON (RFC 8259 sets no range) that orjson refuses
_HUGE = json.JSONDecoder(parse_constant=_refuse_constant, parse_int=_int_like_orjson)


def loads_record(data: bytes | str) -> Any:
    """A log line's JSON, with `loads`; where that refuses it, the standard library's
    parser again with numbers past a double (`1e400`, 400 digits) as infinity, so a
    field curator does not read cannot make the line broken (nor DuckDB's reading of it,
    which takes them, differ); then without trailing commas, which DuckDB's parser takes
    too (`{"query": "x",}`, see `without_trailing_commas`). Still broken: NaN, Infinity,
    lone surrogates, nesting deeper than MAX_DEPTH."""
    check_depth(data)
    try:
        return loads(data)
    except JSON_ERRORS as exc:
        refused = exc
    try:
        return _decode(_HUGE, data)
    except ValueError:
        pass
    text = data if isinstance(data, str) else data.decode("utf-8", "surrogateescape")
    fixed = without_trailing_commas(text) if _TRAILING_COMMA_TEXT.search(text) else None
    if fixed is None:
        raise refused
    try:
        return loads_record(fixed)
    except JSON_ERRORS:
        raise refused from None


# A string, a comma that a closing bracket follows, JSON whitespace, anything else
_PIECES = re.compile(r'"(?:[^"\\]|\\.)*"|(,)(?=[ \t\n\r]*[\]}])|[ \t\n\r]+|[^"\s,]+|.', re.S)


def without_trailing_commas(text: str) -> str | None:
    """`text` without the commas that close an object or array right after a value
    (`[1,]`, `{"a": 1 , }`), as DuckDB's parser (yyjson's trailing-comma option) reads
    them; None if it has none. A comma after `[`, `{`, `,` or `:` is kept (`[,]`,
    `[1,,]`: broken to both), and so is one inside a string."""
    out: list[str] = []
    last = ""  # the last piece that is not whitespace
    dropped = False
    for m in _PIECES.finditer(text):
        piece = m.group()
        if m.group(1) and last and last[-1] not in "[{,:":
            dropped = True
            continue
        out.append(piece)
        if piece.strip(" \t\n\r"):
            last = piece
    return "".join(out) if dropped else None


# What lenient parsers (DuckDB's, for one) read and the JSON parser here refuses,
# anywhere in a line
NOT_JSON_WORDS = ("NaN", "Infinity")
_NOT_JSON_WORDS = tuple(word.encode() for word in NOT_JSON_WORDS)
# a comma before a closing bracket: read by loads_record, not by `loads` (fast path)
TRAILING_COMMA = r",\s*[\]}]"
_TRAILING_COMMA = re.compile(TRAILING_COMMA.encode())
_TRAILING_COMMA_TEXT = re.compile(TRAILING_COMMA)
_SIMPLE_KEY = re.compile(r"^[A-Za-z_@][\w@-]*$")


def _value_re(key: str, value: str) -> re.Pattern[str]:
    # No line anchors: a literal prefix lets the regex engine skip ahead quickly.
    return re.compile('"' + re.escape(key) + r'":[ ]?' + value)


# A search log's JSON inside another log's lines: the text of an envelope's field
# (Docker's json-file `{"log": "{...}\n", "stream": ..., "time": ...}`, Fluent Bit's,
# Vector's and CloudWatch's `message`), or after a prefix (a container runtime's
# `2026-10-01T08:00:00.1Z stdout F {...}`, Python logging's `2026-10-01 08:00:00,123
# INFO search {...}`). `json_in` names the envelope's field, or IN_LINE.
ENVELOPE_FIELDS = ("log", "message", "msg", "MESSAGE")
IN_LINE = "line"
OTHER_MESSAGE = "line without a JSON record (another message)"
LINE_TIME = "line_time"  # the time a prefix starts with, as a field of the record
_PREFIX_TIME = re.compile(r"\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)?(?=[\s\]|])")


def record_in_line(text: str) -> dict[str, Any] | None:
    """The JSON object that ends a line after a prefix (None if there is none), with
    the time the prefix starts with as LINE_TIME, unless the object has that key."""
    at = text.find("{")
    if at < 0:
        return None
    try:
        record = loads_record(text[at:])
    except JSON_ERRORS:
        return None
    if not isinstance(record, dict):
        return None
    stamp = _PREFIX_TIME.match(text.lstrip("[ "))
    if stamp and LINE_TIME not in record:
        record[LINE_TIME] = stamp.group().replace(",", ".")
    return record


# logfmt (`time=2026-10-01T08:00:00Z level=info msg="search" query="reset password"
# user=u1 hits=3`: Go's logfmt and logrus, Heroku's router, Grafana Loki): a line of
# key=value pairs, a value quoted when it holds spaces; the pairs are the record.
LOGFMT = "logfmt"
_PAIR = re.compile(r'(?<![^\s\[(,])([A-Za-z_][\w.@/-]*)=("(?:[^"\\]|\\.)*"|[^\s"]*)(?=\s|$)')


def record_in_logfmt(text: str) -> dict[str, Any] | None:
    """The key=value pairs of a logfmt line as a record (None if it has fewer than two),
    values as text (a quoted one unescaped), the first of a key repeated winning, and
    the time a prefix starts with as LINE_TIME."""
    pairs = _PAIR.findall(text)
    if len(pairs) < 2:
        return None
    record: dict[str, Any] = {}
    for key, value in pairs:
        if value.startswith('"'):
            try:
                value = json.loads(value)
            except ValueError:  # an escape JSON has not (Go's \x..): the text between the quotes
                value = value[1:-1]
        record.setdefault(key, value)
    stamp = _PREFIX_TIME.match(text.lstrip("[ "))
    if stamp and LINE_TIME not in record:
        record[LINE_TIME] = stamp.group().replace(",", ".")
    return record


def logfmt_records(head: bytes, limit: int = 200) -> list[dict[str, Any]]:
    """The first logfmt records of a block (lines that are not JSON), for guessing."""
    lines = (ln.decode("utf-8", "replace") for ln in head.split(b"\n")[:2000] if ln.strip())
    return [r for r in (record_in_logfmt(ln) for ln in lines if not ln.startswith("{")) if r is not None][:limit]


def logfmt_lines(head: bytes) -> bool:
    """Are most of the first lines logfmt, three pairs or more each?"""
    lines = [ln.decode("utf-8", "replace") for ln in head.split(b"\n")[:200] if ln.strip()][:50]
    found = sum(1 for ln in lines if not ln.lstrip().startswith("{") and len(_PAIR.findall(ln)) >= 3)
    return bool(found) and 2 * found >= len(lines)


def record_in_field(record: dict[str, Any], field: str) -> dict[str, Any] | None:
    """The JSON object held as text in `record[field]` (None if it holds none), with the
    envelope's other fields (its time, say) under its own."""
    value = record.get(field)
    if not isinstance(value, str) or not value.lstrip().startswith("{"):
        return None
    try:
        inner = loads_record(value.strip())
    except JSON_ERRORS:
        return None
    if not isinstance(inner, dict):
        return None
    merged = {k: v for k, v in record.items() if k != field}
    merged.update(inner)
    return merged


def json_after_prefix(head: bytes) -> bool:
    """Do most of the first lines end in a JSON object after a prefix that is not JSON?"""
    lines = [ln.strip() for ln in head.split(b"\n")[:200] if ln.strip()][:50]
    text_lines = [ln.decode("utf-8", "replace") for ln in lines]
    found = sum(1 for ln in text_lines if not ln.startswith("{") and ln.endswith("}") and record_in_line(ln))
    return bool(found) and 2 * found >= len(text_lines)


def sniff_inner(head: bytes, given: Fields) -> tuple[str | None, Fields]:
    """Where a log's search records are (`json_in`: None for the lines themselves, an
    envelope's field, IN_LINE or LOGFMT) and their fields, guessed from the first lines. The
    lines themselves win when they hold the query field; if nothing holds one, the
    fields are the lines' own (whose query, if any, is then None)."""
    records = sniff_records(head)
    resolved = guess_fields(records, given)
    if _has_query(records, resolved):
        return None, resolved
    candidates: list[tuple[str, list[dict[str, Any]]]] = []
    for field in ENVELOPE_FIELDS:
        inner = [r for r in (record_in_field(rec, field) for rec in records) if r is not None]
        candidates.append((field, inner))
    lines = [ln.decode("utf-8", "replace") for ln in head.split(b"\n")[:2000] if ln.strip()]
    candidates.append((IN_LINE, [r for r in (record_in_line(ln) for ln in lines if not ln.startswith("{"))
                                 if r is not None][:200]))
    candidates.append((LOGFMT, logfmt_records(head)))
    for json_in, inner in candidates:
        fields = guess_fields(inner, given)
        if json_in == LOGFMT:
            fields = _counted_hits(inner, fields, given)
        if inner and _has_query(inner, fields):
            return json_in, fields
    return None, resolved


def _counted_hits(records: list[dict[str, Any]], fields: Fields, given: Fields) -> Fields:
    """In logfmt every value is text: a guessed `hits` whose values are all whole numbers
    (`hits=3`) counts results, it names no ids."""
    if given.hits or not fields.hits or fields.results:
        return fields
    values = [get_path(r, fields.hits) for r in records]
    if values and all(isinstance(v, str) and v.isdigit() for v in values if v is not None):
        return replace(fields, hits=None, results=fields.hits)
    return fields


def _has_query(records: list[dict[str, Any]], fields: Fields) -> bool:
    return fields.query is not None and any(isinstance(get_path(r, fields.query), str) for r in records)


class JsonlHandler(SearchPaths, LineHandler):
    name = "jsonl"

    def __init__(self, fields: Fields, window: Window = Window(), max_line_bytes: int = MAX_LINE_BYTES,
                 json_in: str | None = None, url: UrlQuery | None = None):
        """`json_in`: where the records are (sniff_inner); `url`: the query is a URL
        parameter of the query field (a JSON access log, json_access.py)."""
        super().__init__(window, max_line_bytes)
        assert fields.query
        self.fields = fields
        self.json_in = json_in
        self.url = url
        simple = [f for f in (fields.query, fields.time, fields.user) if f]
        self.fast_ok = (
            json_in is None
            and url is None
            and not window
            and fields.count is None
            and all(_SIMPLE_KEY.match(f) for f in simple)
        )
        if self.fast_ok:
            self._q_key = f'"{fields.query}":'
            self._q_re = _value_re(fields.query, r'"([^"\\\n]*)"')
            self._t_re = (
                # a time Python reads: year 1 on, real days (29 February goes the slow
                # way, a regex per stamp cost more), hours to 23, seconds to 59
                _value_re(fields.time, r'"((?!0000)\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])'
                                       r'|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)|02-(?:0[1-9]|1\d|2[0-8]))'
                                       r'T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d)(?:\.\d{1,9})?(?:Z|\+00:00)?"')
                if fields.time
                else None
            )
            self._u_re = _value_re(fields.user, r'"([^"\\\n]+)"') if fields.user else None  # "" names no one
            # Fields the fast path does not extract: a block that has them is parsed in full.
            self._other_keys = [
                f'"{f}"' for f in (fields.hits, fields.clicks, fields.results, fields.latency) if f
            ] + ['"_source"']

    def used(self) -> dict[str, str]:
        """The fields read (and, first, where the records are: `json_in`; last, the URL
        parameter of a JSON access log), as given or guessed."""
        used = {"json_in": self.json_in, **self.fields.given()} if self.json_in else self.fields.given()
        return {**used, "param": self.url.param} if self.url else used

    # -- fast path ---------------------------------------------------------------------

    def try_fast(self, data: bytes, agg: Aggregate) -> bool:
        """Every line must be one JSON object (`{` ... `}`) without what the JSON parser
        refuses, hold the query key exactly once with a plain string value (no escapes:
        the pattern refuses backslashes), no query may be over-long, and the timestamp
        and user patterns must also match once per line; otherwise the block goes
        through the JSON parser."""
        if not self.fast_ok or not data.startswith(b"{") or not data.endswith(b"}\n"):
            return False
        # what the JSON parser refuses in a line (its other fields included): NaN,
        # Infinity, a trailing comma (20 ms per 8 MiB block)
        if any(word in data for word in _NOT_JSON_WORDS) or _TRAILING_COMMA.search(data):
            return False
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return False
        n = text.count("\n")
        if text.count("}\n") != n or text.count(self._q_key) != n or "\x00" in text:
            return False
        # a line nested deeper than MAX_DEPTH is broken: a block that could hold one
        # (more brackets than its lines' own braces and MAX_DEPTH) is parsed line by line
        if text.count("[") + text.count("{") - n > MAX_DEPTH:
            return False
        if any(key in text for key in self._other_keys):
            return False
        queries = self._q_re.findall(text)
        if len(queries) != n:
            return False
        stamps = users = None
        if self._t_re is not None:
            stamps = self._t_re.findall(text)
            if len(stamps) != n:
                return False
        if self._u_re is not None:
            users = self._u_re.findall(text)
            if len(users) != n:
                return False
        # Over-long lines: checking every line's length would cost as much as the rest
        # of the fast path, so a block is only refused when a query is over-long; a
        # well-formed line with a short query and a huge other field is counted.
        if max(map(len, queries)) > self.max_line_bytes:
            return False
        agg.parsed += n
        agg.counts.update(queries)
        if stamps is not None:
            if stamps == sorted(stamps) and (agg.latest is None or stamps[0] >= agg.latest):
                # The usual case, a log written in time order: what came before is
                # earlier, so dict merges (in C) give first and last seen.
                first = dict(zip(reversed(queries), reversed(stamps), strict=True))
                first.update(agg.first)
                agg.first = first
                agg.last.update(zip(queries, stamps, strict=True))
                agg.latest = stamps[-1]
            else:
                agg.latest = max(agg.latest or "", max(stamps))
                first, last = agg.first, agg.last
                for q, ts in zip(queries, stamps, strict=True):
                    seen = first.get(q)
                    if seen is None or ts < seen:
                        first[q] = ts
                    seen = last.get(q)
                    if seen is None or ts > seen:
                        last[q] = ts
        if users is not None:
            _add_users(agg, queries, users)
        return True

    # -- one line ----------------------------------------------------------------------

    def handle(self, text: str, lineno: int, agg: Aggregate) -> None:
        record: Any
        if self.json_in == IN_LINE:
            record = record_in_line(text)
            if record is None:  # an app's other message (`INFO cache warmed`), or JSON cut short
                if "{" in text:
                    agg.reject("broken JSON after the line's prefix", lineno)
                else:
                    agg.ignored[OTHER_MESSAGE] += 1
                return
        elif self.json_in == LOGFMT:
            record = record_in_logfmt(text)
            if record is None or get_path(record, self.fields.query or "") is None:
                # an app's other messages (`level=info msg="started"`) sit among its searches
                agg.ignored[f"line without {self.fields.query!r} (another message)"] += 1
                return
        else:
            try:
                record = loads_record(text)
            except JSON_ERRORS:
                agg.reject("broken JSON", lineno)
                return
            if not isinstance(record, dict):
                agg.reject("not a JSON object", lineno)
                return
            if self.json_in is not None:
                envelope, record = record, record_in_field(record, self.json_in)
                if record is None:  # a container's plain output, or JSON cut short
                    value = envelope.get(self.json_in)
                    if isinstance(value, str) and value.lstrip().startswith("{"):
                        agg.reject(f"broken JSON in {self.json_in!r}", lineno)
                    else:
                        agg.ignored[f"{self.json_in!r} without a JSON record (another message)"] += 1
                    return
        source = record.get("_source")
        if isinstance(source, dict):  # an OpenSearch / Elasticsearch hit
            record = source
        f = self.fields
        assert f.query is not None
        query = get_path(record, f.query)
        if query is None:
            agg.reject(f"no {f.query!r} field", lineno)
            return
        if not isinstance(query, str):
            agg.reject(f"{f.query!r} is not text", lineno)
            return
        if self.url is not None:  # a JSON access log: the search parameter of the URL
            url = query
            query = self.url.value(url)
            if query is None:
                agg.ignored[NO_PARAM] += 1
                return
            if self.search_paths and self.elsewhere(request_path(url)):
                agg.ignored[OTHER_PATH] += 1
                return
            if self.url.bot(record):
                agg.ignored[BOT] += 1
                return
        n = line_count(get_path(record, f.count), f.count, lineno, agg) if f.count else 1
        if n is None:
            return
        ts = parse_time(get_path(record, f.time)) if f.time else None
        if not in_window(self.window, ts, lineno, agg):
            return
        user = get_path(record, f.user) if f.user else None
        results = as_number(get_path(record, f.results)) if f.results else None
        agg.add(
            query,
            n,
            ts,
            str(user) if user is not None and user != "" else None,
            id_list(get_path(record, f.hits)) if f.hits else None,
            id_list(get_path(record, f.clicks)) if f.clicks else None,
            int(results) if results is not None else None,
            as_number(get_path(record, f.latency)) if f.latency else None,
        )


def _add_users(agg: Aggregate, queries: list[str], users: list[str]) -> None:
    """Distinct users per query, exact up to USERS_CAP. Lines of queries whose set is
    already full are dropped in C before the Python loop sees them."""
    full = agg.users_full
    pairs: Iterable[tuple[str, str]] = zip(queries, users, strict=True)
    if full:
        pairs = compress(pairs, map(not_, map(full.__contains__, queries)))
    table = agg.users
    names = agg.user_names  # one string object per user, however many lines
    for q, u in set(pairs):
        known = table.get(q)
        if known is None:
            table[q] = {names.setdefault(u, u)}
        elif len(known) < USERS_CAP:
            known.add(names.setdefault(u, u))
            if len(known) >= USERS_CAP:
                full.add(q)


def sniff_records(head: bytes, limit: int = 200) -> list[dict[str, Any]]:
    """The first JSON objects of a block, read as the reader reads lines (a trailing
    comma too), for guessing field names."""
    out = []
    for raw in head.split(b"\n")[:2000]:
        try:
            record = loads_record(raw)
        except JSON_ERRORS:
            continue
        if isinstance(record, dict):
            source = record.get("_source")
            out.append(source if isinstance(source, dict) else record)
            if len(out) >= limit:
                break
    return out

"""The DuckDB engine: JSON Lines (and UBI) files and Parquet, read and counted by DuckDB.

DuckDB reads each line as one text column (`read_csv` with a delimiter and no quoting,
so a line arrives as it is) and does the per-line work in C++ on all cores: pull the
fields out of the JSON, apply --since/--until, and GROUP BY the exact query. Python
then gets one row per distinct query, which is what the rest of the pipeline needs.
(`read_json` parses faster, but it has no line text for the checks below: the pass over
the text that would prove a log plain cost what read_json saved.)

Exactness comes from a division of labour, not from re-implementing the reference
reader in SQL: a line is counted by DuckDB only when it is plainly well-formed (a JSON
object, the query a string, every other field of a type whose meaning is certain). Every
other line, and every line DuckDB itself refuses (invalid UTF-8, over-long), goes to the
python reader's own `process_line` with its line number, so reasons, line numbers and
values are the python engine's by construction. Those lines are found in a second scan
that only runs when the first one counted some.

Nothing leaves memory: temp_directory is off, so DuckDB cannot spill raw queries to
disk (a query too big for memory_limit fails instead, with a hint).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import compress
from operator import itemgetter
from pathlib import Path
from typing import Any

from curator.errors import CuratorError, InputError
from curator.logs.aggregate import USERS_CAP, Aggregate, _add_ids
from curator.logs.fields import Fields, id_list
from curator.logs.jsonl import NOT_JSON_WORDS, JsonlHandler, loads, loads_record

MEMORY_LIMIT = "256MB"  # counting per query (pass 1)
USERS_MEMORY_LIMIT = "192MB"  # users of the queued queries only
FORMATS = ("jsonl", "ubi", "parquet")
# A `\u` escape in a key: from the escape to the end of its string, then a colon. Looked
# for from the escape on, not from each quote (a regex that begins with a string costs
# 4x: 0.24 CPU s per 400k lines of ASCII-escaped JSON, which Python's json writes); any
# string it could match that is not a key only sends a line to the python reader.
_ESCAPED_KEY = r'\\u[0-9a-fA-F]{4}(?:[^"\\]|\\.)*"\s*:'
# In UTC (or, BigQuery's exports, followed by ` UTC`); hour 24 is the next day to
# DuckDB's cast, no time to the python reader
_ISO = r'"\d{4}-\d\d-\d\d[T ]([01]\d|2[0-3]):\d\d:\d\d(\.\d{1,6})?(Z|\+00(:00)?| UTC| GMT)?"'
# The usual form, as a LIKE pattern (cheap; fixes where each part is) and as strptime's
_ISO_Z = ("'\"____-__-__T__:__:__Z\"'", "'\"%Y-%m-%dT%H:%M:%SZ\"'")
_NUMBER = r"-?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d{1,2})?"  # 1e400 is no number to orjson
# a local time and its offset from UTC (what nginx's $time_iso8601 writes)
_ISO_OFFSET = r'"\d{4}-\d\d-\d\d[T ]([01]\d|2[0-3]):\d\d:\d\d(\.\d{1,6})?[+-]([01]\d|2[0-3]):?[0-5]\d"'
# nginx's `$time_local`
_NGINX_LOCAL = r'"\d\d/[A-Z][a-z]{2}/\d{4}:([01]\d|2[0-3]):\d\d:\d\d [+-]([01]\d|2[0-3])[0-5]\d"'
_EPOCH_S = r'[1-9]\d{9}|"[1-9]\d{9}"'  # epoch seconds, 2001-09-09 to 2286
_EPOCH_MS = r'[1-9]\d{12}|"[1-9]\d{12}"'  # epoch milliseconds, the same years
_PROGRESS_SECONDS = 0.1
_BITMAP = 1 << 16  # bits in the filter of the queries whose users are looked up, at least
_CHUNK = 16 << 20  # bytes the fingerprint thread reads at a time (two hashing blocks)
# A user is the hash of their name as a JSON string: DuckDB writes every text alike
# (`"a"` and `"\u0061"`), a whole number is quoted (`7` and `"7"` are one user, as in
# the python reader), and no two names are alike (inside the quotes a `"` is escaped).
# Cheaper than decoding, and than trimming the quotes (0.2 s on the benchmark).
_USER = "hash(CASE WHEN starts_with(u, '\"') THEN u ELSE '\"' || u || '\"' END)"
_NAMED = "u IS NOT NULL AND u NOT IN ('null', '\"\"')"  # the line names a user
# Pass 1 settles most queries' users with fixed-size aggregates (a list per query cost
# 1.3 s of 3.8 on the 5M-line benchmark): how many lines name a user, the least and the
# greatest user, and how many of SPREAD buckets the users fall in (bits of a HUGEINT:
# 0.1 s, where bitstring_agg over 1,024 buckets cost 0.25). One user (least = greatest)
# or two lines are an exact set; USERS_CAP buckets or more are that many users at least
# (about 200 users fill that many). Other queries' users are counted by a users pass,
# for the queued ones only.
SPREAD = 127
# A query's first/last seen where none of its lines had a time: before year 1, which
# no time is (times outside years 1-9999 go to the python reader)
NO_TIME = -(1 << 62)
_EPOCH = datetime(1970, 1, 1)
_SETTLING = (f"count(hu) AS named, min(hu) AS least, max(hu) AS greatest, "
             f"bit_count(bit_or(1::HUGEINT << (hu % {SPREAD})::HUGEINT)) AS buckets")


# The users of a query asked by USERS_CAP people or more: one shared stand-in (negative,
# so never a DuckDB hash) instead of a set per popular query.
FULL = frozenset(range(-USERS_CAP, 0))


class NotForDuckDB(Exception):
    """This input cannot be read by DuckDB exactly as the python reader would."""


class OutOfMemory(CuratorError):
    """DuckDB needed more than its memory_limit (it never spills log data to disk)."""


def available() -> bool:
    try:
        import duckdb  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass
class Scan:
    """What DuckDB counted, and how many lines it left to the python reader."""

    agg: Aggregate
    doubtful: int  # lines DuckDB did not count: for the python reader
    counted: Counted  # its queries' hashes and what it knows of their users


def json_path(field: str) -> str:
    """`a.b.c` as a DuckDB JSON path; NotForDuckDB for list indexes and odd keys."""
    parts = field.split(".")
    if any(not p or p.isdigit() or '"' in p or "\\" in p for p in parts):
        raise NotForDuckDB(f"the field path {field!r} (list indexes and quoted keys)")
    return "$." + ".".join(f'"{p}"' for p in parts)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class JsonSql:
    """The SQL that turns raw lines into (ok, inside, empty, q, n, ts, u, ids, results, lat)."""

    def __init__(self, fields: Fields, window, wrapped: bool = False):
        """`wrapped`: the log holds OpenSearch / Elasticsearch hits (`_source` objects,
        which the python reader unwraps), so each field is also looked for inside
        `_source`. Otherwise a line with `_source` is left to the python reader."""
        self.fields, self.window, self.wrapped = fields, window, wrapped
        paths, self.values = _field_paths(fields.given(), wrapped)
        self.literal: list[int] = []  # `a.b` as one key wins in the python reader
        for field in fields.given().values():
            if "." in field:
                self.literal.append(len(paths) + 1)
                paths.append(f'$."{field}"')
        self.paths = "[" + ", ".join(_quote(p) for p in paths) + "]"

    def _j(self, role: str) -> str:
        return f"f_{role}"

    def rows(self, source: str) -> str:
        """One row per line of `source` (a `line` column): `ok` (DuckDB can count it),
        `inside` the time window, `empty`, the time as a TIMESTAMP and the JSON text of
        each other field (one parse per line). Texts are grouped as they are and decoded
        in Python once per distinct value, with the python reader's own functions, so
        values cannot differ between engines.

        Every check is evaluated on every line (a projection does not short-circuit
        AND), so each is the cheapest that is exact; a CASE picks the time parser."""
        f = self.fields
        # A key twice: the python reader keeps the last value, DuckDB the first. Checked
        # for the keys that decide what is counted or suggested (a LIKE per key, see
        # _not_twice: 0.1 CPU s per 5M lines for `query`, 0.3 for `user_id`); not for
        # time, user, result count and latency (docs/logs.md).
        keys = {'"' + field.rsplit(".", 1)[-1] + '"' for field in (f.query, f.count, f.hits, f.clicks) if field}
        ok = [
            "j IS NOT NULL",
            "starts_with(line, '{')",
            # valid JSON to DuckDB but not to the python reader (trailing commas are
            # valid to both: see loads_record)
            *(f"NOT contains(line, {_quote(word)})" for word in NOT_JSON_WORDS),
            *(_not_twice(key) for key in sorted(keys)),
            # a key spelled with escapes ("q\u0075ery") may be a second query key
            f"CASE WHEN contains(line, '\\u') THEN NOT regexp_matches(line, {_quote(_ESCAPED_KEY)}) ELSE TRUE END",
            # deeper than the python reader's parsers go (1,000 brackets: a superset)
            "CASE WHEN strlen(line) >= 1000 THEN strlen(line) - strlen(translate(line, '[{', '')) < 1000 ELSE TRUE END",
            # an `_source` field: the python reader unwraps it (the last one, if twice)
            _unless("f_source IS NULL", _not_twice('"_source"') + (" AND NOT starts_with(f_source, '{')"
                                                                   if self.literal else ""))
            if self.wrapped else "f_source IS NULL",
            f"starts_with({self._j('query')}, '\"')",
            *(f"lit_{i} IS NULL" for i in self.literal),
        ]
        values = {"q": self._j("query"), "n": "1", "ts": "NULL::TIMESTAMP", "u": "NULL::VARCHAR",
                  "ids": "NULL::VARCHAR", "results": "NULL::VARCHAR", "lat": "NULL::DOUBLE"}
        if f.count:
            j = self._j("count")
            ok.append(f"regexp_full_match({j}, '[1-9][0-9]{{0,14}}')")
            values["n"] = f"TRY_CAST({j} AS BIGINT)"
        if f.time:
            # Year 0 is a date to DuckDB (1 BC), not to Python.
            j = self._j("time")
            values["ts"] = self._time()
            ok.append(f"({j} IS NULL OR {j} = 'null' OR ts BETWEEN TIMESTAMP '0001-01-01' "
                      "AND TIMESTAMP '9999-12-31 23:59:59.999999')")  # in UTC, years 1 to 9999 (Python's)
        if f.user:
            # a string or a whole number, whose text is what str() gives in the python reader
            j = self._j("user")
            ok.append(_unless(f"{j} IS NULL OR {j} = 'null' OR starts_with({j}, '\"')",
                              f"regexp_full_match({j}, '0|-?[1-9][0-9]{{0,17}}')"))  # past 64 bits: a float to orjson
            values["u"] = j
        if f.hits or f.clicks:
            values["ids"] = " || '\n' || ".join(
                f"coalesce({self._j(r)}, 'null')" for r in ("hits", "clicks") if getattr(f, r)
            )
        if f.results:
            j = self._j("results")
            ok.append(_unless(f"{j} IS NULL OR {j} = 'null'", f"regexp_full_match({j}, '-?[0-9]{{1,15}}')"))
            values["results"] = j
        if f.latency:
            j = self._j("latency")
            ok.append(_unless(f"{j} IS NULL OR {j} = 'null'", f"regexp_full_match({j}, {_quote(_NUMBER)})"))
            values["lat"] = f"TRY_CAST({j} AS DOUBLE)"
        if self.window:
            ok.append("ts IS NOT NULL")  # the python reader rejects a line without one
        columns = ["j[1] AS f_source"]
        columns += [f"{value} AS f_{role}" for role, value in self.values.items()]
        columns += [f"j[{i}] AS lit_{i}" for i in self.literal]
        # try(): NULL where DuckDB cannot parse the line, at half the cost of json_valid
        parse = f"try(json_extract(line, {self.paths}))::VARCHAR[]"
        cols = ", ".join(f"{expr} AS {name}" for name, expr in values.items() if name != "ts")
        return f"""
            SELECT coalesce({' AND '.join(ok)}, false) AS ok,
                   {self._inside()} AS inside, line IS NULL AS empty, line, {', '.join(values)}
            FROM (SELECT *, {values['ts']} AS ts, {cols}
                  FROM (SELECT line, j, {', '.join(columns)}
                        FROM (SELECT line, {parse} AS j FROM {source})))
        """

    def user_rows(self, source: str) -> str:
        """`ok`, `inside`, `q` and `u` per line of a file whose every line an earlier pass
        found `ok`: only the query, the user and (for a window) the time are parsed and
        nothing is checked again (1.1 s for the benchmark log, against 1.4)."""
        roles = ["query", "user", *(["time"] if self.fields.time else [])]
        found, values = _field_paths({r: getattr(self.fields, r) for r in roles}, self.wrapped)
        paths = "[" + ", ".join(_quote(p) for p in found) + "]"
        columns = ", ".join(f"{values[role]} AS f_{role}" for role in roles)
        ts = self._time() if self.fields.time else "NULL::TIMESTAMP"
        return f"""
            SELECT TRUE AS ok, {self._inside()} AS inside, f_query AS q, f_user AS u
            FROM (SELECT *, {ts} AS ts
                  FROM (SELECT {columns}
                        FROM (SELECT try(json_extract(line, {paths}))::VARCHAR[] AS j FROM {source})))
        """

    def _time(self) -> str:
        """The time field as a TIMESTAMP where it is ISO text in UTC or with an offset
        (converted to UTC; up to microseconds, dropped at output), ISO text followed by
        ` UTC` (BigQuery), nginx's `$time_local`, or epoch seconds or
        milliseconds of 10 or 13 digits, as a number or digits in quotes (2001 to 2286:
        no question which they are; other forms are the python reader's). strptime reads
        a year padded with a space, " 026", and the cast hour 24, the python reader
        neither (see _ISO). The python reader takes a number over 1e11 for milliseconds
        and drops the fraction of a second, as `// 1000` does here."""
        j = self._j("time")
        shape, form = _ISO_Z
        digits = f"trim({j}, '\"')::BIGINT"
        return (f"CASE WHEN {j} LIKE {shape} AND NOT starts_with({j}, '\" ') THEN try_strptime({j}, {form}) "
                f"WHEN regexp_full_match({j}, {_quote(_ISO)}) THEN TRY_CAST({j}[2:20] AS TIMESTAMP) "
                f"WHEN regexp_full_match({j}, {_quote(_ISO_OFFSET)}) "
                f"THEN make_timestamp(epoch_us({_with_offset(j)})) "
                f"WHEN regexp_full_match({j}, {_quote(_NGINX_LOCAL)}) "
                f"THEN make_timestamp(epoch_us(try_strptime({j}, '\"%d/%b/%Y:%H:%M:%S %z\"'))) "
                f"WHEN regexp_full_match({j}, {_quote(_EPOCH_S)}) THEN make_timestamp({digits} * 1000000) "
                f"WHEN regexp_full_match({j}, {_quote(_EPOCH_MS)}) THEN make_timestamp({digits} // 1000 * 1000000) END")

    def _inside(self) -> str:
        inside = ["TRUE"]
        if self.window.since:
            inside.append(f"ts >= {_quote(self.window.since)}::TIMESTAMP")
        if self.window.until:
            inside.append(f"ts < {_quote(self.window.until)}::TIMESTAMP")
        return " AND ".join(inside)


def _with_offset(j: str) -> str:
    """SQL: `j`, of the shape _ISO_OFFSET, as a TIMESTAMPTZ. One strptime format per
    shape (T or space, a fraction or not): given a list of formats, DuckDB's strptime
    takes 30 February for 2 March, with one it refuses it, as Python does."""
    def parse(sep: str, fraction: str) -> str:
        return f"try_strptime({j}, '\"%Y-%m-%d{sep}%H:%M:%S{fraction}%z\"')"

    return (f"CASE WHEN {j}[12:12] = 'T' THEN (CASE WHEN contains({j}, '.') THEN {parse('T', '.%f')} "
            f"ELSE {parse('T', '')} END) WHEN contains({j}, '.') THEN {parse(' ', '.%f')} ELSE {parse(' ', '')} END")


def _field_paths(fields: dict[str, str], wrapped: bool) -> tuple[list[str], dict[str, str]]:
    """The JSON paths one parse extracts (`$._source` first, as j[1]) and, by role, the SQL
    for the field's JSON text: if `wrapped`, from inside `_source` when that is an object."""
    paths = ["$._source"]
    values: dict[str, str] = {}
    for role, field in fields.items():
        paths.append(json_path(field))
        values[role] = f"j[{len(paths)}]"
        if wrapped:
            paths.append("$._source" + json_path(field)[1:])
            values[role] = f"CASE WHEN starts_with(j[1], '{{') THEN j[{len(paths)}] ELSE {values[role]} END"
    return paths, values


def _not_twice(key: str) -> str:
    """SQL: the line does not have `key` (quoted) twice. A LIKE pattern that starts with
    a quote costs four times one that starts with a letter (its first character is looked
    for, and a JSON line is full of quotes: 0.5 CPU s on the 5M-line benchmark, against
    0.1), so the key without its opening quote is looked for first. (LIKE wildcards in a
    key only widen either pattern.)"""
    bare = key[1:]
    return _unless(f"line NOT LIKE {_quote(f'%{bare}%{bare}%')}", f"line NOT LIKE {_quote(f'%{key}%{key}%')}")


def _unless(plain: str, check: str) -> str:
    """`plain OR check`, with `check` evaluated only where `plain` is not true: a
    projection evaluates both sides of an OR on every line, a CASE does not (a regex
    per line for the user field cost 0.1 s of CPU on the benchmark)."""
    return f"CASE WHEN {plain} THEN TRUE ELSE {check} END"


class Reader:
    """One DuckDB connection reading one file of `size` bytes; `progress(fraction)` while
    it works. The fraction is what this process has read of the file (Linux), for DuckDB's
    own measure lags: it stood at 47% when pass 1 of the benchmark log had read it all.
    `skip()` names the threads whose reading is not DuckDB's (the fingerprint thread)."""

    def __init__(self, progress, memory_limit: str = MEMORY_LIMIT, size: int = 0, skip=frozenset):
        import duckdb

        self.duckdb = duckdb
        self.con = duckdb.connect(":memory:")
        threads = max(1, min(os.cpu_count() or 1, 8))
        self.con.execute(
            f"SET threads = {threads}; SET memory_limit = '{memory_limit}'; SET temp_directory = ''; "
            "SET enable_progress_bar = true; SET enable_progress_bar_print = false; "
            "SET preserve_insertion_order = false; "  # less memory; only `leftovers` needs order
            # give memory back as soon as a task is done: Python needs it next
            "SET allocator_flush_threshold = '16MB'; SET allocator_bulk_deallocation_flush_threshold = '16MB'"
        )
        self.progress = progress
        self.memory_limit = memory_limit
        self.size, self.skip = size, skip

    def close(self) -> None:
        self.con.close()

    def release(self) -> None:
        """Give the memory DuckDB keeps for reuse back to the OS (100 MB after counting
        the benchmark log) while the connection stays open: a lower limit flushes it."""
        with contextlib.suppress(self.duckdb.OutOfMemoryException):  # its tables need more
            self.con.execute("SET memory_limit = '64MB'")
        self.con.execute(f"SET memory_limit = '{self.memory_limit}'")

    def query(self, sql: str, label: str, share: tuple[float, float] = (0.0, 1.0), params=None) -> Any:
        """Run `sql` (with `params`) to completion, reporting progress as `share` of the whole read."""
        done = threading.Event()
        start = _bytes_read(self.skip()) if self.size else None  # before DuckDB reads a byte

        def watch() -> None:
            while not done.wait(_PROGRESS_SECONDS):
                try:
                    fraction = self.con.query_progress() / 100  # negative: not known
                except Exception:  # the query finished between the check and the call
                    return
                now = _bytes_read(self.skip()) if start is not None else None
                if now is not None:
                    fraction = max(fraction, (now - start) / self.size)
                if fraction >= 0:
                    self.progress(share[0] + (share[1] - share[0]) * min(fraction, 1.0))

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            return self.con.execute(sql, params)
        except self.duckdb.OutOfMemoryException:
            raise OutOfMemory(
                f"{label}: DuckDB ran out of its {self.memory_limit} while counting queries "
                "(and never spills log data to disk)",
                hint="Read it with --engine python.",
            ) from None
        except self.duckdb.IOException as exc:  # a damaged gzip stream, for one
            # the python reader keeps what came before the damage and says where it was
            raise NotForDuckDB(f"DuckDB could not read it: {str(exc).splitlines()[0]}") from None
        except (RuntimeError, self.duckdb.InterruptException) as exc:
            if "interrupted" in str(exc).lower():  # Ctrl-C: DuckDB stopped the query and says so
                raise KeyboardInterrupt from None
            raise
        except self.duckdb.InvalidInputException as exc:
            if "state machine reached an invalid state" in str(exc):
                # DuckDB's CSV reader takes a carriage return for a line break, which
                # would shift every line number after it.
                raise NotForDuckDB("it has carriage returns") from None
            raise
        finally:
            done.set()
            watcher.join()
            self.progress(share[1])


def _bytes_read(skip) -> int | None:
    """Bytes read so far by this process's threads but those in `skip` (`rchar` of each
    in /proc/self/task: every read, from the page cache too); None off Linux."""
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return None
    total, seen = 0, False
    for tid in tids:
        if int(tid) in skip:
            continue
        try:
            with open(f"/proc/self/task/{tid}/io", "rb") as fh:
                total += int(fh.readline().split()[1])  # the first line: `rchar: N`
                seen = True
        except (OSError, IndexError, ValueError):  # a thread that ended meanwhile
            continue
    return total if seen else None


def lines_source(path: Path, compression: str | None, max_line: int) -> str:
    options = [
        "columns = {'line': 'VARCHAR'}", "delim = '\\0'", "quote = ''", "escape = ''", "header = false",
        "new_line = '\\n'", "auto_detect = false", "strict_mode = true", "ignore_errors = true",
        "store_rejects = true", f"max_line_size = {max_line + 1}",  # longer lines are refused
        f"compression = '{ {'gz': 'gzip', 'zst': 'zstd'}.get(compression or '', 'none') }'",
    ]
    return f"read_csv({_quote(str(path))}, {', '.join(options)})"


def parquet_source(path: Path) -> str:
    """Each Parquet row as a JSON object, so the JSON rules (and reasons) apply."""
    return f"(SELECT to_json(t)::VARCHAR AS line FROM read_parquet({_quote(str(path))}) t)"


def first_lines(source, source_sql: str, what: str, rows: int = 2000) -> bytes:
    """The first lines (Parquet: rows as JSON) as DuckDB reads them, for guessing field
    names where Python cannot look itself (Parquet; zstd without `zstandard`)."""
    import duckdb

    with duckdb.connect(":memory:") as con:
        try:
            lines = con.execute(f"SELECT line FROM {source_sql} LIMIT {rows}").fetchall()
        except duckdb.Error as exc:
            raise InputError(source.label, f"not a readable {what} ({str(exc).splitlines()[0]})") from None
    return "\n".join(line or "" for (line,) in lines).encode()


def scan(reader: Reader, source_sql: str, sql: JsonSql, label: str) -> Scan:
    """Pass 1 counts per query (and settles most queries' users, see SPREAD); a second
    pass for hit/click ids when the log has them."""
    fields = sql.fields
    rows = f"({sql.rows(source_sql)})"
    passes = 1 + bool(fields.hits or fields.clicks)
    step = 1 / passes
    settling, hashed = ("", "")
    if fields.user:  # a user's hash once per line, on the lines that name one
        settling, hashed = f", {_SETTLING}", f", CASE WHEN {_NAMED} THEN {_USER} END AS hu"
    # aggregates over a field the log does not have are left out: constants cost nothing
    zero = "sum(n) FILTER (WHERE results IN ('0', '-0'))" if fields.results else "NULL"
    lat_sum, lat_n = ("sum(lat * n)", "sum(n) FILTER (WHERE lat IS NOT NULL)") if fields.latency else ("NULL", "NULL")
    total = "sum(n)::BIGINT" if fields.count else "count(*)"  # a sum of ones per line: 0.1 CPU s on the benchmark
    reader.query(
        f"""CREATE TEMP TABLE counted AS
            SELECT ok, inside, empty, q, count(*) AS lines, {total} AS n,
                   min(ts) AS first, max(ts) AS last,
                   {zero}::BIGINT AS zero, {lat_sum}::DOUBLE AS lat_sum, {lat_n}::BIGINT AS lat_n {settling}
            FROM (SELECT * {hashed} FROM {rows}) GROUP BY ALL""",
        label, (0.0, step),
    )
    reader.release()  # what the pass kept cached (150 MB), before Python decodes its table
    agg, doubtful, counted = _counts(reader, fields)
    reader.con.execute("DROP TABLE counted")
    reader.release()
    done = step
    if fields.hits or fields.clicks:
        roles = [agg.hits if fields.hits else None, agg.clicks if fields.clicks else None]
        ids = reader.query(  # no WHERE: see UsersOf
            f"SELECT ok AND inside, q, ids, sum(n)::BIGINT FROM {rows} GROUP BY ALL",
            label, (done, 1.0),
        )
        while chunk := ids.fetchmany(50_000):
            for taken, raw, texts, n in chunk:
                if not taken:
                    continue
                q = loads(raw)
                for target, text in zip([r for r in roles if r is not None], texts.split("\n"), strict=True):
                    found = id_list(loads_record(text))
                    if found:
                        _add_ids(target.setdefault(q, Counter()), found, n)
    return Scan(agg, doubtful, counted)


def _counts(reader: Reader, fields: Fields) -> tuple[Aggregate, int, Counted]:
    """Pass 1's table `counted` as an Aggregate, the number of doubtful lines, and its
    queries as a `Counted`. A query's JSON text is decoded by the python reader's own
    `loads`, unless the screen for personal data (pipeline's SCREEN) left it out: then
    it has no escape, and its value is the text without the quotes. Columns come as
    numpy arrays: three times faster than rows of tuples. The columns of fields the log
    does not have (NULL for every query) are not fetched: as masked arrays they cost
    0.05 s on the benchmark's 184k queries. First and last seen (microseconds), results
    and latency stay numbers in the `Counted`, made a query's record only for the queued
    queries: as text and dicts for every query, first and last seen alone cost 0.1 s of
    the benchmark's read-back."""
    from curator.logs.pipeline import SCREEN

    users = bool(fields.user)
    agg = Aggregate()
    doubtful = 0
    for ok, empty, lines in reader.con.execute(
        "SELECT ok, empty, sum(lines)::BIGINT FROM counted WHERE NOT (ok AND inside) GROUP BY ALL"
    ).fetchall():
        if not ok and not empty:
            doubtful += lines
            continue
        agg.lines += lines
        agg.ignored["blank line" if empty else "outside --since/--until"] += lines
    # kept as numbers in the Counted (NULL: a number that means none, not a masked array)
    optional = [f"coalesce(epoch_us({name}), {NO_TIME}) AS {name}" for name in ("first", "last") if fields.time]
    optional += [f"coalesce({name}, 0) AS {name}" for name, there in (
        ("zero", fields.results), ("lat_sum", fields.latency), ("lat_n", fields.latency)) if there]
    settling = ["named", "coalesce(least, 0) AS least", "coalesce(greatest, 0) AS greatest", "buckets"] if users else []
    columns = reader.con.execute(
        # hash(q) here, once per query, not in the GROUP BY of every line (0.07 CPU s)
        f"SELECT {', '.join(['q', 'lines', 'n', 'hash(q) AS hq', *optional, *settling])}, "
        # the queries that may hold personal data (one RE2 pass, both cores): 0.2 s less in Python
        f"regexp_matches(lower(q), {_quote(SCREEN)}) AS suspect FROM counted WHERE ok AND inside"
    ).fetchnumpy()
    raws, lines, ns, hashes = (columns[name].tolist() for name in ("q", "lines", "n", "hq"))
    agg.parsed = sum(lines)
    agg.lines += agg.parsed
    # A query the screen left out is printable ASCII with no escape: its JSON text
    # without the quotes is its value. The others are decoded by `loads`.
    suspect = columns["suspect"].tolist()
    queries = list(map(itemgetter(slice(1, -1)), raws))
    for k in compress(range(len(raws)), suspect):
        queries[k] = loads(raws[k])
    agg.suspects = set(compress(queries, suspect))
    counted = Counted(queries, hashes, *(columns[name] for name in ("named", "least", "greatest", "buckets") if users),
                      details={name: columns[name] for name in ("first", "last", "zero", "lat_sum", "lat_n")
                               if name in columns})
    counts = dict(zip(queries, ns, strict=True))
    if len(counts) == len(queries):  # the usual case: no query has two JSON spellings
        agg.counts.update(counts)
    else:
        for q, n in zip(queries, ns, strict=True):
            agg.counts[q] += n  # two JSON texts of one query ("\u00e9" and "é")
    return agg, doubtful, counted


@dataclass
class Details:
    """A query's first and last seen, lines without results and latency, from pass 1."""

    first: str | None = None
    last: str | None = None
    zero_results: int = 0
    latency_sum: float = 0.0
    latency_n: int = 0


class Counted:
    """The queries pass 1 counted, by row of its table: DuckDB's hash of each one's JSON
    text and, with a user field, its user aggregates, with a time field, when each was
    first and last seen (numpy columns, read only for the queries the pipeline asks about)."""

    def __init__(self, queries: list[str], hashes: list[int], named=None, least=None, greatest=None,
                 buckets=None, details: dict[str, Any] | None = None) -> None:
        self.queries, self.hashes = queries, hashes
        self.named, self.least, self.greatest, self.buckets = named, least, greatest, buckets
        # by the fields the log has: first and last seen (microseconds since 1970, UTC;
        # NO_TIME for none), lines with no result (zero), latency sum and lines (lat_*)
        self.details = details or {}

    def details_of(self, wanted: set[str]) -> dict[str, Details]:
        """What pass 1 knows of each of the `wanted` queries besides its count and users,
        as the python reader has it: times as `YYYY-MM-DDTHH:MM:SS` (the fraction dropped)."""
        found: dict[str, Details] = {}
        if not self.details:
            return found
        columns = self.details
        for query, rows in self.rows_of(wanted).items():
            d = Details()
            if "first" in columns:
                firsts = [int(columns["first"][row]) for row in rows if columns["first"][row] != NO_TIME]
                if firsts:
                    d.first = _iso(min(firsts))
                    d.last = _iso(max(int(columns["last"][row]) for row in rows))
            if "zero" in columns:
                d.zero_results = sum(int(columns["zero"][row]) for row in rows)
            if "lat_n" in columns:
                d.latency_n = sum(int(columns["lat_n"][row]) for row in rows)
                d.latency_sum = sum(float(columns["lat_sum"][row]) for row in rows)
            found[query] = d
        return found

    def rows_of(self, wanted: set[str]) -> dict[str, list[int]]:
        """The rows of each of the `wanted` queries that pass 1 counted (two for a query
        spelled two ways in JSON, "\u00e9" and "é"), in one C-level pass: an index of
        every query cost 0.04 s of the read-back, for the few hundred asked about."""
        found: dict[str, list[int]] = {}
        for row in compress(range(len(self.queries)), map(wanted.__contains__, self.queries)):
            found.setdefault(self.queries[row], []).append(row)
        return found

    def users(self, at: int) -> frozenset[int] | set[int] | None:
        """The users of the query in row `at` if pass 1 settled them (none, one, two
        lines' users, or FULL), else None."""
        named = int(self.named[at])
        if named == 0:
            return set()
        least, greatest = int(self.least[at]), int(self.greatest[at])
        if least == greatest:
            return {least}
        if named == 2:
            return {least, greatest}
        return FULL if int(self.buckets[at]) >= USERS_CAP else None


class UsersOf:
    """Distinct users of some queries, asked for once the pipeline knows which are queued.
    Users are DuckDB hashes of their names; a set of USERS_CAP or more is the shared
    FULL stand-in.

    Pass 1 settled most queries (`settled`). For the others another DuckDB pass over the
    file finds the users of the wanted queries alone: DISTINCT over every (query, user)
    pair of a big log is the biggest table of the whole read (4M pairs for 5M lines:
    hundreds of MB without spilling), while only the queued clusters show users."""

    def __init__(self, source_sql: str, sql: JsonSql, label: str, counted: Counted, trusted: bool):
        self.source_sql, self.sql, self.label = source_sql, sql, label
        self.counted = counted
        self.trusted = trusted  # pass 1 counted every line: no line needs checking again

    def settled(self, queries: set[str]) -> tuple[dict[str, frozenset[int] | set[int]], set[str]]:
        """The users of those of `queries` that pass 1 settled, and the other queries."""
        found: dict[str, frozenset[int] | set[int]] = {}
        left: set[str] = set()
        rows = self.counted.rows_of(queries)
        for q in queries:
            known = [self.counted.users(row) for row in rows.get(q, ())]
            if None in known:
                left.add(q)
            else:
                for users in known:
                    _union(found, q, users)
        return found, left

    def __call__(self, queries: set[str]) -> dict[str, frozenset[int] | set[int]]:
        """The users of each of `queries` (those with any), exactly up to USERS_CAP."""
        found, left = self.settled(queries)
        found.update(self.unsettled(left))
        return found

    def unsettled(self, queries: set[str]) -> dict[str, frozenset[int] | set[int]]:
        """The users of `queries`, which pass 1 did not settle, from a users pass."""
        query_of = {self.counted.hashes[row]: q for q, rows in self.counted.rows_of(queries).items() for row in rows}
        found: dict[str, frozenset[int] | set[int]] = {}
        for hq, users in self._users(list(query_of)) if query_of else ():
            if hq in query_of:  # the bitmap lets a few others through
                _union(found, query_of[hq], FULL if users is None else set(users))
        return found

    def _users(self, wanted: list[int]) -> list[tuple[int, list[int] | None]]:
        """(hash, its users or None for USERS_CAP or more) of the `wanted` query hashes,
        in one pass over the file, or in one per half of them if that runs out of memory."""
        try:
            return self._users_pass(wanted)
        except OutOfMemory:
            if len(wanted) < 2:
                raise
            half = len(wanted) // 2
            return self._users(wanted[:half]) + self._users(wanted[half:])

    def _users_pass(self, wanted: list[int]) -> list[tuple[int, list[int] | None]]:
        # A bitmap of the wanted hashes picks their lines in O(1) each (IN (subquery) is
        # planned as a join that may hold the whole log in memory), 16 bits a query so
        # that few other lines pass (they are dropped by the caller): with 65,536 bits
        # for all 117k queries a `--limit 0` import wants, most lines passed and the
        # pass ran out of memory.
        size = min(max(_BITMAP, 1 << (16 * len(wanted) - 1).bit_length()), 1 << 24)
        bits = bytearray(b"0" * size)
        for h in wanted:
            bits[h % size] = ord("1")
        reader = Reader(lambda _fraction: None, USERS_MEMORY_LIMIT)
        try:
            return reader.query(
                # Distinct (query, user) pairs of the wanted queries only, then one list per
                # query: a list per line (list_distinct at the end) would hold every line
                # of a query asked by few people many times. CASEs, not a WHERE: a WHERE is
                # pushed below the projections and would parse every line twice; a user's
                # name is hashed only on the lines of a wanted query.
                f"""SELECT hq, CASE WHEN count(*) < {USERS_CAP} THEN list(hu) END FROM (
                      SELECT DISTINCT hq, hu FROM (
                        SELECT CASE WHEN ok AND inside AND {_NAMED}
                                     AND get_bit($1::BIT, (hash(q) % {size})::INTEGER) = 1
                                    THEN hash(q) END AS hq,
                               CASE WHEN hq IS NOT NULL THEN {_USER} END AS hu
                        FROM ({self.sql.user_rows(self.source_sql) if self.trusted
                               else self.sql.rows(self.source_sql)}))
                      WHERE hq IS NOT NULL)
                    GROUP BY hq""",
                self.label, params=[bits.decode()],
            ).fetchall()
        finally:
            reader.close()


def _iso(microseconds: int) -> str:
    return (_EPOCH + timedelta(microseconds=microseconds)).isoformat(timespec="seconds")


def _union(found: dict, query: str, users: frozenset[int] | set[int]) -> None:
    """Add `users` to what `found` holds for `query` (FULL absorbs the rest)."""
    mine = found.get(query)
    if mine is None:
        found[query] = users
    elif mine is not FULL:
        both = users if users is FULL else mine | users
        found[query] = FULL if len(both) >= USERS_CAP else both


def hash_users(reader: Reader, agg: Aggregate) -> None:
    """The python reader's user names as the hashes the users pass keeps (of the
    name as text), so a user seen on both kinds of line counts once."""
    names = sorted({u for users in agg.users.values() for u in users})
    if not names:
        return
    hashed = dict(reader.con.execute(
        f"SELECT name, {_USER} FROM (SELECT name, to_json(name)::VARCHAR AS u FROM unnest($1::VARCHAR[]) t(name))",
        [names],
    ).fetchall())
    agg.users = {q: {hashed[u] for u in users} for q, users in agg.users.items()}


def refused(reader: Reader) -> list[tuple[int, int]]:
    """(line number, byte offset) of the lines DuckDB's reader refused, in order."""
    return reader.con.execute(
        "SELECT DISTINCT line, line_byte_position FROM reject_errors ORDER BY line"
    ).fetchall()


def leftovers(reader: Reader, source_sql: str, sql: JsonSql, doubtful: int, refused_lines, raw_line,
              handler: JsonlHandler) -> Aggregate:
    """The python reader's verdict on every line DuckDB did not count, in line order.
    `raw_line(offset)` gives the bytes of a refused line."""
    agg = Aggregate()
    pending = list(reversed(refused_lines))
    skipped = 0  # refused lines before the current row: row numbers do not count them

    def take_refused() -> None:
        nonlocal skipped
        line, offset = pending.pop()
        handler.process_line(raw_line(offset), line, agg)
        skipped += 1

    if doubtful:
        reader.con.execute("SET preserve_insertion_order = true")  # row numbers in file order
        rows = reader.con.execute(
            f"""SELECT rn, line FROM (SELECT row_number() OVER () AS rn, ok, empty, line
                                      FROM ({sql.rows(source_sql)})) WHERE NOT ok AND NOT empty"""
        )
        while chunk := rows.fetchmany(10_000):
            for rn, line in chunk:
                while pending and pending[-1][0] <= rn + skipped:
                    take_refused()
                handler.process_line(line.encode(), rn + skipped, agg)
    while pending:
        take_refused()
    return agg


def read(source, fmt: str, head: bytes, fields: Fields, window, max_line: int, progress, settle: bool = True):
    """Read one file with DuckDB into a FileRead, hashing it (and counting its lines) in a
    thread. Raises NotForDuckDB for what only the python reader can do exactly.

    The thread starts with DuckDB, at the lowest priority: it takes the time DuckDB's
    threads leave and the core the Python read-back leaves, and only that (at normal
    priority beside DuckDB it cost 0.4 s on the 5M-line benchmark; started after DuckDB,
    beside grouping and clustering, 0.3 s). `settle`: the FileRead has its fingerprint.
    Without, `FileRead.pending()` gives the fingerprint, or raises NotForDuckDB, later."""
    from curator.logs.reading import FileRead, make_handler, open_stream

    if source.path is None:
        raise NotForDuckDB("a stream: standard input or a pipe")
    if not available():
        raise NotForDuckDB("the duckdb package is not installed")
    if fmt == "parquet":
        source_sql = parquet_source(source.path)
        head = first_lines(source, source_sql, "Parquet file")
    else:
        source_sql = lines_source(source.path, source.compression, max_line)
        if not head and source.compression == "zst":
            head = first_lines(source, source_sql, "zstd file")
    handler = make_handler(source, "jsonl" if fmt == "parquet" else fmt, head, fields, None, window, max_line)
    assert isinstance(handler, JsonlHandler)
    # hits exported from OpenSearch / Elasticsearch (UBI's ubi_queries index, for one)
    sql = JsonSql(handler.fields, window, wrapped=b'"_source"' in head)

    fingerprint = _Fingerprint(source, fmt)
    fingerprint.start()
    size = source.size() or 0
    reader = Reader(_as_bytes(progress, size), size=size, skip=fingerprint.threads)
    try:
        scanned = scan(reader, source_sql, sql, source.label)
        refused_lines = [] if fmt == "parquet" else refused(reader)
        agg = scanned.agg
        if scanned.doubtful or refused_lines:
            with _RawLines(source, max_line, open_stream) as raw_line:
                left = leftovers(reader, source_sql, sql, scanned.doubtful, refused_lines, raw_line, handler)
            hash_users(reader, left)
            agg.merge(left)
    except BaseException:
        fingerprint.cancel()
        raise
    finally:
        reader.close()
    trusted = not (scanned.doubtful or refused_lines)
    users_of = UsersOf(source_sql, sql, source.label, scanned.counted, trusted) if sql.fields.user else None
    read = FileRead(source, fmt, "", agg, handler.fields.given(), "duckdb", users_of,
                    details_of=scanned.counted.details_of)
    lines = agg.lines  # not `agg`: the caller frees it once merged
    if settle:
        read.fingerprint = fingerprint.result(lines)
    else:
        read.pending = lambda: fingerprint.result(lines)
    return read


class _Fingerprint:
    """The content fingerprint of a file (the python reader's: SHA-256 per block) and its
    line count, to check DuckDB skipped no line, worked out in a thread: hashlib, numpy
    and zlib let go of the GIL, so it runs beside DuckDB or Python."""

    def __init__(self, source, fmt: str) -> None:
        from curator.logs.reading import BlockHasher

        self.source, self.fmt = source, fmt
        self.hasher = BlockHasher()
        self.lines: int | None = None
        self.damaged = False
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def threads(self) -> frozenset[int]:
        """The thread reading the file for its fingerprint, while it does."""
        native = self.thread.native_id
        return frozenset([native]) if native is not None and self.thread.is_alive() else frozenset()

    def cancel(self) -> None:
        """Stop early: the file goes to the python reader, which hashes it itself."""
        self.stopped.set()
        if self.thread.is_alive():
            self.thread.join()

    def result(self, lines_read: int) -> str:
        """The fingerprint, once DuckDB read `lines_read` lines; NotForDuckDB if it
        could not have read them all."""
        self.thread.join()
        if self.damaged:
            raise NotForDuckDB("it cannot be read to the end")
        if self.lines is not None and self.lines != lines_read:
            # DuckDB's reader drops a line longer than its buffer without a word
            raise NotForDuckDB(f"DuckDB read {lines_read:,} of its {self.lines:,} lines")
        return _combine(self.hasher)

    def _run(self) -> None:
        # Beside Python's work, each call that needs the GIL waits for the main thread to
        # let it go, up to the switch interval (5 ms): the benchmark log's hashing took
        # 2 s instead of 0.7. So few such calls (big reads straight from the file) and a
        # shorter interval while it runs.
        _lowest_priority()
        interval = sys.getswitchinterval()
        sys.setswitchinterval(min(interval, 0.0005))
        try:
            if self.source.compression is None:
                self._plain()
            else:
                self._stream()
        finally:
            sys.setswitchinterval(interval)

    def _plain(self) -> None:
        """Hash and count an uncompressed file (or hash a Parquet file), 16 MiB at a time."""
        import numpy as np

        buffer = bytearray(_CHUNK)
        view = memoryview(buffer)
        newlines, last = 0, b"\n"
        with self.source.path.open("rb", buffering=0) as fh:
            while not self.stopped.is_set() and (n := fh.readinto(buffer)):
                self.hasher.update(view[:n])
                newlines += int(np.count_nonzero(np.frombuffer(buffer, np.uint8, n) == 10))  # bytes.count holds the GIL
                last = bytes(buffer[n - 1 : n])
        if self.fmt != "parquet":
            self.lines = newlines + (last != b"\n")

    def _stream(self) -> None:
        """Hash a compressed file and count its decompressed lines."""
        from curator.logs.reading import BLOCK, open_stream

        source = self.source
        if source.compression == "zst" and not _has("zstandard"):
            with source.path.open("rb") as fh:  # hash only: no decoder to count lines with
                while not self.stopped.is_set() and (block := fh.read(BLOCK)):
                    self.hasher.update(block)
            return
        newlines, last = 0, b"\n"
        try:
            with open_stream(source, self.hasher, lambda _n: None) as stream:
                while not self.stopped.is_set() and (block := stream.read(BLOCK)):
                    newlines += block.count(b"\n")
                    last = block[-1:]
        except (OSError, EOFError):  # damaged compressed data: DuckDB fails on it too
            self.damaged = True
            return
        self.lines = newlines + (last != b"\n")


def _lowest_priority() -> None:
    """The calling thread to the lowest CPU priority (nice 19), where a thread has one
    of its own (Linux). Waiting for it costs little: a thread waiting for the GIL it
    holds leaves a core idle, which it then gets."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _combine(hasher) -> str:
    from curator.logs.reading import combine

    return combine(hasher.finish())


def _as_bytes(progress, size: int):
    """Turn `fraction done` into the `bytes since the last call` the caller counts."""
    reported = 0

    def report(fraction: float) -> None:
        nonlocal reported
        now = int(size * min(fraction, 1.0))
        if now > reported:
            progress(now - reported)
            reported = now

    return report


class _RawLines:
    """The stored bytes of the lines DuckDB refused, by offset in the (decompressed)
    stream; offsets are asked for in increasing order."""

    def __init__(self, source, max_line: int, open_stream):
        from curator.logs.reading import BlockHasher

        self.max_line = max_line
        self.seekable = source.compression is None
        if self.seekable:
            self.stream = source.path.open("rb")
        else:
            try:
                self.stream = open_stream(source, BlockHasher(), lambda _n: None)
            except InputError as exc:  # zstd without `zstandard`: the python reader says so
                raise NotForDuckDB(str(exc)) from None
        self.position = 0  # of the stream, when not seekable: where `ahead` starts
        self.ahead = bytearray()  # read past the last line asked for: the next may be in it

    def __enter__(self):
        return self.line_at

    def __exit__(self, *_exc) -> None:
        self.stream.close()

    def line_at(self, offset: int) -> bytes:
        """The line at `offset`, cut after max_line + 2 bytes (so an over-long line is one)."""
        want = self.max_line + 2
        if self.seekable:
            self.stream.seek(offset)
            return self.stream.read(want).split(b"\n", 1)[0]
        drop = offset - self.position
        if drop <= len(self.ahead):
            del self.ahead[:drop]
        else:
            drop -= len(self.ahead)
            self.ahead.clear()
            while drop and (skipped := self.stream.read(min(drop, 1 << 20))):
                drop -= len(skipped)
        self.position = offset
        while b"\n" not in self.ahead and len(self.ahead) < want and (more := self.stream.read(1 << 16)):
            self.ahead += more
        return bytes(self.ahead[:want]).split(b"\n", 1)[0]

"""The DuckDB engine's SQL and its connection: the per-line projection that pulls the
fields out of each JSON line and decides which lines DuckDB may count (`JsonSql`), the
sources it reads lines from, and `Reader`, one connection with its limits and errors.

Memory is bounded by the machine, not by the log: DuckDB gets `memory_limit()` and,
given a spill folder (`spill_folder`: private, inside the workspace's `.curator/`,
removed afterwards), writes what does not fit there; the raw text of queries is written
there only transiently, before redaction. Without one (a bare `read_source`) nothing
leaves memory, and a query too big for the limit fails with a hint.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from curator.errors import CuratorError
from curator.logs.fields import Fields
from curator.logs.jsonl import MAX_DEPTH, NOT_JSON_WORDS
from curator.logs.lines import Window

USERS_MEMORY_LIMIT = "192MB"  # users of the queued queries only
# the ids (and users) of the queued queries, with a folder to spill to: Python's own
# tables of the chosen clusters come on top, and more memory buys this pass little speed
LOOKUP_MEMORY_LIMIT = "192MB"
_MB = 1 << 20
FORMATS = ("jsonl", "ubi", "parquet")
# A `\u` escape in a key: from the escape to the end of its string, then a colon. Looked
# for from the escape on, not from each quote (four times cheaper); any string it could
# match that is not a key only sends a line to the python reader.
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
# A user is the hash of their name as a JSON string: DuckDB writes every text alike
# (`"a"` and `"\u0061"`), a whole number is quoted (`7` and `"7"` are one user, as in
# the python reader), and no two names are alike (inside the quotes a `"` is escaped).
USER_HASH = "hash(CASE WHEN starts_with(u, '\"') THEN u ELSE '\"' || u || '\"' END)"
NAMED = "u IS NOT NULL AND u NOT IN ('null', '\"\"')"  # the line names a user
# Pass 1 settles most queries' users with fixed-size aggregates (a list per query cost
# a third of the pass): how many lines name a user, the least and the greatest user,
# and how many of SPREAD buckets the users fall in (bits of a HUGEINT). One user (least = greatest)
# or two lines are an exact set; USERS_CAP buckets or more are that many users at least
# (about 200 users fill that many). Other queries' users are counted by a users pass,
# for the queued ones only.
SPREAD = 127
SETTLING = (f"count(hu) AS named, min(hu) AS least, max(hu) AS greatest, "
            f"bit_count(bit_or(1::HUGEINT << (hu % {SPREAD})::HUGEINT)) AS buckets")


class NotForDuckDB(Exception):
    """This input cannot be read by DuckDB exactly as the python reader would."""


class OutOfMemory(CuratorError):
    """DuckDB needed more than its memory_limit (and its spill folder, if it had one)."""


def machine_memory_limit(meminfo: Path = Path("/proc/meminfo")) -> str:
    """DuckDB's memory for counting: a quarter of the memory available now, 256 to 384 MB
    (what does not fit is spilled: more memory buys little speed, and Python's own
    per-query tables come on top of it). Below 256 MB some of the counting cannot spill
    (the 5M-line benchmark log failed at 128 MB and imported at 192)."""
    return f"{max(256, min(384, available_memory(meminfo) // 4 // _MB))}MB"


def available_memory(meminfo: Path = Path("/proc/meminfo")) -> int:
    """Bytes the system can give a program now without swapping: Linux's MemAvailable,
    which counts the page cache it would drop (MemFree does not: after reading a few GB
    of logs it is a few hundred MB on a machine with 20 GB to spare)."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:  # not Linux, or an old kernel: free pages only
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # not on this system: the middle of the range
        return 1 << 30


@contextlib.contextmanager
def spill_folder(parent: Path) -> Iterator[Path]:
    """A private folder (mode 0700) inside `parent` for DuckDB to spill to, removed
    with everything in it afterwards, whatever happens."""
    parent.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="logs-spill-", dir=parent))  # mkdtemp makes it 0700
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def json_path(field: str) -> str:
    """`a.b.c` as a DuckDB JSON path; NotForDuckDB for list indexes and odd keys."""
    parts = field.split(".")
    if any(not p or p.isdigit() or '"' in p or "\\" in p for p in parts):
        raise NotForDuckDB(f"the field path {field!r} (list indexes and quoted keys)")
    return "$." + ".".join(f'"{p}"' for p in parts)


def quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class JsonSql:
    """The SQL that turns raw lines into (ok, inside, empty, q, n, ts, u, hits, clicks, results, lat)."""

    def __init__(self, fields: Fields, window: Window, wrapped: bool = False) -> None:
        """`wrapped`: the log holds OpenSearch / Elasticsearch hits (`_source` objects,
        which the python reader unwraps), so each field is also looked for inside
        `_source`. Otherwise a line with `_source` is left to the python reader."""
        self.fields, self.window, self.wrapped = fields, window, wrapped
        # `a.b` as one key wins in the python reader: `literal` numbers those keys' paths
        self.paths, self.values, self.literal = self._paths(fields.given())
        # the counting pass has no use for the id lists: serialising them again as JSON
        # text was a fifth of its time on a log with hits and clicks
        self.count_paths, self.count_values, self.count_literal = self._paths(
            {role: field for role, field in fields.given().items() if role not in ("hits", "clicks")})

    def _paths(self, fields: dict[str, str]) -> tuple[str, dict[str, str], list[int]]:
        """The JSON paths of one parse of `fields`, their values (_field_paths), and the
        numbers of the paths of every given field's literal key (`a.b` as one key)."""
        paths, values = _field_paths(fields, self.wrapped)
        literal = []
        for field in self.fields.given().values():
            if "." in field:
                literal.append(len(paths) + 1)
                paths.append(f'$."{field}"')
        return "[" + ", ".join(quote(p) for p in paths) + "]", values, literal

    def rows(self, source: str, ids: bool = True) -> str:
        """One row per line of `source` (a `line` column): `ok` (DuckDB can count it),
        `inside` the time window, `empty`, the time as a TIMESTAMP and the JSON text of
        each other field (one parse per line). Texts are grouped as they are and decoded
        in Python once per distinct value, with the python reader's own functions, so
        values cannot differ between engines. `ids`: parse the hits and clicks too (else
        they are NULL; a line's `ok` does not depend on them).

        Every check is evaluated on every line (a projection does not short-circuit
        AND), so each is the cheapest that is exact; a CASE picks the time parser."""
        f = self.fields
        paths, field_values, literal = ((self.paths, self.values, self.literal) if ids
                                        else (self.count_paths, self.count_values, self.count_literal))
        # A key twice: the python reader keeps the last value, DuckDB the first. Checked
        # for the keys that decide what is counted or suggested (a LIKE per key, see
        # _not_twice); not for time, user, result count and latency (docs/logs.md).
        keys = {'"' + field.rsplit(".", 1)[-1] + '"' for field in (f.query, f.count, f.hits, f.clicks) if field}
        ok = [
            "j IS NOT NULL",
            "starts_with(line, '{')",
            # valid JSON to DuckDB but not to the python reader (trailing commas are
            # valid to both: see loads_record)
            *(f"NOT contains(line, {quote(word)})" for word in NOT_JSON_WORDS),
            *(_not_twice(key) for key in sorted(keys)),
            # a key spelled with escapes ("q\u0075ery") may be a second query key
            f"CASE WHEN contains(line, '\\u') THEN NOT regexp_matches(line, {quote(_ESCAPED_KEY)}) ELSE TRUE END",
            # maybe nested deeper than MAX_DEPTH (a superset: MAX_DEPTH brackets or more)
            f"CASE WHEN strlen(line) >= {MAX_DEPTH} "
            f"THEN strlen(line) - strlen(translate(line, '[{{', '')) < {MAX_DEPTH} ELSE TRUE END",
            # an `_source` field: the python reader unwraps it (the last one, if twice)
            _unless("f_source IS NULL", _not_twice('"_source"') + (" AND NOT starts_with(f_source, '{')"
                                                                   if self.literal else ""))
            if self.wrapped else "f_source IS NULL",
            "starts_with(f_query, '\"')",
            *(f"lit_{i} IS NULL" for i in literal),
        ]
        values = {"q": "f_query", "n": "1", "ts": "NULL::TIMESTAMP", "u": "NULL::VARCHAR",
                  "hits": "NULL::VARCHAR", "clicks": "NULL::VARCHAR", "results": "NULL::VARCHAR",
                  "lat": "NULL::DOUBLE"}
        if f.count:
            j = "f_count"
            ok.append(f"regexp_full_match({j}, '[1-9][0-9]{{0,14}}')")
            values["n"] = f"TRY_CAST({j} AS BIGINT)"
        if f.time:
            # Year 0 is a date to DuckDB (1 BC), not to Python.
            j = "f_time"
            values["ts"] = self._time()
            ok.append(f"({j} IS NULL OR {j} = 'null' OR ts BETWEEN TIMESTAMP '0001-01-01' "
                      "AND TIMESTAMP '9999-12-31 23:59:59.999999')")  # in UTC, years 1 to 9999 (Python's)
        if f.user:
            # a string or a whole number, whose text is what str() gives in the python reader
            j = "f_user"
            ok.append(_unless(f"{j} IS NULL OR {j} = 'null' OR starts_with({j}, '\"')",
                              f"regexp_full_match({j}, '0|-?[1-9][0-9]{{0,17}}')"))  # past 64 bits: a float to orjson
            values["u"] = j
        for role in ("hits", "clicks"):
            if getattr(f, role) and ids:
                values[role] = f"f_{role}"
        if f.results:
            j = "f_results"
            ok.append(_unless(f"{j} IS NULL OR {j} = 'null'", f"regexp_full_match({j}, '-?[0-9]{{1,15}}')"))
            values["results"] = j
        if f.latency:
            j = "f_latency"
            ok.append(_unless(f"{j} IS NULL OR {j} = 'null'", f"regexp_full_match({j}, {quote(_NUMBER)})"))
            values["lat"] = f"TRY_CAST({j} AS DOUBLE)"
        if self.window:
            ok.append("ts IS NOT NULL")  # the python reader rejects a line without one
        columns = ["j[1] AS f_source"]
        columns += [f"{value} AS f_{role}" for role, value in field_values.items()]
        columns += [f"j[{i}] AS lit_{i}" for i in literal]
        # try(): NULL where DuckDB cannot parse the line, at half the cost of json_valid
        parse = f"try(json_extract(line, {paths}))::VARCHAR[]"
        cols = ", ".join(f"{expr} AS {name}" for name, expr in values.items() if name != "ts")
        return f"""
            SELECT coalesce({' AND '.join(ok)}, false) AS ok,
                   {self._inside()} AS inside, line IS NULL AS empty, line, {', '.join(values)}
            FROM (SELECT *, {values['ts']} AS ts, {cols}
                  FROM (SELECT line, j, {', '.join(columns)}
                        FROM (SELECT line, {parse} AS j FROM {source})))
        """

    def trusted_rows(self, source: str, ids: bool = False, users: bool = False) -> str:
        """`ok`, `inside`, `q`, `n`, `u`, `hits` and `clicks` per line of a file whose every
        line an earlier pass found `ok`: only the query and what is asked for are parsed
        (with `ids`, the hits, clicks and count; with `users`, the user; for a window, the
        time), nothing is checked again; what is not asked for is NULL (`n` 1)."""
        f = self.fields
        roles = ["query"]
        if ids:
            roles += [r for r in ("hits", "clicks", "count") if getattr(f, r)]
        if users and f.user:
            roles.append("user")
        if self.window and f.time:
            roles.append("time")
        found, values = _field_paths({r: getattr(f, r) for r in roles}, self.wrapped)
        paths = "[" + ", ".join(quote(p) for p in found) + "]"
        columns = ", ".join(f"{values[role]} AS f_{role}" for role in roles)
        ts = self._time() if "time" in roles else "NULL::TIMESTAMP"
        n = "TRY_CAST(f_count AS BIGINT)" if "count" in roles else "1"
        u = "f_user" if "user" in roles else "NULL::VARCHAR"
        picked = ", ".join(f"{f'f_{r}' if r in roles else 'NULL::VARCHAR'} AS {r}" for r in ("hits", "clicks"))
        return f"""
            SELECT TRUE AS ok, {self._inside()} AS inside, f_query AS q, {n} AS n, {u} AS u, {picked}
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
        j = "f_time"
        shape, form = _ISO_Z
        digits = f"trim({j}, '\"')::BIGINT"
        return (f"CASE WHEN {j} LIKE {shape} AND NOT starts_with({j}, '\" ') THEN try_strptime({j}, {form}) "
                f"WHEN regexp_full_match({j}, {quote(_ISO)}) THEN TRY_CAST({j}[2:20] AS TIMESTAMP) "
                f"WHEN regexp_full_match({j}, {quote(_ISO_OFFSET)}) "
                f"THEN make_timestamp(epoch_us({_with_offset(j)})) "
                f"WHEN regexp_full_match({j}, {quote(_NGINX_LOCAL)}) "
                f"THEN make_timestamp(epoch_us(try_strptime({j}, '\"%d/%b/%Y:%H:%M:%S %z\"'))) "
                f"WHEN regexp_full_match({j}, {quote(_EPOCH_S)}) THEN make_timestamp({digits} * 1000000) "
                f"WHEN regexp_full_match({j}, {quote(_EPOCH_MS)}) THEN make_timestamp({digits} // 1000 * 1000000) END")

    def _inside(self) -> str:
        inside = ["TRUE"]
        if self.window.since:
            inside.append(f"ts >= {quote(self.window.since)}::TIMESTAMP")
        if self.window.until:
            inside.append(f"ts < {quote(self.window.until)}::TIMESTAMP")
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
    a quote costs four times one that starts with a letter (a JSON line is full of
    quotes), so the key without its opening quote is looked for first. (LIKE wildcards
    in a key only widen either pattern.)"""
    bare = key[1:]
    return _unless(f"line NOT LIKE {quote(f'%{bare}%{bare}%')}", f"line NOT LIKE {quote(f'%{key}%{key}%')}")


def _unless(plain: str, check: str) -> str:
    """`plain OR check`, with `check` evaluated only where `plain` is not true: a
    projection evaluates both sides of an OR on every line, a CASE does not."""
    return f"CASE WHEN {plain} THEN TRUE ELSE {check} END"


def lines_source(path: Path, compression: str | None, max_line: int) -> str:
    """Each line of a file as one text column: `read_csv` with a delimiter and no
    quoting, so a line arrives as it is; longer lines are refused (see `refused`)."""
    options = [
        "columns = {'line': 'VARCHAR'}", "delim = '\\0'", "quote = ''", "escape = ''", "header = false",
        "new_line = '\\n'", "auto_detect = false", "strict_mode = true", "ignore_errors = true",
        "store_rejects = true", f"max_line_size = {max_line + 1}",
        f"compression = '{ {'gz': 'gzip', 'zst': 'zstd'}.get(compression or '', 'none') }'",
    ]
    return f"read_csv({quote(str(path))}, {', '.join(options)})"


def parquet_source(path: Path) -> str:
    """Each Parquet row as a JSON object, so the JSON rules (and reasons) apply."""
    return f"(SELECT to_json(t)::VARCHAR AS line FROM read_parquet({quote(str(path))}) t)"


class Reader:
    """One DuckDB connection; `progress(fraction)` while a query runs, from DuckDB's
    own measure of how far it is."""

    def __init__(self, progress: Callable[[float], None], memory_limit: str | None = None,
                 temp: Path | None = None) -> None:
        """`temp`: the folder DuckDB may spill to (none: it keeps everything in memory)."""
        import duckdb

        memory_limit = memory_limit or machine_memory_limit()
        self.duckdb = duckdb
        self.con = duckdb.connect(":memory:")
        threads = max(1, min(os.cpu_count() or 1, 8))
        self.temp = temp
        self.con.execute(
            f"SET threads = {threads}; SET memory_limit = '{memory_limit}'; "
            f"SET temp_directory = {quote(str(temp) if temp else '')}; "
            "SET enable_progress_bar = true; SET enable_progress_bar_print = false; "
            "SET preserve_insertion_order = false; "  # less memory; only `leftovers` needs order
            # give memory back as soon as a task is done: Python needs it next
            "SET allocator_flush_threshold = '16MB'; SET allocator_bulk_deallocation_flush_threshold = '16MB'"
        )
        self.progress = progress
        self.memory_limit = memory_limit

    def close(self) -> None:
        self.con.close()

    def release(self) -> None:
        """Give the memory DuckDB keeps for reuse back to the OS (100 MB after counting
        the benchmark log) while the connection stays open: a lower limit flushes it."""
        with contextlib.suppress(self.duckdb.OutOfMemoryException):  # its tables need more
            self.con.execute("SET memory_limit = '64MB'")
        self.con.execute(f"SET memory_limit = '{self.memory_limit}'")

    def query(self, sql: str, label: str, share: tuple[float, float] = (0.0, 1.0), params: Any = None) -> Any:
        """Run `sql` (with `params`) to completion, reporting progress as `share` of the whole read."""
        done = threading.Event()

        def watch() -> None:
            while not done.wait(_PROGRESS_SECONDS):
                try:
                    fraction = self.con.query_progress() / 100  # negative: not known
                except Exception:  # the query finished between the check and the call
                    return
                if fraction >= 0:
                    self.progress(share[0] + (share[1] - share[0]) * min(fraction, 1.0))

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            return self.con.execute(sql, params)
        except self.duckdb.OutOfMemoryException:
            if self.temp is None:
                raise OutOfMemory(
                    f"{label}: DuckDB ran out of its {self.memory_limit} while counting queries "
                    "(with no folder to spill to)", hint="Import it with `curator import-logs`, which gives DuckDB one.",
                ) from None
            spare = shutil.disk_usage(self.temp.parent).free // _MB
            raise OutOfMemory(
                f"{label}: DuckDB ran out of its {self.memory_limit} of memory while counting queries "
                f"({spare:,} MB free on the disk it spills to, {self.temp.parent}); nothing was imported",
                hint="Free memory (curator gives DuckDB a quarter of what the machine has available, 256 to "
                     "384 MB) or disk space there, or import the log in parts (--since/--until), then run "
                     "the import again.",
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

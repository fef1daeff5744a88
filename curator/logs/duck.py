"""The DuckDB engine: JSON Lines (and UBI) files and Parquet, read and counted by DuckDB,
into the same `FileRead` as the python readers give.

DuckDB reads each line as one text column and does the per-line work in C++ on all
cores: pull the fields out of the JSON, apply --since/--until, and GROUP BY the exact
query (the SQL is in duck_sql.py). Python then gets one row per distinct query, with
its count, first and last seen, results and latency, which is what the rest of the
pipeline needs; hit and click ids are counted per query in SQL too (duck_ids.py), by
default later and for the chosen queries only.

Exactness comes from a division of labour, not from re-implementing the reference
reader in SQL: a line is counted by DuckDB only when it is plainly well-formed (a JSON
object, the query a string, every other field of a type whose meaning is certain). Every
other line, and every line DuckDB itself refuses (invalid UTF-8, over-long), goes to the
python reader's own `process_line`, so reasons, line numbers and values are the python
engine's by construction. The counting pass keeps those lines' texts (`odd`), so they
need no second scan (duck_odd.py).

A thread hashes the file (its fingerprint) and counts its lines after DuckDB's counting
pass: DuckDB's reader drops a line longer than its buffer without a word, so a line
count that differs sends the file to the python reader.
"""

from __future__ import annotations

import importlib.util
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

from curator.errors import InputError
from curator.logs.aggregate import Aggregate
from curator.logs.duck_details import DetailsOf, read_details, write_details
from curator.logs.duck_ids import IdsOf, count_ids
from curator.logs.duck_odd import leftovers, leftovers_of_rows, refused
from curator.logs.duck_sql import (
    FORMATS,
    NAMED,
    SETTLING,
    USER_HASH,
    JsonSql,
    NotForDuckDB,
    Reader,
    lines_source,
    parquet_source,
)
from curator.logs.duck_users import Counted, UsersOf, hash_users
from curator.logs.fields import Fields
from curator.logs.jsonl import LOGFMT, JsonlHandler, loads
from curator.logs.lines import Window
from curator.logs.python_reader import FileRead, make_handler
from curator.logs.sources import BROKEN_STREAM, BlockHasher, Progress, Source, combine, open_stream

__all__ = ["FORMATS", "NotForDuckDB", "available", "read"]

_CHUNK = 16 << 20  # bytes the fingerprint thread reads at a time (two hashing blocks)
_UNQUOTED = "CASE WHEN contains(q, '\\') THEN q ELSE q[2:-2] END AS q"


def available() -> bool:
    try:
        import duckdb  # noqa: F401
    except ImportError:
        return False
    return True


def read(source: Source, fmt: str, head: bytes, fields: Fields, window: Window, max_line: int,
         progress: Progress, temp: Path | None = None, later: bool = False, param: str | None = None) -> FileRead:
    """Read one file with DuckDB into a FileRead, hashing it (and counting its lines) in
    a thread after the counting pass; DuckDB spills to `temp` (a private folder) when
    its memory is not enough. `later`: hits and clicks are not counted now but looked
    up for the queries that need them (the FileRead's `ids_of`, duck_ids.py), and so
    are first and last seen, zero results and latency if there is a `temp` to keep them
    in (`details_of`, duck_details.py). `param`: a URL parameter to read the query from
    (--param), which makes a file a JSON access log if it has no query field: those
    are the python reader's. Raises NotForDuckDB for what only the python reader can
    do exactly."""
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
    handler = make_handler(source, "jsonl" if fmt == "parquet" else fmt, head, fields, param, window, max_line)
    assert isinstance(handler, JsonlHandler)
    if handler.json_in == LOGFMT:
        raise NotForDuckDB("its records are logfmt lines (key=value pairs)")
    if handler.json_in is not None:
        raise NotForDuckDB(f"its search records are JSON inside its lines (json_in={handler.json_in})")
    if handler.url is not None:
        raise NotForDuckDB(f"its queries are the URL parameter {handler.url.param!r} of {handler.fields.query!r}")
    # hits exported from OpenSearch / Elasticsearch (UBI's ubi_queries index, for one)
    sql = JsonSql(handler.fields, window, wrapped=b'"_source"' in head)

    fingerprint = _Fingerprint(source, fmt)
    reader = Reader(_as_bytes(progress, source.size() or 0), temp=temp)
    try:
        with_ids = bool(sql.fields.hits or sql.fields.clicks)
        details = temp / f"details-{uuid.uuid4().hex}.parquet" if later and temp else None
        # after DuckDB's pass (beside its threads it slowed the pass more than it took),
        # beside Python's decoding of its table
        agg, doubtful, counted = scan(reader, source_sql, sql, source.label, with_ids and not later, details,
                                      then=fingerprint.thread.start)
        refused_lines = [] if fmt == "parquet" else refused(reader)
        if with_ids and not later:
            # a file whose every line pass 1 counted needs only the ids parsed again
            rows = sql.trusted_rows(source_sql, ids=True) if not (doubtful or refused_lines) else sql.rows(source_sql)
            count_ids(reader, f"({rows})", sql.fields, (agg.hits, agg.clicks), source.label, (0.5, 1.0))
        left_ids = Aggregate()
        if doubtful or refused_lines:
            odd = _odd(reader)
            if fmt == "parquet":
                left = leftovers_of_rows(reader, source_sql, odd, handler)
            else:
                left = leftovers(source, odd, refused_lines, handler, max_line)
            hash_users(left, reader)
            if later:  # their ids join DuckDB's when the ids are looked up
                left_ids.hits, left_ids.clicks, left.hits, left.clicks = left.hits, left.clicks, {}, {}
            agg.merge(left)
    except BaseException:
        fingerprint.cancel()
        raise
    finally:
        reader.close()
    trusted = not (doubtful or refused_lines)
    ids_of = IdsOf(source_sql, sql, source.label, counted, trusted, temp, left_ids) if with_ids and later else None
    users_of = UsersOf(source_sql, sql, source.label, counted, trusted, temp, ids_of) if sql.fields.user else None
    details_of = DetailsOf(details, counted) if details else None
    content, stored, blocks, length = fingerprint.result(agg.lines)
    return FileRead(source, fmt, content, agg, handler.used(), "duckdb", users_of, ids_of, details_of,
                    also_known_as=stored, blocks=[d.hex() for d in blocks], content_bytes=length)


def first_lines(source: Source, source_sql: str, what: str, rows: int = 2000) -> bytes:
    """The first lines (Parquet: rows as JSON) as DuckDB reads them, for guessing field
    names where Python cannot look itself (Parquet; zstd without `zstandard`)."""
    import duckdb

    with duckdb.connect(":memory:") as con:
        try:
            lines = con.execute(f"SELECT line FROM {source_sql} LIMIT {rows}").fetchall()
        except duckdb.Error as exc:
            raise InputError(source.label, f"not a readable {what} ({str(exc).splitlines()[0]})") from None
    return "\n".join(line or "" for (line,) in lines).encode()


def scan(reader: Reader, source_sql: str, sql: JsonSql, label: str, ids_next: bool = False,
         details: Path | None = None, then: Callable[[], None] = lambda: None) -> tuple[Aggregate, int, Counted]:
    """Pass 1 counts per query (and settles most queries' users, see SPREAD); hit and
    click ids are another pass (`count_ids`: next if `ids_next`, else later, for the
    chosen queries). Returns what `_counts` does: the counts, how many lines are left
    to the python reader, and the queries' `Counted`. `details`: the file to write
    first and last seen, zero results and latency to, instead of the Aggregate. `then`
    is called once DuckDB's pass is done, before Python decodes its table."""
    fields = sql.fields
    rows = f"({sql.rows(source_sql, ids=False)})"  # the ids are another pass
    step = 0.5 if ids_next else 1.0
    settling, hashed = ("", "")
    if fields.user:  # a user's hash once per line, on the lines that name one
        settling, hashed = f", {SETTLING}", f", CASE WHEN {NAMED} THEN {USER_HASH} END AS hu"
    # aggregates over a field the log does not have are left out: constants cost nothing
    zero = "sum(n) FILTER (WHERE results IN ('0', '-0'))" if fields.results else "NULL"
    lat_sum, lat_n = ("sum(lat * n)", "sum(n) FILTER (WHERE lat IS NOT NULL)") if fields.latency else ("NULL", "NULL")
    total = "sum(n)::BIGINT" if fields.count else "count(*)"  # not a sum of ones per line
    reader.query(
        f"""CREATE TEMP TABLE counted AS
            SELECT ok, inside, empty, q, odd, count(*) AS lines, {total} AS n,
                   min(ts) AS first, max(ts) AS last,
                   {zero}::BIGINT AS zero, {lat_sum}::DOUBLE AS lat_sum, {lat_n}::BIGINT AS lat_n {settling}
            FROM (SELECT * {hashed}, CASE WHEN NOT ok AND NOT empty THEN line END AS odd FROM {rows})
            GROUP BY ALL""",
        label, (0.0, step),
    )
    then()
    reader.release()  # what the pass kept cached (150 MB), before Python decodes its table
    agg, doubtful, counted = _counts(reader, fields, details)
    reader.release()
    return agg, doubtful, counted


def _odd(reader: Reader) -> Iterator[tuple[str, int]]:
    """Each distinct doubtful line of pass 1 and how many lines have it (table `odd`)."""
    (made,) = reader.con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'odd'").fetchall()[0]
    if not made:
        return
    rows = reader.con.execute("SELECT odd, n FROM odd")
    while chunk := rows.fetchmany(10_000):
        yield from chunk
    reader.con.execute("DROP TABLE odd")


def _counts(reader: Reader, fields: Fields, details: Path | None = None) -> tuple[Aggregate, int, Counted]:
    """Pass 1's table `counted` as an Aggregate, the number of doubtful lines, and its
    queries as a `Counted` (for their users); the table is dropped, and the doubtful
    lines' texts are kept in table `odd` (see duck_odd.py). A query's JSON text with an
    escape is decoded by the python reader's own `loads`; times come as the python
    reader writes them (`YYYY-MM-DDTHH:MM:SS`, the fraction dropped). With `details` (a
    file), the Aggregate has only the counts: the rest is written there, by row
    (duck_details.py), with the columns Python reads, which it then reads back in
    batches once DuckDB has let go of its table: DuckDB's table, its result and
    Python's objects are never all in memory at once."""
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
    if doubtful:  # their texts, for the python reader (see duck_odd.py)
        reader.con.execute("CREATE TEMP TABLE odd AS SELECT odd, sum(lines)::BIGINT AS n FROM counted "
                           "WHERE NOT ok AND NOT empty GROUP BY odd")
    # no NULLs: a masked array costs more than a value that means none ('' or 0)
    optional = []
    if details:
        optional.append("row")
    elif fields.time:
        optional += [f"coalesce(strftime({name}, '%Y-%m-%dT%H:%M:%S'), '') AS {name}" for name in ("first", "last")]
    if fields.results and not details:
        optional.append("coalesce(zero, 0) AS zero")
    if fields.latency and not details:
        optional += ["coalesce(lat_sum, 0) AS lat_sum", "coalesce(lat_n, 0) AS lat_n"]
    settling = ["named", "coalesce(least, 0) AS least", "coalesce(greatest, 0) AS greatest", "buckets"] if users else []
    # hash(q) here, once per query, not in the GROUP BY of every line
    # a JSON string without a backslash has no escape: its value is the text inside the quotes
    wanted = [_UNQUOTED, "lines", "n", "hash(q) AS hq", *optional, *settling]
    if details:
        rows = write_details(reader, details, [c for c in wanted if c != "row"])
        reader.con.execute("DROP TABLE counted")
        reader.release()
        # the hashes and user aggregates stay in the file, read for the queries asked about (`Counted.at`)
        columns = read_details(reader, details, ["q", "lines", "n", "row"], rows)
    else:
        columns = reader.con.execute(f"SELECT {', '.join(wanted)} FROM counted WHERE ok AND inside").fetchnumpy()
        reader.con.execute("DROP TABLE counted")
    queries = columns["q"] if isinstance(columns["q"], list) else columns["q"].tolist()
    escaped = [k for k, text in enumerate(queries) if "\\" in text]
    for k in escaped:  # the JSON text: decoded by the python reader's own `loads`
        queries[k] = loads(queries[k])
    ns = columns["n"].tolist()
    agg.parsed = int(columns["lines"].sum())
    agg.lines += agg.parsed
    if details:  # the file keeps the queries by row (see Counted)
        counted = Counted(path=details, with_users=users)
        for k in escaped:
            counted.escaped.setdefault(queries[k], []).append(int(columns["row"][k]))
    else:
        settled = {name: columns[name] for name in ("named", "least", "greatest", "buckets") if users}
        counted = Counted(queries, columns["hq"], **settled, with_users=users)
    values = {name: columns[name].tolist() for name in ("first", "last", "zero", "lat_sum", "lat_n")
              if name in columns}
    del columns
    dict.update(agg.counts, zip(queries, ns, strict=True))  # empty so far: no dict of them in between
    if len(agg.counts) == len(queries):  # the usual case: no query has two JSON spellings
        if "first" in values:
            agg.first = {q: t for q, t in zip(queries, values["first"], strict=True) if t}
            agg.last = {q: t for q, t in zip(queries, values["last"], strict=True) if t}
    else:  # two JSON texts of one query ("\u00e9" and "é"): one Aggregate row each, merged
        agg.counts.clear()
        for k, q in enumerate(queries):
            one = Aggregate(counts=Counter({q: ns[k]}))
            if "first" in values and values["first"][k]:
                one.first, one.last = {q: values["first"][k]}, {q: values["last"][k]}
            agg.merge(one)
    for k, z in enumerate(values.get("zero", ())):
        if z:
            agg.zero_results[queries[k]] += z
    for k, n in enumerate(values.get("lat_n", ())):
        if n:
            acc = agg.latency.setdefault(queries[k], [0.0, 0])
            acc[0] += values["lat_sum"][k]
            acc[1] += n
    return agg, doubtful, counted


class _Fingerprint:
    """The content fingerprint of a file (the python reader's: SHA-256 per block) and its
    line count, to check DuckDB skipped no line, worked out in a thread: hashlib, numpy
    and zlib let go of the GIL, so it runs beside DuckDB."""

    def __init__(self, source: Source, fmt: str) -> None:
        self.source, self.fmt = source, fmt
        self.hasher = BlockHasher()
        # a compressed file's fingerprint is of its decompressed content (sources.open_stream)
        self.content = BlockHasher() if source.compression and fmt != "parquet" else None
        self.lines: int | None = None
        self.damaged = False
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def cancel(self) -> None:
        """Stop early: the file goes to the python reader, which hashes it itself."""
        self.stopped.set()
        if self.thread.is_alive():
            self.thread.join()

    def result(self, lines_read: int) -> tuple[str, str | None, list[bytes], int]:
        """The fingerprint, (a compressed file) that of its stored bytes, the content's
        block digests and length, once DuckDB read `lines_read` lines; NotForDuckDB if it
        could not have read them all."""
        self.thread.join()
        if self.damaged:
            raise NotForDuckDB("it cannot be read to the end")
        if self.lines is not None and self.lines != lines_read:
            # DuckDB's reader drops a line longer than its buffer without a word
            raise NotForDuckDB(f"DuckDB read {lines_read:,} of its {self.lines:,} lines")
        stored = self.hasher.finish()
        if self.content is None or self.lines is None:  # hashed as stored only (zstd DuckDB decodes itself)
            return combine(stored), None, stored, self.hasher.length
        content = self.content.finish()
        return combine(content), combine(stored), content, self.content.length

    def _run(self) -> None:
        """Hash the file and count its (decompressed) lines; a Parquet file, or zstd with
        no `zstandard` to decode it, is hashed only."""
        import numpy as np

        source = self.source
        assert source.path is not None
        if self.fmt == "parquet" or (source.compression == "zst" and importlib.util.find_spec("zstandard") is None):
            with source.path.open("rb") as fh:
                while not self.stopped.is_set() and (block := fh.read(_CHUNK)):
                    self.hasher.update(block)
            return
        newlines, last = 0, b"\n"
        try:
            with open_stream(source, self.hasher, lambda _n: None, self.content) as stream:
                while not self.stopped.is_set() and (block := stream.read(_CHUNK)):
                    newlines += int(np.count_nonzero(np.frombuffer(block, np.uint8) == 10))  # bytes.count holds the GIL
                    last = block[-1:]
        except BROKEN_STREAM:  # damaged or cut-off compressed data: DuckDB fails on it too
            self.damaged = True
            return
        self.lines = newlines + (last != b"\n")


def _as_bytes(progress: Progress, size: int) -> Callable[[float], None]:
    """Turn `fraction done` into the `bytes since the last call` the caller counts."""
    reported = 0

    def report(fraction: float) -> None:
        nonlocal reported
        now = int(size * min(fraction, 1.0))
        if now > reported:
            progress(now - reported)
            reported = now

    return report

"""The lines DuckDB does not count itself, for the DuckDB engine: the python reader's
verdict on each, without a second pass over the file.

Two kinds of line are left to the python reader:
- doubtful lines, which DuckDB read but cannot vouch for (broken JSON, a key twice, a
  missing query field, ...): pass 1 keeps their text, grouped, beside its counts
  (`odd` in duck.py), so they cost their own share of the work, not a re-scan;
- refused lines, which DuckDB's reader would not read (invalid UTF-8, over-long): its
  reject table gives their line number and byte offset, and their bytes are read there.

The python reader's own `process_line` gives each distinct doubtful text its verdict. A
line it counts needs no line number; a rejected one does only for the first few line
numbers a reason lists (REJECT_SAMPLES), which `locate` finds by reading the file from
its start, only as far as the last of them (the first odd lines of a log are near its
start, unless the log has only a few).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from typing import IO

from curator.errors import InputError
from curator.logs.aggregate import REJECT_SAMPLES, Aggregate, Rejects
from curator.logs.duck_sql import NotForDuckDB, Reader
from curator.logs.jsonl import JsonlHandler
from curator.logs.sources import BlockHasher, Source, open_stream

_BOM = b"\xef\xbb\xbf"
_BLOCK = 1 << 20  # bytes `locate` reads at a time: it stops as soon as it found its lines


def refused(reader: Reader) -> list[tuple[int, int]]:
    """(line number, byte offset) of the lines DuckDB's reader refused, in order."""
    return reader.con.execute(
        "SELECT DISTINCT line, line_byte_position FROM reject_errors ORDER BY line"
    ).fetchall()


def leftovers(source: Source, odd: Iterator[tuple[str, int]], refused_lines: list[tuple[int, int]],
              handler: JsonlHandler, max_line: int) -> Aggregate:
    """The python reader's verdict on every line DuckDB did not count: `odd` gives each
    distinct doubtful text and how many lines have it, `refused_lines` the (line number,
    offset) of each refused line."""
    agg, wanted = leftovers_by_text(odd, handler)
    by_line = Aggregate()
    if refused_lines:
        with _RawLines(source, max_line) as raw_line:
            for line, offset in refused_lines:
                handler.process_line(raw_line(offset), line, by_line)
    if wanted:
        need = Counter({reason: min(REJECT_SAMPLES, rej.count) for reason, rej in agg.rejected.items()})
        for reason, lines in locate(source, wanted, need).items():
            agg.rejected[reason].lines = lines
    for reason, rej in by_line.rejected.items():  # the first line numbers of both kinds
        mine = agg.rejected.setdefault(reason, Rejects())
        mine.count += rej.count
        mine.lines = sorted(mine.lines + rej.lines)[:REJECT_SAMPLES]
    by_line.rejected = {}
    agg.merge(by_line)
    return agg


def leftovers_by_text(odd: Iterator[tuple[str, int]], handler: JsonlHandler) -> tuple[Aggregate, dict[bytes, str]]:
    """The python reader's verdict on each distinct doubtful text (`n` lines each):
    counted lines are counted, rejected ones counted by reason, without line numbers;
    and the text of each rejected one, with its reason."""
    agg = Aggregate()
    wanted: dict[bytes, str] = {}
    for text, n in odd:
        raw = text.encode()
        one = Aggregate()
        handler.process_line(raw, 0, one)
        if not one.rejected:  # counted (or ignored) by the python reader: no line number needed
            agg.merge(one)
            for _ in range(n - 1):
                handler.process_line(raw, 0, agg)
            continue
        (reason,) = one.rejected
        wanted[raw] = reason
        agg.lines += n
        agg.rejected.setdefault(reason, Rejects()).count += n
    return agg, wanted


def locate(source: Source, wanted: dict[bytes, str], need: Counter[str]) -> dict[str, list[int]]:
    """The first line numbers (up to `need[reason]`) of the lines whose bytes are in
    `wanted`, reading the (decompressed) file from its start and stopping once found."""
    found: dict[str, list[int]] = {reason: [] for reason in need}
    missing = sum(need.values())
    try:
        stream: IO[bytes] = open_stream(source, BlockHasher(), lambda _n: None)
    except InputError as exc:  # zstd without `zstandard`: the python reader says so
        raise NotForDuckDB(str(exc)) from None
    with stream:
        lineno = 0
        rest = b""
        while missing and (block := stream.read(_BLOCK)):
            lines = (rest + block).split(b"\n")
            rest = lines.pop()
            if lineno == 0 and lines and lines[0].startswith(_BOM):
                lines[0] = lines[0][len(_BOM):]
            if not wanted.keys().isdisjoint(lines):  # in C: most blocks have none
                for k, line in enumerate(lines):
                    reason = wanted.get(line)
                    if reason is not None and len(found[reason]) < need[reason]:
                        found[reason].append(lineno + k + 1)
                        missing -= 1
            lineno += len(lines)
        if missing and rest in wanted:  # the last line, without a newline
            found[wanted[rest]].append(lineno + 1)
    return found


def leftovers_of_rows(reader: Reader, source_sql: str, odd: Iterator[tuple[str, int]],
                      handler: JsonlHandler) -> Aggregate:
    """`leftovers` for a Parquet file, whose "lines" are rows (as JSON objects): the row
    numbers of rejected ones are found by DuckDB, in a scan that only keeps those rows."""
    agg, wanted = leftovers_by_text(odd, handler)
    if wanted:
        reader.con.execute("SET preserve_insertion_order = true")  # row numbers in file order
        found: dict[str, list[int]] = {}
        rows = reader.con.execute(
            f"SELECT rn, line FROM (SELECT row_number() OVER () AS rn, line FROM {source_sql}) "
            "WHERE line IN (SELECT unnest($1::VARCHAR[])) ORDER BY rn",
            [[t.decode() for t in wanted]],
        )
        while chunk := rows.fetchmany(10_000):
            for rn, line in chunk:
                lines = found.setdefault(wanted[line.encode()], [])
                if len(lines) < REJECT_SAMPLES:
                    lines.append(rn)
        for reason, lines in found.items():
            agg.rejected[reason].lines = lines
    return agg


class _RawLines:
    """The stored bytes of the lines DuckDB refused, by offset in the (decompressed)
    stream; offsets are asked for in increasing order."""

    def __init__(self, source: Source, max_line: int) -> None:
        self.max_line = max_line
        self.seekable = source.compression is None
        self.stream: IO[bytes]
        if self.seekable:
            assert source.path is not None
            self.stream = source.path.open("rb")
        else:
            try:
                self.stream = open_stream(source, BlockHasher(), lambda _n: None)
            except InputError as exc:  # zstd without `zstandard`: the python reader says so
                raise NotForDuckDB(str(exc)) from None
        self.position = 0  # of the stream, when not seekable: where `ahead` starts
        self.ahead = bytearray()  # read past the last line asked for: the next may be in it

    def __enter__(self) -> Callable[[int], bytes]:
        return self.line_at

    def __exit__(self, *_exc: object) -> None:
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

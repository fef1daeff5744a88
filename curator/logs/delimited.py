"""CSV and TSV with a header row; also pre-aggregated exports (query + count column).

A quoted field may hold line breaks (RFC 4180), but in a search log a quote left open
is far likelier a broken row than a query spanning lines: a line that ends inside a
quote is read as the start of a multi-line row only if that row closes within
`MAX_SPAN` lines with the header's number of columns. Otherwise the line is rejected
as `unterminated quote` (with its number) and the next line is read as its own row, so
one stray quote never swallows the rows after it."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import IO, Any

from curator.logs.aggregate import Aggregate, parse_time
from curator.logs.fields import GUESSES, Fields, as_number, id_list
from curator.logs.lines import MAX_LINE_BYTES, Window, in_window, line_count
from curator.logs.sources import BROKEN_STREAM

MAX_SPAN = 20  # lines a quoted field may span
UNTERMINATED = "unterminated quote (the line was not read as a row)"


def sniff_delimiter(head: bytes, name: str) -> str:
    first = head.split(b"\n", 1)[0]
    if name.endswith(".tsv") or first.count(b"\t") > first.count(b","):
        return "\t"
    if first.count(b";") > first.count(b","):
        return ";"
    return ","


def guess_columns(header: list[str], given: Fields) -> Fields:
    lowered = {h.strip().lower(): h for h in header}
    guessed = {}
    for role, names in GUESSES.items():
        for name in names:
            if name in lowered:
                guessed[role] = lowered[name]
                break
    return given.merged(guessed)


def read_delimited(
    stream: IO[bytes],
    delimiter: str,
    given: Fields,
    agg: Aggregate,
    label: str,
    window: Window = Window(),
    max_line_bytes: int = MAX_LINE_BYTES,
) -> Fields:
    """Read every row into `agg`; returns the fields used. Raises InputError when the
    query column is missing."""
    from curator.errors import InputError

    csv.field_size_limit(max(max_line_bytes, 1024))
    text = io.TextIOWrapper(stream, encoding="utf-8", errors="surrogateescape", newline="")
    lines = _Lines(text, delimiter, agg)
    reader = csv.reader(lines, delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        return given
    except csv.Error as exc:
        raise InputError(label, f"cannot read the header row: {exc}", 1) from None
    header = [h.lstrip("\ufeff").strip() for h in header]
    lines.columns = len(header)
    fields = guess_columns(header, given)
    index = {h: i for i, h in enumerate(header)}
    for role, column in fields.given().items():
        if column not in index:
            raise InputError(
                label,
                f"no {column!r} column for the {role}; the header has: {', '.join(header)}",
                1,
                hint="Name the column with --query-field (or --count-field, --time-field).",
            )
    if fields.query is None:
        raise InputError(
            label,
            f"no query column (looked for {', '.join(GUESSES['query'])}); "
            f"the header has: {', '.join(header)}",
            1,
            hint="Name it with --query-field COLUMN.",
        )
    agg.lines += 1
    agg.ignored["header row"] += 1  # so that lines = parsed + rejected + ignored
    col = {role: index[name] for role, name in fields.given().items()}
    for row in _rows(reader, lines, agg):
        lineno = lines.number
        agg.lines = lineno
        if not row or all(not c.strip() for c in row):
            agg.ignored["blank line"] += 1
            continue
        if not _utf8(row):
            agg.reject("invalid UTF-8", lineno)
            continue
        if len(row) <= col["query"]:
            agg.reject(f"row has no {fields.query!r} value", lineno)
            continue

        def cell(role: str, row: list[str] = row) -> str | None:
            i = col.get(role)
            return row[i] if i is not None and i < len(row) and row[i] != "" else None

        n = line_count(cell("count"), fields.count, lineno, agg) if fields.count else 1
        if n is None:
            continue
        ts = parse_time(cell("time")) if "time" in col else None
        if not in_window(window, ts, lineno, agg):
            continue
        results = as_number(cell("results"))
        agg.add(
            row[col["query"]],
            n,
            ts,
            cell("user"),
            id_list(cell("hits")),
            id_list(cell("clicks")),
            int(results) if results is not None else None,
            as_number(cell("latency")),
        )
    agg.lines = max(agg.lines, lines.number)  # rejected lines after the last row count too
    return fields


def _utf8(row: list[str]) -> bool:
    """Was the row valid UTF-8? (Bytes that were not are the surrogates surrogateescape
    left, which no encoder takes; looked for in C, not character by character: that
    was a third of the time of a big CSV.)"""
    text = "".join(row)
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _rows(reader: Any, lines: _Lines, agg: Aggregate) -> Iterator[list[str]]:
    while True:
        try:
            yield next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            reason = "line too long" if "field larger" in str(exc) else "malformed CSV row"
            agg.reject(reason, lines.number)
        except UnicodeError:  # pragma: no cover - surrogateescape makes this rare
            agg.reject("invalid UTF-8", lines.number)


class _Lines:
    """The physical lines of a delimited file, for `csv.reader`, with a line left in an
    open quote passed on only when the row it starts closes properly (see the module
    docstring); `number` is the number of the last line passed on."""

    def __init__(self, text: IO[str], delimiter: str, agg: Aggregate) -> None:
        self.text, self.delimiter, self.agg = text, delimiter, agg
        self.columns: int | None = None  # the header's, once read
        self.number = 0
        self._ahead: list[str] = []  # lines read ahead and not yet passed on
        self.broken: Exception | None = None  # what the stream raised when it broke off
        self._lines = self._generate()

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        return next(self._lines)

    def _next_line(self) -> str | None:
        if self._ahead:
            return self._ahead.pop(0)
        if self.broken is not None:
            return None
        try:
            return self.text.readline() or None
        except BROKEN_STREAM as exc:  # a cut-off or damaged compressed file: the rows before are kept
            self.broken = exc
            return None

    def _generate(self) -> Iterator[str]:
        while (line := self._next_line()) is not None:
            if '"' not in line or self.columns is None or not _open_at_end(line, self.delimiter):
                self.number += 1
                yield line
                continue
            span = self._span(line)
            if span is None:
                self.number += 1
                self.agg.reject(UNTERMINATED, self.number)
                continue
            for part in span:
                self.number += 1
                yield part
        if self.broken is not None:  # what is left from the break counts as one unreadable line
            self.number += 1
            self.agg.reject(f"unreadable data ({self.broken})", self.number)

    def _span(self, first: str) -> list[str] | None:
        """`first` and the lines that close its open quote into one row of the header's
        width, or None (the lines read ahead are kept for reading as rows)."""
        span = [first]
        while len(span) < MAX_SPAN:
            line = self._next_line()
            if line is None:
                break
            span.append(line)
            record = "".join(span)
            if not _open_at_end(record, self.delimiter):
                rows = list(csv.reader(io.StringIO(record, newline=""), delimiter=self.delimiter))
                if len(rows) == 1 and len(rows[0]) == self.columns:
                    return span
                break
        self._ahead = span[1:] + self._ahead
        return None


def _open_at_end(text: str, delimiter: str) -> bool:
    """Does `text` end inside a quoted field?"""
    try:
        for _row in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True):
            pass
    except csv.Error as exc:
        return "unexpected end of data" in str(exc)
    return False


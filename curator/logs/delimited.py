"""CSV and TSV with a header row; also pre-aggregated exports (query + count column).

A quoted field may hold line breaks (RFC 4180), but in a search log a quote left open
is far likelier a broken row than a query spanning lines: a line that ends inside a
quote is read as the start of a multi-line row only if that row closes within
`MAX_SPAN` lines with the header's number of columns. Otherwise the line is rejected
as `unterminated quote` (with its number) and the next line is read as its own row, so
one stray quote never swallows the rows after it.

Spreadsheet and analytics exports (Google Analytics' search terms, for one) add what a
table of rows does not have: `#` comment lines and blank lines before the header, counts
written with thousands separators (`"1,234"`), the header again where files were joined
(`cat jan.csv feb.csv`), and a second table after a blank line (`Day Index,Total Unique
Searches`). The comment lines and the repeated header are ignored and counted; a count
with separators is its number; a row after a blank line that is a header of another
table (no cell empty or a number, one of them a column name of this header, not where
the query goes) is ignored with the rows under it up to the next blank line, so a date
of that table is no query."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from typing import IO, Any

from curator.logs.aggregate import Aggregate, parse_time
from curator.logs.fields import GUESSES, Fields, as_count, as_number, id_list
from curator.logs.lines import MAX_LINE_BYTES, Window, in_window, line_count
from curator.logs.sources import BROKEN_STREAM

MAX_SPAN = 20  # lines a quoted field may span
UNTERMINATED = "unterminated quote (the line was not read as a row)"
OTHER_TABLE = "row of another table (after a blank line)"
# a whole number in groups of three: 1,234 or 1 234 (also the no-break spaces French
# writes); with `;` between columns (a European spreadsheet) also 1.234
_GROUPED = {",": re.compile(r"\d{1,3}(?:[,\u00a0\u202f ]\d{3})+"), ";": re.compile(r"\d{1,3}(?:[.\u00a0\u202f ]\d{3})+")}


def sniff_delimiter(head: bytes, name: str) -> str:
    first = next((ln for ln in head.split(b"\n") if not _preamble(ln.decode("utf-8", "replace"))), b"")
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


# column names that say "how often" (an export of counts: Google Analytics' Total Unique
# Searches, Search Console's Impressions, a `count` or `n`)
_COUNTISH = re.compile(r"search(?:es)?\b|count|impressions|sessions|events|visits|volume|frequency|total|^n$|^num")
COUNTISH_ROWS = 1000  # rows whose values a count-like column must hold whole numbers in

# a valid UTF-8 sequence of two bytes or more: one in a file's head says it is UTF-8
_UTF8_SEQUENCE = re.compile(rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}")


def sniff_encoding(head: bytes) -> str:
    """`utf-8`, or `cp1252` for a file its head shows to be Windows-1252 (what Excel's
    "CSV (Comma delimited)" writes in Western Europe): not UTF-8, and not one valid
    UTF-8 sequence beyond ASCII in it, so no UTF-8 file with a stray byte is taken for one."""
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start >= len(head) - 3:  # a character cut at the end of the head
            return "utf-8"
        return "utf-8" if _UTF8_SEQUENCE.search(head) else "cp1252"
    return "utf-8"


def read_delimited(
    stream: IO[bytes],
    delimiter: str,
    given: Fields,
    agg: Aggregate,
    label: str,
    window: Window = Window(),
    max_line_bytes: int = MAX_LINE_BYTES,
    encoding: str = "utf-8",
    hints: list[str] | None = None,
) -> Fields:
    """Read every row into `agg`; returns the fields used. Raises InputError when the
    query column is missing. `encoding`: the file's (sniff_encoding). `hints` gets a
    word for the user where the file looks like an export of counts read without
    --count-field (each query once, a column of whole numbers named like a count)."""
    from curator.errors import InputError

    csv.field_size_limit(max(max_line_bytes, 1024))
    text = io.TextIOWrapper(stream, encoding=encoding, errors="surrogateescape", newline="")
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
                lines.number,
                hint="Name the column with --query-field (or --count-field, --time-field).",
            )
    if fields.query is None:
        raise InputError(
            label,
            f"no query column (looked for {', '.join(GUESSES['query'])}); "
            f"the header has: {', '.join(header)}",
            lines.number,
            hint="Name it with --query-field COLUMN.",
        )
    agg.lines = lines.number
    agg.ignored["header row"] += 1  # so that lines = parsed + rejected + ignored
    col = {role: index[name] for role, name in fields.given().items()}
    grouped = _GROUPED.get(delimiter, _GROUPED[","])
    after_blank = other_table = False
    # without a count column: the columns that might be one, while their first rows hold whole numbers
    countish = {} if fields.count else {
        i: h for i, h in enumerate(header) if i not in col.values() and _COUNTISH.search(h.lower())}
    for row in _rows(reader, lines, agg):
        lineno = lines.number
        agg.lines = lineno
        if not row or all(not c.strip() for c in row):
            agg.ignored["blank line"] += 1
            after_blank, other_table = True, False
            continue
        if after_blank:
            after_blank = False
            other_table = _other_header(row, header, col["query"])
        if other_table:
            agg.ignored[OTHER_TABLE] += 1
            continue
        if [c.strip() for c in row] == header:  # files joined end to end, each with its header
            agg.ignored["header row"] += 1
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

        n = line_count(_count_text(cell("count"), grouped), fields.count, lineno, agg) if fields.count else 1
        if countish and agg.parsed < COUNTISH_ROWS:
            for i in [i for i in countish if i >= len(row) or as_count(_count_text(row[i], grouped)) is None]:
                del countish[i]
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
    if countish and hints is not None and agg.parsed >= 2 and max(agg.counts.values()) == 1:
        name = next(iter(countish.values()))
        hints.append(f"each query is in it once, beside a column of whole numbers ({name!r}): if that is how "
                     f"often it was asked, import it with --count-field {name!r} (each row counted once now)")
    return fields


def _preamble(line: str) -> str | None:
    """What a line before the header is when it is no part of the table (`comment line`,
    `blank line`), else None."""
    stripped = line.lstrip("\ufeff").strip()
    return "blank line" if not stripped else "comment line" if stripped.startswith("#") else None


def _count_text(value: str | None, grouped: re.Pattern[str]) -> str | None:
    """A count's text with its thousands separators taken out (`1,234` is 1234)."""
    if value is None:
        return None
    value = value.strip()
    return re.sub(r"[^0-9]", "", value) if grouped.fullmatch(value) else value


def _other_header(row: list[str], header: list[str], query: int) -> bool:
    """Is `row`, the first after a blank line, the header of another table: no cell
    empty or a number, and one of them (not where the query goes) one of the header's
    names (`Day Index,Total Unique Searches` under `Search Term,Total Unique Searches,...`)?"""
    cells = [c.strip() for c in row]
    if len(cells) < 2 or any(not c or as_number(c) is not None for c in cells):
        return False
    names = set(header)
    return any(c in names for i, c in enumerate(cells) if i != query)


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
        self._skipped = 0  # comment and blank lines before the header
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
            if self.number == 0 and line.startswith("\ufeff"):  # a BOM (Excel's): before the header's quotes
                line = line[1:]
            if self.columns is None and self.number == self._skipped and (kind := _preamble(line)):
                self.number += 1
                self._skipped += 1
                self.agg.ignored[kind] += 1
                continue
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


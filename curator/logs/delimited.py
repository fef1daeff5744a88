"""CSV and TSV with a header row; also pre-aggregated exports (query + count column)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import IO, Any

from curator.logs.aggregate import Aggregate, parse_time
from curator.logs.fields import GUESSES, Fields, as_number, id_list
from curator.logs.lines import MAX_LINE_BYTES, Window, in_window, line_count


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
    reader = csv.reader(text, delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        return given
    except csv.Error as exc:
        raise InputError(label, f"cannot read the header row: {exc}", 1) from None
    header = [h.lstrip("\ufeff").strip() for h in header]
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
    for row in _rows(reader, agg):
        lineno = reader.line_num
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


def _rows(reader: Any, agg: Aggregate) -> Iterator[list[str]]:
    while True:
        try:
            yield next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            reason = "line too long" if "field larger" in str(exc) else "malformed CSV row"
            agg.reject(reason, reader.line_num)
        except UnicodeError:  # pragma: no cover - surrogateescape makes this rare
            agg.reject("invalid UTF-8", reader.line_num)


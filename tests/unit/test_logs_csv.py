"""CSV with a stray quote: the broken line is reported with its number and the rows after
it are still read; a quoted field that really spans lines is kept."""

from __future__ import annotations

from pathlib import Path

from curator.logs.delimited import UNTERMINATED
from curator.logs.reading import read_source
from curator.logs.sources import Source


def _read(path: Path):
    return read_source(Source(path.name, path), engine="python")


def test_an_unterminated_quote_is_reported_and_the_next_rows_are_read(tmp_path: Path) -> None:
    log = tmp_path / "searches.csv"
    log.write_text(
        "ts,user,query,hits\n"
        "2026-10-01T10:00:00Z,u1,dhl cutoff time,3\n"
        '2026-10-01T10:01:00Z,u2,"label backlog how to drain,3\n'  # the quote never closes
        "2026-10-01T10:02:00Z,u3,ups pickup window,1\n"
        "2026-10-01T10:03:00Z,u4,royal mail label,2\n"
        '2026-10-01T10:04:00Z,u5,"parser error, code E1042",2\n'
    )
    read = _read(log)
    assert set(read.agg.counts) == {"dhl cutoff time", "ups pickup window", "royal mail label", "parser error, code E1042"}
    assert read.agg.rejected[UNTERMINATED].lines == [3]
    assert read.agg.lines == 6 == read.agg.parsed + 1 + 1  # header + the broken line


def test_a_stray_quote_in_the_last_line_is_counted_as_a_line(tmp_path: Path) -> None:
    log = tmp_path / "searches.tsv"
    log.write_text('query\tn\ndhl cutoff\t1\n"webhook retry\t2\n')
    read = _read(log)
    assert set(read.agg.counts) == {"dhl cutoff"}
    assert read.agg.rejected[UNTERMINATED].lines == [3] and read.agg.lines == 3


def test_a_quoted_field_that_spans_lines_and_closes_is_one_row(tmp_path: Path) -> None:
    log = tmp_path / "searches.csv"
    log.write_text('query,user\n"two lines\nof one query",u1\nnext query,u2\n')
    read = _read(log)
    assert set(read.agg.counts) == {"two lines\nof one query", "next query"}
    assert not read.agg.rejected and read.agg.lines == 4

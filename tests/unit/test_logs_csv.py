"""CSV with a stray quote: the broken line is reported with its number and the rows after
it are still read; a quoted field that really spans lines is kept. Analytics and
spreadsheet exports: comment lines, grouped counts, joined files, a second table."""

from __future__ import annotations

from pathlib import Path

import pytest

from curator.errors import InputError
from curator.logs.delimited import OTHER_TABLE, UNTERMINATED
from curator.logs.fields import Fields
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


GA_EXPORT = (
    "# ----------------------------------------\n"
    "# All Web Site Data\n"
    "# Search Terms\n"
    "# 20261001-20261031\n"
    "# ----------------------------------------\n"
    "\n"
    "Search Term,Total Unique Searches,Results Pageviews / Search,% Search Exits\n"
    'carrier e1042 error,"1,234",2.10,12.5%\n'
    "how to reset password,987,1.50,10.0%\n"
    '"dhl cutoff time, saturday","12,345,678",1.1,3%\n'
    "\n"
    "Day Index,Total Unique Searches\n"
    "10/1/26,120\n"
    "10/2/26,98\n"
)


def test_an_analytics_export_is_read_past_its_comments_with_grouped_counts_and_no_second_table(tmp_path: Path) -> None:
    log = tmp_path / "Analytics Search Terms 20261001-20261031.csv"
    log.write_text(GA_EXPORT)
    read = read_source(Source(log.name, log), engine="python", fields=Fields(count="Total Unique Searches"))
    assert read.fields["query"] == "Search Term"
    assert dict(read.agg.counts) == {"carrier e1042 error": 1234, "how to reset password": 987,
                                     "dhl cutoff time, saturday": 12_345_678}
    assert not read.agg.rejected
    assert read.agg.ignored == {"comment line": 5, "blank line": 2, "header row": 1, OTHER_TABLE: 3}
    assert read.agg.lines == 14 == read.agg.parsed + sum(read.agg.ignored.values())


def test_a_header_after_comments_is_found_without_an_extension_and_its_line_is_named(tmp_path: Path) -> None:
    log = tmp_path / "ga4-export"
    log.write_bytes(
        b"\xef\xbb\xbf# Search terms\n# Account: Example\n#\n# Start date: 20261001\n"
        b"Search term\tEvent count\tTotal users\ncarrier e1042 error\t1,234\t900\nreset password\t987\t12\n"
    )
    read = read_source(Source(log.name, log), engine="auto", fields=Fields(count="Event count"))
    assert read.format == "tsv" and read.agg.ignored["comment line"] == 4
    assert dict(read.agg.counts) == {"carrier e1042 error": 1234, "reset password": 987}
    with pytest.raises(InputError) as caught:
        read_source(Source(log.name, log), engine="auto", fields=Fields(count="Searches"))
    assert caught.value.line == 5 and "'Searches'" in str(caught.value)


def test_files_joined_end_to_end_have_their_repeated_header_ignored(tmp_path: Path) -> None:
    log = tmp_path / "all.csv"
    log.write_text("query,n\nfoo bar,3\nbaz qux,2\nquery,n\nfoo bar,1\n")
    read = read_source(Source(log.name, log), engine="python", fields=Fields(count="n"))
    assert dict(read.agg.counts) == {"foo bar": 4, "baz qux": 2}
    assert read.agg.ignored["header row"] == 2 and not read.agg.rejected


def test_thousands_separators_follow_the_delimiter_and_a_decimal_count_is_still_rejected(tmp_path: Path) -> None:
    european = tmp_path / "fr.csv"
    european.write_text("requête;nombre\nmot de passe oublié;1 234\nréinitialiser compte;1.500\nautre;2,5\n")
    read = read_source(Source(european.name, european), engine="python", fields=Fields(query="requête", count="nombre"))
    assert dict(read.agg.counts) == {"mot de passe oublié": 1234, "réinitialiser compte": 1500}
    assert read.agg.rejected["'nombre' is not a whole number up to 10^15"].lines == [4]
    comma = tmp_path / "en.csv"
    comma.write_text('query,n\n"a b",1.234\n"c d","1,23"\n"e f","1,234.5"\n')
    read = read_source(Source(comma.name, comma), engine="python", fields=Fields(count="n"))
    assert not read.agg.counts  # 1.234 is no whole number, 1,23 and 1,234.5 are no grouped ones
    assert read.agg.rejected["'n' is not a whole number up to 10^15"].lines == [2, 3, 4]


def test_rows_after_a_blank_line_are_still_rows_unless_a_new_header_starts_there(tmp_path: Path) -> None:
    log = tmp_path / "searches.csv"
    log.write_text("query,user,hits\nfoo bar,u1,3\n\nshort row,u2\n\nwebhook retry,u3,1\n\nuser,hits\nnot a query,4\n")
    read = read_source(Source(log.name, log), engine="python")
    assert set(read.agg.counts) == {"foo bar", "short row", "webhook retry"}
    assert read.agg.ignored[OTHER_TABLE] == 2  # "user,hits" and the row under it


def test_an_excel_csv_with_a_bom_before_a_quoted_header_is_read(tmp_path: Path) -> None:
    log = tmp_path / "export.csv"
    log.write_bytes('\ufeff"Suchbegriff";"Anzahl"\r\n"passwort zurücksetzen";"1.234"\r\n"versand dhl";"56"\r\n'
                    .encode())
    read = read_source(Source(log.name, log), engine="python", fields=Fields(query="Suchbegriff", count="Anzahl"))
    assert dict(read.agg.counts) == {"passwort zurücksetzen": 1234, "versand dhl": 56}
    guessed = tmp_path / "guessed.csv"
    guessed.write_bytes(b'\xef\xbb\xbf"query","n"\r\n"vpn setup","3"\r\n')
    assert read_source(Source(guessed.name, guessed), engine="python").fields["query"] == "query"


def test_a_windows_1252_csv_is_read_as_such_and_a_utf8_one_with_a_stray_byte_is_not(tmp_path: Path) -> None:
    """Excel's "CSV (Comma delimited)" writes Windows-1252 in Western Europe: every row
    with an umlaut was rejected as invalid UTF-8."""
    legacy = tmp_path / "export.csv"
    legacy.write_bytes(b"Suchbegriff;Anzahl\r\npasswort zur\xfccksetzen;12\r\nstra\xdfe \x80 preis;3\r\nvpn;1\r\n")
    read = read_source(Source(legacy.name, legacy), engine="python", fields=Fields(query="Suchbegriff", count="Anzahl"))
    assert dict(read.agg.counts) == {"passwort zurücksetzen": 12, "straße € preis": 3, "vpn": 1}
    assert read.fields["encoding"] == "cp1252" and not read.agg.rejected
    utf8 = tmp_path / "utf8.csv"
    utf8.write_bytes("query\ncafé menu\n".encode() + b"broken \xff byte\n" + "straße\n".encode())
    read = read_source(Source(utf8.name, utf8), engine="python")
    assert set(read.agg.counts) == {"café menu", "straße"} and "encoding" not in read.fields
    assert read.agg.rejected["invalid UTF-8"].lines == [3]


def test_search_console_and_bing_exports_have_their_query_column_guessed(tmp_path: Path) -> None:
    console = tmp_path / "Queries.csv"
    console.write_text("Top queries,Clicks,Impressions,CTR,Position\nreset password,12,340,3.5%,4.2\nvpn setup,3,90,3.3%,7.9\n")
    read = read_source(Source(console.name, console), engine="python", fields=Fields(count="Impressions"))
    assert read.fields["query"] == "Top queries" and dict(read.agg.counts) == {"reset password": 340, "vpn setup": 90}
    bing = tmp_path / "bing.csv"
    bing.write_text("Keyword,Impressions,Clicks\ncarrier e1042,"
                    '"1,204",33\n')
    read = read_source(Source(bing.name, bing), engine="python", fields=Fields(count="Impressions"))
    assert read.fields["query"] == "Keyword" and dict(read.agg.counts) == {"carrier e1042": 1204}


def test_an_export_of_counts_read_without_count_field_gets_a_hint_and_a_log_does_not(ws, tmp_path: Path) -> None:
    from curator.logs import import_logs

    export = tmp_path / "Analytics Search Terms.csv"
    export.write_text(GA_EXPORT)
    summary = import_logs(ws, [export], dry_run=True)
    assert "--count-field 'Total Unique Searches'" in (summary.files[0].hint or "")
    assert import_logs(ws, [export], dry_run=True, count_field="Total Unique Searches").files[0].hint is None
    log = tmp_path / "searches.csv"  # a raw log: a query asked twice, its result count in a column
    log.write_text("query,result_count,user\nvpn setup,3,u1\nreset password,0,u2\nvpn setup,3,u3\n")
    assert import_logs(ws, [log], dry_run=True).files[0].hint is None
    once = tmp_path / "once.csv"  # every query once, but no column says how often
    once.write_text("query,user\nvpn setup,u1\nreset password,u2\n")
    assert import_logs(ws, [once], dry_run=True).files[0].hint is None

"""Reading one source: which engine reads it (DuckDB for JSON Lines and Parquet files,
the python readers for everything else), and the checks every engine shares."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from curator.errors import InputError
from curator.logs import duck
from curator.logs.fields import Fields
from curator.logs.lines import MAX_LINE_BYTES, Window
from curator.logs.python_reader import FileRead, detect_format, read_python
from curator.logs.sources import Progress, Resume, Source, read_head
from curator.logs.text import timestamped

# Below these sizes (stored), `auto` reads a file with python: DuckDB's start costs more
# than its speed saves (they break even near 100k lines of the benchmark log)
DUCKDB_MIN_BYTES = 8 << 20
DUCKDB_MIN_COMPRESSED_BYTES = 2 << 20
FORMATS = ("auto", "jsonl", "ubi", "csv", "tsv", "text", "access", "elb", "w3c", "solr", "parquet")
ENGINES = ("auto", "duckdb", "python")


# read whole even once grown: what the start of the file says how to read (a CSV's
# header, a W3C log's latest #Fields directive), and Parquet
WHOLE_FORMATS = ("csv", "tsv", "w3c", "parquet")


def read_source(
    source: Source,
    fmt: str = "auto",
    fields: Fields = Fields(),
    param: str | None = None,
    window: Window = Window(),
    max_line: int = MAX_LINE_BYTES,
    progress: Progress = lambda _n: None,
    engine: str = "auto",
    temp: Path | None = None,
    later: bool = False,
    search_paths: tuple[str, ...] = (),
    resume: Resume | None = None,
) -> FileRead:
    """Read one source completely into a FileRead: with DuckDB (JSON Lines and Parquet
    files, see curator/logs/duck.py) or with the python readers; `auto` takes DuckDB
    where the input allows it, except for small files (DUCKDB_MIN_BYTES, or
    DUCKDB_MIN_COMPRESSED_BYTES compressed), and falls back to python where DuckDB
    cannot read a file exactly as the python reader would. `temp`: a private folder
    DuckDB may spill to (see duck_sql.spill_folder); without one it keeps to memory.
    `later`: DuckDB leaves hits and clicks to a look-up (`FileRead.ids_of`) for
    the queries that need them, and, given `temp`, first and last seen, zero results
    and latency too (`FileRead.details_of`); the python readers count them all the same.
    `search_paths`: a request log's searches are the requests to these paths (--path).
    `resume`: a log that grew since it was imported is read from where that import
    ended, by the python reader (DuckDB cannot start inside a file); WHOLE_FORMATS whole."""
    head = read_head(source)
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):  # PowerShell's `>` writes UTF-16
        raise InputError(source.label, "is UTF-16 text; logs are read as UTF-8",
                         hint="Convert it first: iconv -f UTF-16 -t UTF-8 IN > OUT "
                              "(PowerShell: Get-Content IN | Set-Content -Encoding utf8 OUT).")
    head = head.removeprefix(b"\xef\xbb\xbf")  # for guessing only: the readers drop a BOM themselves
    if fmt == "auto":
        fmt = detect_format(source, head)
        if fmt == "text" and timestamped(head):
            raise InputError(
                source.label,
                "its lines start with a date and time: a log of another kind, not one query per line "
                "(read as text, each whole line would be queued as a query)",
                hint="JSON Lines (also after a prefix), logfmt, CSV, access (nginx, Apache), load balancer "
                     "(ALB), W3C (IIS, CloudFront) and Solr logs are read as such; for another, write its "
                     "queries out one per line (or as JSON Lines); if each line really is a query, say "
                     "--format text.",
            )
    if engine == "auto" and fmt != "parquet" and _small(source):
        engine = "python"  # DuckDB's start costs more than it saves on a small file
    if resume is not None and fmt not in WHOLE_FORMATS:
        engine = "python"  # only the lines after the imported ones: where DuckDB cannot start
    else:
        resume = None
    if engine != "python" and fmt in duck.FORMATS and source.path is not None:
        try:
            return duck.read(source, fmt, head, fields, window, max_line, progress, temp, later, param)
        except duck.NotForDuckDB as exc:
            if engine == "duckdb" or fmt == "parquet":
                raise InputError(
                    source.label, f"the duckdb engine cannot read it exactly ({exc})",
                    hint="Use --engine python (or auto, which picks it for such files).",
                ) from None
    elif engine == "duckdb":
        what = "streams (standard input, pipes)" if source.path is None else f"{fmt} files"
        raise InputError(
            source.label, f"the duckdb engine reads JSON Lines and Parquet files, not {what}",
            hint="Use --engine auto or python.",
        )
    if fmt == "parquet":
        raise InputError(source.label, "Parquet files are read by the duckdb engine", hint="Drop --engine python.")
    return read_python(source, fmt, head, fields, param, window, max_line, progress, search_paths, resume)


def _small(source: Source) -> bool:
    """Is the file too small for DuckDB's start to pay? (A zstd file only if the python
    reader can read it: that needs `zstandard`.)"""
    size = source.size() or 0
    if source.compression is None:
        return size < DUCKDB_MIN_BYTES
    if source.compression == "zst" and importlib.util.find_spec("zstandard") is None:
        return False
    return size < DUCKDB_MIN_COMPRESSED_BYTES

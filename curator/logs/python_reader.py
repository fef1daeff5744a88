"""The python reader: what format a file is, the line handler for it, and reading a
whole source through that handler into an `Aggregate` (a `FileRead`, the output of
every reader, the DuckDB engine's too)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

from curator.errors import InputError
from curator.logs import json_access, solr, w3c
from curator.logs.access import (
    ELB_LINE,
    LINE,
    AccessHandler,
    ElbHandler,
    SearchPaths,
    guess_param,
    looks_like_access_log,
    looks_like_elb_log,
)
from curator.logs.aggregate import Aggregate
from curator.logs.delimited import read_delimited, sniff_delimiter, sniff_encoding
from curator.logs.fields import QUERY_FIELDS, UBI, URL_PARAMS, Fields
from curator.logs.jsonl import (
    LOGFMT,
    JsonlHandler,
    json_after_prefix,
    logfmt_lines,
    logfmt_records,
    sniff_inner,
    sniff_records,
)
from curator.logs.lines import LineHandler, Window
from curator.logs.sources import (
    BLOCK,
    BROKEN_STREAM,
    BlockHasher,
    Progress,
    Resume,
    Source,
    combine,
    open_stream,
)
from curator.logs.text import TextHandler

if TYPE_CHECKING:
    from curator.logs.duck_details import DetailsOf
    from curator.logs.duck_ids import IdsOf
    from curator.logs.duck_users import UsersOf


def detect_format(source: Source, head: bytes) -> str:
    stem = source.stem
    if stem.endswith(".parquet") or head.startswith(b"PAR1"):
        return "parquet"
    first = next((ln.strip() for ln in head.split(b"\n") if ln.strip()), b"")
    if stem.endswith((".jsonl", ".ndjson", ".json")) or first.startswith(b"{"):
        return "jsonl"
    if stem.endswith(".csv"):
        return "csv"
    if stem.endswith(".tsv"):
        return "tsv"
    if w3c.looks_like_w3c(head):  # IIS, CloudFront
        return "w3c"
    if looks_like_access_log(head):
        return "access"
    if looks_like_elb_log(head):  # AWS ALB, classic ELB
        return "elb"
    if solr.looks_like_solr_log(head):
        return "solr"
    if json_after_prefix(head):  # an app's or a container runtime's lines, each ending in JSON
        return "jsonl"
    if logfmt_lines(head):  # key=value pairs: read as records, like JSON
        return "jsonl"
    if stem.endswith(".txt"):
        return "text"
    # an export's header row, after any `#` comment lines (Google Analytics writes some)
    row = next((ln.strip() for ln in head.split(b"\n") if ln.strip() and not ln.strip().startswith(b"#")), b"")
    header = [c.strip().strip('"').lower() for c in row.decode("utf-8", "replace").replace("\t", ",").split(",")]
    if len(header) > 1 and any(h in QUERY_FIELDS for h in header):
        return "tsv" if b"\t" in row else "csv"
    return "text"


def make_handler(
    source: Source, fmt: str, head: bytes, fields: Fields, param: str | None, window: Window, max_line: int
) -> LineHandler:
    if fmt in ("jsonl", "ubi"):
        given = fields.merged(UBI) if fmt == "ubi" else fields
        json_in, resolved = sniff_inner(head, given)
        url = None
        if json_in is None and (found := json_access.sniff(sniff_records(head), given, resolved, param)):
            resolved, url = found  # a JSON access log: the query is a URL parameter
        elif json_in is None and logfmt_lines(head) and (
                found := json_access.sniff(logfmt_records(head), given, resolved, param)):
            json_in, (resolved, url) = LOGFMT, found  # logfmt requests (Heroku's router: path="/search?q=...")
        if resolved.query is None:
            records = sniff_records(head) or (logfmt_records(head) if logfmt_lines(head) else [])
            keys = sorted({k for r in records for k in r})[:20]
            raise InputError(
                source.label,
                f"no query field found (looked for {', '.join(QUERY_FIELDS)}); "
                + (f"the records have: {', '.join(keys)}" if keys else "no line is a JSON object"),
                hint="Name it with --query-field (dotted paths like request.params.q work).",
            )
        return JsonlHandler(resolved, window, max_line, json_in, url)
    if fmt in ("access", "elb"):
        chosen = param or guess_param(head, LINE if fmt == "access" else ELB_LINE)
        if chosen is None:
            raise InputError(
                source.label,
                f"no search parameter found in the request URLs (looked for {', '.join(URL_PARAMS)})",
                hint="Name it with --param NAME.",
            )
        return (AccessHandler if fmt == "access" else ElbHandler)(chosen, window, max_line)
    if fmt == "solr":
        return solr.SolrHandler(param or "q", window, max_line)
    if fmt == "w3c":
        names = w3c.columns(head)
        if names is None:
            raise InputError(source.label, "no #Fields: directive in its first lines (a W3C extended log names its fields there)",
                             hint="Read it with --format text or access instead.")
        chosen = param or w3c.guess_param(head)
        if chosen is None:
            raise InputError(
                source.label,
                f"no search parameter found in cs-uri-query (looked for {', '.join(URL_PARAMS)})",
                hint="Name it with --param NAME.",
            )
        return w3c.W3CHandler(chosen, names, window, max_line)
    return TextHandler(window, max_line)


@dataclass
class FileRead:
    source: Source
    format: str
    fingerprint: str
    agg: Aggregate
    fields: dict[str, str]
    engine: str = "python"
    # duckdb engine: the users of the queries its first pass did not settle, counted
    # for the queued ones only (agg.users has the users it settled and those of the
    # lines the python reader handled)
    users_of: UsersOf | None = None
    # duckdb engine read with `later`: hits and clicks, looked up for the queued queries
    ids_of: IdsOf | None = None
    # ... and (given a spill folder) first and last seen, zero results and latency
    details_of: DetailsOf | None = None
    # a compressed file: the fingerprint of its stored bytes, which builds before
    # 2026-12-04 recorded (`fingerprint` is of the decompressed content)
    also_known_as: str | None = None
    # the content's block digests (hex) and length, for knowing the file once it grew
    blocks: list[str] | None = None
    content_bytes: int | None = None
    # read from there on: the lines before were imported (a grown log, sources.Resume)
    after_lines: int | None = None
    hint: str | None = None  # a word for the user on how the file may be meant to be read


def read_python(source: Source, fmt: str, head: bytes, fields: Fields, param: str | None, window: Window,
                max_line: int, progress: Progress, search_paths: tuple[str, ...] = (),
                resume: Resume | None = None) -> FileRead:
    """Read one source completely with the python readers, hashing it on the way; a
    grown log (`resume`: reading.read_source passes one for line formats only) from
    where its import ended."""
    hasher = resume.hasher if resume else BlockHasher()
    start, first_line = (resume.offset, resume.lines + 1) if resume else (0, 1)
    content = BlockHasher() if source.compression else None
    agg = Aggregate()
    hints: list[str] = []
    if fmt in ("csv", "tsv"):
        delimiter = "\t" if fmt == "tsv" else sniff_delimiter(head, source.stem)
        encoding = sniff_encoding(head)
        with open_stream(source, hasher, progress, content) as stream:
            used = read_delimited(stream, delimiter, fields, agg, source.label, window, max_line, encoding,
                                  hints).given()
        if encoding != "utf-8":
            used["encoding"] = encoding
    else:
        handler = make_handler(source, fmt, head, fields, param, window, max_line)
        if isinstance(handler, SearchPaths):
            handler.search_paths = search_paths
        used = {}
        if isinstance(handler, JsonlHandler):
            used = handler.used()
        elif isinstance(handler, AccessHandler | w3c.W3CHandler | solr.SolrHandler):
            used = {"param": handler.param}
        with open_stream(source, hasher, progress, content, start) as stream:
            read_lines(stream, handler, agg, first_line)
    stored = hasher.finish()
    whole = content.finish() if content is not None else stored
    return FileRead(source, fmt, combine(whole), agg, used,
                    also_known_as=combine(stored) if content is not None else None,
                    blocks=[d.hex() for d in whole], content_bytes=(content or hasher).length,
                    after_lines=resume.lines if resume else None, hint="; ".join(hints) or None)


def read_lines(stream: IO[bytes], handler: LineHandler, agg: Aggregate, first_line: int = 1) -> None:
    """Every line of `stream` through `handler` into `agg`, a block at a time, numbered
    from `first_line`. A line longer than the handler's limit is rejected without being
    held whole; a stream that breaks off (a truncated gzip member) keeps what came
    before, and says where."""
    lineno = first_line
    pending = b""
    skipping = False  # inside an over-long line: drop bytes up to its newline
    read = getattr(stream, "read1", stream.read)
    while True:
        block = bytearray()
        error = None
        try:  # small reads, so that a truncated stream still gives what it had
            while len(block) < BLOCK:
                piece = read(1 << 16)
                if not piece:
                    break
                block += piece
        except BROKEN_STREAM as exc:
            error = exc
        if block:
            lineno, pending, skipping = _feed(handler, agg, bytes(block), lineno, pending, skipping)
        if error is not None:
            # what is left from the break (the line it broke off in, and whatever the file
            # held after it) counts as one unreadable line
            agg.lines += 1
            agg.reject(f"unreadable data ({error})", lineno)
            return
        if len(block) < BLOCK:
            break
    if pending and not skipping:
        handler.process(pending, lineno, agg)


def _feed(handler: LineHandler, agg: Aggregate, block: bytes, lineno: int, pending: bytes,
          skipping: bool) -> tuple[int, bytes, bool]:
    """Handle the whole lines of `pending + block`; (next line number, the unfinished
    last line, whether it is an over-long one being skipped)."""
    if skipping:
        cut = block.find(b"\n")
        if cut < 0:
            return lineno, b"", True
        block = block[cut + 1 :]
        lineno += 1
        skipping = False
    data = pending + block if pending else block
    cut = data.rfind(b"\n")  # -1 when no line ends in it: all of it is the rest
    if cut >= 0:
        lineno += handler.process(data[: cut + 1], lineno, agg)
    rest = data[cut + 1 :]
    if len(rest) > handler.max_line_bytes:
        agg.lines += 1
        agg.reject("line too long", lineno)
        return lineno, b"", True
    return lineno, rest, False

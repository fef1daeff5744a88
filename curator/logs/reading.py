"""Finding, opening, fingerprinting and reading log files.

A file's fingerprint is the SHA-256 of the SHA-256 digests of its 8 MiB blocks (of the
bytes as stored, compressed or not), so the workers that read parts of a big file in
parallel can each hash their own blocks and the result does not depend on how many
workers there were.
"""

from __future__ import annotations

import gc
import glob
import gzip
import hashlib
import importlib.util
import io
import multiprocessing as mp
import os
import sys
import time
import zlib
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from curator._process import no_collection, settle_child
from curator.errors import InputError
from curator.logs.access import AccessHandler, guess_param, looks_like_access_log
from curator.logs.aggregate import Aggregate
from curator.logs.delimited import read_delimited, sniff_delimiter
from curator.logs.fields import QUERY_FIELDS, URL_PARAMS, Fields
from curator.logs.jsonl import JsonlHandler, sniff_records
from curator.logs.lines import MAX_LINE_BYTES, LineHandler, Window
from curator.logs.text import TextHandler

BLOCK = 8 << 20
HEAD = 1 << 20
PARALLEL_MIN_BYTES = 32 << 20
# Below this, `auto` reads an uncompressed file with python: DuckDB's start (import,
# connection, a thread) costs more than its speed saves (548 lines: 0.40 s against
# 0.55; 20k lines, 2.7 MB: 0.52 against 0.66; they break even near 100k lines, 14 MB)
DUCKDB_MIN_BYTES = 8 << 20
# The same for a compressed file, by its stored size: 100k lines of the benchmark log,
# 2.6 MB as gzip, take 1.01 s with DuckDB and 0.99 with python; 20k lines 0.74 and 0.56;
# a glob of 200 rotated files of 500 lines took 12.8 s with DuckDB, 0.8 with python
DUCKDB_MIN_COMPRESSED_BYTES = 2 << 20
FORMATS = ("auto", "jsonl", "ubi", "csv", "tsv", "text", "access", "parquet")
ENGINES = ("auto", "duckdb", "python")

Progress = Callable[[int], None]  # bytes (as stored) read since the last call


_MAGIC = {b"\x1f\x8b": "gz", b"\x28\xb5\x2f\xfd": "zst"}


@dataclass
class Source:
    label: str  # what messages name: the path as given, or "<stdin>"
    path: Path | None  # None for a stream: standard input, or a pipe named as a path
    stream_head: bytes | None = None  # what was read from the stream to detect its format
    pipe: IO[bytes] | None = None  # a pipe named as a path (`<(zcat ...)`), opened once; None: stdin
    magic: bytes | None = None  # the first bytes as stored, once looked at

    def stream(self) -> IO[bytes]:
        """A stream source's bytes, read once, as they come."""
        return self.pipe if self.pipe is not None else sys.stdin.buffer

    @property
    def compression(self) -> str | None:
        """gz or zst, by the name's suffix, else by the first bytes (`curator import-logs -
        < search.jsonl.gz`, a rotated `search.log.1` that is gzip inside)."""
        name = self.label.lower()
        if name.endswith(".gz"):
            return "gz"
        if name.endswith((".zst", ".zstd")):
            return "zst"
        if self.magic is None:
            if self.path is None:
                self.magic = _stream_head(self)[:4]
            else:
                with self.path.open("rb") as fh:
                    self.magic = fh.read(4)
        return _MAGIC.get(self.magic[:2]) or _MAGIC.get(self.magic[:4])

    @property
    def stem(self) -> str:
        """The name without a compression suffix, lower-case (for format detection)."""
        name = self.label.lower()
        for suffix in (".gz", ".zst", ".zstd"):
            name = name.removesuffix(suffix)
        return name

    def size(self) -> int | None:
        return self.path.stat().st_size if self.path else None


def expand(paths: list[str | os.PathLike[str]]) -> list[Source]:
    """Files named, globbed, or inside named folders (not hidden ones); `-` is standard
    input. Every pattern must match something and every file must be readable."""
    sources: list[Source] = []
    for raw in paths:
        text = os.fspath(raw)
        if text == "-":
            # typed at a terminal: read to the first Ctrl-D now (a terminal's end of input
            # is not for good: each of the readers' later reads would wait for another)
            typed = io.BytesIO(sys.stdin.buffer.read()) if sys.stdin.isatty() else None
            sources.append(Source("<stdin>", None, pipe=typed))
            continue
        if glob.has_magic(text):
            matched = sorted(glob.glob(text, recursive=True))
            if not matched:
                raise InputError(text, "no file matches this pattern")
        else:
            matched = [text]
        for name in matched:
            path = Path(name)
            if path.is_dir():  # every file inside but hidden ones (.git, .DS_Store)
                sources.extend(Source(str(p), p) for p in sorted(path.rglob("*"))
                               if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts))
                continue
            if not path.exists():
                raise InputError(name, "no such file")
            if not path.is_file():  # a pipe (`<(zcat log.gz)`, /dev/stdin): read once, like stdin
                try:
                    sources.append(Source(name, None, pipe=path.open("rb")))
                except OSError as exc:
                    raise InputError(name, f"cannot read: {exc.strerror or exc}") from None
                continue
            try:
                with path.open("rb") as fh:
                    fh.read(1)
            except OSError as exc:
                raise InputError(name, f"cannot read: {exc.strerror or exc}") from None
            sources.append(Source(name, path))
    return sources


class BlockHasher:
    """SHA-256 per 8 MiB block, combined at the end; `update` may split blocks."""

    def __init__(self) -> None:
        self.digests: list[bytes] = []
        self._h = hashlib.sha256()
        self._filled = 0

    def update(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            take = min(len(view), BLOCK - self._filled)
            self._h.update(view[:take])
            self._filled += take
            view = view[take:]
            if self._filled == BLOCK:
                self.digests.append(self._h.digest())
                self._h = hashlib.sha256()
                self._filled = 0

    def finish(self) -> list[bytes]:
        if self._filled:
            self.digests.append(self._h.digest())
            self._h = hashlib.sha256()
            self._filled = 0
        return self.digests


def combine(digests: list[bytes]) -> str:
    return hashlib.sha256(b"".join(digests)).hexdigest()


class _HashingReader(io.RawIOBase):
    """Passes bytes through from `raw` while hashing them and reporting progress."""

    def __init__(self, raw: IO[bytes], hasher: BlockHasher, progress: Progress):
        self.raw, self.hasher, self.progress = raw, hasher, progress

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[override]
        data = self.raw.read(len(buffer))
        if not data:
            return 0
        n = len(data)
        buffer[:n] = data
        self.hasher.update(data)
        self.progress(n)
        return n


def open_stream(source: Source, hasher: BlockHasher, progress: Progress) -> IO[bytes]:
    """The decompressed bytes of a source, hashing the stored bytes on the way."""
    if source.path is None:
        raw: IO[bytes] = _Prefixed(source.stream_head or b"", source.stream())  # type: ignore[assignment]
    else:
        raw = source.path.open("rb")
    counted = io.BufferedReader(_HashingReader(raw, hasher, progress), buffer_size=1 << 20)
    if source.compression == "gz":
        return gzip.GzipFile(fileobj=counted, mode="rb")  # type: ignore[return-value]
    if source.compression == "zst":
        try:
            import zstandard
        except ImportError:
            raise InputError(
                source.label,
                "is zstd-compressed and the `zstandard` package is not installed",
                hint="pip install zstandard, or decompress it first (zstd -d).",
            ) from None
        return zstandard.ZstdDecompressor().stream_reader(counted)  # type: ignore[return-value]
    return counted


# ---- what a file is --------------------------------------------------------------------


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
    if looks_like_access_log(head):
        return "access"
    if stem.endswith(".txt"):
        return "text"
    header = [c.strip().strip('"').lower() for c in first.decode("utf-8", "replace").replace("\t", ",").split(",")]
    if len(header) > 1 and any(h in QUERY_FIELDS for h in header):
        return "tsv" if b"\t" in first else "csv"
    return "text"


def make_handler(
    source: Source, fmt: str, head: bytes, fields: Fields, param: str | None, window: Window, max_line: int
) -> LineHandler:
    if fmt in ("jsonl", "ubi"):
        from curator.logs.fields import UBI, guess_fields

        given = fields.merged(UBI) if fmt == "ubi" else fields
        records = sniff_records(head)
        resolved = guess_fields(records, given)
        if resolved.query is None:
            keys = sorted({k for r in records for k in r})[:20]
            raise InputError(
                source.label,
                f"no query field found (looked for {', '.join(QUERY_FIELDS)}); "
                + (f"the records have: {', '.join(keys)}" if keys else "no line is a JSON object"),
                hint="Name it with --query-field (dotted paths like request.params.q work).",
            )
        return JsonlHandler(resolved, window, max_line)
    if fmt == "access":
        chosen = param or guess_param(head)
        if chosen is None:
            raise InputError(
                source.label,
                f"no search parameter found in the request URLs (looked for {', '.join(URL_PARAMS)})",
                hint="Name it with --param NAME.",
            )
        return AccessHandler(chosen, window, max_line)
    return TextHandler(window, max_line)


@dataclass
class FileRead:
    source: Source
    format: str
    fingerprint: str
    agg: Aggregate
    fields: dict[str, str]
    engine: str = "python"
    # duckdb engine: a duck.UsersOf, the users of given queries on demand (agg.users
    # has only those of the lines the python reader handled)
    users_of: Any = None
    # duckdb engine: first and last seen, results and latency of given queries, on
    # demand (`duck.Counted.details_of`; agg.first, agg.last, agg.zero_results and
    # agg.latency have only those of the lines the python reader handled)
    details_of: Callable[[set[str]], dict[str, Any]] | None = None
    # duckdb engine, read with `settle=False`: the fingerprint (empty until then), once
    # the thread working it out is done; raises duck.NotForDuckDB if DuckDB missed lines
    pending: Callable[[], str] | None = None


def read_source(
    source: Source,
    fmt: str = "auto",
    fields: Fields = Fields(),
    param: str | None = None,
    window: Window = Window(),
    max_line: int = MAX_LINE_BYTES,
    workers: int = 0,
    progress: Progress = lambda _n: None,
    engine: str = "auto",
    settle: bool = True,
) -> FileRead:
    """Read one source completely into an Aggregate: with DuckDB (JSON Lines and Parquet
    files, see curator/logs/duck.py) or with the python readers; `auto` takes DuckDB
    where the input allows it, except for small files (DUCKDB_MIN_BYTES, or
    DUCKDB_MIN_COMPRESSED_BYTES compressed).
    `settle=False` lets the DuckDB engine hand back the fingerprint later
    (`FileRead.pending`)."""
    head = _head(source)
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):  # PowerShell's `>` writes UTF-16
        raise InputError(source.label, "is UTF-16 text; logs are read as UTF-8",
                         hint="Convert it first: iconv -f UTF-16 -t UTF-8 IN > OUT "
                              "(PowerShell: Get-Content IN | Set-Content -Encoding utf8 OUT).")
    head = head.removeprefix(b"\xef\xbb\xbf")  # for guessing only: the readers drop a BOM themselves
    if fmt == "auto":
        fmt = detect_format(source, head)
    if engine == "auto" and fmt != "parquet" and _small(source):
        engine = "python"  # DuckDB's start costs more than it saves on a small file
    if engine != "python" and fmt in ("jsonl", "ubi", "parquet") and source.path is not None:
        from curator.logs import duck

        try:
            return duck.read(source, fmt, head, fields, window, max_line, progress, settle)
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
    if fmt in ("csv", "tsv"):
        hasher = BlockHasher()
        agg = Aggregate()
        delimiter = "\t" if fmt == "tsv" else sniff_delimiter(head, source.stem)
        stream = open_stream(source, hasher, progress)
        try:
            used = read_delimited(stream, delimiter, fields, agg, source.label, window, max_line)
        finally:
            stream.close()
        return FileRead(source, fmt, combine(hasher.finish()), agg, used.given())
    handler = make_handler(source, fmt, head, fields, param, window, max_line)
    used = handler.fields.given() if isinstance(handler, JsonlHandler) else {}
    if isinstance(handler, AccessHandler):
        used = {"param": handler.param}
    size = source.size()
    n_workers = workers or min(os.cpu_count() or 1, 8)
    if source.path is not None and source.compression is None and size and size >= PARALLEL_MIN_BYTES and n_workers > 1:
        agg, digests = _read_parallel(source.path, size, handler, n_workers, progress)
    else:
        hasher = BlockHasher()
        stream = open_stream(source, hasher, progress)
        try:
            agg = _read_stream(stream, handler, source.label)
        finally:
            stream.close()
        digests = hasher.finish()
    return FileRead(source, fmt, combine(digests), agg, used)


def _small(source: Source) -> bool:
    """Is the file too small for DuckDB's start to pay? (A zstd file only if the python
    reader can read it: that needs `zstandard`.)"""
    size = source.size() or 0
    if source.compression is None:
        return size < DUCKDB_MIN_BYTES
    if source.compression == "zst" and importlib.util.find_spec("zstandard") is None:
        return False
    return size < DUCKDB_MIN_COMPRESSED_BYTES


def blank_lines(source: Source) -> int | None:
    """The number of lines of a source that holds nothing but blank lines (an empty
    file, a rotated log nobody wrote to), else None. Only a source known whole from its
    first MiB qualifies, and a compressed one must decompress cleanly: damage is for the
    reader to report, with what came before it."""
    if source.compression == "zst":  # read by DuckDB when `zstandard` is missing
        return None
    if source.path is None:
        raw = _stream_head(source)
        if len(raw) >= HEAD:
            return None
        if source.compression == "gz":
            try:
                raw = gzip.decompress(raw)
            except (OSError, EOFError, zlib.error):
                return None
    else:
        if (source.size() or 0) >= HEAD:
            return None
        try:
            with source.path.open("rb") as fh:
                stream = gzip.GzipFile(fileobj=fh) if source.compression == "gz" else fh
                raw = stream.read(1 << 12)
                if raw.strip():  # the usual case, seen in the first bytes: no more is read
                    return None
                raw += stream.read()
        except (EOFError, zlib.error, gzip.BadGzipFile):
            return None
        except OSError as exc:
            raise InputError(source.label, f"cannot read: {exc}") from None
    if raw.strip():
        return None
    return raw.count(b"\n") + (not raw.endswith(b"\n")) if raw else 0


def _stream_head(source: Source) -> bytes:
    """The first MiB of a stream source, read once and kept (the reader reads it first)."""
    if source.stream_head is None:
        source.stream_head = _read_up_to(source.stream(), HEAD)
    return source.stream_head


def _head(source: Source) -> bytes:
    """The first MiB (decompressed) of a file; for stdin, peeked without consuming it."""
    try:
        if source.path is None:
            head = _stream_head(source)
            if source.compression == "gz":
                return _read_up_to(gzip.GzipFile(fileobj=io.BytesIO(head)), HEAD)
            return head
        with source.path.open("rb") as raw:
            if source.compression == "gz":
                with gzip.GzipFile(fileobj=raw) as gz:
                    return _read_up_to(gz, HEAD, damaged=source.label)
            if source.compression == "zst":
                return b""
            return raw.read(HEAD)
    except OSError as exc:
        raise InputError(source.label, f"cannot read: {exc}") from None


def _read_up_to(stream: IO[bytes], n: int, damaged: str | None = None) -> bytes:
    """Up to n bytes; a truncated or damaged compressed stream gives what it had (the
    reader reports the damage), unless that is nothing and `damaged` names the file: a
    gzip file damaged before anything in it can be read is an InputError."""
    buf = bytearray()
    try:
        while len(buf) < n:
            chunk = stream.read(min(1 << 16, n - len(buf)))
            if not chunk:
                break
            buf += chunk
    except (EOFError, zlib.error) as exc:
        if damaged is not None and not buf:
            raise InputError(damaged, f"a damaged or truncated gzip file: nothing in it can be read ({exc})") from None
    return bytes(buf)


class _Prefixed(io.RawIOBase):
    """Bytes already taken from a stream (stdin's head), then the rest of it."""

    def __init__(self, prefix: bytes, rest: IO[bytes]):
        self.prefix, self.rest = prefix, rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[override]
        if self.prefix:
            n = min(len(buffer), len(self.prefix))
            buffer[:n] = self.prefix[:n]
            self.prefix = self.prefix[n:]
            return n
        data = self.rest.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _read_stream(stream: IO[bytes], handler: LineHandler, label: str) -> Aggregate:
    agg = Aggregate()
    lineno = 1
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
        except (OSError, EOFError) as exc:  # a truncated gzip member, for one
            error = exc
        if block:
            lineno, pending, skipping = _feed(handler, agg, bytes(block), lineno, pending, skipping)
        if error is not None:
            agg.reject(f"unreadable data ({error})", lineno)
            break
        if len(block) < BLOCK:
            break
    if pending and not skipping:
        handler.process(pending, lineno, agg)
    return agg


def _feed(handler, agg, block, lineno, pending, skipping):
    if skipping:
        cut = block.find(b"\n")
        if cut < 0:
            return lineno, b"", True
        block = block[cut + 1 :]
        lineno += 1
        skipping = False
    data = pending + block if pending else block
    cut = data.rfind(b"\n")
    if cut < 0:
        if len(data) > handler.max_line_bytes:
            agg.lines += 1
            agg.reject("line too long", lineno)
            return lineno, b"", True
        return lineno, data, False
    lineno += handler.process(data[: cut + 1], lineno, agg)
    rest = data[cut + 1 :]
    if len(rest) > handler.max_line_bytes:
        agg.lines += 1
        agg.reject("line too long", lineno)
        return lineno, b"", True
    return lineno, rest, False


# ---- big files: several processes, each a range of whole blocks --------------------------

_shared_progress = None


def _init_worker(counter, collect: bool) -> None:  # pragma: no cover - runs in the child
    global _shared_progress
    settle_child(collect)
    _shared_progress = counter


def _read_range(path: str, start: int, end: int, handler: LineHandler) -> tuple[Aggregate, list[bytes]]:
    agg = Aggregate()
    hasher = BlockHasher()
    lineno = 1
    pending = b""
    skipping = False
    with open(path, "rb") as fh:
        if start > 0:
            fh.seek(start - 1)
            skip_first = fh.read(1) != b"\n"  # that line belongs to the range before
        else:
            skip_first = False
        fh.seek(start)
        pos = start
        while pos < end:
            block = fh.read(min(BLOCK, end - pos))
            if not block:
                break
            pos += len(block)
            hasher.update(block)
            if _shared_progress is not None:
                with _shared_progress.get_lock():
                    _shared_progress.value += len(block)
            if skip_first:
                cut = block.find(b"\n")
                if cut < 0:
                    continue
                block = block[cut + 1 :]
                skip_first = False
            lineno, pending, skipping = _feed(handler, agg, block, lineno, pending, skipping)
        # finish the line that runs past the end of the range (not hashed: not ours)
        while (pending or skipping) and not skip_first:
            more = fh.read(1 << 16)
            if not more:
                break
            cut = more.find(b"\n")
            if cut >= 0:
                lineno, pending, skipping = _feed(handler, agg, more[: cut + 1], lineno, pending, skipping)
                break
            lineno, pending, skipping = _feed(handler, agg, more, lineno, pending, skipping)
    if pending and not skipping:
        handler.process(pending, lineno, agg)
    agg.user_names = {}  # only needed while reading; not worth pickling back
    return agg, hasher.finish()


def _read_parallel(path: Path, size: int, handler: LineHandler, workers: int, progress: Progress):
    blocks = -(-size // BLOCK)
    per = -(-blocks // workers)
    ranges = [(i * per * BLOCK, min(size, (i + 1) * per * BLOCK)) for i in range(workers) if i * per * BLOCK < size]
    ctx = mp.get_context("fork")
    counter = ctx.Value("q", 0)
    reported = 0
    init = (counter, gc.isenabled())
    with ProcessPoolExecutor(len(ranges), mp_context=ctx, initializer=_init_worker, initargs=init) as pool:
        with no_collection():  # the workers are forked by the first submit: see settle_child
            futures = [pool.submit(_read_range, str(path), s, e, handler) for s, e in ranges]
        pending = set(futures)
        while pending:
            _done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            now = counter.value
            progress(now - reported)
            reported = now
            time.sleep(0)
        parts = [f.result() for f in futures]
    total, digests = parts[0][0], list(parts[0][1])
    offset = total.lines
    for part, part_digests in parts[1:]:
        total.merge(part, offset)
        offset += part.lines
        digests.extend(part_digests)
    del parts
    return total, digests

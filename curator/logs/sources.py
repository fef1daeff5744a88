"""Log files and streams: finding them, opening them (gzip, zstd, stdin, pipes) and
their content fingerprint.

A file's fingerprint is the SHA-256 of the SHA-256 digests of its 8 MiB blocks (of the
bytes as stored, compressed or not), whichever reader reads it.
"""

from __future__ import annotations

import errno
import glob
import gzip
import hashlib
import importlib.util
import io
import os
import sys
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from curator.errors import InputError


def _zstd_errors() -> tuple[type[Exception], ...]:
    try:
        import zstandard
    except ImportError:
        return ()
    return (zstandard.ZstdError,)


# What reading a cut-off or damaged compressed stream raises: a reader keeps what came
# before and reports the rest as unreadable
BROKEN_STREAM: tuple[type[Exception], ...] = (OSError, EOFError, zlib.error, *_zstd_errors())
# what damaged data raises (an OSError while reading the head is the file itself: "cannot read")
_DAMAGED: tuple[type[Exception], ...] = (EOFError, zlib.error, *_zstd_errors())

BLOCK = 8 << 20
HEAD = 1 << 20

Progress = Callable[[int], None]  # bytes (as stored) read since the last call

_MAGIC = {b"\x1f\x8b": "gz", b"\x28\xb5\x2f\xfd": "zst"}


@dataclass
class Source:
    label: str  # what messages name: the path as given, or "<stdin>"
    path: Path | None  # None for a stream: standard input, or a pipe named as a path
    stream_head: bytes | None = None  # what was read from the stream to detect its format
    pipe: IO[bytes] | None = None  # a pipe named as a path (`<(zcat ...)`), opened once; None: stdin
    magic: bytes | None = None  # the first bytes as stored, once looked at
    skipped: str | None = None  # why it is not read (a dangling symlink, a symlink loop); None: read it

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


def expand(paths: Sequence[str | os.PathLike[str]]) -> list[Source]:
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
            problem = link_problem(path)
            if problem:  # the other files are still read; the summary names this one and why
                sources.append(Source(name, None, skipped=problem))
                continue
            if path.is_dir():  # every file inside but hidden ones (.git, .DS_Store)
                for p in sorted(path.rglob("*")):
                    if any(part.startswith(".") for part in p.relative_to(path).parts):
                        continue
                    problem = link_problem(p)
                    if problem:
                        sources.append(Source(str(p), None, skipped=problem))
                    elif p.is_file():
                        sources.append(Source(str(p), p))
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


def link_problem(path: Path) -> str | None:
    """Why a symlink cannot be followed (its target missing, or a loop), or None (not a
    symlink, or one that resolves)."""
    if not path.is_symlink():
        return None
    try:
        path.resolve(strict=True)
    except FileNotFoundError:
        return f"dangling symlink (its target {os.readlink(path)} does not exist)"
    except (RuntimeError, OSError) as exc:  # a loop: RuntimeError before Python 3.13, OSError (ELOOP) after
        if isinstance(exc, OSError) and exc.errno not in (errno.ELOOP, None):
            return f"symlink cannot be followed: {exc.strerror or exc}"
        return "symlink loop"
    return None


class BlockHasher:
    """SHA-256 per 8 MiB block, combined at the end; `update` may split blocks."""

    def __init__(self) -> None:
        self.digests: list[bytes] = []
        self._h = hashlib.sha256()
        self._filled = 0
        self.length = 0  # bytes hashed

    def update(self, data: bytes | memoryview) -> None:
        view = memoryview(data)
        self.length += len(view)
        while view:
            take = min(len(view), BLOCK - self._filled)
            self._h.update(view[:take])
            self._filled += take
            view = view[take:]
            if self._filled == BLOCK:
                self.digests.append(self._h.digest())
                self._h = hashlib.sha256()
                self._filled = 0

    def peek(self) -> list[bytes]:
        """What `finish` would give now, without finishing: hashing can go on."""
        return [*self.digests, self._h.copy().digest()] if self._filled else list(self.digests)

    def finish(self) -> list[bytes]:
        if self._filled:
            self.digests.append(self._h.digest())
            self._h = hashlib.sha256()
            self._filled = 0
        return self.digests


@dataclass(frozen=True)
class Resume:
    """A log that grew since it was imported (the live `access.log`): its first `offset`
    bytes, `lines` lines, are the file imported then, hashed into `hasher` already;
    only what follows is read (KnownImports.grown)."""

    offset: int
    lines: int
    hasher: BlockHasher


def prefix_hasher(path: Path, length: int) -> BlockHasher:
    """A BlockHasher fed the first `length` bytes of `path`."""
    hasher = BlockHasher()
    with path.open("rb") as fh:
        left = length
        while left and (block := fh.read(min(left, 1 << 22))):
            hasher.update(block)
            left -= len(block)
    return hasher


def combine(digests: list[bytes]) -> str:
    return hashlib.sha256(b"".join(digests)).hexdigest()


class _HashingReader(io.RawIOBase):
    """Passes bytes through from `raw` while hashing them and reporting progress."""

    def __init__(self, raw: io.BufferedIOBase | io.RawIOBase, hasher: BlockHasher, progress: Progress):
        self.raw, self.hasher, self.progress = raw, hasher, progress

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]  # io's stub: a WriteableBuffer
        n = self.raw.readinto(buffer)
        if n:
            self.hasher.update(buffer[:n])
            self.progress(n)
        return n or 0

    def close(self) -> None:  # the file too (it was left for the garbage collector)
        self.raw.close()
        super().close()


def open_stream(source: Source, hasher: BlockHasher, progress: Progress,
                content: BlockHasher | None = None, start: int = 0) -> IO[bytes]:
    """The decompressed bytes of a source, hashing the stored bytes on the way, and the
    decompressed ones into `content` (a compressed source's content fingerprint: the
    same as the file's uncompressed, so `access.log.1` and `access.log.2.gz` are one).
    `start`: an uncompressed file's bytes from there on (`hasher` has the ones before)."""
    if source.path is None:
        raw: io.BufferedIOBase | io.RawIOBase = _Prefixed(source.stream_head or b"", source.stream())
    else:
        raw = source.path.open("rb")
        if start:
            assert source.compression is None
            raw.seek(start)
            progress(start)
    counted = io.BufferedReader(_HashingReader(raw, hasher, progress), buffer_size=1 << 20)
    if source.compression is None:
        return counted
    if source.compression == "gz":
        plain: io.BufferedIOBase | io.RawIOBase = gzip.GzipFile(fileobj=counted, mode="rb")
    else:
        if not _has_zstandard():
            raise InputError(
                source.label,
                "is zstd-compressed and the `zstandard` package is not installed",
                hint="pip install zstandard, or decompress it first (zstd -d).",
            )
        plain = io.BufferedReader(_Unzstd(counted), buffer_size=1 << 20)
    return _Hashed(plain, content, counted)  # type: ignore[return-value]


class _Hashed(io.BufferedIOBase):
    """A decompressed stream, hashing what is read from it (given a `hasher`); no buffer
    of its own, so that a cut-off stream still gives every byte before the cut, as it
    does unwrapped. Closing it closes the stored stream under it too (GzipFile does not)."""

    def __init__(self, plain: io.BufferedIOBase | io.RawIOBase, hasher: BlockHasher | None,
                 stored: io.BufferedIOBase) -> None:
        self.plain, self.hasher, self.stored = plain, hasher, stored

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        data = self.plain.read(-1 if size is None else size) or b""
        if self.hasher is not None:
            self.hasher.update(data)
        return data

    def read1(self, size: int = -1) -> bytes:
        data = self.plain.read1(size)  # type: ignore[union-attr]  # GzipFile and BufferedReader have it
        if self.hasher is not None:
            self.hasher.update(data)
        return data

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]  # io's stub: a WriteableBuffer
        n = self.plain.readinto(buffer) or 0
        if self.hasher is not None:
            self.hasher.update(memoryview(buffer)[:n])
        return n

    def close(self) -> None:
        self.plain.close()
        self.stored.close()
        super().close()


def _has_zstandard() -> bool:
    return importlib.util.find_spec("zstandard") is not None


class _Unzstd(io.RawIOBase):
    """The decompressed bytes of a zstd stream, frame after frame. A stream that ends
    inside a frame raises EOFError after the bytes before the cut (zstandard's own
    stream reader just stops there: the rest of a cut-off log would go without a word)."""

    def __init__(self, raw: IO[bytes]) -> None:
        import zstandard

        self.raw, self.zstd = raw, zstandard.ZstdDecompressor()
        self.frame: Any = None  # the frame being decompressed (None: none begun)
        self.out = b""
        self.at = 0  # how much of `out` was read
        self.error: Exception | None = None  # raised once the bytes before it are read

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]  # io's stub: a WriteableBuffer
        while self.at == len(self.out):
            if self.error is not None:
                raise self.error
            data = self.raw.read(1 << 17)
            if not data:
                if self.frame is not None and not self.frame.eof:
                    raise EOFError("the zstd stream ends inside a frame")
                return 0
            self.out, self.at = self._decompress(data), 0
        n = min(len(buffer), len(self.out) - self.at)
        buffer[:n] = self.out[self.at : self.at + n]
        self.at += n
        return n

    def _decompress(self, data: bytes) -> bytes:
        """`data` decompressed, 32 KiB at a time: damage keeps what came out before it."""
        out = []
        try:
            for start in range(0, len(data), 1 << 15):
                piece = data[start : start + (1 << 15)]
                while piece:
                    if self.frame is None or self.frame.eof:
                        self.frame = self.zstd.decompressobj()
                    out.append(self.frame.decompress(piece))
                    piece = self.frame.unused_data if self.frame.eof else b""
        except BROKEN_STREAM as exc:
            self.error = exc
        return b"".join(out)


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


def read_head(source: Source) -> bytes:
    """The first MiB (decompressed) of a file; for stdin, peeked without consuming it."""
    try:
        if source.path is None:
            head = _stream_head(source)
            if source.compression == "gz":
                return _read_up_to(gzip.GzipFile(fileobj=io.BytesIO(head)), HEAD)
            if source.compression == "zst" and _has_zstandard():
                return _read_up_to(_Unzstd(io.BytesIO(head)), HEAD)
            return head
        with source.path.open("rb") as raw:
            if source.compression == "gz":
                with gzip.GzipFile(fileobj=raw) as gz:
                    return _read_up_to(gz, HEAD, damaged=source.label)
            if source.compression == "zst":  # without `zstandard`, DuckDB reads it (and finds its fields)
                return _read_up_to(_Unzstd(raw), HEAD, damaged=source.label, kind="zstd") if _has_zstandard() else b""
            return raw.read(HEAD)
    except OSError as exc:
        raise InputError(source.label, f"cannot read: {exc}") from None


def _read_up_to(stream: IO[bytes] | gzip.GzipFile | _Unzstd, n: int, damaged: str | None = None,
                kind: str = "gzip") -> bytes:
    """Up to n bytes; a truncated or damaged compressed stream gives what it had (the
    reader reports the damage), unless that is nothing and `damaged` names the file: a
    compressed file damaged before anything in it can be read is an InputError."""
    buf = bytearray()
    read = getattr(stream, "read1", stream.read)  # one read at a time: a read that fails loses only its own bytes
    try:
        while len(buf) < n:
            chunk = read(min(1 << 16, n - len(buf)))
            if not chunk:
                break
            buf += chunk
    except _DAMAGED as exc:
        if damaged is not None and not buf:
            raise InputError(damaged, f"a damaged or truncated {kind} file: nothing in it can be read ({exc})") from None
    return bytes(buf)


class _Prefixed(io.RawIOBase):
    """Bytes already taken from a stream (stdin's head), then the rest of it."""

    def __init__(self, prefix: bytes, rest: IO[bytes]):
        self.prefix, self.rest = prefix, rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]  # io's stub: a WriteableBuffer
        if self.prefix:
            n = min(len(buffer), len(self.prefix))
            buffer[:n] = self.prefix[:n]
            self.prefix = self.prefix[n:]
            return n
        data = self.rest.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


"""Reading source files: documents on disk, in git, and JSONL records."""

from __future__ import annotations

import gzip
import io
import json
import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from curator.text import sha256_hex

BINARY_SNIFF = 8192


class SourceError(Exception):
    """A file (or line) that cannot be used; the importer reports it and moves on."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


def decode_document(data: bytes) -> str:
    if b"\x00" in data[:BINARY_SNIFF]:
        raise SourceError("binary file (NUL bytes), expected text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SourceError(f"invalid UTF-8 at byte {exc.start}, expected UTF-8 text") from None
    if not text.strip():
        raise SourceError("empty document")
    return text


def read_document(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SourceError(f"cannot read: {exc.strerror or exc}") from None
    return decode_document(data)


def content_revision(data: str | bytes) -> str:
    """Revision of content outside git: the first 12 hex digits of its sha256."""
    return sha256_hex(data)[:12]


def iso_utc(value: str | float | int | None) -> str | None:
    """Normalise a timestamp (ISO string with any offset, or epoch seconds) to `...Z` UTC."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float):
        moment = datetime.fromtimestamp(float(value), UTC)
    else:
        text = str(value).strip().replace("Z", "+00:00")
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return str(value)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def file_time(path: Path) -> str | None:
    try:
        return iso_utc(path.stat().st_mtime)
    except OSError:
        return None


def open_text(path: Path) -> io.TextIOBase:
    """Open a (possibly gzipped) text file, replacing invalid UTF-8 so one bad line
    doesn't stop the rest; the JSON reader then rejects that line."""
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any] | SourceError]]:
    """(line number, record or the reason it was rejected) for every non-blank line."""
    try:
        fh = open_text(path)
    except OSError as exc:
        raise SourceError(f"cannot read: {exc.strerror or exc}") from None
    with fh:
        try:
            for number, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                if "\ufffd" in line:
                    yield number, SourceError("invalid UTF-8", number)
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    yield number, SourceError(f"not valid JSON ({exc.msg})", number)
                    continue
                if not isinstance(record, dict):
                    yield number, SourceError("expected a JSON object", number)
                    continue
                yield number, record
        except (OSError, EOFError) as exc:
            raise SourceError(f"cannot read: {exc}") from None


def sniff_jsonl(path: Path) -> str | None:
    """'beir', 'revisions' or 'passages', from the first records of a JSONL file."""
    try:
        for _, record in iter_jsonl(path):
            if isinstance(record, SourceError):
                continue
            if "_id" in record:
                return "beir"
            if "id" in record and "text" in record:
                return "passages"
            if {"path", "revision", "text"} <= record.keys():
                return "revisions"
            return None
    except SourceError:
        return None
    return None


Skip = Callable[[Path, str], None]  # told of each path left out, and why


def walk(root: Path, include: list[str], exclude: list[str], skip: Skip | None = None) -> Iterator[Path]:
    """Files under `root` matching `include` globs, skipping `exclude` names, sorted.

    Symlinks: a link to a file inside `root` is followed (each file is yielded once,
    however many links lead to it); a link that leads outside `root`, nowhere, or round
    in a loop is left out and `skip(path, why)` is told. Links to folders are not walked
    (a folder inside `root` is walked under its own name); one leading outside is told."""
    top = root.resolve()
    seen: set[Path] = set()
    for folder, dirs, files in os.walk(root):
        kept = []
        for d in sorted(dirs):
            if d in exclude or d.startswith("."):
                continue
            path = Path(folder) / d
            why = link_problem(path, top)
            if why and skip:
                skip(path, why)
            elif not path.is_symlink():
                kept.append(d)
        dirs[:] = kept
        for name in sorted(files):
            path = Path(folder) / name
            if name in exclude or not any(path.match(pattern) for pattern in include):
                continue
            why = link_problem(path, top)
            if why:
                if skip:
                    skip(path, why)
                continue
            target = path.resolve()
            if target not in seen:
                seen.add(target)
                yield path


def link_problem(path: Path, root: Path) -> str | None:
    """Why symlink `path` is not followed (it leads outside `root`, which is resolved,
    nowhere, or round in a loop), or None (not a symlink, or one to a place inside)."""
    if not path.is_symlink():
        return None
    try:
        target = path.resolve(strict=True)
    except FileNotFoundError:
        return f"dangling symlink (its target {os.readlink(path)} does not exist)"
    except (RuntimeError, OSError):  # a loop: RuntimeError before Python 3.13, OSError (ELOOP) after
        return "symlink loop (it leads back to itself)"
    if not target.is_relative_to(root):
        kind = "folder" if target.is_dir() else "file"
        return f"symlink to a {kind} outside {root} ({target}); only links inside the folder are followed"
    return None

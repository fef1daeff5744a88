"""Append-only line files: the primitives under question sets and their freezes.

- `exclusive_lock`: an `flock` on a lock file, so two processes never interleave writes;
- `append_line`: one whole line per record, written with a single `write` and fsynced;
- `append_together` / `finish_interrupted`: lines that belong together (a case and its
  change-log entry) are first written to a journal file, then appended; a crash between the
  appends is finished by the next writer, so neither line is left alone;
- `repair_torn_tail`: a torn last line (a crash mid-write) is never data; it is moved to
  `.torn-<file>-<time>` beside the file and the file is cut back to its last whole line;
- `write_durably` / `create_once`: whole files written under a temporary name and fsynced;
- `JsonLines`, `whole_lines`, `line_hash`, `file_sha256`: reading lines and their digests.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import time
import zlib
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from curator.errors import CuratorError

# ---- writing ---------------------------------------------------------------------------------


@contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive `flock` on `path` (created if missing)."""
    with open(path, "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def append_line(path: Path, line: str) -> None:
    if "\n" in line:
        raise ValueError("a record must be one line")
    data = (line + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        written = os.write(fd, data)
        while written < len(data):  # os.write may write less than asked on some filesystems
            written += os.write(fd, data[written:])
        os.fsync(fd)
    finally:
        os.close(fd)


def append_together(journal: Path, lines: dict[str, tuple[Path, str]]) -> None:
    """Append each line to its file as one unit ({key: (file, line)}): the journal holds
    {key: line} until every append is done. Call under the lock."""
    write_durably(journal, json.dumps({key: line for key, (_, line) in lines.items()}))
    for path, line in lines.values():
        append_line(path, line)
    journal.unlink()


def finish_interrupted(journal: Path, files: dict[str, Path]) -> None:
    """Repair torn tails, then finish the unit a crash left in the journal ({key: file}, as
    given to `append_together`): append each of its lines the file does not end with yet.
    Call under the lock, before writing."""
    for path in files.values():
        repair_torn_tail(path)
    if not journal.exists():
        return
    try:
        pending = json.loads(journal.read_text(encoding="utf-8"))
        units = [(path, pending[key]) for key, path in files.items()]
    except (ValueError, KeyError):
        # The journal itself was torn: none of its lines was appended yet, drop it.
        journal.unlink()
        return
    for path, line in units:
        if line not in _tail_lines(path, 4):
            append_line(path, line)
    journal.unlink()
    fsync_dir(journal.parent)


def repair_torn_tail(path: Path) -> None:
    """Move a last line without its newline to a `.torn-*` file and cut it off."""
    if not path.exists():
        return
    with open(path, "rb+") as fh:
        size = fh.seek(0, os.SEEK_END)
        if size == 0:
            return
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return
        fh.seek(0)
        data = fh.read()  # rare (only after a crash): one plain read of the whole file
        cut = data.rfind(b"\n") + 1
        fragment = data[cut:]
        quarantine = path.parent / f".torn-{path.stem}-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
        write_durably(quarantine, fragment.decode("utf-8", errors="replace"))
        fh.truncate(cut)
        fh.flush()
        os.fsync(fh.fileno())


def write_durably(path: Path, text: str | bytes) -> None:
    """Replace `path` with `text`: written to a temporary name, fsynced, renamed into place."""
    os.replace(_write_synced(path, text), path)
    fsync_dir(path.parent)


def create_once(path: Path, text: str) -> None:
    """Write `path` durably, failing if it exists: never overwrite a frozen file."""
    tmp = _write_synced(path, text)
    try:
        os.link(tmp, path)  # atomic, and unlike rename it refuses an existing target
    except FileExistsError:
        raise CuratorError(f"{path} already exists; frozen files are never overwritten") from None
    finally:
        tmp.unlink()
    fsync_dir(path.parent)


def fsync_dir(folder: Path) -> None:
    """Make a rename or a new file in `folder` durable."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_synced(path: Path, text: str | bytes) -> Path:
    """Write `text` (UTF-8 if a str) to a temporary name beside `path`, fsynced; gives that name."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as fh:
        fh.write(text.encode("utf-8") if isinstance(text, str) else text)
        fh.flush()
        os.fsync(fh.fileno())
    return tmp


def _tail_lines(path: Path, count: int) -> list[str]:
    if not path.exists():
        return []
    with open(path, "rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        fh.seek(max(0, size - 1_000_000))
        data = fh.read().decode("utf-8", errors="replace")
    return data.splitlines()[-count:]


# ---- reading -----------------------------------------------------------------------------------


BLOCK = 1 << 20  # JsonLines reads a file in blocks of this many bytes
BOM = b"\xef\xbb\xbf"


@dataclass
class JsonLines:
    """One read of a line file: its whole lines as UTF-8 bytes without their newlines (invalid
    UTF-8 as U+FFFD, as a reader sees it), which is also what digests and line hashes are
    computed over. A torn last line is no line: `torn` says whether there was one.

    The file is read block by block into its lines, never held whole beside them: a
    200k-line cases.jsonl would be 80 MB twice, and fresh memory costs a page fault per
    4 KB. A digest is worked out from the lines when asked for."""

    path: Path
    size: int  # bytes of the whole lines, newlines included (as read)
    lines: list[bytes]
    torn: bool
    bad_bytes: list[tuple[int, str]] = field(default_factory=list)  # (line, what): see byte_problems
    _digests: dict[int, str] = field(default_factory=dict, repr=False)
    _sha: tuple[int, hashlib._Hash] | None = field(default=None, repr=False)  # (lines, sha256 of them) to go on from

    @classmethod
    def read(cls, path: Path) -> JsonLines:
        lines: list[bytes] = []
        bad: list[tuple[int, str]] = []
        size = 0
        rest = b""  # the start of a line the next block ends
        try:
            with open(path, "rb") as fh:
                while block := fh.read(BLOCK):
                    parts = block.split(b"\n")
                    clean = _clean(block) and _clean(rest)  # every byte of this block's whole lines
                    parts[0] = rest + parts[0]
                    rest = parts.pop()
                    if not clean:
                        parts = [_checked(n, line, bad) for n, line in enumerate(parts, start=len(lines) + 1)]
                    lines += parts
                    size += len(block)
        except FileNotFoundError:
            return cls(path, 0, lines, False)
        size -= len(rest)
        if bad:  # a line read with U+FFFD may be longer than its bytes
            size = sum(len(line) + 1 for line in lines)
        return cls(path, size, lines, bool(rest), bad)

    @property
    def count(self) -> int:
        return len(self.lines)

    def digest(self, lines: int | None = None) -> tuple[int, str]:
        """(line count, sha256) of the first `lines` whole lines (all if None or more): of the
        bytes as read, newlines included. A longer prefix goes on from a shorter one."""
        count = self.count if lines is None else min(lines, self.count)
        if count not in self._digests:
            start, sha = self._sha if self._sha and self._sha[0] <= count else (0, hashlib.sha256())
            sha = sha.copy()
            for first in range(start, count, 4096):  # in slices: joined, not hashed line by line
                sha.update(b"\n".join(self.lines[first:min(first + 4096, count)]))
                sha.update(b"\n")
            self._sha = (count, sha)
            self._digests[count] = sha.hexdigest()
        return count, self._digests[count]


def byte_problems(data: bytes) -> list[tuple[int, str]]:
    """(line number, what) for each byte-level fault of the whole lines `data`: a BOM,
    CRLF line ends, NUL bytes, invalid UTF-8. curator writes none of these; a reader would
    see other bytes than git. A clean ASCII file costs three scans."""
    found: list[tuple[int, str]] = []
    if not _clean(data):
        for number, line in enumerate(data.split(b"\n"), start=1):
            _checked(number, line, found)
    return found


def _clean(data: bytes) -> bool:
    """No byte of `data` can be a fault (three scans of C speed)."""
    return data.isascii() and b"\r" not in data and b"\0" not in data


def _checked(number: int, line: bytes, found: list[tuple[int, str]]) -> bytes:
    """Add line `number`'s byte faults to `found`; gives the line as a reader sees it
    (invalid UTF-8 as U+FFFD)."""
    if number == 1 and line.startswith(BOM):
        found.append((1, "starts with a byte-order mark (BOM); curator files are plain UTF-8"))
    if line.endswith(b"\r"):
        found.append((number, "CRLF line end; curator files use LF only (was the file rewritten?)"))
    column = line.find(b"\0") + 1
    if column:
        found.append((number, f"NUL byte at column {column}"))
    if not line.isascii():
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as exc:
            found.append((number, f"invalid UTF-8 at byte {exc.start + 1} of the line"))
            return line.decode("utf-8", errors="replace").encode("utf-8")
    return line


def lines_holding(path: Path, needle: bytes) -> list[bytes]:
    """The whole lines of a file (without their newlines) that hold `needle`, in order: one
    search through the file's bytes, so one case's lines come out of a 200k-line set in
    milliseconds. A torn last line is no line; a missing file has none."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    found = []
    at = data.find(needle)
    while at != -1:
        start, end = data.rfind(b"\n", 0, at) + 1, data.find(b"\n", at)
        if end == -1:
            break
        found.append(data[start:end])
        at = data.find(needle, end + 1)
    return found


def whole_lines(path: Path) -> Iterator[str]:
    """The whole lines of a file as text, without their newlines (a torn last line is none)."""
    with open(path, "rb") as fh:
        for raw in fh:
            if raw.endswith(b"\n"):
                yield raw[:-1].decode("utf-8", errors="replace")


def line_hash(line: str | bytes) -> str:
    """Short hash of one line (without its newline), as checkpoints and freezes record it."""
    data = line.encode("utf-8") if isinstance(line, str) else line
    return hashlib.sha1(data).hexdigest()[:16]


def fingerprints(lines: list[bytes]) -> list[int]:
    """Each line's fingerprint, as the sidecar holds it: its CRC-32 and its length in one
    64-bit number. It is no digest (the checkpoint's sha256 over the bytes is that): it only
    says which line changed, or that every line the checkpoint saw is still there in order
    (a union merge), which an edited line passes only if it keeps its length and its CRC-32,
    or takes another line's (about 1 in 4 billion each). A sha1 per line cost 2.5x this, an
    eighth of a first verify. The freeze check uses them to find frozen lines among the case lines."""
    crc32 = zlib.crc32
    return [crc32(line) << 32 | len(line) for line in lines]


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def is_subsequence(needle: Sequence[Hashable], haystack: Sequence[Hashable]) -> bool:
    """Whether `needle` appears in `haystack` in order (gaps allowed): a union merge keeps
    every line of each side in order."""
    it = iter(haystack)
    return all(any(h == wanted for h in it) for wanted in needle)


def first_change(old: Sequence[Hashable], current: Sequence[Hashable]) -> tuple[int, str]:
    """Where line hashes (or fingerprints) `current` break with `old`: the number of the first old line that
    is gone ("edited or removed"), else of the first one out of place ("moved (lines
    reordered)")."""
    present = set(current)
    for index, wanted in enumerate(old):
        if wanted not in present:
            return index + 1, "edited or removed"
    for index, wanted in enumerate(old):
        if index >= len(current) or current[index] != wanted:
            return index + 1, "moved (lines reordered)"
    return len(old) + 1, "moved (lines reordered)"

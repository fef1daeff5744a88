"""Reading a line file (curator.appendonly.JsonLines): block by block, the same lines,
byte faults, sizes and digests as the whole file read at once would give."""

from __future__ import annotations

import hashlib
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from curator.appendonly import BLOCK, JsonLines, byte_problems


def _whole_lines(data: bytes) -> bytes:
    return data[: data.rfind(b"\n") + 1]


def test_lines_across_block_boundaries_are_whole_and_their_faults_found(tmp_path: Path) -> None:
    """A CRLF end whose \\r ends one block and \\n starts the next, a NUL byte at the end of
    a block on a line the next (clean) block ends, an invalid UTF-8 line: each named on its
    line, as in the file."""
    filler = b'{"query_id":"q","rev":1}'
    first = filler * (BLOCK // len(filler))
    first += b"x" * (BLOCK - len(first) - 1) + b"\r"  # the \r is the last byte of block 1
    long = b"\0" + b"a" * BLOCK  # its NUL in block 2, its end in block 3
    data = first + b"\n" + b"ok\n" + long + b"\n" + b"caf\xe9\n" + b"torn"
    path = tmp_path / "cases.jsonl"
    path.write_bytes(data)
    file = JsonLines.read(path)
    expected = [first, b"ok", long, "caf\ufffd".encode()]
    assert file.lines == expected
    assert file.torn
    assert file.bad_bytes == [
        (1, "CRLF line end; curator files use LF only (was the file rewritten?)"),
        (3, "NUL byte at column 1"),
        (4, "invalid UTF-8 at byte 4 of the line"),
    ]
    read = b"".join(line + b"\n" for line in expected)  # the bytes as a reader sees them
    assert file.size == len(read)
    assert file.digest() == (4, hashlib.sha256(read).hexdigest())
    assert file.digest(2) == (2, hashlib.sha256(first + b"\n" + b"ok\n").hexdigest())


def test_a_missing_file_has_no_lines(tmp_path: Path) -> None:
    file = JsonLines.read(tmp_path / "changelog.jsonl")
    assert (file.lines, file.size, file.torn, file.bad_bytes) == ([], 0, False, [])
    assert file.digest() == (0, hashlib.sha256(b"").hexdigest())


PIECES = [b"a", b"{}", b"\n", b"\n", b"\r", b"\0", b"\xef\xbb\xbf", "é".encode(), b"\xe2\x82", b"\xff"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=60), st.lists(st.integers(0, 40), max_size=4))
def test_a_file_reads_as_its_split_whole_lines(tmp_path_factory, pieces: list[bytes], cuts: list[int]) -> None:
    """Any bytes: the lines are the whole lines split at LF (invalid UTF-8 as U+FFFD), the
    faults those byte_problems finds in the whole lines, and every prefix digest the sha256
    of that many lines as read. Large lines put the pieces across a block boundary."""
    data = b"".join(pieces)
    for cut in cuts:  # push the rest of the bytes past the first block
        data = data[:cut] + b"a" * (BLOCK - cut - 1) + data[cut:]
    path = tmp_path_factory.mktemp("lines") / "cases.jsonl"
    path.write_bytes(data)
    file = JsonLines.read(path)
    whole = _whole_lines(data)
    read = whole.decode("utf-8", errors="replace").encode("utf-8")
    assert file.lines == read.split(b"\n")[:-1]
    assert file.torn == (whole != data)
    assert file.bad_bytes == byte_problems(whole)
    assert file.size == len(read)
    for count in range(file.count, -1, -1):  # longest first: each from scratch, then from a shorter one
        prefix = b"".join(line + b"\n" for line in file.lines[:count])
        assert file.digest(count) == (count, hashlib.sha256(prefix).hexdigest())
    assert file.digest() == (file.count, hashlib.sha256(read).hexdigest())

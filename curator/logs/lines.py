"""What every line-oriented reader shares: splitting, size and encoding checks, windows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from curator.logs.aggregate import Aggregate
from curator.logs.fields import COUNT_REASON, as_count

MAX_LINE_BYTES = 1 << 20  # a longer line is rejected (a 10 MB "query" is not a query)


@dataclass(frozen=True)
class Window:
    """`--since` / `--until` as `YYYY-MM-DDTHH:MM:SS` strings (UTC); until is exclusive."""

    since: str | None = None
    until: str | None = None

    def __bool__(self) -> bool:
        return bool(self.since or self.until)

    def contains(self, ts: str) -> bool:
        return (self.since is None or ts >= self.since) and (self.until is None or ts < self.until)


_CONTROL = bytes(c for c in range(32) if c not in (9, 13))
_BOM = b"\xef\xbb\xbf"


def _is_binary(raw: bytes) -> bool:
    head = raw[:200]
    return b"\x00" in raw or len(head) - len(head.translate(None, _CONTROL)) > 2


class LineHandler:
    """Turns one decoded line into `Aggregate.add` (or a counted reject)."""

    name = "lines"

    def __init__(self, window: Window = Window(), max_line_bytes: int = MAX_LINE_BYTES):
        self.window = window
        self.max_line_bytes = max_line_bytes

    def handle(self, text: str, lineno: int, agg: Aggregate) -> None:  # pragma: no cover
        raise NotImplementedError

    def try_fast(self, data: bytes, agg: Aggregate) -> bool:
        """Count a whole block of complete lines at C speed when it is safe; False
        sends the block through `handle` line by line."""
        return False

    def process(self, data: bytes, first_lineno: int, agg: Aggregate) -> int:
        """Handle `data` (complete lines; the last may lack its newline at the end of
        the input). Returns the number of lines consumed."""
        if not data:
            return 0
        n_lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
        if self.try_fast(data, agg):
            agg.lines += n_lines
            return n_lines
        lines = data.split(b"\n")
        if data.endswith(b"\n"):
            lines.pop()
        for lineno, raw in enumerate(lines, first_lineno):
            self.process_line(raw, lineno, agg)
        return n_lines

    def process_line(self, raw: bytes, lineno: int, agg: Aggregate) -> None:
        agg.lines += 1
        if lineno == 1 and raw.startswith(_BOM):  # written by Windows tools; DuckDB's reader drops it too
            raw = raw[len(_BOM):]
        if len(raw) > self.max_line_bytes:
            agg.reject("line too long", lineno)
            return
        if not raw.strip():
            agg.ignored["blank line"] += 1
            return
        if _is_binary(raw):
            agg.reject("binary data", lineno)
            return
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            agg.reject("invalid UTF-8", lineno)
            return
        self.handle(text.rstrip("\r"), lineno, agg)


def in_window(window: Window, ts: str | None, lineno: int, agg: Aggregate) -> bool:
    """Apply the time window: False (and counted) when the line falls outside it."""
    if not window:
        return True
    if ts is None:
        agg.reject("missing or unreadable timestamp (needed for --since/--until)", lineno)
        return False
    if not window.contains(ts):
        agg.ignored["outside --since/--until"] += 1
        return False
    return True


def line_count(value: Any, field: str, lineno: int, agg: Aggregate) -> int | None:
    """How often a line of pre-aggregated input counts, from its count field's `value`;
    None (and counted) for a line to drop: a count that is no count, or 0."""
    count = as_count(value)
    if count is None:
        agg.reject(COUNT_REASON.format(field), lineno)
        return None
    if count == 0:
        agg.ignored["count of 0"] += 1
        return None
    return count

"""Plain text: one query per line.

A file of another kind of log (an application's or a server's lines, each starting
with its date and time) is not read as one: every line would be queued whole as a
query, with whatever names and addresses it holds. `timestamped` finds such a file
so that `auto` says what it is instead (`--format text` still reads it)."""

from __future__ import annotations

import re

from curator.logs.aggregate import Aggregate
from curator.logs.lines import LineHandler

# a line that starts with a date and a time: ISO (2026-10-01 08:00:00, 2026-10-01T08:00),
# also in brackets; syslog's `Oct  1 08:00:00`; nginx's error log `2026/10/01 08:00:00`
_STAMPED = re.compile(
    rb"\[?(?:\d{4}[-/]\d\d[-/]\d\d[T ]\d\d:\d\d"
    rb"|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d\d:\d\d:\d\d)"
)


def timestamped(head: bytes, lines: int = 50) -> bool:
    """Do most of the first `lines` lines of `head` start with a date and a time?"""
    sample = [ln for ln in head.split(b"\n")[:lines] if ln.strip()]
    return len(sample) >= 2 and sum(1 for ln in sample if _STAMPED.match(ln)) * 2 > len(sample)


class TextHandler(LineHandler):
    name = "text"

    def handle(self, text: str, lineno: int, agg: Aggregate) -> None:
        if self.window:
            agg.reject("plain text has no timestamps (drop --since/--until)", lineno)
            return
        agg.add(text)

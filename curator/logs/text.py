"""Plain text: one query per line."""

from __future__ import annotations

from curator.logs.aggregate import Aggregate
from curator.logs.lines import LineHandler


class TextHandler(LineHandler):
    name = "text"

    def handle(self, text: str, lineno: int, agg: Aggregate) -> None:
        if self.window:
            agg.reject("plain text has no timestamps (drop --since/--until)", lineno)
            return
        agg.add(text)

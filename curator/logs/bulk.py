"""Many short strings as one text, so that a regular expression screens them all in
one search at C speed instead of one call per query.

`Joined(strings)` holds the strings separated by newlines. A string the join cannot
hold as it is (one with a newline, or a character outside ASCII, whose lower-casing may
change its length) is written into the text with placeholders of the same length and
marked not `plain`: callers handle those one by one, exactly as before. `touched(pattern)`
says which strings a match of `pattern` touches: every match of the pattern in a plain
string alone is a match in the text or lies inside one that touches that string (a
search cannot hide a match without consuming it), so the answer is a superset of the
strings the pattern matches alone. Callers use it only as a screen: what it marks is
checked again one string at a time.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

SEP = "\n"
_NOT_ASCII = re.compile(r"[^\x00-\x7f]")


class Joined:
    """`strings` as one text, with each one's start, and which are `plain`: held as they
    are (ASCII, no newline), so `lowered` and the searches see them exactly."""

    def __init__(self, strings: list[str]) -> None:
        n = len(strings)
        text = SEP.join(strings)
        plain = np.ones(n, dtype=bool)
        if n and text.count(SEP) != n - 1:  # some hold a newline: written with a space there
            for k, s in enumerate(strings):
                if SEP in s:
                    plain[k] = False
            text = SEP.join([s.replace(SEP, " ") if SEP in s else s for s in strings])
        lengths = np.fromiter(map(len, strings), dtype=np.int64, count=n)
        self.starts = np.cumsum(lengths + 1) - lengths - 1
        self.lengths = lengths
        if not text.isascii():  # one ASCII stand-in per character: the offsets hold after lower()
            plain &= ~self.touched(_NOT_ASCII, text)
            text = _NOT_ASCII.sub("\x00", text)
        self.text = text
        self.plain = plain
        self._lowered: str | None = None

    def __len__(self) -> int:
        return len(self.starts)

    @property
    def lowered(self) -> str:
        """The text lower-cased (ASCII only, so every offset holds)."""
        if self._lowered is None:
            self._lowered = self.text.lower()
        return self._lowered

    def touched(self, pattern: re.Pattern[str], text: str | None = None) -> Any:
        """A boolean array: which strings a match of `pattern` in `text` (by default the
        joined text) touches, from the one it starts in to the one it ends in."""
        hit = np.zeros(len(self), dtype=bool)
        if not len(self):
            return hit
        spans = [m.span() for m in pattern.finditer(self.text if text is None else text)]
        if not spans:
            return hit
        at = np.asarray(spans, dtype=np.int64)
        first = np.searchsorted(self.starts, at[:, 0], "right") - 1
        last = np.searchsorted(self.starts, np.maximum(at[:, 1] - 1, at[:, 0]), "right") - 1
        hit[first] = True
        for a, b in zip(first[first != last].tolist(), last[first != last].tolist(), strict=True):
            hit[a : b + 1] = True  # a match across strings: a superset, checked again by the caller
        return hit

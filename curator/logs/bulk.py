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


def table(chars: str) -> Any:
    """256 booleans, true at the codes of `chars` (ASCII)."""
    out = np.zeros(256, dtype=bool)
    out[[ord(ch) for ch in chars]] = True
    return out


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
        self._codes: Any = None

    def __len__(self) -> int:
        return len(self.starts)

    @property
    def lowered(self) -> str:
        """The text lower-cased (ASCII only, so every offset holds)."""
        if self._lowered is None:
            self._lowered = self.text.lower()
        return self._lowered

    @property
    def codes(self) -> Any:
        """The text as a numpy array of its (ASCII) character codes."""
        if self._codes is None:
            self._codes = np.frombuffer(self.text.encode("ascii"), dtype=np.uint8)
        return self._codes

    def holding(self, at: Any) -> Any:
        """A boolean array: which strings hold a position where `at` (a boolean array
        over the text, as `codes`) is true."""
        hit = np.zeros(len(self), dtype=bool)
        hit[np.searchsorted(self.starts, np.flatnonzero(at), "right") - 1] = True
        return hit

    def untidy(self) -> Any:
        """A boolean array: strings `grouping.tidy` could change (ASCII whitespace other
        than single spaces between words, control codes)."""
        c = self.codes
        if not len(c):
            return self.lengths < 0
        at = ((c < 32) & (c != 10)) | (c == 127)  # the separator is a newline; \x00 stands for non-ASCII
        edge = (c == 32) & (np.r_[True, c[:-1] == 10] | np.r_[c[1:] == 10, True] | np.r_[c[1:] == 32, False])
        return self.holding(at | edge)

    def starting(self, table: Any) -> Any:
        """A boolean array: strings that are empty or start with a character `table` marks."""
        c = self.codes
        hit = self.lengths == 0
        hit[~hit] = table[c[self.starts[~hit]]]
        return hit

    def opening(self, words: list[str]) -> Any:
        """A boolean array: strings that are empty or start with one of `words` (ASCII,
        lower case), in any case."""
        c = self.codes
        hit = self.lengths == 0
        for word in words:
            here = self.lengths >= len(word)
            for i, ch in enumerate(word):
                at = self.starts[here] + i
                here[here] = (c[at] | np.uint8(32) if ch.isalpha() else c[at]) == ord(ch)
            hit |= here
        return hit

    def repeating(self) -> Any:
        """A boolean array: strings whose first two characters are alike."""
        c = self.codes
        hit = self.lengths >= 2
        hit[hit] = c[self.starts[hit]] == c[self.starts[hit] + 1]
        return hit

    def case_changes(self) -> Any:
        """A boolean array: strings with a case change inside a word, where
        `normalise.identifier_signature` looks (`[a-z0-9][A-Z]|[A-Z][A-Z][a-z]`)."""
        c = self.codes
        upper, lower = _UPPER[c], _LOWER[c]
        at = np.zeros(len(c), dtype=bool)
        at[:-1] |= (lower[:-1] | _DIGITS[c[:-1]]) & upper[1:]
        at[:-2] |= upper[:-2] & upper[1:-1] & lower[2:]
        return self.holding(at)

    def with_prefixes(self, prefixes: Prefixes, lowered: bool = False) -> Any:
        """A boolean array: strings that hold one of the `prefixes`, in the text or
        (`lowered`) in the text lower-cased; a block of the text at a time. Only where
        two characters begin a prefix are the next two looked at."""
        at = np.zeros(len(self.codes), dtype=bool)
        for start in range(0, len(self.codes), _BLOCK):
            codes = self.codes[start : start + _BLOCK + 3]  # 3 more: the four characters from each position
            if lowered:
                codes = codes + _UPPER[codes].view(np.uint8) * np.uint8(32)
            here = prefixes.chars[codes]
            pairs = (codes[:-1].astype(np.uint16) << 7) | codes[1:]
            here[:-1] |= prefixes.pairs[pairs]
            maybe = np.flatnonzero(prefixes.begins[pairs[:-1]])  # two characters that begin a longer prefix
            if len(maybe):
                triples = (pairs[maybe].astype(np.uint32) << 7) | codes[maybe + 2]
                here[maybe[prefixes.triples[triples]]] = True
                longer = np.flatnonzero(prefixes.starts[triples] & (maybe + 3 < len(codes)))
                if len(longer):
                    quads = (triples[longer] << 7) | codes[maybe[longer] + 3]
                    here[maybe[longer[np.isin(quads, prefixes.quads)]]] = True
            at[start : start + _BLOCK] = here[:_BLOCK]
        return self.holding(at)

    def with_codes(self, table: Any) -> Any:
        """A boolean array: strings holding a character whose code `table` (256 booleans) marks."""
        return self.holding(table[self.codes])

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


_UPPER = table("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_LOWER = table("abcdefghijklmnopqrstuvwxyz")
_DIGITS = table("0123456789")
UPPER, DIGITS = _UPPER, _DIGITS
ALNUM = _UPPER | _LOWER | _DIGITS
# what plain_key keeps of an ASCII norm as it is: word characters, placeholders' <>, spaces
NOT_PLAIN = ~(ALNUM | table("_<> \n"))


_BLOCK = 1 << 20  # characters screened at a time: the temporary arrays stay small


class Prefixes:
    """ASCII prefixes of one to four characters, as look-up tables over character codes."""

    def __init__(self, prefixes: list[str]) -> None:
        self.chars = np.zeros(128, dtype=bool)
        self.pairs = np.zeros(1 << 14, dtype=bool)
        self.triples = np.zeros(1 << 21, dtype=bool)
        self.starts = np.zeros(1 << 21, dtype=bool)  # the first three characters of a four-character prefix
        self.begins = np.zeros(1 << 14, dtype=bool)  # the first two characters of a longer prefix
        quads = []
        for prefix in prefixes:
            c = [ord(ch) for ch in prefix]
            assert 1 <= len(c) <= 4 and all(code < 128 for code in c), prefix
            key = 0
            for code in c:
                key = (key << 7) | code
            if len(c) == 1:
                self.chars[key] = True
            elif len(c) == 2:
                self.pairs[key] = True
            elif len(c) == 3:
                self.triples[key] = True
                self.begins[key >> 7] = True
            else:
                self.starts[key >> 7] = True
                self.begins[key >> 14] = True
                quads.append(key)
        self.quads = np.array(sorted(quads), dtype=np.uint32)

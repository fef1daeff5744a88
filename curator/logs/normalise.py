"""Grouping keys for queries: exact-normal form, comparison form, identifiers.

`normalize_query` (NFKC, case-folded, whitespace collapsed) is the key candidates are
stored under, so two log lines that differ only in case or padding are one query.
The comparison form also drops punctuation and sorts words, so `cutoff DHL` and
`dhl-cutoff` compare equal in fuzzy matching; digits must agree exactly so that
`CARRIER-E1042` never joins `CARRIER-E1043`.
"""

from __future__ import annotations

import re
from functools import partial
from itertools import compress
from operator import methodcaller, not_

from curator.text import normalize_query

__all__ = ["normalize_query", "compare_key", "compare_keys", "digit_signature", "digit_signatures", "looks_like_identifier"]

_PUNCT = re.compile(r"[^\w<>]+")
_DIGITS = re.compile(r"\d+")
_IDENTIFIER = re.compile(
    r"\b[A-Z][A-Z0-9]*-[A-Z]?\d{2,}\b"  # CARRIER-E1042, INC-4712
    r"|\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+){2,}\b"  # ManifestQueueStuck
    r"|\b[a-z][a-z0-9_]*\.[a-z][a-z0-9_.]*[a-z0-9_]\b"  # parser.max_retries
    r"|(?<![\w-])--[a-z][a-z0-9-]+"  # --enable-label-cache
    r"|\b[a-z]+_[a-z0-9_]+\b"  # weight_grams
)


def compare_key(norm: str) -> str:
    """Punctuation-free, word-sorted form of a normalised query, for fuzzy matching."""
    if norm.replace(" ", "").isalnum():  # no punctuation (\w is isalnum() or `_`): skip the regex
        return " ".join(sorted(norm.split()))
    return " ".join(sorted(_PUNCT.sub(" ", norm).split()))


def compare_keys(norms: list[str]) -> list[str]:
    """`compare_key` of each of `norms`, with C-level maps: most have no punctuation."""
    spaced = list(norms)
    punctuated = list(compress(range(len(norms)), map(not_, map(str.isalnum, map(methodcaller("replace", " ", ""), norms)))))
    for j, text in zip(punctuated, map(partial(_PUNCT.sub, " "), map(norms.__getitem__, punctuated)), strict=True):
        spaced[j] = text
    return list(map(" ".join, map(sorted, map(str.split, spaced))))


def digit_signature(norm: str) -> str:
    """The digit runs of a query, in order: two queries with different numbers are
    different questions however alike the rest looks."""
    return " ".join(_DIGITS.findall(norm))


# bytes: ASCII digits and newlines kept, every other byte a space
_ONLY_DIGITS = bytes(c if 0x30 <= c <= 0x39 or c == 0x0A else 0x20 for c in range(256))


def digit_signatures(norms: list[str]) -> list[str]:
    """`digit_signature` of each of `norms`, with C-level maps. The ASCII ones (most)
    in one pass over all of them joined, every character but digits made a space
    (`bytes.translate`): their digit runs are then what `str.split` finds. 40% less
    time than a regex per query (0.07 s for the benchmark's 168k)."""
    joined = "\n".join(norms)
    if joined.isascii():
        return _ascii_signatures(norms, joined)
    is_ascii = list(map(str.isascii, norms))
    signatures = [""] * len(norms)
    for at, found in ((list(compress(range(len(norms)), is_ascii)), _ascii_signatures),
                      (list(compress(range(len(norms)), map(not_, is_ascii))), _regex_signatures)):
        for k, signature in zip(at, found(list(map(norms.__getitem__, at))), strict=True):
            signatures[k] = signature
    return signatures


def _ascii_signatures(texts: list[str], joined: str | None = None) -> list[str]:
    """`joined`: the texts joined by newlines, if already made."""
    joined = "\n".join(texts) if joined is None else joined
    if not texts or joined.count("\n") != len(texts) - 1:  # none, or a text with a newline of its own
        return _regex_signatures(texts)
    return list(map(" ".join, map(str.split, joined.encode().translate(_ONLY_DIGITS).decode().split("\n"))))


def _regex_signatures(texts: list[str]) -> list[str]:
    return list(map(" ".join, map(_DIGITS.findall, texts)))


def looks_like_identifier(query: str) -> bool:
    """Does the query quote an error code, alert name, config key or flag verbatim?"""
    return bool(_IDENTIFIER.search(query))

"""Grouping keys for queries: exact-normal form, comparison form, identifiers.

`normalize_query` (NFKC, case-folded, whitespace collapsed) is the key candidates are
stored under, so two log lines that differ only in case or padding are one query.
The comparison form also drops punctuation and sorts words, so `cutoff DHL` and
`dhl-cutoff` compare equal in fuzzy matching; digits must agree exactly so that
`CARRIER-E1042` never joins `CARRIER-E1043`.
"""

from __future__ import annotations

import re

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
    """`compare_key` of each of `norms`."""
    return [compare_key(norm) for norm in norms]


def digit_signature(norm: str) -> str:
    """The digit runs of a query, in order: two queries with different numbers are
    different questions however alike the rest looks."""
    return " ".join(_DIGITS.findall(norm))


def digit_signatures(norms: list[str]) -> list[str]:
    """`digit_signature` of each of `norms`."""
    return [" ".join(_DIGITS.findall(norm)) for norm in norms]


def looks_like_identifier(query: str) -> bool:
    """Does the query quote an error code, alert name, config key or flag verbatim?"""
    return bool(_IDENTIFIER.search(query))

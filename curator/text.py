"""Small text helpers shared by importers, generators and the question-set store."""

from __future__ import annotations

import hashlib
import re
import unicodedata

_SPACE = re.compile(r"\s+")
_SLUG_DROP = re.compile(r"[^a-z0-9]+")


def normalize_query(text: str) -> str:
    """The grouping key of a query: NFKC, case-folded, whitespace collapsed."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def query_slug(text: str, max_words: int = 6, max_len: int = 48) -> str:
    """A readable id stem from a query: `What is CARRIER-E1042?` -> `what-is-carrier-e1042`.
    Whole words only, at most `max_words` and `max_len` characters."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    slug = ""
    for word in [w for w in _SLUG_DROP.split(ascii_text) if w][:max_words]:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > max_len:
            slug = slug or word[:max_len]
            break
        slug = candidate
    return slug or "q"


def sha256_hex(data: str | bytes) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def fingerprint(text: str) -> str:
    """Content fingerprint of a passage: whitespace-insensitive, 16 hex digits."""
    return sha256_hex(" ".join(text.split()))[:16]

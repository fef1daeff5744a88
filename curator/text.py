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


# ---- heading anchors ---------------------------------------------------------------------

_CODE_SPAN_RE = re.compile(r"(`+)(.+?)\1")
_LINK_RE = re.compile(r"!?\[([^\]]*)\](?:\([^)]*\)|\[[^\]]*\])")
_AUTOLINK_RE = re.compile(r"<((?:https?|ftp|mailto):[^>\s]*)>")
_HTML_TAG_RE = re.compile(r"</?[A-Za-z][^>]*>")
_ESCAPE_SPLIT_RE = re.compile(r"\\([!-/:-@\[-`{-~])")
# `_` is emphasis only at a word edge: snake_case names keep theirs.
_EMPHASIS_RE = re.compile(r"\*+|~~|(?<!\w)_+|_+(?!\w)")
_SLUG_DROP_RE = re.compile(r"[^\w\s-]")


def _strip_outside_code(text: str) -> str:
    text = _LINK_RE.sub(r"\1", text)
    text = _AUTOLINK_RE.sub(r"\1", text)
    text = _HTML_TAG_RE.sub("", text)
    parts = _ESCAPE_SPLIT_RE.split(text)  # odd items are escaped characters: keep them
    for i in range(0, len(parts), 2):
        parts[i] = _EMPHASIS_RE.sub("", parts[i])
    return "".join(parts)


def strip_markdown(text: str) -> str:
    """Inline Markdown to plain text; code span contents are kept verbatim."""
    out: list[str] = []
    pos = 0
    for m in _CODE_SPAN_RE.finditer(text):
        out.append(_strip_outside_code(text[pos : m.start()]))
        out.append(m.group(2).strip())
        pos = m.end()
    out.append(_strip_outside_code(text[pos:]))
    return "".join(out)


def slugify(heading: str) -> str:
    """GitHub-style anchor: inline Markdown stripped, lowercased, punctuation except ``-``
    and ``_`` dropped, each space a ``-`` (like GitHub, runs are not collapsed)."""
    text = _SLUG_DROP_RE.sub("", strip_markdown(heading).strip().lower())
    return _SPACE.sub(lambda m: "-" * len(m.group()), text) or "section"


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


_EDGE_PUNCT = "?!.,;:\"'()[]{}<>`"
_IDENTIFIER = re.compile(r"[a-z][A-Z]|\d|_|\w[.:/]\w")


def _is_identifier(token: str) -> bool:
    """A word that names something exactly: CamelCase, digits, snake_case, dotted or
    path-like, or all capitals (`HighlyAvailableWorkloadIncorrectlySpread`, `CARRIER-E1042`,
    `parser.max_retries`, `DHL`)."""
    word = token.strip(_EDGE_PUNCT)
    return bool(_IDENTIFIER.search(word)) or (len(word) >= 2 and word.isupper())


def query_slug(text: str, max_words: int = 6, max_len: int = 48) -> str:
    """A readable id stem from a query: `What is CARRIER-E1042?` -> `what-is-carrier-e1042`.
    Whole words only, at most `max_words` and `max_len` characters, in the query's order.
    The query's identifiers go in first, so a long one is never dropped for the words
    before it: `What triggers HighlyAvailableWorkloadIncorrectlySpread?` ->
    `what-highlyavailableworkloadincorrectlyspread`; an identifier longer than `max_len`
    alone is cut."""
    units: list[tuple[str, int, bool]] = []  # (slug piece, words in it, identifier?)
    for token in text.split():
        ascii_token = unicodedata.normalize("NFKD", token).encode("ascii", "ignore").decode().lower()
        words = [w for w in _SLUG_DROP.split(ascii_token) if w]
        if words:
            units.append(("-".join(words), len(words), _is_identifier(token)))
    chosen: set[int] = set()
    length = words_used = 0

    def fits(index: int) -> bool:
        piece, count, _ = units[index]
        return length + len(piece) + (1 if chosen else 0) <= max_len and words_used + count <= max_words

    for only_identifiers in (True, False):
        for index, (piece, count, identifier) in enumerate(units):
            if index in chosen or (only_identifiers and not identifier):
                continue
            if not fits(index):
                if only_identifiers:
                    continue
                break  # plain words: up to the first that does not fit, as they were asked
            length += len(piece) + (1 if chosen else 0)
            words_used += count
            chosen.add(index)
    if not chosen:
        return units[0][0][:max_len].strip("-") if units else "q"
    return "-".join(units[i][0] for i in sorted(chosen))


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


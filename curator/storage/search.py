"""Full-text search over current passages: BM25 through the FTS5 index `passages_fts`,
with words taken rarest first (document frequencies in `term_stats`) and snippets cut
around the matched words.
"""

from __future__ import annotations

import json
import re
import unicodedata

from curator.models import SearchHit
from curator.storage.base import Storage
from curator.storage.terms import query_words

# Highlight marks around matched terms in search snippets (rendered bold by the CLI/app).
HL_START, HL_END = "\x02", "\x03"
_FTS_WORD = re.compile(r"\w+", re.UNICODE)
_FTS_COMPOUND = re.compile(r"\w+(?:[-_./:]\w+)+", re.UNICODE)
SEARCH_POSTINGS = 1_000  # see SearchStorage.search
# BM25 column weights: heading, text, identifier parts (storage/terms.py), document path.
_WEIGHTS = "2.0, 1.0, 1.0, 3.0"


class SearchStorage(Storage):
    def search(self, query: str, limit: int = 10) -> list[SearchHit]:
        """BM25 full-text search over current passages.

        Any word may match (OR), and compound identifiers such as `CARRIER-E1042` or
        `parser.max_retries` also count as phrases, so verbatim matches rank first. Words
        are taken rarest first until they would match more than `SEARCH_POSTINGS`
        passages: a word found in most passages ("the", "prometheus" in a Prometheus
        corpus) adds little to BM25 but costs a score for every passage holding it.
        """
        words, phrases = _fts_terms(query)
        if not words and not phrases:
            return []
        with self.lock:
            if self.meta("term_stats") == "stale":
                self._refresh_term_stats()
            frequency = self._term_frequencies(words)
            present = sorted((w for w in words if frequency.get(w)), key=lambda w: frequency[w])
            kept: list[str] = []
            total = 0
            for word in present:  # rarest first
                if kept and total + frequency[word] > SEARCH_POSTINGS:
                    break
                kept.append(word)
                total += frequency[word]
            terms = [f'"{p}"' for p in phrases] + [f'"{w}"' for w in kept]
            if not terms:
                return []
            matches = [" OR ".join(terms)]
            if total > SEARCH_POSTINGS and len(present) > 1:
                # Even the rarest word is common: passages holding the two rarest words
                # together are fewer and better; fall back to either if none has both.
                matches.insert(0, f'"{present[0]}" AND "{present[1]}"' + "".join(f' OR "{p}"' for p in phrases))
            top: list[tuple[int, float]] = []
            for match in matches:
                top = self.db.execute(
                    f"SELECT rowid, bm25(passages_fts, {_WEIGHTS}) FROM passages_fts "
                    "WHERE passages_fts MATCH ? ORDER BY 2 LIMIT ?",
                    [match, limit],
                ).fetchall()
                if top:
                    break
            if not top:
                return []
            marks = ",".join("?" * len(top))
            rows = {
                r[0]: r
                for r in self.db.execute(
                    "SELECT rowid, id, revision, heading_path, title, text FROM passages "
                    f"WHERE rowid IN ({marks})",
                    [rowid for rowid, _ in top],
                )
            }
        # Snippets are cut here, for the shown rows only: FTS5's snippet() needs a second
        # MATCH over every matching passage.
        highlight = set(kept) | {w for p in phrases for w in p.split()}
        return [
            SearchHit(
                id=r[1],
                revision=r[2],
                heading_path=json.loads(r[3] or "[]"),
                title=r[4],
                snippet=snippet(r[5], highlight),
                score=-score,
            )
            for rowid, score in top
            if (r := rows.get(rowid))
        ]

    def _term_frequencies(self, words: list[str]) -> dict[str, int]:
        if not words:
            return {}
        marks = ",".join("?" * len(words))
        return {
            r[0]: r[1]
            for r in self.db.execute(f"SELECT term, docs FROM term_stats WHERE term IN ({marks})", words)
        }

    def _refresh_term_stats(self) -> None:
        """Rebuild the word frequencies (`import_documents` marks them stale)."""
        with self.transaction():
            self.db.execute("DELETE FROM term_stats")
            self.db.execute("INSERT INTO term_stats SELECT term, doc FROM passages_fts_vocab")
            self.db.execute("DELETE FROM meta WHERE key = 'term_stats'")


def snippet(text: str, words: set[str], size: int = 24) -> str:
    """About `size` words of `text` around the first of `words` (folded as FTS5 folds
    them), each match wrapped in HL_START/HL_END, with `…` where text was cut."""
    spans = list(_FTS_WORD.finditer(text))
    if not spans:
        return text[:200]
    hits = [i for i, m in enumerate(spans) if _fold(m.group()) in words]
    first = hits[0] if hits else 0
    start = max(0, first - size // 3)
    end = min(len(spans), start + size)
    start = max(0, end - size)
    begin = spans[start].start()
    # to the end of the text when the last word is in the window, so closing
    # punctuation stays; otherwise to the end of the window's last word
    finish = len(text.rstrip()) if end == len(spans) else spans[end - 1].end()
    out = ["…" if start > 0 else ""]
    cursor = begin
    for i in hits:
        if start <= i < end:
            m = spans[i]
            out.append(text[cursor : m.start()])
            out.append(f"{HL_START}{m.group()}{HL_END}")
            cursor = m.end()
    out.append(text[cursor:finish])
    out.append("…" if end < len(spans) else "")
    return "".join(out)


def _fts_terms(text: str) -> tuple[list[str], list[str]]:
    """(words, phrases) of free text as the index holds them: words lower-cased like the
    unicode61 tokenizer plus identifier parts and joined runs (`terms.query_words`; the
    ones the corpus lacks are dropped by their frequency), compound identifiers as
    space-joined phrases."""
    words = list(dict.fromkeys(_fold(w) for w in query_words(text)))
    phrases = list(
        dict.fromkeys(" ".join(_fold(w) for w in _FTS_WORD.findall(c)) for c in _FTS_COMPOUND.findall(text))
    )
    return [w for w in words if w], [p for p in phrases if p]


def _fold(word: str) -> str:
    """Lower-case and strip diacritics, as `unicode61 remove_diacritics 2` indexes words."""
    lower = word.lower()
    if lower.isascii():  # nearly every word: nothing to strip
        return lower.replace('"', "")
    decomposed = unicodedata.normalize("NFKD", lower)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).replace('"', "")


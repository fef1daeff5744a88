"""Per-slice passage selection, grouping and the checks a generated question must pass.

Selection is stratified across documents and repeatable (`seed`); checks are cheap and
local (rapidfuzz, the corpus's own full-text search), so a rejected candidate costs no
further model call.
"""

from __future__ import annotations

import posixpath
import random
import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from rapidfuzz import fuzz, process
from rapidfuzz.utils import default_process

from curator.generate.identifiers import Identifier, contains_verbatim, mine
from curator.models import Passage
from curator.text import normalize_query

if TYPE_CHECKING:
    from curator.workspace import Workspace

# A finder of a group's next member: (passage, relation) or None.
_Found = tuple[Passage, str] | None
_Docs = dict[str, list[Passage]]

_STOP = """a an and are as at be by can do does did for from has have how i if in is it its my
    of on or our should so that the their then there these this to was we what when where
    which who why will with you your me us get set use using after before about into out
    not no any all one two vs"""
STOPWORDS = frozenset(_STOP.split())
_WORD = re.compile(r"[\w.-]+", re.UNICODE)
_LINK = re.compile(r"\]\(([^)#\s]+\.(?:md|markdown|rst|html?|txt))(?:#[^)]*)?\)")
_META = re.compile(r"\b(the|this|that|above|given) (passage|document|text|section|excerpt)\b", re.I)


def content_words(text: str) -> list[str]:
    words = [w.strip(".-").lower() for w in _WORD.findall(text)]
    return [w for w in words if len(w) > 2 and w not in STOPWORDS]


# ---- selection ---------------------------------------------------------------------------


def covered_passage_ids(ws: Workspace) -> set[str]:
    """Passages labelled by a case (any set), or already used by a generated candidate
    (whatever its state: binned ones were tried). Passages that log-mined candidates
    merely suggest from search hits do not count: those are guesses, not coverage."""
    covered: set[str] = set()
    for candidate in ws.candidates(source_kind="generated"):
        covered.update(s.id for s in candidate.suggestions)
        covered.update(
            p["id"] for p in candidate.provenance.get("passages", []) if isinstance(p, dict) and "id" in p
        )
    for name in ws.set_names():
        for case in ws.question_set(name).read().cases.values():
            covered.update(r.id for r in case.relevant)
    return covered


def stratified_order(
    passages: Iterable[Passage], seed: int, keep: Callable[[Passage], bool] = lambda _p: True
) -> list[Passage]:
    """Passages round-robin over documents (documents and their passages in a seeded
    random order), so the first N are spread across as many documents as possible. The
    shuffle is over every passage given; `keep` filters afterwards, so skipping some
    passages never reorders the others (a rerun draws the same ones)."""
    rng = random.Random(seed)
    by_doc: dict[str, list[Passage]] = defaultdict(list)
    for p in passages:
        by_doc[p.doc_id].append(p)
    docs = sorted(by_doc)
    rng.shuffle(docs)
    queues = []
    for doc in docs:
        items = sorted(by_doc[doc], key=lambda p: (p.ordinal, p.id))
        rng.shuffle(items)
        queues.append(items)
    queues = [[p for p in q if keep(p)] for q in queues]
    order: list[Passage] = []
    depth = 0
    while True:
        layer = [q[depth] for q in queues if depth < len(q)]
        if not layer:
            return order
        order.extend(layer)
        depth += 1


def select_passages(
    ws: Workspace,
    n: int,
    seed: int,
    *,
    min_words: int,
    reusable: Callable[[Passage], bool] = lambda _p: False,
    only: set[str] | None = None,
) -> tuple[list[Passage], int]:
    """Up to `n` current passages of at least `min_words` words, stratified across
    documents, skipping those already covered by candidates or cases unless `reusable`
    (their work is cached, so including them keeps a rerun identical and free). Passages
    named in `only` are taken even when covered: asking again is what the user wants.
    Returns (passages, how many skipped)."""
    covered = covered_passage_ids(ws) if only is None else set()
    skipped = 0

    def keep(p: Passage) -> bool:
        nonlocal skipped
        if len(p.text.split()) < min_words and only is None:
            return False
        if p.id in covered and not reusable(p):
            skipped += 1
            return False
        return True

    pool = [p for p in ws.passages() if only is None or p.id in only]
    return stratified_order(pool, seed, keep)[:n], skipped


# ---- multi-hop groups --------------------------------------------------------------------


@dataclass
class Group:
    passages: list[Passage]
    relation: str


def build_groups(
    ws: Workspace, selected: list[Passage], count: int, size: int, seed: int
) -> list[Group]:
    """Up to `count` groups of `size` (2-3) related passages, each started from a selected
    passage: the next section of the same document, a document it links to, or a passage
    elsewhere sharing a rare identifier."""
    if count <= 0:
        return []
    rng = random.Random(seed + 1)
    docs: _Docs = {}
    for p in ws.passages():
        docs.setdefault(p.doc_id, []).append(p)
    by_path: _Docs = {}
    for doc_id, items in docs.items():
        path = items[0].path or doc_id
        by_path[PurePosixPath(path).as_posix()] = items
    starts = list(selected)
    rng.shuffle(starts)
    groups: list[Group] = []
    used: set[frozenset[str]] = set()
    for start in starts:
        if len(groups) >= count:
            break
        members = [start]
        relations: list[str] = []
        for finder in (_linked, _same_document, _shared_identifier):
            if len(members) >= size:
                break
            found = finder(ws, start, members, docs, by_path)
            if found:
                members.append(found[0])
                relations.append(found[1])
        key = frozenset(p.id for p in members)
        if len(members) >= 2 and key not in used:
            used.add(key)
            groups.append(Group(members, "; ".join(relations)))
    return groups


def _same_document(ws: Workspace, start: Passage, members: list[Passage], docs: _Docs, by_path: _Docs) -> _Found:
    ids = {m.id for m in members}
    siblings = [p for p in docs.get(start.doc_id, []) if p.id not in ids]
    if not siblings:
        return None
    near = min(siblings, key=lambda p: (abs(p.ordinal - start.ordinal), p.ordinal))
    if len(near.text.split()) < 15:
        return None
    return near, f"two sections of {start.doc_id}"


def _linked(ws: Workspace, start: Passage, members: list[Passage], docs: _Docs, by_path: _Docs) -> _Found:
    ids = {m.id for m in members}
    base = PurePosixPath(start.path or start.doc_id).parent
    for target in _LINK.findall(start.text):
        if "://" in target:
            continue
        items = by_path.get(posixpath.normpath(base / target))
        if items:
            options = [p for p in items if p.id not in ids and len(p.text.split()) >= 15]
            if options:
                return options[0], f"{start.doc_id} links to {options[0].doc_id}"
    return None


def _shared_identifier(
    ws: Workspace, start: Passage, members: list[Passage], docs: _Docs, by_path: _Docs
) -> _Found:
    ids = {m.id for m in members}
    docs_in = {m.doc_id for m in members}
    for ident in mine(start.text)[:5]:
        for hit in ws.search(ident.text, limit=5):
            if hit.id in ids:
                continue
            p = ws.passage(hit.id)
            if p and p.doc_id not in docs_in and contains_verbatim(p.text, ident.text):
                return p, f"both mention {ident.text}"
    return None


# ---- checks ------------------------------------------------------------------------------


def general_problem(question: str) -> str | None:
    q = question.strip()
    if len(q) < 8:
        return "too short"
    if len(q) > 300:
        return "too long"
    if _META.search(q):
        return "refers to the passage itself"
    return None


def check_identifier(question: str, claimed: str, identifiers: list[Identifier]) -> tuple[str | None, str]:
    """(problem or None, the identifier the question quotes)."""
    texts = [i.text for i in identifiers]
    if claimed in texts and contains_verbatim(question, claimed):
        return None, claimed
    for text in texts:
        if contains_verbatim(question, text):
            return None, text
    return "does not quote an identifier from the passage verbatim", claimed


def paraphrase_overlap(question: str, passage_text: str) -> float:
    """How much of the question's wording the passage already holds (0-100)."""
    q = " ".join(content_words(question))
    if not q:
        return 100.0
    return fuzz.token_set_ratio(q, " ".join(set(content_words(passage_text))))


def negative_match(ws: Workspace, question: str, max_coverage: float,
                   dense_top: tuple[str, str | None] | None = None) -> tuple[str, float] | None:
    """The passage that answers a supposedly unanswerable question, if any: one that quotes
    an identifier the question names verbatim (coverage 1.0), or BM25's top hits (and the
    dense retriever's top hit, `dense_top`) holding `max_coverage` of the question's salient
    terms: its content words, CamelCase and snake/dotted identifiers split into their parts."""
    for ident in question_identifiers(question):
        for hit in ws.search(ident, limit=5):
            passage = ws.passage(hit.id, hit.revision)
            if passage is None:
                continue
            where = " ".join((passage.text, passage.heading, passage.title or "", hit.id))
            if contains_verbatim(where, ident):
                return hit.id, 1.0
    words = salient_terms(question)
    if not words:
        return None
    tops: list[tuple[str, str | None]] = [(hit.id, hit.revision) for hit in ws.search(question, limit=3)]
    if dense_top is not None:
        tops.append(dense_top)
    for pid, revision in tops:
        passage = ws.passage(pid, revision)
        if passage is None:
            continue
        have = salient_terms(passage.text + " " + passage.heading + " " + (passage.title or ""))
        coverage = len(words & have) / len(words)
        if coverage >= max_coverage:
            return pid, coverage
    return None


_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[._-][A-Za-z0-9]+)*")
_IDENT_LIKE = re.compile(r"[a-z][A-Z]|[A-Z]{2,}[a-z]|[A-Za-z0-9][._][A-Za-z0-9]|[A-Za-z]\d")
_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def question_identifiers(text: str) -> list[str]:
    """Identifiers a question names: those `identifiers.mine` finds, and CamelCase, snake,
    dotted or digit-bearing tokens (`VirtApiRESTErrorsHigh`, `etcdNoLeader`, `max_retries`)."""
    found = dict.fromkeys(i.text for i in mine(text))
    for tok in _TOKEN.findall(text):
        if len(tok) >= 5 and _IDENT_LIKE.search(tok):
            found.setdefault(tok)
    return list(found)


def salient_terms(text: str) -> set[str]:
    """Content words, plus each identifier-like token's parts (`CephClusterNearFull` ->
    ceph, cluster, near, full) so a split-word question meets its alert name."""
    terms = set(content_words(text))
    for tok in _TOKEN.findall(text):
        if _IDENT_LIKE.search(tok):
            terms.update(p.lower() for p in _PARTS.findall(tok) if len(p) > 2 and p.lower() not in STOPWORDS)
    return terms


def freshness_problem(old_answer: str, new_answer: str, previous: str, current: str) -> str | None:
    old_n, new_n = normalize_query(old_answer), normalize_query(new_answer)
    if not new_n:
        return "no current answer"
    if old_n == new_n or fuzz.ratio(old_n, new_n) >= 95:
        return "the answer is the same in both revisions"
    prev_l, cur_l = normalize_query(previous), normalize_query(current)
    if new_n in prev_l and old_n and old_n in cur_l:
        return "both answers appear in both revisions"
    return None


def multi_hop_problem(used: list[str], group_ids: list[str]) -> str | None:
    if set(group_ids) - set(used):
        return "does not need every passage of the group"
    return None


# ---- de-duplication ----------------------------------------------------------------------

# Tokens that name something specific: with a digit, or joined by `_`, `.` or `/`.
_IDENTISH = re.compile(r"[\w.-]*\d[\w.-]*|\w+[_./][\w./-]+")


class Deduper:
    """Near-duplicate detection against existing candidates, cases and this run's output.
    Two questions naming different identifiers are never duplicates."""

    def __init__(self, threshold: float, norms: Iterable[str] = ()):
        self.threshold = threshold
        self.norms = list(dict.fromkeys(norms))
        self._processed = [default_process(n) for n in self.norms]  # once, not on every lookup

    def add(self, text: str) -> None:
        norm = normalize_query(text)
        self.norms.append(norm)
        self._processed.append(default_process(norm))

    def duplicate_of(self, text: str) -> str | None:
        norm = normalize_query(text)
        mine_ids = set(_IDENTISH.findall(norm))
        for _match, _score, index in process.extract(
            default_process(norm), self._processed, scorer=fuzz.token_sort_ratio,
            score_cutoff=self.threshold, limit=5,
        ):
            if set(_IDENTISH.findall(self.norms[index])) == mine_ids:
                return self.norms[index]
        return None


def existing_questions(ws: Workspace) -> list[str]:
    norms = list(ws.candidate_norms())
    for name in ws.set_names():
        norms.extend(normalize_query(c.query) for c in ws.question_set(name).read().cases.values())
    return norms

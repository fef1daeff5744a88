"""TREC-style pooling: every source's ranked candidates for a query, in one order.

Sources, in the order that breaks ties: an exact name (`exact`: of the passages the other
sources propose, those the query names verbatim by id, document path or file name, or
heading, e.g. `KubePodCrashLooping`; looked up for those passages only, so a card never
waits on an index of the whole corpus), the candidate's own passages (log `clicked` and
`hit`, `generated from`, ...), curator's BM25 (`bm25`), the dense retriever when one is
configured (`dense`), and the top `depth` of every stored run in `retriever-runs/` or
`runs/` whose query ids include this query's (`run:<file name>`). A run "has the query"
when one of its query ids is the case's id or the id the query would get (its slug).

The order (`fuse`), in three tiers: exact-name matches first; then every source's first
choice; then the rest. Within a tier, reciprocal-rank fusion (RRF: score = sum over
sources of 1 / (rrf_k + rank)), ties in source order. Plain RRF lets two weaker lists that
agree on a wrong passage push one source's right first answer below them; the tiers keep
each source's best guess on the card's first rows, so the pool is never worse than its
best source at finding the answer within the first (number of sources) rows.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curator.errors import CuratorError
from curator.suggest import store
from curator.text import query_slug

if TYPE_CHECKING:
    from curator.models import Suggestion
    from curator.scoring.runs import Ranked
    from curator.suggest.dense import DenseIndex, Embedder
    from curator.workspace import Workspace

RUN_SUFFIXES = (".jsonl", ".json", ".trec", ".run", ".txt", ".tsv")
EXACT = "exact"  # the source of passages the query names verbatim
MAX_EXACT = 3  # a name shared by more passages than this is not a name of one thing
# A token that names something rather than says a word: a case change inside it
# (KubeletDown, etcdNoLeader, CPUThrottling), a digit, or a separator between word
# characters (parser.max_retries, CARRIER-E1042, docs/alerts/x.md, ceph.md#ceph).
_NAMEISH = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]|\d|\w[-_./:#]\w")
_EDGE = "?!.,;:\"'()[]{}<>`"
_STATUS = re.compile(r"\s*[\[(][^\])]*[\])]\s*")  # "[Deprecated]", "(beta)" around a heading


@dataclass
class Pooled:
    """One fused passage: its RRF score and each source that proposed it, with the rank."""

    id: str
    revision: str | None
    score: float = 0.0
    sources: list[tuple[str, int]] = field(default_factory=list)
    snippet: str = ""  # BM25's snippet (matched words marked) when BM25 proposed it

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "revision": self.revision, "score": round(self.score, 6),
                "sources": [{"source": s, "rank": r} for s, r in self.sources]}


def fuse(ranked: Iterable[tuple[str, Sequence[tuple[str, str | None]]]], rrf_k: int = 60) -> list[Pooled]:
    """(source, [(passage id, revision), ...best first]) lists in the pool's order: passages
    the `exact` source names, then each source's rank 1, then the rest; RRF within a tier,
    ties in first-seen order (the order of the sources, then of their lists)."""
    pooled: dict[str, Pooled] = {}
    for source, items in ranked:
        seen: set[str] = set()
        for rank, (pid, revision) in enumerate(items, 1):
            if pid in seen:
                continue
            seen.add(pid)
            entry = pooled.setdefault(pid, Pooled(pid, revision))
            entry.revision = entry.revision or revision
            entry.score += 1.0 / (rrf_k + rank)
            entry.sources.append((source, rank))
    order = {pid: i for i, pid in enumerate(pooled)}
    return sorted(pooled.values(), key=lambda p: (_tier(p), -p.score, order[p.id]))


def _tier(p: Pooled) -> int:
    if any(source == EXACT for source, _ in p.sources):
        return 0
    return 1 if any(rank == 1 for _, rank in p.sources) else 2


def query_names(query: str) -> list[str]:
    """The tokens of `query` that look like names, lower-cased, in order:
    `KubePodCrashLooping`, `parser.max_retries`, `docs/a.md`, `CARRIER-E1042`."""
    tokens = [t.strip(_EDGE) for t in query.split()]
    return list(dict.fromkeys(t.lower() for t in tokens if t and _NAMEISH.search(t)))


def name_index(rows: Iterable[tuple[str, str, str, str]]) -> dict[str, list[tuple[str, str]]]:
    """lower-cased name -> the passages it names exactly: a passage's id and its heading
    (the last level, status words in brackets dropped), a document's path and file name
    (its first passage)."""
    names: dict[str, list[tuple[str, str]]] = {}
    first_of: set[str] = set()
    for pid, revision, path, heading in rows:
        keys = [pid.lower()]
        last = _STATUS.sub(" ", heading.split(" › ")[-1]).strip().lower()
        if last and " " not in last:
            keys.append(last)
        if path not in first_of:
            first_of.add(path)
            name = path.rsplit("/", 1)[-1].lower()
            keys += [path.lower(), name, name.rsplit(".", 1)[0]]
        for key in dict.fromkeys(keys):
            names.setdefault(key, []).append((pid, revision))
    return names


class Pool:
    """The sources of one workspace, loaded once (runs on first use, the dense index when
    configured). Thread-safe: the review app prepares cards from a worker. `embedder`: one
    already loaded (a benchmark's), instead of the configured one."""

    def __init__(self, ws: Workspace, *, dense: bool = True, embedder: Embedder | None = None):
        self.ws = ws
        self.config = ws.config.suggest
        self._lock = threading.Lock()
        self._runs: dict[str, list[tuple[str, Ranked]]] | None = None
        self._dense: DenseIndex | None = None
        self._embedder = embedder
        self._dense_wanted = dense and (embedder is not None or self.config.dense != "none")
        self.problems: list[str] = []  # run files that could not be read

    # ---- sources ---------------------------------------------------------------------------

    def runs(self) -> dict[str, list[tuple[str, Ranked]]]:
        """query id -> [(run file name, its ranking)] over every stored run."""
        with self._lock:
            if self._runs is None:
                self._runs = self._load_runs()
            return self._runs

    def _load_runs(self) -> dict[str, list[tuple[str, Ranked]]]:
        from curator.scoring.runs import read_run

        by_query: dict[str, list[tuple[str, Ranked]]] = {}
        for path in self._run_files():
            try:
                run = read_run(path)
            except CuratorError as exc:
                self.problems.append(str(exc))
                continue
            for qid, ranking in run.queries.items():
                by_query.setdefault(qid, []).append((path.name, ranking))
        return by_query

    def _run_files(self) -> list[Path]:
        files: list[Path] = []
        for name in self.config.runs_dirs:
            folder = self.ws.root / name
            if not folder.is_dir():
                continue
            for path in sorted(folder.iterdir()):
                if path.is_file() and path.suffix in RUN_SUFFIXES and not _is_artefact(path):
                    files.append(path)
        return files

    def exact(self, query: str, proposed: Iterable[str]) -> list[tuple[str, str | None]]:
        """Of the `proposed` passages, those `query` names verbatim, in the order of its
        names (`name_index` over those passages' current rows)."""
        found: list[tuple[str, str | None]] = []
        wanted = query_names(query)
        if not wanted:
            return found
        names = name_index(store.passage_names(self.ws, list(dict.fromkeys(proposed))))
        for name in wanted:
            matches = names.get(name, [])
            if len(matches) <= MAX_EXACT:
                found.extend(matches)
        return found

    def dense(self) -> DenseIndex | None:
        if not self._dense_wanted:
            return None
        with self._lock:
            if self._dense is None:
                from curator.suggest.dense import embedder_for, index_for

                embedder = self._embedder or embedder_for(self.ws.config)
                if embedder is not None:
                    self._dense = index_for(self.ws, embedder)
            return self._dense

    # ---- the pool --------------------------------------------------------------------------

    def sources(self, query: str, *, query_id: str | None = None,
                own: Sequence[Suggestion] = (), snippets: dict[str, str] | None = None,
                ) -> list[tuple[str, list[tuple[str, str | None]]]]:
        """Each source's ranked list for `query` (BM25's snippets into `snippets`)."""
        depth = self.config.depth
        lists: list[tuple[str, list[tuple[str, str | None]]]] = []
        by_reason: dict[str, list[tuple[str, str | None]]] = {}
        for s in own:
            by_reason.setdefault(s.reason or "suggested", []).append((s.id, s.revision))
        lists.extend(by_reason.items())
        with self.ws.lock:
            hits = self.ws.search(query, limit=depth)
        lists.append(("bm25", [(h.id, h.revision) for h in hits]))
        if snippets is not None:
            snippets.update((h.id, h.snippet) for h in hits)
        index = self.dense()
        if index is not None:
            lists.append(("dense", [(pid, rev) for pid, rev, _ in index.search(query, depth)]))
        runs = self.runs()
        wanted = [q for q in dict.fromkeys([query_id, query_slug(query)]) if q]
        for qid in wanted:
            for name, ranking in runs.get(qid, []):
                revisions = ranking.revisions or [None] * len(ranking.ids)
                lists.append((f"run:{name}", list(zip(ranking.ids[:depth], revisions[:depth], strict=False))))
        exact = self.exact(query, (pid for _, ranked in lists for pid, _ in ranked))
        return [(EXACT, exact), *lists] if exact else lists

    def suggest(self, query: str, *, query_id: str | None = None, own: Sequence[Suggestion] = (),
                limit: int | None = None) -> list[Pooled]:
        """The pooled, RRF-ordered passages for `query` (at most `limit`)."""
        snippets: dict[str, str] = {}
        fused = fuse(self.sources(query, query_id=query_id, own=own, snippets=snippets), self.config.rrf_k)
        for p in fused:
            p.snippet = snippets.get(p.id, "")
        return fused if limit is None else fused[:limit]


def _is_artefact(path: Path) -> bool:
    """A `curator score` artefact (runs/ holds them too), not a retriever's run."""
    if path.suffix != ".json":
        return False
    with path.open("rb") as f:
        head = f.read(512)
    return b'"schema"' in head


def suggest(ws: Workspace, query: str, *, limit: int | None = None, dense: bool = True) -> list[Pooled]:
    """`curator suggest`: the pooled suggestions for a query typed by hand."""
    if not query.strip():
        raise CuratorError("the query is empty")
    return Pool(ws, dense=dense).suggest(query, limit=limit)

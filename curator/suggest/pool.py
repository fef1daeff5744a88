"""TREC-style pooling: every source's ranked candidates for a query, fused by reciprocal
rank (RRF: score = sum over sources of 1 / (rrf_k + rank)).

Sources, in the order that breaks ties: the candidate's own passages (log `clicked` and
`hit`, `generated from`, ...), curator's BM25 (`bm25`), the dense retriever when one is
configured (`dense`), and the top `depth` of every stored run in `retriever-runs/` or
`runs/` whose query ids include this query's (`run:<file name>`). A run "has the query"
when one of its query ids is the case's id or the id the query would get (its slug).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curator.errors import CuratorError
from curator.text import query_slug

if TYPE_CHECKING:
    from curator.models import Suggestion
    from curator.scoring.runs import Ranked
    from curator.suggest.dense import DenseIndex
    from curator.workspace import Workspace

RUN_SUFFIXES = (".jsonl", ".json", ".trec", ".run", ".txt", ".tsv")


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
    """Reciprocal-rank fusion of (source, [(passage id, revision), ...best first]) lists.
    Ties keep first-seen order (the order of the sources, then of their lists)."""
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
    return sorted(pooled.values(), key=lambda p: (-p.score, order[p.id]))


class Pool:
    """The sources of one workspace, loaded once (runs on first use, the dense index when
    configured). Thread-safe: the review app prepares cards from a worker."""

    def __init__(self, ws: Workspace, *, dense: bool = True):
        self.ws = ws
        self.config = ws.config.suggest
        self._lock = threading.Lock()
        self._runs: dict[str, list[tuple[str, Ranked]]] | None = None
        self._dense: DenseIndex | None = None
        self._dense_wanted = dense and self.config.dense != "none"
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

    def dense(self) -> DenseIndex | None:
        if not self._dense_wanted:
            return None
        with self._lock:
            if self._dense is None:
                from curator.suggest.dense import DenseIndex, embedder_for

                embedder = embedder_for(self.ws.config)
                if embedder is not None:
                    self._dense = DenseIndex(self.ws, embedder)
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
        return lists

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

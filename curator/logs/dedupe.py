"""De-duplication against the workspace: queries already queued or already cases in a
set, found exactly or within the fuzzy similarity of a cluster's variants.

Scores are those of clustering (`cluster.py`): the better of the word-sorted and the
plain forms' ratios, and queries naming identifiers with other parts never match."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from rapidfuzz import fuzz, process

from curator.logs.normalise import (
    Signature,
    compare_keys,
    digit_signatures,
    identifier_signature,
    normalize_query,
    plain_keys,
    same_identifiers,
)

if TYPE_CHECKING:
    from curator.workspace import Workspace

VARIANTS = 10  # a cluster's norms compared with the existing queries (and shown), at most
CHUNK = 2000  # clusters checked against the existing queries at a time
CELLS = 2_000_000  # scores per cdist call (16 MB)
QUEUED = "already a candidate"
Known = tuple[str, str]  # why a cluster is known, and the existing query's norm it matched


class Existing:
    """Queries already queued or already cases, for exact and fuzzy look-ups.

    The existing set does not change while the sampler runs, so clusters are checked
    `CHUNK` at a time: per digit signature and key length, one rapidfuzz `cdist` against
    only the keys whose length can reach the cutoff. The answers are those of checking
    each cluster on its turn with `extractOne` over its whole block."""

    def __init__(self, ws: Workspace, similarity: float) -> None:
        self.similarity = similarity
        self.exact: dict[str, str] = {}
        surface: dict[str, str] = {}  # norm -> the query as typed (its identifiers' case)
        for norm, query in ws.candidate_queries():
            self.exact[norm] = QUEUED
            surface.setdefault(norm, query)
        for name in ws.set_names():
            try:
                cases = list(ws.question_set(name).read_latest().cases.values())
            except Exception:  # a damaged set is verify's business, not the importer's
                continue
            for case in cases:
                norm = normalize_query(case.query)
                self.exact.setdefault(norm, f"already a case in {name}")
                surface.setdefault(norm, case.query)
        self.queued = QUEUED in self.exact.values()  # are there candidates a cluster may update?
        blocks: dict[str, KeyBlock] = {}
        existing = list(self.exact)
        for signature, key, plain, norm in zip(digit_signatures(existing), compare_keys(existing),
                                               plain_keys(existing), existing, strict=True):
            block = blocks.setdefault(signature, KeyBlock())
            block.add(key, plain, identifier_signature(surface[norm]), (self.exact[norm], norm))
        for block in blocks.values():
            block.settle()
        self.blocks = blocks

    def along(self, walk: list[int], members: Callable[[int], list[int]], norms: list[str],
              surfaces: list[str] | None = None) -> Iterator[tuple[list[int], str | None, str | None]]:
        """(members, why the cluster is already known or None, the norm of the queued
        candidate it matched or None) for each cluster of the sampler's `walk`, in order,
        checked `CHUNK` at a time; `members(cluster)` gives its member indices into
        `norms` (and `surfaces`, the norms as typed)."""
        for start in range(0, len(walk), CHUNK):
            chunk = [members(c) for c in walk[start : start + CHUNK]]
            found = self.known_of([[norms[i] for i in m] for m in chunk],
                                  [[surfaces[i] for i in m] for m in chunk] if surfaces is not None else None)
            for m, known in zip(chunk, found, strict=True):
                if known is None:
                    yield m, None, None
                else:
                    yield m, known[0], known[1] if known[0] == QUEUED else None

    def queued_in(self, left: list[int], cluster_of: Any, norms: list[str]) -> list[tuple[int, str]]:
        """(cluster, the norm of a queued candidate it holds) for the clusters in `left`
        (those the sampler did not reach) that hold a queued candidate's exact text
        (`cluster_of[i]`: the cluster of `norms[i]`), in the order of `left`. An exact look-up per
        norm: checking every cluster fuzzily would cost what a `--limit 0` import does."""
        import numpy as np

        if not (self.queued and len(left)):
            return []
        # each cluster's place in `left` (-1: not left) in an array, not a set or a list:
        # a long tail leaves millions of clusters
        place = np.full(int(np.max(cluster_of)) + 1, -1, dtype=np.int32 if len(left) < 1 << 31 else np.int64)
        place[left] = np.arange(len(left), dtype=place.dtype)
        queued = {norm for norm, why in self.exact.items() if why == QUEUED}
        found: dict[int, str] = {}
        for i in [i for i, norm in enumerate(norms) if norm in queued]:  # few: the loop over all is C-fast
            c = int(cluster_of[i])
            if c >= 0 and place[c] >= 0 and c not in found:  # -1: a filtered query, in no cluster
                found[c] = norms[i]
        return [(c, found[c]) for c in sorted(found, key=place.__getitem__)]

    def duplicates_of(self, clusters: list[list[str]], surfaces: list[list[str]] | None = None) -> list[str | None]:
        """Why each cluster (its norms, leader first) is already known, or None (see `known_of`)."""
        return [known[0] if known else None for known in self.known_of(clusters, surfaces)]

    def known_of(self, clusters: list[list[str]], surfaces: list[list[str]] | None = None) -> list[Known | None]:
        """Why each cluster (its norms, leader first; `surfaces`: them as typed) is
        already known and the existing norm it matched, or None: an exact match of any
        norm first, then the first of its `VARIANTS` first norms with a fuzzy match; of
        equally good fuzzy matches, the existing query met first."""
        found: list[Known | None] = [
            next(((self.exact[n], n) for n in norms if n in self.exact), None) for norms in clusters
        ]
        if self.similarity >= 100:
            return found
        # the (cluster, variant) pairs left, grouped by digit signature and key length
        pending = [(c, v) for c, norms in enumerate(clusters) if found[c] is None for v in range(min(len(norms), VARIANTS))]
        queries = [clusters[c][v] for c, v in pending]
        idents = [identifier_signature(surfaces[c][v]) for c, v in pending] if surfaces is not None else None
        keys = compare_keys(queries)
        plains = plain_keys(queries)
        groups: dict[tuple[str, int], list[int]] = {}
        for p, signature, key in zip(range(len(keys)), digit_signatures(queries), keys, strict=True):
            if signature in self.blocks:
                groups.setdefault((signature, len(key)), []).append(p)
        first: dict[int, tuple[int, Known]] = {}  # cluster -> its first variant with a match, and what
        for (signature, length), at in groups.items():
            matches = self.blocks[signature].matches([keys[p] for p in at], [plains[p] for p in at],
                                                     [idents[p] for p in at] if idents else None,
                                                     length, self.similarity)
            for p, known in matches:
                c, v = pending[at[p]]
                if c not in first or v < first[c][0]:
                    first[c] = (v, known)
        for c, (_v, known) in first.items():
            found[c] = known
        return found


class KeyBlock:
    """The comparison keys (sorted and plain) of the existing queries that share a digit
    signature, sorted by length (for the window), with the order they were met in
    (which breaks ties) and their identifier signatures."""

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.plains: list[str] = []
        self.idents: list[Signature] = []
        self.whys: list[Known] = []  # in the order met

    def add(self, key: str, plain: str, ident: Signature, known: Known) -> None:
        self.keys.append(key)
        self.plains.append(plain)
        self.idents.append(ident)
        self.whys.append(known)

    def settle(self) -> None:
        """Sort by length, once every key is in."""
        import numpy as np  # only here: 0.06 s to import, and only workspaces with queries get here

        by_length = sorted(range(len(self.keys)), key=lambda i: (len(self.keys[i]), i))
        self.keys = [self.keys[i] for i in by_length]
        self.plains = [self.plains[i] for i in by_length]
        self.idents = [self.idents[i] for i in by_length]
        self.lengths = np.array([len(k) for k in self.keys])
        self.met = np.array(by_length)  # position of each key in the order met

    def matches(self, keys: list[str], plains: list[str], idents: list[Signature] | None, length: int,
                similarity: float) -> list[tuple[int, Known]]:
        """(position in `keys`, what it matched) for each of `keys` (all `length` long;
        `plains` and `idents` alike) with a key here within `similarity` whose identifiers
        agree: the first best in the order met, as `extractOne` finds it."""
        import numpy as np

        # ratio = 100 (1 - indel / (la + lb)) and indel >= |la - lb|: only keys in this
        # length window can reach the cutoff (one character wider, against rounding)
        t = similarity / 100
        lo = int(np.searchsorted(self.lengths, length * t / (2 - t) - 1, "left"))
        hi = int(np.searchsorted(self.lengths, length * (2 - t) / t + 1, "right")) if t > 0 else len(self.keys)
        found: list[tuple[int, Known]] = []
        rows = max(1, CELLS // max(1, hi - lo))  # a big queue or set: bounded score matrices
        window_idents = self.idents[lo:hi]
        named = [at for at, ident in enumerate(window_idents) if ident]  # existing queries naming identifiers
        for start in range(0, len(keys) if lo < hi else 0, rows):
            scores = np.maximum(*(
                process.cdist(queries[start : start + rows], forms[lo:hi], scorer=fuzz.ratio,
                              score_cutoff=similarity, dtype=np.float64)
                for queries, forms in ((keys, self.keys), (plains, self.plains))
            ))
            _drop_other_identifiers(scores, idents[start : start + rows] if idents else None, window_idents,
                                    named, similarity)
            best = scores.max(axis=1)
            hit = np.flatnonzero(best >= similarity)
            ties = scores[hit] == best[hit, None]
            met = np.where(ties, self.met[lo:hi], len(self.met)).min(axis=1)
            found += [(h + start, self.whys[m]) for h, m in zip(hit.tolist(), met.tolist(), strict=True)]
        return found


def _drop_other_identifiers(scores: Any, idents: list[Signature] | None, window: list[Signature], named: list[int],
                            similarity: float) -> None:
    """Set to -1 the scores (rows: queries with identifier signatures `idents`; columns:
    existing queries with `window`) of pairs whose identifiers differ (`same_identifiers`).
    Without `idents` (queries as typed unknown), nothing is dropped."""
    import numpy as np

    if idents is None:
        return
    rows = range(scores.shape[0])
    plain = [r for r in rows if not idents[r]]
    if named and plain:  # a query naming no identifier never matches one naming some
        scores[np.ix_(plain, named)] = -1
    for r in rows:
        if idents[r]:
            for at in np.flatnonzero(scores[r] >= similarity).tolist():
                if not same_identifiers(idents[r], window[at]):
                    scores[r, at] = -1

"""De-duplication against the workspace: queries already queued or already cases in a
set, found exactly or within the fuzzy similarity of a cluster's variants."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from rapidfuzz import fuzz, process

from curator.logs.normalise import compare_keys, digit_signatures, normalize_query

if TYPE_CHECKING:
    from curator.workspace import Workspace

VARIANTS = 10  # a cluster's norms compared with the existing queries (and shown), at most
CHUNK = 2000  # clusters checked against the existing queries at a time
CELLS = 2_000_000  # scores per cdist call (16 MB)


class Existing:
    """Queries already queued or already cases, for exact and fuzzy look-ups.

    The existing set does not change while the sampler runs, so clusters are checked
    `CHUNK` at a time: per digit signature and key length, one rapidfuzz `cdist` against
    only the keys whose length can reach the cutoff. The answers are those of checking
    each cluster on its turn with `extractOne` over its whole block."""

    def __init__(self, ws: Workspace, similarity: float) -> None:
        self.similarity = similarity
        self.exact: dict[str, str] = {}
        for norm in ws.candidate_norms():
            self.exact[norm] = "already a candidate"
        for name in ws.set_names():
            try:
                cases = list(ws.question_set(name).read().cases.values())
            except Exception:  # a damaged set is verify's business, not the importer's
                continue
            for case in cases:
                self.exact.setdefault(normalize_query(case.query), f"already a case in {name}")
        blocks: dict[str, tuple[list[str], list[str]]] = {}
        existing = list(self.exact)
        for signature, key, why in zip(digit_signatures(existing), compare_keys(existing), self.exact.values(),
                                       strict=True):
            keys, whys = blocks.setdefault(signature, ([], []))
            keys.append(key)
            whys.append(why)
        self.blocks = {signature: KeyBlock(*block) for signature, block in blocks.items()}

    def along(self, walk: list[int], members: Callable[[int], list[int]],
              norms: list[str]) -> Iterator[tuple[list[int], str | None]]:
        """(members, why the cluster is already known or None) for each cluster of the
        sampler's `walk`, in order, checked `CHUNK` at a time; `members(cluster)` gives
        its member indices into `norms`."""
        for start in range(0, len(walk), CHUNK):
            chunk = [members(c) for c in walk[start : start + CHUNK]]
            whys = self.duplicates_of([[norms[i] for i in m] for m in chunk])
            yield from zip(chunk, whys, strict=True)

    def duplicates_of(self, clusters: list[list[str]]) -> list[str | None]:
        """Why each cluster (its norms, leader first) is already known, or None: an exact
        match of any norm first, then the first of its `VARIANTS` first norms with a fuzzy
        match; of equally good fuzzy matches, the existing query met first."""
        found = [next((self.exact[n] for n in norms if n in self.exact), None) for norms in clusters]
        if self.similarity >= 100:
            return found
        # the (cluster, variant) pairs left, grouped by digit signature and key length
        pending = [(c, v) for c, norms in enumerate(clusters) if found[c] is None for v in range(min(len(norms), VARIANTS))]
        queries = [clusters[c][v] for c, v in pending]
        keys = compare_keys(queries)
        groups: dict[tuple[str, int], list[int]] = {}
        for p, signature, key in zip(range(len(keys)), digit_signatures(queries), keys, strict=True):
            if signature in self.blocks:
                groups.setdefault((signature, len(key)), []).append(p)
        first: dict[int, tuple[int, str]] = {}  # cluster -> its first variant with a match, and why
        for (signature, length), at in groups.items():
            for p, why in self.blocks[signature].matches([keys[p] for p in at], length, self.similarity):
                c, v = pending[at[p]]
                if c not in first or v < first[c][0]:
                    first[c] = (v, why)
        for c, (_v, why) in first.items():
            found[c] = why
        return found


class KeyBlock:
    """The comparison keys of the existing queries that share a digit signature, sorted
    by length (for the window), with the order they were met in (which breaks ties)."""

    def __init__(self, keys: list[str], whys: list[str]) -> None:
        import numpy as np  # only here: 0.06 s to import, and only workspaces with queries get here

        by_length = sorted(range(len(keys)), key=lambda i: (len(keys[i]), i))
        self.keys = [keys[i] for i in by_length]
        self.lengths = np.array([len(k) for k in self.keys])
        self.met = np.array(by_length)  # position of each key in the order met
        self.whys = whys  # in the order met

    def matches(self, keys: list[str], length: int, similarity: float) -> list[tuple[int, str]]:
        """(position in `keys`, why) for each of `keys` (all `length` long) with a key here
        within `similarity`: the first best in the order met, as `extractOne` finds it."""
        import numpy as np

        # ratio = 100 (1 - indel / (la + lb)) and indel >= |la - lb|: only keys in this
        # length window can reach the cutoff (one character wider, against rounding)
        t = similarity / 100
        lo = int(np.searchsorted(self.lengths, length * t / (2 - t) - 1, "left"))
        hi = int(np.searchsorted(self.lengths, length * (2 - t) / t + 1, "right")) if t > 0 else len(self.keys)
        found: list[tuple[int, str]] = []
        rows = max(1, CELLS // max(1, hi - lo))  # a big queue or set: bounded score matrices
        for start in range(0, len(keys) if lo < hi else 0, rows):
            scores = process.cdist(
                keys[start : start + rows], self.keys[lo:hi], scorer=fuzz.ratio, score_cutoff=similarity,
                dtype=np.float64, workers=-1,
            )
            best = scores.max(axis=1)
            hit = np.flatnonzero(best >= similarity)
            ties = scores[hit] == best[hit, None]
            met = np.where(ties, self.met[lo:hi], len(self.met)).min(axis=1)
            found += [(h + start, self.whys[m]) for h, m in zip(hit.tolist(), met.tolist(), strict=True)]
        return found

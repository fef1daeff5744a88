"""Group near-duplicate queries (typos, word order) in near-linear time.

Queries are visited most frequent first. Each either joins an existing cluster leader
or becomes a leader itself. A query is only compared with leaders that share a block:
the same digits (so `E1042` never joins `E1043`) and either the same first or the same
last five characters of the word-sorted comparison form (a typo rarely hits both ends).
Each block keeps at most `BLOCK_LEADERS` leaders, the most frequent, so the cost is
bounded by `queries x 2 x BLOCK_LEADERS` comparisons however skewed the log is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rapidfuzz import fuzz, process

from curator.logs.normalise import compare_key, digit_signature

BLOCK_LEADERS = 32


@dataclass
class Cluster:
    leader: int  # index into the input list
    members: list[int] = field(default_factory=list)


def cluster(norms: list[str], counts: list[int], similarity: float) -> list[Cluster]:
    """Clusters of `norms` (normalised, distinct); each member index appears once.
    `similarity` is a rapidfuzz ratio (0-100) over the comparison forms; 100 joins
    only word-order and punctuation variants."""
    # most frequent first, ties by text: two sorts (the second is stable, also reversed)
    # with C-level keys are three times faster than one with a tuple key
    order = sorted(range(len(norms)), key=norms.__getitem__)
    order.sort(key=counts.__getitem__, reverse=True)
    exact: dict[str, int] = {}  # comparison form -> cluster number
    blocks: dict[tuple[str, str], tuple[list[str], list[int]]] = {}
    clusters: list[Cluster] = []
    for i in order:
        key = compare_key(norms[i])
        found = exact.get(key)
        digits = digit_signature(norms[i]) if key else ""
        if found is None and similarity < 100 and key:
            best: tuple[float, int] | None = None
            for block_key in ((digits, "^" + key[:5]), (digits, "$" + key[-5:])):
                block = blocks.get(block_key)
                if not block:
                    continue
                match = process.extractOne(key, block[0], scorer=fuzz.ratio, score_cutoff=similarity)
                if match and (best is None or match[1] > best[0]):
                    best = (match[1], block[1][match[2]])
            if best is not None:
                found = best[1]
        if found is None:
            found = len(clusters)
            clusters.append(Cluster(i))
            if key:
                for block_key in ((digits, "^" + key[:5]), (digits, "$" + key[-5:])):
                    keys, ids = blocks.setdefault(block_key, ([], []))
                    if len(keys) < BLOCK_LEADERS:
                        keys.append(key)
                        ids.append(found)
        exact.setdefault(key, found)
        clusters[found].members.append(i)
    return clusters

"""Group near-duplicate queries (typos, word order) in near-linear time.

Queries are visited most frequent first. Each either joins an existing cluster leader
or becomes a leader itself. A query is only compared with leaders that share a block:
the same digits (so `E1042` never joins `E1043`) and either the same first or the same
last five characters of the word-sorted comparison form (a typo rarely hits both ends).
Each block keeps at most `BLOCK_LEADERS` leaders, the most frequent, so the cost is
bounded by `queries x 2 x BLOCK_LEADERS` comparisons however skewed the log is.

A pair scores the better of two rapidfuzz ratios: of the word-sorted forms (word order
does not matter) and of the plain forms (a typo in a word's first letter, or two words
run together, moves words in the sorted form but not in the plain one). Queries that
name identifiers join only if their identifiers have the same parts
(`normalise.same_identifiers`): `etcdGRPCWriteRequestsSlow` never joins
`etcdGRPCRequestsSlow`.
"""

from __future__ import annotations

from rapidfuzz import fuzz, process

from curator.logs.normalise import (
    Signature,
    compare_keys,
    digit_signatures,
    identifier_signature,
    plain_keys,
    same_identifiers,
)

BLOCK_LEADERS = 32


class _Block:
    """The leaders of one block: their comparison forms and query indices."""

    __slots__ = ("keys", "plains", "leaders")

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.plains: list[str] = []
        self.leaders: list[int] = []


_NONE = _Block()  # a block nobody has led yet (never added to)


def cluster(norms: list[str], counts: list[int], similarity: float, surfaces: list[str] | None = None) -> Clusters:
    """Clusters of `norms` (normalised, distinct); each member index appears once.
    `similarity` is a rapidfuzz ratio (0-100) over the comparison forms; 100 joins
    only word-order and punctuation variants. `surfaces` (each norm as typed, for the
    case of its identifiers) keep queries naming different identifiers apart."""
    # most frequent first, ties by text: two sorts (the second is stable)
    order = sorted(range(len(norms)), key=norms.__getitem__)
    order.sort(key=counts.__getitem__, reverse=True)
    signatures = digit_signatures(norms)
    idents = [identifier_signature(surfaces[i]) for i in order] if surfaces is not None else None
    joiners, joined = _joins([norms[i] for i in order], [signatures[i] for i in order], similarity, idents)
    joins = [-1] * len(norms)  # query -> the query whose cluster it joins; -1: it leads one
    for p, q in zip(joiners, joined, strict=True):
        joins[order[p]] = order[q]
    return Clusters(order, joins)


def _joins(norms: list[str], signatures: list[str], similarity: float,
           idents: list[Signature] | None = None) -> tuple[list[int], list[int]]:
    """For `norms` in visiting order (with their digit and identifier signatures): the
    positions of the queries that join another's cluster, and of the query each joins."""
    keys = compare_keys(norms)
    plains = plain_keys(norms)
    # block keys as strings (`digits|first five`), whose hashes are kept, unlike tuples'
    heads = [f"{signature}|{key[:5]}" for signature, key in zip(signatures, keys, strict=True)]
    tails = [f"{signature}|{key[-5:]}" for signature, key in zip(signatures, keys, strict=True)]
    head_blocks: dict[str, _Block] = {}
    tail_blocks: dict[str, _Block] = {}
    first_with: dict[str, int] = {}  # comparison form -> the first query that had it
    joiners: list[int] = []
    joined: list[int] = []
    fuzzy = similarity < 100
    for i, key, plain, head_key, tail_key in zip(range(len(keys)), keys, plains, heads, tails, strict=True):
        first = first_with.setdefault(key, i)
        if first != i:
            joiners.append(i)
            joined.append(first)
            continue
        if not (fuzzy and key):
            continue
        head, tail = head_blocks.get(head_key, _NONE), tail_blocks.get(tail_key, _NONE)
        leaders = head.leaders + tail.leaders
        leader = _best(key, plain, head.keys + tail.keys, head.plains + tail.plains, similarity,
                       [idents[i] for i in leaders] if idents else None, idents[i] if idents else ())
        if leader is not None:
            joiners.append(i)
            joined.append(leaders[leader])
            continue
        for block, blocks, block_key in ((head, head_blocks, head_key), (tail, tail_blocks, tail_key)):
            if block is _NONE:
                block = blocks[block_key] = _Block()
            if len(block.keys) < BLOCK_LEADERS:
                block.keys.append(key)
                block.plains.append(plain)
                block.leaders.append(i)
    return joiners, joined


def _best(key: str, plain: str, keys: list[str], plains: list[str], similarity: float,
          idents: list[Signature] | None, ident: Signature) -> int | None:
    """The position in `keys` of the leader a query joins: the best score of the sorted
    and the plain forms at `similarity` or more, whose identifiers agree (see
    `same_identifiers`); ties go to the first best (head block before tail block, older
    leaders first)."""
    if not keys:
        return None
    sorted_match = process.extractOne(key, keys, scorer=fuzz.ratio, score_cutoff=similarity)
    plain_match = process.extractOne(plain, plains, scorer=fuzz.ratio, score_cutoff=similarity)
    best = None
    for match in (sorted_match, plain_match):
        if match and (best is None or match[1] > best[1] or (match[1] == best[1] and match[2] < best[2])):
            best = match
    if best is None:
        return None
    if idents is None or (not ident and not idents[best[2]]) or same_identifiers(ident, idents[best[2]]):
        return int(best[2])
    # the best names other identifiers: every leader within reach, best first
    scores: dict[int, float] = {}
    for query, choices in ((key, keys), (plain, plains)):
        for _choice, score, at in process.extract(query, choices, scorer=fuzz.ratio, score_cutoff=similarity,
                                                  limit=None):
            scores[at] = max(score, scores.get(at, 0.0))
    for at in sorted(scores, key=lambda a: (-scores[a], a)):
        if same_identifiers(ident, idents[at]):
            return at
    return None


class Clusters:
    """The clusters `cluster` found, in the order their leaders were visited (most
    frequent first), as arrays: members are listed only for the clusters asked for."""

    def __init__(self, order: list[int], joins: list[int]) -> None:
        import numpy as np

        order_a = np.asarray(order, dtype=np.int64)
        joins_a = np.asarray(joins, dtype=np.int64)
        # a query joins a leader, or the first query with its comparison form, which
        # leads or joins a leader itself: two steps reach every leader
        root = np.where(joins_a < 0, np.arange(len(joins_a)), joins_a)
        root = np.where(joins_a[root] < 0, root, joins_a[root])
        leads = joins_a[order_a] < 0
        self.leaders = order_a[leads]
        number = np.empty(len(joins_a), dtype=np.int64)  # leader -> its cluster
        number[self.leaders] = np.arange(len(self.leaders))
        self.of = number[root]  # query -> its cluster
        # members of each cluster in visiting order (leader first): a stable sort by cluster
        self.members_in = order_a[np.argsort(self.of[order_a], kind="stable")]
        self.starts = np.searchsorted(self.of[self.members_in], np.arange(len(self.leaders) + 1))

    def __len__(self) -> int:
        return len(self.leaders)

    def members(self, c: int) -> list[int]:
        return self.members_in[self.starts[c] : self.starts[c + 1]].tolist()

    def totals(self, counts: list[int]) -> list[int]:
        """The sum of `counts` (one per query) over each cluster."""
        import numpy as np

        if not len(self) or sum(counts) >= 1 << 63:  # pre-aggregated counts past what int64 holds
            return [sum(map(counts.__getitem__, self.members(c))) for c in range(len(self))]
        return np.add.reduceat(np.asarray(counts, dtype=np.int64)[self.members_in], self.starts[:-1]).tolist()

"""Group near-duplicate queries (typos, word order) in near-linear time.

Queries are visited most frequent first. Each either joins an existing cluster leader
or becomes a leader itself. A query is only compared with leaders that share a block:
the same digits (so `E1042` never joins `E1043`) and the same first or last five
characters of the word-sorted comparison form or of the plain form (its own word order,
without punctuation): a typo rarely hits all four ends (`a4retries queue` beside
`a4 retries queue` shares only the plain form's last five). Each block keeps at most
`BLOCK_LEADERS` leaders, the most frequent, so the cost is bounded by
`queries x 4 x BLOCK_LEADERS` comparisons however skewed the log is.

A query is scored against the leaders of the sorted-form blocks by the rapidfuzz ratio
of the word-sorted forms (word order does not matter) and against those of the
plain-form blocks by the ratio of the plain forms (a typo in a word's first letter, or
two words run together, moves words in the sorted form but not in the plain one); the
best score wins. Queries that
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


Block = tuple[list[str], list[int]]  # the leaders of one block: their forms (sorted or plain), their positions
_NONE: Block = ([], [])  # a block nobody has led yet (never added to)


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
    blocks: dict[str, Block] = {}
    first_with: dict[str, int] = {}  # comparison form -> the first query that had it
    joiners: list[int] = []
    joined: list[int] = []
    fuzzy = similarity < 100
    get = blocks.get
    for i, key, plain, signature in zip(range(len(keys)), keys, plains, signatures, strict=True):
        first = first_with.setdefault(key, i)
        if first != i:
            joiners.append(i)
            joined.append(first)
            continue
        if not (fuzzy and key):
            continue
        # block keys as strings (`digits|^first five`), whose hashes are kept, unlike tuples'
        heads, tails = f"{signature}|^{key[:5]}", f"{signature}|${key[-5:]}"
        pheads, ptails = f"{signature}|<{plain[:5]}", f"{signature}|>{plain[-5:]}"
        a, b, c, d = get(heads, _NONE), get(tails, _NONE), get(pheads, _NONE), get(ptails, _NONE)
        leaders = a[1] + b[1] + c[1] + d[1]  # lists joined with +, in C: comprehensions cost more than scoring
        leader = _best(key, a[0] + b[0], plain, c[0] + d[0], similarity, leaders, idents, i)
        if leader is not None:
            joiners.append(i)
            joined.append(leaders[leader])
            continue
        for block, block_key, form in ((a, heads, key), (b, tails, key), (c, pheads, plain), (d, ptails, plain)):
            if block is _NONE:
                blocks[block_key] = ([form], [i])
            elif len(block[1]) < BLOCK_LEADERS:
                block[0].append(form)
                block[1].append(i)
    return joiners, joined


def _best(key: str, keys: list[str], plain: str, plains: list[str], similarity: float, leaders: list[int],
          idents: list[Signature] | None, i: int) -> int | None:
    """The position in `keys + plains` (and `leaders`) of the leader query `i` joins: the best ratio of its
    sorted form `key` to the leaders of the sorted-form blocks (`keys`) and of its plain
    form to those of the plain-form blocks (`plains`) at `similarity` or more, whose
    identifiers agree (see `same_identifiers`); ties go to the first best (in the order
    of the blocks: sorted head, sorted tail, plain head, plain tail; older leaders first)."""
    if not (keys or plains):
        return None
    best = None
    for query, choices, offset in ((key, keys, 0), (plain, plains, len(keys))):
        match = process.extractOne(query, choices, scorer=fuzz.ratio, score_cutoff=similarity) if choices else None
        if match and (best is None or match[1] > best[0]):
            best = (match[1], match[2] + offset)
    if best is None:
        return None
    at = best[1]
    if idents is None:
        return at
    ident = idents[i]  # the query's identifiers, and below its leaders'
    if (not ident and not idents[leaders[at]]) or same_identifiers(ident, idents[leaders[at]]):
        return at
    # the best names other identifiers: every leader within reach, best first
    scores: list[tuple[float, int]] = []
    for query, choices, offset in ((key, keys, 0), (plain, plains, len(keys))):
        for _choice, score, i in process.extract(query, choices, scorer=fuzz.ratio, score_cutoff=similarity,
                                                 limit=None):
            scores.append((-score, i + offset))
    for _score, at in sorted(scores):
        if same_identifiers(ident, idents[leaders[at]]):
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

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

from typing import Any

from rapidfuzz import fuzz, process

from curator.logs.normalise import (
    Signature,
    compare_keys,
    digit_signature,
    digit_signatures,
    identifier_signature,
    plain_key,
    plain_keys,
    same_identifiers,
)

BLOCK_LEADERS = 32
BULK_ONE_OFFS = 50_000  # more queries asked once than this: compared in bulk (`_join_once`)
ONCE_CHUNK = 100_000  # queries asked once handled at a time


Block = tuple[list[str], list[int]]  # the leaders of one block: their forms (sorted or plain), their positions
_NONE: Block = ([], [])  # a block nobody has led yet (never added to)


def cluster(norms: list[str], counts: list[int], similarity: float, surfaces: list[str] | None = None,
            bulk_after: int = BULK_ONE_OFFS) -> Clusters:
    """Clusters of `norms` (normalised, distinct); each member index appears once.
    `similarity` is a rapidfuzz ratio (0-100) over the comparison forms; 100 joins
    only word-order and punctuation variants. `surfaces` (each norm as typed, for the
    case of its identifiers) keep queries naming different identifiers apart.

    With more than `bulk_after` queries asked once, those are compared in bulk with
    the leaders of the queries asked more often (`_join_once`) and lead no cluster
    others join: a one-off joins the cluster of a repeated query it is a near-duplicate
    of, never another one-off."""
    import numpy as np

    once = None
    if len(counts) > bulk_after:
        asked_once = np.fromiter((n == 1 for n in counts), dtype=bool, count=len(counts))
        if int(asked_once.sum()) > bulk_after:
            once = np.flatnonzero(asked_once)
            heads: list[int] | range = np.flatnonzero(~asked_once).tolist()
    if once is None:
        heads = range(len(norms))
    # most frequent first, ties by text: two sorts (the second is stable)
    order = sorted(heads, key=norms.__getitem__)
    order.sort(key=counts.__getitem__, reverse=True)
    del heads
    head_norms = [norms[i] for i in order]
    idents = [identifier_signature(surfaces[i]) for i in order] if surfaces is not None else None
    joiners, joined, blocks, first_with = _joins(head_norms, digit_signatures(head_norms), similarity, idents)
    del head_norms
    visit = np.asarray(order, dtype=np.int64)
    del order
    if once is not None:  # visited after every repeated query, in the order the log first met them
        more, their = _join_once(norms, surfaces, once, blocks, first_with, idents, similarity)
        joiners += [len(visit) + p for p in more]
        joined += their
        visit = np.concatenate([visit, once])
    del blocks, first_with, idents, once  # before Clusters builds its arrays
    joins = np.full(len(norms), -1, dtype=np.int64)  # query -> the query whose cluster it joins; -1: it leads one
    joins[visit[np.asarray(joiners, dtype=np.int64)]] = visit[np.asarray(joined, dtype=np.int64)]
    del joiners, joined
    return Clusters(visit, joins)


def _joins(norms: list[str], signatures: list[str], similarity: float, idents: list[Signature] | None = None
           ) -> tuple[list[int], list[int], dict[str, Block], dict[str, int]]:
    """For `norms` in visiting order (with their digit and identifier signatures): the
    positions of the queries that join another's cluster, and of the query each joins;
    also the blocks of leaders and the first query with each comparison form."""
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
        leader = _best(key, a[0] + b[0], plain, c[0] + d[0], similarity, leaders, idents,
                       idents[i] if idents is not None else ())
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
    return joiners, joined, blocks, first_with


def _join_once(all_norms: list[str], all_surfaces: list[str] | None, once: Any, blocks: dict[str, Block],
               first_with: dict[str, int], idents: list[Signature] | None,
               similarity: float) -> tuple[list[int], list[int]]:
    """For the queries asked once (`once`, indices into `all_norms` and `all_surfaces`;
    visited after every repeated query), against the
    repeated queries' leaders (`blocks`, `first_with`, `idents`, which no longer change):
    the positions in `once` of those that join a cluster, and the leader (or first
    query with their comparison form) each joins. The same rules as `_joins`, a chunk at
    a time: comparison forms and signatures screened in bulk, and per block one
    rapidfuzz `cdist` of the chunk's queries in it against the block's leaders."""
    import numpy as np

    from curator.logs.bulk import DIGITS, NOT_PLAIN, Joined

    joiners: list[int] = []
    joined: list[int] = []
    number = {block_key: n for n, block_key in enumerate(blocks)}
    for start in range(0, len(once), ONCE_CHUNK):
        at = once[start : start + ONCE_CHUNK].tolist()
        chunk = [all_norms[i] for i in at]
        joined_norms = Joined(chunk)
        plains = list(chunk)
        for k in np.flatnonzero(~joined_norms.plain | joined_norms.untidy()
                                | joined_norms.with_codes(NOT_PLAIN)).tolist():
            plains[k] = plain_key(chunk[k])
        signatures = [""] * len(chunk)
        for k in np.flatnonzero(~joined_norms.plain | joined_norms.with_codes(DIGITS)).tolist():
            signatures[k] = digit_signature(chunk[k])
        del joined_norms
        mine: list[Signature] | None = None
        if all_surfaces is not None:
            typed = [all_surfaces[i] for i in at]
            joined_typed = Joined(typed)
            mine = [()] * len(chunk)
            for k in np.flatnonzero(~joined_typed.plain | joined_typed.case_changes()).tolist():
                mine[k] = identifier_signature(typed[k])
            del joined_typed
        keys = [plain if " " not in plain else " ".join(sorted(plain.split())) for plain in plains]
        firsts = [first_with.get(key, -1) for key in keys]
        fuzzy = [p for p, (first, key) in enumerate(zip(firsts, keys, strict=True)) if first < 0 and key]
        for p, first in enumerate(firsts):
            if first >= 0:
                joiners.append(start + p)
                joined.append(first)
        if similarity >= 100 or not fuzzy:
            continue
        best, at = _scores(fuzzy, keys, plains, signatures, blocks, number, similarity)
        for p, score, leader in zip(fuzzy, best.tolist(), at.tolist(), strict=True):
            if score < 0:
                continue
            if mine is not None and idents is not None and (mine[p] or idents[leader]) \
                    and not same_identifiers(mine[p], idents[leader]):
                leader = _best_of_blocks(keys[p], plains[p], signatures[p], blocks, similarity, idents, mine[p])
                if leader is None:
                    continue
            joiners.append(start + p)
            joined.append(leader)
    return joiners, joined


def _scores(rows: list[int], keys: list[str], plains: list[str], signatures: list[str], blocks: dict[str, Block],
            number: dict[str, int], similarity: float) -> tuple[Any, Any]:
    """For each query of `rows`: its best score (-1: none reached `similarity`) and the
    leader that gave it, over its four blocks in `_best`'s order (ties to the first).
    `number`: each block's position in `blocks`."""
    import numpy as np

    best = np.full(len(rows), -1.0)
    at = np.full(len(rows), -1, dtype=np.int64)
    led = list(blocks.values())
    of_rows = {}  # the rows' sorted and plain forms, to take a block's at C speed: built once each
    for name, forms in (("keys", keys), ("plains", plains)):
        of_rows[name] = np.empty(len(rows), dtype=object)
        of_rows[name][:] = [forms[p] for p in rows]
    for mark, forms, end in (("^", keys, 0), ("$", keys, 1), ("<", plains, 0), (">", plains, 1)):
        mine = of_rows["keys" if forms is keys else "plains"]
        if end:
            ids = [number.get(f"{signatures[p]}|{mark}{forms[p][-5:]}", -1) for p in rows]
        else:
            ids = [number.get(f"{signatures[p]}|{mark}{forms[p][:5]}", -1) for p in rows]
        block_of = np.asarray(ids, dtype=np.int64)
        inside = np.flatnonzero(block_of >= 0)
        inside = inside[np.argsort(block_of[inside], kind="stable")]  # the rows of each block together
        if not len(inside):
            continue
        bounds = np.flatnonzero(np.diff(block_of[inside])) + 1
        for members in np.split(inside, bounds):
            leader_forms, leaders = led[int(block_of[members[0]])]
            scores = process.cdist(mine[members].tolist(), leader_forms, scorer=fuzz.ratio, score_cutoff=similarity,
                                   dtype=np.float64)
            top = scores.max(axis=1)
            found = (top >= similarity) & (top > best[members])
            if found.any():
                best[members[found]] = top[found]
                at[members[found]] = np.asarray(leaders)[scores[found].argmax(axis=1)]
    return best, at


def _best_of_blocks(key: str, plain: str, signature: str, blocks: dict[str, Block], similarity: float,
                    idents: list[Signature], ident: Signature) -> int | None:
    """`_best` for one query asked once, over its four blocks: the leader it joins, or None."""
    a, b = blocks.get(f"{signature}|^{key[:5]}", _NONE), blocks.get(f"{signature}|${key[-5:]}", _NONE)
    c, d = blocks.get(f"{signature}|<{plain[:5]}", _NONE), blocks.get(f"{signature}|>{plain[-5:]}", _NONE)
    leaders = a[1] + b[1] + c[1] + d[1]
    at = _best(key, a[0] + b[0], plain, c[0] + d[0], similarity, leaders, idents, ident)
    return None if at is None else leaders[at]


def _best(key: str, keys: list[str], plain: str, plains: list[str], similarity: float, leaders: list[int],
          idents: list[Signature] | None, ident: Signature) -> int | None:
    """The position in `keys + plains` (and `leaders`) of the leader a query joins: the best ratio of its
    sorted form `key` to the leaders of the sorted-form blocks (`keys`) and of its plain
    form to those of the plain-form blocks (`plains`) at `similarity` or more, whose
    identifiers agree with the query's (`ident`; see `same_identifiers`); ties go to the first best (in the order
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

    def __init__(self, order: Any, joins: Any) -> None:
        import numpy as np

        order_a = np.asarray(order, dtype=np.int64)
        joins_a = np.asarray(joins, dtype=np.int64)
        # a query joins a leader, or the first query with its comparison form, which
        # leads or joins a leader itself: two steps reach every leader
        # (temporaries deleted as soon as they are used: each is 8 bytes per query)
        root = np.where(joins_a < 0, np.arange(len(joins_a)), joins_a)
        root = np.where(joins_a[root] < 0, root, joins_a[root])
        self.leaders = order_a[joins_a[order_a] < 0]
        del joins_a
        number = np.empty(len(root), dtype=np.int64)  # leader -> its cluster
        number[self.leaders] = np.arange(len(self.leaders))
        self.of = number[root]  # query -> its cluster
        del number, root
        # members of each cluster in visiting order (leader first): a stable sort by cluster
        self.members_in = order_a[np.argsort(self.of[order_a], kind="stable")]
        del order_a
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

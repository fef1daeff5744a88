"""Group near-duplicate queries (typos, word order) in near-linear time.

Queries are visited most frequent first. Each either joins an existing cluster leader
or becomes a leader itself. A query is only compared with leaders that share a block:
the same digits (so `E1042` never joins `E1043`) and the same first or last five
characters of the word-sorted comparison form or of the plain form (its own word order,
without punctuation): a typo rarely hits all four ends (`a4retries queue` beside
`a4 retries queue` shares only the plain form's last five). Each block keeps at most
`BLOCK_LEADERS` leaders, the most frequent, so the cost is bounded by
`queries x 4 x BLOCK_LEADERS` comparisons however skewed the log is. A full block never
changes again, so a query whose four blocks are full on its turn is scored after the
walk, in bulk with the others like it (most queries of a big log with shared words).

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

from itertools import repeat
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
ONCE_CHUNK = 100_000  # queries asked once (or behind full blocks) handled at a time
TOTALS_CHUNK = 1 << 20  # clusters summed at a time
SCORED_ROWS = 4096  # queries of one block scored at a time in bulk (a matrix of their scores)


Block = tuple[list[str], list[int]]  # the leaders of one block: their forms (sorted or plain), their positions
_NONE: Block = ([], [])  # a block nobody has led yet (never added to)


def cluster(norms: list[str], counts: list[int], similarity: float, surfaces: list[str] | None = None,
            bulk_after: int = BULK_ONE_OFFS, kept: Any = None) -> Clusters:
    """Clusters of `norms` (normalised, distinct); each member index appears once.
    `similarity` is a rapidfuzz ratio (0-100) over the comparison forms; 100 joins
    only word-order and punctuation variants. `surfaces` (each norm as typed, for the
    case of its identifiers) keep queries naming different identifiers apart.

    With more than `bulk_after` queries asked once, those are compared in bulk with
    the leaders of the queries asked more often (`_join_once`) and lead no cluster
    others join: a one-off joins the cluster of a repeated query it is a near-duplicate
    of, never another one-off.

    `kept`: a mask of the queries to cluster (None: all); the others are in no cluster
    (`Clusters.of` is -1 for them), so the filtered need no copy of the lists."""
    import numpy as np

    # positions as 32-bit integers where they fit: the arrays are a long tail's biggest at the end
    position = np.int32 if len(norms) < 1 << 31 else np.int64
    once = None
    if (len(counts) if kept is None else int(np.count_nonzero(kept))) > bulk_after:
        asked_once = np.fromiter((n == 1 for n in counts), dtype=bool, count=len(counts))
        if kept is not None:
            asked_once &= kept
        if int(asked_once.sum()) > bulk_after:
            once = np.flatnonzero(asked_once).astype(position)
            repeated = ~asked_once if kept is None else ~asked_once & kept
            del asked_once
            heads: list[int] | range = np.flatnonzero(repeated).tolist()
            del repeated
    if once is None:
        heads = range(len(norms)) if kept is None else np.flatnonzero(kept).tolist()
    # most frequent first, ties by text: two sorts (the second is stable)
    order = sorted(heads, key=norms.__getitem__)
    order.sort(key=counts.__getitem__, reverse=True)
    del heads
    head_norms = [norms[i] for i in order]
    idents = [identifier_signature(surfaces[i]) for i in order] if surfaces is not None else None
    joiners, joined, blocks, first_with, index = _joins(head_norms, digit_signatures(head_norms), similarity, idents)
    del head_norms
    visit = np.asarray(order, dtype=position)
    del order
    if once is not None:  # visited after every repeated query, in the order the log first met them
        more, their = _join_once(norms, surfaces, once, blocks, first_with, idents, similarity, index)
        joiners += [len(visit) + p for p in more]
        joined += their
        visit = np.concatenate([visit, once])
    del blocks, first_with, idents, once, index  # before Clusters builds its arrays
    joins = np.full(len(norms), -1, dtype=position)  # query -> the query whose cluster it joins; -1: it leads one
    joins[visit[np.asarray(joiners, dtype=np.int64)]] = visit[np.asarray(joined, dtype=np.int64)]
    del joiners, joined
    return Clusters(visit, joins)


def _joins(norms: list[str], signatures: list[str], similarity: float, idents: list[Signature] | None = None
           ) -> tuple[list[int], list[int], dict[str, Block], dict[str, int], BlockIndex | None]:
    """For `norms` in visiting order (with their digit and identifier signatures): the
    positions of the queries that join another's cluster, and of the query each joins;
    also the blocks of leaders, the first query with each comparison form, and the
    blocks' index if one was built (for queries behind full blocks)."""
    keys = compare_keys(norms)
    plains = plain_keys(norms)
    blocks: dict[str, Block] = {}
    first_with: dict[str, int] = {}  # comparison form -> the first query that had it
    joiners: list[int] = []
    joined: list[int] = []
    behind_full: list[int] = []  # queries whose four blocks were full on their turn
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
        if len(a[1]) == len(b[1]) == len(c[1]) == len(d[1]) == BLOCK_LEADERS:
            # four full blocks never change again, and whatever this query does it is added
            # to none of them: scored in bulk after the walk, with the same result
            # (`_join_behind_full`)
            behind_full.append(i)
            continue
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
    index = None
    if behind_full:
        # only their forms are needed now: the others' go before the index is built
        forms = ([keys[i] for i in behind_full], [plains[i] for i in behind_full],
                 [signatures[i] for i in behind_full])
        del keys, plains, signatures
        index = BlockIndex(blocks)
        more, their = _join_behind_full(behind_full, *forms, blocks, index, similarity, idents)
        joiners += more
        joined += their
    return joiners, joined, blocks, first_with, index


def _join_behind_full(rows: list[int], keys: list[str], plains: list[str], signatures: list[str],
                      blocks: dict[str, Block], index: BlockIndex, similarity: float,
                      idents: list[Signature] | None) -> tuple[list[int], list[int]]:
    """For the queries of `rows` (positions in visiting order, with their forms and
    digit signatures) whose four blocks were full on their turn: those that join a
    leader, and the leader each joins, as `_best` would have found them then. A full
    block is never added to again, and a query behind four full blocks that leads a
    cluster is added to none, so its turn changes nothing a later query sees: all of
    them are scored at the end, a block at a time (`_scores`, as the queries asked once
    are), where rapidfuzz takes in a block's leaders once for all its queries (a
    `_best` per query took them in each time: most of its cost)."""
    import numpy as np

    all_keys, all_plains = _objects(keys), _objects(plains)
    best = np.empty(len(rows))
    leaders = np.empty(len(rows), dtype=np.int64)
    for start in range(0, len(rows), ONCE_CHUNK):  # a chunk at a time: the look-ups' arrays stay small
        part = np.arange(start, min(start + ONCE_CHUNK, len(rows)))
        best[part], leaders[part] = _scores(part, all_keys, all_plains, signatures, index, similarity)
    joiners: list[int] = []
    joined: list[int] = []
    for k, leader in zip(np.flatnonzero(best >= 0).tolist(), leaders[best >= 0].tolist(), strict=True):
        p = rows[k]
        agreeing = _agreeing(leader, idents[p] if idents is not None else (), keys[k], plains[k], signatures[k],
                             blocks, similarity, idents)
        if agreeing is not None:
            joiners.append(p)
            joined.append(agreeing)
    return joiners, joined


def _join_once(all_norms: list[str], all_surfaces: list[str] | None, once: Any, blocks: dict[str, Block],
               first_with: dict[str, int], idents: list[Signature] | None,
               similarity: float, index: BlockIndex | None = None) -> tuple[list[int], list[int]]:
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
    index = index or BlockIndex(blocks)  # the blocks no longer change: one built by `_joins` holds
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
        # the exact look-ups, and the rows left to score, in arrays: a list per one-off costs more
        firsts = np.fromiter(map(first_with.get, keys, repeat(-1)), dtype=np.int64, count=len(keys))
        known = np.flatnonzero(firsts >= 0)
        joiners += (known + start).tolist()
        joined += firsts[known].tolist()
        fuzzy = np.flatnonzero((firsts < 0) & (np.fromiter(map(len, keys), dtype=np.int64, count=len(keys)) > 0))
        if similarity >= 100 or not len(fuzzy):
            continue
        best, at = _scores(fuzzy, _objects(keys), _objects(plains), signatures, index, similarity)
        for p, leader in zip(fuzzy[best >= 0].tolist(), at[best >= 0].tolist(), strict=True):
            agreeing = _agreeing(leader, mine[p] if mine is not None else (), keys[p], plains[p], signatures[p],
                                 blocks, similarity, idents)
            if agreeing is not None:
                joiners.append(start + p)
                joined.append(agreeing)
    return joiners, joined


def _agreeing(leader: int, ident: Signature, key: str, plain: str, signature: str, blocks: dict[str, Block],
              similarity: float, idents: list[Signature] | None) -> int | None:
    """The leader a query joins, given the one the bulk scores found best (`leader`):
    that one if it names the same identifiers as the query (`ident`), else what `_best`
    finds in the query's blocks (None: no leader that agrees)."""
    if idents is None or not (ident or idents[leader]) or same_identifiers(ident, idents[leader]):
        return leader
    return _best_of_blocks(key, plain, signature, blocks, similarity, idents, ident)


def _objects(strings: list[str]) -> Any:
    """`strings` as a numpy array of objects, to take many of them at C speed."""
    import numpy as np

    out = np.empty(len(strings), dtype=object)
    out[:] = strings
    return out


def _scores(rows: Any, keys: Any, plains: Any, signatures: list[str], index: BlockIndex,
            similarity: float) -> tuple[Any, Any]:
    """For each query of `rows` (an array of positions in `keys`, `plains`, arrays of
    objects, and `signatures`): its best score (-1: none reached `similarity`) and the
    leader that gave it, over its four blocks in `_best`'s order (ties to the first)."""
    import numpy as np

    best = np.full(len(rows), -1.0)
    at = np.full(len(rows), -1, dtype=np.int64)
    row_signatures = _objects(signatures)[rows]
    passes = []
    for forms, marks in ((keys, "^$"), (plains, "<>")):
        mine = forms[rows]
        heads, tails = index.numbers(marks, mine, row_signatures)
        passes += [(mine, heads), (mine, tails)]
    for mine, block_of in passes:
        inside = np.flatnonzero(block_of >= 0)
        if not len(inside):
            continue
        inside = inside[np.argsort(block_of[inside], kind="stable")]  # the rows of each block together
        blocks = block_of[inside]
        bounds = np.flatnonzero(np.diff(blocks)) + 1
        top = np.empty(len(inside))
        arg = np.empty(len(inside), dtype=np.int64)
        lows, highs = np.r_[0, bounds], np.r_[bounds, len(inside)]
        firsts, lasts = index.offsets[blocks[lows]], index.offsets[blocks[lows] + 1]
        for low, high, first, last in zip(lows.tolist(), highs.tolist(), firsts.tolist(), lasts.tolist(), strict=True):
            for lo in range(low, high, SCORED_ROWS):  # a popular block's rows a slice at a time: small matrices
                hi = min(lo + SCORED_ROWS, high)
                scores = process.cdist(mine[inside[lo:hi]], index.forms[first:last], scorer=fuzz.ratio,
                                       score_cutoff=similarity, dtype=np.float64)
                if last - first == 1:  # one leader (most blocks)
                    top[lo:hi] = scores[:, 0]
                    arg[lo:hi] = first
                else:
                    top[lo:hi] = scores.max(axis=1)
                    arg[lo:hi] = scores.argmax(axis=1) + first  # the first best
        found = (top >= similarity) & (top > best[inside])
        best[inside[found]] = top[found]
        at[inside[found]] = index.leaders[arg[found]]
    return best, at


class BlockIndex:
    """The blocks of leaders (`_joins`), numbered and flat, to look up the blocks of many
    queries at once: a block key `signature|mark piece` whose signature is empty (most
    queries have no digits) and whose piece is ASCII is also found by its piece packed
    into one integer (7 bits a character), by a binary search over the pieces of a mark."""

    def __init__(self, blocks: dict[str, Block]) -> None:
        import numpy as np

        self.number = {block_key: n for n, block_key in enumerate(blocks)}
        led = list(blocks.values())
        sizes = np.fromiter((len(leaders) for _forms, leaders in led), dtype=np.int64, count=len(led))
        self.offsets = np.r_[0, np.cumsum(sizes)]
        self.forms = np.empty(int(self.offsets[-1]), dtype=object)
        self.forms[:] = [form for forms, _leaders in led for form in forms]
        self.leaders = np.fromiter((i for _forms, leaders in led for i in leaders), dtype=np.int64,
                                   count=len(self.forms))
        # the digit signatures numbered, and each block's piece packed beside its signature's number
        self.signatures: dict[str, int] = {}
        packed: dict[str, tuple[list[int], list[str], list[int]]] = {mark: ([], [], []) for mark in "^$<>"}
        for block_key, n in self.number.items():
            signature, _, rest = block_key.partition("|")
            if rest.isascii() and "\n" not in rest and "\x00" not in rest:  # else by its key only, as such queries are
                ids, pieces, numbers = packed[rest[0]]
                ids.append(self.signatures.setdefault(signature, len(self.signatures)))
                pieces.append(rest[1:])
                numbers.append(n)
        self.packed = {}
        for mark, (ids, pieces, numbers) in packed.items():
            values = (np.asarray(ids, dtype=np.int64) << 35) | _packed(pieces, end=mark in "$>")
            order = np.argsort(values, kind="stable")
            self.packed[mark] = (values[order], np.asarray(numbers, dtype=np.int64)[order])

    def numbers(self, marks: str, forms: Any, signatures: Any) -> tuple[Any, Any]:
        """The number of the blocks `marks` (a head's and a tail's) of each of `forms`
        (with their digit `signatures`), -1 for none."""
        import numpy as np

        from curator.logs.bulk import Joined

        joined = Joined(forms.tolist())
        ids = np.fromiter(map(self.signatures.get, signatures, repeat(-1)), dtype=np.int64, count=len(signatures))
        packed = joined.plain & (ids >= 0)  # found by their packed pieces (no block has the other signatures)
        out = []
        for mark, end in zip(marks, (False, True), strict=True):
            found = np.full(len(forms), -1, dtype=np.int64)
            table, numbers = self.packed[mark]
            if len(table) and len(forms):
                values = (ids << 35) | _pieces(joined, end)
                where = np.minimum(np.searchsorted(table, values), len(table) - 1)
                hit = packed & (table[where] == values)
                found[hit] = numbers[where[hit]]
            get = self.number.get
            for k in np.flatnonzero(~joined.plain).tolist():  # other than ASCII: by their block key
                form = forms[k]
                found[k] = get(f"{signatures[k]}|{mark}{form[-5:] if end else form[:5]}", -1)
            out.append(found)
        return out[0], out[1]


def _packed(pieces: list[str], end: bool) -> Any:
    """ASCII pieces of up to five characters, each as one integer (see `_pieces`)."""
    from curator.logs.bulk import Joined

    return _pieces(Joined(pieces), end)


def _pieces(joined: Any, end: bool) -> Any:
    """The first (or, `end`, the last) five characters of each string of `joined`, each
    packed into one integer, 7 bits a character, zeros after a shorter string's: two
    strings' pieces are equal exactly when their packed values are (ASCII without NUL,
    as comparison forms are: `plain_key` drops every character but word ones)."""
    import numpy as np

    codes = joined.codes
    lengths = np.minimum(joined.lengths, 5)
    first = joined.starts + joined.lengths - lengths if end else joined.starts
    values = np.zeros(len(joined), dtype=np.int64)
    if not len(codes):
        return values
    last = len(codes) - 1
    for i in range(5):
        c = codes[np.minimum(first + i, last)].astype(np.int64)
        c[lengths <= i] = 0
        values = (values << 7) | c
    return values


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

        joins_a = np.asarray(joins)
        position = joins_a.dtype if joins_a.dtype in (np.int32, np.int64) else np.int64  # int32 where they fit
        joins_a = joins_a.astype(position, copy=False)
        order_a = np.asarray(order).astype(position, copy=False)
        # a query joins a leader, or the first query with its comparison form, which
        # leads or joins a leader itself: two steps reach every leader
        # (in place, temporaries deleted as soon as they are used: a long tail's peak is here)
        root = np.arange(len(joins_a), dtype=position)
        np.copyto(root, joins_a, where=joins_a >= 0)
        step = joins_a[root]
        np.copyto(root, step, where=step >= 0)
        del step
        self.leaders = order_a[joins_a[order_a] < 0]
        del joins_a
        number = np.full(len(root), -1, dtype=position)  # leader -> its cluster (-1: a query not clustered)
        number[self.leaders] = np.arange(len(self.leaders), dtype=position)
        self.of = number[root]  # query -> its cluster
        del number, root
        # members of each cluster in visiting order (leader first): a stable sort by cluster
        self.members_in = order_a[np.argsort(self.of[order_a], kind="stable")]
        del order_a
        self.starts = np.searchsorted(self.of[self.members_in], np.arange(len(self.leaders) + 1, dtype=position)
                                      ).astype(position)

    def __len__(self) -> int:
        return len(self.leaders)

    def members(self, c: int) -> list[int]:
        return self.members_in[self.starts[c] : self.starts[c + 1]].tolist()

    def totals(self, counts: list[int]) -> Any:
        """The sum of `counts` (one per query) over each cluster: a numpy array (a list
        where pre-aggregated counts pass what int64 holds)."""
        import numpy as np

        total = sum(counts)
        if not len(self) or total >= 1 << 63:
            return [sum(map(counts.__getitem__, self.members(c))) for c in range(len(self))]
        # 32-bit where every sum fits (a log of fewer than 2**31 lines): half the arrays on a long tail
        width = np.int32 if total < 1 << 31 and min(counts) >= 0 else np.int64
        values = np.asarray(counts, dtype=width)
        out = np.empty(len(self), dtype=width)
        for first in range(0, len(self), TOTALS_CHUNK):  # a chunk of clusters at a time: no copy of all counts
            last = min(first + TOTALS_CHUNK, len(self))
            lo, hi = int(self.starts[first]), int(self.starts[last])
            out[first:last] = np.add.reduceat(values[self.members_in[lo:hi]], self.starts[first:last] - lo)
        return out

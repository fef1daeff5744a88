"""Ranking metrics as pure functions, defined as trec_eval defines them.

The metrics take `ranks`: the 1-based rank of each labelled passage found in the
ranked list (first occurrence; passages that were not returned are absent), so a query
costs a dict lookup per result and the metrics only look at a handful of labelled ids.

Definitions (trec_eval 9.x, `-m` names in brackets):

- relevant: a labelled passage whose grade is at least `rel_level` (trec_eval `-l`);
- recall@k [recall_k]: relevant passages in the top k / relevant passages labelled;
- precision@k [P_k]: relevant passages in the top k / k (k, even if fewer were returned);
- success@k [success_k]: 1 if a relevant passage is in the top k. For `require_all`
  cases curator asks for every primary passage instead (not in trec_eval);
- mrr@k: 1 / rank of the first relevant passage if it is in the top k, else 0. This is
  trec_eval's `recip_rank` on the list cut at k (trec_eval's own has no cut-off);
- ndcg@k [ndcg_cut_k]: linear gain (the grade), discount log2(rank + 1), divided by the
  DCG of the labelled grades sorted descending and cut at k. Grades count whatever
  `rel_level` is, as in trec_eval.

A query with no relevant passage scores 0 on every metric (trec_eval does the same);
curator keeps such negative cases out of the means and reports them on their own.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Collection, Iterable, Mapping, Sequence
from functools import cache


def discount(rank: int) -> float:
    """1 / log2(rank + 1), the nDCG discount of a 1-based rank."""
    return 1.0 / math.log2(rank + 1)


def dedupe(ids: Sequence[str], revisions: Sequence[str | None] | None = None) -> tuple[list[int], list[str]]:
    """Positions to keep and the ids dropped: a result repeating an earlier (id, revision)
    is dropped (first one wins). The same id at another revision is a different result."""
    if len(set(ids)) == len(ids):
        return list(range(len(ids))), []
    seen: set[tuple[str, str | None]] = set()
    keep: list[int] = []
    dropped: list[str] = []
    for i, doc in enumerate(ids):
        key = (doc, revisions[i] if revisions else None)
        if key in seen:
            dropped.append(doc)
        else:
            seen.add(key)
            keep.append(i)
    return keep, dropped


def relevant_ids(grades: Mapping[str, int], rel_level: int = 1) -> frozenset[str]:
    return frozenset(doc for doc, grade in grades.items() if grade >= rel_level)


def first_rank(ranks: Mapping[str, int], wanted: Iterable[str]) -> int | None:
    """Rank of the first passage of `wanted` in the list, at any depth (None: not returned)."""
    found = [ranks[doc] for doc in wanted if doc in ranks]
    return min(found) if found else None


def ideal_dcg(grades: Iterable[int], k: int) -> float:
    """The DCG of the labelled grades sorted descending and cut at k."""
    ordered = sorted((g for g in grades if g > 0), reverse=True)[:k]
    return sum(g * discount(r) for r, g in enumerate(ordered, 1))


@cache
def metric_names(k: int) -> tuple[str, str, str, str, str]:
    return f"success@{k}", f"recall@{k}", f"precision@{k}", f"mrr@{k}", f"ndcg@{k}"


def metrics_at(
    ranks: Mapping[str, int],
    relevant: Collection[str],
    grades: Mapping[str, int],
    ks: Sequence[int],
    require: Collection[str] | None = None,
    ideal: Mapping[int, float] | None = None,
) -> dict[str, float]:
    """success, recall, precision, mrr and ndcg at every k in one pass, from the sorted
    relevant ranks (a test holds them equal to the metrics computed one at a time)."""
    found = sorted(ranks[d] for d in relevant if d in ranks)
    # each returned graded passage's rank and discounted gain, summed in ndcg_at's order
    gains = [(r, g * discount(r)) for d, g in grades.items() if g > 0 and (r := ranks.get(d)) is not None]
    needed = [ranks.get(d) for d in require] if require else None
    n_rel = len(relevant)
    first = found[0] if found else None
    out: dict[str, float] = {}
    for k in ks:
        success_k, recall_k, precision_k, mrr_k, ndcg_k = metric_names(k)
        hits = bisect_right(found, k)
        if needed is not None:
            success = 1.0 if all(r is not None and r <= k for r in needed) else 0.0
        else:
            success = 1.0 if hits else 0.0
        best = ideal[k] if ideal is not None and k in ideal else ideal_dcg(grades.values(), k)
        dcg = sum(gain for r, gain in gains if r <= k)
        out[success_k] = success
        out[recall_k] = hits / n_rel if n_rel else 0.0
        out[precision_k] = hits / k
        out[mrr_k] = 1.0 / first if first is not None and first <= k else 0.0
        out[ndcg_k] = dcg / best if best > 0 else 0.0
    return out

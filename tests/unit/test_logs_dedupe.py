"""Dropping sampled clusters that are already queued or already cases: the batched check
gives exactly the answers of checking each cluster on its turn, and a whole import with
no budget in a workspace that already has candidates queues each query once."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from rapidfuzz import fuzz

from curator.logs import dedupe, import_logs
from curator.logs.dedupe import CHUNK, VARIANTS, Existing
from curator.logs.normalise import compare_key, digit_signature, normalize_query, plain_key
from curator.models import CandidateIn

# few short words, some with digits: many near matches, equal scores and shared signatures
WORDS = ["ab", "ba", "abc", "cab", "bca", "aab", "abab", "b", "a1", "1a", "b22", "zz", "label", "lable", "dhl"]


def _case(query: str) -> dict:
    return {"query": query, "slice": "paraphrase", "expect_empty": True}


def _query(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))


def _one_by_one(existing: Existing, norms: list[str], blocks: dict[str, tuple[list[str], list[str]]]) -> str | None:
    """The check, one cluster at a time: an exact norm first, then the first best
    existing query of the whole block (the better of the sorted and the plain forms'
    ratios) of each of the first VARIANTS norms in turn."""
    for norm in norms:
        if norm in existing.exact:
            return existing.exact[norm]
    if existing.similarity >= 100:
        return None
    for norm in norms[:VARIANTS]:
        block = blocks.get(digit_signature(norm))
        best = None
        for other, why in zip(*block, strict=True) if block else ():
            score = max(fuzz.ratio(compare_key(norm), compare_key(other)), fuzz.ratio(plain_key(norm), plain_key(other)))
            if score >= existing.similarity and (best is None or score > best[0]):
                best = (score, why)
        if best:
            return best[1]
    return None


@pytest.fixture
def known(ws):
    """A workspace with 120 queued queries and 60 cases in each of two sets (some of
    them the same query: the candidate is met first)."""
    rng = random.Random(3)
    queued = [_query(rng) for _ in range(120)]
    ws.add_candidates([CandidateIn(query=q, source_kind="generated") for q in queued])
    for name in ("main", "regress"):
        qs = ws.question_set(name)
        for q in [_query(rng) for _ in range(55)] + queued[:5]:
            qs.add(_case(q), reviewer="t")
    return ws


@pytest.mark.parametrize(("similarity", "cells"), [(0, None), (55, None), (75, None), (88, None), (88, 50), (100, None)])
def test_batched_checks_give_the_one_by_one_answers(known, monkeypatch, similarity: float, cells: int | None) -> None:
    if cells:  # score matrices of a few rows, as against a big queue
        monkeypatch.setattr(dedupe, "CELLS", cells)
    existing = Existing(known, similarity)
    whys = set(existing.exact.values())
    assert whys == {"already a candidate", "already a case in main", "already a case in regress"}
    blocks: dict[str, tuple[list[str], list[str]]] = {}
    for norm, why in existing.exact.items():
        keys, reasons = blocks.setdefault(digit_signature(norm), ([], []))
        keys.append(norm)
        reasons.append(why)
    rng = random.Random(similarity)
    known_norms = list(existing.exact)
    # clusters of 1 to 14 norms (more than VARIANTS), now and then one already known exactly
    clusters = [
        list(dict.fromkeys(
            rng.choice(known_norms) if rng.random() < 0.02 else normalize_query(_query(rng))
            for _ in range(rng.choice([1, 1, 1, 2, 3, 14]))
        ))
        for _ in range(CHUNK + 300)  # more than one chunk
    ]
    norms = [n for c in clusters for n in c]
    walk, at = [], 0
    for c in clusters:
        walk.append(list(range(at, at + len(c))))
        at += len(c)

    got = [why for _members, why, _norm in existing.along(list(range(len(walk))), walk.__getitem__, norms)]
    expected = [_one_by_one(existing, c, blocks) for c in clusters]
    assert got == expected
    found = {why for why in expected if why}
    if similarity == 100:
        assert found == whys  # exact matches only, from all three places
    else:
        assert found == whys and expected.count(None) > 0
        # the fuzzy matches decide, and some of them are ties between existing queries
        fuzzy = [c for c, why in zip(clusters, expected, strict=True) if why and not set(c) & set(existing.exact)]
        assert len(fuzzy) > 100


def test_ties_go_to_the_existing_query_met_first_whatever_its_length(ws) -> None:
    # `abcdefghij` scores 2*9/(10+14) = 2*6/(10+6) = 75 against both; the longer one came first
    ws.add_candidates([CandidateIn(query="abcdefghixxxxx", source_kind="generated")])
    ws.question_set("main").add(_case("abcdef"), reviewer="t")
    assert fuzz.ratio("abcdefghij", "abcdefghixxxxx") == fuzz.ratio("abcdefghij", "abcdef") == 75
    assert Existing(ws, 75).duplicates_of([["zzz", "abcdefghij"]]) == ["already a candidate"]
    assert Existing(ws, 76).duplicates_of([["abcdefghij"]]) == [None]
    # an exact match of a later norm wins over a fuzzy one of an earlier norm
    assert Existing(ws, 75).duplicates_of([["abcdefghij", "abcdef"]]) == ["already a case in main"]
    # fuzzy matches are looked for among the first VARIANTS norms only, exact ones among all
    others = ["z" * k for k in range(1, VARIANTS + 1)]
    assert Existing(ws, 75).duplicates_of([[*others, "abcdefghij"], [*others, "abcdef"]]) == [
        None, "already a case in main"]


def test_clusters_past_the_budget_that_hold_a_queued_text_come_back_in_walk_order(ws) -> None:
    import numpy as np

    ws.add_candidates([CandidateIn(query=q, source_kind="generated") for q in ("beta", "delta", "zeta")])
    ws.question_set("main").add(_case("gamma"), reviewer="t")  # a case, not a queued candidate
    norms = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "beta two"]
    cluster_of = np.array([0, 1, 2, 3, 3, 4, 1])
    existing = Existing(ws, 100)
    # clusters 4, 1, 3 in walk order; 0 and 2 hold no queued text; each cluster's first queued norm
    assert existing.queued_in(np.array([4, 2, 1, 3, 0]), cluster_of, norms) == [(4, "zeta"), (1, "beta"), (3, "delta")]
    assert existing.queued_in(np.array([3, 0]), cluster_of, norms) == [(3, "delta")]  # 1 and 4 were reached
    assert existing.queued_in(np.array([], dtype=np.int64), cluster_of, norms) == []


def test_an_import_without_budget_queues_each_query_once(ws, tmp_path: Path) -> None:
    places = ["berlin", "hamburg", "munich", "cologne", "leipzig"]
    queries = [f"parcel {i} stuck in {places[i % 5]}" for i in range(CHUNK + 500)]
    first = tmp_path / "first.jsonl"  # the first thousand asked twice: they are the top
    first.write_text("".join(json.dumps({"query": q}) + "\n" for q in queries[:1000] * 2 + queries[1000:]))
    assert import_logs(ws, [first], limit=1000).queued == 1000
    ws.question_set("main").add(_case(queries[1500]), reviewer="t")
    ws.question_set("main").add(_case(queries[1501].replace("stuck", "stuk")), reviewer="t")  # fuzzy

    # later: every other query with a typo, and a few new ones
    second = tmp_path / "second.jsonl"
    later = [q.replace("parcel", "parcle") if i % 2 else q for i, q in enumerate(queries)]
    new = [f"where is order {i}" for i in range(20)]
    second.write_text("".join(json.dumps({"query": q}) + "\n" for q in later + new))
    summary = import_logs(ws, [second], limit=0)

    assert summary.duplicates == {"already a candidate": 1000, "already a case in main": 2}
    assert summary.queued == len(queries) - 1000 - 2 + len(new)
    numbers = [c.query.split()[1] for c in ws.candidates() if c.query.startswith(("parcel", "parcle"))]
    assert sorted(numbers) == sorted(str(i) for i in range(len(queries)) if i not in (1500, 1501))

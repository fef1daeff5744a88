"""Near-duplicate clustering and sampling."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curator.logs import cluster as cluster_module
from curator.logs.cluster import Clusters, cluster
from curator.logs.normalise import normalize_query
from curator.logs.sample import at_least, sample_order, sample_walk


def _pairs(clusters: Clusters) -> list[tuple[int, list[int]]]:
    """(leader, members) of each cluster, read as the pipeline reads them."""
    return [(int(clusters.leaders[c]), clusters.members(c)) for c in range(len(clusters))]


def _groups(queries: list[str], counts: list[int] | None = None, similarity: float = 88) -> list[set[str]]:
    norms = [normalize_query(q) for q in queries]
    result = cluster(norms, counts or [1] * len(norms), similarity)
    return [{norms[i] for i in members} for _, members in _pairs(result)]


def test_typos_and_word_order_join_one_cluster() -> None:
    groups = _groups(
        ["dhl cutoff time", "cutoff time dhl", "dhl cutof time", "dhl-cutoff time", "ManifestQueueStuck",
         "ManifestQueueStuk", "royal mail pickup"],
        [10, 3, 2, 1, 5, 1, 1],
    )
    assert {"dhl cutoff time", "cutoff time dhl", "dhl cutof time", "dhl-cutoff time"} in groups
    assert {"manifestqueuestuck", "manifestqueuestuk"} in groups
    assert {"royal mail pickup"} in groups


def test_different_numbers_never_join() -> None:
    groups = _groups(["CARRIER-E1042 packstation", "CARRIER-E1043 packstation", "dhl cutoff 18:00", "dhl cutoff 17:00"])
    assert len(groups) == 4


def test_the_most_frequent_form_leads() -> None:
    norms = ["dhl cutof time", "dhl cutoff time"]
    result = cluster(norms, [1, 50], 88)
    assert len(result) == 1 and result.leaders[0] == 1


def test_threshold_100_joins_only_reorderings() -> None:
    groups = _groups(["dhl cutoff time", "cutoff time dhl", "dhl cutof time"], similarity=100)
    assert {"dhl cutoff time", "cutoff time dhl"} in groups and {"dhl cutof time"} in groups


def test_many_distinct_queries_all_land_in_exactly_one_cluster() -> None:
    rng = random.Random(3)
    words = ["label", "carrier", "cutoff", "webhook", "parser", "retry", "manifest", "queue", "dhl", "ups"]
    queries = list({" ".join(rng.choices(words, k=rng.randint(2, 5))) + f" {rng.randint(0, 300)}" for _ in range(20_000)})
    counts = [rng.randint(1, 100) for _ in queries]
    result = cluster(queries, counts, 88)
    members = [i for _, cluster_members in _pairs(result) for i in cluster_members]
    assert sorted(members) == list(range(len(queries)))
    assert len(result) < len(queries)


def test_sampling_orders() -> None:
    counts = [1, 100, 5, 50, 1, 1, 1, 1, 1, 1]
    assert sample_order(counts, "top")[:3] == [1, 3, 2]
    a = sample_order(counts, "random", seed=4)
    assert a == sample_order(counts, "random", seed=4) and sorted(a) == list(range(10))
    firsts = [sample_order(counts, "pps", seed=s)[0] for s in range(200)]
    assert firsts.count(1) > 100  # frequency-weighted: the 100-count query comes first most often
    assert sorted(sample_order(counts, "pps", seed=1)) == list(range(10))


def test_a_walk_over_eligible_clusters_draws_only_those() -> None:
    totals = [1, 100, 5, 50, 1, 1, 2, 1, 1, 1]
    eligible = at_least(totals, 2)
    assert eligible.tolist() == [1, 2, 3, 6]
    for how in ("top", "random", "pps"):
        walk = sample_walk(totals, eligible, how, seed=3)
        assert sorted(walk.tolist()) == [1, 2, 3, 6]
    assert sample_walk(totals, eligible, "top").tolist() == [1, 3, 2, 6]
    firsts = [int(sample_walk(totals, eligible, "pps", seed=s)[0]) for s in range(200)]
    assert firsts.count(1) > 100


def _one_by_one(norms: list[str], counts: list[int], similarity: float, surfaces: list[str] | None = None
                ) -> tuple[list[tuple[int, list[int]]], int]:
    """The algorithm as documented, each query compared on its turn (what `cluster` must
    equal): a query joins the best-scoring leader in reach (ties: the first, in block
    order, older leaders first) that names the same identifiers (with `surfaces`); also
    how many queries met four full blocks on their turn and found a leader there."""
    from rapidfuzz import fuzz

    from curator.logs.cluster import BLOCK_LEADERS
    from curator.logs.normalise import (
        compare_key,
        digit_signature,
        identifier_signature,
        plain_key,
        same_identifiers,
    )

    order = sorted(range(len(norms)), key=lambda i: (-counts[i], norms[i]))
    idents = [identifier_signature(s) for s in surfaces] if surfaces is not None else [()] * len(norms)
    exact: dict[str, int] = {}
    blocks: dict[tuple[str, str], tuple[list[str], list[int], list[str]]] = {}
    clusters: list[tuple[int, list[int]]] = []
    leader_of: list[int] = []  # cluster -> its leader's index
    full_and_found = 0
    for i in order:
        key = compare_key(norms[i])
        found = exact.get(key)
        digits = digit_signature(norms[i])
        plain = plain_key(norms[i])
        block_keys = ((digits, "^" + key[:5]), (digits, "$" + key[-5:]), (digits, "<" + plain[:5]),
                      (digits, ">" + plain[-5:]))
        if found is None and similarity < 100 and key:
            in_reach = []  # (-score, place, cluster)
            for block_key in block_keys:  # sorted forms in the sorted blocks, plain ones in the plain blocks
                keys, ids, plains = blocks.get(block_key, ([], [], []))
                for k, p, leader in zip(keys, plains, ids, strict=True):
                    score = fuzz.ratio(key, k) if block_key[1][0] in "^$" else fuzz.ratio(plain, p)
                    if score >= similarity:
                        in_reach.append((-score, len(in_reach), leader))
            agreeing = [c for _score, _place, c in sorted(in_reach)
                        if same_identifiers(idents[i], idents[leader_of[c]])]
            if agreeing:
                found = agreeing[0]
                full_and_found += all(len(blocks.get(k, ([],))[0]) == BLOCK_LEADERS for k in block_keys)
        if found is None:
            found = len(clusters)
            clusters.append((i, []))
            leader_of.append(i)
            for block_key in block_keys if key else ():
                keys, ids, plains = blocks.setdefault(block_key, ([], [], []))
                if len(keys) < BLOCK_LEADERS:
                    keys.append(key)
                    ids.append(found)
                    plains.append(plain)
        exact.setdefault(key, found)
        clusters[found][1].append(i)
    return clusters, full_and_found


@pytest.mark.parametrize("chunk, rows", [(None, None), (97, 3)])
def test_queries_behind_full_blocks_cluster_as_if_compared_one_by_one(monkeypatch, chunk, rows) -> None:
    if chunk:  # scored in bulk a few at a time: chunks and slices of a block's rows end anywhere
        monkeypatch.setattr(cluster_module, "ONCE_CHUNK", chunk)
        monkeypatch.setattr(cluster_module, "SCORED_ROWS", rows)
    # popular queries fill the blocks (few first and last words); rare typos and
    # reorderings of them come later and find their leaders in full blocks
    rng = random.Random(7)
    words = ["alert", "address", "label", "window", "station", "parser", "retry", "queue", "carrier", "cutoff"]

    def query() -> str:
        return " ".join(rng.choices(words, k=rng.randint(2, 4))) + (f" e{rng.randint(1, 3)}" if rng.random() < 0.1 else "")

    popular = sorted({query() for _ in range(600)})
    counts_of = {q: rng.randint(20, 30) for q in popular}
    while len(counts_of) < 4000:
        q = rng.choice(popular)
        at = rng.randrange(len(q))
        q = rng.choice([query(), q[:at] + q[at + 1:], q[:at] + "x" + q[at:], " ".join(reversed(q.split()))])
        counts_of.setdefault(q, rng.randint(1, 3))
    norms = sorted(counts_of)
    counts = [counts_of[q] for q in norms]
    for similarity in (88, 95):
        expected, full_and_found = _one_by_one(norms, counts, similarity)
        assert full_and_found > 50  # queries behind full blocks are exercised, and find leaders
        assert _pairs(cluster(norms, counts, similarity)) == expected


@pytest.mark.parametrize("chunk, rows", [(None, None), (89, 5)])
def test_queries_naming_identifiers_behind_full_blocks_join_only_the_same_identifiers(monkeypatch, chunk, rows) -> None:
    if chunk:
        monkeypatch.setattr(cluster_module, "ONCE_CHUNK", chunk)
        monkeypatch.setattr(cluster_module, "SCORED_ROWS", rows)
    # alerts named by identifiers one part apart (`etcdGRPCRequestsSlow`,
    # `etcdGRPCWriteRequestsSlow`) are near-duplicates by their letters: behind full
    # blocks as on their turn, a query joins the best leader naming the same identifiers
    rng = random.Random(11)
    words = ["alert", "queue", "label", "retry", "window", "carrier"]
    idents = ["etcdGRPCRequestsSlow", "etcdGRPCWriteRequestsSlow", "ManifestQueueStuck", "ManifestQueueStuk",
              "LabelPrintFailed", "LabelPrintFailing", "CarrierApiDown", "CarrierAppDown"]

    def query() -> str:
        return " ".join([rng.choice(idents), *rng.choices(words, k=rng.randint(1, 3))])

    popular = sorted({query() for _ in range(500)})
    counts_of = {q: rng.randint(20, 30) for q in popular}
    while len(counts_of) < 3000:
        q = rng.choice(popular)
        at = rng.randrange(len(q))
        q = rng.choice([query(), q[:at] + q[at + 1:], " ".join(reversed(q.split())),
                        q.replace("RequestsSlow", "WriteRequestsSlow"), q.replace("Stuck", "Stuk")])
        counts_of.setdefault(q, rng.randint(1, 3))
    surfaces = sorted(counts_of)
    norms = [normalize_query(q) for q in surfaces]
    assert len(set(norms)) == len(norms)
    counts = [counts_of[q] for q in surfaces]
    expected, full_and_found = _one_by_one(norms, counts, 88, surfaces)
    assert full_and_found > 50
    assert expected != _one_by_one(norms, counts, 88)[0]  # the identifiers kept some apart
    assert _pairs(cluster(norms, counts, 88, surfaces)) == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="ab 1_-.<>?é²ſ\u00a0907\n\t٣", max_size=12), max_size=10))
def test_comparison_forms_and_digit_signatures_in_bulk_equal_one_by_one(norms: list[str]) -> None:
    from curator.logs.normalise import compare_key, compare_keys, digit_signature, digit_signatures

    assert compare_keys(norms) == [compare_key(n) for n in norms]
    assert digit_signatures(norms) == [digit_signature(n) for n in norms]


def test_cluster_totals_are_exact_past_what_int64_holds() -> None:
    norms = ["dhl cutoff time", "cutoff time dhl", "label backlog"]
    for counts in ([2**62 + 1, 2**62, 1], [2**40, 3, 1], [40, 2, 7]):  # past int64, past int32, small
        clusters = cluster(norms, counts, 88)
        assert sorted(clusters.totals(counts)) == sorted([counts[0] + counts[1], counts[2]])
        assert _pairs(clusters) == [(0, [0, 1]), (2, [2])]


def test_counts_past_what_int64_holds_are_ordered_and_filtered_as_python_ints() -> None:
    # pre-aggregated counts (a `count` field) can pass 2**63: no overflow, no wrap-around
    totals = [3, 1 << 70, 3, 5]
    assert sample_order(totals) == [1, 3, 0, 2]
    assert at_least(totals, 4).tolist() == [1, 3]
    assert sample_walk(totals, at_least(totals, 4)).tolist() == [1, 3]
    assert sorted(sample_order(totals, "pps", seed=1)) == [0, 1, 2, 3]


def test_cluster_totals_summed_a_chunk_of_clusters_at_a_time_are_each_clusters_sum(monkeypatch) -> None:
    import curator.logs.cluster as clustering

    rng = random.Random(3)
    norms = list(dict.fromkeys(f"{rng.choice(['dhl', 'ups', 'gls'])} label {rng.randint(0, 400)}" for _ in range(600)))
    counts = [rng.randint(1, 9) for _ in norms]
    monkeypatch.setattr(clustering, "TOTALS_CHUNK", 7)  # chunks end inside and between clusters
    found = cluster(norms, counts, 80)
    expected = [sum(counts[i] for i in members) for _leader, members in _pairs(found)]
    assert found.totals(counts).tolist() == expected
    assert len(found) > 7 * 3 and any(len(found.members(c)) > 1 for c in range(len(found)))


def test_top_takes_the_most_frequent_first_and_ties_in_index_order() -> None:
    totals = [3, 1, 3, 2, 1, 7, 1, 2]
    assert sample_order(totals, "top") == [5, 0, 2, 3, 7, 1, 4, 6]
    assert sample_order([1 << 40, 1, 1 << 40, 5], "top") == [0, 2, 3, 1]  # past 32 bits: the same order
    assert sample_walk(totals, None, "top").tolist() == [5, 0, 2, 3, 7, 1, 4, 6]

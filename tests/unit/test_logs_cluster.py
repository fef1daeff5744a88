"""Near-duplicate clustering and sampling."""

from __future__ import annotations

import random

from curator.logs.cluster import cluster
from curator.logs.normalise import normalize_query
from curator.logs.sample import sample_order


def _groups(queries: list[str], counts: list[int] | None = None, similarity: float = 88) -> list[set[str]]:
    norms = [normalize_query(q) for q in queries]
    result = cluster(norms, counts or [1] * len(norms), similarity)
    return [{norms[i] for i in c.members} for c in result]


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
    assert len(result) == 1 and result[0].leader == 1


def test_threshold_100_joins_only_reorderings() -> None:
    groups = _groups(["dhl cutoff time", "cutoff time dhl", "dhl cutof time"], similarity=100)
    assert {"dhl cutoff time", "cutoff time dhl"} in groups and {"dhl cutof time"} in groups


def test_many_distinct_queries_all_land_in_exactly_one_cluster() -> None:
    rng = random.Random(3)
    words = ["label", "carrier", "cutoff", "webhook", "parser", "retry", "manifest", "queue", "dhl", "ups"]
    queries = list({" ".join(rng.choices(words, k=rng.randint(2, 5))) + f" {rng.randint(0, 300)}" for _ in range(20_000)})
    counts = [rng.randint(1, 100) for _ in queries]
    result = cluster(queries, counts, 88)
    members = [i for c in result for i in c.members]
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

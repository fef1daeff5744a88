"""curator's metrics against pytrec_eval (trec_eval), and every documented deviation."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path

import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import curator
from curator.models import Case, Relevant
from curator.scoring import metrics as m
from curator.scoring.runs import read_run

DOCS = [f"d{i}" for i in range(12)]
SCORES = [0.5, 1.0, 1.5, 2.0, 3.0]  # few values: many ties


@st.composite
def labelled_queries(draw):
    """Random qrels (graded 0-3, primary/secondary) and a TREC run with ties, empty and
    missing queries."""
    n = draw(st.integers(1, 6))
    qrels: dict[str, dict[str, int]] = {}
    roles: dict[str, dict[str, str]] = {}
    run: dict[str, list[tuple[str, float]] | None] = {}
    for i in range(n):
        qid = f"q{i}"
        labelled = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=5, unique=True))
        grades = {d: draw(st.integers(0, 3)) for d in labelled}
        qrels[qid] = grades
        roles[qid] = {d: ("primary" if j == 0 or draw(st.booleans()) else "secondary") for j, d in enumerate(labelled)}
        kind = draw(st.sampled_from(["ranked", "ranked", "ranked", "empty", "missing"]))
        if kind == "missing":
            run[qid] = None
        elif kind == "empty":
            run[qid] = []
        else:
            docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=12, unique=True))
            run[qid] = [(d, draw(st.sampled_from(SCORES))) for d in docs]
    return qrels, roles, run


def _cases(qrels, roles) -> list[Case]:
    return [
        Case(
            query_id=qid,
            query=f"question {qid}",
            slice="s",
            relevant=[Relevant(id=d, role=roles[qid][d], grade=g) for d, g in grades.items()],
        )
        for qid, grades in qrels.items()
    ]


def _write_trec(path: Path, run) -> None:
    lines = []
    for qid, docs in run.items():
        for rank, (doc, score) in enumerate(docs or [], 1):
            lines.append(f"{qid} Q0 {doc} {rank} {score} sys")
    path.write_text("\n".join(lines) + "\n")


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=labelled_queries(), ks=st.lists(st.integers(1, 8), min_size=1, max_size=3, unique=True),
       rel_level=st.sampled_from([1, 2]))
def test_metrics_match_trec_eval(tmp_path: Path, data, ks, rel_level) -> None:
    qrels, roles, run = data
    path = tmp_path / "run.trec"
    _write_trec(path, run)
    result = curator.score(_cases(qrels, roles), read_run(path), k=ks, rel_level=rel_level)

    cut = ",".join(map(str, ks))
    measures = {f"ndcg_cut.{cut}", f"recall.{cut}", f"P.{cut}", f"success.{cut}"}
    present = {q: dict(docs) for q, docs in run.items() if docs is not None}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=rel_level)
    expected = evaluator.evaluate(present)
    sums: dict[str, float] = {}
    for qid in qrels:
        got = result.questions[qid]["metrics"]
        want = expected.get(qid)  # missing queries: trec_eval ignores them, curator scores 0
        for k in ks:
            for ours, theirs in (("ndcg", "ndcg_cut"), ("recall", "recall"), ("precision", "P"), ("success", "success")):
                value = want[f"{theirs}_{k}"] if want else 0.0
                assert math.isclose(got[f"{ours}@{k}"], value, abs_tol=1e-9), (qid, ours, k, got, want)
                sums[f"{ours}@{k}"] = sums.get(f"{ours}@{k}", 0.0) + value
            # MRR@k is trec_eval's recip_rank on the ranking cut at k.
            if run[qid]:
                top = sorted(run[qid], key=lambda p: (p[1], p[0]), reverse=True)[:k]
                rr = pytrec_eval.RelevanceEvaluator({qid: qrels[qid]}, {"recip_rank"}, relevance_level=rel_level)
                mrr = rr.evaluate({qid: dict(top)})[qid]["recip_rank"]
            else:
                mrr = 0.0
            assert math.isclose(got[f"mrr@{k}"], mrr, abs_tol=1e-9), (qid, k, got, run[qid])
    # The overall mean divides by every case, missing ones included.
    for name, total in sums.items():
        assert math.isclose(result.overall[name], total / len(qrels), abs_tol=1e-9)


def test_trec_ties_break_on_docno_descending(tmp_path: Path) -> None:
    path = tmp_path / "run.trec"
    path.write_text("q Q0 a 1 1.0 x\nq Q0 c 2 1.0 x\nq Q0 b 3 2.0 x\n")
    assert read_run(path).queries["q"].ids == ["b", "c", "a"]


def test_jsonl_keeps_the_submitted_order_even_when_scores_disagree(tmp_path: Path) -> None:
    """Deviation: trec_eval would re-sort by score; a JSONL list order is the rank."""
    path = tmp_path / "run.jsonl"
    path.write_text('{"query_id": "q", "results": [{"id": "a", "score": 1}, {"id": "b", "score": 5}]}\n')
    cases = [Case(query_id="q", query="x", slice="s", relevant=[Relevant(id="a")])]
    result = curator.score(cases, read_run(path), k=1)
    assert result.questions["q"]["ranks"] == {"a": 1}
    assert result.overall["mrr@1"] == 1.0
    trec = pytrec_eval.RelevanceEvaluator({"q": {"a": 2}}, {"recip_rank"}).evaluate({"q": {"a": 1.0, "b": 5.0}})
    assert trec["q"]["recip_rank"] == 0.5


def test_mrr_is_cut_at_k_unlike_trec_eval_recip_rank() -> None:
    cases = [Case(query_id="q", query="x", slice="s", relevant=[Relevant(id="a")])]
    result = curator.score(cases, {"q": ["x", "y", "a"]}, k=[2])
    assert result.questions["q"]["metrics"]["mrr@2"] == 0.0
    assert result.questions["q"]["first_relevant_rank"] == 3
    trec = pytrec_eval.RelevanceEvaluator({"q": {"a": 2}}, {"recip_rank"}).evaluate({"q": {"x": 3, "y": 2, "a": 1}})
    assert trec["q"]["recip_rank"] == pytest.approx(1 / 3)


def test_missing_queries_score_zero_and_are_listed() -> None:
    cases = [
        Case(query_id="here", query="x", slice="s", relevant=[Relevant(id="a")]),
        Case(query_id="gone", query="y", slice="s", relevant=[Relevant(id="b")]),
    ]
    result = curator.score(cases, {"here": ["a"]}, k=1)
    assert result.artefact["missing"] == ["gone"]
    assert result.questions["gone"]["failure"] == "missing"
    assert result.overall["success@1"] == 0.5  # trec_eval (without -c) would say 1.0


def test_duplicate_ids_keep_the_first_rank_and_are_reported() -> None:
    cases = [Case(query_id="q", query="x", slice="s", relevant=[Relevant(id="a"), Relevant(id="b", role="secondary")])]
    result = curator.score(cases, {"q": ["x", "a", "x", "b"]}, k=3)
    question = result.questions["q"]
    assert question["duplicates"] == ["x"]
    assert question["ranks"] == {"a": 2, "b": 3}  # the repeated x no longer takes rank 3
    assert result.artefact["duplicates"] == {"q": ["x"]}


def test_require_all_needs_every_primary_in_the_top_k() -> None:
    rel = [Relevant(id="a"), Relevant(id="b"), Relevant(id="c", role="secondary")]
    cases = [
        Case(query_id="all", query="x", slice="multi", relevant=rel, require_all=True),
        Case(query_id="any", query="y", slice="multi", relevant=rel),
    ]
    result = curator.score(cases, {"all": ["a", "c", "x", "b"], "any": ["a", "c", "x", "b"]}, k=3)
    assert result.questions["all"]["metrics"]["success@3"] == 0.0
    assert result.questions["all"]["failure"] == "miss"
    assert result.questions["any"]["metrics"]["success@3"] == 1.0
    assert result.questions["all"]["metrics"]["recall@3"] == pytest.approx(2 / 3)


def test_rel_level_two_ignores_secondaries_for_recall_but_not_for_ndcg_gain() -> None:
    cases = [Case(query_id="q", query="x", slice="s", relevant=[Relevant(id="a"), Relevant(id="b", role="secondary")])]
    one = curator.score(cases, {"q": ["b", "a"]}, k=1, rel_level=1)
    two = curator.score(cases, {"q": ["b", "a"]}, k=1, rel_level=2)
    assert one.questions["q"]["metrics"]["recall@1"] == 0.5
    assert two.questions["q"]["metrics"]["recall@1"] == 0.0
    assert two.questions["q"]["metrics"]["mrr@1"] == 0.0
    assert one.questions["q"]["metrics"]["ndcg@1"] == two.questions["q"]["metrics"]["ndcg@1"] == 0.5
    assert two.artefact["config"]["secondaries_relevant"] is False


def test_negative_cases_are_kept_out_of_the_means() -> None:
    cases = [
        Case(query_id="pos", query="x", slice="s", relevant=[Relevant(id="a")]),
        Case(query_id="empty-ok", query="y", slice="negative", expect_empty=True),
        Case(query_id="low-scores", query="z", slice="negative", expect_empty=True),
        Case(query_id="high-score", query="w", slice="negative", expect_empty=True),
    ]
    ranked = {"pos": ["a"], "empty-ok": [], "low-scores": [("x", 0.2)], "high-score": [("x", 0.2), ("y", 0.9)]}
    result = curator.score(cases, ranked, k=1, negative_threshold=0.5)
    assert result.overall["n"] == 1 and result.overall["success@1"] == 1.0
    assert result.slices["negative"]["negative_pass_rate"] == pytest.approx(2 / 3)
    assert "success@1" not in result.slices["negative"]
    assert result.questions["high-score"]["failure"] == "false_positive"
    strict = curator.score(cases, ranked, k=1)  # no threshold: only an empty list passes
    assert strict.slices["negative"]["negative_pass_rate"] == pytest.approx(1 / 3)


def test_stale_revision_above_the_current_one_fails_the_case() -> None:
    current = "7f183750d2a4"
    cases = [Case(query_id="q", query="x", slice="freshness",
                  relevant=[Relevant(id="a", revision=current)], freshness={"revision": current})]
    ranked = {"q": [{"id": "a", "revision": "0123456789ab"}, {"id": "a", "revision": current + "0" * 28}]}
    result = curator.score(cases, ranked, k=5)
    q = result.questions["q"]
    assert q["failure"] == "stale"
    assert q["stale_ranks"] == {"a": 1}
    assert q["ranks"] == {"a": 2}  # the full sha matches the 12-character label
    assert [t.get("label") for t in q["top"]] == ["stale", "primary"]
    fine = curator.score(cases, {"q": [{"id": "a", "revision": current[:7]}]}, k=5)
    assert fine.questions["q"]["failure"] is None


def test_below_max_rank_when_the_primary_is_found_too_low() -> None:
    cases = [Case(query_id="q", query="x", slice="s", relevant=[Relevant(id="a")], max_rank=1)]
    result = curator.score(cases, {"q": ["x", "a"]}, k=5)
    assert result.questions["q"]["failure"] == "below_max_rank"
    assert result.questions["q"]["max_rank_pass"] is False
    assert result.overall["max_rank_pass_rate"] == 0.0


# The metrics one at a time, as trec_eval defines them: the oracle metrics_at is held to.

def label_ranks(ids: Iterable[str], labelled: Collection[str]) -> dict[str, int]:
    """1-based rank of the first occurrence of each labelled id in `ids`."""
    ranks: dict[str, int] = {}
    for rank, doc in enumerate(ids, 1):
        if doc in labelled and doc not in ranks:
            ranks[doc] = rank
    return ranks


def recall_at(ranks: Mapping[str, int], relevant: Collection[str], k: int) -> float:
    if not relevant:
        return 0.0
    return sum(1 for doc in relevant if ranks.get(doc, k + 1) <= k) / len(relevant)


def precision_at(ranks: Mapping[str, int], relevant: Collection[str], k: int) -> float:
    return sum(1 for doc in relevant if ranks.get(doc, k + 1) <= k) / k


def reciprocal_rank_at(ranks: Mapping[str, int], relevant: Collection[str], k: int) -> float:
    rank = m.first_rank(ranks, relevant)
    return 1.0 / rank if rank is not None and rank <= k else 0.0


def success_at(
    ranks: Mapping[str, int], relevant: Collection[str], k: int, require: Collection[str] | None = None
) -> float:
    """1.0 if any relevant passage is in the top k; with `require`, every one of those must be."""
    if require:
        return 1.0 if all(ranks.get(doc, k + 1) <= k for doc in require) else 0.0
    return 1.0 if any(ranks.get(doc, k + 1) <= k for doc in relevant) else 0.0


def ndcg_at(ranks: Mapping[str, int], grades: Mapping[str, int], k: int, ideal: float | None = None) -> float:
    best = m.ideal_dcg(grades.values(), k) if ideal is None else ideal
    if best <= 0:
        return 0.0
    dcg = sum(g * m.discount(ranks[d]) for d, g in grades.items() if g > 0 and ranks.get(d, k + 1) <= k)
    return dcg / best


def test_pure_functions_on_a_worked_example() -> None:
    # trec_eval's own numbers for this example (see test_metrics_match_trec_eval for the rest)
    grades = {"d1": 2, "d2": 1, "d3": 0}
    ranks = label_ranks(["d4", "d2", "d1"], grades)
    assert ranks == {"d2": 2, "d1": 3}
    assert ndcg_at(ranks, grades, 5) == pytest.approx(0.6199062332840657)
    assert recall_at(ranks, m.relevant_ids(grades, 2), 2) == 0.0
    assert precision_at(ranks, m.relevant_ids(grades), 5) == pytest.approx(0.4)


@settings(max_examples=150, deadline=None)
@given(
    grades=st.dictionaries(st.sampled_from(DOCS), st.integers(0, 3), min_size=1, max_size=5),
    ranked=st.lists(st.sampled_from(DOCS), max_size=12, unique=True),
    ks=st.lists(st.integers(1, 10), min_size=1, max_size=3, unique=True),
    rel_level=st.sampled_from([1, 2]),
    require_all=st.booleans(),
)
def test_one_pass_metrics_equal_the_single_functions(grades, ranked, ks, rel_level, require_all) -> None:
    ranks = label_ranks(ranked, grades)
    relevant = m.relevant_ids(grades, rel_level)
    require = sorted(grades)[:2] if require_all else None
    together = m.metrics_at(ranks, relevant, grades, ks, require)
    for k in ks:
        assert together[f"success@{k}"] == success_at(ranks, relevant, k, require)
        assert together[f"recall@{k}"] == pytest.approx(recall_at(ranks, relevant, k))
        assert together[f"precision@{k}"] == pytest.approx(precision_at(ranks, relevant, k))
        assert together[f"mrr@{k}"] == pytest.approx(reciprocal_rank_at(ranks, relevant, k))
        assert together[f"ndcg@{k}"] == pytest.approx(ndcg_at(ranks, grades, k))


def test_freshness_uses_the_workspace_revision_order(demo_ws) -> None:
    """An older revision is stale; a newer one than the label is a hit (the label lags)."""
    passage = "carriers/dhl.md#cutoff-times"
    (current, _, _), (older, _, _), (oldest, _, _) = demo_ws.revisions_of(passage)[:3]

    def case(revision: str) -> Case:
        return Case(query_id="dhl", query="DHL cutoff", slice="freshness",
                    relevant=[Relevant(id=passage, revision=revision)])

    stale = curator.score([case(current)], {"dhl": [{"id": passage, "revision": older}]}, k=5, workspace=demo_ws, gates=[])
    assert stale.questions["dhl"]["failure"] == "stale"
    assert stale.questions["dhl"]["ranks"] == {passage: None}
    newer = curator.score([case(oldest)], {"dhl": [{"id": passage, "revision": current}]}, k=5, workspace=demo_ws, gates=[])
    assert newer.questions["dhl"]["failure"] is None
    assert newer.questions["dhl"]["ranks"] == {passage: 1}
    # By default the freshness revision applies to primaries without their own revision.
    pinned = Case(query_id="dhl", query="DHL cutoff", slice="freshness", relevant=[Relevant(id=passage)],
                  freshness={"revision": current[:7]})
    old_hit = curator.score([pinned], {"dhl": [{"id": passage, "revision": older[:12]}]}, k=5, workspace=demo_ws, gates=[])
    assert old_hit.questions["dhl"]["failure"] == "stale"

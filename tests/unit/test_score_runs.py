"""Run files read and scored whole: problems with their line numbers, the lists of
missing, unknown and duplicated queries, latency and progress."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import curator
from curator.errors import InputError
from curator.models import Case, Relevant
from curator.scoring import runs

QUERIES = 300


def _cases() -> list[Case]:
    rng = random.Random(3)
    cases = []
    for i in range(QUERIES):
        docs = rng.sample(range(40), rng.randint(1, 3))
        relevant = [Relevant(id=f"d{d}", role="primary" if j == 0 else "secondary") for j, d in enumerate(docs)]
        cases.append(Case(query_id=f"q{i}", query=f"question {i}", slice=f"s{i % 3}", relevant=relevant))
    cases.append(Case(query_id="neg", query="nothing", slice="negative", expect_empty=True, relevant=[]))
    return cases


def _rankings(rng: random.Random, qid: str) -> list[tuple[str, float]]:
    docs = rng.sample(range(40), 20)
    return [(f"d{d}", rng.choice([1.0, 2.0, 2.5, 3.0])) for d in docs]  # many ties


def _trec_lines(qids) -> list[str]:
    rng = random.Random(5)
    return [f"{q} Q0 {d} {r} {s} sys" for q in qids for r, (d, s) in enumerate(_rankings(rng, q), 1)]


def _score(path: Path):
    result = curator.score(_cases(), path, k=[5, 10], negative_threshold=2.0)
    return {key: value for key, value in result.artefact.items() if key != "created_at"}


def test_a_trec_run_is_read_with_its_problems_and_lists(tmp_path: Path) -> None:
    qids = [f"q{i}" for i in range(QUERIES - 10)] + ["neg", "not-a-case"]  # 10 cases missing
    lines = _trec_lines(qids)
    lines.insert(100, "q5 Q0 d1 1 high sys")  # bad lines early and late in the file
    lines.insert(len(lines) - 50, "broken")
    path = tmp_path / "run.trec"
    path.write_text("\n".join(lines) + "\n")
    art = _score(path)
    assert [p.split(": ", 1)[0] for p in art["run"]["problems"]] == [f"{path}:101", f"{path}:{len(lines) - 50}"]
    assert len(art["missing"]) == 10 and art["unknown_queries"] == ["not-a-case"]
    assert art["run"]["queries"] == len(qids)
    assert art["questions"]["neg"]["failure"] == "false_positive"


def test_a_jsonl_run_keeps_latency_and_reports_duplicates(tmp_path: Path) -> None:
    rng = random.Random(9)
    rows = []
    for i in range(QUERIES):
        results = [{"id": d, "score": s} for d, s in _rankings(rng, f"q{i}")]
        results.append(results[0])  # a duplicate id: the first rank is kept
        rows.append(json.dumps({"query_id": f"q{i}", "results": results, "latency_ms": rng.uniform(1, 90)}))
    rows.insert(250, "{not json")
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(rows) + "\n")
    art = _score(path)
    assert art["run"]["problems"][0].startswith(f"{path}:251: not valid JSON")
    assert art["latency_ms"]["n"] == QUERIES and len(art["duplicates"]) == QUERIES


def test_interleaved_trec_lines_and_a_repeated_jsonl_query(tmp_path: Path) -> None:
    lines = _trec_lines([f"q{i}" for i in range(QUERIES)])
    trec = tmp_path / "run.trec"
    trec.write_text("\n".join(lines[1:] + lines[:1]) + "\n")  # q0's first line last
    art = _score(trec)
    assert art["questions"]["q0"]["top"] and not art["run"]["problems"]
    in_order = tmp_path / "in-order.trec"
    in_order.write_text("\n".join(lines) + "\n")
    assert art["questions"] == _score(in_order)["questions"]

    rows = [json.dumps({"query_id": f"q{i}", "results": [f"d{i % 40}"]}) for i in range(QUERIES)]
    jsonl = tmp_path / "run.jsonl"
    jsonl.write_text("\n".join([*rows, rows[0]]) + "\n")
    art = _score(jsonl)
    assert art["run"]["problems"] == [f"{jsonl}:{QUERIES + 1}: query q0 appears again; the first line is kept"]


def test_bad_utf8_is_reported_with_its_byte(tmp_path: Path) -> None:
    good = ("\n".join(_trec_lines([f"q{i}" for i in range(QUERIES)])) + "\n").encode()
    path = tmp_path / "run.trec"
    path.write_bytes(good + b"q1 Q0 \xff 1 1.0 sys\n")
    with pytest.raises(InputError, match=rf"not UTF-8 text \(byte {len(good) + 6}\)"):
        _score(path)


def test_progress_counts_bytes_then_questions(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(runs, "CHUNK", 4096)  # several reports for a small file
    path = tmp_path / "run.trec"
    path.write_text("\n".join(_trec_lines([f"q{i}" for i in range(QUERIES)])) + "\n")
    seen: dict[str, list[tuple[int, int]]] = {"read": [], "score": []}
    curator.score(_cases(), path, k=5, progress=lambda stage, done, total: seen[stage].append((done, total)))
    for stage, total in (("read", path.stat().st_size), ("score", QUERIES + 1)):
        done = [d for d, _ in seen[stage]]
        assert done == sorted(done) and done[-1] == total, (stage, seen[stage][-3:])
        assert {t for _, t in seen[stage]} == {total}
    assert len(seen["read"]) > 2


_good = st.fixed_dictionaries(
    {"id": st.sampled_from(["a", "b", "c"])},
    optional={"score": st.one_of(st.none(), st.floats(allow_nan=False), st.integers(-5, 5)),
              "revision": st.one_of(st.none(), st.sampled_from(["abc1234", "def5678"]))})
_bad = st.one_of(
    st.fixed_dictionaries({"id": st.sampled_from(["", 7, None])}),
    st.fixed_dictionaries({"id": st.just("a"), "score": st.sampled_from([True, "1.0", [1]])}),
    st.fixed_dictionaries({"id": st.just("a"), "revision": st.integers(0, 3)}),
    st.fixed_dictionaries({"score": st.just(1.0)}),
    st.sampled_from(["a", "c"]),
    st.integers(),
)


def _is_good(item) -> bool:
    if isinstance(item, str):
        return True
    if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"]:
        return False
    score = item.get("score")
    return score is None or (not isinstance(score, bool) and isinstance(score, int | float))


@example([{"id": "a", "score": 3}, {"id": "b"}])
@given(st.lists(st.one_of(_good, _good, _good, _bad), max_size=6))
def test_a_results_list_is_read_in_order_or_refused_at_its_first_bad_result(results) -> None:
    bad = [pos for pos, item in enumerate(results, 1) if not _is_good(item)]
    if bad:
        with pytest.raises(ValueError, match=rf"^result {bad[0]}\b"):
            runs.ranked_from_list(results)
        return
    ranked = runs.ranked_from_list(results)
    dicts = [{"id": item} if isinstance(item, str) else item for item in results]
    assert ranked.ids == [d["id"] for d in dicts]
    assert ranked.scores == [None if d.get("score") is None else float(d["score"]) for d in dicts]
    assert all(s is None or type(s) is float for s in ranked.scores)
    revisions = [None if d.get("revision") is None else str(d["revision"]) for d in dicts]
    assert ranked.revisions == (None if revisions.count(None) == len(revisions) else revisions)

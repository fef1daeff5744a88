"""Triage core and CLI on the built demo: its stored runs (bm25, then dense-v2 with failures
of every kind), real question-set files, the real workspace database."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curator.errors import CuratorError
from curator.scoring.artefact import list_artefacts, read_artefact
from curator.triage import TriageSession, decisions, failures, load_artefact, rescore, summary

E1042 = "carrier-e1042-meaning"
E1042_OLD = "errors/carrier-errors.md#1xxx-request-and-account-errors"
E1042_TABLE = "errors/carrier-errors.md#carrier-error-codes"
RETRIES = "runbooks/parser.md#retries"
OLD_RETRIES_REV = "a41f7c9e2b3d58f06e1c4a7b9d2e5f8031c6a4b7"


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def set_files(ws) -> tuple[list[dict], list[dict]]:
    root = ws.root / "datasets" / "main"
    return lines(root / "cases.jsonl"), lines(root / "changelog.jsonl")


def item_of(session: TriageSession, query_id: str):
    return next(i for i in session.items if i.query_id == query_id)


def test_demo_has_runs_and_failures_come_worst_slice_first(demo_ws):
    stored = list_artefacts(demo_ws.runs_dir)
    assert [read_artefact(p)["label"] for p in stored] == ["bm25", "dense-v2"]
    art = load_artefact(demo_ws)  # default: the newest
    assert art["label"] == "dense-v2"
    items = failures(demo_ws, art)
    assert [(i.slice, i.failure, i.query_id) for i in items] == [
        ("freshness", "stale", "default-value-of-parser-max-retries"),  # 2 of 2 fail
        ("freshness", "below_max_rank", "what-is-the-current-dhl-weekday"),
        ("exact_identifier", "miss", E1042),  # 2 of 3
        ("exact_identifier", "miss", "parser-max-retries"),
        ("multi_hop", "miss", "carrierapierrorratehigh-fires-for-dhl-ten"),  # 1 of 2, success 0.5
        ("negative", "false_positive", "how-do-i-expense-a-taxi"),  # 1 of 2, no success
        ("paraphrase", "miss", "until-what-time-can-dhl-parcels"),  # 1 of 3
    ]
    stale = items[0]
    assert [(r.rank, r.id, r.mark) for r in stale.results[:3]] == [
        (1, RETRIES, "stale"), (2, "config/carrier-config.md#parser-keys", "unlabelled"), (3, RETRIES, "primary")]
    assert stale.results[0].revision == OLD_RETRIES_REV
    # earlier runs: the bm25 run ranked it 4th
    assert [(e.label, e.first_relevant_rank, e.failure) for e in stale.earlier] == [("bm25", 4, None)]
    # a labelled passage below the stored top is still on the card, with its rank
    e1042 = items[2]
    below = [r for r in e1042.results if not r.in_top]
    assert [(r.id, r.rank, r.mark) for r in below] == [(E1042_OLD, 7, "primary")]


def test_bad_label_relabels_with_the_cause_as_reason(demo_ws):
    session = TriageSession(demo_ws, reviewer="ana")
    item = item_of(session, E1042)
    with pytest.raises(CuratorError, match="change the labels first"):
        session.decide(item, "bad_label")
    session.mark(item, E1042_TABLE, "primary")
    session.mark(item, E1042_OLD, None)
    assert [r.mark for r in item.results if r.id == E1042_TABLE] == ["primary"]
    with pytest.raises(CuratorError, match="labels on this card were changed"):
        session.decide(item, "retrieval_miss")
    decision = session.decide(item, "bad_label", note="the code table answers it")
    cases, changes = set_files(demo_ws)
    case, change = cases[-1], changes[-1]
    assert (case["query_id"], case["rev"]) == (E1042, 2)
    assert case["relevant"] == [{"id": E1042_TABLE, "role": "primary", "grade": 2}]
    assert case["tags"] == ["regression"] and case["reviewer"] == "ana"
    assert change["action"] == "relabel" and change["rev"] == 2
    assert change["reason"] == f"triage bad_label ({session.run}): the code table answers it"
    assert change["versions"]["corpus"]
    stored = decisions(demo_ws, session.run)
    assert [(d.query_id, d.cause, d.action, d.rev, d.reviewer, d.note, d.failure) for d in stored] == [
        (E1042, "bad_label", "relabel", 2, "ana", "the code table answers it", "miss")]
    assert decision.id == stored[0].id
    assert item not in session.queue and session.remaining == 6
    # a new session of the same run leaves decided cases out (unless asked)
    assert E1042 not in [i.query_id for i in TriageSession(demo_ws).queue]
    assert E1042 in [i.query_id for i in TriageSession(demo_ws, include_decided=True).queue]


def test_stale_metadata_repins_to_current_or_a_confirmed_older_revision(demo_ws):
    session = TriageSession(demo_ws)
    item = item_of(session, "default-value-of-parser-max-retries")
    with pytest.raises(CuratorError, match="already pinned to 0f0bca32c24e"):
        session.decide(item, "stale_metadata")  # the pin is the corpus's current revision
    assert not decisions(demo_ws)
    # an older revision than the corpus's current one needs a confirmation naming both dates
    with pytest.raises(CuratorError, match=r"a41f7c9e2b3d \(2026-10-06T13:41:00Z\) is older than the corpus's "
                       r"current revision 0f0bca32c24e \(\d{4}-\d\d-\d\dT"):
        session.decide(item, "stale_metadata", revision=OLD_RETRIES_REV, passage=RETRIES)
    assert not decisions(demo_ws)
    session.decide(item, "stale_metadata", revision=OLD_RETRIES_REV, passage=RETRIES, note="asks about October",
                   confirm_older=True)
    cases, changes = set_files(demo_ws)
    assert cases[-1]["relevant"] == [{"id": RETRIES, "role": "primary", "grade": 2, "revision": OLD_RETRIES_REV}]
    assert cases[-1]["freshness"] == {"revision": OLD_RETRIES_REV}
    assert changes[-1]["action"] == "relabel"
    assert changes[-1]["reason"].startswith("triage stale_metadata (") and "asks about October" in changes[-1]["reason"]
    assert decisions(demo_ws)[-1].action == "repin"
    # the default re-pins to the corpus's current revision; undo puts the old pin back
    again = TriageSession(demo_ws, include_decided=True)
    again.decide(item_of(again, item.query_id), "stale_metadata")
    again.undo()
    cases, changes = set_files(demo_ws)
    revs = [(c["rev"], c["relevant"][0].get("revision"), c["freshness"]["revision"])
            for c in cases if c["query_id"] == item.query_id]
    assert revs == [(1, "0f0bca32c24e", "0f0bca32c24e"), (2, OLD_RETRIES_REV, OLD_RETRIES_REV),
                    (3, "0f0bca32c24e", "0f0bca32c24e"), (4, OLD_RETRIES_REV, OLD_RETRIES_REV)]
    assert changes[-1]["action"] == "relabel" and changes[-1]["reason"].startswith("undo triage stale_metadata")


@pytest.mark.parametrize(
    ("cause", "query_id", "appends"),
    [
        ("synonym_gap", "until-what-time-can-dhl-parcels", True),
        ("retrieval_miss", "how-do-i-expense-a-taxi", True),
        ("missing_chunk", "carrierapierrorratehigh-fires-for-dhl-ten", False),  # already tagged
        ("ranking_tie", "parser-max-retries", False),
    ],
)
def test_retrieval_causes_tag_regression(demo_ws, cause, query_id, appends):
    before_cases, _ = set_files(demo_ws)
    session = TriageSession(demo_ws)
    decision = session.decide(item_of(session, query_id), cause)
    cases, changes = set_files(demo_ws)
    if appends:
        assert len(cases) == len(before_cases) + 1
        assert cases[-1]["query_id"] == query_id and "regression" in cases[-1]["tags"]
        assert changes[-1]["action"] == "edit"
        assert changes[-1]["reason"] == f"triage {cause} ({session.run})"
        assert decision.rev == cases[-1]["rev"]
    else:
        assert len(cases) == len(before_cases)  # nothing to change: the cause is still recorded
        assert decision.rev is None
    assert [(d.query_id, d.cause, d.action) for d in decisions(demo_ws)] == [(query_id, cause, "regression")]


def test_undo_appends_a_restoring_rev_and_summary_forgets_the_decision(demo_ws):
    session = TriageSession(demo_ws)
    item = item_of(session, "until-what-time-can-dhl-parcels")
    session.decide(item, "synonym_gap")
    assert summary(demo_ws, session.artefact)["triaged"] == 1
    back = session.undo()
    assert back is item and session.queue[0] is item and item.decision is None
    cases, changes = set_files(demo_ws)
    assert [(c["rev"], c["tags"]) for c in cases if c["query_id"] == item.query_id] == [
        (1, []), (2, ["regression"]), (3, [])]
    assert changes[-1]["action"] == "edit" and changes[-1]["reason"].startswith("undo triage synonym_gap")
    rows = decisions(demo_ws)
    assert [(r.action, r.rev) for r in rows] == [("regression", 2), ("undo", 3)]
    assert rows[0].undone_by == rows[1].id
    data = summary(demo_ws, session.artefact)
    assert data["triaged"] == 0
    assert session.undo() is None


def test_skip_sends_the_card_to_the_back(demo_ws):
    session = TriageSession(demo_ws)
    first = session.next_item()
    session.skip(first)
    assert session.queue[-1] is first and session.next_item() is not first
    assert not decisions(demo_ws)


def test_summary_counts_per_cause_and_slice(demo_ws, run_cli):
    session = TriageSession(demo_ws)
    session.decide(item_of(session, "until-what-time-can-dhl-parcels"), "synonym_gap")
    session.decide(item_of(session, "parser-max-retries"), "ranking_tie")
    session.decide(item_of(session, "how-do-i-expense-a-taxi"), "retrieval_miss")
    data = summary(demo_ws, session.artefact)
    rows = {r["cause"]: r for r in data["causes"]}
    assert data["failures"] == 7 and data["triaged"] == 3
    assert rows["synonym_gap"]["slices"]["paraphrase"] == 1 and rows["synonym_gap"]["total"] == 1
    assert rows["ranking_tie"]["slices"] == {s: int(s == "exact_identifier") for s in data["slices"]}
    assert rows["untriaged"]["total"] == 4 and rows["untriaged"]["slices"]["freshness"] == 2
    assert rows["retrieval_miss"]["failure_kinds"] == {"false_positive": 1}
    result = run_cli(["triage", "--summary", "dense-v2"], cwd=demo_ws.root)
    assert result.exit_code == 0, result.output
    assert "synonym gap" in result.output and "7 failures, 3 triaged" in result.output
    as_json = run_cli(["triage", "--summary", "latest", "--json"], cwd=demo_ws.root)
    assert json.loads(as_json.stdout)["causes"] == data["causes"]


def test_triage_cli_needs_a_terminal_and_a_run(demo_ws, ws, run_cli):
    result = run_cli(["triage"], cwd=demo_ws.root)
    assert result.exit_code == 1 and "needs an interactive terminal" in result.output
    empty = run_cli(["triage", "--summary"], cwd=ws.root)
    assert empty.exit_code == 1 and "no run artefacts" in empty.output and "curator score" in empty.output
    unknown = run_cli(["triage", "--summary", "nosuchrun"], cwd=demo_ws.root)
    assert unknown.exit_code == 1 and "nosuchrun" in unknown.output


def _metrics(art: dict) -> dict:
    return {"overall": art["metrics"]["overall"], "slices": art["metrics"]["slices"],
            "questions": {q: (v["failure"], v.get("metrics"), v.get("first_relevant_rank"))
                          for q, v in art["questions"].items()}}


@pytest.mark.parametrize("source", ["run file", "artefact"])
def test_rescore_without_changes_reproduces_the_run(demo_ws, source):
    art = load_artefact(demo_ws)
    if source == "artefact":
        (demo_ws.root / "retriever-runs" / "triage-example.jsonl").unlink()
    result = rescore(demo_ws, art)
    assert result.artefact["source_run"]["artefact"] == Path(art["_path"]).name
    assert result.artefact["source_run"]["rankings_from"] == source
    assert _metrics(result.artefact) == _metrics(art)
    assert result.path is not None and result.path.name.endswith("-rescore.json")
    assert read_artefact(result.path)["source_run"]["label"] == "dense-v2"


@pytest.mark.parametrize("source", ["run file", "artefact"])
def test_rescore_after_a_relabel_counts_the_new_judgment(demo_ws, source, run_cli):
    session = TriageSession(demo_ws)
    art = session.artefact
    item = item_of(session, E1042)
    session.mark(item, E1042_TABLE, "primary")  # rank 1 in the run
    session.decide(item, "bad_label")  # the old label stays primary (rank 7)
    if source == "artefact":
        (demo_ws.root / "retriever-runs" / "triage-example.jsonl").write_text("changed\n")
    result = run_cli(["score", "--rescore", Path(art["_path"]).name, "--json"], cwd=demo_ws.root)
    data = json.loads(result.stdout)
    assert data["source_run"]["rankings_from"] == source
    new = read_artefact(data["artefact"])
    q = new["questions"][E1042]
    assert q["failure"] is None and q["first_relevant_rank"] == 1
    assert q["ranks"] == {E1042_OLD: 7, E1042_TABLE: 1}
    assert q["metrics"]["success@5"] == 1.0 and q["metrics"]["mrr@5"] == 1.0
    assert q["metrics"]["recall@5"] == 0.5 and q["metrics"]["recall@15"] == 1.0
    before = art["metrics"]["slices"]["exact_identifier"]
    after = new["metrics"]["slices"]["exact_identifier"]
    assert before["success@5"] == pytest.approx(1 / 3) and after["success@5"] == pytest.approx(2 / 3)
    assert after["failures"] == before["failures"] - 1
    # every other question scores as before
    others = {k: v for k, v in _metrics(new)["questions"].items() if k != E1042}
    assert others == {k: v for k, v in _metrics(art)["questions"].items() if k != E1042}


def test_score_needs_a_run_or_rescore(demo_ws, run_cli):
    result = run_cli(["score"], cwd=demo_ws.root)
    assert result.exit_code == 2 and "--rescore" in result.output
    both = run_cli(["score", "retriever-runs/bm25.jsonl", "--rescore", "latest"], cwd=demo_ws.root)
    assert both.exit_code == 2


def test_decide_refuses_unknown_causes_and_retired_cases(demo_ws):
    session = TriageSession(demo_ws)
    item = item_of(session, "parser-max-retries")
    with pytest.raises(CuratorError, match="unknown cause"):
        session.decide(item, "cosmic_rays")
    demo_ws.question_set().retire(item.query_id, reason="obsolete", reviewer="ana")
    with pytest.raises(CuratorError, match="no longer an active case"):
        session.decide(item, "ranking_tie")
    assert not decisions(demo_ws)


def test_undone_cases_come_back_and_rescored_runs_keep_their_source_decisions(demo_ws):
    session = TriageSession(demo_ws)
    session.decide(item_of(session, "until-what-time-can-dhl-parcels"), "synonym_gap")
    session.decide(item_of(session, "parser-max-retries"), "ranking_tie")
    session.undo()
    queue = [i.query_id for i in TriageSession(demo_ws).queue]
    assert "parser-max-retries" in queue and "until-what-time-can-dhl-parcels" not in queue
    rescored = rescore(demo_ws, session.artefact)
    assert load_artefact(demo_ws)["_path"] == str(rescored.path)  # the newest now
    data = summary(demo_ws, load_artefact(demo_ws))
    assert data["triaged"] == 1 and data["decisions"][0]["cause"] == "synonym_gap"
    assert "until-what-time-can-dhl-parcels" not in [i.query_id for i in TriageSession(demo_ws).queue]


def test_latest_rev_and_revise_agree_with_the_full_read(demo_ws):
    qs = demo_ws.question_set()
    full = qs.read().cases
    assert {q: qs.latest_rev(q) for q in full} == full  # multi-rev and retired cases included
    assert qs.latest_rev("no-such-case") is None
    with qs.cases_path.open("a") as fh:  # a torn last line (a crash mid-write) is no data
        fh.write(full["parser-max-retries"].model_copy(update={"rev": 9}).line())
    assert qs.latest_rev("parser-max-retries").rev == 2
    revised = qs.revise("parser-max-retries", {"explanation": "why"}, action="edit", reason="test",
                         reviewer="ana")
    assert revised.rev == 3 and qs.read().cases["parser-max-retries"] == revised
    assert qs.changelog()[-1].model_dump(exclude={"at"}) == {
        "query_id": "parser-max-retries", "rev": 3, "action": "edit", "reason": "test", "reviewer": "ana",
        "versions": {}}
    with pytest.raises(CuratorError, match="no case with query_id"):
        qs.revise("no-such-case", {}, action="edit", reason="x")


def test_earlier_runs_are_indexed_once_and_a_bad_index_is_rebuilt(demo_ws):
    first = [(e.label, e.first_relevant_rank) for e in item_of(TriageSession(demo_ws), E1042).earlier]
    assert first == [("bm25", 5)]
    index_dir = demo_ws.state_dir / "triage-index"
    (cached,) = index_dir.glob("*bm25.json.idx.json")
    cached.write_text("{not json")
    again = [(e.label, e.first_relevant_rank) for e in item_of(TriageSession(demo_ws), E1042).earlier]
    assert again == first and json.loads(cached.read_text())["questions"][E1042] == [5, None]


def test_card_facts_show_latency_and_detect_a_tie(demo_ws, tmp_path: Path):
    import curator

    cases = demo_ws.question_set().read().cases
    case = cases["parser-max-retries"]
    primary = case.primaries[0].id
    rows = [{"query_id": "parser-max-retries", "latency_ms": 42.5,
             "results": [{"id": "faq.md#on-call", "score": 3.0}, {"id": "faq.md#merchants", "score": 2.5},
                         {"id": primary, "score": 2.5}, {"id": "faq.md#cutoffs-and-pickups", "score": 1.0}]}]
    run = tmp_path / "tie.jsonl"
    run.write_text("".join(json.dumps(r) + "\n" for r in rows))
    art = read_artefact(curator.score(demo_ws.question_set(), run, workspace=demo_ws, gates=[], k=[1], write=True).path)
    assert art["questions"]["parser-max-retries"]["query"] == case.query
    item = next(i for i in failures(demo_ws, art, earlier=False) if i.query_id == "parser-max-retries")
    assert item.latency_ms == 42.5
    assert [(r.rank, r.score) for r in item.scores_around_first_relevant()] == [(2, 2.5), (3, 2.5), (4, 1.0)]
    tied = item.tie()
    assert tied is not None and tied.id == "faq.md#merchants" and item.suggested_cause() == "ranking_tie"
    assert [r.id for r in item.unjudged()] == ["faq.md#on-call", "faq.md#merchants", "faq.md#cutoffs-and-pickups"]
    rows[0]["results"][1]["score"] = 2.6  # no tie any more
    run.write_text("".join(json.dumps(r) + "\n" for r in rows))
    art = read_artefact(curator.score(demo_ws.question_set(), run, workspace=demo_ws, gates=[], k=[1], write=True).path)
    item = next(i for i in failures(demo_ws, art, earlier=False) if i.query_id == "parser-max-retries")
    assert item.tie() is None and item.suggested_cause() is None

"""ReviewSession without the app: leases between reviewers, reconciliation after a crash."""

from __future__ import annotations

import pytest

from curator.errors import CuratorError
from curator.review import IncompleteCase, ReviewSession, reconcile
from tests.tui.conftest import set_files

E1042 = "errors/carrier-e1042.md#carrier-e1042-label-rejected"


def test_two_reviewers_never_get_the_same_candidate(rws, tmp_path):
    from curator.workspace import Workspace

    other_ws = Workspace.open(rws.root)  # a second process's connection
    ana = ReviewSession(rws, reviewer="ana", prefetch=1)
    bo = ReviewSession(other_ws, reviewer="bo", prefetch=1)
    ana.start()
    bo.start()
    a1, b1 = ana.next_card(), bo.next_card()
    a2, b2 = ana.next_card(), bo.next_card()
    served = [c.candidate.id for c in (a1, b1, a2, b2) if c is not None]
    assert len(served) == len(set(served)) == 3
    # both keep the same question: distinct query_ids
    for card in (a1, b1):
        card.query = "same question"
        card.slice = "paraphrase"
        card.set_label(card.rows[0].id, "primary")
    ka, kb = ana.keep(a1), bo.keep(b1)
    assert ka.query_id != kb.query_id
    ana.close()
    bo.close()
    other_ws.close()
    assert {(c.query_id, c.state) for c in rws.candidates(state="kept")} == {
        ("same-question", "kept"), ("same-question-2", "kept")}


def test_reconcile_marks_a_keep_whose_decision_was_lost(rws):
    session = ReviewSession(rws)
    session.start()
    card = session.next_card()
    card.set_label(E1042, "primary")
    # the crash: the case reaches the file, the decision never reaches the database
    case = rws.question_set("main").add(
        {"query": card.query, "slice": "exact_identifier", "relevant": card.relevant(),
         "source": {"kind": "log", "candidate_id": card.candidate.id}},
        reviewer="ana",  # whose keep it was; the session finding it is "tester"'s
    )
    assert rws.candidate(card.candidate.id).state == "pending"
    assert reconcile(rws, "main") == [case.query_id]
    cand = rws.candidate(card.candidate.id)
    assert cand.state == "kept" and cand.query_id == case.query_id
    # credited to who kept it, not to the session that found it
    assert session.reviewer == "tester" and rws.decisions(card.candidate.id)[-1].reviewer == "ana"
    assert reconcile(rws, "main") == []  # idempotent
    # and the next session does not serve it again (once this one gave back its leases)
    session.close()
    fresh = ReviewSession(rws, reviewer="other")
    fresh.start()
    served = []
    while (c := fresh.next_card()) is not None:
        served.append(c.candidate.id)
    assert card.candidate.id not in served and len(served) == 2


def test_keep_refuses_incomplete_and_bad_options(rws):
    session = ReviewSession(rws)
    session.start()
    card = session.next_card()
    card.slice = None
    with pytest.raises(IncompleteCase, match="slice"):
        session.keep(card)
    card.slice = "negative"
    card.expect_empty = True
    card.set_label(E1042, "primary")
    with pytest.raises(IncompleteCase, match="negative"):
        session.keep(card)
    assert set_files(rws) == ([], [])
    with pytest.raises(CuratorError, match="unknown slice"):
        ReviewSession(rws, slice="nope")
    with pytest.raises(CuratorError, match="reason"):
        session.revise("x", {}, action="edit", reason=" ")


def test_stats_and_queue(rws):
    session = ReviewSession(rws, source="logs")
    session.start()
    assert session.stats.remaining == 2  # the generated candidate is filtered out
    card = session.next_card()
    card.set_label(card.rows[0].id, "primary")
    session.keep(card)
    session.bin(session.next_card())
    assert session.next_card() is None
    s = session.stats
    assert (s.reviewed, s.kept, s.binned, s.queue) == (2, 1, 1, 2)
    assert s.keep_rate == 0.5 and s.per_slice["exact_identifier"] == 1


def test_cli_review_needs_a_terminal(rws, run_cli):
    result = run_cli(["-w", str(rws.root), "review"])
    assert result.exit_code == 1
    assert "needs an interactive terminal" in result.output
    assert rws.db.execute("SELECT count(*) FROM candidates WHERE lease_owner IS NOT NULL").fetchone()[0] == 0

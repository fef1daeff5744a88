"""`curator queue add|list`: questions typed in by hand join the review queue."""

from __future__ import annotations

import json


def test_typed_in_questions_are_queued_with_their_suggestions(demo_ws, run_cli, tmp_path) -> None:
    result = run_cli(
        ["queue", "add", "How do I replay the DLQ?", "--slice", "paraphrase",
         "--passage", "runbooks/parser.md#replay-procedure", "--json"],
        cwd=demo_ws.root,
    )
    assert result.exit_code == 0, result.output
    (cid,) = json.loads(result.stdout)["added"]
    cand = demo_ws.candidate(cid)
    assert cand.source_kind == "manual" and cand.suggested_slice == "paraphrase"
    assert [(s.id, s.role) for s in cand.suggestions] == [("runbooks/parser.md#replay-procedure", "primary")]
    # the same question again (case and spacing differ) is not queued twice; exit 3
    again = run_cli(["queue", "add", "how do I  replay the dlq?"], cwd=demo_ws.root)
    assert again.exit_code == 3 and "already queued" in again.output
    listed = json.loads(run_cli(["queue", "list", "--source", "manual", "--json"], cwd=demo_ws.root).stdout)
    assert [c["id"] for c in listed] == [cid]


def test_queue_add_from_file_and_bad_input(demo_ws, run_cli, tmp_path) -> None:
    questions = tmp_path / "q.txt"
    questions.write_text("# mine\nWhat is the UPS cutoff?\n\nwho owns the parser\n")
    result = run_cli(["queue", "add", "--from-file", str(questions), "--negative", "--json"], cwd=demo_ws.root)
    added = json.loads(result.stdout)["added"]
    assert len(added) == 2 and all(demo_ws.candidate(i).expect_empty for i in added)
    assert demo_ws.candidate(added[0]).suggested_slice == "negative"
    unknown = run_cli(["queue", "add", "q", "--passage", "nope.md#x"], cwd=demo_ws.root)
    assert unknown.exit_code == 1 and "not in the corpus: nope.md#x" in unknown.output
    bad_slice = run_cli(["queue", "add", "q", "--slice", "nope"], cwd=demo_ws.root)
    assert bad_slice.exit_code == 1 and "unknown slice 'nope'" in bad_slice.output
    assert run_cli(["queue", "add"], cwd=demo_ws.root).exit_code == 2


def test_review_session_serves_typed_in_questions_with_source_manual(demo_ws, run_cli) -> None:
    from curator.review import ReviewSession

    run_cli(["queue", "add", "Which carrier picks up on Sundays?"], cwd=demo_ws.root)
    session = ReviewSession(demo_ws, source="manual", reviewer="tester")
    session.start()
    card = session.next_card()
    assert card is not None and card.query == "Which carrier picks up on Sundays?"
    session.close()

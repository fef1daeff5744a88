"""The bundled demo builds offline into a consistent workspace."""

from __future__ import annotations

from curator.verify import verify_workspace


def test_demo_set_verifies_strictly_against_the_demo_corpus(demo_ws) -> None:
    (report,) = verify_workspace(demo_ws, ["main"], strict=True)
    assert report.ok, [str(p) for p in report.problems]
    assert report.unknown_ids == {}
    assert report.active >= 10


def test_demo_has_every_slice_and_real_revision_history(demo_ws) -> None:
    cases = demo_ws.question_set("main").read().cases
    active = [c for c in cases.values() if c.status == "active"]
    assert {c.slice for c in active} == set(demo_ws.config.slices)
    for case in active:
        if case.freshness and case.freshness.revision:
            (label,) = case.primaries
            # pinned to the current revision, and an older one exists to be stale
            revisions = demo_ws.revisions_of(label.id)
            assert revisions[0][0] == case.freshness.revision and revisions[0][2]
            assert len(revisions) >= 2
    dhl_old = demo_ws.passage("carriers/dhl.md#cutoff-times", demo_ws.revisions_of("carriers/dhl.md#cutoff-times")[-1][0])
    assert "17:30" in dhl_old.text and "18:00" in demo_ws.passage("carriers/dhl.md#cutoff-times").text


def test_demo_is_reused_not_overwritten(tmp_path, run_cli) -> None:
    target = tmp_path / "demo"
    assert run_cli(["demo", str(target)]).exit_code == 0
    marker = target / "datasets" / "main" / "note.txt"
    marker.write_text("my work")
    assert run_cli(["demo", str(target)]).exit_code == 0
    assert marker.read_text() == "my work"
    other = tmp_path / "not-a-demo"
    other.mkdir()
    (other / "keep.txt").write_text("x")
    result = run_cli(["demo", str(other)])
    assert result.exit_code == 1 and "refusing" in result.output
    assert (other / "keep.txt").read_text() == "x"

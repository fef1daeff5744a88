"""Agreement between a first review and a blind second pass: the figures against
scikit-learn's `cohen_kappa_score`, the judgments file and its checks, the second pass's
rules. Real workspaces, real sessions, real files."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from curator.agreement import agreement, cohen_kappa
from curator.errors import CuratorError
from curator.models import CandidateIn
from curator.review import ReviewSession
from curator.secondpass import SecondPassSession, items
from curator.verify import verify_workspace
from curator.workspace import Workspace
from tests.tui.conftest import build_workspace

DHL = "carriers/dhl.md#cutoff-times"
E1042 = "errors/carrier-e1042.md#carrier-e1042-label-rejected"
PARSER = "runbooks/parser.md#retries"
BACKLOG = "runbooks/label-backlog.md#drain-the-backlog"
FAQ = "faq.md#pickups"

# question: (ana's decision, slice, labels), (bo's decision, slice, labels); a label is
# (role, grade or None for the role's)
PLAN = {
    "what does CARRIER-E1042 mean": (("keep", "exact_identifier", {E1042: ("primary", None)}),
                                     ("keep", "exact_identifier", {E1042: ("primary", None)})),
    "when is the dhl cutoff": (("keep", "paraphrase", {DHL: ("primary", None), FAQ: ("secondary", None)}),
                               ("keep", "paraphrase", {DHL: ("primary", None)})),
    "how do I drain a label backlog": (("keep", "paraphrase", {BACKLOG: ("primary", None)}), ("bin", None, {})),
    "parser max retries setting": (("keep", "exact_identifier", {PARSER: ("primary", None)}),
                                   ("keep", "paraphrase", {PARSER: ("primary", None), FAQ: ("secondary", None)})),
    "book a pickup after the cutoff": (("keep", "paraphrase", {FAQ: ("primary", None)}),
                                       ("keep", "paraphrase", {FAQ: ("primary", None), DHL: ("primary", None)})),
    "weather in lisbon tomorrow": (("keep", "negative", {}), ("keep", "negative", {})),
    "printer toner colour": (("bin", None, {}), ("bin", None, {})),
    "label rejected because of the postcode": (("bin", None, {}),
                                               ("keep", "exact_identifier", {E1042: ("primary", None)})),
    "scale the label workers": (("keep", "paraphrase", {BACKLOG: ("primary", 3)}),
                                ("keep", "paraphrase", {BACKLOG: ("primary", None)})),
}


def decide(session, side: int) -> None:
    """Work through `session`'s queue deciding each card as PLAN says for `side` (0, 1)."""
    session.start()
    while (card := session.next_card()) is not None:
        decision, slice_name, labels = PLAN[card.query][side]
        if decision == "bin":
            session.bin(card)
            continue
        card.apply_slice(slice_name)
        for pid, (role, grade) in labels.items():
            if card.row(pid) is None:
                session.add_search(card, pid.split("#")[1].replace("-", " "))
            assert card.row(pid) is not None, pid
            card.set_label(pid, role)
            while grade is not None and card.grade(pid) != grade:
                card.cycle_grade(pid)
        session.keep(card)
    session.close()


def reviewed(root: Path) -> Workspace:
    ws = build_workspace(root)
    ws.add_candidates([CandidateIn(query=q, source_kind="manual") for q in list(PLAN)[3:]])
    decide(ReviewSession(ws, reviewer="ana"), 0)
    decide(SecondPassSession(ws, reviewer="bo"), 1)
    return ws


@pytest.fixture
def aws(tmp_path: Path):
    ws = reviewed(tmp_path / "ws")
    yield ws
    ws.close()


def reference(ws: Workspace, only_slice: str | None = None) -> dict[str, float]:
    """The figures worked out from the files alone, with scikit-learn."""
    root = ws.root / "datasets" / "main"
    cases = {}
    for line in (root / "cases.jsonl").read_text().splitlines():
        case = json.loads(line)
        cases.setdefault(case["query_id"], case)  # rev 1: what bo judged
    first, second = [], []
    slices1, slices2, grades1, grades2 = [], [], [], []
    for line in (root / "judgments.jsonl").read_text().splitlines():
        j = json.loads(line)
        case = cases.get(j["target"].removeprefix("case:"))
        if only_slice is not None and (case is None or case["slice"] != only_slice):
            continue
        first.append("keep" if case else "bin")
        second.append(j["decision"])
        if case and j["decision"] == "keep":
            slices1.append(case["slice"])
            slices2.append(j["slice"])
            g1 = {r["id"]: r["grade"] for r in case["relevant"]}
            g2 = {r["id"]: r["grade"] for r in j["relevant"]}
            for pid in sorted(set(g1) | set(g2)):
                grades1.append(g1.get(pid, 0))
                grades2.append(g2.get(pid, 0))
    return {
        "pairs": len(first),
        "decision_kappa": cohen_kappa_score(first, second),
        "slice_kappa": cohen_kappa_score(slices1, slices2),
        "grade_kappa": cohen_kappa_score(grades1, grades2, weights="linear", labels=[0, 1, 2, 3]),
        "graded_pairs": len(grades1),
    }


def test_figures_agree_with_scikit_learn(aws):
    report = agreement(aws)
    expected = reference(aws)
    overall = report.overall
    assert overall.pairs == expected["pairs"] == 9
    assert overall.decision_kappa == pytest.approx(expected["decision_kappa"])
    assert overall.slice_kappa == pytest.approx(expected["slice_kappa"])
    assert overall.grade_kappa == pytest.approx(expected["grade_kappa"])
    assert overall.graded_pairs == expected["graded_pairs"]
    # primaries: E1042 1, DHL 1, PARSER 1, FAQ vs FAQ+DHL 1/2, negative (both empty) 1, BACKLOG 1
    assert overall.primary_jaccard == pytest.approx((1 + 1 + 1 + 0.5 + 1 + 1) / 6)
    paraphrase = report.per_slice["paraphrase"]
    expected = reference(aws, "paraphrase")
    assert paraphrase.pairs == 4
    assert paraphrase.grade_kappa == pytest.approx(expected["grade_kappa"])
    assert set(report.per_slice) == {"exact_identifier", "paraphrase", "negative", "(no slice)"}
    assert report.reviewers == ["ana", "bo"]


def test_disagreements_list_what_differs(aws):
    found = {d.query or d.target: d.differences for d in agreement(aws).disagreements}
    assert found == {
        "when is the dhl cutoff": ["grades"],
        "how do I drain a label backlog": ["decision"],
        "parser max retries setting": ["slice", "grades"],
        "book a pickup after the cutoff": ["primaries", "grades"],
        "label rejected because of the postcode": ["decision"],
        "scale the label workers": ["grades"],
    }


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=2, max_size=40))
def test_kappa_matches_scikit_learn_on_any_labels(pairs):
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    for weighted in (False, True):
        ours = cohen_kappa(a, b, scale=[0, 1, 2, 3], weighted=weighted)
        theirs = cohen_kappa_score(a, b, weights="linear" if weighted else None, labels=[0, 1, 2, 3])
        if ours is None:  # undefined: both gave one and the same label throughout
            assert len(set(a) | set(b)) == 1
        else:
            assert ours == pytest.approx(theirs, abs=1e-9)


def test_the_second_pass_is_blind_and_writes_no_case(tmp_path):
    ws = build_workspace(tmp_path / "ws")
    ws.add_candidates([CandidateIn(query=q, source_kind="manual") for q in list(PLAN)[3:]])
    decide(ReviewSession(ws, reviewer="ana"), 0)
    cases_before = (ws.root / "datasets/main/cases.jsonl").read_bytes()
    session = SecondPassSession(ws, reviewer="bo")
    session.start()
    seen = []
    while (card := session.next_card()) is not None:
        seen.append(card.query)
        assert card.slice is None and card.labels == {} and not card.expect_empty and card.case is None
        assert card.candidate is not None and card.candidate.suggested_slice is None
        assert "labelled" not in {row.reason for row in card.rows}
        session.bin(card)
    assert sorted(seen) == sorted(PLAN)  # kept cases and binned candidates alike
    assert (ws.root / "datasets/main/cases.jsonl").read_bytes() == cases_before
    lines = [json.loads(x) for x in (ws.root / "datasets/main/judgments.jsonl").read_text().splitlines()]
    assert {j["reviewer"] for j in lines} == {"bo"} and {j["first_reviewer"] for j in lines} == {"ana"}
    assert sum(j["first_decision"] == "bin" for j in lines) == 2
    # and the workspace holds each line too
    stored = ws.db.execute("SELECT reviewer, decision, line FROM judgments ORDER BY id").fetchall()
    assert [(r, d) for r, d, _ in stored] == [("bo", "bin")] * len(PLAN)
    assert [json.loads(line) for _, _, line in stored] == lines
    # ana cannot judge her own decisions a second time; bo has nothing left
    for who in ("ana", "bo"):
        again = SecondPassSession(ws, reviewer=who)
        again.start()
        assert again.next_card() is None
    ws.close()


def test_undo_takes_a_judgment_back(tmp_path):
    ws = build_workspace(tmp_path / "ws")
    decide(ReviewSession(ws, reviewer="ana"), 0)
    session = SecondPassSession(ws, reviewer="bo")
    session.start()
    other = SecondPassSession(ws, reviewer="bo")  # a second terminal of the same reviewer
    other.start()
    card = session.next_card()
    session.bin(card)
    assert agreement(ws).overall.pairs == 1
    assert session.undo() is card
    assert agreement(ws).overall.pairs == 0
    lines = (ws.root / "datasets/main/judgments.jsonl").read_text().splitlines()
    assert [json.loads(x)["decision"] for x in lines] == ["bin", "undo"]
    session.requeue(card)
    assert session.next_card() is card  # back on screen, judged again as a new line
    session.bin(card)
    assert agreement(ws).overall.pairs == 1
    # the other session, served the same first item, may not judge it a second time
    same = other.next_card()
    assert same.query == card.query
    with pytest.raises(CuratorError, match="already judged"):
        other.bin(same)
    ws.close()


def test_sample_and_seed_pick_the_same_items_every_time(aws):
    everything = [i.target for i in items(aws, "main")]
    first = [i.target for i in items(aws, "main", sample=4, seed=7)]
    assert first == [i.target for i in items(aws, "main", sample=4, seed=7)]
    assert len(first) == 4 and set(first) <= set(everything)
    assert any([i.target for i in items(aws, "main", sample=4, seed=s)] != first for s in range(1, 6))
    session = SecondPassSession(aws, reviewer="cy", sample=4, seed=7)
    session.start()
    shown = []
    while (card := session.next_card()) is not None:
        shown.append(card.query)
        session.bin(card)
    assert len(shown) == 4


def test_verify_reads_judgments_and_holds_them_append_only(aws):
    path = aws.root / "datasets/main/judgments.jsonl"
    assert all(r.ok for r in verify_workspace(aws, ["main"]))
    good = path.read_text().splitlines()
    path.write_text("\n".join([good[0], '{"target": "case:x"}', *good[1:]]) + "\n")
    report = verify_workspace(aws, ["main"])[0]
    bad = [p for p in report.problems if p.path == str(path) and p.line == 2]
    assert bad and "not a valid judgment" in bad[0].message and not report.ok
    # the good lines still count
    assert agreement(aws).overall.pairs == 9 and agreement(aws).problems
    path.write_text("\n".join(good[1:]) + "\n")  # the first line removed
    report = verify_workspace(aws, ["main"])[0]
    assert any("edited or removed" in p.message and p.path == str(path) for p in report.problems)
    assert not report.ok


def test_git_holds_judgments_to_the_append_only_rule(aws):
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q"], cwd=aws.root, check=True)
    subprocess.run([*git, "add", "datasets"], cwd=aws.root, check=True)
    subprocess.run([*git, "commit", "-qm", "set"], cwd=aws.root, check=True)
    assert verify_workspace(aws, ["main"])[0].ok
    path = aws.root / "datasets/main/judgments.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[1], lines[0], *lines[2:]]) + "\n")  # reordered
    subprocess.run([*git, "commit", "-qam", "reorder"], cwd=aws.root, check=True)
    report = verify_workspace(aws, ["main"])[0]
    assert not report.ok
    assert any(p.path == str(path) for p in report.problems)


def test_a_clone_records_the_lines_it_finds(aws, tmp_path):
    lines = (aws.root / "datasets/main/judgments.jsonl").read_text()
    clone = build_workspace(tmp_path / "clone")
    (clone.root / "datasets/main").mkdir(parents=True, exist_ok=True)
    for name in ("cases.jsonl", "changelog.jsonl", "judgments.jsonl"):
        (clone.root / "datasets/main" / name).write_text((aws.root / "datasets/main" / name).read_text())
    assert clone.db.execute("SELECT count(*) FROM judgments").fetchone()[0] == 0
    session = SecondPassSession(clone, reviewer="cy")
    session.start()
    session.close()
    assert clone.db.execute("SELECT count(*) FROM judgments").fetchone()[0] == len(lines.splitlines())
    clone.close()


def test_agreement_command(aws, run_cli):
    result = run_cli(["agreement", "--json"], cwd=aws.root)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["overall"]["grade_kappa"] == pytest.approx(reference(aws)["grade_kappa"])
    assert len(data["disagreements"]) == 6 and "judgment" not in data["disagreements"][0]
    result = run_cli(["agreement"], cwd=aws.root)
    assert result.exit_code == 0
    assert "overall" in result.output and "6 disagreement(s), 6 open" in result.output
    result = run_cli(["agreement", "--set", "nope"], cwd=aws.root)
    assert result.exit_code != 0 and "nope" in result.output


def test_min_kappa_gate(aws, run_cli):
    overall = agreement(aws).overall  # keep/bin 0.36, slice 0.71, grade 0.29
    low = min(overall.decision_kappa, overall.grade_kappa)
    result = run_cli(["agreement", "--min-kappa", f"{low - 0.01:.2f}"], cwd=aws.root)
    assert result.exit_code == 0, result.output
    result = run_cli(["agreement", "--json", "--min-kappa", "0.5"], cwd=aws.root)
    assert result.exit_code == 1
    assert "keep/bin κ 0.36" in result.output and "grade κ 0.29" in result.output and "slice" not in (
        result.output.split("error:")[-1])


def test_second_pass_flags(aws, run_cli):
    result = run_cli(["review", "--sample", "3"], cwd=aws.root)
    assert result.exit_code == 2 and "--second-pass" in result.output


def test_taking_a_side_appends_an_adjudicated_revision(aws):
    from curator.adjudicate import take_side
    from curator.agreement import open_disagreements

    session = ReviewSession(aws, reviewer="cy")
    session.start()
    open_ones = open_disagreements(aws, "main")
    binned = next(d for d in open_ones.values() if d.second.decision == "bin")  # the backlog case
    retired = take_side(session, binned, "second", "bo is right: it duplicates another")
    assert retired.status == "retired" and retired.reviewer == "cy"
    kept_first = open_ones[next(q for q, d in open_ones.items() if d.differences == ["slice", "grades"])]
    before = aws.question_set().latest_rev(kept_first.query_id)
    same = take_side(session, kept_first, "first")
    assert same.rev == before.rev + 1 and same.slice == before.slice and same.relevant == before.relevant
    changes = {(e.query_id, e.rev): e for e in aws.question_set().changelog()}
    assert changes[(retired.query_id, retired.rev)].action == "retire"
    assert changes[(same.query_id, same.rev)].reason == (
        "adjudicated: ana vs bo (slice, grades): took ana's side (first review)")
    left = open_disagreements(aws, "main")
    assert binned.query_id not in left and kept_first.query_id not in left and len(left) == len(open_ones) - 2
    # the figures still describe the two reviews as made
    assert agreement(aws).overall.pairs == 9
    session.close()


def _curator(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    import sys

    return subprocess.run([str(Path(sys.executable).parent / "curator"), *args], cwd=root, capture_output=True,
                          text=True, timeout=60)


def test_a_confirmed_bin_survives_a_git_clone(aws, tmp_path):
    """`1` on a binned candidate writes an adjudication line to judgments.jsonl: a fresh
    clone sees the disagreement settled (agreement and the browser's `d`), verify checks
    the line, and a later judgment by the second reviewer opens it again."""
    from curator import judgments
    from curator.adjudicate import take_side
    from curator.agreement import open_disagreements
    from curator.judgments import Judgment

    d = next(d for d in agreement(aws).disagreements if d.query_id is None)  # ana binned, bo keeps
    session = ReviewSession(aws, reviewer="cy")
    assert take_side(session, d, "first", "the postcode page covers it") is None
    session.close()
    path = aws.root / "datasets/main/judgments.jsonl"
    line = json.loads(path.read_text().splitlines()[-1])
    assert line["kind"] == "adjudication" and line["target"] == d.target and line["side"] == "first"
    assert (line["first_reviewer"], line["second_reviewer"], line["reviewer"]) == ("ana", "bo", "cy")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=aws.root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=aws.root, check=True)
    subprocess.run([*git, "commit", "-qm", "set, judgments, adjudication"], cwd=aws.root, check=True)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(aws.root), str(clone)], check=True)
    assert not (clone / ".curator").exists()  # the workspace's queue did not come along

    out = _curator(clone, "agreement", "--json")
    assert out.returncode == 0, out.stderr
    listed = {x["target"]: x["resolved"] for x in json.loads(out.stdout)["disagreements"]}
    assert listed[d.target] == line["reason"] and line["reason"].startswith("adjudicated: ana vs bo (decision)")
    cloned = Workspace.open(clone)
    assert d.target not in open_disagreements(cloned, "main")  # the set browser's `d` list
    cloned.close()
    assert _curator(clone, "verify").returncode == 0

    # verify holds the line kind: an adjudication of nothing is named with its line
    bogus = {**line, "target": "candidate:999999", "reason": "adjudicated: made up"}
    with (clone / "datasets/main/judgments.jsonl").open("a") as fh:
        fh.write(json.dumps(bogus) + "\n")
    out = _curator(clone, "verify")
    count = len((clone / "datasets/main/judgments.jsonl").read_text().splitlines())
    assert out.returncode == 1 and f"judgments.jsonl:{count}" in out.stdout + out.stderr
    assert "follows no judgment" in out.stdout + out.stderr

    # bo judges the candidate again: the disagreement is open again
    qs = aws.question_set()
    undo = Judgment(target=d.target, query=d.query, first_reviewer="ana", first_decision="bin", decision="undo",
                    reviewer="bo")
    judgments.append(aws, qs, undo)
    assert d.target not in open_disagreements(aws, "main")  # undone: no standing judgment, no pair
    again = Judgment.model_validate({k: v for k, v in d.judgment.model_dump(exclude_none=True).items() if k != "at"})
    judgments.append(aws, qs, again)
    assert d.target in open_disagreements(aws, "main")


def test_two_second_reviewers_branches_union_merge_and_verify(aws, tmp_path):
    """judgments.jsonl is union-merged like the set (.gitattributes): two reviewers'
    second passes on two branches merge without a conflict, verify passes on a fresh clone
    of the merge, and agreement counts both."""
    from curator import judgments
    from curator.judgments import Judgment

    assert "datasets/*/judgments.jsonl merge=union" in (aws.root / ".gitattributes").read_text()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=aws.root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=aws.root, check=True)
    subprocess.run([*git, "commit", "-qm", "first and second pass"], cwd=aws.root, check=True)
    cases = sorted(aws.question_set().read().cases.values(), key=lambda c: c.query_id)
    before = agreement(aws).overall.pairs
    for reviewer, case in (("cy", cases[0]), ("dee", cases[1])):
        subprocess.run([*git, "checkout", "-q", "-b", reviewer, "main"], cwd=aws.root, check=True)
        judgments.append(aws, aws.question_set(), Judgment(
            target=f"case:{case.query_id}", query=case.query, rev=case.rev, first_reviewer=case.reviewer,
            decision="keep", slice=case.slice, relevant=case.relevant, expect_empty=case.expect_empty,
            require_all=case.require_all, reviewer=reviewer))
        subprocess.run([*git, "commit", "-qam", f"{reviewer}: second pass"], cwd=aws.root, check=True)
    subprocess.run([*git, "checkout", "-q", "main"], cwd=aws.root, check=True)
    for branch in ("cy", "dee"):
        merged = subprocess.run([*git, "merge", "-q", "--no-edit", branch], cwd=aws.root, capture_output=True, text=True)
        assert merged.returncode == 0, merged.stdout + merged.stderr  # no conflict on judgments.jsonl
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(aws.root), str(clone)], check=True)
    done = _curator(clone, "verify")
    assert done.returncode == 0 and "checked against 4 commit(s)" in done.stdout, done.stdout + done.stderr
    assert agreement(aws).overall.pairs == before + 2

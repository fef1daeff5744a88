"""The append-only question-set store: writes, reads, recovery, verify."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curator.errors import CuratorError
from curator.models import Case, ChangeEntry
from curator.questionset import QuestionSet
from curator.verify import save_checkpoint, verify


def _case(query: str, **extra) -> dict:
    base = {"query": query, "slice": "paraphrase", "relevant": [{"id": "a.md#x", "role": "primary"}]}
    base.update(extra)
    return base


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_add_writes_case_and_changelog_together(tmp_path: Path) -> None:
    qs = QuestionSet(tmp_path / "main")
    case = qs.add(_case("What is the DHL cutoff?"), reviewer="ana", versions={"curator": "0.1.0"})
    assert case.query_id == "what-is-the-dhl-cutoff"
    assert case.rev == 1
    (stored,) = _lines(qs.cases_path)
    (entry,) = _lines(qs.changelog_path)
    assert stored["query_id"] == entry["query_id"] == "what-is-the-dhl-cutoff"
    assert stored["relevant"][0]["grade"] == 2
    assert entry["action"] == "add" and entry["reviewer"] == "ana"
    assert entry["versions"] == {"curator": "0.1.0"}


def test_query_ids_are_unique_and_never_reused(tmp_path: Path) -> None:
    qs = QuestionSet(tmp_path / "main")
    first = qs.add(_case("DHL cutoff"))
    qs.retire(first.query_id, reason="duplicate")
    second = qs.add(_case("dhl cutoff!"))
    third = qs.add(_case("DHL  cutoff"))
    assert [first.query_id, second.query_id, third.query_id] == ["dhl-cutoff", "dhl-cutoff-2", "dhl-cutoff-3"]


def test_revise_appends_next_rev_and_keeps_old_lines(tmp_path: Path) -> None:
    qs = QuestionSet(tmp_path / "main")
    case = qs.add(_case("dhl cutoff"))
    before = qs.cases_path.read_bytes()
    revised = qs.revise(
        case.query_id, {"slice": "freshness"}, action="reslice", reason="cutoff changed", reviewer="bo"
    )
    assert revised.rev == 2 and revised.slice == "freshness"
    assert qs.cases_path.read_bytes().startswith(before)
    assert qs.read().cases[case.query_id].slice == "freshness"
    assert [e.action for e in qs.changelog()] == ["add", "reslice"]
    assert qs.changelog()[-1].reason == "cutoff changed"


def test_revise_requires_reason_and_valid_result(tmp_path: Path) -> None:
    qs = QuestionSet(tmp_path / "main")
    case = qs.add(_case("dhl cutoff"))
    with pytest.raises(ValueError, match="reason"):
        qs.revise(case.query_id, {"slice": "negative"}, action="reslice", reason="")
    with pytest.raises(CuratorError, match="primary passage or expect_empty"):
        qs.revise(case.query_id, {"relevant": []}, action="relabel", reason="clear")
    assert len(_lines(qs.cases_path)) == 1
    assert len(_lines(qs.changelog_path)) == 1


def test_case_model_rejects_inconsistent_labels() -> None:
    with pytest.raises(ValueError):
        Case(query_id="q", query="q", slice="negative", expect_empty=True, relevant=[{"id": "a"}])
    with pytest.raises(ValueError):
        Case(query_id="q", query="q", slice="paraphrase")
    with pytest.raises(ValueError):
        ChangeEntry(query_id="q", rev=2, action="relabel")
    negative = Case(query_id="q", query="q", slice="negative", expect_empty=True)
    assert negative.relevant == []


def test_torn_last_line_is_ignored_then_repaired(tmp_path: Path) -> None:
    qs = QuestionSet(tmp_path / "main")
    qs.add(_case("first question"))
    with open(qs.cases_path, "ab") as fh:
        fh.write(b'{"query_id": "torn", "rev": 1, "que')
    result = qs.read()
    assert list(result.cases) == ["first-question"]
    assert any("torn" in p.message for p in result.problems)
    qs.add(_case("second question"))
    lines = _lines(qs.cases_path)
    assert [line["query_id"] for line in lines] == ["first-question", "second-question"]
    quarantined = list(qs.root.glob(".torn-*"))
    assert quarantined and "que" in quarantined[0].read_text()
    assert verify(qs).ok


def test_interrupted_pair_is_completed_by_next_writer(tmp_path: Path) -> None:
    """A crash after the case line but before its change-log line: the journal finishes it."""
    qs = QuestionSet(tmp_path / "main")
    qs.add(_case("first question"))
    case = Case.model_validate({**_case("half written"), "query_id": "half-written"})
    entry = ChangeEntry(query_id="half-written", rev=1, action="add")
    (qs.root / ".pending.json").write_text(json.dumps({"case": case.line(), "change": entry.line()}))
    with open(qs.cases_path, "a") as fh:
        fh.write(case.line() + "\n")
    assert not verify(qs).ok  # change-log entry missing until recovery runs
    qs.add(_case("third question"))
    assert [e["query_id"] for e in _lines(qs.changelog_path)] == ["first-question", "half-written", "third-question"]
    assert [c["query_id"] for c in _lines(qs.cases_path)] == ["first-question", "half-written", "third-question"]
    assert not (qs.root / ".pending.json").exists()
    assert verify(qs).ok


def test_read_as_of_line_and_time(tmp_path: Path) -> None:
    qs = QuestionSet(tmp_path / "main")
    case = qs.add(_case("dhl cutoff"))
    qs.revise(case.query_id, {"slice": "freshness"}, action="reslice", reason="r")
    assert qs.read(until_line=1).cases[case.query_id].slice == "paraphrase"
    assert qs.read(until_time="2000-01-01T00:00:00Z").cases == {}


def test_read_gives_every_rev_in_history_and_each_bad_line_as_a_problem(tmp_path: Path) -> None:
    qs = QuestionSet(tmp_path / "main")
    first = qs.add(_case("dhl cutoff"))
    other = qs.add(_case("ups cutoff", slice="exact_identifier"))
    qs.revise(first.query_id, {"slice": "freshness"}, action="reslice", reason="r")
    with open(qs.cases_path, "a", encoding="utf-8") as fh:  # hand-edited lines: one broken, one valid
        fh.write('{"query_id": "dhl-cutoff", "rev": 3, "query": ""}\n')
        fh.write(json.dumps({**_case("dhl cutoff", slice="multi_hop"), "query_id": "dhl-cutoff", "rev": 3,
                             "at": "2099-01-01T00:00:00Z"}) + "\n")
    result = qs.read()
    assert list(result.cases) == ["dhl-cutoff", "ups-cutoff"]  # first-seen order
    assert [(c.rev, c.slice) for c in result.history["dhl-cutoff"]] == [
        (1, "paraphrase"), (2, "freshness"), (3, "multi_hop")]
    assert result.cases["dhl-cutoff"] == result.history["dhl-cutoff"][-1]
    assert [c.slice for c in result.history[other.query_id]] == ["exact_identifier"]
    assert result.lines == 5
    (problem,) = result.problems
    assert problem.line == 4 and "not a valid case" in problem.message and "query" in problem.message
    # one case's revs and change-log entries, read from the lines that name it
    assert qs.revisions("dhl-cutoff") == result.history["dhl-cutoff"]
    assert qs.latest_rev("dhl-cutoff") == result.cases["dhl-cutoff"]
    assert [(e.rev, e.action) for e in qs.changes("dhl-cutoff")] == [(1, "add"), (2, "reslice")]
    assert qs.revisions("nope") == [] and qs.changes("nope") == []
    # a time before the hand-written rev 3: history and cases end at rev 2
    before = qs.read(until_time="2098-12-31T00:00:00Z")
    assert [c.rev for c in before.history["dhl-cutoff"]] == [1, 2] and before.cases["dhl-cutoff"].rev == 2


# ---- verify ------------------------------------------------------------------------------


def _set_with_checkpoint(tmp_path: Path, n: int = 4) -> QuestionSet:
    qs = QuestionSet(tmp_path / "main", checkpoint_dir=tmp_path / "state")
    for i in range(n):
        qs.add(_case(f"question number {i}"))
    report = verify(qs)
    assert report.ok and report.scan is not None
    save_checkpoint(qs, report.scan)
    return qs


@pytest.mark.parametrize("tamper", ["edit", "remove", "reorder"])
def test_verify_catches_history_rewrites(tmp_path: Path, tamper: str) -> None:
    qs = _set_with_checkpoint(tmp_path)
    lines = qs.cases_path.read_text().splitlines(keepends=True)
    if tamper == "edit":
        lines[1] = lines[1].replace("question number 1", "question number one")
    elif tamper == "remove":
        del lines[1]
        # keep the change log consistent so only the history check can notice
        changes = qs.changelog_path.read_text().splitlines(keepends=True)
        del changes[1]
        qs.changelog_path.write_text("".join(changes))
    else:
        lines[1], lines[2] = lines[2], lines[1]
    qs.cases_path.write_text("".join(lines))
    report = verify(qs)
    assert not report.ok
    problem = next(p for p in report.problems if "append-only" in p.message)
    assert problem.line == 2 and problem.path.endswith("cases.jsonl")


def test_verify_accepts_appends_and_union_merges(tmp_path: Path) -> None:
    qs = _set_with_checkpoint(tmp_path, n=3)
    lines = qs.cases_path.read_text().splitlines(keepends=True)
    # Another branch's case lands in the middle after a union merge: every checkpointed
    # line is still there, in order.
    other = QuestionSet(tmp_path / "other")
    foreign = other.add(_case("from the other branch"))
    lines.insert(2, foreign.line() + "\n")
    qs.cases_path.write_text("".join(lines))
    with open(qs.changelog_path, "a") as fh:
        fh.write(other.changelog_path.read_text())
    report = verify(qs)
    assert report.ok, report.problems
    assert any("union merge" in note for note in report.notes)


def test_verify_reports_bad_lines_with_file_and_line(tmp_path: Path) -> None:
    qs = QuestionSet(tmp_path / "main")
    qs.add(_case("good one"))
    with open(qs.cases_path, "a") as fh:
        fh.write('{"query_id": "x", "rev": 1}\n')
        fh.write(Case.model_validate({**_case("skip"), "query_id": "good-one", "rev": 3}).line() + "\n")
    report = verify(qs)
    messages = {(p.line, p.message.split(":")[0]) for p in report.problems}
    assert (2, "not a valid case") in messages
    assert any(p.line == 3 and "rev 3 where 2 was expected" in p.message for p in report.problems)


def test_verify_unknown_passage_ids(tmp_path: Path) -> None:
    qs = QuestionSet(tmp_path / "main")
    qs.add(_case("q one"))
    report = verify(qs, known_ids=lambda ids: set())
    assert report.ok and report.unknown_ids == {"a.md#x": ["q-one"]}
    assert not verify(qs, known_ids=lambda ids: set(), strict=True).ok
    # Only active cases' latest labels count: a retired case and an old rev name no one.
    qs.add(_case("q two", relevant=[{"id": "b.md#y", "role": "primary"}]))
    qs.add(_case("q three", relevant=[{"id": "c.md#z", "role": "primary"}, {"id": "a.md#x", "role": "secondary"}]))
    qs.retire("q-two", reason="obsolete")
    qs.revise("q-one", {"relevant": [{"id": "d.md#w", "role": "primary"}]}, action="relabel", reason="moved")
    asked: list[set[str]] = []
    report = verify(qs, known_ids=lambda ids: asked.append(ids) or {"c.md#z"})
    assert asked == [{"a.md#x", "c.md#z", "d.md#w"}]
    assert report.unknown_ids == {"a.md#x": ["q-three"], "d.md#w": ["q-one"]}
    assert (report.cases, report.active) == (3, 2)


# ---- concurrency and crashes -------------------------------------------------------------


def _writer(root: str, tag: str, count: int, size: int) -> None:
    qs = QuestionSet(root)
    for i in range(count):
        qs.add(_case(f"{tag} question {i}", explanation="x" * size))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    counts=st.tuples(st.integers(1, 25), st.integers(1, 25)),
    size=st.sampled_from([0, 5_000, 70_000]),  # past PIPE_BUF: one write may not be atomic
)
def test_two_processes_appending_leave_a_valid_file(tmp_path_factory, counts, size) -> None:
    root = tmp_path_factory.mktemp("concurrent") / "main"
    ctx = multiprocessing.get_context("spawn")  # a fresh interpreter: no fork of a threaded process
    procs = [ctx.Process(target=_writer, args=(str(root), tag, n, size)) for tag, n in zip("ab", counts, strict=True)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    qs = QuestionSet(root)
    report = verify(qs)
    assert report.ok, report.problems
    cases = qs.read().cases
    assert len(cases) == sum(counts)
    for tag, n in zip("ab", counts, strict=True):
        mine = [c for c in cases.values() if c.query.startswith(tag)]
        assert [c.query for c in mine] == [f"{tag} question {i}" for i in range(n)]


CHILD = """
import sys
from curator.questionset import QuestionSet
qs = QuestionSet(sys.argv[1])
i = 0
while True:
    qs.add({"query": f"crash question {i}", "slice": "paraphrase", "explanation": "y" * 400_000,
            "relevant": [{"id": "a.md#x"}]})
    i += 1
"""


@pytest.mark.parametrize("delay", [0.15, 0.4, 0.8])
def test_sigkill_mid_append_loses_nothing_written(tmp_path: Path, delay: float) -> None:
    root = tmp_path / "main"
    qs = QuestionSet(root)
    qs.add(_case("written before the crash"))
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(root)])
    time.sleep(delay)
    seen_before_kill = qs.read().cases
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    after = qs.read()
    assert "written-before-the-crash" in after.cases
    assert set(seen_before_kill) <= set(after.cases)
    qs.add(_case("written after the crash"))
    report = verify(qs)
    assert report.ok, report.problems
    final = qs.read().cases
    assert "written-after-the-crash" in final and set(after.cases) <= set(final)


def test_ids_from_other_writers_and_replaced_files_are_never_reused(tmp_path: Path) -> None:
    mine, theirs = QuestionSet(tmp_path / "main"), QuestionSet(tmp_path / "main")
    assert mine.add(_case("dhl cutoff")).query_id == "dhl-cutoff"
    assert theirs.add(_case("dhl cutoff")).query_id == "dhl-cutoff-2"  # appended by another writer
    assert mine.add(_case("dhl cutoff")).query_id == "dhl-cutoff-3"
    # the file replaced by a new one (a git merge writes a new inode) with more ids
    other = QuestionSet(tmp_path / "other")
    for _ in range(5):
        other.add(_case("dhl cutoff"))
    os.replace(other.cases_path, mine.cases_path)
    os.replace(other.changelog_path, mine.changelog_path)
    assert mine.add(_case("dhl cutoff")).query_id == "dhl-cutoff-6"


# ---- verify over many lines, and after a checkpoint ------------------------------------------


def _big_set(tmp_path: Path, n: int) -> QuestionSet:
    """n cases written straight to the files (as the writer would), no per-line fsync."""
    qs = QuestionSet(tmp_path / "main", checkpoint_dir=tmp_path / "state")
    qs.create()
    cases = [Case.model_validate({**_case(f"question {i}"), "query_id": f"q{i}"}) for i in range(n)]
    qs.cases_path.write_text("".join(c.line() + "\n" for c in cases))
    qs.changelog_path.write_text(
        "".join(ChangeEntry(query_id=c.query_id, rev=1, action="add").line() + "\n" for c in cases)
    )
    return qs


def test_verify_reports_bad_lines_by_exact_number(tmp_path: Path) -> None:
    qs = _big_set(tmp_path, 40)
    lines = qs.cases_path.read_text().splitlines(keepends=True)
    lines[4] = lines[4].replace('"slice":"paraphrase"', '"slice":""')
    lines[33] = lines[33].replace('"role":"primary"', '"role":"secondary"')  # a rule of the model
    qs.cases_path.write_text("".join(lines))
    changes = qs.changelog_path.read_text().splitlines(keepends=True)
    changes[37] = changes[37].replace('"action":"add"', '"action":"edit"')  # needs a reason
    qs.changelog_path.write_text("".join(changes))
    report = verify(qs)
    bad = sorted((Path(p.path).name, p.line, p.message) for p in report.problems if p.line)
    assert sorted({(name, line) for name, line, _ in bad}) == [("cases.jsonl", 5), ("cases.jsonl", 34), ("changelog.jsonl", 38)]
    assert "slice" in bad[0][2] and "at least 1 character" in bad[0][2]
    assert "an active case needs a primary passage" in bad[1][2]
    assert "a edit needs a reason" in bad[2][2]
    # an invalid line pairs with nothing, and that is reported too
    assert {p.message for p in report.problems if p.line is None} == {
        "change-log entry for q4 rev 1 has no case line",
        "change-log entry for q33 rev 1 has no case line",
        "q37 rev 1 has no change-log entry",
    }


def test_verify_counts_and_hashes_every_line(tmp_path: Path) -> None:
    qs = _big_set(tmp_path, 60)
    with open(qs.cases_path, "a") as fh:  # a rev that skips, at the end
        fh.write(Case.model_validate({**_case("question 7"), "query_id": "q7", "rev": 3}).line() + "\n")
    report = verify(qs)
    assert any(p.line == 61 and "rev 3 where 2 was expected" in p.message for p in report.problems)
    assert (report.cases, report.active, report.lines) == (60, 60, 61)
    assert len(set(report.scan.hashes("cases.jsonl"))) == 61  # a fingerprint per line, each its own


def test_verify_after_a_checkpoint_checks_the_new_lines_and_reads_the_latest_labels(tmp_path: Path) -> None:
    qs = _big_set(tmp_path, 120)
    report = verify(qs)
    save_checkpoint(qs, report.scan)
    qs.revise("q5", {"relevant": [], "expect_empty": True}, action="relabel", reason="no answer")
    qs.retire("q9", reason="obsolete")
    with open(qs.cases_path, "a") as fh:
        fh.write('{"query_id":"q7","rev":3}\n')
    again = verify(qs, known_ids=lambda ids: ids - {"a.md#x"})
    assert any(p.line == 123 and "not a valid case" in p.message for p in again.problems)
    assert (again.cases, again.active, again.lines) == (120, 119, 123)
    assert len(again.unknown_ids["a.md#x"]) == 118


def test_checkpoint_describes_the_file_as_verified(tmp_path: Path) -> None:
    qs = _big_set(tmp_path, 3)
    report = verify(qs)
    qs.add(_case("appended after the verify"))  # between verify and its checkpoint
    record = save_checkpoint(qs, report.scan)
    assert record["files"]["cases.jsonl"]["lines"] == 3 and len(report.scan.hashes("cases.jsonl")) == 3
    # so the appended line is schema-checked by the next verify, not trusted
    with open(qs.cases_path, "a") as fh:
        fh.write('{"query_id":"zz","rev":1,"query":"","slice":"s"}\n')
    assert any(p.line == 5 and "not a valid case" in p.message for p in verify(qs).problems)


def test_the_checks_on_latest_revs_read_a_hand_written_latest_line(tmp_path: Path) -> None:
    # The latest line of q0 does not start with its query_id (keys in another order): the
    # slice rule is still checked on it, and not on the older rev.
    qs = _big_set(tmp_path, 2)
    latest = Case.model_validate({**_case("question 0", slice="multi_hop"), "query_id": "q0", "rev": 2})
    data = json.loads(latest.line())
    reordered = {"rev": data.pop("rev"), **data}
    with open(qs.cases_path, "a") as fh:
        fh.write(json.dumps(reordered, separators=(",", ":")) + "\n")
    with open(qs.changelog_path, "a") as fh:
        fh.write(ChangeEntry(query_id="q0", rev=2, action="reslice", reason="hops").line() + "\n")
    report = verify(qs)
    warned = [p for p in report.problems if "multi_hop" in p.message]
    assert report.ok and warned and {p.line for p in warned} == {3}, report.problems


def test_one_cases_revisions_skip_other_cases_that_name_it_and_a_torn_tail(tmp_path: Path) -> None:
    qs = QuestionSet(tmp_path / "main")
    target = qs.add(_case("dhl cutoff"))
    qs.add(_case("ups cutoff", explanation="not the same as dhl-cutoff", tags=["dhl-cutoff"]))
    qs.revise(target.query_id, {"slice": "freshness"}, action="reslice", reason="about dhl-cutoff")
    with open(qs.cases_path, "a", encoding="utf-8") as fh:  # torn: an interrupted write of rev 3
        fh.write('{"query_id":"dhl-cutoff","rev":3,')
    assert [c.rev for c in qs.revisions("dhl-cutoff")] == [1, 2]
    assert qs.latest_rev("dhl-cutoff").slice == "freshness"
    assert [e.rev for e in qs.changes("dhl-cutoff")] == [1, 2]
    assert [c.query_id for c in qs.revisions("ups-cutoff")] == ["ups-cutoff"]

"""The local checkpoint (curator.checkpoint): the gate's incremental path and the
append-only rule without git over cases.jsonl, changelog.jsonl and freezes.jsonl."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curator import checkpoint
from curator import verify as verify_module
from curator.appendonly import line_hash
from curator.errors import CuratorError
from curator.freeze import freeze
from curator.verify import require_sound, verify, verify_workspace


def _case(query: str, **extra) -> dict:
    return {"query": query, "slice": "paraphrase", "relevant": [{"id": "a.md#x", "role": "primary"}], **extra}


@pytest.fixture
def checked(ws):
    """A workspace (no git) with three cases and the checkpoint of a passing verify."""
    qs = ws.question_set()
    for query in ("one", "two", "three"):
        qs.add(_case(query, tags=["regression"]))
    qs.revise("one", {"query": "one, reworded"}, action="edit", reason="wording")
    (report,) = verify_workspace(ws, ["main"])
    assert report.ok, report.problems
    return ws


def _rewrite(path: Path, number: int, old: bytes, new: bytes) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    assert old in lines[number - 1]
    lines[number - 1] = lines[number - 1].replace(old, new)
    path.write_bytes(b"".join(lines))


def test_the_gate_advances_past_clean_appends(checked) -> None:
    qs = checked.question_set()
    qs.add(_case("four"))
    qs.retire("two", reason="obsolete")
    assert checkpoint.advance(qs)  # proven from the checkpoint and the four new lines
    record = checkpoint.load(qs)
    assert record["files"]["cases.jsonl"]["lines"] == 6 and record["files"]["changelog.jsonl"]["lines"] == 6
    assert record["files"]["cases.jsonl"]["bytes"] == qs.cases_path.stat().st_size
    assert "two" in record["retired"].split() and "four 1" in record["revs"]
    assert checkpoint.line_hashes(qs, record, "cases.jsonl") == verify(qs).scan.hashes("cases.jsonl")
    assert checkpoint.advance(qs)  # unchanged


def test_an_edit_inside_the_checkpoint_is_left_to_the_full_verify(checked) -> None:
    qs = checked.question_set()
    _rewrite(qs.cases_path, 2, b'"query":"two"', b'"query":"two!"')
    qs.add(_case("four"))
    assert not checkpoint.advance(qs)
    with pytest.raises(CuratorError, match=r"cases.jsonl:2: line 2 as of the checkpoint .* was edited or removed"):
        require_sound(checked, ["main"])


@pytest.mark.parametrize("fault", ["rev", "action", "pairing", "bytes"])
def test_an_appended_line_that_does_not_fit_is_left_to_the_full_verify(checked, fault: str) -> None:
    qs = checked.question_set()
    case = qs.latest_rev("two").model_copy(update={"rev": 2})
    change = {"at": case.at, "query_id": "two", "rev": 2, "action": "edit", "reason": "r", "reviewer": "",
              "versions": {}}
    if fault == "rev":
        case = case.model_copy(update={"rev": 3})
        change["rev"] = 3
    if fault == "action":
        change["action"] = "retire"
    if fault == "pairing":
        change["query_id"] = "three"
    line = case.line().encode()
    if fault == "bytes":
        line = line.replace(b'"query":"two"', b'"query":"two\xff"')
    with open(qs.cases_path, "ab") as fh:
        fh.write(line + b"\n")
    with open(qs.changelog_path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(change, separators=(",", ":")) + "\n")
    assert not checkpoint.advance(qs)
    with pytest.raises(CuratorError, match="fails verify"):
        require_sound(checked, ["main"])


def test_a_freeze_or_a_pending_write_is_left_to_the_full_verify(checked) -> None:
    qs = checked.question_set()
    freeze(checked)
    assert not checkpoint.advance(qs)  # frozen/ changed and freezes.jsonl grew
    require_sound(checked, ["main"])  # a full verify passes and records them
    assert checkpoint.advance(qs)
    (qs.root / ".pending.json").write_text("{}")
    assert not checkpoint.advance(qs)


def test_another_curator_version_s_checkpoint_is_not_built_on(checked) -> None:
    qs = checked.question_set()
    record = checkpoint.load(qs)
    qs.checkpoint_path.write_text(json.dumps({**record, "curator": "0.0.0"}))
    assert not checkpoint.advance(qs)


def test_without_git_the_change_log_is_append_only_too(checked) -> None:
    qs = checked.question_set()
    _rewrite(qs.changelog_path, 4, b'"reason":"wording"', b'"reason":"something else"')
    report = verify(qs)
    assert report.history == "checked against the local checkpoint"
    hits = [p for p in report.problems if p.path == str(qs.changelog_path) and p.line == 4]
    assert hits and "changelog.jsonl is append-only" in hits[0].message, report.problems


def test_without_git_freezes_jsonl_is_append_only_too(checked) -> None:
    qs = checked.question_set()
    freeze(checked)
    freeze(checked)
    verify_workspace(checked, ["main"])
    freezes = qs.root / "freezes.jsonl"
    lines = freezes.read_bytes().splitlines(keepends=True)
    freezes.write_bytes(lines[1] + lines[0])
    problems = [p for p in verify(qs).problems if p.path == str(freezes)]
    assert any(p.line == 1 and "freezes.jsonl is append-only" in p.message for p in problems), problems


def test_a_checkpoint_of_the_earlier_format_still_guards_the_history(checked) -> None:
    qs = checked.question_set()
    data = qs.cases_path.read_bytes()
    hashes = [line_hash(line) for line in data.splitlines()]
    import hashlib

    qs.checkpoint_path.write_text(json.dumps({
        "at": "2026-11-30T00:00:00Z", "curator": "0.0.1", "lines": 4, "sha256": hashlib.sha256(data).hexdigest(),
        "line_hashes": hashes,
    }))
    _rewrite(qs.cases_path, 3, b'"query":"three"', b'"query":"three!"')
    report = verify(qs)
    assert any(p.line == 3 and "as of the checkpoint" in p.message for p in report.problems), report.problems


def test_a_format_2_checkpoint_still_names_the_edited_line(checked) -> None:
    """Format 2 kept a sha1 prefix per line in a text sidecar; after an upgrade its record
    still guards the history (the lines are hashed its way for it), and the next passing
    verify writes format 3 with fingerprints."""
    import hashlib

    qs = checked.question_set()
    record = checkpoint.load(qs)
    for name in checkpoint.FILES:
        fingerprints = qs.checkpoint_path.with_name(f"main.{name}.lines")
        fingerprints.unlink()
        lines = (qs.root / name).read_bytes().splitlines() if (qs.root / name).exists() else []
        text = "".join(line_hash(line) + "\n" for line in lines).encode("ascii")
        qs.checkpoint_path.with_name(f"main.{name}.hashes").write_bytes(text)
        record["files"][name]["hashes_sha256"] = hashlib.sha256(text).hexdigest()
    record["format"] = 2
    qs.checkpoint_path.write_text(json.dumps(record))
    _rewrite(qs.cases_path, 3, b'"query":"three"', b'"query":"three!"')
    problems = verify(qs).problems
    assert any(p.line == 3 and "as of the checkpoint" in p.message and p.fatal for p in problems), problems
    _rewrite(qs.cases_path, 3, b'"query":"three!"', b'"query":"three"')
    assert all(report.ok for report in verify_workspace(checked, ["main"]))
    assert checkpoint.load(qs)["format"] == checkpoint.FORMAT
    assert not qs.checkpoint_path.with_name("main.cases.jsonl.hashes").exists()
    assert checkpoint.line_hashes(qs, checkpoint.load(qs), "cases.jsonl") == verify(qs).scan.hashes("cases.jsonl")


def test_a_damaged_line_hash_file_is_never_trusted(checked) -> None:
    qs = checked.question_set()
    sidecar = qs.checkpoint_path.with_name("main.cases.jsonl.lines")
    sidecar.write_bytes(b"\0" * 8 + sidecar.read_bytes()[8:])
    assert checkpoint.line_hashes(qs, checkpoint.load(qs), "cases.jsonl") == []
    qs.add(_case("four"))
    assert not checkpoint.advance(qs)  # cannot extend it: the full verify writes it anew
    require_sound(checked, ["main"])
    assert checkpoint.line_hashes(qs, checkpoint.load(qs), "cases.jsonl") == verify(qs).scan.hashes("cases.jsonl")
    _rewrite(qs.cases_path, 2, b'"query":"two"', b'"query":"two!"')
    assert any(p.line == 2 and "as of the checkpoint" in p.message for p in verify(qs).problems)


def _findings(report) -> list[tuple[str, int | None, str, bool]]:
    return [(Path(p.path).name, p.line, p.message, p.fatal) for p in report.problems]


def test_a_verify_of_files_a_passing_verify_read_still_reports_every_finding(checked) -> None:
    """Nothing appended since the checkpoint: the line checks are not run again, but the
    warnings on latest revs, the passage ids and the counts are those of a full verify."""
    qs = checked.question_set()
    qs.add({"query": "hop", "slice": "multi_hop", "relevant": [{"id": "a.md#x", "role": "primary"}]})
    full = verify_workspace(checked, ["main"])[0]
    assert any("multi_hop case needs at least two primary passages" in p.message for p in full.problems)
    again = verify(qs)
    assert verify_module._as_checkpointed(checkpoint.load(qs), again.scan.files, {
        name: True for name in again.scan.files}) is not None  # the checkpointed path was open
    assert _findings(again) == _findings(full) and again.ok
    assert (again.cases, again.active, again.lines) == (full.cases, full.active, full.lines) == (4, 4, 5)
    assert again.scan.revs == full.scan.revs and again.scan.retired == full.scan.retired
    unknown = verify(qs, known_ids=lambda ids: set(), strict=True)  # the corpus is read every time
    assert not unknown.ok and "passage 'a.md#x' (in one, two, three, hop) is not in the corpus" in str(unknown.first_problem)
    with open(qs.changelog_path, "ab") as fh:  # a torn tail is no line: still the checkpointed path, and said
        fh.write(b'{"at":"2026')
    torn = verify(qs)
    assert torn.ok and ("changelog.jsonl", 6, "torn last line ignored", False) in _findings(torn)


def test_the_checkpointed_path_needs_the_exact_files_of_this_version(checked) -> None:
    qs = checked.question_set()
    record = checkpoint.load(qs)
    files = verify(qs).scan.files
    intact = {name: True for name in files}
    assert verify_module._as_checkpointed(record, files, intact) is not None
    assert verify_module._as_checkpointed({**record, "curator": "0.0.0"}, files, intact) is None
    assert verify_module._as_checkpointed(record, files, {**intact, "changelog.jsonl": False}) is None
    qs.add(_case("four"))  # appended since: the new lines are checked in full, the rest trusted
    appended = verify(qs)
    assert verify_module._as_checkpointed(record, appended.scan.files, intact) is None
    assert appended.ok and appended.lines == 5
    _rewrite(qs.cases_path, 5, b'"slice":"paraphrase"', b'"slice":""')
    broken = verify(qs)
    assert not broken.ok and str(broken.first_problem).endswith("cases.jsonl:5: not a valid case: slice: "
                                                               "String should have at least 1 character")

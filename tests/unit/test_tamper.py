"""The tamper matrix: each way of rewriting a set's history, on a fresh `git clone` of a
git-tracked demo workspace (and, for cases.jsonl, on a workspace without git that has a
local checkpoint), run through the real console script: exit 1 and the file:line."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from tests.terminal import spawn

CURATOR = str(Path(sys.executable).parent / "curator")
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}


def git(root: Path, *args: str) -> str:
    import os

    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True, env=env).stdout


def verify(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CURATOR, "verify", *args], cwd=root, capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("origin") / "ws"
    subprocess.run([CURATOR, "demo", str(root)], check=True, capture_output=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "demo")
    return root


@pytest.fixture
def clone(origin: Path, tmp_path: Path) -> Path:
    target = tmp_path / "clone"
    git(origin, "clone", "-q", str(origin), str(target))
    return target


SET = Path("datasets/main")


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _edit(root: Path, name: str, change: Callable[[list[bytes]], list[bytes]]) -> None:
    path = root / SET / name
    path.write_bytes(b"".join(change(_lines(path))))


def edit_question(lines: list[bytes]) -> list[bytes]:
    case = json.loads(lines[1])
    case["query"] += " (edited)"
    lines[1] = json.dumps(case, separators=(",", ":")).encode() + b"\n"
    return lines


def swap_label(lines: list[bytes]) -> list[bytes]:
    case = json.loads(lines[1])
    case["relevant"][0]["id"] = "faq.md#somewhere-else"
    lines[1] = json.dumps(case, separators=(",", ":")).encode() + b"\n"
    return lines


def reorder(lines: list[bytes]) -> list[bytes]:
    lines[1], lines[2] = lines[2], lines[1]
    return lines


def retire_in_place(lines: list[bytes]) -> list[bytes]:
    lines[1] = lines[1].replace(b'"status":"active"', b'"status":"retired"')
    return lines


def crlf(lines: list[bytes]) -> list[bytes]:
    return [line.replace(b"\n", b"\r\n") for line in lines]


def bad_utf8(lines: list[bytes]) -> list[bytes]:
    lines[1] = lines[1].replace(b'"query":"', b'"query":"\xff', 1)
    return lines


def bom(lines: list[bytes]) -> list[bytes]:
    lines[0] = b"\xef\xbb\xbf" + lines[0]
    return lines


def nul_byte(lines: list[bytes]) -> list[bytes]:
    lines[1] = lines[1].replace(b'"query":"', b'"query":"\x00', 1)
    return lines


def drop_line(lines: list[bytes]) -> list[bytes]:
    return lines[:1] + lines[2:]


def edit_reason(lines: list[bytes]) -> list[bytes]:
    for index, line in enumerate(lines):
        entry = json.loads(line)
        if entry["reason"]:
            entry["reason"] = "something else"
            lines[index] = json.dumps(entry, separators=(",", ":")).encode() + b"\n"
            return lines
    raise AssertionError("the demo change log has no reason to edit")


def edit_action(lines: list[bytes]) -> list[bytes]:
    for index, line in enumerate(lines):
        if b'"action":"relabel"' in line or b'"action":"edit"' in line:
            lines[index] = line.replace(b'"action":"relabel"', b'"action":"reslice"').replace(
                b'"action":"edit"', b'"action":"reslice"')
            return lines
    raise AssertionError("the demo change log has no relabel or edit")


CASE_TAMPERS = {
    "edited question": (edit_question, 2),
    "swapped label": (swap_label, 2),
    "reordered lines": (reorder, 2),
    "retire in place": (retire_in_place, 2),
    "CRLF rewrite": (crlf, 1),
    "invalid UTF-8": (bad_utf8, 2),
    "BOM": (bom, 1),
    "NUL byte": (nul_byte, 2),
}


def _assert_caught(result: subprocess.CompletedProcess[str], name: str, line: int | None) -> None:
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    where = f"{name}:{line}" if line else name
    assert where in out.replace("\n", ""), out
    assert "Traceback" not in out


# ---- the matrix: each tamper kind in each of three setups ------------------------------------

SETUPS = ("local checkpoint", "fresh clone", "fresh clone with a freeze")


@pytest.fixture(scope="module")
def templates(origin: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One workspace per setup, made once and copied for each test:
    - local checkpoint: a copy without .git, frozen, with the checkpoint two passing
      verifies recorded (the first says there was no history yet);
    - fresh clone: `git clone` of the demo repository;
    - fresh clone with a freeze: a freeze committed in one clone, then cloned again."""
    base = tmp_path_factory.mktemp("setups")
    plain = base / "plain"
    shutil.copytree(origin, plain, ignore=shutil.ignore_patterns(".git"))
    first = verify(plain)
    assert first.returncode == 0 and "not checked: no history" in first.stdout, first.stdout + first.stderr
    made = subprocess.run([CURATOR, "export", "--freeze", "regression", "--all"], cwd=plain, capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    second = verify(plain)
    assert second.returncode == 0 and "against the local checkpoint" in second.stdout, second.stdout + second.stderr
    clone = base / "clone"
    git(origin, "clone", "-q", str(origin), str(clone))
    work = base / "frozen-work"
    git(origin, "clone", "-q", str(origin), str(work))
    made = subprocess.run([CURATOR, "export", "--freeze", "regression", "--all"], cwd=work, capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    git(work, "add", "-A")
    git(work, "commit", "-qm", "freeze")
    frozen = base / "frozen-clone"
    git(work, "clone", "-q", str(work), str(frozen))
    return {"local checkpoint": plain, "fresh clone": clone, "fresh clone with a freeze": frozen}


def _setup(templates: dict[str, Path], name: str, tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    shutil.copytree(templates[name], root, symlinks=True)
    return root


def _first_changed(before: list[bytes], after: list[bytes]) -> int:
    for index, line in enumerate(before):
        if index >= len(after) or after[index] != line:
            return index + 1
    return len(before) + 1


def _tamper_file(root: Path, name: str, change: Callable[[list[bytes]], list[bytes]]) -> int:
    """Apply `change` to a set file; the number of the first line it changed."""
    before = _lines(root / SET / name)
    _edit(root, name, change)
    return _first_changed(before, _lines(root / SET / name))


def _case_tamper(kind: str, root: Path) -> tuple[str, int]:
    change, line = CASE_TAMPERS[kind]  # the line verify names (a CRLF rewrite: the first)
    _edit(root, "cases.jsonl", change)
    return "cases.jsonl", line


def _deleted_case_with_its_change(root: Path) -> tuple[str, int]:
    _edit(root, "changelog.jsonl", drop_line)
    return "cases.jsonl", _tamper_file(root, "cases.jsonl", drop_line)


def _deleted_freeze(root: Path) -> tuple[str, int]:
    manifest = _manifest(root)
    (manifest.parent / json.loads(manifest.read_text())["file"]).unlink()
    manifest.unlink()
    return "freezes.jsonl", 1


def _deleted_frozen_folder(root: Path) -> tuple[str, int]:
    shutil.rmtree(root / SET / "frozen")
    return "freezes.jsonl", 1


def _edited_manifest_count(root: Path) -> tuple[str, int]:
    path = _manifest(root)
    manifest = json.loads(path.read_text())
    manifest["cases"] += 1
    path.write_text(json.dumps(manifest, indent=1) + "\n")
    return "freezes.jsonl", 1  # the manifest changed since freezes.jsonl recorded it


def _edited_frozen_file_rehashed(root: Path) -> tuple[str, int]:
    manifest = _manifest(root)
    frozen = manifest.parent / json.loads(manifest.read_text())["file"]
    lines = frozen.read_bytes().split(b"\n")
    case = json.loads(lines[1])
    case["query"] += " (edited)"
    lines[1] = json.dumps(case, separators=(",", ":")).encode()
    frozen.write_bytes(b"\n".join(lines))
    _rehash(manifest, frozen)
    return frozen.name, 2


TAMPERS: dict[str, Callable[[Path], tuple[str, int]]] = {
    **{kind: partial(_case_tamper, kind) for kind in CASE_TAMPERS},
    "edited change-log reason": lambda root: ("changelog.jsonl", _tamper_file(root, "changelog.jsonl", edit_reason)),
    "edited change-log action": lambda root: ("changelog.jsonl", _tamper_file(root, "changelog.jsonl", edit_action)),
    "deleted case with its change-log line": _deleted_case_with_its_change,
}
FREEZE_TAMPERS: dict[str, Callable[[Path], tuple[str, int]]] = {
    "deleted newest freeze": _deleted_freeze,
    "deleted frozen folder": _deleted_frozen_folder,
    "edited manifest count": _edited_manifest_count,
    "edited frozen file, hashes recomputed": _edited_frozen_file_rehashed,
}
MATRIX = [(setup, kind) for setup in SETUPS for kind in TAMPERS] + [
    (setup, kind) for setup in SETUPS if setup != "fresh clone" for kind in FREEZE_TAMPERS
]


@pytest.mark.parametrize(("setup", "kind"), MATRIX)
def test_tamper_matrix(templates: dict[str, Path], tmp_path: Path, setup: str, kind: str) -> None:
    root = _setup(templates, setup, tmp_path)
    name, line = {**TAMPERS, **FREEZE_TAMPERS}[kind](root)
    result = verify(root)
    _assert_caught(result, name, line)
    expected = "the local checkpoint" if setup == "local checkpoint" else "2 commit(s)" if "freeze" in setup else "1 commit(s)"
    assert f"append-only: checked against {expected}" in result.stdout, result.stdout


def test_the_edited_manifest_count_is_recomputed(templates: dict[str, Path], tmp_path: Path) -> None:
    root = _setup(templates, "fresh clone with a freeze", tmp_path)
    _edited_manifest_count(root)
    assert "the frozen file has" in verify(root).stderr.replace("\n", "")


def test_fresh_clone_catches_an_amended_commit(origin: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    git(origin, "clone", "-q", str(origin), str(work))
    git(work, "commit", "-q", "--allow-empty", "-m", "second")
    path = work / SET / "cases.jsonl"
    path.write_bytes(path.read_bytes() + _lines(path)[0].replace(b'"rev":1', b'"rev":9'))  # something appended
    git(work, "commit", "-qam", "more")
    _edit(work, "cases.jsonl", edit_question)
    git(work, "commit", "-q", "-a", "--amend", "-m", "more (amended)")
    fresh = tmp_path / "fresh"
    git(work, "clone", "-q", str(work), str(fresh))
    result = verify(fresh)
    _assert_caught(result, "cases.jsonl", 2)
    assert "commit" in result.stderr


def test_fresh_clone_catches_a_back_dated_insertion(clone: Path, tmp_path: Path) -> None:
    lines = _lines(clone / SET / "cases.jsonl")
    forged = json.loads(lines[0])
    forged.update(query_id="forged-case", query="a forged question", at="2020-01-01T00:00:00Z")
    change = json.loads(_lines(clone / SET / "changelog.jsonl")[0])
    change.update(query_id="forged-case", at="2020-01-01T00:00:00Z")
    _edit(clone, "cases.jsonl", lambda ls: ls[:2] + [json.dumps(forged, separators=(",", ":")).encode() + b"\n"] + ls[2:])
    _edit(clone, "changelog.jsonl", lambda ls: ls[:2] + [json.dumps(change, separators=(",", ":")).encode() + b"\n"] + ls[2:])
    git(clone, "commit", "-qam", "a union merge, honest")
    fresh = tmp_path / "fresh"
    git(clone, "clone", "-q", str(clone), str(fresh))
    result = verify(fresh)
    _assert_caught(result, "cases.jsonl", 3)
    assert "no merge" in result.stderr


def _reviewer_branch(root: Path, branch: str, query_id: str, query: str) -> None:
    git(root, "checkout", "-q", "-b", branch, "main")
    from curator.questionset import QuestionSet

    qs = QuestionSet(root / SET)
    first = qs.read().cases[next(iter(qs.read().cases))]
    data = first.model_dump()
    data.update(query_id=query_id, query=query)
    qs.add(data, reviewer=branch)
    git(root, "commit", "-qam", f"{branch}: one case")


def test_union_merge_of_two_reviewers_passes_and_a_conflict_is_named(clone: Path) -> None:
    _reviewer_branch(clone, "alice", "alice-case", "what does alice ask")
    _reviewer_branch(clone, "bob", "bob-case", "what does bob ask")
    git(clone, "checkout", "-q", "main")
    git(clone, "merge", "-q", "--no-edit", "alice")
    git(clone, "merge", "-q", "--no-edit", "bob")
    result = verify(clone)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "checked against 4 commit(s)" in result.stdout

    from curator.questionset import QuestionSet

    qs = QuestionSet(clone / SET)
    target = next(iter(qs.read().cases))
    for branch, reason in (("carol", "carol's fix"), ("dave", "dave's fix")):
        git(clone, "checkout", "-q", "-b", branch, "main")
        qs.revise(target, {"explanation": reason}, action="edit", reason=reason, reviewer=branch)
        git(clone, "commit", "-qam", branch)
    git(clone, "checkout", "-q", "main")
    git(clone, "merge", "-q", "--no-edit", "carol")
    git(clone, "merge", "-q", "--no-edit", "dave")
    result = verify(clone)
    out = result.stdout + result.stderr
    assert result.returncode == 1 and "merge conflict" in out and f"curator resolve {target}" in out
    count = len(_lines(clone / SET / "cases.jsonl"))
    resolved = subprocess.run([CURATOR, "resolve", target, "--line", str(count)], cwd=clone, capture_output=True, text=True)
    assert resolved.returncode == 0, resolved.stderr
    assert verify(clone).returncode == 0
    assert qs.latest_rev(target) is not None and qs.latest_rev(target).explanation == "dave's fix"  # type: ignore[union-attr]


def test_export_refuses_a_set_that_fails_verify(clone: Path, tmp_path: Path) -> None:
    _edit(clone, "cases.jsonl", edit_question)
    out = tmp_path / "q.json"
    refused = subprocess.run([CURATOR, "export", "-f", "ranx", "-o", str(out)], cwd=clone, capture_output=True, text=True)
    assert refused.returncode == 1 and "cases.jsonl:2" in refused.stderr and not out.exists()
    forced = subprocess.run([CURATOR, "export", "-f", "ranx", "-o", str(out), "--no-verify"], cwd=clone,
                            capture_output=True, text=True)
    assert forced.returncode == 0 and out.exists()


def test_a_pending_journal_fails_verify_until_repaired(clone: Path) -> None:
    cases, changes = _lines(clone / SET / "cases.jsonl"), _lines(clone / SET / "changelog.jsonl")
    pending = {"case": cases[0].decode().replace('"rev":1', '"rev":2').strip(), "change": ""}
    entry = json.loads(changes[0])
    entry.update(rev=2, action="edit", reason="crash test", reviewer="erin")
    pending["change"] = json.dumps(entry, separators=(",", ":"))
    (clone / SET / ".pending.json").write_text(json.dumps(pending))
    result = verify(clone)
    assert result.returncode == 1 and "curator verify --repair" in result.stderr
    repaired = verify(clone, "--repair")
    assert "completed the interrupted write" in repaired.stdout
    assert not (clone / SET / ".pending.json").exists()
    assert json.loads(_lines(clone / SET / "changelog.jsonl")[-1])["reviewer"] == "erin"


def _manifest(root: Path) -> Path:
    (path,) = sorted((root / SET / "frozen").glob("*.json"))
    return path


def _rehash(manifest_path: Path, frozen: Path) -> None:
    import hashlib

    from curator.appendonly import line_hash

    manifest = json.loads(manifest_path.read_text())
    body = frozen.read_bytes()
    manifest["sha256"] = hashlib.sha256(body).hexdigest()
    manifest["line_hashes"] = [line_hash(line) for line in body.split(b"\n")[:-1]]
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")


def test_the_gate_fast_path_never_hides_a_later_tamper(clone: Path, tmp_path: Path) -> None:
    out = tmp_path / "q.json"
    args = [CURATOR, "export", "-f", "ranx", "-o", str(out)]
    assert subprocess.run(args, cwd=clone, capture_output=True).returncode == 0  # records the checkpoint
    _edit(clone, "cases.jsonl", swap_label)
    refused = subprocess.run(args, cwd=clone, capture_output=True, text=True)
    assert refused.returncode == 1 and "cases.jsonl:2" in refused.stderr


# ---- the gate's incremental path ----------------------------------------------------------------


def _export(root: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    out = tmp_path / "qrels.json"
    return subprocess.run([CURATOR, "export", "-f", "ranx", "-o", str(out)], cwd=root, capture_output=True, text=True)


def _append_case(root: Path, query: str) -> int:
    """Append a case (and its change-log entry) through curator; gives its line number."""
    from curator.questionset import QuestionSet

    qs = QuestionSet(root / SET)
    data = next(iter(qs.read().cases.values())).model_dump()
    data.update(query_id="", query=query)
    qs.add(data, reviewer="gate-test")
    return len(_lines(root / SET / "cases.jsonl"))


def _checkpointed_lines(root: Path, name: str) -> int:
    record = json.loads((root / ".curator" / "checkpoints" / "main.json").read_text())
    return int(record["files"][name]["lines"])


@pytest.mark.parametrize("setup", ["local checkpoint", "fresh clone"])
def test_the_gate_parses_appended_lines_and_still_catches_an_edit_inside_the_checkpoint(
    templates: dict[str, Path], tmp_path: Path, setup: str
) -> None:
    root = _setup(templates, setup, tmp_path)
    assert _export(root, tmp_path).returncode == 0  # a passing gate records the checkpoint
    line = _append_case(root, "a question appended after the checkpoint")
    assert _export(root, tmp_path).returncode == 0
    assert _checkpointed_lines(root, "cases.jsonl") == line  # the gate moved past the new line
    assert _checkpointed_lines(root, "changelog.jsonl") == len(_lines(root / SET / "changelog.jsonl"))
    _edit(root, "cases.jsonl", swap_label)  # inside the checkpointed prefix...
    _append_case(root, "and one more appended after the edit")  # ...with an honest append after it
    refused = _export(root, tmp_path)
    assert refused.returncode == 1 and "cases.jsonl:2" in refused.stderr.replace("\n", ""), refused.stderr


def test_a_line_the_gate_appended_to_the_checkpoint_is_covered_like_the_others(
    templates: dict[str, Path], tmp_path: Path
) -> None:
    root = _setup(templates, "local checkpoint", tmp_path)
    line = _append_case(root, "a question the gate checkpoints")
    assert _export(root, tmp_path).returncode == 0
    _edit(root, "cases.jsonl", lambda ls: ls[:-1] + [ls[-1].replace(b"checkpoints", b"forgets")])
    _assert_caught(verify(root), "cases.jsonl", line)  # found by the line hashes the gate appended


def _append_raw(root: Path, case: dict, change: dict) -> None:
    for name, record in (("cases.jsonl", case), ("changelog.jsonl", change)):
        with open(root / SET / name, "ab") as fh:
            fh.write(json.dumps(record, separators=(",", ":")).encode() + b"\n")


@pytest.mark.parametrize("fault", ["skipped rev", "action that does not fit", "invalid case", "no change-log entry"])
def test_the_gate_refuses_a_bad_appended_line(templates: dict[str, Path], tmp_path: Path, fault: str) -> None:
    root = _setup(templates, "local checkpoint", tmp_path)
    assert _export(root, tmp_path).returncode == 0
    case = json.loads(_lines(root / SET / "cases.jsonl")[-1])
    change = json.loads(_lines(root / SET / "changelog.jsonl")[-1])
    revs = [json.loads(line)["rev"] for line in _lines(root / SET / "cases.jsonl") if
            json.loads(line)["query_id"] == case["query_id"]]
    case.update(rev=max(revs) + 1, status="active")
    change.update(query_id=case["query_id"], rev=case["rev"], action="edit", reason="gate test")
    expected = "cases.jsonl"
    if fault == "skipped rev":
        case["rev"] = change["rev"] = max(revs) + 2
    elif fault == "action that does not fit":
        change["action"], expected = "retire", "changelog.jsonl"
    elif fault == "invalid case":
        case["slice"] = ""
    _append_raw(root, case, change)
    if fault == "no change-log entry":
        _edit(root, "changelog.jsonl", lambda ls: ls[:-1])
        expected = "changelog.jsonl"
    refused = _export(root, tmp_path)
    assert refused.returncode == 1 and f"{expected}" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr


def test_a_torn_last_line_does_not_stop_the_gate(templates: dict[str, Path], tmp_path: Path) -> None:
    root = _setup(templates, "local checkpoint", tmp_path)
    assert _export(root, tmp_path).returncode == 0
    with open(root / SET / "cases.jsonl", "ab") as fh:
        fh.write(b'{"query_id":"half-writ')  # a crash mid-append: no line yet
    assert _export(root, tmp_path).returncode == 0


def test_verify_prints_the_first_problems_and_how_many_more(templates: dict[str, Path], tmp_path: Path) -> None:
    root = _setup(templates, "local checkpoint", tmp_path)
    with open(root / SET / "cases.jsonl", "ab") as fh:
        fh.write(b'{"query_id":"broken"}\r\n' * 70)  # two errors a line: CRLF and no valid case
    short = verify(root)
    errors = [line for line in short.stderr.splitlines() if line.strip().startswith("error:")]
    assert short.returncode == 1 and len(errors) == 50, short.stderr
    assert "and 90 more errors" in short.stderr and "curator verify --all" in short.stderr
    every = verify(root, "--all")
    assert len([line for line in every.stderr.splitlines() if line.strip().startswith("error:")]) == 140
    assert len(json.loads(verify(root, "--json").stdout)[0]["problems"]) >= 140


def test_after_a_commit_that_only_appends_the_gate_stays_incremental(templates: dict[str, Path], tmp_path: Path) -> None:
    from curator import checkpoint
    from curator.workspace import Workspace

    root = _setup(templates, "fresh clone", tmp_path)
    assert _export(root, tmp_path).returncode == 0  # a full verify against git records the checkpoint
    _append_case(root, "a question committed after the checkpoint")
    git(root, "commit", "-qam", "one more case")
    ws = Workspace.open(root)
    try:
        assert checkpoint.advance(ws.question_set())  # the commit only appended: no full verify
        assert checkpoint.load(ws.question_set())["seal"]["head"] == git(root, "rev-parse", "HEAD").strip()
        _edit(root, "cases.jsonl", edit_question)
        git(root, "commit", "-q", "-a", "--amend", "-m", "one more case (and an edit)")
        assert not checkpoint.advance(ws.question_set())
    finally:
        ws.close()
    refused = _export(root, tmp_path)
    assert refused.returncode == 1 and "cases.jsonl:2" in refused.stderr.replace("\n", ""), refused.stderr


def test_status_reads_the_gate_and_still_shows_an_edit_as_failing(tmp_path: Path) -> None:
    """status asks the checkpoint first (fast on a big set) but never trusts it past an edit."""
    import json

    root = tmp_path / "local"
    subprocess.run([CURATOR, "demo", str(root)], check=True, capture_output=True)  # no git: the checkpoint
    assert verify(root).returncode == 0  # records the checkpoint

    def state() -> dict:
        done = subprocess.run([CURATOR, "status", "--json"], cwd=root, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)["sets"]["main"]["verify"]

    assert state()["ok"] is True
    _edit(root, "cases.jsonl", edit_question)
    failing = state()
    assert failing["ok"] is False and "cases.jsonl:" in failing["first_problem"]
    human = subprocess.run([CURATOR, "status"], cwd=root, capture_output=True, text=True, timeout=60)
    assert "FAILING verify" in human.stdout


REFUSING = {  # every command that builds on the set, with its arguments
    "export --freeze": ["export", "--freeze", "regression", "--all"],
    "score": ["score", "retriever-runs/bm25.jsonl"],
    "triage": ["triage"],
    "import-logs": ["import-logs", "logs/search.jsonl"],
    "generate": ["generate", "--backend", "identifiers"],
}


@pytest.mark.parametrize("command", sorted(REFUSING))
def test_commands_that_build_on_a_set_refuse_one_that_fails_verify(clone: Path, command: str) -> None:
    """Issue 19 point 5 on a fresh clone: refused with exit 1 and the first problem's
    file:line, and nothing written to the set."""
    _edit(clone, "cases.jsonl", edit_question)
    before = {name: (clone / SET / name).read_bytes() for name in ("cases.jsonl", "changelog.jsonl")}
    done = subprocess.run([CURATOR, *REFUSING[command]], cwd=clone, capture_output=True, text=True, timeout=60)
    out = done.stdout + done.stderr
    assert done.returncode == 1 and "fails verify" in out and "cases.jsonl:2" in out.replace("\n", ""), out
    assert "--no-verify" in out and "Traceback" not in out
    assert {name: (clone / SET / name).read_bytes() for name in before} == before
    assert not (clone / SET / "frozen").exists()


def test_review_refuses_to_write_to_a_set_that_fails_verify(clone: Path) -> None:
    import os

    import pexpect

    _edit(clone, "cases.jsonl", edit_question)
    env = {k: v for k, v in {**os.environ, "TERM": "xterm-256color", "CURATOR_REVIEWER": "pty"}.items()
           if k not in ("COLUMNS", "LINES")}
    child = spawn(CURATOR, ["review"], cwd=str(clone), env=env, dimensions=(24, 100), encoding="utf-8",
                          timeout=30)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1 and "fails verify" in (child.before or "") and "cases.jsonl:2" in (child.before or "")


def _many_commits(root: Path, count: int) -> None:
    """`count` commits on top of HEAD, each appending one case and its change-log line
    (made with one `git fast-import`, so the test stays fast)."""
    import os

    cases, changes = _lines(root / SET / "cases.jsonl"), _lines(root / SET / "changelog.jsonl")
    case, change = json.loads(cases[0]), json.loads(changes[0])
    stream = []

    def data(body: bytes) -> bytes:
        return b"data %d\n" % len(body) + body + b"\n"

    for number in range(count):
        query_id = f"appended-case-{number}"
        case.update(query_id=query_id, query=f"appended question {number}")
        change.update(query_id=query_id)
        cases.append(json.dumps(case, separators=(",", ":")).encode() + b"\n")
        changes.append(json.dumps(change, separators=(",", ":")).encode() + b"\n")
        stream.append(b"commit refs/heads/main\ncommitter t <t@e> %d +0000\n" % (1_700_000_000 + number))
        stream.append(data(b"append %d" % number))
        if number == 0:
            stream.append(b"from " + git(root, "rev-parse", "HEAD").strip().encode() + b"\n")
        stream.append(b"M 100644 inline datasets/main/cases.jsonl\n" + data(b"".join(cases)))
        stream.append(b"M 100644 inline datasets/main/changelog.jsonl\n" + data(b"".join(changes)))
    subprocess.run(["git", "-C", str(root), "fast-import", "--quiet"], input=b"".join(stream), check=True,
                   env={**os.environ, **GIT_ENV})
    git(root, "reset", "-q", "--hard", "main")


def test_hundreds_of_commits_verify_in_seconds_with_a_few_git_processes(clone: Path, tmp_path: Path) -> None:
    """Issue 19 point 1: history is read in one pass (git log, cat-file --batch), not one
    process per commit. A `git` on PATH that logs each call and runs the real one counts them."""
    import os
    import shutil as sh
    import time

    _many_commits(clone, 300)
    log, wrapper = tmp_path / "git-calls", tmp_path / "bin"
    wrapper.mkdir()
    (wrapper / "git").write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec {sh.which("git")} "$@"\n')
    (wrapper / "git").chmod(0o755)
    env = {**os.environ, "PATH": f"{wrapper}{os.pathsep}{os.environ['PATH']}"}
    started = time.monotonic()
    done = subprocess.run([CURATOR, "verify"], cwd=clone, capture_output=True, text=True, timeout=120, env=env)
    took = time.monotonic() - started
    assert done.returncode == 0 and "checked against 301 commit(s)" in done.stdout, done.stdout + done.stderr
    calls = log.read_text().splitlines()
    assert len(calls) <= 10, calls
    assert took < 15, took  # seconds, on a loaded 2-core machine (about 1 s when quiet)
    _edit(clone, "cases.jsonl", edit_question)  # and an edit is still found
    _assert_caught(verify(clone), "cases.jsonl", 2)

"""The tamper matrix: each way of rewriting a set's history, on a fresh `git clone` of a
git-tracked demo workspace (and, for cases.jsonl, on a workspace without git that has a
local checkpoint), run through the real console script: exit 1 and the file:line."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

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
}


def _assert_caught(result: subprocess.CompletedProcess[str], name: str, line: int | None) -> None:
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    where = f"{name}:{line}" if line else name
    assert where in out.replace("\n", ""), out
    assert "Traceback" not in out


@pytest.mark.parametrize("kind", sorted(CASE_TAMPERS))
def test_fresh_clone_catches_case_tampering(clone: Path, kind: str) -> None:
    change, line = CASE_TAMPERS[kind]
    _edit(clone, "cases.jsonl", change)
    _assert_caught(verify(clone), "cases.jsonl", line)


@pytest.mark.parametrize("kind", sorted(CASE_TAMPERS))
def test_local_checkpoint_catches_case_tampering(origin: Path, tmp_path: Path, kind: str) -> None:
    root = tmp_path / "plain"
    shutil.copytree(origin, root, ignore=shutil.ignore_patterns(".git"))
    first = verify(root)
    assert first.returncode == 0 and "against the local checkpoint" not in first.stdout
    assert "not checked: no history" in first.stdout
    change, line = CASE_TAMPERS[kind]
    _edit(root, "cases.jsonl", change)
    result = verify(root)
    _assert_caught(result, "cases.jsonl", line)


def test_fresh_clone_catches_a_deleted_case_with_its_change_log_line(clone: Path) -> None:
    _edit(clone, "cases.jsonl", drop_line)
    _edit(clone, "changelog.jsonl", drop_line)
    result = verify(clone)
    _assert_caught(result, "cases.jsonl", 2)
    assert "changelog.jsonl:2" in result.stdout + result.stderr


@pytest.mark.parametrize("change", [edit_reason, edit_action], ids=["reason", "action"])
def test_fresh_clone_catches_an_edited_change_log_entry(clone: Path, change: Callable[[list[bytes]], list[bytes]]) -> None:
    _edit(clone, "changelog.jsonl", change)
    assert verify(clone).returncode == 1
    assert "changelog.jsonl:" in (verify(clone).stderr + verify(clone).stdout)


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


@pytest.fixture
def frozen_clone(origin: Path, tmp_path: Path) -> Path:
    work = tmp_path / "frozen-work"
    git(origin, "clone", "-q", str(origin), str(work))
    made = subprocess.run([CURATOR, "export", "--freeze", "regression", "--all"], cwd=work, capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    git(work, "add", "-A")
    git(work, "commit", "-qm", "freeze")
    fresh = tmp_path / "frozen-clone"
    git(work, "clone", "-q", str(work), str(fresh))
    assert verify(fresh).returncode == 0, verify(fresh).stderr
    return fresh


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


def test_fresh_clone_catches_a_deleted_freeze(frozen_clone: Path) -> None:
    manifest = _manifest(frozen_clone)
    (manifest.parent / json.loads(manifest.read_text())["file"]).unlink()
    manifest.unlink()
    _assert_caught(verify(frozen_clone), "freezes.jsonl", 1)


def test_fresh_clone_catches_a_deleted_frozen_folder(frozen_clone: Path) -> None:
    shutil.rmtree(frozen_clone / SET / "frozen")
    _assert_caught(verify(frozen_clone), "freezes.jsonl", 1)


def test_fresh_clone_catches_an_edited_manifest_count(frozen_clone: Path) -> None:
    path = _manifest(frozen_clone)
    manifest = json.loads(path.read_text())
    manifest["cases"] += 1
    path.write_text(json.dumps(manifest, indent=1) + "\n")
    result = verify(frozen_clone)
    assert result.returncode == 1 and "the frozen file has" in result.stderr.replace("\n", "")
    _assert_caught(result, "freezes.jsonl", 1)  # the manifest changed since it was recorded


def test_fresh_clone_catches_an_edited_frozen_file_with_hashes_recomputed(frozen_clone: Path) -> None:
    manifest = _manifest(frozen_clone)
    frozen = manifest.parent / json.loads(manifest.read_text())["file"]
    _edit_file = frozen.read_bytes().split(b"\n")
    case = json.loads(_edit_file[1])
    case["query"] += " (edited)"
    _edit_file[1] = json.dumps(case, separators=(",", ":")).encode()
    frozen.write_bytes(b"\n".join(_edit_file))
    _rehash(manifest, frozen)
    result = verify(frozen_clone)
    _assert_caught(result, frozen.name, 2)


def test_the_gate_fast_path_never_hides_a_later_tamper(clone: Path, tmp_path: Path) -> None:
    out = tmp_path / "q.json"
    args = [CURATOR, "export", "-f", "ranx", "-o", str(out)]
    assert subprocess.run(args, cwd=clone, capture_output=True).returncode == 0  # records the checkpoint
    _edit(clone, "cases.jsonl", swap_label)
    refused = subprocess.run(args, cwd=clone, capture_output=True, text=True)
    assert refused.returncode == 1 and "cases.jsonl:2" in refused.stderr

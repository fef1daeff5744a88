"""Freezes: what they hold, that they never shrink, that verify catches every edit, and
that two branches' appends merge with git's union driver without losing a case."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from curator.appendonly import create_once
from curator.checkpoint import load as load_checkpoint
from curator.errors import CuratorError
from curator.export import Selection, select_cases
from curator.freeze import freeze, list_freezes
from curator.verify import verify_workspace

DAY = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def _case(query: str, slice_: str = "paraphrase", **extra) -> dict:
    base = {"query": query, "slice": slice_, "relevant": [{"id": "a.md#x", "role": "primary"}]}
    base.update(extra)
    return base


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


@pytest.fixture
def frozen_ws(ws):
    qs = ws.question_set()
    qs.add(_case("alpha", "exact_identifier", tags=["regression"]))
    qs.add(_case("beta", tags=["regression"]))
    qs.add(_case("gamma"))
    qs.add({"query": "delta", "slice": "negative", "expect_empty": True, "tags": ["regression"]})
    freeze(ws, now=DAY)
    return ws


def test_freeze_writes_tagged_active_cases_and_a_full_manifest(frozen_ws) -> None:
    folder = frozen_ws.question_set().root / "frozen"
    frozen = folder / "regression-20261130.jsonl"
    manifest = json.loads((folder / "regression-20261130.json").read_text())
    assert [json.loads(line)["query_id"] for line in _lines(frozen)] == ["alpha", "beta", "delta"]
    assert manifest["query_ids"] == ["alpha", "beta", "delta"]
    assert manifest["count_per_slice"] == {"exact_identifier": 1, "negative": 1, "paraphrase": 1}
    assert manifest["cases_prefix"]["lines"] == 4 and len(manifest["cases_prefix"]["line_hashes"]) == 4
    assert manifest["created_at"] == "2026-11-30T09:00:00Z"
    assert manifest["git"] == {"commit": None, "dirty": None}  # not a git repo
    assert manifest["curator_version"] and len(manifest["sha256"]) == 64
    assert all(r.ok for r in verify_workspace(frozen_ws, ["main"]))


def test_later_freeze_never_drops_a_case(frozen_ws) -> None:
    qs = frozen_ws.question_set()
    frozen_alpha = _lines(qs.root / "frozen" / "regression-20261130.jsonl")[0]
    qs.retire("alpha", reason="feature removed")
    qs.revise("beta", {"tags": [], "query": "beta, reworded"}, action="edit", reason="untag")
    qs.add(_case("epsilon", tags=["regression"]))
    result = freeze(frozen_ws, now=DAY)
    assert result.path.name == "regression-20261130-2.jsonl"  # same day: a new name
    lines = _lines(result.path)
    assert [json.loads(line)["query_id"] for line in lines] == ["alpha", "beta", "delta", "epsilon"]
    assert lines[0] == frozen_alpha  # retired since: kept exactly as frozen
    assert json.loads(lines[1])["query"] == "beta, reworded"  # still active: current rev
    assert result.carried_retired == ["alpha"] and result.carried_untagged == ["beta"]
    assert result.manifest["previous"][0]["manifest"] == "regression-20261130.json"
    assert all(r.ok for r in verify_workspace(frozen_ws, ["main"]))
    everything = freeze(frozen_ws, name="everything", all_active=True, now=DAY)
    assert everything.manifest["query_ids"] == ["beta", "gamma", "delta", "epsilon"]


def test_nothing_to_freeze_is_an_error_not_an_empty_file(ws) -> None:
    ws.question_set().add(_case("untagged"))
    with pytest.raises(CuratorError, match="no active case of set 'main' is tagged 'regression'"):
        freeze(ws, now=DAY)
    assert not (ws.question_set().root / "frozen").exists()


def test_frozen_files_are_never_overwritten(tmp_path: Path) -> None:
    target = tmp_path / "f.jsonl"
    create_once(target, "first\n")
    with pytest.raises(CuratorError, match="never overwritten"):
        create_once(target, "second\n")
    assert target.read_text() == "first\n"
    assert [p.name for p in tmp_path.iterdir()] == ["f.jsonl"]  # no temporary left behind


def _rewrite(path: Path, change: Callable[[list[str]], list[str]]) -> None:
    path.write_text("".join(line + "\n" for line in change(_lines(path))), encoding="utf-8")


FROZEN = "frozen/regression-20261130.jsonl"
MANIFEST = "frozen/regression-20261130.json"


def _edit(lines: list[str]) -> list[str]:
    lines[1] = lines[1].replace('"beta"', '"beta!"')
    return lines


TAMPERS: dict[str, tuple[Callable[[Path], None], str, int | None, str]] = {
    # name: (edit the set folder, file named, line named, message fragment)
    "frozen line edited": (lambda d: _rewrite(d / FROZEN, _edit), FROZEN, 2, "edited or removed"),
    "frozen line deleted": (lambda d: _rewrite(d / FROZEN, lambda ls: ls[:1] + ls[2:]), FROZEN, 2,
                            "edited or removed"),
    "frozen lines reordered": (lambda d: _rewrite(d / FROZEN, lambda ls: [ls[1], ls[0], ls[2]]), FROZEN, 1,
                               "reordered"),
    "frozen file truncated": (lambda d: (d / FROZEN).write_bytes((d / FROZEN).read_bytes()[:-20]), FROZEN, 3,
                              "cut off"),
    "frozen line appended": (lambda d: _rewrite(d / FROZEN, lambda ls: ls + [ls[0]]), FROZEN, 4, "added"),
    "frozen file deleted": (lambda d: (d / FROZEN).unlink(), FROZEN, None, "missing"),
    "manifest deleted": (lambda d: (d / MANIFEST).unlink(), FROZEN, None, "without a manifest"),
    "manifest garbled": (lambda d: (d / MANIFEST).write_text("{"), MANIFEST, None, "not a freeze manifest"),
    "cases line edited": (lambda d: _rewrite(d / "cases.jsonl", _edit), "cases.jsonl", 2, "edited or removed"),
    "cases line removed": (lambda d: _rewrite(d / "cases.jsonl", lambda ls: ls[:2] + ls[3:]), "cases.jsonl", 3,
                           "edited or removed"),
    "cases lines reordered": (lambda d: _rewrite(d / "cases.jsonl", lambda ls: [ls[2], ls[0], ls[1], ls[3]]),
                              "cases.jsonl", 1, "reordered"),
    "frozen case vanished": (lambda d: _rewrite(d / "cases.jsonl", lambda ls: ls[1:]), FROZEN, 1,
                             "'alpha' no longer exists"),
}


@pytest.mark.parametrize("kind", list(TAMPERS))
def test_verify_catches_every_kind_of_tampering(frozen_ws, run_cli, kind: str) -> None:
    tamper, where, line, fragment = TAMPERS[kind]
    folder = frozen_ws.question_set().root
    tamper(folder)
    # No checkpoint was taken, so only the freeze manifest can catch it.
    assert load_checkpoint(frozen_ws.question_set()) is None
    (report,) = verify_workspace(frozen_ws, ["main"])
    assert not report.ok
    hits = [p for p in report.problems if p.fatal and p.path == str(folder / where) and fragment in p.message]
    assert hits, [str(p) for p in report.problems]
    assert hits[0].line == line, str(hits[0])
    result = run_cli(["verify"], cwd=frozen_ws.root)
    assert result.exit_code == 1 and fragment in " ".join(result.output.split())
    assert run_cli(["freezes"], cwd=frozen_ws.root).exit_code == 1


def test_deleting_an_earlier_freeze_or_dropping_a_case_is_caught(frozen_ws) -> None:
    folder = frozen_ws.question_set().root / "frozen"
    later = freeze(frozen_ws, now=DAY)
    manifest = json.loads(later.manifest_path.read_text())
    manifest["query_ids"].remove("beta")
    later.manifest_path.write_text(json.dumps(manifest))
    (folder / "regression-20261130.json").unlink()
    (folder / "regression-20261130.jsonl").unlink()
    (report,) = verify_workspace(frozen_ws, ["main"])
    messages = [str(p) for p in report.problems if p.fatal]
    assert any("regression-20261130.json: earlier freeze named by" in m for m in messages), messages
    manifest["query_ids"] = ["alpha"]
    later.manifest_path.write_text(json.dumps(manifest))
    (folder / "regression-20261130.json").write_text(json.dumps({**manifest, "query_ids": ["alpha", "beta"]}))
    messages = [str(p) for p in verify_workspace(frozen_ws, ["main"])[0].problems]
    assert any("drops 1 case(s)" in m and "beta" in m for m in messages), messages


def test_freezes_command_lists_counts_and_status(frozen_ws, run_cli) -> None:
    result = run_cli(["freezes", "--json"], cwd=frozen_ws.root)
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)
    assert row["name"] == "regression" and row["cases"] == 3 and row["ok"] is True
    assert row["count_per_slice"]["negative"] == 1
    assert "regression-20261130" in run_cli(["freezes"], cwd=frozen_ws.root).output
    made = run_cli(["export", "--freeze", "regression", "--json"], cwd=frozen_ws.root)
    assert made.exit_code == 0 and json.loads(made.stdout)["cases"] == 3
    assert len(list_freezes(frozen_ws)) == 2


def test_freeze_refuses_to_build_on_a_tampered_freeze(frozen_ws) -> None:
    frozen = frozen_ws.question_set().root / FROZEN
    _rewrite(frozen, lambda ls: ls[:2])
    with pytest.raises(CuratorError, match="does not match its manifest"):
        freeze(frozen_ws, now=DAY)


# ---- real git: two reviewers' branches merge with the union driver ------------------------


def _git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                          text=True, env=env).stdout


def test_two_branches_union_merge_and_verify_passes(frozen_ws, run_cli) -> None:
    root = frozen_ws.root
    qs = frozen_ws.question_set()
    assert "cases.jsonl merge=union" in (root / ".gitattributes").read_text()
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "shared start")
    _git(root, "checkout", "-qb", "ana")
    ana = [qs.add(_case(f"ana {i}", tags=["regression"])).query_id for i in range(3)]
    qs.revise("gamma", {"query": "gamma by ana"}, action="edit", reason="wording")
    ana_freeze = freeze(frozen_ws, name="ana", now=DAY)  # taken on ana's branch, before merging
    assert run_cli(["verify"], cwd=root).exit_code == 0  # checkpoint on ana's branch
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "ana's cases")
    _git(root, "checkout", "-q", "main")
    _git(root, "checkout", "-qb", "ben")
    ben = [qs.add(_case(f"ben {i}")).query_id for i in range(2)]
    qs.retire("beta", reason="duplicate")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "ben's cases")
    # Merge into ben's branch: ben's lines come first, so ana's freeze and checkpoint are
    # no longer byte prefixes of cases.jsonl, only subsequences.
    _git(root, "merge", "-q", "--no-edit", "ana")  # union driver: no conflict
    assert "<<<<<<<" not in qs.cases_path.read_text()

    (report,) = verify_workspace(frozen_ws, ["main"])
    assert report.ok, [str(p) for p in report.problems]
    assert any("union merge" in note and "freeze" in note for note in report.notes), report.notes
    cases = qs.read().cases
    assert set(ana + ben + ["alpha", "beta", "gamma", "delta"]) == set(cases)
    assert cases["gamma"].query == "gamma by ana" and cases["beta"].status == "retired"
    assert len(_lines(qs.cases_path)) == len(_lines(qs.changelog_path)) == 4 + 4 + 3
    # The set as of ana's freeze is read back from its (no longer contiguous) prefix.
    as_of = {c.query_id for c in select_cases(frozen_ws, None, Selection(as_of=ana_freeze.path.stem))[0]}
    assert as_of == set(ana) | {"alpha", "beta", "gamma", "delta"}
    assert run_cli(["freezes"], cwd=root).exit_code == 0


def test_verify_revalidates_unless_the_checkpoint_is_this_versions_and_intact(ws) -> None:
    # verify skips the schema check of lines a passing verify of this curator version
    # checked (bench/export_verify.py); anything else is checked in full.
    qs = ws.question_set()
    qs.add(_case("one"))
    qs.revise("one", {"query": "one, again"}, action="edit", reason="wording")
    qs.add(_case("two", tags=["x"]))
    (report,) = verify_workspace(ws, ["main"])
    assert report.ok and load_checkpoint(qs)["curator"]
    qs.add(_case("three"))
    (report,) = verify_workspace(ws, ["main"])
    assert report.ok and (report.cases, report.active, report.lines) == (3, 3, 4)
    # A bad first line (an unknown field) with a checkpoint from another curator version.
    lines = _lines(qs.cases_path)
    lines[0] = lines[0].replace('"rev":1,', '"rev":1,"bogus":1,')
    qs.cases_path.write_text("".join(line + "\n" for line in lines))
    checkpoint = load_checkpoint(qs)
    data = qs.cases_path.read_bytes()
    checkpoint["files"]["cases.jsonl"].update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    qs.checkpoint_path.write_text(json.dumps({**checkpoint, "curator": "0.0.0"}))
    (report,) = verify_workspace(ws, ["main"])
    assert any(p.line == 1 and "bogus" in p.message for p in report.problems), report.problems

"""Stable passage ids (issue 20 point 3) across a real git history, labels whose id the
current corpus lacks (`stale_labels`, verify, status), `corpus list` and the id upgrade."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

from curator.corpus import add_paths
from curator.corpus.labels import stale_labels
from curator.corpus.migrate import needs_upgrade, upgrade_ids
from curator.models import Case
from curator.workspace import Workspace
from tests.conftest import write

DOC = "runbooks/CephClusterNearFull.md"


def _git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True, env=env).stdout


def _words(n: int, word: str) -> str:
    """About n words in paragraphs of 50 (a chunk is cut at paragraph boundaries)."""
    words = [f"{word}{i % 7}" for i in range(n)]
    return "\n\n".join(" ".join(words[i : i + 50]) + "." for i in range(0, n, 50)) + "\n"


def _runbook(title: str, meaning: int, diagnosis: int) -> str:
    return (f"# {title}\n\n## Meaning\n\n{_words(meaning, 'full')}\n## Diagnosis\n\n"
            f"{_words(diagnosis, 'check')}\n## Mitigation\n\nAdd capacity.\n")


def _commit(repo: Path, text: str, message: str, when: str) -> None:
    write(repo, {DOC: text})
    _git(repo, "add", ".")
    env_when = {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", message], check=True, capture_output=True,
                   env={**os.environ, **env_when, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"})


def _ids(ws: Workspace, revision: str | None = None) -> list[str]:
    rows = ws.passage_listing(DOC, history=revision is not None)
    return [r["id"] for r in rows if (r["current"] if revision is None else r["revision"] == revision)]


def test_ids_hold_as_a_document_grows_past_the_limits_and_gains_deprecated(ws: Workspace, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _commit(repo, _runbook("CephClusterNearFull", 20, 20), "small", "2024-01-01T00:00:00Z")  # one passage
    _commit(repo, _runbook("CephClusterNearFull", 1200, 1200), "grown", "2024-02-01T00:00:00Z")  # past max
    _commit(repo, _runbook("CephClusterNearFull [Deprecated]", 1200, 1200), "deprecated", "2024-03-01T00:00:00Z")
    revs = _git(repo, "log", "--format=%H").split()[::-1]
    add_paths(ws, [repo], history=True)

    small, grown, deprecated = (_ids(ws, rev) for rev in revs)
    whole = f"{DOC}#cephclusternearfull"
    assert small == [whole]
    # The big document has more passages, and the one that starts at the title keeps its id
    # (the title has no text of its own: it leads "Meaning", and is still named by the title).
    assert grown[0] == whole and len(grown) > 3
    assert {f"{DOC}#diagnosis", f"{DOC}#mitigation"} <= set(grown)
    assert deprecated == grown  # "[Deprecated]" renamed nothing
    assert _ids(ws) == grown
    current = ws.passage(whole)
    assert current is not None and current.heading_path[0] == "CephClusterNearFull [Deprecated]"


def _set_with(ws: Workspace, labels: dict[str, str]) -> list[Case]:
    qs = ws.question_set("main")
    return [qs.add({"query": query, "slice": "paraphrase", "relevant": [{"id": pid, "role": "primary"}]})
            for query, pid in labels.items()]


def test_labels_on_ids_the_current_corpus_lacks_are_listed(ws: Workspace, tmp_path: Path, run_cli) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _commit(repo, _runbook("CephClusterNearFull", 20, 1200), "diagnosis big", "2024-01-01T00:00:00Z")
    add_paths(ws, [repo], history=True)
    assert f"{DOC}#diagnosis" in _ids(ws)
    diagnose, *_ = _set_with(ws, {"how to diagnose a near full cluster": f"{DOC}#diagnosis",
                   "what does near full mean": f"{DOC}#cephclusternearfull",
                   "typo id": f"{DOC}#nowhere"})
    _commit(repo, _runbook("CephClusterNearFull", 20, 20), "diagnosis shrank", "2024-02-01T00:00:00Z")
    add_paths(ws, [repo], history=True)
    assert _ids(ws) == [f"{DOC}#cephclusternearfull"]  # Diagnosis merged into the one passage

    stale = stale_labels(ws, ws.question_set("main").read().cases.values())
    by_id = {s.passage_id: s for s in stale}
    assert set(by_id) == {f"{DOC}#diagnosis", f"{DOC}#nowhere"}
    assert by_id[f"{DOC}#diagnosis"].in_history and by_id[f"{DOC}#diagnosis"].replacement == f"{DOC}#cephclusternearfull"
    assert not by_id[f"{DOC}#nowhere"].in_history

    workspace = str(ws.root)
    status = run_cli(["-w", workspace, "status", "--json"])
    listed = json.loads(status.output)["sets"]["main"]["stale_labels"]
    assert {row["passage_id"] for row in listed} == {f"{DOC}#diagnosis", f"{DOC}#nowhere"}
    text = run_cli(["-w", workspace, "status"]).output
    assert "only in history; now in" in text
    verify = json.loads(run_cli(["-w", workspace, "verify", "--json"]).output)[0]
    messages = [p["message"] for p in verify["problems"]]
    assert any(m.startswith(f"{diagnose.query_id}: passage '{DOC}#diagnosis' is only in history") for m in messages)
    assert verify["unknown_passage_ids"] == {f"{DOC}#nowhere": ["typo-id"]}


def test_corpus_list_shows_ids_revisions_and_current(ws: Workspace, tmp_path: Path, run_cli) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _commit(repo, _runbook("CephClusterNearFull", 20, 1200), "big", "2024-01-01T00:00:00Z")
    _commit(repo, _runbook("CephClusterNearFull", 20, 20), "small", "2024-02-01T00:00:00Z")
    add_paths(ws, [repo], history=True)
    out = run_cli(["-w", str(ws.root), "corpus", "list", "runbooks/", "--history", "--json"])
    rows = json.loads(out.output)
    assert {"id", "revision", "current"} <= set(rows[0])
    history_only = {r["id"] for r in rows if not r["current"]} - {r["id"] for r in rows if r["current"]}
    assert f"{DOC}#diagnosis" in history_only
    current = json.loads(run_cli(["-w", str(ws.root), "corpus", "list", "--json"]).output)
    assert [r["id"] for r in current] == [f"{DOC}#cephclusternearfull"] and all(r["current"] for r in current)
    assert "1 current" in run_cli(["-w", str(ws.root), "corpus", "list"]).output


def test_upgrade_recuts_an_old_workspace_and_relabels_through_history(ws: Workspace, tmp_path: Path) -> None:
    """A workspace cut by chunker 1 (whose big document named its first passage after the
    first subsection, and whose decorated title renamed the id) moves to the current ids;
    labels on the old ids get `relabel` revisions with reason `id change`."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _commit(repo, _runbook("CephClusterNearFull", 1200, 20), "big", "2024-01-01T00:00:00Z")
    add_paths(ws, [repo], history=True)
    new_id = f"{DOC}#cephclusternearfull"
    assert _ids(ws)[0] == new_id
    # Make it look as chunker 1 stored it: the first passage named after "Meaning".
    db = sqlite3.connect(ws.root / ".curator" / "workspace.db")
    db.execute("UPDATE passages SET id = ? WHERE id = ?", [f"{DOC}#meaning", new_id])
    db.execute("DELETE FROM meta WHERE key = 'chunker_version'")
    db.commit()
    db.close()
    meaning, mitigate = _set_with(ws, {"what does near full mean": f"{DOC}#meaning",
                                       "how to mitigate": f"{DOC}#mitigation"})
    assert needs_upgrade(ws)

    result = upgrade_ids(ws)
    assert result.mapping == {f"{DOC}#meaning": new_id}
    assert result.relabelled == [("main", meaning.query_id)]
    assert _ids(ws)[0] == new_id and not needs_upgrade(ws)
    qs = ws.question_set("main")
    case = qs.read().cases[meaning.query_id]
    assert case.rev == 2 and [r.id for r in case.relevant] == [new_id]
    last = qs.changelog()[-1]
    assert (last.action, last.reason, last.query_id) == ("relabel", "id change", meaning.query_id)
    assert qs.read().cases[mitigate.query_id].rev == 1  # its id did not change
    assert ws.search("meaning full0")  # the re-cut passages are searchable
    assert upgrade_ids(ws).mapping == {}  # a second run changes nothing

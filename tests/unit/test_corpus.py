"""Corpus import: documents, JSONL, BEIR, revision files, git, bad input, search."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
from pathlib import Path

import pytest

from curator.corpus import add_paths
from curator.errors import InputError
from tests.conftest import write

DHL_V1 = """---
title: DHL Express
owner: carriers-team
---
# DHL Express

## Cutoff times

Parcels handed over before the weekday cutoff of 17:30 leave the same day.
Saturday pickups close at 12:00.

## Label format

Labels are ZPL II at 203 dpi. A rejected label raises CARRIER-E1042.

```bash
curl -X POST https://api.example.com/labels
# Not a heading
```
"""

DHL_V2 = DHL_V1.replace("17:30", "18:00")


def _git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True, env=env).stdout


def test_markdown_folder_gets_readable_ids_and_heading_paths(ws, tmp_path: Path) -> None:
    docs = write(tmp_path / "docs", {"carriers/dhl.md": DHL_V1, "faq.txt": "Plain text answer.\n\nSecond paragraph."})
    report = add_paths(ws, [docs])
    assert report.documents_new == 2 and not report.skipped
    ids = {p.id for p in ws.passages()}
    assert any(i.startswith("carriers/dhl.md#") for i in ids)
    assert any(i.startswith("faq.txt#") for i in ids)
    dhl = [p for p in ws.passages() if p.doc_id == "carriers/dhl.md"]
    assert dhl[0].title == "DHL Express"
    assert all("owner: carriers-team" not in p.text for p in dhl)  # front matter is metadata
    assert any("Not a heading" in p.text for p in dhl)
    assert all(p.heading_path and p.heading_path[0] == "DHL Express" for p in dhl)


def test_reimport_unchanged_changes_nothing(ws, tmp_path: Path) -> None:
    docs = write(tmp_path / "docs", {"carriers/dhl.md": DHL_V1})
    add_paths(ws, [docs])
    before = ws.db.execute("SELECT count(*), max(rowid) FROM passages").fetchone()
    report = add_paths(ws, [docs])
    assert report.documents_unchanged == 1 and report.passages_added == 0
    assert ws.db.execute("SELECT count(*), max(rowid) FROM passages").fetchone() == before


def test_changed_file_becomes_current_and_old_revision_is_kept(ws, tmp_path: Path) -> None:
    docs = write(tmp_path / "docs", {"carriers/dhl.md": DHL_V1})
    add_paths(ws, [docs])
    old_rev = next(ws.passages()).revision
    path = docs / "carriers/dhl.md"
    path.write_text(DHL_V2)
    os.utime(path, (path.stat().st_mtime + 10, path.stat().st_mtime + 10))
    add_paths(ws, [docs])
    hits = ws.search("weekday cutoff")
    assert hits and hits[0].revision != old_rev
    assert "18:00" in ws.passage(hits[0].id).text
    assert "17:30" in ws.passage(hits[0].id, old_rev).text
    assert ws.corpus_stats().revisions == 2
    assert [c for _, _, c in ws.revisions_of(hits[0].id)] == [True, False]
    # old revision is not searchable any more
    assert not ws.search("17:30")


def test_git_revisions_and_history(ws, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write(repo, {"docs/carriers/dhl.md": DHL_V1})
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "v1")
    first = _git(repo, "rev-parse", "HEAD").strip()
    (repo / "docs/carriers/dhl.md").write_text(DHL_V2)
    _git(repo, "commit", "-qam", "v2")
    second = _git(repo, "rev-parse", "HEAD").strip()

    add_paths(ws, [repo / "docs"])
    current = {p.revision for p in ws.passages()}
    assert current == {second}
    assert ws.corpus_stats().revisions == 1

    report = add_paths(ws, [repo / "docs"], history=True)
    assert report.history_revisions == 1
    cutoff = ws.search("weekday cutoff")[0].id
    assert [r for r, _, _ in ws.revisions_of(cutoff)] == [second, first]
    assert ws.passage(cutoff).revision == second

    # --history on a fresh workspace gives the same answer (commits may share a second)
    from curator.workspace import Workspace

    fresh = Workspace.init(tmp_path / "fresh")
    add_paths(fresh, [repo / "docs"], history=True)
    assert [r for r, _, _ in fresh.revisions_of(cutoff)] == [second, first]
    fresh.close()

    # an uncommitted edit is identified by its content hash, not the last commit
    (repo / "docs/carriers/dhl.md").write_text(DHL_V2 + "\n## Contacts\n\nhub@example.com\n")
    add_paths(ws, [repo / "docs"])
    assert ws.passage(cutoff).revision not in (first, second)


def test_revisions_jsonl_imports_history(ws, tmp_path: Path) -> None:
    records = [
        {"path": "carriers/dhl.md", "revision": "a" * 40, "committed_at": "2026-10-01T00:00:00Z", "text": DHL_V1},
        {"path": "carriers/dhl.md", "revision": "b" * 40, "committed_at": "2026-11-01T00:00:00+01:00", "text": DHL_V2},
    ]
    path = tmp_path / "revisions.jsonl.gz"
    with gzip.open(path, "wt") as fh:
        fh.write("\n".join(json.dumps(r) for r in reversed(records)) + "\n")  # newest first
    add_paths(ws, [path])
    cutoff = ws.search("weekday cutoff")[0]
    assert cutoff.revision == "b" * 40
    assert [r for r, _, _ in ws.revisions_of(cutoff.id)] == ["b" * 40, "a" * 40]


def test_prechunked_jsonl_keeps_ids_and_reports_bad_lines(ws, tmp_path: Path) -> None:
    lines = [
        json.dumps({"id": "doc-1", "text": "The DHL cutoff is 18:00.", "title": "DHL", "url": "https://x/1"}),
        "{broken json",
        json.dumps({"id": "doc-2", "text": "UPS picks up at 16:00."}),
        json.dumps({"id": "doc-1", "text": "duplicate"}),
        json.dumps({"text": "no id"}),
        json.dumps({"id": "doc-3", "text": "   "}),
    ]
    path = write(tmp_path, {"corpus.jsonl": "\n".join(lines) + "\n"}) / "corpus.jsonl"
    report = add_paths(ws, [path])
    assert {p.id for p in ws.passages()} == {"doc-1", "doc-2"}
    assert ws.passage("doc-1").url == "https://x/1"
    skipped = {line: why for _, line, why in report.skipped}
    assert set(skipped) == {2, 4, 5, 6}
    assert "JSON" in skipped[2] and "duplicate id 'doc-1' (first on line 1)" in skipped[4]


def test_beir_corpus(ws, tmp_path: Path) -> None:
    path = write(tmp_path, {"corpus.jsonl": json.dumps({"_id": "b1", "title": "T", "text": "beir passage text"}) + "\n"})
    add_paths(ws, [path / "corpus.jsonl"])
    assert ws.passage("b1").title == "T"
    assert ws.search("beir")[0].id == "b1"


def test_bad_files_are_reported_and_good_ones_still_import(ws, tmp_path: Path) -> None:
    docs = write(
        tmp_path / "docs",
        {
            "good.md": "# Good\n\nUseful text about manifests.",
            "binary.md": b"\x89PNG\x00\x00data",
            "latin1.md": "caf\xe9".encode("latin-1"),
            "empty.md": "  \n\n",
        },
    )
    unreadable = docs / "secret.md"
    unreadable.write_text("# Secret")
    unreadable.chmod(0)
    report = add_paths(ws, [docs])
    reasons = {Path(p).name: why for p, _, why in report.skipped}
    assert "binary" in reasons["binary.md"]
    assert "invalid UTF-8" in reasons["latin1.md"]
    assert "empty" in reasons["empty.md"]
    if os.geteuid() != 0:  # root can read anything
        assert "cannot read" in reasons["secret.md"]
    assert ws.search("manifests")[0].id.startswith("good.md#")


def test_missing_path_is_a_clear_error(ws, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        add_paths(ws, [tmp_path / "nope"])


def test_search_ranks_verbatim_identifier_first_and_highlights(ws, tmp_path: Path) -> None:
    docs = write(
        tmp_path / "docs",
        {
            "errors.md": "# Errors\n\n## CARRIER-E1042\n\nThe carrier rejected the label.\n\n"
            + "## CARRIER-E2001\n\n" + "Carrier timeout while fetching rates. " * 40,
            "other.md": "# Other\n\nE1042 appears alone here, and carrier elsewhere.",
        },
    )
    add_paths(ws, [docs])
    hits = ws.search("CARRIER-E1042")
    assert hits[0].id.startswith("errors.md#")
    assert "\x02" in hits[0].snippet  # highlight marks
    assert ws.search("") == [] and ws.search("!!!") == []
    assert ws.search('quote " and (parens) AND NOT') is not None  # no FTS syntax errors


def test_resolve_passage_ids_maps_heading_anchors_to_their_passage(ws, tmp_path: Path) -> None:
    docs = write(
        tmp_path / "docs",
        {"errors.md": "# Errors\n\n## CARRIER-E1042\n\nAddress rejected.\n\n## CARRIER-E2001\n\nTimeout.\n"},
    )
    add_paths(ws, [docs])
    (only,) = [p.id for p in ws.passages()]  # small sections merge into one passage
    resolved = ws.resolve_passage_ids([only, "errors.md#carrier-e1042", "errors.md#nope", "other.md#x"])
    assert resolved == {only: only, "errors.md#carrier-e1042": only}


def test_search_skips_words_too_common_to_rank_and_refreshes_stats_lazily(ws, tmp_path: Path) -> None:
    from curator.storage.search import SEARCH_POSTINGS, snippet

    n = SEARCH_POSTINGS + 200
    lines = [json.dumps({"id": f"p{i}", "text": f"prometheus metric number {i} gauge"}) for i in range(n)]
    lines.append(json.dumps({"id": "rare", "text": "prometheus remote write zstandard compression"}))
    path = write(tmp_path, {"big.jsonl": "\n".join(lines) + "\n"}) / "big.jsonl"
    add_paths(ws, [path])
    assert ws.meta("term_stats") == "stale"
    hits = ws.search("prometheus zstandard")
    assert ws.meta("term_stats") is None
    assert hits[0].id == "rare" and len(hits) == 1  # 'prometheus' (in every passage) was not scored
    assert "\x02zstandard\x03" in hits[0].snippet and "\x02prometheus\x03" not in hits[0].snippet
    # only common words: the two rarest together still find passages
    assert len(ws.search("prometheus gauge", limit=5)) == 5
    text = "one two three four five six seven eight nine ten"
    assert snippet(text, {"nine"}, size=4) == "…seven eight \x02nine\x03 ten"

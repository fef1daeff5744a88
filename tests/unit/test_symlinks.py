"""Symlinks in a corpus folder and in a log glob: followed inside the folder, the others
skipped with a named reason (exit 3), nothing imported before them lost, no traceback."""

from __future__ import annotations

import json
import os
from pathlib import Path

from curator.corpus import add_paths
from curator.errors import EXIT_PARTIAL


def _doc(path: Path, title: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# {title}\n\nHow to handle {title.lower()} when it happens in production.\n")
    return path


def _corpus(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    for name in ("alpha", "bravo", "charlie"):
        _doc(root / f"{name}.md", name.title())
    _doc(root / "sub" / "delta.md", "Delta")
    outside = _doc(tmp_path / "elsewhere" / "secret.md", "Outside")
    (root / "link-to-delta.md").symlink_to(root / "sub" / "delta.md")  # inside: followed, once
    (root / "outside.md").symlink_to(outside)
    (root / "outside-folder").symlink_to(outside.parent, target_is_directory=True)
    (root / "loop.md").symlink_to(root / "loop.md")
    (root / "dangling.md").symlink_to(root / "gone.md")
    return root


def test_corpus_add_follows_links_inside_and_skips_the_others_by_name(ws, tmp_path: Path) -> None:
    report = add_paths(ws, [_corpus(tmp_path)])
    assert report.documents_new == 4  # alpha, bravo, charlie, sub/delta (the link leads to it: once)
    reasons = {Path(p).name: why for p, _line, why in report.skipped}
    assert set(reasons) == {"outside.md", "outside-folder", "loop.md", "dangling.md"}
    assert "outside" in reasons["outside.md"] and "outside" in reasons["outside-folder"]
    assert "loop" in reasons["loop.md"] and "dangling" in reasons["dangling.md"]
    assert ws.corpus_stats().documents == 4


def test_corpus_add_cli_exits_3_and_keeps_what_it_imported(ws, tmp_path: Path, run_cli) -> None:
    root = _corpus(tmp_path)
    result = run_cli(["-w", str(ws.root), "corpus", "add", str(root), "--json"])
    assert result.exit_code == EXIT_PARTIAL
    out = json.loads(result.stdout)
    assert out["documents_new"] == 4 and len(out["skipped"]) == 4
    assert "Traceback" not in result.output
    assert ws.corpus_stats().documents == 4


def test_import_logs_glob_with_a_dangling_symlink_imports_the_rest(ws, tmp_path: Path, run_cli) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.jsonl").write_text(json.dumps({"query": "dhl cutoff time"}) + "\n")
    (logs / "b.jsonl").write_text(json.dumps({"query": "ups pickup window"}) + "\n")
    (logs / "c.jsonl").symlink_to(logs / "rotated-away.jsonl")
    (logs / "d.jsonl").symlink_to(logs / "d.jsonl")
    result = run_cli(["-w", str(ws.root), "import-logs", os.path.join(str(logs), "*.jsonl"), "--json"])
    assert result.exit_code == EXIT_PARTIAL, result.output
    summary = json.loads(result.stdout)
    status = {Path(f["path"]).name: (f["status"], f["reason"]) for f in summary["files"]}
    assert status["a.jsonl"][0] == status["b.jsonl"][0] == "imported"
    assert status["c.jsonl"][0] == "skipped" and "dangling symlink" in status["c.jsonl"][1]
    assert status["d.jsonl"][0] == "skipped" and "loop" in status["d.jsonl"][1]
    assert summary["queued"] == 2
    text = run_cli(["-w", str(ws.root), "import-logs", str(logs), "--dry-run"])  # a folder: the same
    assert text.exit_code == EXIT_PARTIAL and "c.jsonl: skipped, dangling symlink" in text.output

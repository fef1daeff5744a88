"""`curator demo`: a ready workspace built from the bundled logistics demo.

The bundle (`datasets/demo/` in the repository, `curator/_bundled/datasets/demo/` in a
wheel) holds the corpus, an older revision history, a search log, an example question
set, the demo's curator.toml and sample retriever runs. The demo workspace also gets
mined log queries, generated candidates and two stored runs.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from curator.corpus import add_paths
from curator.generate import generate
from curator.logs import import_logs
from curator.resources import bundled
from curator.scoring import score
from curator.workspace import Workspace

MARKER = ".curator-demo"


def demo_bundle() -> Path:
    return bundled("datasets") / "demo"


def build_demo(
    target: str | Path = "curator-demo", *, force: bool = False, progress: Callable[[str], None] | None = None
) -> Workspace:
    """Copy the demo into `target` and import it. An existing demo is reused (its review
    work kept) unless `force`; a folder that is not a demo is never overwritten."""
    say = progress or (lambda _msg: None)
    target = Path(target).resolve()
    bundle = demo_bundle()
    if target.exists() and any(target.iterdir()):
        if not (target / MARKER).exists():
            from curator.errors import CuratorError

            raise CuratorError(
                f"{target} exists and is not a curator demo; refusing to write into it.",
                "Pick another folder: `curator demo DIR`.",
            )
        if not force:
            say(f"Reusing the demo in {target} (use --force to rebuild it)")
            return Workspace.open(target)
        shutil.rmtree(target)
    target.mkdir(parents=True)
    (target / MARKER).write_text("built by `curator demo`; `curator demo --force` rebuilds it\n")
    say("Copying the demo corpus, logs and question set")
    for name, copy_as in (("corpus", "corpus"), ("corpus-history.jsonl", "corpus-history.jsonl"),
                          ("logs", "logs"), ("retriever-runs", "retriever-runs"),
                          ("curator.toml", "curator.toml"), ("sets", "datasets")):
        if (bundle / name).is_dir():
            shutil.copytree(bundle / name, target / copy_as)
        elif (bundle / name).exists():
            shutil.copy2(bundle / name, target / copy_as)
    ws = Workspace.init(target)
    say("Importing the corpus and its revision history")
    add_paths(ws, [target / "corpus-history.jsonl"])
    add_paths(ws, [target / "corpus"])
    say("Generating exact-identifier candidates offline (--backend identifiers)")
    generate(ws, backend="identifiers", passages=40, seed=7)
    say("Mining the demo search log")
    import_logs(ws, [target / "logs" / "search.jsonl"])
    # Two sample runs (BM25, then `dense-v2` with failures of every kind), so `curator
    # triage` has a run with earlier history out of the box.
    for name, label in (("bm25.jsonl", "bm25"), ("triage-example.jsonl", "dense-v2")):
        if (target / "retriever-runs" / name).is_file():
            say(f"Scoring the sample run {name}")
            score(ws.existing_set(), target / "retriever-runs" / name, workspace=ws, label=label, write=True)
    return ws


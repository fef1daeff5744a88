"""`curator demo`: a ready workspace built from the bundled logistics demo.

The bundle (`datasets/demo/` in the repository, `curator/_bundled/datasets/demo/` in a
wheel) holds the corpus, an older revision history, a search log, an example question
set, the demo's curator.toml and sample retriever runs.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from curator.corpus import add_paths
from curator.resources import bundled
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
    shutil.copytree(bundle / "corpus", target / "corpus")
    shutil.copy2(bundle / "corpus-history.jsonl", target / "corpus-history.jsonl")
    if (bundle / "logs").is_dir():
        shutil.copytree(bundle / "logs", target / "logs")
    if (bundle / "retriever-runs").is_dir():
        shutil.copytree(bundle / "retriever-runs", target / "retriever-runs")
    if (bundle / "curator.toml").exists():
        shutil.copy2(bundle / "curator.toml", target / "curator.toml")
    if (bundle / "sets").is_dir():
        shutil.copytree(bundle / "sets", target / "datasets")
    ws = Workspace.init(target)
    say("Importing the corpus and its revision history")
    add_paths(ws, [target / "corpus-history.jsonl"])
    add_paths(ws, [target / "corpus"])
    for step in DEMO_STEPS:
        step(ws, target, say)
    return ws


# Further steps that fill the demo (mined log queries, generated candidates, stored
# runs); each is `step(ws, target, say)`.
DEMO_STEPS: list[Callable[[Workspace, Path, Callable[[str], None]], None]] = []


def _demo_generate(ws: Workspace, target: Path, say: Callable[[str], None]) -> None:
    from curator.generate import generate

    say("Generating exact-identifier candidates offline (--backend identifiers)")
    generate(ws, backend="identifiers", passages=40, seed=7)


DEMO_STEPS.append(_demo_generate)


def _import_demo_logs(ws: Workspace, target: Path, say: Callable[[str], None]) -> None:
    from curator.logs import import_logs

    say("Mining the demo search log")
    import_logs(ws, [target / "logs" / "search.jsonl"])


DEMO_STEPS.append(_import_demo_logs)


def _demo_triage_runs(ws: Workspace, target: Path, say: Callable[[str], None]) -> None:
    from curator.triage import demo_runs

    demo_runs(ws, target, say)


DEMO_STEPS.append(_demo_triage_runs)

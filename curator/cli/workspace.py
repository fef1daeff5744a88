"""`curator init`, `curator status`, `curator demo`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.markup import escape
from rich.table import Table

from curator.cli.main import cli, console, json_option, pass_ws, print_json

if TYPE_CHECKING:
    from curator.workspace import Workspace


@cli.command()
@click.argument("directory", default=".", type=click.Path(file_okay=False, path_type=Path))
def init(directory: Path) -> None:
    """Create a workspace in DIRECTORY (default: here).

    Writes curator.toml with commented defaults, datasets/, prompts/, runs/, the
    .curator/ database (ignored by git) and .gitattributes for merging question sets.
    Running it again keeps what is there.

    \b
    Example:
        curator init evals && cd evals && curator corpus add ../docs
    """
    from curator.workspace import Workspace

    existed = (directory / "curator.toml").exists()
    with Workspace.init(directory) as ws:
        verb = "Already a workspace" if existed else "Created workspace"
        console.print(f"{verb}: [bold]{ws.root}[/]")
        if not existed:
            console.print("Next: [cyan]curator corpus add PATH[/] to import documents.")


@cli.command()
@json_option
@pass_ws
def status(ws: Workspace, as_json: bool) -> None:
    """Show the corpus size, candidates by state, and cases per slice against targets.

    \b
    Example:
        curator status
        curator status --json | jq .sets
    """
    from curator.status import summary

    data = summary(ws)
    if as_json:
        print_json(data)
        return
    corpus = data["corpus"]
    console.print(f"[bold]Workspace[/] {data['workspace']}")
    console.print(
        f"[bold]Corpus[/]     {corpus['documents']} documents, {corpus['passages']} current passages, "
        f"{corpus['revisions']} revisions ({corpus['passages_all']} passages with history)"
    )
    states = data["candidates"]["by_state"]
    if states:
        parts = ", ".join(f"{n} {s}" for s, n in sorted(states.items()))
        sources = ", ".join(f"{n} from {s}" for s, n in sorted(data["candidates"]["by_source"].items()))
        console.print(f"[bold]Candidates[/] {parts} ({sources})")
    else:
        console.print("[bold]Candidates[/] none yet: [cyan]curator import-logs[/] or [cyan]curator generate[/]")
    if not data["sets"]:
        console.print(f"[bold]Sets[/]       none yet (the default set is [bold]{data['default_set']}[/])")
    for name, info in data["sets"].items():
        table = Table(title=f"set {name}: {info['active']} active, {info['retired']} retired", title_justify="left")
        table.add_column("slice")
        table.add_column("cases", justify="right")
        table.add_column("target", justify="right")
        table.add_column("detects", justify="right")  # smallest success@k difference (alpha 0.05, power 0.8)
        table.add_column("")
        for slice_name, counts in info["slices"].items():
            target = counts["target"]
            done = target is not None and counts["cases"] >= target
            bar = _bar(counts["cases"], target)
            table.add_row(
                slice_name, str(counts["cases"]), "-" if target is None else str(target),
                "-" if counts.get("min_detectable_difference") is None else f"±{counts['min_detectable_difference']:.2f}",
                f"[green]{bar}[/]" if done else f"[yellow]{bar}[/]",
            )
        console.print(table)
        state = info["verify"]
        if not state["ok"]:
            console.print(f"[bold red]FAILING verify:[/] {escape(state['first_problem'])}")
        for problem in info["problems"]:
            console.print(f"[yellow]warning:[/] {problem}")


def _bar(value: int, target: int | None, width: int = 20) -> str:
    if not target:
        return ""
    filled = min(width, round(width * value / target))
    return "█" * filled + "░" * (width - filled)


@cli.command()
@click.argument("directory", default="curator-demo", type=click.Path(file_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Rebuild DIRECTORY even if it already holds a demo.")
def demo(directory: Path, force: bool) -> None:
    """Build the bundled demo workspace in DIRECTORY (default ./curator-demo).

    Copies the logistics demo corpus (with revision history), its search log and an
    example question set, and imports them. Works offline; no API key needed.

    \b
    Example:
        curator demo && cd curator-demo && curator status
    """
    from curator.demo import build_demo

    ws = build_demo(directory, force=force, progress=lambda msg: console.print(f"[dim]{msg}[/]"))
    console.print(f"Demo workspace ready in [bold]{ws.root}[/]")
    ws.close()

"""`curator verify` and `curator sets`."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click
from rich.markup import escape

from curator.cli.main import cli, console, err_console, json_option, pass_ws, print_json
from curator.errors import CuratorError

if TYPE_CHECKING:
    from curator.workspace import Workspace


@cli.command()
@click.argument("set_names", nargs=-1, metavar="[SET]...")
@click.option("--strict", is_flag=True, help="Passage ids missing from the corpus are errors, not warnings.")
@json_option
@pass_ws
def verify(ws: Workspace, set_names: tuple[str, ...], strict: bool, as_json: bool) -> None:
    """Check question-set files: schema, revs, change log, passage ids, append-only history.

    Exits 1 (naming file and line) if a line is invalid, a rev skips, a change-log entry
    is missing, or an earlier line was edited, removed or reordered since the last
    checkpoint. A passing verify records a new checkpoint.

    \b
    Example:
        curator verify            # every set
        curator verify main --strict
    """
    from curator.verify import verify_workspace

    names = list(set_names) or ws.set_names()
    if not names:
        raise CuratorError("no question sets in this workspace yet", "Keep some candidates with `curator review`.")
    reports = verify_workspace(ws, names, strict=strict)
    failed = [r for r in reports if not r.ok]
    if as_json:
        print_json([r.to_dict() for r in reports])
    else:
        for report in reports:
            mark = "[green]ok[/]" if report.ok else "[bold red]FAILED[/]"
            console.print(f"{mark}  set [bold]{report.set_name}[/]: {report.active} active cases, {report.lines} lines")
            for problem in report.problems:
                colour = "red" if problem.fatal else "yellow"
                label = "error" if problem.fatal else "warning"
                err_console.print(f"  [{colour}]{label}:[/] {escape(str(problem))}", highlight=False)
            for note in report.notes:
                console.print(f"  [dim]{escape(note)}[/]")
    if failed:
        sys.exit(1)


@cli.command("sets")
@json_option
@pass_ws
def list_sets(ws: Workspace, as_json: bool) -> None:
    """List the workspace's question sets.

    \b
    Example:
        curator sets --json
    """
    rows = []
    for name in ws.set_names():
        result = ws.question_set(name).read()
        active = sum(1 for c in result.cases.values() if c.status == "active")
        rows.append({"set": name, "active": active, "cases": len(result.cases), "lines": result.lines})
    if as_json:
        print_json(rows)
        return
    if not rows:
        console.print("No question sets yet.")
    for row in rows:
        default = " (default)" if row["set"] == ws.config.default_set else ""
        console.print(f"[bold]{row['set']}[/]{default}: {row['active']} active of {row['cases']} cases")

"""`curator triage`: a run's failures in the app, or the cause table with --summary."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click
from rich import box
from rich.markup import escape
from rich.table import Table

from curator.cli.main import cli, console, json_option, pass_ws, print_json
from curator.cli.sets import check_sets, no_verify_option  # the verify gate (issue 19)
from curator.errors import CuratorError

if TYPE_CHECKING:
    from curator.workspace import Workspace


@cli.command()
@click.argument("run", metavar="[RUN_ARTEFACT]", required=False)
@click.option("--summary", "show_summary", is_flag=True,
              help="Print the failures grouped by cause and slice instead of opening the app.")
@click.option("--all", "include_decided", is_flag=True, help="Also show failures already triaged.")
@click.option("--reviewer", help="Your name in the files (default: [reviewer] or $USER).")
@json_option
@no_verify_option
@pass_ws
def triage(ws: Workspace, run: str | None, show_summary: bool, include_decided: bool, reviewer: str | None,
           as_json: bool, no_verify: bool) -> None:
    """Triage a scored run's failures: name each cause, fix labels, grow the regression set.

    RUN_ARTEFACT is a path, a name (or unique part of one) in runs/, `latest` or
    `previous`; default the newest. The app shows the failing cases worst slice first;
    keys 1-6 name the cause (bad label, missing chunk, synonym gap, stale metadata,
    ranking tie, retrieval miss). Press ? in the app for every key.

    \b
    Example:
        curator triage                        # the newest run, in the app
        curator triage dense-v2 --reviewer ana
        curator triage --summary latest       # count per cause and slice
        curator triage --summary latest --json
    """
    check_sets(ws, None, no_verify or show_summary)
    from curator.triage import load_artefact, summary

    artefact = load_artefact(ws, run)
    if show_summary or as_json:
        data = summary(ws, artefact)
        if as_json:
            print_json(data)
        else:
            _print_summary(data)
        return
    from curator.tui.keymap import check_keymap

    check_keymap(ws.config.keymap)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise CuratorError(
            "curator triage needs an interactive terminal (stdin and stdout are not a TTY).",
            "Run it in a terminal; `curator triage --summary` prints the cause table without one.",
        )
    from curator.tui.screens.triage import TriageApp

    app = TriageApp(ws, artefact, reviewer=reviewer, include_decided=include_decided)
    app.run()
    if app.exit_status():  # the app crashed (it said why): CI and scripts see it
        raise SystemExit(app.exit_status())


SHORT = {"exact_identifier": "exact", "multi_hop": "multi-hop"}


def _print_summary(data: dict[str, Any]) -> None:
    label = f" ({data['label']})" if data.get("label") else ""
    table = Table(title=f"{data['run']}{label}\nset {data['set']} · {data['failures']} failures, "
                  f"{data['triaged']} triaged", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("cause", no_wrap=True)
    for name in data["slices"]:
        table.add_column(SHORT.get(name, name), justify="right", no_wrap=True)
    table.add_column("total", justify="right")
    kinds = []
    for row in data["causes"]:
        untriaged = row["cause"] == "untriaged"
        style = "dim" if not row["total"] else ("bold" if untriaged else None)
        table.add_row(row["cause"].replace("_", " "), *[str(row["slices"][s] or "·") for s in data["slices"]],
                      str(row["total"]), style=style)
        if row["total"]:
            kinds.append(f"{row['cause'].replace('_', ' ')}: "
                         + ", ".join(f"{k} {n}" for k, n in row["failure_kinds"].items()))
    console.print(table)
    if kinds:
        console.print("[dim]failure kinds[/]  " + escape(" · ".join(kinds)), soft_wrap=True, highlight=False)
    if not data["failures"]:
        console.print("[green]no failing cases in this run[/]")

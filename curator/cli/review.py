"""`curator review`: the keyboard-driven review app."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from curator.cli.main import cli, pass_ws
from curator.cli.sets import check_sets, no_verify_option  # the verify gate (issue 19)
from curator.errors import CuratorError

if TYPE_CHECKING:
    from curator.workspace import Workspace


@cli.command()
@click.option("--set", "set_name", help="Question set to keep cases in (default: default_set).")
@click.option("--source", type=click.Choice(["logs", "generated", "manual", "all"]), default="all", show_default=True,
              help="Which candidates to review.")
@click.option("--slice", "slice_name", help="Only candidates suggested for this slice.")
@click.option("--reviewer", help="Your name in the files (default: [reviewer] or $USER).")
@no_verify_option
@pass_ws
def review(ws: Workspace, set_name: str | None, source: str, slice_name: str | None, reviewer: str | None,
           no_verify: bool) -> None:
    """Review candidates one card at a time: keep, bin or skip; label passages and slices.

    Every decision is written before the next card shows. Press ? in the app for every
    key; remap keys in curator.toml under [keymap].

    \b
    Example:
        curator review
        curator review --source logs --slice exact_identifier --reviewer ana
    """
    from curator.tui.keymap import check_keymap

    check_keymap(ws.config.keymap)  # a typo'd id or a key given twice: say so before the app starts
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise CuratorError(
            "curator review needs an interactive terminal (stdin and stdout are not a TTY).",
            "Run it in a terminal; `curator status` shows the queue without one.",
        )
    check_sets(ws, [set_name or ws.config.default_set], no_verify)
    from curator.tui.app import ReviewApp  # textual only now: the other commands start fast

    app = ReviewApp(ws, set_name=set_name, source=source, slice=slice_name, reviewer=reviewer)
    app.run()
    if app.return_code:  # the app crashed (textual printed why): CI and scripts see it
        raise SystemExit(app.return_code)

"""`curator review`: the keyboard-driven review app."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING

import click

from curator.cli.main import cli, pass_ws
from curator.cli.sets import check_sets, no_verify_option  # the verify gate (issue 19)
from curator.errors import CuratorError

if TYPE_CHECKING:
    from curator.secondpass import SecondPassSession
    from curator.workspace import Workspace


@cli.command()
@click.option("--set", "set_name", help="Question set to keep cases in (default: default_set).")
@click.option("--source", type=click.Choice(["logs", "generated", "manual", "all"]), default="all", show_default=True,
              help="Which candidates to review.")
@click.option("--slice", "slice_name", help="Only candidates suggested for this slice.")
@click.option("--reviewer", help="Your name in the files (default: [reviewer] or $USER).")
@click.option("--second-pass", is_flag=True,
              help="Blind second review of decided items (kept cases, binned candidates): a second judgment each.")
@click.option("--sample", type=click.IntRange(min=1), help="Second pass: only N items of the seeded order.")
@click.option("--seed", type=int, help="Second pass: the order's seed (default 0).")
@no_verify_option
@pass_ws
def review(ws: Workspace, set_name: str | None, source: str, slice_name: str | None, reviewer: str | None,
           second_pass: bool, sample: int | None, seed: int | None, no_verify: bool) -> None:
    """Review candidates one card at a time: keep, bin or skip; label passages and slices.

    Every decision is written before the next card shows. Press ? in the app for every
    key; remap keys in curator.toml under [keymap].

    \b
    Example:
        curator review
        curator review --source logs --slice exact_identifier --reviewer ana
        curator review --second-pass --sample 30 --seed 7 --reviewer bo
    """
    from curator.tui.keymap import check_keymap

    check_keymap(ws.config.keymap)  # a typo'd id or a key given twice: say so before the app starts
    if not second_pass and (sample is not None or seed is not None):
        raise click.UsageError("--sample and --seed belong to --second-pass")
    if second_pass and (slice_name or source != "all"):
        raise click.UsageError("--slice and --source would show the first decision: a second pass takes neither")
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise CuratorError(
            "curator review needs an interactive terminal (stdin and stdout are not a TTY).",
            "Run it in a terminal; `curator status` shows the queue without one.",
        )
    check_sets(ws, [set_name or ws.config.default_set], no_verify)
    session = _second_pass(ws, set_name, reviewer, sample, seed) if second_pass else None
    if ws.config.suggest.dense != "none":
        _load_dense(ws)
    from curator.tui.app import ReviewApp  # textual only now: the other commands start fast

    app = ReviewApp(ws, set_name=set_name, source=source, slice=slice_name, reviewer=reviewer, session=session)
    app.run()
    if app.exit_status():  # the app crashed (it said why): CI and scripts see it
        raise SystemExit(app.exit_status())


def _load_dense(ws: Workspace) -> None:
    """Load the dense retriever before the app starts, with a progress line, so every card,
    the first included, is pooled with it and none waits for torch (docs/review.md)."""
    from curator.cli.suggest import missing_vectors
    from curator.suggest.dense import preload

    click.echo(f"loading the dense retriever ({ws.config.suggest.embedding_model or '?'}) and the passage "
               "vectors...", err=True, nl=False)
    start = time.perf_counter()
    try:
        index = preload(ws)
    except CuratorError as exc:  # the cards are built from the other sources then
        click.echo(f" not loaded: {exc.message}; cards show the other sources", err=True)
        return
    count = len(index.ids) if index is not None else 0
    click.echo(f" {count:,} vectors, {time.perf_counter() - start:.1f} s", err=True)
    gap = missing_vectors(ws, index) if index is not None else None
    if gap:
        click.echo(f"dense: {gap}", err=True)


def _second_pass(ws: Workspace, set_name: str | None, reviewer: str | None, sample: int | None,
                 seed: int | None) -> SecondPassSession:
    """The blind second pass's session, or why there is nothing to judge."""
    from curator.secondpass import SecondPassSession, items, todo

    name = set_name or ws.config.default_set
    who = reviewer or ws.config.reviewer_name
    chosen = items(ws, name, sample=sample, seed=seed or 0)
    if not chosen:
        raise CuratorError(f"set {name!r} has no decided items to judge a second time",
                           "Keep or bin some candidates in a first review (curator review) first.")
    if not todo(ws, name, who, chosen):
        raise CuratorError(
            f"nothing left for {who} to judge in {name!r}: each of the {len(chosen)} item(s) was decided by "
            f"{who} the first time or already judged by {who}",
            "A second pass is another reviewer's: pass --reviewer NAME; `curator agreement` shows the figures.")
    return SecondPassSession(ws, set_name=name, reviewer=who, sample=sample, seed=seed or 0)

"""`curator serve`: the review app in a browser, through textual-serve.

The server runs no review itself: each browser tab that connects starts its own app
process (`curator serve-session`, hidden), with its own `ReviewSession` and so its own
lease owner, exactly as a second terminal running `curator review` would.
"""

from __future__ import annotations

import ipaddress
import os
import shlex
import socket
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from curator.cli.main import cli, console, pass_ws
from curator.cli.sets import check_sets, no_verify_option
from curator.errors import CuratorError

if TYPE_CHECKING:
    from curator.workspace import Workspace

F = TypeVar("F", bound=Callable[..., Any])
WEB_DRIVER = "textual.drivers.web_driver:WebDriver"  # what textual-serve sets for each app process


def is_loopback(host: str) -> bool:
    """True when every address `host` names is a loopback one (127.0.0.0/8, ::1); an
    unknown name is not."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except (socket.gaierror, UnicodeError):
        return False
    return bool(infos) and all(ipaddress.ip_address(str(info[4][0]).split("%")[0]).is_loopback for info in infos)


def session_command(ws: Workspace, *, set_name: str | None, source: str, slice_name: str | None,
                    reviewer: str | None) -> str:
    """The shell command textual-serve runs for each browser tab."""
    args = [sys.executable, "-m", "curator", "-w", str(ws.root), "serve-session", "--source", source]
    for option, value in (("--set", set_name), ("--slice", slice_name), ("--reviewer", reviewer)):
        if value:
            args += [option, value]
    return shlex.join(args)


_SESSION_OPTIONS = [
    click.option("--set", "set_name", help="Question set to keep cases in (default: default_set)."),
    click.option("--source", type=click.Choice(["logs", "generated", "manual", "all"]), default="all",
                 show_default=True, help="Which candidates to review."),
    click.option("--slice", "slice_name", help="Only candidates suggested for this slice."),
]


def _session_options(f: F) -> F:
    for option in reversed(_SESSION_OPTIONS):
        f = option(f)
    return f


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(1, 65535), help="Port to listen on.")
@click.option("--allow-remote", is_flag=True,
              help="Listen on a non-loopback address (there is no login: put a proxy with authentication in front).")
@click.option("--public-url", help="The address browsers use, when behind a proxy (e.g. https://review.example.org).")
@_session_options
@click.option("--reviewer", help="Every tab reviews as this name (default: each tab asks, offering [reviewer]).")
@no_verify_option
@pass_ws
def serve(ws: Workspace, host: str, port: int, allow_remote: bool, public_url: str | None,
          set_name: str | None, source: str, slice_name: str | None, reviewer: str | None,
          no_verify: bool) -> None:
    """Serve the review app to a browser (textual-serve): one app process per tab.

    Each tab asks for the reviewer's name (offering [reviewer] from curator.toml) unless
    --reviewer is given, and has its own leases, so two tabs never get the same card.
    Listens on 127.0.0.1 only, unless --allow-remote.

    \b
    Example:
        curator serve                           # then open http://127.0.0.1:8000
        curator serve --set main --source logs --port 8080
        curator serve --host 0.0.0.0 --allow-remote --public-url https://review.example.org
    """
    from curator.tui.keymap import check_keymap
    from curator.tui.screens.modals import check_reviewer_name

    if not allow_remote and not is_loopback(host):
        raise CuratorError(
            f"--host {host} is not a loopback address: anyone who can reach it could review as anyone.",
            "Serve on 127.0.0.1 behind a proxy with authentication (docs/review.md), "
            "or pass --allow-remote if the network is yours.",
        )
    if reviewer and (problem := check_reviewer_name(reviewer)):
        raise click.BadParameter(problem, param_hint="--reviewer")
    check_keymap(ws.config.keymap)
    check_sets(ws, [set_name or ws.config.default_set], no_verify)
    try:
        from textual_serve.server import Server
    except ImportError:
        raise CuratorError("curator serve needs textual-serve, which is not installed.",
                           "pip install 'curator-evalsets[serve]'") from None
    command = session_command(ws, set_name=set_name, source=source, slice_name=slice_name, reviewer=reviewer)
    server = Server(command, host=host, port=port, title="curator review", public_url=public_url)
    if not is_loopback(host):
        console.print(f"[yellow]listening on {host}: no authentication of its own[/]", highlight=False)
    try:
        server.serve()
    except OSError as exc:  # the port is taken, the address is not this machine's
        raise CuratorError(f"cannot listen on {host}:{port}: {exc.strerror or exc}",
                           "choose another --port, or stop what uses it") from None


@cli.command("serve-session", hidden=True)
@_session_options
@click.option("--reviewer", help="Review as this name instead of asking.")
@pass_ws
def serve_session(ws: Workspace, set_name: str | None, source: str, slice_name: str | None,
                  reviewer: str | None) -> None:
    """One browser tab's review app (started by `curator serve`, not by hand)."""
    if os.environ.get("TEXTUAL_DRIVER") != WEB_DRIVER:
        raise CuratorError("serve-session is the app `curator serve` starts for each browser tab.",
                           "Run `curator serve`, or `curator review` in a terminal.")
    from curator.tui.app import ReviewApp

    app = ReviewApp(ws, set_name=set_name, source=source, slice=slice_name, reviewer=reviewer,
                    ask_reviewer=reviewer is None)
    app.run()
    if app.exit_status():
        raise SystemExit(app.exit_status())

"""The `curator` click group and what every command shares.

A command parses its options, opens the workspace, makes one library call and prints.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from functools import update_wrapper
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from rich.console import Console
from rich.markup import escape

from curator import __version__
from curator.errors import EXIT_FAILED, EXIT_INTERNAL, EXIT_INTERRUPTED, CuratorError

if TYPE_CHECKING:
    from curator.workspace import Workspace

console = Console(soft_wrap=True)  # long paths and ids stay on one line (greppable)
err_console = Console(stderr=True, soft_wrap=True)

F = TypeVar("F", bound=Callable[..., Any])


class CuratorGroup(click.Group):
    """Prints a CuratorError as a message (and hint) without a traceback; so too an
    OSError no command caught, and a bug (with a report, curator/crash.py)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CuratorError as exc:
            err_console.print(f"[bold red]error:[/] {escape(exc.message)}", highlight=False)
            if exc.hint:
                err_console.print(f"[dim]hint:[/] {escape(exc.hint)}", highlight=False)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:  # Ctrl-C: a word and the shell's code for it, not a traceback
            err_console.print("[yellow]interrupted[/]", highlight=False)
            sys.exit(EXIT_INTERRUPTED)
        except (click.exceptions.Exit, click.ClickException, click.Abort, BrokenPipeError):
            raise  # click's own, and a closed pipe (`| head`), which click ends quietly
        except OSError as exc:  # the disk is full, a folder vanished: said plainly, with its file
            where = f"{exc.filename}: " if exc.filename else ""
            err_console.print(f"[bold red]error:[/] {escape(where + (exc.strerror or str(exc)))}", highlight=False)
            err_console.print("[dim]hint:[/] Check the path and the free space, then run the command again.",
                              highlight=False)
            sys.exit(EXIT_FAILED)
        except Exception as exc:  # a bug: a line and a report, never a traceback (curator/crash.py)
            from curator import crash

            if crash.debugging():
                raise
            database = crash.database_trouble(exc)
            if database is not None:  # the workspace's SQLite file: busy, full or damaged, no bug
                err_console.print(f"[bold red]error:[/] {escape(database[0])}", highlight=False)
                err_console.print(f"[dim]hint:[/] {escape(database[1])}", highlight=False)
                sys.exit(EXIT_FAILED)
            message, hint = crash.announce(exc, ctx.invoked_subcommand or crash.command_name())
            err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
            err_console.print(f"[dim]hint:[/] {escape(hint)}", highlight=False)
            sys.exit(EXIT_INTERNAL)


class State:
    def __init__(self, workspace: str | None):
        self.workspace_arg = workspace
        self._ws: Workspace | None = None

    @property
    def ws(self) -> Workspace:  # imported lazily to keep `--help` fast
        if self._ws is None:
            from curator.workspace import Workspace

            self._ws = Workspace.find(self.workspace_arg)
        return self._ws

    def close(self) -> None:
        if self._ws is not None:
            self._ws.close()


@click.group(cls=CuratorGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "-w",
    "--workspace",
    type=click.Path(file_okay=False, path_type=str),
    envvar="CURATOR_WORKSPACE",
    help="Workspace folder (default: found from the current directory upward).",
)
@click.version_option(__version__, prog_name="curator")
@click.pass_context
def cli(ctx: click.Context, workspace: str | None) -> None:
    """Build, review and keep retrieval-evaluation question sets.

    \b
    Start with the demo:     curator demo && cd curator-demo && curator status
    Or a workspace of yours: curator init && curator corpus add docs/
    """
    ctx.obj = State(workspace)
    ctx.call_on_close(ctx.obj.close)


def pass_ws(f: F) -> F:
    """Give the command the open Workspace as its first argument."""

    @click.pass_context
    def wrapper(ctx: click.Context, *args: Any, **kwargs: Any) -> Any:
        return ctx.invoke(f, ctx.obj.ws, *args, **kwargs)

    return update_wrapper(wrapper, f)  # type: ignore[return-value]


def json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")(f)


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def rel(path: Path | str, root: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(root))
    except ValueError:
        return str(path)

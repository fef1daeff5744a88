"""curator's command line. Each command lives in its own module of this package."""

from curator.cli import corpus as _corpus  # noqa: E402,F401
from curator.cli import export as _export  # noqa: E402,F401
from curator.cli import generate as _generate  # noqa: E402,F401
from curator.cli import logs as _logs  # noqa: E402,F401
from curator.cli import queue as _queue  # noqa: E402,F401
from curator.cli import review as _review  # noqa: E402,F401
from curator.cli import score as _score  # noqa: E402,F401
from curator.cli import sets as _sets  # noqa: E402,F401
from curator.cli import triage as _triage  # noqa: E402,F401

# Importing a module registers its commands on `cli`.
from curator.cli import workspace as _workspace  # noqa: E402,F401
from curator.cli.main import cli


def main() -> None:
    cli(prog_name="curator")


__all__ = ["cli", "main"]

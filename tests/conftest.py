"""Shared fixtures: real workspaces on disk, real SQLite, no mocks of curator's core."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from curator.workspace import Workspace


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's own CURATOR_* / OPENAI_* settings must not leak into tests."""
    import os

    for name in list(os.environ):
        if name.startswith(("CURATOR_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("CURATOR_REVIEWER", "tester")


@pytest.fixture
def ws(tmp_path: Path):
    workspace = Workspace.init(tmp_path / "ws")
    yield workspace
    workspace.close()


def seen(read, query: str) -> tuple[str | None, str | None]:
    """A query's first and last seen as the pipeline takes them from a FileRead."""
    return read.agg.first.get(query), read.agg.last.get(query)


def latency_and_zero(read, query: str) -> tuple[list[float] | None, int]:
    """A query's latency [sum, lines] and lines without results, as a FileRead has them."""
    lat = list(read.agg.latency.get(query, [0.0, 0]))
    return (lat if lat[1] else None), read.agg.zero_results.get(query, 0)


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    """Write `{relative path: content}` under root; returns root."""
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


@pytest.fixture(scope="session")
def _demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from curator.demo import build_demo

    target = tmp_path_factory.mktemp("demo-template") / "curator-demo"
    build_demo(target).close()
    return target


@pytest.fixture
def demo_ws(_demo_template: Path, tmp_path: Path):
    """A fresh copy of the built demo workspace (corpus, history, logs, example set)."""
    target = tmp_path / "curator-demo"
    shutil.copytree(_demo_template, target)
    workspace = Workspace.open(target)
    yield workspace
    workspace.close()


@pytest.fixture
def run_cli(monkeypatch: pytest.MonkeyPatch):
    """Invoke the real click CLI in-process: run_cli(["status"], cwd=path)."""
    from curator.cli import cli

    def invoke(args: list[str], cwd: Path | None = None, input: str | None = None):
        if cwd is not None:
            monkeypatch.chdir(cwd)
        return CliRunner().invoke(cli, args, input=input, catch_exceptions=False)

    return invoke

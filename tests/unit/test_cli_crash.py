"""An error no command expected reaches the user as one line, a report file and exit 70,
never a traceback; an OSError as its file and reason. Each case runs the real console
entry (`curator.cli.main`) in a process of its own, with one extra command that fails."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from curator.errors import EXIT_INTERNAL

SECRETS = ["anna.kowalski@example.com", "sk-live-gLKOmxgJTeKdNnFRIBXuDL7DxtpYlSXp", "203.0.113.42"]

SCRIPT = textwrap.dedent("""
    import errno, sys, click
    from curator.cli import cli, main

    @cli.command("explode")
    @click.option("--token")
    @click.argument("how")
    def explode(token, how):
        try:
            if how == "bug":
                {}["anna.kowalski@example.com"]
            if how == "disk":
                raise OSError(errno.ENOSPC, "No space left on device", "/ws/datasets/support.jsonl")
            if how == "broken":  # the bug is in what the redactor needs: a module that cannot load
                sys.modules["curator.logs.redact"] = None
                raise ValueError("no passage for anna.kowalski@example.com")
            if how == "pipe":
                for k in range(200_000):
                    click.echo(f"line {k}")
        except KeyError as exc:
            raise ValueError("no passage for 203.0.113.42 with key sk-live-gLKOmxgJTeKdNnFRIBXuDL7DxtpYlSXp") from exc

    main()
""")


def _run(tmp_path: Path, *args: str, debug: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TMPDIR": str(tmp_path), "COLUMNS": "200"}
    env.pop("CURATOR_DEBUG", None)
    if debug:
        env["CURATOR_DEBUG"] = "1"
    script = tmp_path / "explode.py"
    script.write_text(SCRIPT)
    return subprocess.run([sys.executable, str(script), "-w", str(tmp_path), "explode", *args],
                          capture_output=True, text=True, env=env, cwd=tmp_path)


def test_a_bug_is_one_line_and_a_report_without_data_or_secrets(tmp_path: Path) -> None:
    proc = _run(tmp_path, "bug", "--token", "sk-live-gLKOmxgJTeKdNnFRIBXuDL7DxtpYlSXp")
    assert proc.returncode == EXIT_INTERNAL == 70
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    assert "internal error (ValueError)" in proc.stderr and "this is a bug" in proc.stderr
    reports = list(tmp_path.glob("curator-crash-*.txt"))
    assert len(reports) == 1 and str(reports[0]) in proc.stderr.replace("\n", "")
    assert reports[0].stat().st_mode & 0o777 == 0o600
    report = reports[0].read_text()
    assert "command: curator explode" in report and "builtins.ValueError" in report
    assert "then ValueError" in report and "KeyError" in report  # the chain, cause first
    assert 'raise ValueError("no passage' in report  # the frames' source lines
    for secret in SECRETS:
        assert secret not in report and secret not in proc.stderr, secret
    assert "<EMAIL>" in report or "<IP>" in report


def test_curator_debug_lets_the_traceback_through(tmp_path: Path) -> None:
    proc = _run(tmp_path, "bug", debug=True)
    assert proc.returncode == 1 and "Traceback" in proc.stderr and "ValueError" in proc.stderr
    assert not list(tmp_path.glob("curator-crash-*.txt"))


def test_an_os_error_names_its_file_and_reason(tmp_path: Path) -> None:
    proc = _run(tmp_path, "disk")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "error: /ws/datasets/support.jsonl: No space left on device" in proc.stderr
    assert not list(tmp_path.glob("curator-crash-*.txt"))


@pytest.mark.skipif(sys.platform == "win32", reason="a shell pipe")
def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    script = tmp_path / "explode.py"
    script.write_text(SCRIPT)
    proc = subprocess.run(f'"{sys.executable}" "{script}" -w "{tmp_path}" explode pipe | head -n 1',
                          shell=True, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.stdout == "line 0\n" and "Traceback" not in proc.stderr and "error" not in proc.stderr
    assert not list(tmp_path.glob("curator-crash-*.txt"))


def test_a_bug_where_the_redactor_cannot_load_still_ends_in_one_line_and_a_report(tmp_path: Path) -> None:
    proc = _run(tmp_path, "broken")
    assert proc.returncode == EXIT_INTERNAL and "Traceback" not in proc.stderr
    assert "internal error (ValueError)" in proc.stderr
    (report,) = tmp_path.glob("curator-crash-*.txt")
    assert "anna.kowalski" not in report.read_text() and "left out" in report.read_text()


def test_a_damaged_workspace_database_is_said_so_not_called_a_bug(tmp_path: Path) -> None:
    curator = str(Path(sys.executable).parent / "curator")
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    env.pop("CURATOR_DEBUG", None)
    subprocess.run([curator, "init", str(tmp_path / "ws")], check=True, capture_output=True, env=env)
    (tmp_path / "ws" / ".curator" / "workspace.db").write_bytes(b"not a database, but the words of a disk error " * 4)
    proc = subprocess.run([curator, "-w", str(tmp_path / "ws"), "status"], capture_output=True, text=True, env=env)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "the workspace database (.curator/workspace.db) cannot be read" in proc.stderr
    assert "datasets/ are plain files" in proc.stderr and not list(tmp_path.glob("curator-crash-*.txt"))

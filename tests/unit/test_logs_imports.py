"""Re-running imports: a file counts as imported for the --since/--until windows it was
read for, so a new window reads it and a window already read is skipped."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from curator.logs import import_logs
from curator.logs.imports import covers, merged
from curator.workspace import Workspace

MONTHS = {"2026-09": 40, "2026-10": 30, "2026-11": 20}  # month -> lines, each its own query


def _log(path: Path) -> Path:
    lines = []
    for month, n in MONTHS.items():
        lines += [json.dumps({"query": f"question of {month} number {i}", "ts": f"{month}-0{1 + i % 9}T10:00:00Z"})
                  for i in range(n)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _queued(ws) -> dict[str, int]:
    months: dict[str, int] = {}
    for c in ws.candidates():
        month = c.query.split(" of ")[1].split()[0]
        months[month] = months.get(month, 0) + 1
    return months


@pytest.mark.parametrize("engine", ["python", "duckdb"])
def test_a_new_window_reads_the_file_and_a_window_already_read_is_skipped(tmp_path: Path, engine: str) -> None:
    log = _log(tmp_path / "search.jsonl")
    ws = Workspace.init(tmp_path / "ws")
    try:
        def run(since=None, until=None, path=log):
            summary = import_logs(ws, [path], engine=engine, since=since, until=until, limit=0, similarity=100)
            return summary.files[0].status, summary.queued

        assert run("2026-10-01", "2026-11-01") == ("imported", 30)
        assert run("2026-10-01", "2026-11-01") == ("already imported", 0)
        assert run("2026-10-05", "2026-10-20") == ("already imported", 0)  # inside October
        assert run("2026-11-01", "2026-12-01") == ("imported", 20)  # November: not read yet
        # October and November touch: one span, so the two together are known
        assert run("2026-10-01", "2026-12-01") == ("already imported", 0)
        known = import_logs(ws, [log], engine=engine, since="2026-10-02", until="2026-10-03").files[0].windows
        assert known == [["2026-10-01T00:00:00", "2026-12-01T00:00:00"]]
        # the same content under another name: read (its fingerprint comes after the
        # reading), then found imported for that window
        copy = tmp_path / "copy.jsonl"
        shutil.copy(log, copy)
        assert run("2026-10-10", "2026-11-10", path=copy) == ("already imported", 0)
        # the whole file reads September too; what was queued before is not queued again
        assert run() == ("imported", 40)
        assert _queued(ws) == MONTHS
        assert run() == ("already imported", 0)
        assert run("2026-09-01", "2026-09-10") == ("already imported", 0)
        assert run(path=copy) == ("already imported", 0)
    finally:
        ws.close()


def test_an_import_recorded_before_windows_were_kept_counts_as_the_whole_file(tmp_path: Path) -> None:
    log = _log(tmp_path / "search.jsonl")
    ws = Workspace.init(tmp_path / "ws")
    try:
        import_logs(ws, [log], since="2026-10-01", until="2026-11-01")
        ws.db.execute("UPDATE log_imports SET windows = NULL")
        assert import_logs(ws, [log], since="2026-11-01").files[0].status == "already imported"
        assert import_logs(ws, [log], since="2026-11-01", force=True).queued == 20
    finally:
        ws.close()


DAYS = [f"2026-10-{d:02d}" for d in range(1, 29)]
bound = st.one_of(st.none(), st.sampled_from(DAYS))


def _span(pair: tuple[str | None, str | None]):
    since, until = pair
    if since is not None and until is not None and since >= until:
        return (until, since) if since != until else (since, None)
    return pair


spans = st.lists(st.tuples(bound, bound).map(_span), max_size=6)


def _days(span) -> set[int]:
    """The span as whole days, with the days before and after DAYS standing for -inf/+inf."""
    since, until = span
    first = 0 if since is None else DAYS.index(since) + 1
    last = len(DAYS) + 2 if until is None else DAYS.index(until) + 1
    return set(range(first, last))


@given(spans, st.tuples(bound, bound).map(_span))
def test_coverage_is_containment_in_the_union_of_the_windows(recorded, asked) -> None:
    union = set().union(*map(_days, recorded)) if recorded else set()
    assert covers(recorded, asked) == (_days(asked) <= union)
    out = merged(recorded)
    assert (set().union(*map(_days, out)) if out else set()) == union
    # disjoint, in order, and no two touch (else they would be one)
    for (_, until), (since, _) in zip(out, out[1:], strict=False):
        assert until is not None and since is not None and until < since


def test_the_summary_says_which_windows_a_file_was_imported_for(run_cli, tmp_path: Path) -> None:
    log = _log(tmp_path / "search.jsonl")
    ws = tmp_path / "ws"
    Workspace.init(ws).close()

    def cli(*args: str):
        return run_cli(["-w", str(ws), "import-logs", str(log), *args]).output

    cli("--since", "2026-10-01", "--until", "2026-10-15T12:00:00")
    cli("--since", "2026-11-01")
    out = cli("--since", "2026-11-05", "--until", "2026-11-06")
    assert "already imported for 2026-10-01 to 2026-10-15T12:00:00, from 2026-11-01 on (fingerprint" in out
    assert "--force reads it again" in out
    cli()
    out = cli("--since", "2026-09-01")
    assert "already imported (fingerprint" in out

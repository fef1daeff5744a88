"""The score table in a CI log (stdout not a terminal): its natural width, no number cut."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CURATOR = str(Path(sys.executable).parent / "curator")


def test_score_table_is_never_truncated_when_piped(demo_ws) -> None:
    env = {**os.environ, "COLUMNS": "40", "NO_COLOR": "1"}
    out = subprocess.run([CURATOR, "score", "retriever-runs/triage-example.jsonl", "--no-write"], cwd=demo_ws.root,
                         capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 1, out.stderr  # the demo's gates are red for this run
    table = out.stdout.split("latency over")[0]
    assert "…" not in table
    row = next(line for line in table.splitlines() if line.strip().startswith("freshness"))
    assert row.split()[:4] == ["freshness", "2", "0.500", "1.000"]
    assert "exact_identifier" in table


def test_score_table_prints_each_slices_interval_under_its_values(demo_ws) -> None:
    import json

    env = {**os.environ, "NO_COLOR": "1"}
    out = subprocess.run([CURATOR, "score", "retriever-runs/triage-example.jsonl", "--json"], cwd=demo_ws.root,
                         capture_output=True, text=True, env=env, timeout=60)
    artefact = json.loads(Path(json.loads(out.stdout)["artefact"]).read_text())
    out = subprocess.run([CURATOR, "score", "retriever-runs/triage-example.jsonl", "--no-write"], cwd=demo_ws.root,
                         capture_output=True, text=True, env=env, timeout=60)
    lines = out.stdout.split("latency over")[0].splitlines()
    row = next(i for i, line in enumerate(lines) if line.strip().startswith("freshness"))
    assert lines[row + 1].split()[:2] == ["95%", "CI"]
    low, high = artefact["metrics"]["slices"]["freshness"]["ci"]["success@5"]
    assert lines[row + 1].split()[2] == f"{low:.2f}–{high:.2f}"
    assert "percentile bootstrap" in out.stdout and "1,000 resamples" in out.stdout


def test_history_filters_by_name_and_draws_counts_on_their_own_scale(demo_ws, run_cli) -> None:
    from curator.scoring.history import sparkline

    result = run_cli(["history", "--name", "dense-v2", "--json"], cwd=demo_ws.root)
    assert result.exit_code == 0
    import json

    data = json.loads(result.output)
    assert data["runs"] and {r["label"] for r in data["runs"]} == {"dense-v2"}
    result = run_cli(["history", "--name", "no-such-run"], cwd=demo_ws.root)
    assert result.exit_code != 0 and "matches --name/--retriever" in result.output
    # a rescore given --name keeps it, and shows in the filtered history
    assert run_cli(["score", "--rescore", "dense-v2", "--name", "dense-v2-relabelled"], cwd=demo_ws.root).exit_code in (0, 1)
    data = json.loads(run_cli(["history", "--name", "dense-v2-relabelled", "--json"], cwd=demo_ws.root).output)
    assert [r["label"] for r in data["runs"]] == ["dense-v2-relabelled"]
    table = run_cli(["history", "--metric", "failures"], cwd=demo_ws.root).output
    overall = next(line for line in table.splitlines() if "overall" in line)
    trend = overall.split("│")[2].strip()
    # counts on their own scale: the largest fills the bar, a smaller one does not (a 0-1
    # scale would clip every count of 1 or more to a full bar)
    assert trend.endswith("█") and set(trend) != {"█"}, trend
    assert sparkline([1, 2], 0, 2) == "▅█"

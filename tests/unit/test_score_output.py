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

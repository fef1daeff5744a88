"""Scores over time: one question across stored runs, and per-slice metrics per run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from curator.errors import InputError
from curator.scoring.artefact import list_artefacts, read_artefact

BARS = "▁▂▃▄▅▆▇█"


def load_runs(runs_dir: Path, set_name: str | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """Every readable artefact of the set, oldest first, and what could not be read."""
    runs, problems = [], []
    for path in list_artefacts(runs_dir):
        try:
            data = read_artefact(path)
        except InputError as exc:
            problems.append(str(exc))
            continue
        if set_name is None or data["set"].get("name") == set_name:
            runs.append(data)
    runs.sort(key=lambda r: r["created_at"])  # stable: same-second runs keep file order
    return runs, problems


def _run_ref(run: dict[str, Any]) -> dict[str, Any]:
    return {
        "artefact": Path(run["_path"]).name,
        "created_at": run["created_at"],
        "label": _label(run),
        "git_sha": (run["workspace"].get("git_sha") or "")[:7] or None,
    }


def _label(run: dict[str, Any]) -> str | None:
    """A rescore is named after the run it rescored (`rescore of dense-v2`) unless it was
    given a --name of its own."""
    label = run.get("label")
    source = run.get("source_run") or {}
    if label == "rescore" and source.get("label"):
        return f"rescore of {source['label']}"
    return label


def question_history(runs: list[dict[str, Any]], query_id: str) -> list[dict[str, Any]]:
    rows = []
    for run in runs:
        q = run["questions"].get(query_id)
        row = _run_ref(run)
        if q is None:
            row["present"] = False
        else:
            row.update(
                present=True,
                rev=q.get("rev"),
                first_relevant_rank=q.get("first_relevant_rank"),
                failure=q.get("failure"),
                ranks=q.get("ranks"),
            )
        rows.append(row)
    return rows


def slice_history(runs: list[dict[str, Any]], metric: str) -> dict[str, Any]:
    """{slice: [value or None per run]} including `overall`, and the runs."""
    slices: dict[str, list[float | None]] = {"overall": [run["metrics"]["overall"].get(metric) for run in runs]}
    for name in sorted({s for run in runs for s in run["metrics"]["slices"]}):
        slices[name] = [run["metrics"]["slices"].get(name, {}).get(metric) for run in runs]
    return {"metric": metric, "runs": [_run_ref(r) for r in runs], "slices": slices}


def sparkline(values: list[float | None], low: float = 0.0, high: float = 1.0) -> str:
    """One character per value; a gap (space) where a run has no value."""
    span = (high - low) or 1.0
    out = []
    for v in values:
        if v is None:
            out.append(" ")
        else:
            index = int((min(max(v, low), high) - low) / span * (len(BARS) - 1) + 0.5)
            out.append(BARS[index])
    return "".join(out)

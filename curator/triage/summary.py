"""The cause table of a triaged run: failures by cause and slice, for the weekly review."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from curator.triage.causes import CAUSES
from curator.triage.items import latest_decisions, run_name, slice_order

if TYPE_CHECKING:
    from curator.workspace import Workspace


def summary(ws: Workspace, artefact: dict[str, Any]) -> dict[str, Any]:
    """Failures grouped by cause (the latest decision per case) and slice, plus the ones
    not triaged yet."""
    failing = {q: v for q, v in artefact["questions"].items() if v.get("failure")}
    latest = latest_decisions(ws, artefact)
    order = slice_order(artefact)
    slices = sorted({v["slice"] for v in failing.values()}, key=lambda s: order.get(s, 99))
    table: dict[str, Counter[str]] = {cause: Counter() for cause in CAUSES}
    table["untriaged"] = Counter()
    kinds: dict[str, Counter[str]] = {}
    for qid, q in failing.items():
        d = latest.get(qid)
        cause = d.cause if d is not None else "untriaged"
        table[cause][q["slice"]] += 1
        kinds.setdefault(cause, Counter())[q["failure"]] += 1
    rows = [
        {"cause": cause, "total": sum(counts.values()), "slices": {s: counts.get(s, 0) for s in slices},
         "failure_kinds": dict(sorted(kinds.get(cause, Counter()).items()))}
        for cause, counts in table.items()
    ]
    return {
        "run": run_name(artefact),
        "created_at": artefact["created_at"],
        "label": artefact.get("label"),
        "set": artefact["set"].get("name"),
        "failures": len(failing),
        "triaged": len([q for q in failing if q in latest]),
        "slices": slices,
        "causes": rows,
        "decisions": [
            {"query_id": d.query_id, "slice": d.slice, "failure": d.failure, "cause": d.cause,
             "action": d.action, "rev": d.rev, "note": d.note, "reviewer": d.reviewer, "at": d.at}
            for d in latest.values()
        ],
    }

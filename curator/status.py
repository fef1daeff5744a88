"""`curator status`: what the workspace holds, as one dictionary."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from curator._process import paused_gc
from curator.corpus.labels import stale_labels
from curator.scoring.stats import min_detectable_difference
from curator.verify import VerifyReport, read_checked

if TYPE_CHECKING:
    from curator.workspace import Workspace


@paused_gc()
def summary(ws: Workspace) -> dict[str, Any]:
    """Corpus size, candidates by state and source, and per set the active cases per
    slice against the configured targets. The collector is paused: a big set's latest revs
    are many objects it would scan again and again, and none of them holds a cycle."""
    stats = ws.corpus_stats()
    sets: dict[str, dict[str, Any]] = {}
    for name in ws.set_names():
        qs = ws.question_set(name)
        result, report = read_checked(ws, qs)
        active = [c for c in result.cases.values() if c.status == "active"]
        per_slice = Counter(c.slice for c in active)
        # labelled ids the current corpus lacks (corpus/labels.py); none to check without a corpus
        stale = stale_labels(ws, active) if stats.passages else []
        slices: dict[str, dict[str, Any]] = {
            slice_name: {"cases": per_slice.get(slice_name, 0), "target": cfg.target}
            for slice_name, cfg in ws.config.slices.items()
        }
        for extra in sorted(set(per_slice) - set(slices)):
            slices[extra] = {"cases": per_slice[extra], "target": None}
        for counts in slices.values():  # the smallest success@k difference its case count detects
            counts["min_detectable_difference"] = min_detectable_difference(counts["cases"] or 0)
        sets[name] = {
            "active": len(active),
            "retired": len(result.cases) - len(active),
            "lines": result.lines,
            "slices": slices,
            "problems": [str(p) for p in result.problems] + [s.describe() for s in stale],
            "stale_labels": [s.to_dict() for s in stale],
            "verify": _verify_state(report),
        }
    return {
        "workspace": str(ws.root),
        "corpus": asdict(stats),
        "candidates": {"by_state": ws.candidate_counts(), "by_source": ws.candidate_counts("source_kind")},
        "default_set": ws.config.default_set,
        "sets": sets,
    }


def _verify_state(report: VerifyReport | None) -> dict[str, Any]:
    """Whether the set passes verify, and its first problem (file:line) if not; no report:
    the checkpoint proved it sound."""
    if report is None:
        return {"ok": True, "first_problem": None, "append_only": "checked since the last passing verify"}
    problem = report.first_problem
    return {"ok": problem is None, "first_problem": str(problem) if problem else None, "append_only": report.history}

"""Compare two run artefacts: per-slice deltas and the questions that changed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from curator.scoring import stats


def frozen_query_ids(set_dir: Path) -> tuple[set[str], list[str]]:
    """query_ids listed by the set's freeze manifests (`frozen/*.json`, key `query_ids`).
    Read tolerantly: a manifest that cannot be read is reported and skipped."""
    ids: set[str] = set()
    problems: list[str] = []
    for path in sorted((set_dir / "frozen").glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            problems.append(f"{path}: not readable JSON ({exc}); its cases are not treated as frozen")
            continue
        listed = data.get("query_ids") if isinstance(data, dict) else None
        if not isinstance(listed, list):
            problems.append(f"{path}: no query_ids list; skipped")
            continue
        ids.update(q for q in listed if isinstance(q, str))
    return ids, problems


def _rank(q: dict[str, Any] | None) -> int | None:
    return None if q is None else q.get("first_relevant_rank")


def compare(
    a: dict[str, Any], b: dict[str, Any], *, rank_threshold: int = 3, frozen: set[str] | None = None
) -> dict[str, Any]:
    """What changed from artefact A (before) to B (after).

    fixed: failed in A, passes in B; broken: passed in A, fails in B; moved: the first
    relevant rank moved by more than `rank_threshold` (a rank that appears or vanishes
    counts as moving). Regression cases (frozen, or tagged `regression`) that broke are
    listed in `regressions`.
    """
    frozen = frozen or set()
    warnings: list[str] = []
    if a["set"].get("sha256") != b["set"].get("sha256"):
        warnings.append(
            f"the set changed between the runs (rev {a['set'].get('rev')} -> {b['set'].get('rev')}); "
            "deltas include label changes"
        )
    if a["config"].get("k") != b["config"].get("k") or a["config"].get("rel_level") != b["config"].get("rel_level"):
        warnings.append("the runs were scored with different k or rel_level; only shared metrics are compared")
    slices = {}
    names = sorted(set(a["metrics"]["slices"]) | set(b["metrics"]["slices"]))
    for name in ["overall", *names]:
        ma = a["metrics"]["overall"] if name == "overall" else a["metrics"]["slices"].get(name, {})
        mb = b["metrics"]["overall"] if name == "overall" else b["metrics"]["slices"].get(name, {})
        row: dict[str, Any] = {"n_a": ma.get("n", 0), "n_b": mb.get("n", 0), "metrics": {}}
        for metric in ma:
            if metric in ("n", "negatives", "failures") or metric not in mb or not _number(ma[metric]):
                continue
            row["metrics"][metric] = {"a": ma[metric], "b": mb[metric], "delta": mb[metric] - ma[metric]}
        row["failures_a"], row["failures_b"] = ma.get("failures", 0), mb.get("failures", 0)
        slices[name] = row
    qa, qb = a["questions"], b["questions"]
    _significance(slices, qa, qb, ma_ci={n: _block(a, n).get("ci", {}) for n in slices},
                  mb_ci={n: _block(b, n).get("ci", {}) for n in slices}, seed=b["config"].get("bootstrap", {}).get("seed", 0),
                  resamples=b["config"].get("bootstrap", {}).get("resamples", stats.RESAMPLES) or stats.RESAMPLES)
    fixed, broken, moved = [], [], []
    for qid in qb:
        if qid not in qa:
            continue
        before, after = qa[qid], qb[qid]
        entry = {
            "query_id": qid,
            "slice": after.get("slice"),
            "failure_a": before.get("failure"),
            "failure_b": after.get("failure"),
            "rank_a": _rank(before),
            "rank_b": _rank(after),
            "regression": qid in frozen or "regression" in (after.get("tags") or before.get("tags") or []),
        }
        if before.get("failure") and not after.get("failure"):
            fixed.append(entry)
        elif after.get("failure") and not before.get("failure"):
            broken.append(entry)
        ra, rb = entry["rank_a"], entry["rank_b"]
        if ra != rb and (ra is None or rb is None or abs(ra - rb) > rank_threshold):
            moved.append(entry)
    moved.sort(key=lambda e: -abs((e["rank_a"] or 1000) - (e["rank_b"] or 1000)))
    return {
        "a": a.get("_path"),
        "b": b.get("_path"),
        "k": b["config"].get("k"),
        "rank_threshold": rank_threshold,
        "warnings": warnings,
        "slices": slices,
        "fixed": fixed,
        "broken": broken,
        "moved": moved,
        "added": sorted(set(qb) - set(qa)),
        "removed": sorted(set(qa) - set(qb)),
        "regressions": [e for e in broken if e["regression"]],
        "latency_ms": {"a": a.get("latency_ms"), "b": b.get("latency_ms")},
        "alpha": stats.ALPHA,
        "test": "paired randomization (sign-flip) test of the mean difference over the questions in both runs",
    }


def _block(art: dict[str, Any], name: str) -> dict[str, Any]:
    metrics = art["metrics"]
    block: dict[str, Any] = metrics["overall"] if name == "overall" else metrics["slices"].get(name, {})
    return block


def _significance(slices: dict[str, Any], qa: dict[str, Any], qb: dict[str, Any], ma_ci: dict[str, Any],
                  mb_ci: dict[str, Any], seed: int, resamples: int) -> None:
    """Per slice and metric: the paired test's p-value over the questions both runs
    scored, `significant` at alpha, the pair count and each run's interval."""
    pairs: dict[str, list[str]] = {"overall": []}
    for qid, after in qb.items():
        before = qa.get(qid)
        if before is None or "metrics" not in before or "metrics" not in after:
            continue
        pairs["overall"].append(qid)
        pairs.setdefault(after.get("slice") or "", []).append(qid)
    for name, row in slices.items():
        ids = pairs.get(name, [])
        for metric, cell in row["metrics"].items():
            if metric in ma_ci.get(name, {}):
                cell["ci_a"] = ma_ci[name][metric]
            if metric in mb_ci.get(name, {}):
                cell["ci_b"] = mb_ci[name][metric]
            used = [q for q in ids if metric in qa[q]["metrics"] and metric in qb[q]["metrics"]]
            if not used:
                continue
            xs = [qa[q]["metrics"][metric] for q in used]
            ys = [qb[q]["metrics"][metric] for q in used]
            p = 1.0 if xs == ys else stats.paired_test(xs, ys, resamples, seed)
            cell.update(p=p, n_paired=len(used), significant=p < stats.ALPHA)



def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)

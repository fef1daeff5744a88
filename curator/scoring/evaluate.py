"""Score a question set against a run: per question, per slice, overall.

The per-query loop works on plain dicts and sets prepared once per case (`CaseSpec`);
pydantic only appears when the cases are read.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from curator.models import Case
from curator.scoring import metrics as m
from curator.scoring import stats
from curator.scoring.runs import Ranked

METRICS = ("success", "recall", "precision", "mrr", "ndcg")
RATE_METRICS = ("negative_pass_rate", "max_rank_pass_rate")
MAX_METRICS = ("failures", "stale_rate", "failure_rate")  # gated with <=
LATENCY_METRICS = ("p50", "p95", "p99")
METRIC_RE = re.compile(r"^(success|recall|precision|mrr|ndcg)@([1-9][0-9]*)$")
FAILURES = ("missing", "failed", "false_positive", "stale", "too_old", "miss", "below_max_rank")  # worst first
SEVERITY = {kind: i for i, kind in enumerate(FAILURES)}

# What the artefact's config says about each choice (docs/scoring.md explains them).
TIE_RULES = {  # by run format
    "jsonl": "submitted order",
    "trec": "score descending, then docno descending (trec_eval)",
    "ranx": "score descending, then docno descending (trec_eval)",
    "python": "submitted order; {id: score} mappings as trec",
}
CHOICES = {
    "gain": "linear: the label's grade (primary 2, secondary 1 by default), as trec_eval",
    "missing_queries": "scored 0 on every metric, failure 'missing', listed",
    "duplicates": "a repeated (id, revision) keeps its first rank; later copies dropped",
    "negative_cases": "excluded from ranking means; reported as negative_pass_rate",
    "stale_hits": "an older revision of a labelled passage is not relevant (success, recall and the "
    "first relevant rank count only the pinned or a newer revision); a stale hit ranked above every "
    "acceptable one scores success@k 0 and fails the case",
    "max_age_days": "a case fails (success@k 0, failure 'too_old') when its best acceptable hit's "
    "revision is older than the limit at the run's time (its latest request timestamp, else the scoring time)",
    "failed_requests": "a query whose request failed scores 0, failure 'failed' (never an empty result)",
    "confidence_intervals": "95% percentile bootstrap of each mean over the slice's queries (seeded); "
    "gate verdicts use the point estimate",
    "mrr": "reciprocal rank of the first relevant passage within the top k",
}


@dataclass(slots=True)
class CaseSpec:
    query_id: str
    rev: int
    slice: str
    tags: list[str]
    negative: bool
    grades: dict[str, int]
    roles: Mapping[str, str]
    relevant: frozenset[str]
    primaries: list[str]
    require: list[str] | None
    max_rank: int | None
    required_rev: dict[str, str]
    newer: dict[str, list[str]]  # labelled id -> revisions newer than the required one
    max_age_days: int | None = None
    query: str = ""
    dates: dict[str, dict[str, str | None]] = field(default_factory=dict)  # id -> revision -> committed_at
    ideal: dict[int, float] = field(default_factory=dict)


def _prefix_match(a: str, b: str) -> bool:
    if a == b:
        return True
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    return len(short) >= 7 and long.startswith(short)


def prepare(
    cases: Iterable[Case],
    ks: Sequence[int],
    rel_level: int = 1,
    revisions_of: Callable[[str], list[tuple[str, str | None, bool]]] | None = None,
) -> list[CaseSpec]:
    """Turn active cases into the lookups the scoring loop needs."""
    specs = []
    ideals: dict[tuple[int, ...], dict[int, float]] = {}  # few cases differ in their grades
    for case in cases:
        if case.status != "active":
            continue
        grades = {r.id: int(r.grade if r.grade is not None else 0) for r in case.relevant}
        roles = {r.id: r.role for r in case.relevant}
        primaries = [r.id for r in case.relevant if r.role == "primary"]
        required: dict[str, str] = {}
        fresh = case.freshness
        for r in case.relevant:
            want = r.revision
            if want is None and fresh is not None and r.role == "primary":
                if fresh.revision:
                    want = fresh.revision
                elif fresh.max_age_days is not None and revisions_of is not None:
                    current = [rev for rev, _, is_current in revisions_of(r.id) if is_current]
                    want = current[0] if current else None
            if want:
                required[r.id] = want
        newer: dict[str, list[str]] = {}
        dates: dict[str, dict[str, str | None]] = {}
        max_age = fresh.max_age_days if fresh is not None else None
        if revisions_of is not None:
            for doc, want in required.items():
                history = revisions_of(doc)
                if max_age is not None:
                    dates[doc] = {rev: when for rev, when, _ in history}
                    current = [rev for rev, _, is_current in history if is_current]
                    if current:
                        dates[doc][""] = dates[doc][current[0]]  # a hit without a revision: the current one
                known = [rev for rev, _, _ in history]  # newest first
                for i, rev in enumerate(known):
                    if _prefix_match(rev, want):
                        newer[doc] = known[:i]
                        break
        spec = CaseSpec(
            query_id=case.query_id,
            rev=case.rev,
            slice=case.slice,
            tags=list(case.tags),
            negative=case.expect_empty or not case.relevant,
            grades=grades,
            roles=roles,
            relevant=m.relevant_ids(grades, rel_level),
            primaries=primaries,
            require=primaries if case.require_all else None,
            max_rank=case.max_rank,
            required_rev=required,
            newer=newer,
            max_age_days=max_age,
            query=case.query,
            dates=dates,
        )
        graded = tuple(sorted(grades.values()))
        if graded not in ideals:
            ideals[graded] = {k: m.ideal_dcg(graded, k) for k in ks}
        spec.ideal = ideals[graded]
        specs.append(spec)
    return specs


def _is_stale(spec: CaseSpec, doc: str, revision: str | None) -> bool:
    want = spec.required_rev.get(doc)
    if want is None or revision is None or _prefix_match(revision, want):
        return False
    return not any(_prefix_match(revision, r) for r in spec.newer.get(doc, ()))


def _age_days(committed_at: str | None, now: datetime) -> float | None:
    if not committed_at:
        return None
    try:
        when = datetime.fromisoformat(committed_at)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (now - when).total_seconds() / 86400


def score_question(
    spec: CaseSpec, ranked: Ranked | None, ks: Sequence[int], negative_threshold: float | None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Everything the artefact records about one question (`ranked` None: not in the run).
    The first k is the headline one; the top max(5, k) results are kept. `now` is the
    run's time, for `max_age_days`."""
    headline_k = ks[0]
    out: dict[str, Any] = {"slice": spec.slice, "rev": spec.rev, "query": spec.query}
    if spec.tags:
        out["tags"] = spec.tags
    if ranked is not None and ranked.latency_ms is not None:
        out["latency_ms"] = ranked.latency_ms
    if ranked is not None and ranked.timestamp is not None:
        out["timestamp"] = ranked.timestamp
    if ranked is None or ranked.error is not None:
        out["failure"] = "missing" if ranked is None else "failed"
        if ranked is not None:
            out["error"] = ranked.error
        out["ranks"] = dict.fromkeys(spec.grades)
        if not spec.negative:
            out["metrics"] = dict.fromkeys((name for k in ks for name in m.metric_names(k)), 0.0)
            out["first_relevant_rank"] = None
            if spec.max_rank is not None:
                out["max_rank_pass"] = False
        else:
            out["negative_pass"] = False
        out["top"] = []
        return out
    ids, scores, revisions = ranked.ids, ranked.scores, ranked.revisions
    keep, dropped = m.dedupe(ids, revisions)
    if dropped:
        out["duplicates"] = dropped
        ids = [ids[i] for i in keep]
        scores = [scores[i] for i in keep]
        revisions = [revisions[i] for i in keep] if revisions else None
    grades = spec.grades
    ranks: dict[str, int] = {}
    stale: dict[str, int] = {}
    if revisions and spec.required_rev:
        for rank, doc in enumerate(ids, 1):
            if doc in grades:
                if _is_stale(spec, doc, revisions[rank - 1]):
                    stale.setdefault(doc, rank)
                elif doc not in ranks:
                    ranks[doc] = rank
    else:
        for doc in grades:  # list.index scans in C: a few labels, ~100 results
            try:  # noqa: SIM105 - suppress() costs more than the scan here
                ranks[doc] = ids.index(doc) + 1
            except ValueError:
                pass
    out["ranks"] = {doc: ranks.get(doc) for doc in grades}
    if stale:
        out["stale_ranks"] = stale
    out["top"] = _top(spec, ids, scores, revisions, stale, max(5, headline_k))
    failure = None
    if spec.negative:
        if negative_threshold is None:
            passed = not ids
        else:
            passed = all(s is not None and s < negative_threshold for s in scores)
        out["negative_pass"] = passed
        failure = None if passed else "false_positive"
    else:
        relevant = spec.relevant
        values = m.metrics_at(ranks, relevant, grades, ks, spec.require, spec.ideal)
        out["metrics"] = values
        first = out["first_relevant_rank"] = m.first_rank(ranks, relevant)
        first_primary = m.first_rank(ranks, spec.primaries)
        if spec.max_rank is not None:
            out["max_rank_pass"] = first_primary is not None and first_primary <= spec.max_rank
        stale_first = bool(stale) and min(stale.values()) < (first or 10**9)
        too_old = _too_old(spec, ids, revisions, first, now) if spec.max_age_days is not None else None
        if stale_first or too_old is not None:
            for k in ks:  # a stale answer first (or only an outdated one) is no success
                values[f"success@{k}"] = 0.0
        if too_old is not None:
            out["age_days"] = round(too_old, 1)
        if stale_first and min(stale.values()) <= headline_k:
            failure = "stale"
        elif too_old is not None and first is not None and first <= headline_k:
            failure = "too_old"
        elif not values[m.metric_names(headline_k)[0]]:
            failure = "miss"
        elif spec.max_rank is not None and not out["max_rank_pass"]:
            failure = "below_max_rank"
    out["failure"] = failure
    return out


def _too_old(spec: CaseSpec, ids: list[str], revisions: list[str | None] | None, first: int | None,
             now: datetime | None) -> float | None:
    """The age in days of the best acceptable hit's revision when it is over the case's
    `max_age_days` at `now`, else None."""
    if first is None or spec.max_age_days is None:
        return None
    doc = ids[first - 1]
    revision = revisions[first - 1] if revisions else None
    known = spec.dates.get(doc)
    if not known:
        return None
    when = known.get(revision or "")
    if when is None and revision:
        when = next((d for r, d in known.items() if r and _prefix_match(r, revision)), None)
    age = _age_days(when, now or datetime.now(UTC))
    return age if age is not None and age > spec.max_age_days else None


def _top(spec: CaseSpec, ids: list[str], scores: Sequence[float | None], revisions: list[str | None] | None,
         stale: dict[str, int], top_n: int) -> list[dict[str, Any]]:
    """The first `top_n` results as the artefact keeps them, labelled ones marked."""
    top = []
    for i in range(min(top_n, len(ids))):
        doc = ids[i]
        item: dict[str, Any] = {"id": doc, "score": scores[i]}
        if revisions and revisions[i] is not None:
            item["revision"] = revisions[i]
        if doc in spec.roles:
            item["label"] = "stale" if stale.get(doc) == i + 1 else spec.roles[doc]
        top.append(item)
    return top


def aggregate(specs: list[CaseSpec], questions: dict[str, dict[str, Any]], ks: Sequence[int],
              resamples: int = stats.RESAMPLES, seed: int = stats.SEED) -> dict[str, Any]:
    """Means per slice and overall, each with its 95% bootstrap interval (`ci`; none when
    `resamples` is 0). Negative cases only feed negative_pass_rate."""
    names = [f"{name}@{k}" for k in ks for name in METRICS]
    groups: dict[str, list[CaseSpec]] = {}
    for spec in specs:
        groups.setdefault(spec.slice, []).append(spec)
    slices = {name: _summary(group, questions, names) for name, group in sorted(groups.items())}
    overall = _summary(specs, questions, names)
    if resamples:
        for block, group in [*((slices[name], groups[name]) for name in slices), (overall, specs)]:
            block["ci"] = _intervals(group, questions, names, resamples, seed)
    return {"overall": overall, "slices": slices}


def _intervals(group: list[CaseSpec], questions: dict[str, dict[str, Any]], names: list[str],
               resamples: int, seed: int) -> dict[str, list[float]]:
    ranked = [questions[s.query_id] for s in group if not s.negative]
    columns: dict[str, list[float]] = {name: [q["metrics"][name] for q in ranked] for name in names} if ranked else {}
    cis = stats.bootstrap_cis(columns, resamples, seed)
    negatives = [float(questions[s.query_id]["negative_pass"]) for s in group if s.negative]
    if negatives:
        cis.update(stats.bootstrap_cis({"negative_pass_rate": negatives}, resamples, seed))
    return cis


def _summary(group: list[CaseSpec], questions: dict[str, dict[str, Any]], names: list[str]) -> dict[str, Any]:
    ranked = [questions[s.query_id] for s in group if not s.negative]
    negatives = [questions[s.query_id] for s in group if s.negative]
    out: dict[str, Any] = {"n": len(ranked), "negatives": len(negatives)}
    if ranked:
        for name in names:
            out[name] = sum(q["metrics"][name] for q in ranked) / len(ranked)
        bounded = [q["max_rank_pass"] for q in ranked if "max_rank_pass" in q]
        if bounded:
            out["max_rank_pass_rate"] = sum(bounded) / len(bounded)
    if negatives:
        out["negative_pass_rate"] = sum(q["negative_pass"] for q in negatives) / len(negatives)
    out["failures"] = sum(1 for s in group if questions[s.query_id]["failure"])
    out["failure_rate"] = out["failures"] / len(group) if group else 0.0
    stale = sum(1 for q in ranked if q["failure"] == "stale")
    out["stale"] = stale
    out["stale_rate"] = stale / len(ranked) if ranked else 0.0
    latencies = [q["latency_ms"] for s in group if "latency_ms" in (q := questions[s.query_id])]
    out["latency_ms"] = latency_summary(latencies, len(group))
    return out


def latency_summary(latencies: list[float], scored: int) -> dict[str, Any]:
    """p50/p95/p99 (nearest rank) and how many of the `scored` queries carry a latency."""
    return {"n": len(latencies), "of": scored, "p50": percentile(latencies, 50),
            "p95": percentile(latencies, 95), "p99": percentile(latencies, 99)}


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (the smallest value with at least q% of values at or below it)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(len(ordered) * q / 100))
    return ordered[rank - 1]


def score_cases(
    specs: list[CaseSpec],
    queries: Mapping[str, Ranked],
    ks: Sequence[int],
    negative_threshold: float | None = None,
    progress: Callable[[int, int], None] | None = None,
    now: datetime | None = None,
    resamples: int = stats.RESAMPLES,
    seed: int = stats.SEED,
) -> dict[str, Any]:
    """The artefact's result part: every case scored against its query's results (a case
    missing from `queries` scores 0), the means, latency and the lists of odd queries.
    `progress(scored, cases)` every 1,000 cases."""
    questions: dict[str, dict[str, Any]] = {}
    if now is None:
        now = run_time(queries)
    for n, spec in enumerate(specs, 1):
        questions[spec.query_id] = score_question(spec, queries.get(spec.query_id), ks, negative_threshold, now)
        if progress is not None and n % 1000 == 0:
            progress(n, len(specs))
    metrics = aggregate(specs, questions, ks, resamples, seed)
    return {
        "metrics": metrics,
        "latency_ms": metrics["overall"]["latency_ms"],
        "run_time": now.isoformat(timespec="seconds"),
        "failed": [q for q, v in questions.items() if v["failure"] == "failed"],
        "missing": [q for q, v in questions.items() if v["failure"] == "missing"],
        "unknown_queries": sorted(q for q in queries if q not in questions),
        "duplicates": {q: v["duplicates"] for q, v in questions.items() if "duplicates" in v},
        "questions": questions,
    }


def run_time(queries: Mapping[str, Ranked]) -> datetime:
    """The run's time: its latest request timestamp, else now."""
    latest: datetime | None = None
    for ranked in queries.values():
        if ranked.timestamp is None:
            continue
        try:
            when = datetime.fromisoformat(ranked.timestamp)
        except ValueError:
            continue
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        if latest is None or when > latest:
            latest = when
    return latest or datetime.now(UTC)

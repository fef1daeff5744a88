"""A stored run's failing cases as triage cards: the artefact's record of each, the set's
current rev, its top results marked against the current labels, the latest decision,
and the same question in earlier stored runs."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curator.errors import CuratorError, InputError
from curator.models import Case
from curator.scoring.artefact import list_artefacts, read_artefact, resolve_artefact
from curator.scoring.evaluate import SEVERITY
from curator.triage.store import Decision, decisions

if TYPE_CHECKING:
    from curator.questionset import QuestionSet
    from curator.workspace import Workspace


@dataclass
class Result:
    """One of the run's top results, marked against the set's current labels."""

    rank: int | None  # None: a labelled passage the run did not return
    id: str
    score: float | None
    revision: str | None
    mark: str  # primary | secondary | stale | unlabelled
    in_top: bool = True  # False: a labelled passage below the artefact's top results


@dataclass
class EarlierRun:
    artefact: str
    created_at: str
    label: str | None
    present: bool
    first_relevant_rank: int | None = None
    failure: str | None = None


@dataclass
class TriageItem:
    """One failing case of the run, as the card shows it."""

    query_id: str
    slice: str
    failure: str
    scored_rev: int
    question: dict[str, Any]  # the artefact's record of the question
    case: Case | None  # the set's current rev (None: no longer in the set)
    results: list[Result]
    earlier: list[EarlierRun] | None  # None: not loaded yet (the app loads them in a worker)
    labels: dict[str, str] = field(default_factory=dict)  # staged: passage id -> role
    decision: Decision | None = None

    @property
    def ranks(self) -> dict[str, int | None]:
        return self.question.get("ranks") or {}

    @property
    def stale_ranks(self) -> dict[str, int]:
        return self.question.get("stale_ranks") or {}

    @property
    def latency_ms(self) -> float | None:
        value = self.question.get("latency_ms")
        return float(value) if isinstance(value, int | float) else None

    def scores_around_first_relevant(self) -> list[Result]:
        """The results just above, at and just below the first relevant hit (its
        neighbours by rank among the run's top results); empty when it is not in them."""
        first = self.question.get("first_relevant_rank")
        shown = [r for r in self.results if r.in_top and r.rank is not None]
        at = next((i for i, r in enumerate(shown) if r.rank == first), None)
        if at is None:
            return []
        return shown[max(0, at - 1):at + 2]

    def tie(self) -> Result | None:
        """A result ranked above the first relevant hit with exactly its score (the
        answer lost a tie-break), or None."""
        first = self.question.get("first_relevant_rank")
        shown = [r for r in self.results if r.in_top and r.rank is not None]
        hit = next((r for r in shown if r.rank == first), None)
        if hit is None or hit.score is None:
            return None
        for r in shown:
            if r.rank is not None and r.rank < hit.rank and r.score is not None and abs(r.score - hit.score) <= 1e-9:  # type: ignore[operator]
                return r
        return None

    def unjudged(self) -> list[Result]:
        """The run's top results that carry no judgment (no label in the set)."""
        return [r for r in self.results if r.in_top and r.mark == "unlabelled"]

    def suggested_cause(self) -> str | None:
        """`ranking_tie` when the answer tied with a result above it; else None."""
        return "ranking_tie" if self.tie() is not None else None

    def current_labels(self) -> dict[str, str]:
        return {r.id: r.role for r in self.case.relevant} if self.case is not None else {}

    @property
    def edited(self) -> bool:
        return self.labels != self.current_labels()

    def mark_results(self) -> None:
        """Mark the results against the staged labels (a stale hit stays stale)."""
        for result in self.results:
            if result.mark != "stale":
                result.mark = self.labels.get(result.id, "unlabelled")


def load_artefact(ws: Workspace, ref: str | Path | None = None) -> dict[str, Any]:
    """A stored run artefact: a path, a name (or unique part of one) in runs/, `latest`,
    `previous`; default the newest."""
    if ref is None:
        stored = list_artefacts(ws.runs_dir)
        if not stored:
            raise CuratorError(
                f"no run artefacts in {ws.runs_dir}",
                "Score a run first: `curator score RUN_FILE` (then `curator triage`).",
            )
        return read_artefact(stored[-1])
    return read_artefact(resolve_artefact(ws.runs_dir, str(ref)))


def run_name(artefact: dict[str, Any]) -> str:
    return Path(artefact["_path"]).name


def set_of(ws: Workspace, artefact: dict[str, Any]) -> QuestionSet:
    name = artefact["set"].get("name") or ws.config.default_set
    qs = ws.question_set(name)
    if not qs.exists():
        raise CuratorError(f"the run scored set {name!r}, which is not in {ws.datasets_dir}")
    return qs


def latest_decisions(ws: Workspace, artefact: dict[str, Any]) -> dict[str, Decision]:
    """Per query id, the latest decision still standing on this run or, for a rescored
    artefact, on the run it was rescored from (the same rankings)."""
    names = [run_name(artefact)]
    source = (artefact.get("source_run") or {}).get("artefact")
    if source:
        names.append(source)
    found = sorted((d for name in names for d in decisions(ws, name)), key=lambda d: d.id)
    latest: dict[str, Decision] = {}
    for d in found:
        if d.action != "undo" and d.undone_by is None:
            latest[d.query_id] = d
    return latest


def slice_order(artefact: dict[str, Any]) -> dict[str, int]:
    """Worst slice first: the highest share of failing cases, then the lowest headline
    success (negative-only slices have none), then the name."""
    head = artefact["config"]["headline_k"]
    rows = []
    for name, block in artefact["metrics"]["slices"].items():
        total = block.get("n", 0) + block.get("negatives", 0)
        share = block.get("failures", 0) / total if total else 0.0
        success = block.get(f"success@{head}")
        rows.append((-share, success if success is not None else 2.0, name))
    return {name: i for i, (_, _, name) in enumerate(sorted(rows))}


def _results(question: dict[str, Any], labels: dict[str, str]) -> list[Result]:
    """The artefact's top results, then the labelled passages below them (or not returned at
    all), so a wrong label can be cleared wherever it ranked."""
    out = []
    for rank, top in enumerate(question.get("top") or [], 1):
        if top.get("label") == "stale":
            mark = "stale"
        else:
            mark = labels.get(top["id"], "unlabelled")
        out.append(Result(rank, top["id"], top.get("score"), top.get("revision"), mark))
    shown = {r.id for r in out if r.mark != "stale"}
    ranks = question.get("ranks") or {}
    below = [(ranks.get(pid), pid) for pid in labels if pid not in shown]
    below.sort(key=lambda x: (x[0] is None, x[0] or 0, x[1]))
    for rank_below, pid in below:
        out.append(Result(rank_below, pid, None, None, labels[pid], in_top=False))
    return out


def _run_index(ws: Workspace, path: Path) -> dict[str, Any]:
    """What earlier-run lookups need from an artefact: set, time, label and each question's
    (first relevant rank, failure). Artefacts are never rewritten, so this is cached in
    .curator/triage-index/ keyed by the file's size and mtime (a big artefact parses in
    a few hundred ms; its index in a few)."""
    stat = path.stat()
    key = [stat.st_size, stat.st_mtime_ns]
    cache = ws.state_dir / "triage-index" / f"{path.name}.idx.json"
    try:
        index = json.loads(cache.read_bytes())
        if index.get("key") == key:
            return index
    except (OSError, ValueError, AttributeError):
        pass
    run = read_artefact(path)
    index = {
        "key": key,
        "set": run["set"].get("name"),
        "created_at": run["created_at"],
        "label": run.get("label"),
        "questions": {q: [v.get("first_relevant_rank"), v.get("failure")] for q, v in run["questions"].items()},
    }
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(f".{cache.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(index, separators=(",", ":")), encoding="utf-8")
        os.replace(tmp, cache)
    except OSError:
        pass  # a read-only workspace still works, just slower
    return index


def earlier_runs(ws: Workspace, artefact: dict[str, Any], query_ids: Iterable[str]) -> dict[str, list[EarlierRun]]:
    """For each query id, its first relevant rank and failure in every stored run of the same
    set created before this one, oldest first. Unreadable artefacts are left out."""
    wanted = set(query_ids)
    this = run_name(artefact)
    set_name = artefact["set"].get("name")
    out: dict[str, list[EarlierRun]] = {q: [] for q in wanted}
    runs = []
    for path in list_artefacts(ws.runs_dir):
        if path.name == this:
            continue
        try:
            index = _run_index(ws, path)
        except (InputError, OSError, KeyError, TypeError):
            continue
        if index["set"] != set_name or index["created_at"] > artefact["created_at"]:
            continue
        runs.append((index["created_at"], path.name, index["label"], index["questions"]))
    runs.sort(key=lambda r: r[0])
    for created, name, label, questions in runs:
        for qid in wanted:
            q = questions.get(qid)
            entry = EarlierRun(name, created, label, q is not None)
            if q is not None:
                entry.first_relevant_rank, entry.failure = q
            out[qid].append(entry)
    return out


def failures(ws: Workspace, artefact: dict[str, Any], *, earlier: bool = True) -> list[TriageItem]:
    """The run's failing cases, worst slice first, then by failure kind and query_id; each
    with the set's current rev, its top results marked, the decision, and (with `earlier`)
    the same question in earlier stored runs."""
    cases = set_of(ws, artefact).read().cases
    order = slice_order(artefact)
    latest = latest_decisions(ws, artefact)
    items = []
    for qid, q in artefact["questions"].items():
        if not q.get("failure"):
            continue
        case = cases.get(qid)
        labels: dict[str, str] = {r.id: r.role for r in case.relevant} if case is not None else {}
        items.append(
            TriageItem(
                query_id=qid,
                slice=q["slice"],
                failure=q["failure"],
                scored_rev=q.get("rev", 0),
                question=q,
                case=case,
                results=_results(q, labels),
                earlier=None,
                labels=dict(labels),
                decision=latest.get(qid),
            )
        )
    items.sort(key=lambda i: (order.get(i.slice, len(order)), SEVERITY.get(i.failure, 9), i.query_id))
    if earlier:
        found = earlier_runs(ws, artefact, [i.query_id for i in items])
        for item in items:
            item.earlier = found[item.query_id]
    return items

"""Triage a scored run's failures: name each one's cause, fix labels, grow the regression set.

    >>> session = TriageSession(ws)              # the newest artefact in runs/
    >>> item = session.next_item()               # worst slice first
    >>> session.mark(item, "faq.md#pickups", "secondary")
    >>> session.decide(item, "bad_label", note="the FAQ answers it too")
    >>> rescore(ws, session.artefact)            # metrics with the set's current labels

A cause either fixes the labels (`bad_label`: the labels edited on the card;
`stale_metadata`: the pinned revision moved) with a `relabel` rev, or keeps the case as
it is and tags it `regression` with an `edit` rev. Every decision is a row of the
workspace's `triage_decisions` table; undo appends a rev restoring what the decision
changed, so the set's files stay append-only. Choices: docs/triage.md.
"""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from curator.errors import CuratorError, InputError
from curator.models import Case, utcnow
from curator.scoring.artefact import (
    SCHEMA,
    list_artefacts,
    read_artefact,
    resolve_artefact,
    write_artefact,
)
from curator.scoring.evaluate import SEVERITY
from curator.scoring.runs import Ranked, RunData, read_run

try:  # orjson reads a 10,000-question artefact about 4x faster; json is the fallback
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - depends on the environment
    from json import loads as _loads

__all__ = [
    "ACTION_OF",
    "CAUSES",
    "Decision",
    "TriageItem",
    "TriageSession",
    "decisions",
    "failures",
    "load_artefact",
    "rescore",
    "summary",
]

# Cause -> (label, what it does). The order is the order of the keys on the card.
CAUSES: dict[str, str] = {
    "bad_label": "bad label",
    "missing_chunk": "missing chunk",
    "synonym_gap": "synonym gap",
    "stale_metadata": "stale metadata",
    "ranking_tie": "ranking tie",
    "retrieval_miss": "retrieval miss",
}
ACTION_OF = {
    "bad_label": "relabel",
    "stale_metadata": "repin",
    "missing_chunk": "regression",
    "synonym_gap": "regression",
    "ranking_tie": "regression",
    "retrieval_miss": "regression",
}
REGRESSION_TAG = "regression"
UNJUDGED = "\x00unjudged:"  # placeholder ids for ranks the artefact did not keep


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
class Decision:
    id: int
    run: str
    set_name: str
    query_id: str
    slice: str
    failure: str
    cause: str
    note: str
    action: str
    rev: int | None
    reviewer: str
    at: str
    undone_by: int | None = None


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

    def current_labels(self) -> dict[str, str]:
        return {r.id: r.role for r in self.case.relevant} if self.case is not None else {}

    @property
    def edited(self) -> bool:
        return self.labels != self.current_labels()


# ---- reading runs ----------------------------------------------------------------------


def load_artefact(ws: Any, ref: str | Path | None = None) -> dict[str, Any]:
    """A stored run artefact: a path, a name (or unique part of one) in runs/, `latest`,
    `previous`; default the newest."""
    if ref is None:
        stored = list_artefacts(ws.runs_dir)
        if not stored:
            raise CuratorError(
                f"no run artefacts in {ws.runs_dir}",
                "Score a run first: `curator score RUN_FILE` (then `curator triage`).",
            )
        return _read(stored[-1])
    return _read(resolve_artefact(ws.runs_dir, str(ref)))


def _read(path: Path) -> dict[str, Any]:
    """read_artefact, parsed with orjson when it is there (errors as read_artefact's)."""
    try:
        data = _loads(path.read_bytes())
    except (OSError, ValueError):
        return read_artefact(path)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        return read_artefact(path)
    data["_path"] = str(path)
    return data


def _run_name(artefact: dict[str, Any]) -> str:
    return Path(artefact["_path"]).name


def _runs_of(ws: Any, artefact: dict[str, Any]) -> list[Decision]:
    """Decisions on this run and, for a rescored artefact, on the run it was rescored from
    (the same rankings), oldest first."""
    names = [_run_name(artefact)]
    source = (artefact.get("source_run") or {}).get("artefact")
    if source:
        names.append(source)
    found = [d for name in names for d in decisions(ws, name)]
    return sorted(found, key=lambda d: d.id)


def _set_of(ws: Any, artefact: dict[str, Any]):
    name = artefact["set"].get("name") or ws.config.default_set
    qs = ws.question_set(name)
    if not qs.exists():
        raise CuratorError(f"the run scored set {name!r}, which is not in {ws.datasets_dir}")
    return qs


def _slice_order(artefact: dict[str, Any]) -> dict[str, int]:
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
    for rank, pid in below:
        out.append(Result(rank, pid, None, None, labels[pid], in_top=False))
    return out


def _run_index(ws: Any, path: Path) -> dict[str, Any]:
    """What earlier-run lookups need from an artefact: set, time, label and each question's
    (first relevant rank, failure). Artefacts are never rewritten, so this is cached in
    .curator/triage-index/ keyed by the file's size and mtime (a big artefact parses in
    a few hundred ms; its index in a few)."""
    stat = path.stat()
    key = [stat.st_size, stat.st_mtime_ns]
    cache = ws.state_dir / "triage-index" / f"{path.name}.idx.json"
    try:
        index = _loads(cache.read_bytes())
        if index.get("key") == key:
            return index
    except (OSError, ValueError, AttributeError):
        pass
    run = _read(path)
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


def earlier_runs(ws: Any, artefact: dict[str, Any], query_ids: Any) -> dict[str, list[EarlierRun]]:
    """For each query id, its first relevant rank and failure in every stored run of the same
    set created before this one, oldest first. Unreadable artefacts are left out."""
    wanted = set(query_ids)
    this = _run_name(artefact)
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


def failures(ws: Any, artefact: dict[str, Any], *, earlier: bool = True) -> list[TriageItem]:
    """The run's failing cases, worst slice first, then by failure kind and query_id; each
    with the set's current rev, its top results marked, the decision, and (with `earlier`)
    the same question in earlier stored runs."""
    qs = _set_of(ws, artefact)
    cases = qs.read().cases
    order = _slice_order(artefact)
    latest = {d.query_id: d for d in _runs_of(ws, artefact) if d.action != "undo" and d.undone_by is None}
    items = []
    for qid, q in artefact["questions"].items():
        if not q.get("failure"):
            continue
        case = cases.get(qid)
        labels = {r.id: r.role for r in case.relevant} if case is not None else {}
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


# ---- decisions -------------------------------------------------------------------------


def decisions(ws: Any, run: str | None = None) -> list[Decision]:
    """Stored triage decisions (of one run, by its artefact file name), oldest first."""
    where, args = ("run = ?", [run]) if run else (None, None)
    rows = ws.db["triage_decisions"].rows_where(where, args, order_by="id")
    return [Decision(**row) for row in rows]


def _record(ws: Any, **row: Any) -> Decision:
    row.setdefault("at", utcnow())
    row.setdefault("undone_by", None)
    with ws.transaction():
        table = ws.db["triage_decisions"]
        new_id = table.insert(row).last_pk
    return Decision(id=new_id, **row)


def _reason(cause: str, note: str, run: str) -> str:
    text = f"triage {cause} ({run})"
    return f"{text}: {note.strip()}" if note.strip() else text


def _relabel(item: TriageItem, case: Case) -> dict[str, Any]:
    old = {r.id: r for r in case.relevant}
    relevant = []
    for pid, role in item.labels.items():
        kept = old.get(pid)
        if kept is not None and kept.role == role:
            relevant.append(kept.model_dump(exclude_none=True))
        else:
            entry: dict[str, Any] = {"id": pid, "role": role}
            if kept is not None and kept.revision:
                entry["revision"] = kept.revision
            relevant.append(entry)
    return {"relevant": relevant, "expect_empty": False if relevant else case.expect_empty}


def _repin(ws: Any, item: TriageItem, case: Case, revision: str | None, passage: str | None) -> dict[str, Any]:
    """Pin the case's labels (the pinned ones, else the primaries) to `revision`, or to each
    passage's current revision in the corpus."""
    pinned = [r for r in case.relevant if r.revision] or case.primaries
    if passage is not None:
        pinned = [r for r in pinned if r.id == passage] or [r for r in case.relevant if r.id == passage]
    if not pinned:
        raise CuratorError(f"{case.query_id}: no labelled passage to re-pin")
    new_revs: dict[str, str] = {}
    for r in pinned:
        want = revision
        if want is None:
            current = [rev for rev, _, is_current in ws.revisions_of(r.id) if is_current]
            if not current:
                raise CuratorError(f"{case.query_id}: {r.id} is not in the corpus; cannot re-pin it")
            want = current[0]
        new_revs[r.id] = want
    if all(r.revision == new_revs[r.id] for r in pinned) and (
        case.freshness is None or case.freshness.revision in (None, *new_revs.values())
    ):
        raise CuratorError(f"{case.query_id}: already pinned to {', '.join(sorted(set(new_revs.values())))}")
    relevant = []
    for r in case.relevant:
        data = r.model_dump(exclude_none=True)
        if r.id in new_revs:
            data["revision"] = new_revs[r.id]
        relevant.append(data)
    updates: dict[str, Any] = {"relevant": relevant}
    if case.freshness is not None and case.freshness.revision is not None:
        first = next((r.id for r in case.primaries if r.id in new_revs), None)
        if first is not None:
            updates["freshness"] = {"revision": new_revs[first]}
    return updates


class _Unchanged(Exception):
    def __init__(self, case: Case):
        super().__init__(case.query_id)
        self.case = case


class TriageSession:
    """The queue of one run's failures and the decisions taken on them, without textual."""

    def __init__(
        self,
        ws: Any,
        run: str | Path | dict[str, Any] | None = None,
        *,
        reviewer: str | None = None,
        include_decided: bool = False,
        earlier: bool = True,
    ):
        self.ws = ws
        self.artefact = run if isinstance(run, dict) else load_artefact(ws, run)
        self.run = _run_name(self.artefact)
        self.qs = _set_of(ws, self.artefact)
        self.reviewer = reviewer or ws.config.reviewer_name
        self.items = failures(ws, self.artefact, earlier=earlier)
        self.queue = [i for i in self.items if include_decided or i.decision is None]
        self.undo_stack: list[tuple[Decision, TriageItem]] = []
        self._lock = threading.RLock()

    @property
    def remaining(self) -> int:
        return len(self.queue)

    def load_earlier(self) -> None:
        """Fill every item's earlier runs (slow with many big stored runs: the app calls it
        in a worker after the first card shows)."""
        found = earlier_runs(self.ws, self.artefact, [i.query_id for i in self.items])
        for item in self.items:
            item.earlier = found[item.query_id]

    def next_item(self) -> TriageItem | None:
        return self.queue[0] if self.queue else None

    def mark(self, item: TriageItem, passage_id: str, role: str | None) -> None:
        """Stage a label change on the card (saved by the `bad_label` decision)."""
        if role is None:
            item.labels.pop(passage_id, None)
        elif role in ("primary", "secondary"):
            item.labels[passage_id] = role
        else:
            raise ValueError(f"role must be primary, secondary or None, got {role!r}")
        labels = item.labels
        for result in item.results:
            if result.mark != "stale":
                result.mark = labels.get(result.id, "unlabelled")

    def skip(self, item: TriageItem) -> None:
        """Send the card to the back of the queue; nothing is recorded."""
        with self._lock:
            if item in self.queue:
                self.queue.remove(item)
                self.queue.append(item)

    def decide(
        self,
        item: TriageItem,
        cause: str,
        *,
        note: str = "",
        revision: str | None = None,
        passage: str | None = None,
    ) -> Decision:
        """Name the cause and act: relabel (bad_label), re-pin (stale_metadata; `revision`
        default: the corpus's current one) or tag `regression` (the others)."""
        if cause not in CAUSES:
            raise CuratorError(f"unknown cause {cause!r}; expected one of {', '.join(CAUSES)}")
        action = ACTION_OF[cause]
        if action != "relabel" and item.edited:
            raise CuratorError("the labels on this card were changed: save them with bad label, or clear the changes")
        if action == "relabel" and not item.edited:
            raise CuratorError("bad label: change the labels first (p primary, o secondary, c clear)")

        def change(case: Case) -> dict[str, Any]:
            if case.status != "active":
                raise CuratorError(f"{item.query_id} is no longer an active case of set {self.qs.name!r}")
            if action == "relabel":
                return _relabel(item, case)
            if action == "repin":
                return _repin(self.ws, item, case, revision, passage)
            if REGRESSION_TAG in case.tags:
                raise _Unchanged(case)  # already held by the next freeze: record the cause only
            return {"tags": [*case.tags, REGRESSION_TAG]}

        with self._lock:
            try:
                revised = self.qs.revise(
                    item.query_id, change, action="edit" if action == "regression" else "relabel",
                    reason=_reason(cause, note, self.run), reviewer=self.reviewer, versions=self.ws.versions(),
                )
                case = revised
            except _Unchanged as unchanged:
                revised, case = None, unchanged.case
            decision = _record(
                self.ws, run=self.run, set_name=self.qs.name, query_id=item.query_id, slice=item.slice,
                failure=item.failure, cause=cause, note=note.strip(), action=action,
                rev=revised.rev if revised else None, reviewer=self.reviewer,
            )
            self._refresh(item, case)
            item.decision = decision
            self.undo_stack.append((decision, item))
            if item in self.queue:
                self.queue.remove(item)
            return decision

    def undo(self) -> TriageItem | None:
        """Take back this session's last decision: append a rev restoring the labels, pins
        and tags it changed, record an `undo` row, and put the card back at the front."""
        with self._lock:
            if not self.undo_stack:
                return None
            decision, item = self.undo_stack.pop()
            rev = None
            if decision.rev is not None:
                result = self.qs.read()
                history = result.history.get(decision.query_id, [])
                before = next((c for c in history if c.rev == decision.rev - 1), None)
                latest = result.cases.get(decision.query_id)
                if before is None or latest is None:
                    raise CuratorError(f"{decision.query_id}: cannot find rev {decision.rev - 1} to restore")
                restore = {"relevant": [r.model_dump(exclude_none=True) for r in before.relevant],
                           "freshness": before.freshness.model_dump(exclude_none=True) if before.freshness else None,
                           "expect_empty": before.expect_empty}
                if decision.action == "regression":
                    restore = {"tags": [t for t in latest.tags if t != REGRESSION_TAG or t in before.tags]}
                revised = self.qs.revise(
                    decision.query_id, restore, action="relabel" if decision.action != "regression" else "edit",
                    reason=f"undo triage {decision.cause} ({self.run})", reviewer=self.reviewer,
                    versions=self.ws.versions(),
                )
                rev = revised.rev
                self._refresh(item, revised)
            undo = _record(
                self.ws, run=self.run, set_name=self.qs.name, query_id=decision.query_id, slice=decision.slice,
                failure=decision.failure, cause=decision.cause, note="", action="undo", rev=rev,
                reviewer=self.reviewer,
            )
            with self.ws.transaction():
                self.ws.db["triage_decisions"].update(decision.id, {"undone_by": undo.id})
            item.decision = None
            if item in self.queue:
                self.queue.remove(item)
            self.queue.insert(0, item)
            return item

    def _refresh(self, item: TriageItem, case: Case) -> None:
        item.case = case
        item.labels = {r.id: r.role for r in case.relevant}
        for result in item.results:
            if result.mark != "stale":
                result.mark = item.labels.get(result.id, "unlabelled")


# ---- summary ---------------------------------------------------------------------------


def summary(ws: Any, artefact: dict[str, Any]) -> dict[str, Any]:
    """Failures grouped by cause (the latest decision per case) and slice, plus the ones
    not triaged yet, for the team's weekly review."""
    run = _run_name(artefact)
    failing = {q: v for q, v in artefact["questions"].items() if v.get("failure")}
    latest: dict[str, Decision] = {}
    for d in _runs_of(ws, artefact):
        if d.action != "undo" and d.undone_by is None:
            latest[d.query_id] = d
    slices = sorted({v["slice"] for v in failing.values()}, key=lambda s: _slice_order(artefact).get(s, 99))
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
        "run": run,
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


# ---- rescoring -------------------------------------------------------------------------


def _run_from_file(ws: Any, artefact: dict[str, Any]) -> RunData | None:
    """The original run file, if it is still there unchanged (sha256 as recorded)."""
    info = artefact["run"]
    if not info.get("path") or info.get("path") == "<memory>" or not info.get("sha256"):
        return None
    path = Path(info["path"])
    if not path.is_absolute():
        path = ws.root / path
    if not path.is_file():
        return None
    try:
        run = read_run(path, info.get("format") if info.get("format") in ("jsonl", "trec", "ranx") else None)
    except InputError:
        return None
    return run if run.sha256 == info["sha256"] else None


def _run_from_artefact(artefact: dict[str, Any]) -> RunData:
    """Rebuild each query's ranking from what the artefact kept: the top results with
    scores and revisions, plus the ranks of the passages labelled when it was scored.
    Other positions hold placeholders that no label can match (unjudged)."""
    run = RunData({}, path=artefact["run"].get("path") or "<memory>", format="python",
                  sha256=artefact["run"].get("sha256"))
    for qid, q in artefact["questions"].items():
        if q.get("failure") == "missing":
            continue
        at: dict[int, tuple[str, float | None, str | None]] = {}
        for rank, top in enumerate(q.get("top") or [], 1):
            at[rank] = (top["id"], top.get("score"), top.get("revision"))
        for doc, rank in (q.get("ranks") or {}).items():
            if rank is not None and rank not in at:
                at[rank] = (doc, None, None)
        for doc, rank in (q.get("stale_ranks") or {}).items():
            if rank not in at:
                at[rank] = (doc, None, "\x00stale")
        depth = max(at, default=0)
        ids, scores, revisions = [], [], []
        for rank in range(1, depth + 1):
            doc, score, revision = at.get(rank, (f"{UNJUDGED}{rank}", None, None))
            ids.append(doc)
            scores.append(score)
            revisions.append(revision)
        has_revisions = any(r is not None for r in revisions)
        run.queries[qid] = Ranked(ids, scores, revisions if has_revisions else None, q.get("latency_ms"))
    return run


def rescore(ws: Any, artefact: dict[str, Any] | str | Path | None = None, *, write: bool = True):
    """Recompute a stored run's metrics with the set's current labels, without the
    retriever, and store a new artefact naming its source run.

    The rankings come from the original run file when it is still there unchanged, else
    from the artefact itself (its top results and labelled ranks; a passage labelled since
    that ranked below the kept top results counts as not retrieved). Returns the
    `curator.scoring.ScoreResult`.
    """
    from curator.scoring import ScoreResult, score

    source = artefact if isinstance(artefact, dict) else load_artefact(ws, artefact)
    run = _run_from_file(ws, source)
    mode = "run file"
    if run is None:
        run, mode = _run_from_artefact(source), "artefact"
    config = source["config"]
    qs = _set_of(ws, source)
    label = "rescore"  # not the source's label: `curator triage LABEL` must stay unambiguous
    result = score(qs, run, k=config["k"], rel_level=config["rel_level"],
                   negative_threshold=config.get("negative_threshold"), gates=config.get("gates") or [],
                   workspace=ws, label=label, write=False)
    art = result.artefact
    art["run"] = {**source["run"], "problems": art["run"]["problems"]}
    if mode == "artefact":
        # Placeholder ids of unkept ranks are not queries' results anyone should read.
        for q in art["questions"].values():
            q["top"] = [t for t in q.get("top", []) if not t["id"].startswith(UNJUDGED)]
    art["source_run"] = {
        "artefact": _run_name(source),
        "created_at": source["created_at"],
        "label": source.get("label"),
        "set_sha256": source["set"].get("sha256"),
        "rankings_from": mode,
    }
    path = write_artefact(ws.runs_dir, art) if write else None
    return ScoreResult(art, path)


def demo_runs(ws: Any, target: Path, say: Any) -> None:
    """Demo step: score the sample runs (BM25, then a `dense-v2` run with failures of every
    kind) so `curator triage` has a run with earlier history out of the box."""
    from curator.scoring import score_run

    runs = target / "retriever-runs"
    for name, label in (("bm25.jsonl", "bm25"), ("triage-example.jsonl", "dense-v2")):
        if (runs / name).is_file():
            say(f"Scoring the sample run {name}")
            score_run(ws, runs / name, label=label)

"""A model's answer as candidates: each question checked against its slice's rules
(`slices.py`), given the provenance a reviewer sees (model, prompt, passages, run),
de-duplicated and queued (`Intake`); the run's summary and failures are counted here."""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from curator.config import GenerateConfig
from curator.generate import slices as sl
from curator.generate.prompts import PromptTemplate
from curator.generate.store import record_task
from curator.generate.tasks import Task
from curator.models import CandidateIn, Suggestion
from curator.text import normalize_query

if TYPE_CHECKING:
    from curator.workspace import Workspace


@dataclass
class Failure:
    task: str
    passages: list[str]
    error: str


@dataclass
class GenerateSummary:
    run_id: str
    backend: str
    model: str
    passages_selected: int = 0
    passages_skipped_covered: int = 0
    tasks: int = 0
    tasks_cached: int = 0
    tasks_failed: int = 0
    tasks_not_run: int = 0
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    candidates_added: int = 0
    by_slice: dict[str, int] = field(default_factory=dict)
    already_queued: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)
    stopped: str | None = None
    dry_run: bool = False
    estimate: dict[str, Any] | None = None
    batch_id: str | None = None
    batch_status: str | None = None
    elapsed: float = 0.0

    @property
    def complete(self) -> bool:
        return not self.failures and not self.tasks_not_run and not self.stopped


_DENSE: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()  # workspace -> DenseIndex | None


def _dense_top(ws: Workspace, question: str) -> tuple[str, str | None] | None:
    """The dense retriever's top hit for a negative's check, when one is configured; an
    endpoint that fails leaves the check to BM25 (issue 20, point 5)."""
    from curator.errors import CuratorError
    from curator.suggest.dense import DenseIndex, embedder_for

    if ws.config.suggest.dense == "none":
        return None
    try:
        if ws not in _DENSE:
            embedder = embedder_for(ws.config)
            _DENSE[ws] = DenseIndex(ws, embedder) if embedder is not None else None
        index = _DENSE[ws]
        top = index.search(question, 1) if index is not None else []
    except CuratorError:
        return None
    return (top[0][0], top[0][1]) if top else None


def checked_candidate(
    ws: Workspace,
    settings: GenerateConfig,
    model: str,
    run_id: str,
    task: Task,
    template: PromptTemplate,
    question: str,
    entry: dict[str, Any],
) -> CandidateIn | str:
    """`question` (from `entry`, one item of the model's answer for `template`) as a
    candidate, or the problem that rejects it."""
    problem = sl.general_problem(question)
    if problem is not None:
        return problem
    p = task.passages[0]
    provenance: dict[str, Any] = {
        "model": model,
        "prompt": template.name,
        "prompt_version": template.version,
        "prompt_hash": template.hash,
        "call_prompt_hash": task.prompt_hash,
        "passages": [{"id": x.id, "revision": x.revision} for x in task.passages],
        "run_id": run_id,
        "task": task.key,
    }
    suggestions = [Suggestion(id=p.id, role="primary", revision=p.revision, reason="generated from")]
    expect_empty = require_all = False
    rationale = " ".join(str(entry.get("rationale", "")).split())[:300]
    if template.output == "identifier_question":
        problem, ident = sl.check_identifier(question, str(entry.get("identifier", "")), task.identifiers)
        provenance["identifier"] = ident
    elif template.output == "question" and template.slice != "negative":
        overlap = sl.paraphrase_overlap(question, p.text + " " + p.heading)
        provenance["overlap"] = round(overlap, 1)
        if template.slice == "paraphrase" and overlap > settings.paraphrase_max_overlap:
            problem = "paraphrase too close to the passage's wording"
    elif template.slice == "negative":
        suggestions = []
        expect_empty = True
        hit = sl.negative_match(ws, question, settings.negative_max_coverage, _dense_top(ws, question))
        if hit is not None:
            problem = "negative answered by the corpus"
            provenance["answered_by"] = hit[0]
    elif template.output == "freshness_question":
        old, new = str(entry.get("old_answer", "")), str(entry.get("new_answer", ""))
        previous = task.previous
        problem = sl.freshness_problem(old, new, previous.text if previous else "", p.text)
        provenance.update(
            previous_revision=previous.revision if previous else None,
            old_answer=old[:300],
            new_answer=new[:300],
        )
        rationale = (rationale + f" (was: {old[:80]}; now: {new[:80]})").strip()
    elif template.output == "multi_hop_question":
        problem = sl.multi_hop_problem([str(x) for x in entry.get("passages_used", [])], task.passage_ids)
        suggestions = [
            Suggestion(id=x.id, role="primary", revision=x.revision, reason="generated from")
            for x in task.passages
        ]
        require_all = True
        provenance["relation"] = task.relation
    if problem is not None:
        return problem
    return CandidateIn(
        query=question,
        source_kind="generated",
        suggested_slice=template.slice,
        suggestions=suggestions,
        provenance=provenance,
        rationale=rationale,
        expect_empty=expect_empty,
        require_all=require_all,
    )


class Intake:
    """A run's answers as queued candidates: each question checked, de-duplicated against
    the queue, the sets and this run's output, then queued; every task's outcome recorded."""

    def __init__(self, ws: Workspace, settings: GenerateConfig, run_id: str, summary: GenerateSummary,
                 redact: Callable[[str], str]):
        self.ws = ws
        self.settings = settings
        self.run_id = run_id
        self.summary = summary
        self.redact = redact
        norms = sl.existing_questions(ws)
        self.known_norms = set(norms)
        self.deduper = sl.Deduper(settings.duplicate_similarity, norms)

    def fail(self, task: Task, error: str) -> None:
        error = self.redact(error)
        self.summary.tasks_failed += 1
        self.summary.failures.append(Failure(task.name, task.passage_ids, error))
        self.record(task, "failed", error=error)

    def record(self, task: Task, status: str, *, error: str = "", candidates: int = 0,
               rejected: Counter[str] | None = None) -> None:
        record_task(self.ws, self.run_id, task.key, task.name, task.passage_ids, status,
                    error=error, candidates=candidates, rejected=dict(rejected or {}))

    def ingest(self, task: Task, output: dict[str, Any], *, status: str) -> None:
        rejected: Counter[str] = Counter()
        items: list[CandidateIn] = []
        for template in task.templates:
            entries = output.get(template.slice) or []
            for entry in entries[: template.questions]:
                made = self._candidate(task, template, entry, rejected)
                if made is not None:
                    items.append(made)
        added = self.queue(items, rejected)
        for reason, n in rejected.items():
            self.summary.rejected[reason] = self.summary.rejected.get(reason, 0) + n
        self.record(task, status, candidates=added, rejected=rejected)

    def queue(self, items: list[CandidateIn], rejected: Counter[str]) -> int:
        fresh: list[CandidateIn] = []
        for item in items:
            norm = normalize_query(item.query)
            if norm in self.known_norms:
                self.summary.already_queued += 1
                continue
            if self.deduper.duplicate_of(item.query):
                rejected["near-duplicate of an existing question"] += 1
                continue
            self.known_norms.add(norm)
            self.deduper.add(item.query)
            fresh.append(item)
        if not fresh:
            return 0
        result = self.ws.add_candidates(fresh)
        added = len(result.added)
        self.summary.candidates_added += added
        self.summary.already_queued += len(result.existing)
        for item in fresh:
            s = item.suggested_slice or "?"
            self.summary.by_slice[s] = self.summary.by_slice.get(s, 0) + 1
        return added

    def _candidate(self, task: Task, template: PromptTemplate, entry: dict[str, Any],
                   rejected: Counter[str]) -> CandidateIn | None:
        question = " ".join(str(entry.get("question", "")).split())
        if normalize_query(question) in self.known_norms:
            self.summary.already_queued += 1  # e.g. a rerun served from the cache
            return None
        made = checked_candidate(self.ws, self.settings, self.summary.model, self.run_id, task, template,
                                 question, entry)
        if isinstance(made, str):
            rejected[f"{template.slice}: {made}"] += 1
            return None
        return made

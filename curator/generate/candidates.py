"""A model's answer as candidates: each question checked against its slice's rules
(`slices.py`) and given the provenance a reviewer sees (model, prompt, passages, run)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from curator.config import GenerateConfig
from curator.generate import slices as sl
from curator.generate.prompts import PromptTemplate
from curator.generate.tasks import Task
from curator.models import CandidateIn, Suggestion

if TYPE_CHECKING:
    from curator.workspace import Workspace


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
        hit = sl.negative_match(ws, question, settings.negative_max_coverage)
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

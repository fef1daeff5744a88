"""Tasks: one model call's worth of work, rendered from prompt templates and passages.

A passage task asks every single-passage slice about one passage (and its previous
revision for freshness); a group task asks the multi-hop slices about a group. Rendering
stores the combined prompt by its hash and gives the task its cache key (model, prompt,
passage fingerprints, parameters, rendered text).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from curator.generate import identifiers as idents
from curator.generate import slices as sl
from curator.generate.prompts import FRAME_VERSION, PromptTemplate, combined_hash, combined_output
from curator.generate.store import cache_key, store_prompt
from curator.models import Passage
from curator.text import sha256_hex

if TYPE_CHECKING:
    from curator.workspace import Workspace

_TOKENS_PER_QUESTION = 70  # completion estimate for --dry-run and the cost budget
_MAX_IDENTIFIERS = 8


@dataclass
class Task:
    key: str
    kind: str  # passage | group
    templates: list[PromptTemplate]
    passages: list[Passage]
    previous: Passage | None
    identifiers: list[idents.Identifier]
    relation: str
    prompt_hash: str
    system: str
    user: str
    fingerprints: list[str]

    @property
    def name(self) -> str:
        return "+".join(t.slice for t in self.templates)

    @property
    def version(self) -> str:
        return "+".join(t.version for t in self.templates)

    @property
    def passage_ids(self) -> list[str]:
        return [p.id for p in self.passages]

    @property
    def output(self) -> type[BaseModel]:
        """What the model's answer must be: a list of questions per slice."""
        return combined_output(tuple(self.templates))

    @property
    def estimate_tokens(self) -> tuple[int, int]:
        """(prompt, completion) tokens, for --dry-run and the cost budget."""
        prompt = (len(self.system) + len(self.user)) // 4 + 60
        return prompt, sum(t.questions for t in self.templates) * _TOKENS_PER_QUESTION


def corpus_topics(ws: Workspace) -> str:
    """The ten words most common in document titles: what the corpus is about."""
    counts: Counter[str] = Counter()
    for title in ws.document_titles():
        counts.update(set(sl.content_words(title or "")))
    # ties broken by the word, never by set order (which varies per process and
    # would change the prompt, and so the cache key, on every run)
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
    return ", ".join(w for w, _ in top) or "this corpus"


def previous_revision(ws: Workspace, p: Passage) -> Passage | None:
    """The newest older revision of `p` whose text differs from it."""
    for revision, _at, is_current in ws.revisions_of(p.id):
        if is_current or revision == p.revision:
            continue
        older = ws.passage(p.id, revision)
        if older is not None and older.fingerprint != p.fingerprint:
            return older
    return None


@dataclass
class TaskMaker:
    """Renders the tasks of one run with its model, parameters and corpus topics."""

    ws: Workspace
    model: str
    params: dict[str, Any]
    topics: str

    def passage_task(self, p: Passage, slices: list[PromptTemplate]) -> Task | None:
        """One call for every template in `slices` that applies to `p` (None: none does)."""
        found = idents.mine(p.heading + "\n" + p.text)
        ranked = idents.rank(found, p.heading, Counter())[:_MAX_IDENTIFIERS]
        previous = None
        if any(t.input == "revisions" for t in slices):
            previous = previous_revision(self.ws, p)
        templates = []
        for t in slices:
            if t.output == "identifier_question" and not ranked:
                continue  # nothing to quote verbatim
            if t.input == "revisions" and previous is None:
                continue
            templates.append(t)
        if not templates:
            return None
        base = {
            "passage_id": p.id,
            "title": p.title or "",
            "heading": p.heading,
            "document": p.doc_id,
            "identifiers": ", ".join(f"`{i.text}`" for i in ranked) or "(none)",
        }
        if previous is not None:
            base.update(
                current_revision=p.revision,
                previous_revision=previous.revision,
                current_date=p.committed_at or "unknown date",
                previous_date=previous.committed_at or "unknown date",
            )
        return self._task("passage", templates, [p], previous, ranked, "", base)

    def group_task(self, group: sl.Group, templates: list[PromptTemplate]) -> Task:
        ids = [p.id for p in group.passages]
        base = {
            "passage_ids": ", ".join(f"`{i}`" for i in ids),
            "relation": group.relation,
            "count": len(ids),
        }
        return self._task("group", templates, group.passages, None, [], group.relation, base)

    def _task(self, kind: str, templates: list[PromptTemplate], passages: list[Passage],
              previous: Passage | None, identifiers: list[idents.Identifier], relation: str,
              base: dict[str, Any]) -> Task:
        """The task asking `templates` about `passages` (and `previous`, the older revision
        of a freshness task's passage)."""
        blocks = [_passage_block("passage", p) for p in passages]
        fingerprints = [p.fingerprint for p in passages]
        if previous is not None:
            blocks.append(_passage_block("previous_revision", previous))
            fingerprints.append(previous.fingerprint)
        systems: list[str] = []
        parts: list[str] = []
        for t in templates:
            system, user = t.render(self._variables(t, base))
            if system not in systems:
                systems.append(system)
            parts.append(f"## Task `{t.slice}`\n{user}")
        keys = ", ".join(f'"{t.slice}"' for t in templates)
        system = "\n\n".join(systems) + (
            f"\n\nAnswer every task in one JSON object with the keys {keys}; each holds a list "
            "of questions (an empty list when the task cannot be done well)."
        )
        user = "\n\n".join(blocks) + "\n\n" + "\n\n".join(parts)
        prompt_hash = combined_hash(templates)
        store_prompt(
            self.ws, prompt_hash, "+".join(t.name for t in templates),
            "+".join(t.version for t in templates),
            {"frame": FRAME_VERSION, "templates": [t.hash for t in templates]},
        )
        # The rendered text covers what fingerprints do not (corpus topics, group relation).
        params = {**self.params, "rendered": sha256_hex(system + "\x00" + user)[:16]}
        key = cache_key(self.model, prompt_hash, fingerprints, params)
        return Task(key, kind, templates, passages, previous, identifiers, relation,
                    prompt_hash, system, user, fingerprints)

    def _variables(self, template: PromptTemplate, extra: dict[str, Any]) -> dict[str, Any]:
        slice_cfg = self.ws.config.slices.get(template.slice)
        return {
            "slice": template.slice,
            "slice_description": slice_cfg.description if slice_cfg else template.description,
            "questions": template.questions,
            "corpus_topics": self.topics,
            **extra,
        }


def _passage_block(tag: str, p: Passage) -> str:
    heading = f"{p.heading}\n\n" if p.heading else ""
    return (
        f'<{tag} id="{p.id}" revision="{p.revision}" document="{p.doc_id}">\n'
        f"{heading}{p.text.strip()}\n</{tag}>"
    )

"""Moving a workspace to the current chunker's passage ids, labels included.

A workspace imported by an older chunker (`CHUNKER_VERSION`) keeps the ids it was cut
with, since re-importing an unchanged file is a no-op. `upgrade_ids(ws)` re-cuts every
stored revision of every chunked document from its stored passages (they tile the
document's body exactly), stores the new passages in place of the old ones, and maps each
old id to the new passage that now holds the old one's first character, revision by
revision. Every active case labelled with an old id then gets a `relabel` revision with
reason `id change` through `QuestionSet.revise`; nothing is rewritten.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from curator.corpus.chunker import chunk_document
from curator.models import CHUNKER_VERSION, Passage, PassageRecord

if TYPE_CHECKING:
    from curator.models import Case
    from curator.workspace import Workspace

__all__ = ["IdUpgrade", "needs_upgrade", "upgrade_ids"]

META_KEY = "chunker_version"
_CHUNKED = ("markdown", "rst", "html", "text")


@dataclass
class IdUpgrade:
    revisions: int = 0  # stored document revisions re-cut
    changed: int = 0  # of those, the ones whose ids changed
    mapping: dict[str, str] = field(default_factory=dict)  # old id -> new id (latest revision's)
    relabelled: list[tuple[str, str]] = field(default_factory=list)  # (set, query_id)


def needs_upgrade(ws: Workspace) -> bool:
    """The workspace holds passages cut by an older chunker."""
    version = ws.meta(META_KEY)
    if version == CHUNKER_VERSION:
        return False
    return ws.corpus_stats().passages_all > 0


def upgrade_ids(ws: Workspace, *, reviewer: str = "curator") -> IdUpgrade:
    """Re-cut stored documents with the current chunker and relabel the cases that named
    an id that changed (see the module docstring)."""
    result = IdUpgrade()
    config = ws.config.corpus
    latest_at: dict[str, str] = {}  # old id -> commit time of the revision its mapping came from
    for doc_id, revision, fmt, passages in list(ws.stored_revisions()):
        if fmt not in _CHUNKED or not passages:
            continue
        result.revisions += 1
        body = "".join(p.text for p in passages)
        # HTML was stored as the Markdown it was converted to; front matter was never body.
        parsed = chunk_document(body, "markdown" if fmt == "html" else fmt,
                                min_tokens=config.min_tokens, max_tokens=config.max_tokens)
        records = [
            PassageRecord(id=f"{doc_id}#{chunk.slug}", text=chunk.text, heading_path=list(chunk.heading_path),
                          tokens=chunk.tokens, ordinal=i, title=passages[0].title)
            for i, chunk in enumerate(parsed.chunks)
        ]
        if [r.id for r in records] == [p.id for p in passages] or "".join(r.text for r in records) != body:
            continue  # unchanged, or a body this chunker reads differently: left as it is
        result.changed += 1
        _map_ids(passages, [(r.id, chunk.start) for r, chunk in zip(records, parsed.chunks, strict=True)],
                 result.mapping, latest_at)
        ws.replace_passages(doc_id, revision, records)
    ws.set_meta(META_KEY, CHUNKER_VERSION)
    if result.mapping:
        result.relabelled = _relabel(ws, result.mapping, reviewer)
    return result


def _map_ids(old: list[Passage], new: list[tuple[str, int]], mapping: dict[str, str], latest_at: dict[str, str]) -> None:
    """old id -> the new passage holding its first character; the newest revision wins."""
    offset = 0
    when = old[0].committed_at or ""
    for passage in old:
        target = new[0][0]
        for new_id, start in new:
            if start <= offset:
                target = new_id
        offset += len(passage.text)
        if passage.id != target and (passage.id not in latest_at or when >= latest_at[passage.id]):
            mapping[passage.id] = target
            latest_at[passage.id] = when


def _relabel(ws: Workspace, mapping: dict[str, str], reviewer: str) -> list[tuple[str, str]]:
    done = []
    for name in ws.set_names():
        qs = ws.question_set(name)
        for case in list(qs.read().cases.values()):
            if case.status != "active" or not any(rel.id in mapping for rel in case.relevant):
                continue
            qs.revise(case.query_id, {"relevant": _renamed(case, mapping)}, action="relabel",
                      reason="id change", reviewer=reviewer, versions=ws.versions())
            done.append((name, case.query_id))
    return done


def _renamed(case: Case, mapping: dict[str, str]) -> list[dict[str, object]]:
    """The case's labels with old ids replaced; two that become one keep the first (the
    primary, when one of them is)."""
    out: dict[str, dict[str, object]] = {}
    ordered = sorted(case.relevant, key=lambda rel: rel.role != "primary")
    for rel in ordered:
        new_id = mapping.get(rel.id, rel.id)
        if new_id not in out:
            out[new_id] = {**rel.model_dump(exclude_none=True), "id": new_id}
    return list(out.values())

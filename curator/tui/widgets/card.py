"""The question, its provenance and the state of its labels.

Fixed heights in curator.tcss let a new card repaint them without a layout pass (they are
`Lines`); text is assembled from (text, style) pieces, not markup, which is slow to parse
on every card.
"""

from __future__ import annotations

from textual.content import Content

from curator.review import Card
from curator.tui.widgets.lines import Lines


class Question(Lines):
    def show(self, card: Card) -> None:
        self.update(Content(card.query))

    def prepare_card(self, card: Card) -> None:
        self.prepare(Content(card.query))


class Provenance(Lines):
    """Where the candidate came from: log counts and dates, or the generating model."""

    def show(self, card: Card) -> None:
        self.update(self.text(card))

    def prepare_card(self, card: Card) -> None:
        self.prepare(self.text(card))

    @staticmethod
    def text(card: Card) -> Content:
        cand, case = card.candidate, card.case
        if case is not None:
            text = Content.assemble(("case", "b"), f" {case.query_id} rev {case.rev} · {case.source.kind}")
        elif cand is None:
            text = Content("")
        elif cand.source_kind == "log":
            text = Content.assemble(("log", "b"), " " + " · ".join(_log_facts(cand.provenance, cand.count)))
        elif cand.source_kind == "generated":
            p = cand.provenance
            sources = ", ".join(
                str(s.get("id", s)) if isinstance(s, dict) else str(s) for s in (p.get("passages") or [])[:3]
            )
            text = Content.assemble(
                ("generated", "b"),
                f" {p.get('model', '?')} · prompt {p.get('prompt', '?')} v{p.get('prompt_version', '?')}"
                f" · from {sources or '?'}",
            )
            if cand.rationale:
                text = Content.assemble(text, "\n", (cand.rationale, "i"))
        else:
            text = Content.styled(cand.source_kind, "b")
        if cand is not None and cand.suggested_slice:
            text = Content.assemble(text, " · suggested ", (cand.suggested_slice, "b"))
        return text


class LabelState(Lines):
    """Slice, marks and what is still missing before keep is allowed."""

    def show(self, card: Card, slices: list[str]) -> None:
        self.update(self.text(card, slices))

    def prepare_card(self, card: Card, slices: list[str]) -> None:
        self.prepare(self.text(card, slices))

    @staticmethod
    def text(card: Card, slices: list[str]) -> Content:
        primaries = sum(1 for r in card.labels.values() if r == "primary")
        secondaries = len(card.labels) - primaries
        bits = [
            Content.assemble("slice ", (card.slice or "–", "b")),
            Content(f"{primaries} primary, {secondaries} secondary"),
        ]
        if card.expect_empty:
            bits.append(Content.styled("negative", "b $warning"))
        if card.require_all:
            bits.append(Content("all required"))
        if card.pinned:
            bits.append(Content("pinned to revision"))
        if card.max_age_days is not None:
            bits.append(Content(f"max age {card.max_age_days}d"))
        if card.max_rank is not None:
            bits.append(Content(f"max rank {card.max_rank}"))
        if card.tags:
            bits.append(Content("tags: " + ", ".join(card.tags)))
        if card.explanation:
            bits.append(Content("explained"))
        line = Content(" · ").join(bits)
        keys = "  ".join(f"{i}:{name}" for i, name in enumerate(slices[:9], 1))
        return Content.assemble(line, "\n", (keys, "dim"))


def modal_context(card: Card, index: int | None) -> Content:
    """The question, and the highlighted passage with its label, for a modal over the card."""
    lines = [Content.assemble(("question ", "dim"), (card.query, "b"))]
    if index is not None and 0 <= index < len(card.rows):
        row = card.rows[index]
        label = card.labels.get(row.id) or "unlabelled"
        lines.append(Content.assemble(("passage ", "dim"), (row.id, "b"), f" · {label}",
                                      *((" · ", (row.heading, "i")) if row.heading else ())))
    return Content("\n").join(lines)


def _day(value: object) -> str:
    return str(value)[:10] if value else "?"


def _log_facts(p: dict, count: int) -> list[str]:
    """What the log says of a mined query: `asked 31× by 12 users`, when (a day, or first
    → last), how many written forms, how many searches found nothing."""
    asked = f"asked {p.get('count', count):,}×"
    if users := p.get("users"):
        more = "+" if p.get("users_at_least") else ""
        asked += f" by {users}{more} user{'' if users == 1 and not more else 's'}"
    facts = [asked]
    if p.get("first_seen"):
        first, last = _day(p["first_seen"]), _day(p.get("last_seen"))
        facts.append(first if first == last else f"{first} → {last}")
    forms = p.get("distinct_forms") or len(p.get("variants") or [])
    if forms > 1:
        facts.append(f"{forms} variants")
    if zero := p.get("zero_result_searches"):
        facts.append(f"{zero:,} with no results")
    return facts

"""Identifiers in passages (error codes, alert names, flags, config keys, metrics, paths),
mined with patterns, and the offline `--backend identifiers` that turns them into
exact-identifier questions from fixed templates, without a model.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from curator.models import CandidateIn, Passage, Suggestion
from curator.storage.terms import ALERT_ENDINGS, identifier_names, identifier_parts
from curator.text import sha256_hex

if TYPE_CHECKING:
    from curator.workspace import Workspace

# Order matters: the first kind that matches a span names it.
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("error_code", re.compile(r"\b[A-Z][A-Z0-9]{1,15}(?:[-_][A-Z0-9]{1,15})*[-_][A-Z]?\d{2,6}\b")),
    ("flag", re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:[-_][a-z0-9]+)+\b|(?<![\w-])--[a-z]{4,}\b")),
    ("alert", re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+){2,}\b")),
    ("config_key", re.compile(r"\b[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*){1,5}\b")),
    ("metric", re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+){2,}\b")),
    ("path", re.compile(r"(?<![\w.:/])(?:/[A-Za-z0-9_.-]+){2,}/?")),
]
_URL = re.compile(r"\b(?:https?|ftp)://[^\s)>\]]+")
_BACKTICK = re.compile(r"`([^`\n]{3,80})`")
# Dotted words that are file names, hosts or prose, not config keys.
_NOT_KEYS = re.compile(
    r"\.(md|txt|rst|html?|json|ya?ml|toml|csv|py|go|sh|js|ts|png|svg|com|org|net|io|dev|local)$"
    r"|^(e\.g|i\.e|etc|vs)\b"
)
_MAX_LEN = 80
# Standards and encodings look like error codes but make poor exact-identifier questions.
_NOT_CODES = re.compile(r"^(UTF|ISO|RFC|SHA|MD|HTTP|TLS|SSL|IPV|CVE|UTC|GMT|AES|RSA)[-_]?\d", re.I)


@dataclass(frozen=True)
class Identifier:
    text: str
    kind: str  # error_code | flag | alert | config_key | metric | path | code


def mine(text: str) -> list[Identifier]:
    """Identifiers in `text`, in order of first appearance, each once."""
    found: dict[str, Identifier] = {}
    text = _URL.sub(lambda m: " " * len(m.group(0)), text)  # URL parts are not identifiers

    def keep(span: str, kind: str) -> None:
        span = span.strip().rstrip(".,:;")
        if 3 <= len(span) <= _MAX_LEN and span not in found:
            if kind == "config_key" and (_NOT_KEYS.search(span) or span.count(".") > 5):
                return
            if kind == "error_code" and _NOT_CODES.match(span):
                return
            if kind == "code" and (span[0] in ".#" or len(span) < 4):
                return
            found[span] = Identifier(span, kind)

    spans: list[tuple[int, str, str]] = []
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            spans.append((m.start(), m.group(0), kind))
    # CamelCase, lowerCamel and acronym names (etcdNoLeader, CephOSDDown): the rule a mined
    # query's exact_identifier suggestion uses too (curator.logs.normalise).
    for start, word in identifier_names(text):
        spans.append((start, word, _name_kind(word)))
    # A backticked token that looks like a command or key is an identifier too.
    for m in _BACKTICK.finditer(text):
        inner = m.group(1).strip()
        if " " not in inner and any(c in inner for c in "._-/:=") and not inner.startswith("http"):
            spans.append((m.start(1), inner, _kind_of(inner)))
    taken: list[tuple[int, int]] = []
    for start, span, kind in sorted(spans, key=lambda s: (s[0], -len(s[1]))):
        end = start + len(span)
        if any(a <= start < b for a, b in taken):
            continue  # inside a longer identifier already kept
        taken.append((start, end))
        keep(span, kind)
    return list(found.values())


def _name_kind(word: str) -> str:
    """An alert for a capitalised name or one ending in a failure word (`etcdNoLeader`);
    other lowerCamel names (`getUserById`) are code."""
    return "alert" if word[0].isupper() or identifier_parts(word)[-1] in ALERT_ENDINGS else "code"


def _kind_of(span: str) -> str:
    for kind, pattern in _PATTERNS:
        if pattern.fullmatch(span):
            return kind
    return "code"


def contains_verbatim(question: str, identifier: str) -> bool:
    """Whether `identifier` occurs in `question` as written, not as part of a longer word."""
    pattern = r"(?<![\w-])" + re.escape(identifier) + r"(?![\w])"
    return re.search(pattern, question) is not None


def rank(identifiers: Iterable[Identifier], heading: str, doc_freq: Counter[str]) -> list[Identifier]:
    """Best first: named in the heading, then rare in the corpus (a clear primary),
    then more specific kinds."""
    order = {"error_code": 0, "alert": 1, "flag": 2, "config_key": 3, "metric": 4, "path": 5, "code": 6}
    return sorted(
        identifiers,
        key=lambda i: (i.text not in heading, doc_freq.get(i.text, 0), order.get(i.kind, 9)),
    )


# ---- the offline backend -------------------------------------------------------------------

TEMPLATES: dict[str, list[str]] = {
    "error_code": ["What does {id} mean?", "How do I fix {id}?", "{id} what to do"],
    "alert": ["{id} is firing, what should I check?", "What triggers {id}?", "runbook for {id}"],
    "flag": ["What does the {id} flag do?", "When should I pass {id}?"],
    "config_key": ["What is {id} set to?", "What does {id} control?"],
    "metric": ["What does the {id} metric measure?", "Which alert uses {id}?"],
    "path": ["What is stored in {id}?", "What uses {id}?"],
    "code": ["What does `{id}` do?", "When do I use {id}?"],
}
BACKEND_NAME = "identifiers"
BACKEND_VERSION = "2"  # 2: lowerCamel and acronym names (the shared rule of storage.terms)
BACKEND_HASH = sha256_hex(repr(sorted(TEMPLATES.items())) + BACKEND_VERSION)[:16]


def template_question(identifier: Identifier, salt: str) -> str:
    """A deterministic question for an identifier; `salt` picks among the templates."""
    choices = TEMPLATES.get(identifier.kind, TEMPLATES["code"])
    pick = int(sha256_hex(salt + identifier.text)[:8], 16) % len(choices)
    return choices[pick].format(id=identifier.text)


def questions(
    ws: Workspace, selected: list[Passage], seed: int, run_id: str, progress: Callable[[int, int], None]
) -> tuple[list[CandidateIn], Counter[str]]:
    """One exact-identifier question per passage that holds a distinctive identifier,
    and the count of passages rejected for want of one."""
    items: list[CandidateIn] = []
    rejected: Counter[str] = Counter()
    for done, p in enumerate(selected, 1):
        ident = best_identifier(ws, p)
        if ident is None:
            rejected["exact_identifier: no distinctive identifier in the passage"] += 1
        else:
            items.append(
                CandidateIn(
                    query=template_question(ident, f"{seed}:{p.id}"),
                    source_kind="generated",
                    suggested_slice="exact_identifier",
                    suggestions=[Suggestion(id=p.id, role="primary", revision=p.revision, reason="generated from")],
                    provenance={
                        "model": BACKEND_NAME,
                        "prompt": "identifiers",
                        "prompt_version": BACKEND_VERSION,
                        "prompt_hash": BACKEND_HASH,
                        "passages": [{"id": p.id, "revision": p.revision}],
                        "identifier": ident.text,
                        "identifier_kind": ident.kind,
                        "run_id": run_id,
                    },
                    rationale=f"Quotes {ident.kind.replace('_', ' ')} {ident.text} from {p.id}.",
                )
            )
        progress(done, len(selected))
    return items, rejected


def best_identifier(ws: Workspace, p: Passage) -> Identifier | None:
    """The identifier that most clearly points at this passage: in its heading, or
    found verbatim in the fewest other passages."""
    found = mine(p.heading + "\n" + p.text)
    if not found:
        return None
    best: tuple[int, int, Identifier] | None = None
    for i, ident in enumerate(rank(found, p.heading, Counter())[:4]):
        # in how many other passages the identifier appears verbatim (capped at 5)
        spread = 0
        for hit in ws.search(ident.text, limit=6):
            other = ws.passage(hit.id, hit.revision) if hit.id != p.id else None
            if other is not None and contains_verbatim(other.text, ident.text):
                spread += 1
        if ident.text in p.heading:
            spread = -1  # the passage is about it
        if best is None or (spread, i) < best[:2]:
            best = (spread, i, ident)
    if best is None or best[0] >= 5:
        return None  # everywhere: not a clear primary
    return best[2]

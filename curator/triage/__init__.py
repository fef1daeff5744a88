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

Modules, each using only those above it: `store` (the decisions table), `causes` (what
each cause does to a case), `items` (a run's failures as cards), `session`
(`TriageSession`), `summary` (the cause table), `rescore` (metrics with current labels).
"""

from curator.triage.causes import CAUSES
from curator.triage.items import Result, TriageItem, failures, load_artefact
from curator.triage.rescore import rescore
from curator.triage.session import TriageSession
from curator.triage.store import decisions
from curator.triage.summary import summary

__all__ = ["CAUSES", "Result", "TriageItem", "TriageSession", "decisions", "failures", "load_artefact",
           "rescore", "summary"]

"""Grouping keys for queries: exact-normal form, comparison forms, identifiers.

`normalize_query` (NFKC, case-folded, whitespace collapsed) is the key candidates are
stored under, so two log lines that differ only in case or padding are one query.
The comparison form also drops punctuation and sorts words, so `cutoff DHL` and
`dhl-cutoff` compare equal in fuzzy matching; digits must agree exactly so that
`CARRIER-E1042` never joins `CARRIER-E1043`. The plain form drops the punctuation but
keeps the word order: a typo in a word's first letter moves it in the sorted form, not
in the plain one, so fuzzy matching scores both and takes the better.

Identifiers are split into parts as the index splits them (`curator.storage.terms`):
`etcdGRPCRequestsSlow` is etcd grpc requests slow, so two queries whose identifiers have
different parts (`etcdGRPCWriteRequestsSlow`) are different questions however close
their letters are (`identifier_signature`, `same_identifiers`).
"""

from __future__ import annotations

import re

from rapidfuzz.distance import Levenshtein

from curator.storage.terms import identifier_names, identifier_parts
from curator.text import normalize_query

__all__ = ["normalize_query", "compare_key", "compare_keys", "plain_key", "plain_keys", "digit_signature",
           "digit_signatures", "identifier_signature", "same_identifiers", "looks_like_identifier"]

Signature = tuple[tuple[str, ...], ...]  # the parts of each identifier of a query, in order

_PUNCT = re.compile(r"[^\w<>]+")
_DIGITS = re.compile(r"\d+")
_IDENTIFIER = re.compile(
    r"\b[A-Z][A-Z0-9]*-[A-Z]?\d{2,}\b"  # CARRIER-E1042, INC-4712
    r"|\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+){2,}\b"  # ManifestQueueStuck
    r"|\b[a-z][a-z0-9_]*\.[a-z][a-z0-9_.]*[a-z0-9_]\b"  # parser.max_retries
    r"|(?<![\w-])--[a-z][a-z0-9-]+"  # --enable-label-cache
    r"|\b[a-z]+_[a-z0-9_]+\b"  # weight_grams
)
_WORD = re.compile(r"[^\W_]+")
_CASE_CHANGE = re.compile(r"[a-z0-9][A-Z]|[A-Z][A-Z][a-z]")  # etcdNo, OSDDown: where a part begins


def compare_key(norm: str) -> str:
    """Punctuation-free, word-sorted form of a normalised query, for fuzzy matching."""
    if norm.replace(" ", "").isalnum():  # no punctuation (\w is isalnum() or `_`): skip the regex
        return " ".join(sorted(norm.split()))
    return " ".join(sorted(_PUNCT.sub(" ", norm).split()))


def compare_keys(norms: list[str]) -> list[str]:
    """`compare_key` of each of `norms`."""
    return [compare_key(norm) for norm in norms]


def plain_key(norm: str) -> str:
    """Punctuation-free form of a normalised query in its own word order (as long as its
    `compare_key`)."""
    if norm.replace(" ", "").isalnum():
        return " ".join(norm.split())
    return " ".join(_PUNCT.sub(" ", norm).split())


def plain_keys(norms: list[str]) -> list[str]:
    """`plain_key` of each of `norms`."""
    return [plain_key(norm) for norm in norms]


def identifier_signature(surface: str) -> Signature:
    """The parts of each CamelCase, lowerCamel or acronym identifier in a query as typed
    (`etcdGRPCRequestsSlow` -> (etcd, grpc, requests, slow)); () for most queries. Case is
    the only sign of these parts, so this reads the surface form, not the normalised one."""
    if surface.islower() or not _CASE_CHANGE.search(surface):
        return ()
    out = []
    for word in _WORD.findall(surface):
        if _CASE_CHANGE.search(word):
            out.append(tuple(identifier_parts(word)))
    return tuple(out)


def same_identifiers(a: Signature, b: Signature) -> bool:
    """May two queries with these identifier signatures be one question? Only if they
    name as many identifiers with as many parts each, every part the same or a typo of
    it (one edit in a part of four letters or more): `ManifestQueueStuk` is a typo of
    `ManifestQueueStuck`, `etcdGRPCWriteRequestsSlow` another alert than
    `etcdGRPCRequestsSlow`."""
    if a == b:
        return True
    if len(a) != len(b):
        return False
    for parts_a, parts_b in zip(a, b, strict=True):
        if len(parts_a) != len(parts_b):
            return False
        for x, y in zip(parts_a, parts_b, strict=True):
            if x != y and (min(len(x), len(y)) < 4 or Levenshtein.distance(x, y, score_cutoff=1) > 1):
                return False
    return True


def digit_signature(norm: str) -> str:
    """The digit runs of a query, in order: two queries with different numbers are
    different questions however alike the rest looks."""
    return " ".join(_DIGITS.findall(norm))


def digit_signatures(norms: list[str]) -> list[str]:
    """`digit_signature` of each of `norms`."""
    return [" ".join(_DIGITS.findall(norm)) for norm in norms]


def looks_like_identifier(query: str) -> bool:
    """Does the query quote an error code, alert name, config key or flag verbatim?
    Besides codes, keys and flags: a word of three parts or more split at case changes
    (`etcdNoLeader`, `CephOSDDown`, `KubeAPIErrorBudgetBurn`), or of two whose last one
    is a failure word (`KubeletDown`, `NodeFilesystemAlmostFull` has four). Ordinary
    words (`Kubernetes`, `NASA`) and two-part brands (`GitHub`, `OpenShift`, `iPhone`)
    are not identifiers."""
    if _IDENTIFIER.search(query):
        return True
    return bool(identifier_names(query))  # the rule curator.generate.identifiers shares

"""Identifier-aware index terms: what FTS5's `unicode61` tokenizer does not see by itself.

`unicode61` keeps `CephClusterNearFull` as one word and splits `parser.max_retries` into
`parser`, `max`, `retries`. Engineers type both the whole identifier and its words, so
each passage also gets, in extra indexed columns:

- `ident_terms`: the parts of every CamelCase / acronym / snake / kebab / dotted
  identifier in its heading and text (`CephClusterNearFull` -> ceph cluster near full,
  `ODFNodeMTULessThan9000` -> odf node mtu less than 9000), and each compound joined into
  one word (`parser.max_retries` -> parsermaxretries), so a query naming it verbatim
  matches one rare term;
- `path_terms`: the document path's words and the file name's parts
  (`runbooks/PrometheusRemoteWriteBehind.md` -> runbooks prometheusremotewritebehind md
  prometheus remote write behind).

Pure functions, no SQL: the corpus storage fills the columns, search splits queries.
"""

from __future__ import annotations

import re

__all__ = ["identifier_parts", "ident_terms", "path_terms", "query_words", "is_identifier_name", "identifier_names"]

# A compound: word characters joined by - _ . / : (CARRIER-E1042, parser.max_retries).
_COMPOUND = re.compile(r"\w+(?:[-_./:]\w+)*", re.UNICODE)
# The parts of one word: an acronym before a capitalised word (MTU in MTULess), a
# capitalised or lower-case run, an all-caps run, or digits.
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+|[^\W\d_]+", re.UNICODE)
_SEPARATORS = re.compile(r"[-_./:]+")
_CASE_CHANGE = re.compile(r"[a-z0-9][A-Z]|[A-Z][A-Z][a-z]")


def identifier_parts(token: str) -> list[str]:
    """The lower-cased parts of an identifier, in order (`VirtAPIDown` -> virt api down,
    `etcdNoLeader` -> etcd no leader, `max_retries` -> max retries). A piece with no case
    change (`E1042`, `http2`, `status`) stays whole."""
    parts: list[str] = []
    for piece in _SEPARATORS.split(token):
        if not _CASE_CHANGE.search(piece):
            parts.append(piece.lower())
            continue
        parts.extend(m.group().lower() for m in _PART.finditer(piece))
    return [p for p in parts if p]


def _plain(token: str) -> bool:
    """A word that cannot be a compound (most words: `the`, `Storage`): checked first, as
    it is much cheaper than splitting."""
    return token.isalnum() and (token.islower() or token[1:].islower() or token.isupper() or token.isdigit())


def _is_compound(token: str) -> bool:
    return len(identifier_parts(token)) > 1


def ident_terms(*texts: str) -> str:
    """The extra words an FTS row gets for the identifiers in `texts` (space-separated,
    each identifier once): its parts, and for a compound with separators its parts joined."""
    seen: set[str] = set()
    out: list[str] = []
    for text in texts:
        for token in dict.fromkeys(_COMPOUND.findall(text)):  # each distinct word once
            if token in seen or _plain(token) or not _is_compound(token):
                continue
            seen.add(token)
            parts = identifier_parts(token)
            out.extend(parts)
            if _SEPARATORS.search(token):
                out.append("".join(parts))
    return " ".join(out)


def path_terms(path: str | None) -> str:
    """A document path's words for the weighted path column: every folder and the file
    name as written (unicode61 lower-cases them), then the file name's identifier parts."""
    if not path:
        return ""
    clean = path.replace("\\", "/").split("#", 1)[0]
    name = clean.rsplit("/", 1)[-1]
    stem = name.rsplit(".", 1)[0] if "." in name[1:] else name
    words = [w for w in re.split(r"[/\s]+", clean) if w]
    return " ".join([*words, *identifier_parts(stem)])


def query_words(query: str) -> list[str]:
    """A query's words as the index holds them: each word (lower-cased), each
    identifier's parts, each compound joined, and runs of 2-6 adjacent words joined
    (`ceph cluster near full` also asks for `cephclusternearfull`), without repeats."""
    out: list[str] = []
    plain: list[str] = []
    for match in _COMPOUND.finditer(query):
        token = match.group()
        parts = identifier_parts(token)
        out.extend(w.lower() for w in re.findall(r"[^\W_]+", token, re.UNICODE))
        out.extend(parts)
        if len(parts) > 1:
            out.append("".join(parts))
        plain.extend(parts)
    for size in range(2, 7):
        for i in range(len(plain) - size + 1):
            out.append("".join(plain[i : i + size]))
    return list(dict.fromkeys(w for w in out if w))


# ---- names that are identifiers ------------------------------------------------------------
# One rule for curator.logs.normalise (a mined query suggests exact_identifier) and
# curator.generate.identifiers (a passage's identifier gets a generated question).

_NAME = re.compile(r"[^\W_]+")  # a run of letters and digits
# A two-part name is an alert only when its last part says what went wrong (KubeletDown);
# other two-part words are mostly products and brands (GitHub, OpenShift, JavaScript).
ALERT_ENDINGS = frozenset(
    ["down", "up", "slow", "full", "high", "low", "failing", "failed", "failure", "degraded", "errors", "error",
     "missing", "stuck", "unhealthy", "unavailable", "unreachable", "notready", "lag", "latency", "burn",
     "restarting", "pending", "crashing", "crashlooping", "throttling", "overcommit", "overcommitted", "expiring",
     "expired", "filling", "leader", "nospace", "offline", "mismatch"]
)


def is_identifier_name(word: str) -> bool:
    """Is one word (letters and digits) a CamelCase, lowerCamel or acronym identifier? Three
    parts or more split at case changes (`etcdNoLeader`, `CephOSDDown`,
    `KubeAPIErrorBudgetBurn`), or two whose last one is a failure word (`KubeletDown`).
    Ordinary words (`Kubernetes`, `NASA`) and two-part brands (`GitHub`, `iPhone`) are not."""
    if not _CASE_CHANGE.search(word):
        return False
    parts = [p for p in identifier_parts(word) if not p.isdigit()]
    if len(parts) >= 3 and len(word) >= 7:
        return True
    return len(parts) == 2 and parts[-1] in ALERT_ENDINGS and len(parts[0]) >= 3


def identifier_names(text: str) -> list[tuple[int, str]]:
    """(offset, word) of every identifier name in `text` (`is_identifier_name`), in order."""
    if not _CASE_CHANGE.search(text):
        return []
    return [(m.start(), m.group()) for m in _NAME.finditer(text) if is_identifier_name(m.group())]

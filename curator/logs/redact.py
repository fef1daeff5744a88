"""Remove personal data and secrets from query text before anything is stored.

A redacted query keeps its shape: `reset password for anna@example.com` becomes
`reset password for <EMAIL>`. Identifiers that matter for retrieval (`CARRIER-E1042`,
`parser.max_retries`, `ManifestQueueStuck`, `v2.3.1`, dates) are left alone: the patterns
below are anchored so they only fire on the shapes they name.
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

# (kind, pattern, replacement); order matters: tokens before e-mails (a JWT has dots),
# cards before phones (a card number is a long digit run).
_Replacement = str | Callable[[re.Match[str]], str | None]


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _card(match: re.Match[str]) -> str | None:
    digits = re.sub(r"\D", "", match.group(0))
    return "<CARD>" if 13 <= len(digits) <= 19 and _luhn_ok(digits) else None


def _ipv6(match: re.Match[str]) -> str | None:
    try:
        ipaddress.IPv6Address(match.group(0).split("%")[0])
    except ValueError:
        return None
    return "<IP>"


_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"

BUILTIN: list[tuple[str, re.Pattern[str], _Replacement]] = [
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"), "<TOKEN>"),
    ("bearer", re.compile(r"(?i)\b(bearer|token)\s+(?!<)[A-Za-z0-9._~+/=-]{12,}"),
     lambda m: f"{m.group(1)} <TOKEN>"),
    (
        "api_key",
        re.compile(
            r"\b(?:sk|pk|rk)[-_](?:live|test|proj)[-_][A-Za-z0-9_-]{8,}"
            r"|\bsk-[A-Za-z0-9_-]{16,}"
            r"|\bgh[pousr]_[A-Za-z0-9]{20,}"
            r"|\bxox[abprs]-[A-Za-z0-9-]{10,}"
            r"|\bAIza[0-9A-Za-z_-]{30,}"
        ),
        "<KEY>",
    ),
    ("aws_key", re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"), "<KEY>"),
    (
        "secret",
        re.compile(r"(?i)\b(api[_-]?key|secret|password|passwd|pwd|token)(\s*[:=]\s*)(?!<)\S{4,}"),
        lambda m: f"{m.group(1)}{m.group(2)}<SECRET>",
    ),
    ("email", re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"), "<EMAIL>"),
    ("card", re.compile(r"(?<![\w.-])\d(?:[ -]?\d){12,18}(?![\w-])"), _card),
    ("ipv6", re.compile(r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?:%\w+)?(?![\w:])"), _ipv6),
    ("ipv4", re.compile(rf"(?<![\w.]){_OCTET}(?:\.{_OCTET}){{3}}(?![\w.])"), "<IP>"),
    (
        "phone",
        re.compile(
            r"(?<![\w+<])\+\d{1,3}(?:[ .-]?\(?\d{1,5}\)?){2,6}(?![\w>])"  # international: +44 20 7946 0958
            r"|(?<![\w<])\(\d{2,5}\)[ .-]?\d{3,4}[ .-]?\d{3,4}(?![\w>])"  # (020) 7946 0958
            r"|(?<![\w.<-])\d{3}[.-]\d{3}[.-]\d{4}(?![\w>-])"  # 555-867-5309
            # national forms in groups, not inside a longer run of groups (a tracking
            # number written in fours): a trunk 0 (020 7946 0958, 030 1234 5678),
            # French pairs (01 23 45 67 89), North American 415 555 0134
            r"|(?<![\w.<-])(?<!\d[ .])(?:0\d{1,4}[ .-]\d{3,4}[ .-]\d{3,4}|0[1-9](?:[ .]\d\d){4}"
            r"|[2-9]\d\d [2-9]\d\d \d{4})(?![\w>-])(?![ .]\d)"
        ),
        "<PHONE>",
    ),
]


@dataclass
class Redactor:
    """Applies the built-in patterns plus `extra` ({KIND: regex}) and counts what it did."""

    extra: Mapping[str, str] = field(default_factory=dict)
    counts: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self._rules = list(BUILTIN)
        for kind, pattern in self.extra.items():
            try:
                compiled = re.compile(pattern)
            except re.error as exc:
                from curator.errors import ConfigError

                raise ConfigError(f"redact pattern {kind}={pattern!r} is not a valid regex: {exc}") from None
            self._rules.append((kind.lower(), compiled, f"<{kind.upper()}>"))

    def redact(self, text: str, weight: int = 1) -> str:
        """`text` with every match replaced by its placeholder; counts by kind (times
        `weight`, e.g. the number of log lines that carried this text)."""
        for _ in range(4):  # to a fixed point: a replacement can expose a new match
            before = text
            for kind, pattern, repl in self._rules:
                text = _sub(pattern, repl, text, kind, self.counts, weight)
            if text == before:
                break
        return text


def _sub(pattern: re.Pattern[str], repl: _Replacement, text: str, kind: str, counts: Counter[str], weight: int) -> str:
    hits = 0

    def fn(match: re.Match[str]) -> str:
        nonlocal hits
        out = repl(match) if callable(repl) else repl
        if out is None:
            return match.group(0)
        hits += 1
        return out

    text = pattern.sub(fn, text)
    if hits:
        counts[kind] += hits * weight
    return text


def detect(text: str) -> list[tuple[str, str]]:
    """(kind, matched text) for every piece of personal data or secret left in `text`;
    the property tests use it to check that redaction left nothing behind."""
    found = []
    for kind, pattern, repl in BUILTIN:
        for match in pattern.finditer(text):
            if callable(repl) and repl(match) is None:
                continue
            found.append((kind, match.group(0)))
    return found

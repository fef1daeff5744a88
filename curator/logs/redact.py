"""Remove personal data and secrets from query text before anything is stored.

A redacted query keeps its shape: `reset password for anna@example.com` becomes
`reset password for <EMAIL>`. Identifiers that matter for retrieval (`CARRIER-E1042`,
`parser.max_retries`, `ManifestQueueStuck`, `v2.3.1`, dates) are left alone: the patterns
below are anchored so they only fire on the shapes they name.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from curator.logs.given_names import GIVEN_NAMES

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
_VERSION_WORD = re.compile(r"(?i)\b(?:release|version|ver)\s*$")


def _ipv4(match: re.Match[str]) -> str | None:
    """An address, unless a version word comes right before it (`release 1.2.3.4`)."""
    if _VERSION_WORD.search(match.string, 0, match.start()):
        return None
    return "<IP>"


def _international_phone(match: re.Match[str]) -> str | None:
    """+44 20 7946 0958, but not a UTC offset (+0100) or a short code: a real number
    has at least 8 digits with its country code."""
    return "<PHONE>" if sum(c.isdigit() for c in match.group(0)) >= 8 else None


def _grouped_phone(match: re.Match[str]) -> str | None:
    """A phone in groups, unless the word before it is a group of digits too (then the
    run is a longer number, e.g. `pallet 1234 0161 496 0000`)."""
    before = match.string[: match.start()].split()
    return None if before and before[-1].isdigit() else "<PHONE>"


def _iban(match: re.Match[str]) -> str | None:
    """An IBAN passes the ISO 7064 mod-97 check."""
    code = match.group(0).replace(" ", "").upper()
    moved = code[4:] + code[:4]
    digits = "".join(str(int(c, 36)) for c in moved)
    return "<IBAN>" if int(digits) % 97 == 1 else None


def _basic_auth(match: re.Match[str]) -> str | None:
    """`Authorization: Basic ...` always; a bare `basic ...` only when its value decodes
    to user:password."""
    if not match.group(1).lower().startswith("authorization"):
        try:
            decoded = base64.b64decode(match.group(2) + "=" * (-len(match.group(2)) % 4), validate=True)
        except (binascii.Error, ValueError):
            return None
        if b":" not in decoded:
            return None
    return f"{match.group(1)}<SECRET>"


def _token_like(match: re.Match[str]) -> str | None:
    """A long run of mixed-case letters and digits that changes character class often
    (a generated token), not a CamelCase identifier such as ODFNodeMTULessThan9000."""
    value = match.group(2)
    if not (any(c.isupper() for c in value) and any(c.islower() for c in value) and any(c.isdigit() for c in value)):
        return None
    kinds = ["u" if c.isupper() else "l" if c.islower() else "d" if c.isdigit() else "o" for c in value]
    changes = sum(a != b for a, b in zip(kinds, kinds[1:], strict=False))
    return f"{match.group(1)}<SECRET>" if changes / (len(value) - 1) >= 0.4 else None


def _given_name(match: re.Match[str]) -> str | None:
    return f"{match.group(1)}<NAME>" if match.group(2) in GIVEN_NAMES else None


_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_DATE = (rf"(?:\d{{4}}-\d{{1,2}}-\d{{1,2}}|\d{{1,2}}[./-]\d{{1,2}}[./-]\d{{2,4}}"
         rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH}\s+\d{{4}}|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}})")

# (kind, pattern, replacement), applied in this order: whole secrets (a PEM block, a URL
# with credentials) before the pieces inside them, tokens before e-mails (a JWT has dots),
# IBANs and cards before phones (long digit runs), MACs before IPv6.
BUILTIN: list[tuple[str, re.Pattern[str], _Replacement]] = [
    ("private_key", re.compile(
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|.*)"
        r"|\bMII[A-Za-z0-9+/]{60,}={0,2}", re.S), "<PRIVATE_KEY>"),
    ("url_credentials", re.compile(r"(?i)\b([a-z][a-z0-9+.-]{1,15}://)[^\s/:@<>]+:[^\s/@<>]+@"),
     lambda m: f"{m.group(1)}<USER>:<PASSWORD>@"),
    ("webhook", re.compile(r"(?i)\bhttps?://(?:hooks\.slack\.com/(?:services|workflows|triggers)"
                           r"|(?:discord|discordapp)\.com/api/webhooks)/[A-Za-z0-9/_-]+"), "<WEBHOOK>"),
    ("session", re.compile(r"(?i)\b((?:j?session_?id|phpsessid|sid|session|access_token|auth_token)=)(?!<)[^&\s#;]+"),
     lambda m: f"{m.group(1)}<SESSION>"),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"), "<TOKEN>"),
    ("basic_auth", re.compile(r"(?i)\b(authorization\s*[:=]?\s*basic\s+|basic\s+)([A-Za-z0-9+/]{8,}={0,2})(?![\w+/=])"),
     _basic_auth),
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
            r"|\bnpm_[A-Za-z0-9]{36}\b"
        ),
        "<KEY>",
    ),
    ("aws_secret", re.compile(
        r"((?:\b(?:AKIA|ASIA)[A-Z0-9]{16}|<KEY>|(?i:\baws_secret_access_key|\bsecret[_ ]access[_ ]key|\bsecret[_ ]key))"
        r"\s*[:=]?\s*)[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])"), lambda m: f"{m.group(1)}<SECRET>"),
    ("aws_key", re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"), "<KEY>"),
    (
        "secret",
        re.compile(r"(?i)\b(api[_-]?key|secret|password|passwd|pwd|token)(\s*[:=]\s*)(?!<)\S{4,}"),
        lambda m: f"{m.group(1)}{m.group(2)}<SECRET>",
    ),
    # `password hunter22`: after a space only a value that looks made (a digit or a
    # symbol, 6+ characters), so `password reset link` and `token expired` stay; digit
    # groups right after a value ending in a digit go with it (`password 00.000 0000`)
    ("secret", re.compile(r"(?i)\b(api[_-]?key|secret|password|passwd|pwd|token)(\s+)(?!<|(?:api[_-]?key|secret|password|passwd|pwd|token)\b)(?=\S*[\d_.~+/=!#$%^&*-])\S{6,}(?:(?<=\d)\s\d+\b)*"),
     lambda m: f"{m.group(1)}{m.group(2)}<SECRET>"),
    ("secret", re.compile(r"(?i)((?:\b(?:key|secret|token|password)\b\s*[:=]?\s*|[:=]\s*))([A-Za-z0-9+/_-]{20,}={0,2})(?![\w+/=])"),
     _token_like),
    ("email", re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"), "<EMAIL>"),
    ("iban", re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b"), _iban),
    ("card", re.compile(r"(?<![\w.-])\d(?:[ -]?\d){12,18}(?![\w-])"), _card),
    ("ssn", re.compile(r"(?<![\w-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\w-])"), "<SSN>"),
    ("national_insurance", re.compile(r"\b[A-Z]{2} ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b|\b[a-z]{2}\d{6}[a-d]\b"), "<NINO>"),
    ("passport", re.compile(r"(?i)\b(passport(?:\s+(?:no\.?|number|num|#))?\s*[:#]?\s*)(?=[A-Z]*\d)[A-Z0-9]{6,9}\b"),
     lambda m: f"{m.group(1)}<PASSPORT>"),
    ("birth_date", re.compile(rf"(?i)\b((?:born(?:\s+on)?|dob|d\.o\.b\.?|date\s+of\s+birth)\s*[:=]?\s*){_DATE}"),
     lambda m: f"{m.group(1)}<DOB>"),
    ("mac", re.compile(r"(?i)\b[0-9a-f]{2}([:-])[0-9a-f]{2}(?:\1[0-9a-f]{2}){4}\b"), "<MAC>"),
    ("ipv6", re.compile(r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?:%\w+)?(?![\w:])"), _ipv6),
    # not a CIDR range (10.128.0.0/14: a network, not a person's address)
    ("ipv4", re.compile(rf"(?<![\w.]){_OCTET}(?:\.{_OCTET}){{3}}(?![\w.])(?!/\d)"), _ipv4),
    ("phone", re.compile(r"(?<![\w+<])\+\d{1,3}(?:[ .-]?\(?\d{1,5}\)?){2,6}(?![\w>])"), _international_phone),
    (
        "phone",
        re.compile(
            r"(?<![\w<])\(\d{2,5}\)[ .-]?\d{3,4}[ .-]?\d{3,4}(?![\w>])"  # (020) 7946 0958
            r"|(?<![\w.<-])\d{3}[.-]\d{3}[.-]\d{4}(?![\w>-])"  # 555-867-5309
            # one run of 10 digits: North American (area and exchange start 2-9) or a
            # trunk 0; an epoch time in seconds (1700000000) starts with 1 and stays
            r"|(?<![\w.+<-])(?:[2-9]\d\d[2-9]\d{6}|0[1-9]\d{8})(?![\w>-])"
        ),
        "<PHONE>",
    ),
    # national forms in groups, not inside a longer run of groups (a tracking number
    # written in fours): a trunk 0 (020 7946 0958, 030 1234 5678), French pairs
    # (01 23 45 67 89), North American 415 555 0134
    ("phone", re.compile(r"(?<![\w.<-])(?:0\d{1,4}[ .-]\d{3,4}[ .-]\d{3,4}|0[1-9](?:[ .]\d\d){4}"
                         r"|[2-9]\d\d [2-9]\d\d \d{4})(?![\w>-])(?![ .]\d+\b)"), _grouped_phone),
    ("name", re.compile(r"\b((?:[Ff]or|[Ff]rom|[Cc]ustomer|[Uu]ser|[Cc]lient)\s+)([A-Z][a-z]+)(?:\s+[A-Z][a-z'-]+){0,2}\b"),
     _given_name),
]


@dataclass
class Redactor:
    """Applies the built-in patterns, `extra` ({KIND: regex}) and `names` (a team's
    directory: each name, whole words, any case, becomes <NAME>) and counts what it did."""

    extra: Mapping[str, str] = field(default_factory=dict)
    names: Collection[str] = ()
    counts: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self._rules = list(BUILTIN)
        if self.names:
            words = sorted({" ".join(n.split()) for n in self.names if n.strip()}, key=len, reverse=True)
            alternation = "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in words)
            self._rules.insert(0, ("name", re.compile(rf"(?i)(?<!\w)(?:{alternation})(?!\w)"), "<NAME>"))
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
    if pattern.search(text) is None:  # most rules find nothing: no callback to build and call
        return text
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


def read_names(path: Path) -> list[str]:
    """The names in a `--redact-names` file: one per line, `#` comments and blank lines
    skipped."""
    from curator.errors import CuratorError

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise CuratorError(f"{path}: cannot read the names to redact ({reason})") from None
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


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

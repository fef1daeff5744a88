"""The API key kept out of everything curator stores or prints.

`Redactor` replaces a key of 16 or more characters in any letter case, any 8 or more of
its characters in a row (a key split in two), a 4-character prefix of it followed closely
by a 4-character suffix (`sk-pr...wxyz`, as servers echo keys), and anything shaped like
a key. A shorter key (a local server's placeholder) is replaced where it appears exactly.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import SecretStr

_FRAGMENT = 8  # this many characters of the key in a row are redacted wherever they appear
_SHORT = 16  # keys shorter than this are matched exactly only
# OpenAI-style keys, and JWTs (Azure Entra ID tokens from AZURE_OPENAI_AD_TOKEN).
_KEYLIKE = re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_\-*]{8,}|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_.-]+")


class Redactor:
    """Removes the API key (and anything shaped like one) from text: the key in any letter
    case, any run of `_FRAGMENT` or more of its characters (a key split in two), and a
    prefix of it followed closely by a suffix of it (`sk-pr...wxyz`, as servers echo it)."""

    def __init__(self, secret: SecretStr | None):
        value = secret.get_secret_value() if secret else ""
        # A short "key" (vLLM's EMPTY, "ollama") is a placeholder, not a secret: matched
        # exactly, never by letter case or fragments, which would redact ordinary words.
        self._short = value if 4 <= len(value) < _SHORT else ""
        self._value = value.lower() if len(value) >= _SHORT else ""
        self._fragments = _fragments(self._value)
        self._pair = _pair_pattern(self._value)

    def __call__(self, text: str) -> str:
        if self._value:
            text = self._strip_key(text)
        elif self._short:
            text = text.replace(self._short, "[redacted]")
        return _KEYLIKE.sub("[redacted]", text)

    def _strip_key(self, text: str) -> str:
        lowered = text.lower()
        spans: list[tuple[int, int]] = []
        size = _FRAGMENT
        i = 0
        while i + size <= len(lowered):
            if lowered[i : i + size] in self._fragments:
                end = i + size  # extend while the text still follows the key
                while end < len(lowered) and lowered[i : end + 1] in self._value:
                    end += 1
                spans.append((i, end))
                i = end
            else:
                i += 1
        if self._pair is not None:
            spans += [m.span() for m in self._pair.finditer(lowered)]
        if not spans:
            return text
        out, last = [], 0
        for start, end in sorted(spans):
            if end <= last:
                continue
            out.append(text[last : max(start, last)] + "[redacted]")
            last = end
        return "".join(out) + text[last:]

    def deep(self, value: Any) -> Any:
        """`value` (a model's JSON answer) with every string redacted."""
        if isinstance(value, str):
            return self(value)
        if isinstance(value, list):
            return [self.deep(v) for v in value]
        if isinstance(value, dict):
            return {k: self.deep(v) for k, v in value.items()}
        return value


def _fragments(key: str) -> set[str]:
    return {key[i : i + _FRAGMENT] for i in range(len(key) - _FRAGMENT + 1)} if key else set()


def _pair_pattern(key: str) -> re.Pattern[str] | None:
    """A 4-character prefix of the key and, within 60 characters (one space allowed), a
    4-character suffix of it: what servers print as `sk-pr...wxyz` or in two pieces."""
    if not key:
        return None
    prefix, suffix = re.escape(key[:4]), re.escape(key[-4:])
    return re.compile(f"{prefix}\\S{{0,60}}?(?:\\s{{1,3}}\\S{{0,60}}?)?{suffix}")

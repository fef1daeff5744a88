"""Front matter: a leading ``---`` (a YAML subset) or ``+++`` (TOML) block of metadata."""

from __future__ import annotations

import re
import tomllib
from typing import Any


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """A leading ``---`` (YAML-ish) or ``+++`` (TOML) block is metadata, not body."""
    bom = 1 if text.startswith("\ufeff") else 0
    delim = text[bom : bom + 3]
    if delim not in ("---", "+++"):
        return {}, text
    first_end = text.find("\n", bom)
    if first_end < 0 or text[bom:first_end].rstrip() != delim:
        return {}, text
    closers = ("---", "...") if delim == "---" else ("+++",)
    pos = first_end + 1
    while pos < len(text):
        nl = text.find("\n", pos)
        line_end = len(text) if nl < 0 else nl + 1
        if text[pos:line_end].rstrip() in closers:
            source = text[first_end + 1 : pos]
            meta = _parse_toml(source) if delim == "+++" else _parse_yaml(source)
            return meta, text[line_end:]
        pos = line_end
    return {}, text  # never closed: an ordinary thematic break, not front matter


def _parse_toml(source: str) -> dict[str, Any]:
    try:
        return tomllib.loads(source)
    except tomllib.TOMLDecodeError:
        return {}


_YAML_KEY_RE = re.compile(r"([^\s#:-][^:]*?|-[^\s:][^:]*?)[ \t]*:(?:[ \t]+(.*))?$")
_NUMBER_RE = re.compile(r"[-+]?(?:\d+|\d*\.\d+(?:[eE][-+]?\d+)?)$")
_FLOW_ITEM_RE = re.compile(r"\s*(\"(?:[^\"\\]|\\.)*\"|'(?:[^']|'')*'|[^,]*)\s*(?:,|$)")


def _yaml_scalar(raw: str) -> Any:
    value = raw.strip()
    if value[:1] in ("'", '"'):
        quote = value[0]
        end = value.rfind(quote)
        if end > 0:
            inner = value[1:end]
            return inner.replace("''", "'") if quote == "'" else inner.replace('\\"', '"')
    value = re.sub(r"\s+#.*$", "", value)  # trailing comment on an unquoted value
    if value.startswith("[") and value.endswith("]"):
        inner = value[1:-1].strip()
        if not inner:
            return []
        items = [m.group(1) for m in _FLOW_ITEM_RE.finditer(inner) if m.group(0).strip()]
        return [_yaml_scalar(item) for item in items]
    lowered = value.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("null", "~", ""):
        return None
    if _NUMBER_RE.match(value):
        return float(value) if any(c in value for c in ".eE") else int(value)
    return value


def _parse_yaml(source: str) -> dict[str, Any]:
    """The YAML subset front matter uses: ``key: scalar``, ``key: [a, b]``, a block list
    or a one-level mapping under ``key:``, and ``|``/``>`` block scalars."""
    data: dict[str, Any] = {}
    open_key: str | None = None  # key whose value continues on indented lines
    block_style: str | None = None
    block_lines: list[str] = []

    def finish_block() -> None:
        if open_key is not None and block_style is not None:
            if block_style.startswith("|"):
                data[open_key] = "\n".join(block_lines).strip("\n")
            else:
                data[open_key] = " ".join(line for line in block_lines if line)

    for raw in source.splitlines():
        stripped = raw.strip()
        indented = raw[:1] in (" ", "\t")
        if open_key is not None and block_style is not None:
            if not stripped or indented:
                block_lines.append(stripped)
                continue
            finish_block()
            open_key, block_style, block_lines = None, None, []
        if not stripped or stripped.startswith("#"):
            continue
        if open_key is not None and (indented or stripped.startswith("- ") or stripped == "-"):
            current = data.get(open_key)
            if stripped.startswith("-"):
                if not isinstance(current, list):
                    current = data[open_key] = []
                current.append(_yaml_scalar(stripped[1:]))
                continue
            m = _YAML_KEY_RE.match(stripped)
            if m:
                if not isinstance(current, dict):
                    current = data[open_key] = {}
                current[m.group(1).strip("'\"")] = _yaml_scalar(m.group(2) or "")
            continue
        m = _YAML_KEY_RE.match(stripped)
        if not m or indented:
            open_key = None
            continue
        key, value = m.group(1).strip("'\""), (m.group(2) or "").strip()
        open_key = key
        if value in ("|", "|-", "|+", ">", ">-", ">+"):
            block_style, block_lines = value, []
            data[key] = ""
        elif value:
            data[key] = _yaml_scalar(value)
            open_key = None
        else:
            data[key] = None
    finish_block()
    return data


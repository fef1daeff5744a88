"""Heading-aware document chunking with stable passage slugs.

A document is scanned once into *blocks* (headings, paragraphs, fenced code, tables) that
tile its body exactly; every chunk is a run of whole blocks, so the chunks cover the body
with no gap and no overlap, and a code block or table is never cut.

Sections are laid out as follows (``min``/``max`` are the token targets):

* A section whose own text (heading plus text before its first subsection) is below
  ``min`` and whose whole subtree fits in ``max`` is one chunk with the section's path.
* Otherwise a small section absorbs its leading subsections, in order, while it is
  below ``min`` and the result fits in ``max``; the remaining subsections get chunks of
  their own. A heading with no text of its own that cannot absorb its first subsection
  is carried into that subsection's first chunk instead of becoming a bare passage.
* A section over ``max`` is split at block boundaries into balanced pieces
  (``slug``, ``slug-part-2``, ...), so no small tail is left behind. A heading always
  stays with the block after it; a chunk exceeds ``max`` only when it is one such
  unsplittable block (a fence, a table, a paragraph) with its leading headings.
* Text before the first heading is its own chunk, slug ``intro``, unless it is below
  ``min`` and fits with the whole first section in ``max``: then it is prepended to the
  first section's first chunk.

Slugs come from headings only (GitHub style, ``-2``/``-3`` for repeats in document order),
so editing one section never renames another.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field
from html.parser import HTMLParser
from itertools import pairwise
from typing import Any

__all__ = [
    "CHUNKER_VERSION",
    "Chunk",
    "ParsedDocument",
    "chunk_document",
    "count_tokens",
    "detect_format",
    "slugify",
]

CHUNKER_VERSION = "1"  # bump when chunk boundaries or ids change for the same input

FORMATS = ("markdown", "rst", "html", "text")


@dataclass(frozen=True)
class Chunk:
    slug: str
    heading_path: tuple[str, ...]
    text: str
    start: int
    end: int
    tokens: int


@dataclass(frozen=True)
class ParsedDocument:
    title: str | None
    metadata: dict[str, Any]
    body: str
    chunks: list[Chunk]


# --------------------------------------------------------------------------- tokens

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN_RE = re.compile(
    rf"[{_CJK}]"  # CJK: roughly one token per character
    r"|\d{1,3}"  # GPT tokenizers split digit runs into groups of three
    rf"|[^\W\d{_CJK}]{{1,10}}"  # a word; very long words and identifiers count once per 10 chars
    r"|[^\w\s]+"  # a run of punctuation
)


def count_tokens(text: str) -> int:
    """Estimate GPT-style tokens: words (one per 10 letters), 3-digit groups, punctuation
    runs and CJK characters each count one. No match spans whitespace, so the count of a
    text is the sum of the counts of its lines."""
    return len(_TOKEN_RE.findall(text))


# --------------------------------------------------------------------------- slugs

_CODE_SPAN_RE = re.compile(r"(`+)(.+?)\1")
_LINK_RE = re.compile(r"!?\[([^\]]*)\](?:\([^)]*\)|\[[^\]]*\])")
_AUTOLINK_RE = re.compile(r"<((?:https?|ftp|mailto):[^>\s]*)>")
_HTML_TAG_RE = re.compile(r"</?[A-Za-z][^>]*>")
_ESCAPE_SPLIT_RE = re.compile(r"\\([!-/:-@\[-`{-~])")
# `_` is emphasis only at a word edge: snake_case names keep theirs.
_EMPHASIS_RE = re.compile(r"\*+|~~|(?<!\w)_+|_+(?!\w)")
_SLUG_DROP_RE = re.compile(r"[^\w\s-]")
_WS_RE = re.compile(r"\s+")
_HEADING_ID_RE = re.compile(r"[ \t]*\{[ \t]*#([\w:.-]+)[^{}]*\}[ \t]*$")


def _strip_markdown_outside_code(text: str) -> str:
    text = _LINK_RE.sub(r"\1", text)
    text = _AUTOLINK_RE.sub(r"\1", text)
    text = _HTML_TAG_RE.sub("", text)
    parts = _ESCAPE_SPLIT_RE.split(text)  # odd items are escaped characters: keep them
    for i in range(0, len(parts), 2):
        parts[i] = _EMPHASIS_RE.sub("", parts[i])
    return "".join(parts)


def _strip_markdown(text: str) -> str:
    """Inline Markdown to plain text; code span contents are kept verbatim."""
    out: list[str] = []
    pos = 0
    for m in _CODE_SPAN_RE.finditer(text):
        out.append(_strip_markdown_outside_code(text[pos : m.start()]))
        out.append(m.group(2).strip())
        pos = m.end()
    out.append(_strip_markdown_outside_code(text[pos:]))
    return "".join(out)


def slugify(heading: str) -> str:
    """GitHub-style anchor: inline Markdown stripped, lowercased, punctuation except ``-``
    and ``_`` dropped, each space a ``-`` (like GitHub, runs are not collapsed)."""
    text = _SLUG_DROP_RE.sub("", _strip_markdown(heading).strip().lower())
    return _WS_RE.sub(lambda m: "-" * len(m.group()), text) or "section"


def _plain(text: str) -> str:
    return " ".join(text.split())


_RST_ROLE_RE = re.compile(r":[\w.+:-]+:`([^`]*)`")
_RST_LINK_RE = re.compile(r"`([^`<]*?)\s*<[^`>]*>`_{0,2}")
_RST_TARGET_RE = re.compile(r"\s*<[^>]*>$")
_RST_MARKUP_RE = re.compile(r"``|`_{0,2}|\*+|\|")


def _strip_rst(text: str) -> str:
    text = _RST_LINK_RE.sub(r"\1", text)
    # :ref:`label <target>` shows the label
    text = _RST_ROLE_RE.sub(lambda m: _RST_TARGET_RE.sub("", m.group(1)), text)
    return _RST_MARKUP_RE.sub("", text)


# --------------------------------------------------------------------------- formats

_EXTENSIONS = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".rst": "rst",
    ".html": "html",
    ".htm": "html",
}


def detect_format(path: str) -> str:
    """Format from the file extension (case-insensitive); anything unknown is text."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1].lower()
    dot = name.rfind(".")
    return _EXTENSIONS.get(name[dot:], "text") if dot > 0 else "text"


# --------------------------------------------------------------------------- front matter

_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


def _lines(text: str) -> list[str]:
    # Only CR/LF end lines (as in CommonMark); str.splitlines would also break on \f etc.
    return _LINE_RE.findall(text)


def _split_front_matter(text: str) -> tuple[dict[str, Any], str]:
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


def _metadata_title(metadata: dict[str, Any]) -> str | None:
    title = metadata.get("title")
    if isinstance(title, bool) or not isinstance(title, str | int | float):
        return None
    return _plain(str(title)) or None


# --------------------------------------------------------------------------- blocks

HEADING, PARAGRAPH, FENCE, TABLE = "heading", "paragraph", "fence", "table"


@dataclass(slots=True)
class _Block:
    start: int
    end: int
    kind: str
    level: int = 0  # headings only
    title: str = ""  # plain heading text
    slug: str = ""  # heading slug base (before de-duplication)
    tokens: int = 0


class _Blocks:
    """Accumulates blocks while a scanner walks the lines; blank lines join the block
    before them, so blocks always tile the body."""

    def __init__(self) -> None:
        self.items: list[_Block] = []

    def add(self, start: int, end: int, kind: str, **heading: Any) -> _Block:
        block = _Block(start, end, kind, **heading)
        self.items.append(block)
        return block

    def blank(self, end: int) -> None:
        if self.items:
            self.items[-1].end = end

    def finish(self, body: str) -> list[_Block]:
        if self.items:
            self.items[0].start = 0  # leading blank lines belong to the first block
            for block in self.items:
                block.tokens = count_tokens(body[block.start : block.end])
        return self.items


def _offsets(lines: list[str]) -> list[int]:
    """offsets[i] is where line i starts; offsets[len(lines)] is the body length."""
    out = [0] * (len(lines) + 1)
    pos = 0
    for i, line in enumerate(lines):
        pos += len(line)
        out[i + 1] = pos
    return out


_MD_MAYBE_SPECIAL = re.compile(r" {0,3}[#`~|+<=-]")
_ATX_RE = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_ATX_CLOSE_RE = re.compile(r"(?:^|[ \t]+)#+$")
_FENCE_OPEN_RE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_SETEXT_RE = re.compile(r" {0,3}(=+|-+)[ \t]*$")
_TABLE_LINE_RE = re.compile(r" {0,3}(?:\||\+[-=])")
_NOT_SETEXT_TITLE_RE = re.compile(r" {4}|\t|[ ]{0,3}(?:[-+*>]|\d{1,9}[.)])(?:[ \t]|$)")


def _markdown_heading(level: int, raw: str) -> dict[str, Any]:
    m = _HEADING_ID_RE.search(raw)
    if m:  # `{#custom-id}` (Pandoc, kramdown, MkDocs attr_list) is the site's own anchor
        raw = raw[: m.start()]
        return {"level": level, "title": _plain(_strip_markdown(raw)), "slug": m.group(1)}
    return {"level": level, "title": _plain(_strip_markdown(raw)), "slug": slugify(raw)}


def _fence_end(lines: list[str], i: int, char: str, length: int) -> int:
    """Index after the closing fence line, or len(lines) when the fence never closes."""
    for j in range(i + 1, len(lines)):
        text = lines[j].lstrip(" ")
        if text.startswith(char * 3) and len(lines[j]) - len(text) <= 3:
            run = text.rstrip()
            if len(run) >= length and run.strip(char) == "":
                return j + 1
    return len(lines)


def _scan_markdown(body: str) -> list[_Block]:
    lines = _lines(body)
    offsets = _offsets(lines)
    blocks = _Blocks()
    para: _Block | None = None  # the open paragraph, if any
    para_lines = 0
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        start = offsets[i]
        stripped = line.rstrip()
        if not stripped:
            blocks.blank(offsets[i + 1])
            para = None
            i += 1
            continue
        if _MD_MAYBE_SPECIAL.match(line):
            fence = _FENCE_OPEN_RE.match(stripped)
            if fence and not (fence.group(1)[0] == "`" and "`" in fence.group(2)):
                end = _fence_end(lines, i, fence.group(1)[0], len(fence.group(1)))
                blocks.add(start, offsets[end], FENCE)
                para, i = None, end
                continue
            atx = _ATX_RE.match(stripped)
            if atx:
                raw = _ATX_CLOSE_RE.sub("", atx.group(2) or "")
                blocks.add(
                    start, offsets[i + 1], HEADING, **_markdown_heading(len(atx.group(1)), raw)
                )
                para, i = None, i + 1
                continue
            setext = _SETEXT_RE.match(stripped)
            if setext and para is not None and para_lines == 1:
                title_line = body[para.start : para.end]
                if not _NOT_SETEXT_TITLE_RE.match(title_line):
                    # A single-line paragraph underlined: a setext heading. Multi-line
                    # paragraphs are left alone: there `---` is nearly always a rule.
                    level = 1 if setext.group(1)[0] == "=" else 2
                    para.kind = HEADING
                    para.end = offsets[i + 1]
                    for key, value in _markdown_heading(level, title_line.strip()).items():
                        setattr(para, key, value)
                    para, i = None, i + 1
                    continue
            if _TABLE_LINE_RE.match(stripped):
                end = i + 1
                while end < n and _TABLE_LINE_RE.match(lines[end]):
                    end += 1
                blocks.add(start, offsets[end], TABLE)
                para, i = None, end
                continue
            if stripped.lstrip(" ").startswith("<!--") and len(line) - len(line.lstrip(" ")) <= 3:
                # HTML comment block: its lines are not Markdown (no headings inside).
                end = i
                while end < n and "-->" not in lines[end]:
                    end += 1
                end = min(end + 1, n)
                blocks.add(start, offsets[end], FENCE)
                para, i = None, end
                continue
        if para is None:
            para = blocks.add(start, offsets[i + 1], PARAGRAPH)
            para_lines = 1
        else:
            para.end = offsets[i + 1]
            para_lines += 1
        i += 1
    return blocks.finish(body)


_RST_ADORNMENT_CHARS = '=-~^"*+#'
_RST_CODE_DIRECTIVE_RE = re.compile(r"([ \t]*)\.\.[ \t]+(?:code-block|code|sourcecode)::")


def _rst_adornment(line: str) -> str | None:
    """The adornment character when ``line`` is one repeated punctuation character."""
    if len(line) >= 2 and line[0] in _RST_ADORNMENT_CHARS and line == line[0] * len(line):
        return line[0]
    return None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _indented_end(stripped: list[str], lines: list[str], i: int, base: int) -> int:
    """End of the block of lines (from i) that are blank or indented deeper than ``base``;
    trailing blank lines are left to the caller."""
    j = i
    while j < len(lines) and (not stripped[j] or _indent(lines[j]) > base):
        j += 1
    while j > i and not stripped[j - 1]:
        j -= 1
    return j


def _scan_rst(body: str) -> list[_Block]:
    lines = _lines(body)
    stripped = [line.rstrip() for line in lines]
    offsets = _offsets(lines)
    blocks = _Blocks()
    styles: dict[tuple[str, bool], int] = {}  # adornment style -> level, by first appearance
    i, n = 0, len(lines)
    after_break = True  # titles need a blank line (or another title) above them

    def heading(first: int, last: int, char: str, overlined: bool, title: str) -> None:
        level = styles.setdefault((char, overlined), len(styles) + 1)
        plain = _plain(_strip_rst(title))
        blocks.add(
            offsets[first], offsets[last], HEADING, level=level, title=plain, slug=slugify(plain)
        )

    while i < n:
        s = stripped[i]
        if not s:
            blocks.blank(offsets[i + 1])
            after_break = True
            i += 1
            continue
        if after_break and i + 1 < n:
            char = _rst_adornment(s)
            title = stripped[i + 1]
            if (
                char
                and i + 2 < n
                and stripped[i + 2] == s
                and title.strip()
                and not _rst_adornment(title.strip())
                and len(title) <= len(s)
            ):
                heading(i, i + 3, char, True, title.strip())
                i += 3
                continue
            under = _rst_adornment(stripped[i + 1])
            if under and not char and s[0] not in " \t" and len(stripped[i + 1]) >= len(s):
                heading(i, i + 2, under, False, s)
                i += 2
                continue
        after_break = False
        directive = _RST_CODE_DIRECTIVE_RE.match(s)
        if directive:
            end = _indented_end(stripped, lines, i + 1, _indent(lines[i]))
            blocks.add(offsets[i], offsets[end], FENCE)
            i = end
            continue
        if _TABLE_LINE_RE.match(s):
            end = i + 1
            while end < n and _TABLE_LINE_RE.match(stripped[end]):
                end += 1
            blocks.add(offsets[i], offsets[end], TABLE)
            i = end
            continue
        end = i + 1
        while end < n and stripped[end]:
            end += 1
        kind = PARAGRAPH
        if stripped[end - 1].endswith("::") and not s.lstrip().startswith(".. "):
            # `para::` introduces a literal block: keep the paragraph and its code together.
            base = _indent(lines[i])
            nxt = end
            while nxt < n and not stripped[nxt]:
                nxt += 1
            if nxt < n and _indent(lines[nxt]) > base:
                end, kind = _indented_end(stripped, lines, nxt, base), FENCE
        blocks.add(offsets[i], offsets[end], kind)
        i = end
    return blocks.finish(body)


def _scan_text(body: str) -> list[_Block]:
    lines = _lines(body)
    offsets = _offsets(lines)
    blocks = _Blocks()
    para: _Block | None = None
    for i, line in enumerate(lines):
        if not line.strip():
            blocks.blank(offsets[i + 1])
            para = None
        elif para is None:
            para = blocks.add(offsets[i], offsets[i + 1], PARAGRAPH)
        else:
            para.end = offsets[i + 1]
    return blocks.finish(body)


# --------------------------------------------------------------------------- HTML

_HTML_SKIP = frozenset({"script", "style", "nav", "head", "noscript", "template"})
_HTML_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_HTML_PARAGRAPH_BREAK = frozenset(
    {"p", "div", "section", "article", "main", "header", "footer", "aside", "blockquote"}
    | {"ul", "ol", "dl", "figure", "form", "fieldset", "address", "details", "hr"}
)
_HTML_LINE_BREAK = frozenset({"br", "li", "dt", "dd", "figcaption", "summary", "caption"})
# Extracted text that would read as Markdown structure gets a backslash.
_HTML_ESCAPE_RE = re.compile(r"#{1,6}(?:\s|$)|\||\+[-=]|```|~~~|<!--|=+\s*$|-+\s*$")


class _HtmlToMarkdown(HTMLParser):
    """Text of an HTML page as Markdown, so it can be chunked like Markdown."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = []
        self.inline: list[str] = []
        self.prefix = ""  # list marker, written only if the item has text
        self.skip = 0
        self.title: str | None = None
        self.title_parts: list[str] | None = None
        self.heading = 0
        self.pre_depth = 0
        self.pre_parts: list[str] = []
        self.table_depth = 0
        self.row: list[str] | None = None
        self.row_has_th = False
        self.rows_in_table = 0
        self.cell: list[str] | None = None

    # -- output helpers
    def _flush(self) -> None:
        text = "".join(self.inline).strip()
        self.inline.clear()
        if text:
            if _HTML_ESCAPE_RE.match(text):
                text = "\\" + text
            self.lines.append(self.prefix + text)
        self.prefix = ""

    def _paragraph_break(self) -> None:
        self._flush()
        if self.lines and self.lines[-1]:
            self.lines.append("")

    def _text(self, data: str) -> None:
        text = _WS_RE.sub(" ", data)
        if not self.inline:
            text = text.lstrip()
        if text:
            self.inline.append(text)

    # -- tables
    def _end_cell(self) -> None:
        if self.cell is not None and self.row is not None:
            self.row.append(_plain("".join(self.cell)).replace("|", "\\|"))
        self.cell = None

    def _end_row(self) -> None:
        self._end_cell()
        if self.row:
            self._flush()
            self.lines.append("| " + " | ".join(self.row) + " |")
            if self.rows_in_table == 0 and self.row_has_th:
                self.lines.append("|" + " --- |" * len(self.row))
            self.rows_in_table += 1
        self.row = None

    # -- parser callbacks
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self.title_parts = []
            return
        if tag == "body":
            self.skip = 0  # an unclosed <head> ends here
        if tag in _HTML_SKIP:
            self.skip += 1
            return
        if self.skip:
            return
        if self.pre_depth:
            if tag == "pre":
                self.pre_depth += 1
            elif tag == "br":
                self.pre_parts.append("\n")
            return
        if self.table_depth:
            self._table_start(tag)
            return
        if self.heading:
            if tag == "br" or tag in _HTML_PARAGRAPH_BREAK or tag in _HTML_LINE_BREAK:
                self.inline.append(" ")
            return
        if tag == "pre":
            self._paragraph_break()
            self.pre_depth, self.pre_parts = 1, []
        elif tag in _HTML_HEADINGS:
            self._paragraph_break()
            self.heading = _HTML_HEADINGS[tag]
        elif tag == "table":
            self._paragraph_break()
            self.table_depth, self.rows_in_table = 1, 0
        elif tag in _HTML_PARAGRAPH_BREAK:
            self._paragraph_break()
        elif tag in _HTML_LINE_BREAK:
            self._flush()
            if tag == "li":
                self.prefix = "- "

    def _table_start(self, tag: str) -> None:
        if tag == "table":
            self.table_depth += 1
        elif self.table_depth > 1:
            if self.cell is not None:
                self.cell.append(" ")  # a nested table flattens into its cell
        elif tag == "tr":
            self._end_row()
            self.row, self.row_has_th = [], False
        elif tag in ("td", "th"):
            self._end_cell()
            if self.row is None:
                self.row, self.row_has_th = [], False
            self.cell = []
            self.row_has_th = self.row_has_th or tag == "th"
        elif self.cell is not None:
            self.cell.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self.title_parts is not None:
            self.title = self.title or _plain("".join(self.title_parts)) or None
            self.title_parts = None
            return
        if tag in _HTML_SKIP:
            self.skip = max(0, self.skip - 1)
            return
        if self.skip:
            return
        if self.pre_depth:
            if tag == "pre":
                self.pre_depth -= 1
                if not self.pre_depth:
                    self._emit_pre()
            return
        if self.table_depth:
            if tag == "table":
                self.table_depth -= 1
                if not self.table_depth:
                    self._end_row()
                    self._paragraph_break()
            elif self.table_depth == 1 and tag in ("td", "th"):
                self._end_cell()
            elif self.table_depth == 1 and tag == "tr":
                self._end_row()
            return
        if self.heading:
            if _HTML_HEADINGS.get(tag) is not None:
                text = _plain("".join(self.inline))
                self.inline.clear()
                self.lines.append("#" * self.heading + (" " + text if text else ""))
                self.lines.append("")
                self.heading = 0
            return
        if tag in _HTML_PARAGRAPH_BREAK:
            self._paragraph_break()
        elif tag in _HTML_LINE_BREAK:
            self._flush()

    def handle_data(self, data: str) -> None:
        if self.title_parts is not None:
            self.title_parts.append(data)
            return
        if self.skip:
            return
        if self.pre_depth:
            self.pre_parts.append(data)
        elif self.table_depth:
            if self.cell is not None:
                self.cell.append(data)
            else:
                self._text(data)  # e.g. a caption: a line of its own before the rows
        else:
            self._text(data)

    def _emit_pre(self) -> None:
        code = "".join(self.pre_parts).replace("\r\n", "\n").replace("\r", "\n")
        if code.startswith("\n"):  # HTML drops a newline right after <pre>
            code = code[1:]
        code = code.rstrip()
        # The fence must be longer than any backtick run inside, or the code would close it.
        longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
        fence = "`" * max(3, longest + 1)
        self.lines.append(fence)
        if code:
            self.lines.extend(code.split("\n"))
        self.lines.append(fence)
        self.lines.append("")

    def markdown(self) -> str:
        self.close()
        if self.pre_depth:
            self._emit_pre()
        if self.table_depth:
            self._end_row()
        self._flush()
        text = "\n".join(self.lines).strip("\n")
        return text + "\n" if text else ""


def _html_to_markdown(source: str) -> tuple[str, str | None]:
    """The page as Markdown text, and its ``<title>``."""
    parser = _HtmlToMarkdown()
    parser.feed(source)
    return parser.markdown(), parser.title


# --------------------------------------------------------------------------- layout


@dataclass(slots=True, eq=False)
class _Section:
    start: int  # block index of the heading (0 for the root)
    level: int  # 0 for the root, the text before the first heading
    path: tuple[str, ...]
    slug: str
    own_end: int = -1  # block index where the first subsection starts
    end: int = -1
    children: list[_Section] = field(default_factory=list)


@dataclass(slots=True)
class _Piece:
    first: int  # block range [first, last)
    last: int
    section: _Section
    part: int  # 1 for a section's first piece


class _Layout:
    """Places a document's sections into chunks (see the module docstring for the rules)."""

    def __init__(self, body: str, blocks: list[_Block], min_tokens: int, max_tokens: int) -> None:
        self.body = body
        self.blocks = blocks
        self.min = min_tokens
        self.max = max_tokens
        self.prefix = [0]
        for block in blocks:
            self.prefix.append(self.prefix[-1] + block.tokens)
        self.used: set[str] = set()
        self.next_ordinal: dict[str, int] = {}
        self.pieces: list[_Piece] = []
        self.root = self._tree()

    # -- slugs
    def _claim(self, base: str) -> str:
        """``base``, or ``base-2``, ``base-3``... if taken; first come first served."""
        slug = base
        if slug in self.used:
            n = self.next_ordinal.get(base, 2)
            while f"{base}-{n}" in self.used:
                n += 1
            self.next_ordinal[base] = n + 1
            slug = f"{base}-{n}"
        self.used.add(slug)
        return slug

    # -- structure
    def _tree(self) -> _Section:
        root = _Section(start=0, level=0, path=(), slug="")
        stack = [root]
        for i, block in enumerate(self.blocks):
            if block.kind != HEADING:
                continue
            while stack[-1].level >= block.level:
                stack.pop().end = i
            parent = stack[-1]
            if not parent.children:
                parent.own_end = i
            # Every heading claims its slug, chunk or not, so merges never shift ordinals.
            section = _Section(i, block.level, (*parent.path, block.title), self._claim(block.slug))
            parent.children.append(section)
            stack.append(section)
        for section in stack:
            section.end = len(self.blocks)
        self._close_own(root)
        return root

    def _close_own(self, root: _Section) -> None:
        todo = [root]
        while todo:
            section = todo.pop()
            if not section.children:
                section.own_end = section.end
            todo.extend(section.children)

    def _tokens(self, first: int, last: int) -> int:
        return self.prefix[last] - self.prefix[first]

    # -- placement
    def run(self) -> list[Chunk]:
        root = self.root
        rest = root.children
        if root.own_end > 0:  # text before the first heading
            intro = self._tokens(0, root.own_end)
            first = rest[0] if rest else None
            if (
                first
                and intro < self.min
                and intro + self._tokens(first.start, first.end) <= self.max
            ):
                self._place(first, 0, intro)
                rest = rest[1:]
            else:
                root.slug = self._claim("intro")
                self._split(0, root.own_end, root, 0)
        for section in rest:
            self._place(section, None, 0)
        return self._chunks()

    def _place(self, section: _Section, carry_from: int | None, carry: int) -> None:
        """Lay out ``section``; ``carry`` tokens of blocks from ``carry_from`` (an empty
        parent heading or a short intro) go in front of its first chunk."""
        first = section.start if carry_from is None else carry_from
        own = carry + self._tokens(section.start, section.own_end)
        if own < self.min and carry + self._tokens(section.start, section.end) <= self.max:
            self.pieces.append(_Piece(first, section.end, section, 1))
            return
        size, last, taken = own, section.own_end, 0
        for child in section.children:
            child_tokens = self._tokens(child.start, child.end)
            if size >= self.min or size + child_tokens > self.max:
                break
            size, last, taken = size + child_tokens, child.end, taken + 1
        if not taken and section.children and section.own_end == section.start + 1:
            # A bare heading makes a useless passage: it leads its first subsection instead.
            self._place(section.children[0], first, own)
            taken = 1
        else:
            self._split(first, last, section, section.start)
        for child in section.children[taken:]:
            self._place(child, None, 0)

    def _split(self, first: int, last: int, section: _Section, glue_until: int) -> None:
        """Cut blocks [first, last) into pieces of at most max tokens at block boundaries.

        Headings, and anything before ``glue_until``, stay with the block after them."""
        units: list[tuple[int, int]] = []  # (first block, tokens)
        unit_start, unit_tokens = first, 0
        for i in range(first, last):
            block = self.blocks[i]
            unit_tokens += block.tokens
            if block.kind != HEADING and i >= glue_until:
                units.append((unit_start, unit_tokens))
                unit_start, unit_tokens = i + 1, 0
        if unit_start < last:
            units.append((unit_start, unit_tokens))

        total = self._tokens(first, last)
        bounds = [first]
        if total > self.max:
            # Balanced pieces: 950 tokens become two of ~475, not 900 and 50. The target is
            # what is left over the fewest pieces that can hold it, re-aimed after each cut.
            remaining, size = total, 0
            target = remaining / math.ceil(remaining / self.max)
            for start, tokens in units:
                if start > bounds[-1] and (size + tokens > self.max or size + tokens / 2 >= target):
                    bounds.append(start)
                    remaining -= size
                    target = remaining / math.ceil(remaining / self.max)
                    size = 0
                size += tokens
            # No small-tail fix-up is needed: a cut is only made where the rest cannot fit in
            # one piece, so a last piece never fits together with the one before it.
        bounds.append(last)
        for part, (a, b) in enumerate(pairwise(bounds), start=1):
            self.pieces.append(_Piece(a, b, section, part))

    def _chunks(self) -> list[Chunk]:
        chunks = []
        for piece in self.pieces:
            section = piece.section
            slug = (
                section.slug
                if piece.part == 1
                else self._claim(f"{section.slug}-part-{piece.part}")
            )
            start = self.blocks[piece.first].start
            end = self.blocks[piece.last - 1].end
            chunks.append(
                Chunk(
                    slug=slug,
                    heading_path=section.path,
                    text=self.body[start:end],
                    start=start,
                    end=end,
                    tokens=self._tokens(piece.first, piece.last),
                )
            )
        return chunks


# --------------------------------------------------------------------------- entry point


def chunk_document(
    text: str, fmt: str, *, min_tokens: int = 200, max_tokens: int = 900
) -> ParsedDocument:
    """Parse ``text`` in format ``fmt`` (see :func:`detect_format`) into heading-aware chunks
    that tile the body exactly (``chunk.text == body[chunk.start:chunk.end]``)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if min_tokens < 0 or max_tokens < 1 or min_tokens > max_tokens:
        raise ValueError(
            f"need 0 <= min_tokens <= max_tokens and max_tokens >= 1, got {min_tokens}, {max_tokens}"
        )
    metadata: dict[str, Any] = {}
    fallback_title: str | None = None
    if fmt == "markdown":
        metadata, body = _split_front_matter(text)
        blocks = _scan_markdown(body)
    elif fmt == "html":
        body, fallback_title = _html_to_markdown(text)
        blocks = _scan_markdown(body)
    elif fmt == "rst":
        body = text
        blocks = _scan_rst(body)
    else:
        body = text
        blocks = _scan_text(body)
    h1 = next((b.title for b in blocks if b.kind == HEADING and b.level == 1), None)
    title = _metadata_title(metadata) or h1 or fallback_title
    return ParsedDocument(
        title=title,
        metadata=metadata,
        body=body,
        chunks=_Layout(body, blocks, min_tokens, max_tokens).run(),
    )

"""A document body scanned into blocks: headings, paragraphs, fenced code, tables.

Blocks tile the body exactly (blank lines join the block before them), so the chunker
can cut a document anywhere between two blocks and lose nothing. Headings carry their
level, plain title and slug base (`curator.text.slugify`, or a `{#custom-id}`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from curator.text import slugify, strip_markdown

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


SPACE_RE = re.compile(r"\s+")
_HEADING_ID_RE = re.compile(r"[ \t]*\{[ \t]*#([\w:.-]+)[^{}]*\}[ \t]*$")
_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


def plain(text: str) -> str:
    return " ".join(text.split())


def split_lines(text: str) -> list[str]:
    # Only CR/LF end lines (as in CommonMark); str.splitlines would also break on \f etc.
    return _LINE_RE.findall(text)


_RST_ROLE_RE = re.compile(r":[\w.+:-]+:`([^`]*)`")
_RST_LINK_RE = re.compile(r"`([^`<]*?)\s*<[^`>]*>`_{0,2}")
_RST_TARGET_RE = re.compile(r"\s*<[^>]*>$")
_RST_MARKUP_RE = re.compile(r"``|`_{0,2}|\*+|\|")


def _strip_rst(text: str) -> str:
    text = _RST_LINK_RE.sub(r"\1", text)
    # :ref:`label <target>` shows the label
    text = _RST_ROLE_RE.sub(lambda m: _RST_TARGET_RE.sub("", m.group(1)), text)
    return _RST_MARKUP_RE.sub("", text)


HEADING, PARAGRAPH, FENCE, TABLE = "heading", "paragraph", "fence", "table"


@dataclass(slots=True)
class Block:
    start: int
    end: int
    kind: str
    level: int = 0  # headings only
    title: str = ""  # plain heading text
    slug: str = ""  # heading slug base (before de-duplication)
    tokens: int = 0


class BlockList:
    """Accumulates blocks while a scanner walks the lines; blank lines join the block
    before them, so blocks always tile the body."""

    def __init__(self) -> None:
        self.items: list[Block] = []

    def add(self, start: int, end: int, kind: str, **heading: Any) -> Block:
        block = Block(start, end, kind, **heading)
        self.items.append(block)
        return block

    def blank(self, end: int) -> None:
        if self.items:
            self.items[-1].end = end

    def finish(self, body: str) -> list[Block]:
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
        return {"level": level, "title": plain(strip_markdown(raw)), "slug": m.group(1)}
    return {"level": level, "title": plain(strip_markdown(raw)), "slug": heading_slug(raw)}


# Status words a heading gains or loses without becoming another section: "[Deprecated]",
# "(beta)", "[WIP]" around a title do not rename its passage id.
_STATUS = (
    r"deprecated|obsolete|legacy|removed|unsupported|outdated|archived|experimental|beta|alpha|"
    r"preview|wip|draft|new|updated|eol|end of life"
)
_STATUS_RE = re.compile(rf"^\s*[\[(]\s*(?:{_STATUS})\s*[\])]\s*[-:]?\s*|\s*[-:]?\s*[\[(]\s*(?:{_STATUS})\s*[\])]\s*$", re.I)


def heading_slug(raw: str) -> str:
    """The id slug of a heading: GitHub-style, with bracketed status words dropped
    (`CephClusterNearFull [Deprecated]` -> `cephclusternearfull`)."""
    stripped = raw
    while (cut := _STATUS_RE.sub("", stripped, count=1)) != stripped and cut.strip():
        stripped = cut
    return slugify(stripped)


def _fence_end(lines: list[str], i: int, char: str, length: int) -> int:
    """Index after the closing fence line, or len(lines) when the fence never closes."""
    for j in range(i + 1, len(lines)):
        text = lines[j].lstrip(" ")
        if text.startswith(char * 3) and len(lines[j]) - len(text) <= 3:
            run = text.rstrip()
            if len(run) >= length and run.strip(char) == "":
                return j + 1
    return len(lines)


def scan_markdown(body: str) -> list[Block]:
    lines = split_lines(body)
    offsets = _offsets(lines)
    blocks = BlockList()
    para: Block | None = None  # the open paragraph, if any
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
                blocks.add(start, offsets[i + 1], HEADING, **_markdown_heading(len(atx.group(1)), raw))
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


def scan_rst(body: str) -> list[Block]:
    lines = split_lines(body)
    stripped = [line.rstrip() for line in lines]
    offsets = _offsets(lines)
    blocks = BlockList()
    styles: dict[tuple[str, bool], int] = {}  # adornment style -> level, by first appearance
    i, n = 0, len(lines)
    after_break = True  # titles need a blank line (or another title) above them

    def heading(first: int, last: int, char: str, overlined: bool, title: str) -> None:
        level = styles.setdefault((char, overlined), len(styles) + 1)
        text = plain(_strip_rst(title))
        blocks.add(offsets[first], offsets[last], HEADING, level=level, title=text, slug=heading_slug(text))

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


def scan_text(body: str) -> list[Block]:
    lines = split_lines(body)
    offsets = _offsets(lines)
    blocks = BlockList()
    para: Block | None = None
    for i, line in enumerate(lines):
        if not line.strip():
            blocks.blank(offsets[i + 1])
            para = None
        elif para is None:
            para = blocks.add(offsets[i], offsets[i + 1], PARAGRAPH)
        else:
            para.end = offsets[i + 1]
    return blocks.finish(body)

"""HTML pages as Markdown text, so they are chunked like Markdown."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from curator.corpus.blocks import SPACE_RE, plain

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
        text = SPACE_RE.sub(" ", data)
        if not self.inline:
            text = text.lstrip()
        if text:
            self.inline.append(text)

    # -- tables
    def _end_cell(self) -> None:
        if self.cell is not None and self.row is not None:
            self.row.append(plain("".join(self.cell)).replace("|", "\\|"))
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
            self.title = self.title or plain("".join(self.title_parts)) or None
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
                text = plain("".join(self.inline))
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


def html_to_markdown(source: str) -> tuple[str, str | None]:
    """The page as Markdown text, and its ``<title>``."""
    parser = _HtmlToMarkdown()
    parser.feed(source)
    return parser.markdown(), parser.title

"""Heading-aware document chunking with stable passage slugs.

A document is scanned once into *blocks* (headings, paragraphs, fenced code, tables) that
tile its body exactly; every chunk is a run of whole blocks, so the chunks cover the body
with no gap and no overlap, and a code block or table is never cut. Reading a format
into blocks is `blocks.py` (Markdown, RST, text), `html.py` (HTML to Markdown first) and
`frontmatter.py`; this module sizes the sections into chunks and gives each its slug.

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
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from curator.corpus.blocks import HEADING, Block, plain, scan_markdown, scan_rst, scan_text
from curator.corpus.frontmatter import split_front_matter
from curator.corpus.html import html_to_markdown

__all__ = ["Chunk", "ParsedDocument", "chunk_document", "detect_format"]

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


def _close(section: _Section, end: int) -> None:
    section.end = end
    if not section.children:  # a leaf's own text is all of it
        section.own_end = end


@dataclass(slots=True)
class _Piece:
    first: int  # block range [first, last)
    last: int
    section: _Section
    part: int  # 1 for a section's first piece
    lead: _Section | None = None  # a bare heading carried in front: it names the piece


class _Layout:
    """Places a document's sections into chunks (see the module docstring for the rules)."""

    def __init__(self, body: str, blocks: list[Block], min_tokens: int, max_tokens: int) -> None:
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
                _close(stack.pop(), i)
            parent = stack[-1]
            if not parent.children:
                parent.own_end = i
            # Every heading claims its slug, chunk or not, so merges never shift ordinals.
            section = _Section(i, block.level, (*parent.path, block.title), self._claim(block.slug))
            parent.children.append(section)
            stack.append(section)
        for section in stack:
            _close(section, len(self.blocks))
        return root

    def _tokens(self, first: int, last: int) -> int:
        return self.prefix[last] - self.prefix[first]

    # -- placement
    def run(self) -> list[Chunk]:
        root = self.root
        rest = root.children
        if root.own_end > 0:  # text before the first heading
            intro = self._tokens(0, root.own_end)
            first = rest[0] if rest else None
            if first and intro < self.min and intro + self._tokens(first.start, first.end) <= self.max:
                self._place(first, 0, intro)
                rest = rest[1:]
            else:
                root.slug = self._claim("intro")
                self._split(0, root.own_end, root, 0)
        for section in rest:
            self._place(section, None, 0)
        return self._chunks()

    def _place(self, section: _Section, carry_from: int | None, carry: int, lead: _Section | None = None) -> None:
        """Lay out ``section``; ``carry`` tokens of blocks from ``carry_from`` (an empty
        parent heading or a short intro) go in front of its first chunk. ``lead``, the
        bare heading carried in, names that first chunk: a chunk's id is the slug of the
        first heading it holds, so a document that grows past the size limits keeps it."""
        first = section.start if carry_from is None else carry_from
        own = carry + self._tokens(section.start, section.own_end)
        if own < self.min and carry + self._tokens(section.start, section.end) <= self.max:
            self.pieces.append(_Piece(first, section.end, section, 1, lead))
            return
        size, last, taken = own, section.own_end, 0
        for child in section.children:
            child_tokens = self._tokens(child.start, child.end)
            if size >= self.min or size + child_tokens > self.max:
                break
            size, last, taken = size + child_tokens, child.end, taken + 1
        if not taken and section.children and section.own_end == section.start + 1:
            # A bare heading makes a useless passage: it leads its first subsection instead.
            self._place(section.children[0], first, own, lead or section)
            taken = 1
        else:
            self._split(first, last, section, section.start, lead)
        for child in section.children[taken:]:
            self._place(child, None, 0)

    def _split(self, first: int, last: int, section: _Section, glue_until: int, lead: _Section | None = None) -> None:
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
            self.pieces.append(_Piece(a, b, section, part, lead if part == 1 else None))

    def _chunks(self) -> list[Chunk]:
        chunks = []
        for piece in self.pieces:
            section = piece.section
            if piece.part > 1:
                slug = self._claim(f"{section.slug}-part-{piece.part}")
            else:
                slug = (piece.lead or section).slug
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


def chunk_document(text: str, fmt: str, *, min_tokens: int = 200, max_tokens: int = 900) -> ParsedDocument:
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
        metadata, body = split_front_matter(text)
        blocks = scan_markdown(body)
    elif fmt == "html":
        body, fallback_title = html_to_markdown(text)
        blocks = scan_markdown(body)
    elif fmt == "rst":
        body = text
        blocks = scan_rst(body)
    else:
        body = text
        blocks = scan_text(body)
    h1 = next((b.title for b in blocks if b.kind == HEADING and b.level == 1), None)
    title = _metadata_title(metadata) or h1 or fallback_title
    return ParsedDocument(
        title=title, metadata=metadata, body=body, chunks=_Layout(body, blocks, min_tokens, max_tokens).run()
    )


def _metadata_title(metadata: dict[str, Any]) -> str | None:
    title = metadata.get("title")
    if isinstance(title, bool) or not isinstance(title, str | int | float):
        return None
    return plain(str(title)) or None

"""Heading-aware chunker: examples per feature, then property tests on generated Markdown."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curator.corpus.blocks import count_tokens
from curator.corpus.chunker import Chunk, ParsedDocument, chunk_document, detect_format
from curator.text import slugify


def tag(i: int) -> str:
    """An alphabetic marker word (digits would count as extra tokens)."""
    return "tag" + "".join("abcdefghij"[int(d)] for d in str(i))


def words(n: int, first: str = "word") -> str:
    """``n`` one-token words starting with ``first``."""
    return " ".join([first] + ["word"] * (n - 1))


def para(n: int, first: str = "word") -> str:
    """A paragraph of ``n + 1`` tokens (the full stop counts)."""
    return words(n, first) + ".\n"


def by_slug(doc: ParsedDocument) -> dict[str, Chunk]:
    return {c.slug: c for c in doc.chunks}


def assert_tiles(doc: ParsedDocument) -> None:
    """Chunks are contiguous, cover the body exactly, and carry their own text and size."""
    if not doc.body.strip():
        assert doc.chunks == []
        return
    assert doc.chunks[0].start == 0
    assert doc.chunks[-1].end == len(doc.body)
    for a, b in zip(doc.chunks, doc.chunks[1:], strict=False):
        assert a.end == b.start
    for c in doc.chunks:
        assert c.start < c.end
        assert c.text == doc.body[c.start : c.end]
        assert c.tokens == count_tokens(c.text)


# --------------------------------------------------------------------------- headings


def test_sections_get_heading_paths_and_slugs() -> None:
    text = (
        "# DHL\n\n"
        + para(5)
        + "\n## Cutoff times\n\n"
        + para(5)
        + "\n### Weekends\n\n"
        + para(5)
        + "\n## Pickup *windows*\n\n"
        + para(5)
    )
    doc = chunk_document(text, "markdown", min_tokens=0, max_tokens=900)
    assert_tiles(doc)
    assert [(c.slug, c.heading_path) for c in doc.chunks] == [
        ("dhl", ("DHL",)),
        ("cutoff-times", ("DHL", "Cutoff times")),
        ("weekends", ("DHL", "Cutoff times", "Weekends")),
        ("pickup-windows", ("DHL", "Pickup windows")),
    ]
    assert doc.chunks[1].text.startswith("## Cutoff times\n")
    assert doc.title == "DHL"


def test_setext_headings_are_sections() -> None:
    text = "Carriers\n========\n\n" + para(3) + "\nCutoff\n------\n\n" + para(3)
    doc = chunk_document(text, "markdown", min_tokens=0)
    assert [(c.slug, c.heading_path) for c in doc.chunks] == [
        ("carriers", ("Carriers",)),
        ("cutoff", ("Carriers", "Cutoff")),
    ]
    assert doc.title == "Carriers"


def test_dashes_under_a_multi_line_paragraph_are_a_rule_not_a_heading() -> None:
    text = "# A\n\nline one\nline two\n---\n\n## B\n\n" + para(3)
    doc = chunk_document(text, "markdown", min_tokens=0)
    assert [c.slug for c in doc.chunks] == ["a", "b"]


def test_duplicate_headings_get_ordinal_suffixes_in_document_order() -> None:
    text = "".join(f"## Examples\n\n{para(4, tag(i))}\n" for i in range(3)) + "## Examples 2\n\nx\n"
    doc = chunk_document(text, "markdown", min_tokens=0)
    slugs = [c.slug for c in doc.chunks]
    assert slugs[:3] == ["examples", "examples-2", "examples-3"]
    assert tag(0) in doc.chunks[0].text and tag(2) in doc.chunks[2].text
    assert len(set(slugs)) == len(slugs)  # "Examples 2" cannot reuse examples-2


def test_custom_heading_id_is_the_slug() -> None:
    doc = chunk_document("## Cutoff times {#cutoff}\n\n" + para(3), "markdown")
    assert doc.chunks[0].slug == "cutoff"
    assert doc.chunks[0].heading_path == ("Cutoff times",)


# --------------------------------------------------------------------------- front matter


def test_front_matter_is_metadata_not_body() -> None:
    text = (
        "---\n"
        "title: DHL cutoffs\n"
        "owner: ops-team  # pager rotation\n"
        "tags: [carriers, 'eu', \"cutoff\"]\n"
        "aliases:\n"
        "  - dhl\n"
        "  - dhl-express\n"
        "weight: 3\n"
        "draft: false\n"
        "---\n"
        "# DHL\n\n" + para(5)
    )
    doc = chunk_document(text, "markdown")
    assert doc.metadata == {
        "title": "DHL cutoffs",
        "owner": "ops-team",
        "tags": ["carriers", "eu", "cutoff"],
        "aliases": ["dhl", "dhl-express"],
        "weight": 3,
        "draft": False,
    }
    assert doc.title == "DHL cutoffs"  # front matter wins over the first heading
    assert doc.body.startswith("# DHL\n")
    assert all("owner" not in c.text for c in doc.chunks)
    assert_tiles(doc)


def test_yaml_block_scalars_and_nested_mappings() -> None:
    text = (
        "---\n"
        "summary: >\n  folded onto\n  one line\n"
        "script: |\n  line one\n  line two\n"
        "owner:\n  team: ops\n  pager: 'yes'\n"
        "url: https://example.com/a#b\n"
        "---\nBody.\n"
    )
    assert chunk_document(text, "markdown").metadata == {
        "summary": "folded onto one line",
        "script": "line one\nline two",
        "owner": {"team": "ops", "pager": "yes"},
        "url": "https://example.com/a#b",
    }


def test_toml_front_matter() -> None:
    doc = chunk_document('+++\ntitle = "Runbook"\ntags = ["a", "b"]\n+++\nBody.\n', "markdown")
    assert doc.metadata == {"title": "Runbook", "tags": ["a", "b"]}
    assert doc.body == "Body.\n"


def test_unclosed_front_matter_is_body() -> None:
    text = "---\ntitle: x\n\n# Heading\n"
    doc = chunk_document(text, "markdown")
    assert doc.metadata == {}
    assert doc.body == text


def test_title_is_none_without_front_matter_or_top_level_heading() -> None:
    assert chunk_document("## Only a subsection\n\ntext\n", "markdown").title is None


# --------------------------------------------------------------------------- fences and tables


def test_fence_with_heading_lookalikes_stays_whole_and_starts_no_section() -> None:
    fence = "````python\n# not a heading\n```\nnot closed by a shorter fence\n````\n"
    text = "# Setup\n\n" + para(30) + "\n" + fence + "\n" + para(30)
    doc = chunk_document(text, "markdown", min_tokens=0, max_tokens=20)
    assert_tiles(doc)
    assert {c.heading_path for c in doc.chunks} == {("Setup",)}
    holders = [c for c in doc.chunks if "# not a heading" in c.text]
    assert len(holders) == 1 and fence in holders[0].text


def test_fence_line_with_info_string_does_not_close_the_fence() -> None:
    text = "# A\n\n```\n```python\n# Inside\n```\n\n" + para(30)
    doc = chunk_document(text, "markdown", min_tokens=0, max_tokens=5)
    assert {c.heading_path for c in doc.chunks} == {("A",)}
    assert doc.chunks[0].text == "# A\n\n```\n```python\n# Inside\n```\n\n"


def test_tilde_fence_and_unclosed_fence_run_to_the_end() -> None:
    text = "# A\n\n" + para(3) + "\n~~~\n# inside\n```\n\n# still inside\n"
    doc = chunk_document(text, "markdown", min_tokens=0, max_tokens=5)
    assert_tiles(doc)
    assert all(c.heading_path == ("A",) for c in doc.chunks)
    assert doc.chunks[-1].text.startswith("~~~\n") and doc.chunks[-1].text.endswith(
        "# still inside\n"
    )


def test_tables_are_never_split() -> None:
    table = "| id | name |\n|----|------|\n" + "".join(f"| {i} | {words(8)} |\n" for i in range(40))
    text = "# Codes\n\n" + para(10) + "\n" + table + "\n" + para(10)
    doc = chunk_document(text, "markdown", min_tokens=0, max_tokens=50)
    assert_tiles(doc)
    holders = [c for c in doc.chunks if "| 0 |" in c.text or "| 39 |" in c.text]
    assert len(holders) == 1 and table in holders[0].text
    over = [c for c in doc.chunks if c.tokens > 50]
    assert over == holders  # only the unsplittable table may exceed the limit
    assert holders[0].text.lstrip().startswith("|")


# --------------------------------------------------------------------------- sizes


def test_heading_is_never_cut_from_the_block_after_it() -> None:
    doc = chunk_document(
        "# Big\n\n" + para(300) + "\n" + para(3), "markdown", min_tokens=0, max_tokens=100
    )
    assert [c.slug for c in doc.chunks] == ["big", "big-part-2"]
    assert doc.chunks[0].text.startswith("# Big\n\nword word")


def test_huge_section_splits_at_paragraph_boundaries_with_part_slugs() -> None:
    paragraphs = [para(40, tag(i)) for i in range(30)]  # ~41 tokens each
    text = "# Big\n\n" + "\n".join(paragraphs) + "\n## After\n\n" + para(5)
    doc = chunk_document(text, "markdown", min_tokens=100, max_tokens=200)
    assert_tiles(doc)
    big = [c for c in doc.chunks if c.heading_path == ("Big",)]
    assert [c.slug for c in big] == ["big"] + [f"big-part-{i}" for i in range(2, len(big) + 1)]
    assert len(big) >= 6
    assert all(100 <= c.tokens <= 200 for c in big)
    for c in big[1:]:
        assert c.text.startswith("tag") and c.text[:-1].rstrip().endswith(".")
    assert big[0].text.startswith("# Big\n")


def test_split_pieces_are_balanced_not_greedy() -> None:
    text = "# S\n\n" + "\n".join(para(19, tag(i)) for i in range(5))  # 2 + 5 x 20 tokens
    doc = chunk_document(text, "markdown", min_tokens=30, max_tokens=90)
    assert [c.tokens for c in doc.chunks] == [42, 60]  # filling up to 90 would leave 82 + 20


def test_small_subsections_merge_into_parent() -> None:
    text = "# Parent\n\nshort intro.\n\n## One\n\n" + para(10) + "\n## Two\n\n" + para(10)
    doc = chunk_document(text, "markdown", min_tokens=200, max_tokens=900)
    assert len(doc.chunks) == 1
    assert doc.chunks[0].slug == "parent" and doc.chunks[0].heading_path == ("Parent",)


def test_greedy_merge_stops_at_target_and_later_subsections_stand_alone() -> None:
    text = "# P\n\nintro.\n\n## One\n\n" + para(60, "alpha") + "\n## Two\n\n" + para(60, "bravo")
    doc = chunk_document(text, "markdown", min_tokens=50, max_tokens=100)
    assert [(c.slug, c.heading_path) for c in doc.chunks] == [
        ("p", ("P",)),
        ("two", ("P", "Two")),
    ]
    assert "alpha" in doc.chunks[0].text and "bravo" in doc.chunks[1].text


def test_parent_with_enough_own_text_keeps_subsections_separate() -> None:
    text = "# P\n\n" + para(60) + "\n## One\n\n" + para(5)
    doc = chunk_document(text, "markdown", min_tokens=50, max_tokens=900)
    assert [c.slug for c in doc.chunks] == ["p", "one"]


def test_bare_heading_leads_its_first_subsection_and_names_it() -> None:
    # "Cutoff times" is too big to merge into "DHL", which has no text of its own. The
    # chunk starts at "# DHL", so it keeps the id the whole document had while it was small.
    cutoff = "## Cutoff times\n\n" + para(60, "alpha") + "\n" + para(60, "bravo")
    text = "# DHL\n\n" + cutoff + "\n## Pickup\n\n" + para(5)
    doc = chunk_document(text, "markdown", min_tokens=20, max_tokens=100)
    small = chunk_document("# DHL\n\n## Cutoff times\n\n" + para(5) + "\n## Pickup\n\n" + para(5), "markdown",
                           min_tokens=20, max_tokens=100)
    assert [c.slug for c in small.chunks] == ["dhl"]
    assert [(c.slug, c.heading_path) for c in doc.chunks] == [
        ("dhl", ("DHL", "Cutoff times")),
        ("cutoff-times-part-2", ("DHL", "Cutoff times")),
        ("pickup", ("DHL", "Pickup")),
    ]
    assert doc.chunks[0].text.startswith("# DHL\n\n## Cutoff times\n")
    assert "bravo" not in doc.chunks[0].text and doc.chunks[1].text.startswith("bravo")


def test_short_intro_joins_first_section_long_intro_stands_alone() -> None:
    short = chunk_document("A badge line.\n\n# Title\n\n" + para(20), "markdown")
    assert [(c.slug, c.heading_path) for c in short.chunks] == [("title", ("Title",))]
    assert short.chunks[0].start == 0

    long = chunk_document(para(250) + "\n# Title\n\n" + para(20), "markdown")
    assert [(c.slug, c.heading_path) for c in long.chunks] == [("intro", ()), ("title", ("Title",))]

    clash = chunk_document(para(250) + "\n# Intro\n\n" + para(20), "markdown")
    assert [c.slug for c in clash.chunks] == ["intro-2", "intro"]  # headings keep their slugs


def test_editing_one_section_keeps_other_slugs() -> None:
    def slugs(n: int) -> dict[str, tuple[str, ...]]:
        a = "# A\n\n" + para(3) + "\n## Examples\n\n" + para(n, "xray")
        b = "\n# B\n\n" + para(60) + "\n## Examples\n\n" + para(3, "yankee")
        parsed = chunk_document(a + b, "markdown", min_tokens=50, max_tokens=100)
        return {c.slug: c.heading_path for c in parsed.chunks}

    small, grown = slugs(3), slugs(150)
    # A's "Examples" is merged into A while small, yet still owns the bare slug, so B's
    # "Examples" is examples-2 either way.
    assert small == {"a": ("A",), "b": ("B",), "examples-2": ("B", "Examples")}
    assert grown["examples"] == ("A", "Examples")
    assert grown["examples-2"] == ("B", "Examples")


# --------------------------------------------------------------------------- other formats


def test_rst_sections_levels_by_first_appearance() -> None:
    text = (
        "=========\n Runbook\n=========\n\n"
        + para(3)
        + "\nParser\n======\n\n"
        + para(3)
        + "\nRetries\n-------\n\n"
        + para(3)
        + "\nLabels\n======\n\n"
        + para(3)
        + "\n----\n\n"  # a transition, not a title
        + para(3)
    )
    doc = chunk_document(text, "rst", min_tokens=0)
    assert_tiles(doc)
    assert [(c.slug, c.heading_path) for c in doc.chunks] == [
        ("runbook", ("Runbook",)),
        ("parser", ("Runbook", "Parser")),
        ("retries", ("Runbook", "Parser", "Retries")),
        ("labels", ("Runbook", "Labels")),
    ]
    assert doc.title == "Runbook"


def test_rst_short_underline_is_not_a_title() -> None:
    doc = chunk_document("Long title here\n===\n\ntext\n", "rst", min_tokens=0)
    assert [c.heading_path for c in doc.chunks] == [()]


def test_rst_literal_blocks_and_code_directives_stay_whole() -> None:
    literal = "Run this::\n\n    Fake\n    ====\n\n    more code\n"
    directive = ".. code-block:: python\n\n   # comment\n\n   x = 1\n"
    text = "Usage\n=====\n\n" + literal + "\n" + para(20) + "\n" + directive + "\n" + para(20)
    doc = chunk_document(text, "rst", min_tokens=0, max_tokens=5)
    assert_tiles(doc)
    assert {c.heading_path for c in doc.chunks} == {("Usage",)}
    assert any(literal in c.text for c in doc.chunks)
    assert any(directive in c.text for c in doc.chunks)


def test_rst_inline_markup_is_stripped_from_titles() -> None:
    doc = chunk_document("The ``retry`` option\n====================\n\ntext\n", "rst")
    assert doc.chunks[0].heading_path == ("The retry option",)
    assert doc.chunks[0].slug == "the-retry-option"


def test_html_headings_pre_and_tables_become_markdown() -> None:
    page = """<html><head><title>Carrier guide</title><style>h1 {color: red}</style>
    <script>var x = "# nope";</script></head>
    <body><nav><a href="/">Home</a></nav>
    <h2>Cutoff <em>times</em></h2>
    <p>DHL cutoff is <b>18:00</b>.</p><p># not a heading</p>
    <pre>
# shell comment
```
done</pre>
    <table><tr><th>Carrier</th><th>Cutoff</th></tr>
    <tr><td>DHL</td><td>18:00</td></tr><tr><td>UPS | EU</td><td>17:00</td></tr></table>
    <ul><li>one</li><li></li><li>two</li></ul>
    </body></html>"""
    doc = chunk_document(page, "html", min_tokens=0)
    assert doc.title == "Carrier guide"  # no <h1>: the <title>
    assert "nope" not in doc.body and "Home" not in doc.body and "color" not in doc.body
    assert doc.body.startswith("## Cutoff times\n\nDHL cutoff is 18:00.\n\n\\# not a heading\n")
    assert "````\n# shell comment\n```\ndone\n````\n" in doc.body
    assert (
        "| Carrier | Cutoff |\n| --- | --- |\n| DHL | 18:00 |\n| UPS \\| EU | 17:00 |\n" in doc.body
    )
    assert "- one\n- two\n" in doc.body
    assert [(c.slug, c.heading_path) for c in doc.chunks] == [("cutoff-times", ("Cutoff times",))]
    assert_tiles(doc)


def test_html_h1_is_the_title() -> None:
    doc = chunk_document("<title>Site</title><h1>Page</h1><p>x</p>", "html")
    assert doc.title == "Page"


def test_plain_text_chunks_are_runs_of_paragraphs() -> None:
    text = "\n".join(para(19, tag(i)) for i in range(10))  # 10 x 20 tokens
    doc = chunk_document(text, "text", min_tokens=30, max_tokens=60)
    assert_tiles(doc)
    assert all(c.heading_path == () for c in doc.chunks)
    assert [c.tokens for c in doc.chunks] == [40, 60, 40, 60]
    assert [c.slug for c in doc.chunks] == ["intro", "intro-part-2", "intro-part-3", "intro-part-4"]
    assert all(c.text.startswith("tag") for c in doc.chunks)
    # '#' lines are plain text here
    assert chunk_document("# x\n", "text").chunks[0].heading_path == ()


def test_empty_and_whitespace_bodies_have_no_chunks() -> None:
    for fmt in ("markdown", "rst", "html", "text"):
        assert chunk_document("", fmt).chunks == []
        assert chunk_document("  \n\n\t\n", fmt).chunks == []
    assert chunk_document("---\ntitle: x\n---\n\n", "markdown").chunks == []


def test_crlf_input_tiles_and_finds_headings() -> None:
    text = "# A\r\n\r\n" + "text\r\n\r\n" + "B\r\n---\r\n\r\nmore\r\n"
    doc = chunk_document(text, "markdown", min_tokens=0)
    assert_tiles(doc)
    assert [c.heading_path for c in doc.chunks] == [("A",), ("A", "B")]


def test_bad_arguments_are_rejected() -> None:
    with pytest.raises(ValueError):
        chunk_document("x", "docx")
    with pytest.raises(ValueError):
        chunk_document("x", "text", min_tokens=500, max_tokens=100)


def test_chunking_is_linear_in_document_size() -> None:
    # One giant section (the worst case for splitting) and many small ones, ~2 MB each.
    giant = "# Big\n\n" + "\n".join(para(60, tag(i % 7)) for i in range(5000))
    many = "".join(f"## Section {i}\n\n{para(60)}\n" for i in range(5000))
    for text in (giant, many):
        began = time.perf_counter()
        doc = chunk_document(text, "markdown")
        assert time.perf_counter() - began < 5
        assert doc.chunks[-1].end == len(text)


# --------------------------------------------------------------------------- helpers


@pytest.mark.parametrize(
    ("heading", "slug"),
    [
        ("CARRIER-E1042: Label rejected", "carrier-e1042-label-rejected"),
        ("Cutoff times", "cutoff-times"),
        ("**Bold** and _emphasis_", "bold-and-emphasis"),
        ("The `max_tokens` option", "the-max_tokens-option"),
        ("See [the docs](https://example.com/x) now", "see-the-docs-now"),
        ("snake_case_name", "snake_case_name"),
        ("What's new in 2.0?", "whats-new-in-20"),
        ("Foo & Bar", "foo--bar"),  # GitHub keeps one '-' per space
        ("Café Ünïcode", "café-ünïcode"),
        ("  padded  ", "padded"),
        ("", "section"),
        ("???", "section"),
    ],
)
def test_slugify(heading: str, slug: str) -> None:
    assert slugify(heading) == slug


@pytest.mark.parametrize(
    ("path", "fmt"),
    [
        ("docs/guide.md", "markdown"),
        ("README.MARKDOWN", "markdown"),
        ("page.mdx", "markdown"),
        ("index.rst", "rst"),
        ("a/b/page.html", "html"),
        ("page.HTM", "html"),
        ("notes.txt", "text"),
        ("Makefile", "text"),
        ("data.csv", "text"),
        ("dir.md/file", "text"),
    ],
)
def test_detect_format(path: str, fmt: str) -> None:
    assert detect_format(path) == fmt


def test_count_tokens_rule() -> None:
    assert count_tokens("") == 0
    assert count_tokens("The quick brown fox, jumped.") == 7  # 5 words, 2 punctuation runs
    assert count_tokens("1234567") == 3  # digit groups of three
    assert count_tokens("internationalization") == 2  # one per 10 letters
    assert count_tokens("x == y;") == 4
    assert count_tokens("東京都") == 3
    # No token spans a line break, so a text's count is the sum of its lines' counts.
    text = "alpha, beta\ngamma...\n\n12345 delta_epsilon"
    assert count_tokens(text) == sum(count_tokens(line) for line in text.splitlines())


# --------------------------------------------------------------------------- properties


@dataclass(frozen=True)
class Part:
    kind: str  # heading, para, fence, table
    text: str


WORD = st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=12)
LINE = st.lists(WORD, min_size=1, max_size=12).map(" ".join)
TRICKY = st.sampled_from(
    [
        "# Fenced one",
        "## Fenced two",
        "Fenced setext",
        "====",
        "----",
        "| a | b |",
        "+---+",
        "~~",
        "``",
        "```python",  # an info string never closes a fence
        "    ```",  # indented four: not a fence line
        "<!--",
        "",
    ]
)


@st.composite
def heading(draw: st.DrawFn) -> Part:
    title = draw(st.lists(WORD, min_size=0, max_size=4).map(" ".join))
    if title and draw(st.booleans()):
        underline = draw(st.sampled_from("=-")) * draw(st.integers(1, 8))
        return Part("setext", f"{title}\n{underline}\n")
    return Part("heading", "#" * draw(st.integers(1, 6)) + (f" {title}" if title else "") + "\n")


@st.composite
def fence(draw: st.DrawFn) -> Part:
    char = draw(st.sampled_from("`~"))
    size = draw(st.integers(3, 5))
    info = draw(st.sampled_from(["", "python", "sh title"]))
    lines = draw(st.lists(st.one_of(TRICKY, TRICKY, LINE, st.just(char * (size - 1))), max_size=8))
    # A line of `size` or more fence characters would close the fence early.
    lines = [ln for ln in lines if not (ln.strip() and ln.strip().strip(char) == "" and len(ln.strip()) >= size and len(ln) - len(ln.lstrip()) < 4)]  # fmt: skip
    body = "".join(f"{ln}\n" for ln in lines)
    return Part("fence", f"{char * size}{info}\n{body}{char * size}\n")


@st.composite
def table(draw: st.DrawFn) -> Part:
    rows = draw(st.lists(st.lists(WORD, min_size=1, max_size=4), min_size=1, max_size=6))
    return Part("table", "".join("| " + " | ".join(r) + " |\n" for r in rows))


PARAGRAPH = st.lists(LINE, min_size=1, max_size=4).map(
    lambda ls: Part("para", "\n".join(ls) + "\n")
)
PART = st.one_of(heading(), PARAGRAPH, PARAGRAPH, fence(), table())


@dataclass(frozen=True)
class GeneratedDoc:
    text: str
    spans: list[tuple[str, int, int]]  # (kind, start, end) of every part
    min_tokens: int
    max_tokens: int


@st.composite
def markdown_docs(draw: st.DrawFn) -> GeneratedDoc:
    parts = draw(st.lists(PART, max_size=25))
    pieces: list[str] = ["\n" * draw(st.integers(0, 2))]
    pos = len(pieces[0])
    spans = []
    prev: Part | None = None
    for i, part in enumerate(parts):
        text = part.text
        if part.kind == "fence" and i == len(parts) - 1 and draw(st.booleans()):
            text = text[: text.rstrip("\n").rfind("\n") + 1]  # drop the closing line
        gap = draw(st.integers(0, 2))
        # Lines that would fuse two parts into one Markdown block need a blank line between.
        fuses = prev is not None and (
            (prev.kind == "para" and part.kind in ("para", "setext"))
            or (prev.kind == "table" and part.kind == "table")
        )
        if fuses:
            gap = max(gap, 1)
        pieces.append("\n" * gap)
        pos += gap
        pieces.append(text)
        spans.append(("heading" if part.kind == "setext" else part.kind, pos, pos + len(text)))
        pos += len(text)
        prev = part
    if draw(st.booleans()):
        pieces.append("\n" * draw(st.integers(1, 2)))
    max_tokens = draw(st.integers(1, 150))
    min_tokens = draw(st.integers(0, max_tokens))
    return GeneratedDoc("".join(pieces), spans, min_tokens, max_tokens)


PART_SLUG = re.compile(r"(.+)-part-(\d+)")

PROPERTY_SETTINGS = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@PROPERTY_SETTINGS
@given(markdown_docs())
def test_generated_markdown_chunks_keep_every_invariant(gen: GeneratedDoc) -> None:
    doc = chunk_document(gen.text, "markdown", min_tokens=gen.min_tokens, max_tokens=gen.max_tokens)
    assert doc.body == gen.text

    # (1) contiguous, exact cover
    assert_tiles(doc)

    def chunk_at(offset: int) -> Chunk:
        return next(c for c in doc.chunks if c.start <= offset < c.end)

    # (2) a fenced block, opening to closing line, lies inside one chunk
    for kind, start, end in gen.spans:
        if kind == "fence":
            assert end <= chunk_at(start).end

    # (3) over the limit only when the chunk is one unsplittable block (with the headings
    # that lead it: a heading is never cut from the block after it)
    for c in doc.chunks:
        if c.tokens > gen.max_tokens:
            inside = [k for k, s, e in gen.spans if s < c.end and e > c.start and k != "heading"]
            assert len(inside) <= 1, (c, inside)

    # (4) slugs are unique within the document
    slugs = [c.slug for c in doc.chunks]
    assert len(slugs) == len(set(slugs))

    # Split pieces are balanced: a last piece never fits together with the one before it.
    # (Generated titles have no digits, so only split pieces look like "x-part-2".)
    for a, b, after in zip(doc.chunks, doc.chunks[1:], [*doc.chunks[2:], None], strict=False):
        part = PART_SLUG.fullmatch(b.slug)
        if part and (after is None or after.slug != f"{part[1]}-part-{int(part[2]) + 1}"):
            assert a.tokens + b.tokens > gen.max_tokens

    # Heading lookalikes inside fences never become sections (real titles are lowercase).
    assert not any("Fenced" in title for c in doc.chunks for title in c.heading_path)
    assert not any(c.text.lstrip().startswith(("# Fenced", "## Fenced")) for c in doc.chunks)


@PROPERTY_SETTINGS
@given(markdown_docs(), st.data())
def test_editing_a_paragraph_never_moves_another_sections_slug(
    gen: GeneratedDoc, data: st.DataObject
) -> None:
    paragraphs = [(s, e) for k, s, e in gen.spans if k == "para"]
    if not paragraphs:
        return
    _, end = data.draw(st.sampled_from(paragraphs))
    extra = data.draw(st.lists(WORD, min_size=1, max_size=80).map(" ".join))
    edited = gen.text[: end - 1] + " " + extra + gen.text[end - 1 :]

    def chunks(text: str) -> list:
        return chunk_document(
            text, "markdown", min_tokens=gen.min_tokens, max_tokens=gen.max_tokens
        ).chunks

    # The chunk that holds the edited paragraph may change what it holds (and so its
    # heading path: a one-chunk document that grows past the limit keeps its id on the
    # first part, which now holds only the first subsection); every other one keeps both.
    edited_chunk = {c.slug for c in chunks(gen.text) if c.start < end <= c.end}
    before = {c.slug: c.heading_path for c in chunks(gen.text)}
    after = {c.slug: c.heading_path for c in chunks(edited)}
    for slug in (before.keys() & after.keys()) - edited_chunk:
        assert before[slug] == after[slug], slug

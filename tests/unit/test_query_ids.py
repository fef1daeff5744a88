"""Query ids a reviewer can read (issue 24): the salient identifier stays in the slug, and
a candidate kept again after an undo gets its own id back; and the corpus import's line."""

from __future__ import annotations

from pathlib import Path

import pytest

from curator.cli.corpus import _summary
from curator.models import ImportReport
from curator.questionset import QuestionSet
from curator.text import query_slug
from curator.verify import verify


@pytest.mark.parametrize(("query", "slug"), [
    ("What triggers HighlyAvailableWorkloadIncorrectlySpread?", "what-highlyavailableworkloadincorrectlyspread"),
    ("what does CARRIER-E1042 mean", "what-does-carrier-e1042-mean"),  # as before: everything fits
    ("What is the DHL cutoff?", "what-is-the-dhl-cutoff"),
    ("how do I drain a label backlog please now and then", "how-do-i-drain-a-label"),
    ("why does the manifest parser give up after parser.max_retries", "why-does-the-parser-max-retries"),
    ("x" * 60, "x" * 48),
    ("?!", "q"),
])
def test_the_slug_keeps_the_identifier(query: str, slug: str) -> None:
    assert query_slug(query) == slug
    assert len(query_slug(query)) <= 48


def _case(query: str, candidate: int | None, **extra) -> dict:
    source = {"kind": "log", "candidate_id": candidate} if candidate is not None else {"kind": "manual"}
    return {"query": query, "slice": "paraphrase", "relevant": [{"id": "a.md#x", "role": "primary"}],
            "source": source, **extra}


def test_keeping_a_candidate_again_after_an_undo_reuses_its_id(tmp_path: Path) -> None:
    qs = QuestionSet(tmp_path / "main")
    first = qs.add(_case("DHL cutoff", 7))
    qs.retire(first.query_id, reason="undo")
    again = qs.add(_case("DHL cutoff", 7, slice="exact_identifier"))
    assert (again.query_id, again.rev, again.status, again.slice) == ("dhl-cutoff", 3, "active", "exact_identifier")
    # another question, or another candidate, with the same words still gets a new id
    other = qs.add(_case("DHL cutoff", 8))
    assert other.query_id == "dhl-cutoff-2"
    manual = qs.add(_case("dhl cutoff", None))
    assert manual.query_id == "dhl-cutoff-3"
    report = verify(qs)
    assert not report.problems, report.problems
    assert qs.read().cases["dhl-cutoff"].rev == 3


def test_an_active_case_is_never_revived_over(tmp_path: Path) -> None:
    qs = QuestionSet(tmp_path / "main")
    qs.add(_case("DHL cutoff", 7))
    assert qs.add(_case("DHL cutoff", 7)).query_id == "dhl-cutoff-2"


def test_a_history_import_reads_as_one_plain_line(tmp_path) -> None:
    report = ImportReport(documents_new=274, revisions_added=815, history_revisions=541, passages_added=3210)
    assert _summary(report) == "Imported 274 new documents, 541 older revisions as history: 3210 passages."
    again = ImportReport(documents_unchanged=12)
    assert _summary(again) == "Imported nothing new: 0 passages. 12 files were at a revision already imported."
    edited = ImportReport(revisions_added=3, documents_new=1, passages_added=9)
    assert _summary(edited) == "Imported 1 new documents, 2 updated documents: 9 passages."


def test_a_first_history_import_of_a_git_corpus_says_nothing_was_there_already(tmp_path) -> None:
    """A real git repository, imported twice with --history through the console script: the
    first import has no "already imported" files (the tip git gives again is the file just
    read), the second has each file once."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    curator = str(Path(sys.executable).parent / "curator")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e"}
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("a.md", "b.md"):
        (docs / name).write_text(f"# {name}\n\nThe cutoff is 17:30.\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=docs, check=True, env=env)
    subprocess.run(["git", "add", "-A"], cwd=docs, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "one"], cwd=docs, check=True, env=env)
    (docs / "a.md").write_text("# a.md\n\nThe cutoff is 18:00.\n", encoding="utf-8")
    subprocess.run(["git", "commit", "-qam", "two"], cwd=docs, check=True, env=env)
    subprocess.run([curator, "init", str(tmp_path / "ws")], check=True, capture_output=True)

    def add() -> str:
        done = subprocess.run([curator, "corpus", "add", str(docs), "--history"], cwd=tmp_path / "ws",
                              capture_output=True, text=True, timeout=60, env=env)
        assert done.returncode == 0, done.stderr
        return next(line for line in done.stdout.splitlines() if line.startswith("Imported"))

    assert add() == "Imported 2 new documents, 1 older revisions as history: 3 passages."
    assert add() == "Imported nothing new: 0 passages. 2 files were at a revision already imported."

"""`curator sets import`: an existing set comes in as cases with change-log entries; the
export -> import -> export round trip gives the same qrels; unknown ids, missing slices and
earlier imports are skipped by name; the grade rule holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curator.export import export, read_beir, read_qrels_json, read_trec
from curator.importsets import import_set, roles


def _active(ws, name: str | None = None):
    return {c.query_id: c for c in ws.question_set(name).read().cases.values() if c.status == "active"}


@pytest.mark.parametrize("fmt", ["beir", "trec", "ranx", "jsonl"])
def test_export_import_export_gives_the_same_qrels(demo_ws, tmp_path: Path, run_cli, fmt: str) -> None:
    original = _active(demo_ws)
    out = tmp_path / ("first.json" if fmt == "ranx" else "first.jsonl" if fmt == "jsonl" else "first")
    export(demo_ws, None, fmt, out)
    args = ["sets", "import", str(out), "--format", fmt, "--set", "copy", "--negatives"]
    if fmt == "ranx":  # ranx JSON holds no text: the queries come from a TSV
        (tmp_path / "topics.tsv").write_text("".join(f"{q}\t{c.query}\n" for q, c in original.items()))
        args += ["--queries", str(tmp_path / "topics.tsv"), "--slice", "paraphrase"]
    elif fmt == "trec":
        args += ["--slice", "paraphrase"]  # TREC topics carry no slice
    else:
        args += ["--slice-from", "slice"]
    result = run_cli(args, cwd=demo_ws.root)
    assert result.exit_code == 0, result.output
    copy = _active(demo_ws, "copy")
    assert set(copy) == set(original)
    assert all(c.source.kind == "import" and c.query == original[q].query for q, c in copy.items())
    if fmt in ("beir", "jsonl"):
        assert all(c.slice == original[q].slice for q, c in copy.items())
    assert {q for q, c in copy.items() if c.expect_empty} == {q for q, c in original.items() if not c.relevant}
    # every case has its change-log entry, and the set verifies
    entries = demo_ws.question_set("copy").changelog()
    assert sorted(e.query_id for e in entries if e.action == "add") == sorted(copy)
    second = tmp_path / ("second.json" if fmt == "ranx" else "second.jsonl" if fmt == "jsonl" else "second")
    export(demo_ws, "copy", fmt, second)
    if fmt == "beir":
        assert read_beir(second)[1] == read_beir(out)[1]
    elif fmt == "trec":
        assert read_trec(second)[1] == read_trec(out)[1]
    elif fmt == "ranx":
        assert read_qrels_json(second) == read_qrels_json(out)
    else:
        assert ({c["query_id"]: [(r["id"], r["grade"]) for r in c["relevant"]] for c in map(json.loads, out.read_text().splitlines())}
                == {c["query_id"]: [(r["id"], r["grade"]) for r in c["relevant"]]
                    for c in map(json.loads, second.read_text().splitlines())})
    assert run_cli(["verify", "copy"], cwd=demo_ws.root).exit_code == 0


def test_a_rerun_adds_nothing_and_names_each_query(demo_ws, tmp_path: Path, run_cli) -> None:
    export(demo_ws, None, "beir", tmp_path / "beir")
    assert run_cli(["sets", "import", str(tmp_path / "beir"), "--format", "beir", "--set", "copy",
                    "--slice-from", "slice"], cwd=demo_ws.root).exit_code == 0
    lines = demo_ws.question_set("copy").cases_path.read_text().count("\n")
    again = run_cli(["sets", "import", str(tmp_path / "beir"), "--format", "beir", "--set", "copy",
                     "--slice-from", "slice", "--json"], cwd=demo_ws.root)
    assert again.exit_code == 3
    report = json.loads(again.stdout)
    assert report["imported"] == 0 and all("already has this query id" in s for s in report["skipped"])
    assert any(s.startswith(str(tmp_path / "beir" / "qrels" / "test.tsv") + ":") for s in report["skipped"])
    assert demo_ws.question_set("copy").cases_path.read_text().count("\n") == lines


def test_unknown_ids_are_refused_unless_allowed(demo_ws, tmp_path: Path) -> None:
    (tmp_path / "qrels.txt").write_text("q1 0 faq.md#on-call 1\nq2 0 nowhere.md#x 2\nq2 0 faq.md#on-call 1\n")
    (tmp_path / "topics.tsv").write_text("q1\twho is on call\nq2\twhere is nowhere\n")
    result = import_set(demo_ws, tmp_path / "qrels.txt", "trec", set_name="t", slice_name="paraphrase")
    assert result.imported == ["q1"]
    assert len(result.skipped) == 1 and result.skipped[0].startswith(f"{tmp_path / 'qrels.txt'}:2: q2: 1 id(s)")
    assert "'nowhere.md#x'" in result.skipped[0]
    allowed = import_set(demo_ws, tmp_path / "qrels.txt", "trec", set_name="t", slice_name="paraphrase",
                         allow_unknown_ids=True)
    assert allowed.imported == ["q2"]
    assert [(r.id, r.role, r.grade) for r in _active(demo_ws, "t")["q2"].relevant] == [
        ("nowhere.md#x", "primary", 2), ("faq.md#on-call", "secondary", 1)]


def test_the_grade_rule() -> None:
    # binary qrels: the 1s are the primaries; 0 (judged not relevant) is dropped
    assert [(r.id, r.role, r.grade) for r in roles({"a": 1, "b": 0, "c": 1})] == [
        ("a", "primary", 1), ("c", "primary", 1)]
    assert [(r.id, r.role, r.grade) for r in roles({"a": 3, "b": 1, "c": 2})] == [
        ("a", "primary", 3), ("b", "secondary", 1), ("c", "primary", 2)]
    assert roles({"a": 0}) == []


def test_queries_without_a_positive_come_in_only_as_asked_negatives(demo_ws, tmp_path: Path) -> None:
    (tmp_path / "qrels.json").write_text(json.dumps({"q1": {"faq.md#on-call": 1}, "q2": {"faq.md#on-call": 0}}))
    (tmp_path / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in
                [("q1", "who is on call"), ("q2", "expense a taxi"), ("q3", "rotate the kafka keys")]))
    plain = import_set(demo_ws, tmp_path / "qrels.json", "ranx", set_name="n", queries=tmp_path / "queries.jsonl",
                       slice_name="paraphrase")
    assert plain.imported == ["q1"]
    asked = import_set(demo_ws, tmp_path / "qrels.json", "ranx", set_name="n2", queries=tmp_path / "queries.jsonl",
                       slice_name="negative", negatives=True)
    assert sorted(asked.imported) == ["q1", "q2", "q3"]
    cases = _active(demo_ws, "n2")
    assert cases["q2"].expect_empty and not cases["q2"].relevant and cases["q3"].expect_empty


@pytest.mark.parametrize(("bad_line", "message"), [
    ("q1 0 faq.md#on-call", "qrels.txt:2: expected `qid 0 docno relevance`"),
    ("q1 0 faq.md#on-call high", "qrels.txt:2: relevance 'high' is not a whole number"),
    ("q1 0 faq.md#on-call 7", "qrels.txt:2: relevance 7 is outside 0-3"),
])
def test_a_bad_line_is_named_and_the_rest_still_comes_in(demo_ws, tmp_path: Path, run_cli, bad_line: str,
                                                          message: str) -> None:
    # q1's first judgment is fine, its second is not: q1 is left out whole (half its
    # judgments would be a wrong case); q2, on good lines, comes in
    (tmp_path / "qrels.txt").write_text(f"q1 0 faq.md#carrier-platform-faq 1\n{bad_line}\nq2 0 faq.md#on-call 2\n")
    (tmp_path / "topics.tsv").write_text("q1\twho is on call\nq2\twho gets paged\nno tab here\n")
    result = import_set(demo_ws, tmp_path / "qrels.txt", "trec", set_name="n", slice_name="paraphrase")
    assert result.imported == ["q2"]
    assert any(message in line and "left out" in line for line in result.skipped), result.skipped
    assert any("topics.tsv:3: expected `query-id<TAB>text`" in line for line in result.skipped)
    assert set(_active(demo_ws, "n")) == {"q2"}
    cli = run_cli(["sets", "import", str(tmp_path / "qrels.txt"), "--format", "trec", "--set", "n2",
                   "--slice", "paraphrase"], cwd=demo_ws.root)
    assert cli.exit_code == 3 and message in cli.output and "Traceback" not in cli.output


def test_a_curator_jsonl_export_comes_back_with_everything_it_says(demo_ws, tmp_path: Path, run_cli) -> None:
    # freshness pins, revisions, roles, require_all, max_rank and explanations are kept, so
    # the copy verifies without the slice-rule warnings a qrels-only import would get
    original = _active(demo_ws)
    export(demo_ws, None, "jsonl", tmp_path / "all.jsonl")
    result = run_cli(["sets", "import", str(tmp_path / "all.jsonl"), "--format", "jsonl", "--set", "copy"],
                     cwd=demo_ws.root)
    assert result.exit_code == 0, result.output
    copy = _active(demo_ws, "copy")
    keep = {"relevant", "require_all", "max_rank", "expect_empty", "freshness", "explanation", "slice", "tags"}
    for query_id, case in copy.items():
        assert case.model_dump(include=keep) == original[query_id].model_dump(include=keep), query_id
        assert case.source.kind == "import"
        assert case.source.model_dump()["original_source"]["kind"] == original[query_id].source.kind
    assert any(c.freshness is not None for c in copy.values())
    assert any(r.revision for c in copy.values() for r in c.relevant)
    verify = run_cli(["verify", "copy"], cwd=demo_ws.root)
    assert verify.exit_code == 0 and "needs a revision pin" not in verify.output, verify.output

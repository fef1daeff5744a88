"""`curator export`: every format round-trips, filters, --as-of, negatives never dropped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from curator.errors import CuratorError
from curator.export import (
    Selection,
    export,
    read_beir,
    read_jsonl,
    read_negatives,
    read_qrels_json,
    read_trec,
    select_cases,
)


def _case(query: str, slice_: str = "paraphrase", **extra) -> dict:
    base = {"query": query, "slice": slice_, "relevant": [{"id": "a.md#x", "role": "primary"}]}
    base.update(extra)
    return base


def _expected_qrels(cases) -> dict[str, dict[str, int]]:
    return {c.query_id: {r.id: r.grade for r in c.relevant} for c in cases if c.relevant}


def test_every_format_round_trips_the_demo_set(demo_ws, tmp_path: Path) -> None:
    active = [c for c in demo_ws.question_set().read().cases.values() if c.status == "active"]
    negatives = sorted(c.query_id for c in active if not c.relevant)
    assert negatives and any(r.role == "secondary" for c in active for r in c.relevant)

    result = export(demo_ws, None, "jsonl", tmp_path / "set.jsonl")
    assert read_jsonl(tmp_path / "set.jsonl") == active  # negatives carried natively
    assert result.negatives == [] and not (tmp_path / "negatives.jsonl").exists()

    result = export(demo_ws, None, "beir", tmp_path / "beir")
    queries, qrels = read_beir(tmp_path / "beir")
    assert qrels == _expected_qrels(active)
    assert {q: r["text"] for q, r in queries.items()} == {c.query_id: c.query for c in active}
    assert all(queries[c.query_id]["metadata"]["slice"] == c.slice for c in active)
    grades = {score for scores in qrels.values() for score in scores.values()}
    assert grades == {1, 2}  # primary 2, secondary 1
    assert (tmp_path / "beir" / "qrels" / "test.tsv").read_text().startswith("query-id\tcorpus-id\tscore\n")
    side = read_negatives(tmp_path / "beir" / "negatives.jsonl")
    assert sorted(r["query_id"] for r in side) == negatives == sorted(result.negatives)
    assert any("negative" in w for w in result.warnings)

    result = export(demo_ws, None, "trec", tmp_path / "trec")
    topics, qrels = read_trec(tmp_path / "trec")
    assert qrels == _expected_qrels(active)
    assert topics == {c.query_id: c.query for c in active}
    assert sorted(r["query_id"] for r in read_negatives(tmp_path / "trec" / "negatives.jsonl")) == negatives

    result = export(demo_ws, None, "ranx", tmp_path / "ranx.json")
    assert read_qrels_json(tmp_path / "ranx.json") == _expected_qrels(active)
    assert sorted(r["query_id"] for r in read_negatives(tmp_path / "ranx.negatives.jsonl")) == negatives

    result = export(demo_ws, None, "ir_measures", tmp_path / "qrels.txt")  # a TREC qrels file
    lines = [line.split() for line in (tmp_path / "qrels.txt").read_text().splitlines()]
    qrels: dict[str, dict[str, int]] = {}
    for qid, zero, pid, grade in lines:
        assert zero == "0"
        qrels.setdefault(qid, {})[pid] = int(grade)
    assert qrels == _expected_qrels(active)
    assert sorted(r["query_id"] for r in read_negatives(tmp_path / "qrels.negatives.jsonl")) == negatives


def test_beir_with_corpus_holds_every_labelled_passage(demo_ws, tmp_path: Path) -> None:
    result = export(demo_ws, None, "beir", tmp_path / "beir", with_corpus=True)
    corpus = [json.loads(line) for line in (tmp_path / "beir" / "corpus.jsonl").read_text().splitlines()]
    ids = {doc["_id"] for doc in corpus}
    assert len(ids) == len(corpus) and all(doc["text"] for doc in corpus)
    _, qrels = read_beir(tmp_path / "beir")
    assert {pid for scores in qrels.values() for pid in scores} <= ids
    assert ids >= {p.id for p in demo_ws.passages()}
    assert not any("--with-corpus" in w for w in result.warnings)


def test_exported_qrels_load_in_ir_measures(demo_ws, tmp_path: Path) -> None:
    ir_measures = pytest.importorskip("ir_measures")
    export(demo_ws, None, "ir_measures", tmp_path / "qrels.txt")
    export(demo_ws, None, "ranx", tmp_path / "qrels.json")
    qrels = read_qrels_json(tmp_path / "qrels.json")
    # A run that returns exactly the judged passages, best grade first, is perfect.
    run = {q: {pid: float(g) for pid, g in docs.items()} for q, docs in qrels.items()}
    from_json = ir_measures.calc_aggregate([ir_measures.nDCG @ 10, ir_measures.RR], qrels, run)
    # the ir_measures export is a path ir_measures reads itself
    from_file = list(ir_measures.read_trec_qrels(str(tmp_path / "qrels.txt")))
    from_trec = ir_measures.calc_aggregate([ir_measures.nDCG @ 10, ir_measures.RR], from_file, run)
    assert from_json[ir_measures.nDCG @ 10] == pytest.approx(1.0)
    assert from_json[ir_measures.RR] == pytest.approx(1.0)
    assert from_trec[ir_measures.nDCG @ 10] == pytest.approx(1.0)
    assert len(from_file) == sum(len(v) for v in qrels.values())


def test_filters_slice_tag_status(ws, tmp_path: Path) -> None:
    qs = ws.question_set()
    qs.add(_case("one", tags=["regression"]))
    qs.add(_case("two", "freshness"))
    qs.add(_case("three", "freshness", tags=["smoke"]))
    qs.retire("one", reason="obsolete")
    ids = lambda sel: [c.query_id for c in select_cases(ws, None, sel)[0]]  # noqa: E731
    assert ids(Selection()) == ["two", "three"]
    assert ids(Selection(slices=("freshness",), tags=("smoke", "regression"))) == ["three"]
    assert ids(Selection(status="retired")) == ["one"]
    assert ids(Selection(status="all", tags=("regression",))) == ["one"]
    with pytest.raises(CuratorError, match="no question set 'nope'"):
        select_cases(ws, "nope", Selection())


def test_as_of_line_count_date_freeze_and_git_commit(ws, tmp_path: Path) -> None:
    from curator.freeze import freeze

    qs = ws.question_set()
    qs.add(_case("alpha", tags=["regression"]))
    qs.add(_case("beta"))
    subprocess.run(["git", "init", "-q", str(ws.root)], check=True)
    _git(ws.root, "add", "-A")
    _git(ws.root, "commit", "-qm", "two cases")
    first = _git(ws.root, "rev-parse", "HEAD").strip()
    freeze(ws)
    qs.revise("alpha", {"query": "alpha relabelled"}, action="edit", reason="typo")
    qs.add(_case("gamma"))
    ids = lambda ref: {c.query_id: c.query for c in select_cases(ws, None, Selection(as_of=ref))[0]}  # noqa: E731
    before = {"alpha": "alpha", "beta": "beta"}
    assert ids(None) == {"alpha": "alpha relabelled", "beta": "beta", "gamma": "gamma"}
    assert ids("2") == before
    assert ids("1999-01-01") == {}
    assert ids("2999-01-01T00:00:00Z") == ids(None)
    assert ids("regression") == before  # the newest freeze of that name
    # a short sha, long enough to hold a letter: digits alone are a line count
    short = next(first[:n] for n in range(8, 41) if not first[:n].isdigit())
    assert ids(first) == before and ids(short) == before
    with pytest.raises(CuratorError, match="expected a line count, a date"):
        ids("no-such-thing")


def test_cli_export_json_negatives_and_partial_exit(run_cli, ws, tmp_path: Path) -> None:
    qs = ws.question_set()
    qs.add(_case("good one"))
    qs.add({"query": "not answered here", "slice": "negative", "expect_empty": True})
    qs.add(_case("spacey", relevant=[{"id": "odd id.md#x", "role": "primary"}]))
    out = tmp_path / "trec"
    result = run_cli(["export", "--format", "trec", "--out", str(out), "--json"], cwd=ws.root)
    assert result.exit_code == 3, result.output  # one case could not be written
    data = json.loads(result.stdout)
    assert data["negatives"] == ["not-answered-here"]
    assert data["skipped"] and "spacey" in data["skipped"][0]
    topics, qrels = read_trec(out)
    assert set(topics) == {"good-one", "not-answered-here"} and set(qrels) == {"good-one"}
    # The negative case is retired: a fresh export removes the stale side file.
    qs.retire("not-answered-here", reason="now documented")
    qs.retire("spacey", reason="bad id")
    assert run_cli(["export", "-f", "trec", "-o", str(out)], cwd=ws.root).exit_code == 0
    assert not (out / "negatives.jsonl").exists()


def test_cli_usage_errors_exit_2(run_cli, ws) -> None:
    ws.question_set().add(_case("x"))
    assert run_cli(["export", "--format", "jsonl"], cwd=ws.root).exit_code == 2
    result = run_cli(["export", "--freeze", "regression", "--slice", "a"], cwd=ws.root)
    assert result.exit_code == 2 and "--slice" in result.output
    assert run_cli(["export", "--all"], cwd=ws.root).exit_code == 2
    assert run_cli(["export", "-f", "yaml", "-o", "x"], cwd=ws.root).exit_code == 2
    result = run_cli(["export", "-f", "jsonl", "-o", "x.jsonl", "--as-of", "banana"], cwd=ws.root)
    assert result.exit_code == 2 and "expected a line count" in result.output
    assert run_cli(["export", "-f", "trec", "-o", "t", "--with-corpus"], cwd=ws.root).exit_code == 2


def test_broken_line_is_named_and_nothing_is_written(ws, tmp_path: Path) -> None:
    qs = ws.question_set()
    qs.add(_case("fine"))
    with open(qs.cases_path, "a") as fh:
        fh.write('{"query_id": "broken", "rev": 1}\n')
    with pytest.raises(CuratorError, match=r"cases\.jsonl:2: not a valid case"):
        export(ws, None, "jsonl", tmp_path / "out.jsonl")
    assert not (tmp_path / "out.jsonl").exists()


def test_real_console_script_exports_and_verifies(ws, tmp_path: Path) -> None:
    ws.question_set().add(_case("through the real script", tags=["regression"]))
    script = Path(sys.executable).with_name("curator")
    env = {**os.environ, "CURATOR_WORKSPACE": str(ws.root)}
    run = lambda *args: subprocess.run([str(script), *args], capture_output=True, text=True, env=env)  # noqa: E731
    done = run("export", "-f", "beir", "-o", str(tmp_path / "b"), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["cases"] == 1
    assert run("export", "--freeze", "regression").returncode == 0
    verified = run("verify", "--json")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert any("freeze" in note for note in json.loads(verified.stdout)[0]["notes"])


def _git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                          text=True, env=env).stdout


def test_beir_qrels_read_the_way_generic_data_loader_reads_them(ws, tmp_path: Path) -> None:
    import csv

    qs = ws.question_set()
    qs.add(_case("plain", relevant=[{"id": "a b.md#x y", "role": "primary"},
                                    {"id": "c.md#z", "role": "secondary", "grade": 3}]))
    qs.add(_case("quoted", relevant=[{"id": '"q".md#x', "role": "primary"}]))
    result = export(ws, None, "beir", tmp_path / "beir")
    assert result.partial and "quoted" in result.skipped[0]
    # BEIR's GenericDataLoader._load_qrels: csv.reader, tab, QUOTE_MINIMAL, header skipped.
    with open(tmp_path / "beir" / "qrels" / "test.tsv", encoding="utf-8") as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_MINIMAL)
        next(reader)
        rows = {(row[0], row[1]): int(row[2]) for row in reader}
    assert rows == {("plain", "a b.md#x y"): 2, ("plain", "c.md#z"): 3}
    queries, _ = read_beir(tmp_path / "beir")
    assert set(queries) == {"plain"}


def test_a_hand_written_latest_line_is_its_case_s_latest_and_a_tab_skips_a_beir_row(ws, tmp_path: Path) -> None:
    qs = ws.question_set()
    qs.add(_case("one"))
    qs.add(_case("tabbed", relevant=[{"id": "a.md#x\ty", "role": "primary"}]))
    with open(qs.cases_path, "a") as fh:  # rev 2 of "one" with its keys in another order than curator's
        fh.write('{"rev": 2, "query_id": "one", "query": "one, by hand", "slice": "paraphrase", '
                 '"relevant": [{"id": "b.md#y"}]}\n')
    result = export(ws, None, "beir", tmp_path / "beir")
    queries, qrels = read_beir(tmp_path / "beir")
    assert {q: r["text"] for q, r in queries.items()} == {"one": "one, by hand"}
    assert qrels == {"one": {"b.md#y": 2}}
    assert result.partial and result.skipped[0].startswith("tabbed: passage id 'a.md#x\\ty' holds a tab")

"""The CLI as a user runs it: init, status, corpus, verify, config, errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from curator.config import load_config
from curator.corpus import add_paths
from curator.errors import ConfigError
from curator.workspace import Workspace
from tests.conftest import write


def test_init_creates_the_workspace_layout(run_cli, tmp_path: Path) -> None:
    result = run_cli(["init", str(tmp_path / "evals")])
    assert result.exit_code == 0, result.output
    root = tmp_path / "evals"
    for name in ("curator.toml", "datasets", "prompts", "runs", ".curator/workspace.db"):
        assert (root / name).exists(), name
    assert ".curator/" in (root / ".gitignore").read_text()
    assert "merge=union" in (root / ".gitattributes").read_text()
    config = load_config(root)
    assert config.scoring.k == [5, 15]
    assert {s.target for s in config.slices.values()} == {10}
    ws = Workspace.open(root)
    assert ws.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert "m001_core" in {m.name for m in __import__("curator.migrations").migrations.migrations.applied(ws.db)}
    ws.close()
    # running init again keeps what is there
    (root / "curator.toml").write_text('default_set = "mine"\n')
    assert run_cli(["init", str(root)]).exit_code == 0
    assert load_config(root).default_set == "mine"


def test_commands_find_the_workspace_upward_or_explain(run_cli, tmp_path: Path) -> None:
    outside = tmp_path / "nowhere"
    outside.mkdir()
    result = run_cli(["status"], cwd=outside)
    assert result.exit_code == 1
    assert "No curator workspace" in result.output and "curator init" in result.output
    run_cli(["init", str(tmp_path / "ws")])
    deep = tmp_path / "ws" / "datasets" / "x"
    deep.mkdir(parents=True)
    assert run_cli(["status"], cwd=deep).exit_code == 0
    assert run_cli(["-w", str(tmp_path / "ws"), "status", "--json"], cwd=outside).exit_code == 0


def test_corpus_add_search_show_and_partial_exit_code(run_cli, tmp_path: Path) -> None:
    run_cli(["init", str(tmp_path / "ws")])
    docs = write(tmp_path / "docs", {"dhl.md": "# DHL\n\n## Cutoff times\n\nWeekday cutoff 18:00.", "bad.md": b"\x00\x01"})
    result = run_cli(["corpus", "add", str(docs)], cwd=tmp_path / "ws")
    assert result.exit_code == 3
    assert "bad.md" in result.output and "binary" in result.output
    result = run_cli(["corpus", "search", "cutoff", "--json"], cwd=tmp_path / "ws")
    hits = json.loads(result.stdout)
    assert hits[0]["id"].startswith("dhl.md#") and "\x02" not in hits[0]["snippet"]
    shown = run_cli(["corpus", "show", hits[0]["id"]], cwd=tmp_path / "ws")
    assert "Weekday cutoff 18:00." in shown.output
    missing = run_cli(["corpus", "show", "nope#x"], cwd=tmp_path / "ws")
    assert missing.exit_code == 1 and "no passage 'nope#x'" in missing.output
    again = run_cli(["corpus", "add", str(docs / "dhl.md"), "--json"], cwd=tmp_path / "ws")
    assert again.exit_code == 0 and json.loads(again.stdout)["documents_unchanged"] == 1


def test_status_counts_cases_per_slice(run_cli, ws) -> None:
    qs = ws.question_set()
    qs.add({"query": "q one", "slice": "negative", "expect_empty": True})
    qs.add({"query": "q two", "slice": "paraphrase", "relevant": [{"id": "a#b"}]})
    data = json.loads(run_cli(["status", "--json"], cwd=ws.root).stdout)
    slices = data["sets"]["main"]["slices"]
    assert slices["negative"] == {"cases": 1, "target": 10, "min_detectable_difference": 1.0}
    assert slices["paraphrase"]["cases"] == 1 and slices["multi_hop"]["cases"] == 0
    text = run_cli(["status"], cwd=ws.root).output
    assert "set main: 2 active" in text


def test_status_reads_the_same_through_the_checkpoint_and_sees_a_bad_line_after_it(run_cli, ws) -> None:
    qs = ws.question_set()
    first = qs.add({"query": "q one", "slice": "paraphrase", "relevant": [{"id": "a#b"}]})
    qs.add({"query": "q two", "slice": "negative", "expect_empty": True})
    qs.revise(first.query_id, {"slice": "exact_identifier"}, action="reslice", reason="an id")
    before = json.loads(run_cli(["status", "--json"], cwd=ws.root).stdout)["sets"]["main"]
    assert before["verify"]["ok"] is True  # the full verify, which records the checkpoint, as the gate does
    assert before["verify"]["append_only"] != "checked since the last passing verify"
    after = json.loads(run_cli(["status", "--json"], cwd=ws.root).stdout)["sets"]["main"]
    assert after["verify"]["append_only"] == "checked since the last passing verify"
    assert {**after, "verify": None} == {**before, "verify": None}
    assert after["slices"]["exact_identifier"]["cases"] == 1 and after["slices"]["paraphrase"]["cases"] == 0
    assert (after["active"], after["lines"], after["problems"]) == (2, 3, [])
    with open(qs.cases_path, "a", encoding="utf-8") as fh:  # a broken line after the checkpoint
        fh.write('{"query_id": "q-one", "rev": 2}\n')
    broken = json.loads(run_cli(["status", "--json"], cwd=ws.root).stdout)["sets"]["main"]
    assert broken["verify"]["ok"] is False and broken["lines"] == 4
    assert any(":4: not a valid case" in problem for problem in broken["problems"])


def test_verify_exit_codes(run_cli, ws) -> None:
    qs = ws.question_set()
    qs.add({"query": "q one", "slice": "paraphrase", "relevant": [{"id": "missing.md#x"}]})
    # no corpus yet (a fresh clone): the labels are not checked, and --strict says it cannot
    fresh = run_cli(["verify"], cwd=ws.root)
    assert fresh.exit_code == 0 and "labels not checked" in fresh.output and "missing.md#x" not in fresh.output
    assert run_cli(["verify", "--strict"], cwd=ws.root).exit_code == 1
    (ws.root / "docs.md").write_text("# Docs\n\nSome text about parsers.\n")
    add_paths(ws, [ws.root / "docs.md"])
    ok = run_cli(["verify"], cwd=ws.root)
    assert ok.exit_code == 0 and "missing.md#x" in ok.output
    assert run_cli(["verify", "--strict"], cwd=ws.root).exit_code == 1
    text = qs.cases_path.read_text().replace("q one", "q 1")
    qs.cases_path.write_text(text)
    bad = run_cli(["verify", "--json"], cwd=ws.root)
    assert bad.exit_code == 1
    problems = json.loads(bad.stdout)[0]["problems"]
    assert any(p["line"] == 1 and "edited or removed" in p["message"] for p in problems)


def test_env_overrides_config(tmp_path: Path) -> None:
    Workspace.init(tmp_path).close()
    config = load_config(tmp_path, {"CURATOR_SCORING__K": "[3, 9]", "CURATOR_MODEL": "local-llm",
                                    "CURATOR_REVIEWER": "kim"})
    assert config.scoring.k == [3, 9] and config.model.name == "local-llm" and config.reviewer_name == "kim"


def test_a_bad_environment_variable_is_named(tmp_path: Path) -> None:
    Workspace.init(tmp_path).close()
    with pytest.raises(ConfigError, match=r"environment variable CURATOR_LOGS__SIMILARTY: invalid configuration"):
        load_config(tmp_path, {"CURATOR_LOGS__SIMILARTY": "90"})
    with pytest.raises(ConfigError, match=r"environment variable CURATOR_SCORING__K"):
        load_config(tmp_path, {"CURATOR_SCORING__K": "[0]"})
    with pytest.raises(ConfigError, match=r"curator.toml: invalid configuration"):  # the file's own mistake
        (tmp_path / "curator.toml").write_text("[scoring]\nk = [0]\n")
        load_config(tmp_path, {"CURATOR_REVIEWER": "kim"})


def test_config_errors_name_the_file(run_cli, tmp_path: Path) -> None:
    Workspace.init(tmp_path).close()
    (tmp_path / "curator.toml").write_text("[scoring]\nk = [0]\n")
    result = run_cli(["status"], cwd=tmp_path)
    assert result.exit_code == 1 and "curator.toml" in result.output and "scoring.k" in result.output
    (tmp_path / "curator.toml").write_text("[model]\napi_key = 'sk-secret-value'\n")
    result = run_cli(["status"], cwd=tmp_path)
    assert result.exit_code == 1 and "must not be stored" in result.output
    assert "sk-secret-value" not in result.output


def test_python_dash_m_and_console_script(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "curator", "--help"], capture_output=True, text=True, check=True)
    assert "curator demo" in out.stdout
    script = Path(sys.executable).with_name("curator")
    out = subprocess.run([str(script), "--version"], capture_output=True, text=True, check=True)
    assert "curator" in out.stdout


def test_the_console_script_ends_with_all_its_output_and_the_commands_exit_code(tmp_path: Path) -> None:
    """The console script ends the process itself once a command is done (os._exit):
    output past the stream buffers arrives whole, the workspace is closed cleanly, and
    each exit code is the command's."""
    script = str(Path(sys.executable).with_name("curator"))
    ws = tmp_path / "ws"
    subprocess.run([script, "init", str(ws)], capture_output=True, check=True)
    log = tmp_path / "search.jsonl"
    lines = [json.dumps({"query": f"how do I configure retry policy {i} " + "for the shipping label service " * 6})
             for i in range(300)]
    log.write_text("\n".join([*lines, "{broken"]) + "\n")
    out = subprocess.run([script, "-w", str(ws), "import-logs", str(log), "--json"], capture_output=True, text=True)
    assert len(out.stdout) > 16384  # past the 8 KiB buffer of a pipe
    summary = json.loads(out.stdout)
    assert out.returncode == 3 and summary["queued"] == 300 and summary["rejected"] == 1  # partial: a line was bad
    assert not (ws / ".curator" / "workspace.db-wal").exists()  # closed (checkpointed), not abandoned
    out = subprocess.run([script, "-w", str(ws), "import-logs", str(tmp_path / "missing.jsonl")],
                         capture_output=True, text=True)
    assert out.returncode == 1 and "missing.jsonl" in out.stderr
    out = subprocess.run([script, "import-logs", "--no-such-option"], capture_output=True, text=True)
    assert out.returncode == 2 and "no-such-option" in out.stderr


def test_sqlite_utils_is_imported_without_pandas_which_still_imports_later() -> None:
    code = (
        "import sys, importlib.util\n"
        "import curator.workspace\n"
        "assert 'pandas' not in sys.modules and 'numpy' not in sys.modules\n"
        "import sqlite_utils.db as d\n"
        "assert d.pd is None\n"
        "if importlib.util.find_spec('pandas'):\n"
        "    import pandas\n"
        "    assert pandas.DataFrame\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_opening_a_workspace_loads_no_importer_and_no_plugin_but_add_paths_still_imports(tmp_path: Path) -> None:
    Workspace.init(tmp_path / "ws").close()
    code = (
        "import sys\n"
        "from curator.workspace import Workspace\n"
        f"ws = Workspace.open({str(tmp_path / 'ws')!r})\n"
        "import sqlite_utils.plugins as plugins\n"
        "assert not plugins._plugins_loaded  # no entry points read\n"
        "assert 'curator.corpus.importer' not in sys.modules and 'curator.corpus.chunker' not in sys.modules\n"
        "from curator.corpus import add_paths\n"
        "assert add_paths.__module__ == 'curator.corpus.importer'\n"
        "import curator.corpus as corpus\n"
        "try:\n"
        "    corpus.no_such_name\n"
        "except AttributeError as exc:\n"
        "    assert 'no_such_name' in str(exc)\n"
        "else:\n"
        "    raise SystemExit('no AttributeError')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)

"""What `curator generate` puts on the wire and keeps: the cost cap under concurrency, no
request without a key or a server, optional temperature, the completion limit's field per
model family, `[model] extra_body` / `extra_headers`, and an echoed key never stored.
Against the real HTTP server of tests/fake_openai.py."""

from __future__ import annotations

import json
import re

import pytest

from curator.errors import EXIT_FAILED
from curator.generate import generate
from curator.generate.keyguard import Redactor
from curator.generate.wire import is_reasoning_model
from curator.workspace import Workspace
from tests.unit import generate_corpus

pytest_plugins = ["tests.fake_openai"]  # the `fake_openai` fixture

KEY = "sk-proj-Wire7Test9Key3Mixed5Case1Tail0xyz"
PRICES = '[model.prices."gpt-4o-mini"]\ninput = 0.15\noutput = 0.60\n'


@pytest.fixture
def gws(ws, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    generate_corpus.load(ws, tmp_path)
    return ws


def configure(ws: Workspace, toml: str) -> Workspace:
    """The workspace reopened with `toml` as its curator.toml."""
    (ws.root / "curator.toml").write_text(toml, encoding="utf-8")
    return Workspace.open(ws.root)


def chat_bodies(server) -> list[dict]:
    return [r["body"] for r in server.requests if r["path"].endswith("/chat/completions")]


def test_max_cost_holds_under_concurrency_8_and_reports_the_call_logs_spend(gws, fake_openai):
    """Every completion is billed at its full token limit (a reasoning model's worst case):
    reserving only the expected tokens would let eight calls in flight overshoot."""
    fake_openai.full_limit = True
    fake_openai.latency = 0.05  # eight calls in flight at once
    cap = 0.004
    summary = generate(gws, base_url=fake_openai.url, passages=20, concurrency=8, max_cost=cap, timeout=5)
    spent = gws.db.execute("SELECT SUM(cost) FROM model_calls WHERE run_id = ?", [summary.run_id]).fetchone()[0]
    assert fake_openai.chat_calls >= 2  # the cap let several calls through...
    assert spent <= cap  # ...and held
    assert summary.tasks_not_run > 0 and summary.tasks_not_run + summary.tasks_cached + fake_openai.chat_calls \
        >= summary.tasks
    assert f"${spent:.4f} spent by the call log" in summary.stopped
    # ...and it stopped only when the next call's worst case no longer fit, not at the
    # first call that had to wait for the eight in flight
    worst = float(re.search(r"could cost up to \$([0-9.]+)", summary.stopped).group(1))
    assert spent + worst > cap
    assert "--max-cost 0.004 reached" in summary.stopped
    assert abs(summary.cost - spent) < 1e-9
    statuses = {r[0] for r in gws.db.execute("SELECT status FROM generation_tasks WHERE run_id = ?",
                                             [summary.run_id])}
    assert statuses <= {"ok", "not_run", "failed"} and "not_run" in statuses
    # the limit the reservation priced is the one each request carried
    assert all(isinstance(b.get("max_tokens"), int) and b["max_tokens"] >= 1024 for b in chat_bodies(fake_openai))


def test_no_key_and_no_base_url_stops_before_any_request(gws, run_cli, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("CURATOR_API_KEY", raising=False)
    monkeypatch.delenv("CURATOR_BASE_URL", raising=False)
    result = run_cli(["-w", str(gws.root), "generate", "-n", "5"])
    assert result.exit_code == EXIT_FAILED
    assert result.output.count("no API key and no server") == 1
    assert "OPENAI_API_KEY is not set" in result.output and "--base-url" in result.output
    assert "Traceback" not in result.output
    assert gws.db.execute("SELECT COUNT(*) FROM model_calls").fetchone()[0] == 0
    # a dry run needs neither
    assert run_cli(["-w", str(gws.root), "generate", "-n", "5", "--dry-run"]).exit_code == 0


def test_a_local_server_needs_no_key(gws, fake_openai, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    summary = generate(gws, base_url=fake_openai.url, passages=2, timeout=5)
    assert summary.complete and fake_openai.chat_calls == summary.tasks


def test_temperature_is_sent_only_when_set(gws, fake_openai):
    ws = configure(gws, "[model]\nname = \"gpt-4o-mini\"\n")  # no temperature
    generate(ws, base_url=fake_openai.url, passages=2, timeout=5)
    assert all("temperature" not in b for b in chat_bodies(fake_openai))
    fake_openai.requests.clear()
    generate(ws, base_url=fake_openai.url, passages=2, temperature=0.7, timeout=5)
    assert {b.get("temperature") for b in chat_bodies(fake_openai)} == {0.7}  # new cache keys: sent again
    ws.close()


@pytest.mark.parametrize("model", ["o3-mini", "gpt-5", "o1", "openai/o4-mini"])
def test_reasoning_models_get_max_completion_tokens_and_no_temperature(gws, fake_openai, model):
    ws = configure(gws, f'[model]\nname = "{model}"\nmax_tokens = 3000\n')
    summary = generate(ws, base_url=fake_openai.url, passages=2, timeout=5)
    assert summary.complete and summary.tasks_failed == 0  # the server refuses max_tokens/temperature
    for body in chat_bodies(fake_openai):
        assert body["max_completion_tokens"] == 3000
        assert "max_tokens" not in body and "temperature" not in body
    ws.close()


def test_a_temperature_set_for_a_reasoning_model_is_refused_before_sending(gws, fake_openai, run_cli):
    configure(gws, '[model]\nname = "o3-mini"\ntemperature = 0.2\n').close()
    result = run_cli(["-w", str(gws.root), "generate", "-n", "2", "--base-url", fake_openai.url])
    assert result.exit_code == EXIT_FAILED and "reasoning model" in result.output
    assert "Remove `temperature`" in result.output and fake_openai.chat_calls == 0


def test_the_family_rule():
    assert [m for m in ("o1", "o1-mini", "o3", "o4-mini-2025-04-16", "gpt-5", "gpt-5-mini", "gpt-5.1",
                        "azure/o3-mini") if not is_reasoning_model(m)] == []
    assert [m for m in ("gpt-4o", "gpt-4o-mini", "gpt-4.1", "llama3.1:8b", "qwen2.5-7b", "ollama",
                        "gpt-50", "olmo-2") if is_reasoning_model(m)] == []


def test_extra_body_and_extra_headers_from_model_are_passed_through(gws, fake_openai, monkeypatch):
    monkeypatch.setenv("PROXY_TOKEN", "tok-from-env-1234")
    ws = configure(gws, "[model]\ntemperature = 0.2\n"
                        "extra_body = { options = { num_ctx = 8192 }, guided_decoding_backend = \"outlines\" }\n"
                        "extra_headers = { \"X-Team\" = \"search\", \"X-Proxy-Token\" = \"$PROXY_TOKEN\" }\n")
    summary = generate(ws, base_url=fake_openai.url, passages=2, timeout=5)
    assert summary.complete
    chats = [r for r in fake_openai.requests if r["path"].endswith("/chat/completions")]
    assert chats and all(r["body"]["options"] == {"num_ctx": 8192} for r in chats)
    assert all(r["body"]["guided_decoding_backend"] == "outlines" and r["body"]["temperature"] == 0.2
               for r in chats)
    assert all(r["headers"]["x-team"] == "search" and r["headers"]["x-proxy-token"] == "tok-from-env-1234"
               for r in chats)
    params = [json.loads(p) for (p,) in ws.db.execute("SELECT params FROM model_calls")]
    assert params and all(p["extra_headers"] == ["X-Proxy-Token", "X-Team"] for p in params)
    ws.db.execute("PRAGMA wal_checkpoint(FULL)")
    assert b"tok-from-env-1234" not in (ws.state_dir / "workspace.db").read_bytes()
    ws.close()


def test_an_echoed_key_in_altered_forms_is_never_stored(gws, fake_openai, run_cli):
    fake_openai.fail("echo_key", times=None)  # every answer's rationale carries the key, altered
    summary = generate(gws, base_url=fake_openai.url, passages=4, timeout=5)
    assert summary.candidates_added > 0
    rationales = [c.rationale for c in gws.candidates(source_kind="generated")]
    assert rationales and all("[redacted]" in r for r in rationales)
    fake_openai.faults.clear()
    fake_openai.fail("auth_echo", times=None)  # a 401 echoing it upper-cased, split and masked
    result = run_cli(["-w", str(gws.root), "generate", "-n", "8", "--seed", "3", "--base-url", fake_openai.url])
    assert result.exit_code == EXIT_FAILED
    errors = [e for (e,) in gws.db.execute("SELECT error FROM model_calls WHERE error IS NOT NULL")]
    assert errors and all(e.count("[redacted]") >= 3 for e in errors)
    gws.db.execute("PRAGMA wal_checkpoint(FULL)")
    stored = b"".join(p.read_bytes() for p in gws.state_dir.rglob("*") if p.is_file()).lower()
    for piece in (KEY, KEY[:9], KEY[9:], KEY[:20], KEY[20:]):
        assert piece.lower().encode() not in stored, piece
    for piece in (KEY.upper(), KEY[:20], KEY[20:], KEY[-8:]):
        assert piece not in result.output


def test_redactor_forms():
    from pydantic import SecretStr

    redact = Redactor(SecretStr(KEY))
    assert redact(f"key {KEY.upper()} here") == "key [redacted] here"
    assert KEY[:12] not in redact(f"{KEY[:12]} {KEY[12:]}") and KEY[12:] not in redact(f"{KEY[:12]} {KEY[12:]}")
    assert redact(f"provided: {KEY[:5]}{'*' * 20}{KEY[-4:]}.") == "provided: [redacted]."
    assert redact("Wire7 was tested; mixed case tail") == "Wire7 was tested; mixed case tail"  # short words stay
    assert redact("ordinary text with no key in it") == "ordinary text with no key in it"
    # a placeholder key of a local server is matched exactly, never inside ordinary words
    placeholder = Redactor(SecretStr("EMPTY"))
    assert placeholder("why is the queue empty? key=EMPTY") == "why is the queue empty? key=[redacted]"

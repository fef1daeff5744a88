"""A real HTTP server on 127.0.0.1 that speaks the parts of the OpenAI API curator uses:
chat completions (with and without `response_format` json_schema), files and batches.

Answers are canned but valid against the requested schema, built from the prompt (the
passage ids and identifiers curator puts in it). Faults are injected on demand:

    server.fail("429", times=2, retry_after="0")   # rate limited, with Retry-After
    server.fail("500")                               # server error
    server.fail("slow", seconds=2)                   # slower than the client's timeout
    server.fail("malformed") / ("truncated") / ("invalid") / ("refusal") / ("auth")
    server.fail("not_json") / ("html")               # HTTP 200, but a cut-off body / a proxy's HTML page
    server.fail("malformed", times=None, match="faq.md#")  # always, for matching prompts
    server.json_schema = False                       # reject response_format json_schema
    server.full_limit = True                         # bill every completion at its token limit
    server.fail("echo_key", times=None)              # answers carry the key, upper-cased and split
    server.fail("auth_echo")                         # a 401 echoing the key altered three ways

Used by tests (fixture `fake_openai`) and by bench/generate.py (with `latency`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

import pytest

_WORDS = """zeppelin marzipan quokka bassoon origami lantern tundra harpsichord nebula walrus
gondola saffron mosaic canyon pelican juniper trombone glacier kimono lagoon meadow obelisk
papyrus quartz raven sundial tapestry umbrella velvet windmill yodel zither acorn bramble
cobalt dandelion ember fjord gazebo hazel igloo jasmine kelp lilac mango nutmeg opal
pumpkin quiver rhubarb sequoia thistle ukulele vanilla wombat yarrow almond beacon
cactus dormouse eclipse falcon gecko hammock iris jackal kestrel lemur mistral narwhal
orchid puffin quince reindeer sparrow toucan urchin vulture wren yak alpaca badger
coyote dingo egret ferret gopher heron ibis jaguar koala lynx marmot newt ocelot"""
WORDS = _WORDS.split()


@dataclass
class RawBody:
    """A reply body that is not the JSON a chat completion is (a proxy's page, a cut-off body)."""

    data: bytes
    content_type: str


@dataclass
class Fault:
    kind: str
    times: int | None = 1  # None: every matching request
    match: str | None = None  # only requests whose text contains this
    retry_after: str | None = "0"
    seconds: float = 5.0


class FakeOpenAI:
    def __init__(self) -> None:
        self.faults: list[Fault] = []
        self.requests: list[dict[str, Any]] = []
        self.latency = 0.0
        self.json_schema = True
        self.full_limit = False  # completion_tokens = the request's limit (a reasoning model's worst case)
        self.batch_polls = 1  # GETs of a batch before it completes
        self.responder: Callable[[dict[str, Any]], dict[str, Any]] = canned_answer
        self.files: dict[str, tuple[str, bytes]] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._ids = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @property
    def root(self) -> str:
        """The server's root URL: an Azure endpoint (the client adds /openai/...)."""
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def chat_calls(self) -> int:
        return sum(1 for r in self.requests if r["path"].endswith("/chat/completions"))

    def fail(self, kind: str, times: int | None = 1, match: str | None = None, **kw: Any) -> None:
        with self._lock:
            self.faults.append(Fault(kind, times, match, **kw))

    def start(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def next_id(self, prefix: str) -> str:
        with self._lock:
            self._ids += 1
            return f"{prefix}-{self._ids}"

    def take_fault(self, text: str) -> Fault | None:
        if not self.faults:
            return None
        with self._lock:
            for fault in self.faults:
                if fault.match is not None and fault.match not in text:
                    continue
                if fault.times is not None:
                    fault.times -= 1
                    if fault.times <= 0:
                        self.faults.remove(fault)
                return fault
        return None

    # ---- chat completions --------------------------------------------------------------

    def chat(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any] | RawBody, dict[str, str]]:
        """(status, JSON body, extra headers) for one chat completion request."""
        if self.latency:
            time.sleep(self.latency)
        messages = body.get("messages", [])
        text = "\n".join(str(m.get("content") or "") for m in messages)
        fmt = (body.get("response_format") or {}).get("type")
        if fmt == "json_schema" and not self.json_schema:
            return 400, _error("response_format of type json_schema is not supported by this model"), {}
        refused = _reasoning_refusal(body)
        if refused:
            return 400, _error(refused, "unsupported_parameter"), {}
        fault = self.take_fault(text)
        kind = fault.kind if fault else None
        if kind == "429":
            extra = {"retry-after": fault.retry_after} if fault.retry_after is not None else {}
            return 429, _error("Rate limit reached for requests", "rate_limit_exceeded"), extra
        if kind == "500":
            return 500, _error("The server had an error while processing your request."), {}
        if kind == "auth":
            key = headers.get("api-key") or headers.get("authorization", "").removeprefix("Bearer ")
            # Real servers echo (part of) the key: curator must not let it through.
            return 401, _error(f"Incorrect API key provided: {key}.", "invalid_api_key"), {}
        key = headers.get("api-key") or headers.get("authorization", "").removeprefix("Bearer ")
        if kind == "auth_echo":  # a 401 showing the key three altered ways
            return 401, _error(f"Incorrect API key provided: {key.upper()} ({key[:9]} {key[9:]}; "
                               f"{key[:5]}{'*' * 20}{key[-4:]}).", "invalid_api_key"), {}
        if kind == "not_json":
            return 200, RawBody(b'{"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"ind', "application/json"), {}
        if kind == "html":
            return 200, RawBody(b"<html><body><h1>502 Bad Gateway</h1><p>nginx</p></body></html>", "text/html"), {}
        if kind == "slow":
            time.sleep(fault.seconds)
        answer = self.responder(body)
        if kind == "echo_key":
            half = len(key) // 2
            for entries in answer.values():
                for entry in entries:
                    entry["rationale"] = f"asked with {key.upper()}, i.e. {key[:half]} {key[half:]}"
        content: str | None = json.dumps(answer)
        finish = "stop"
        refusal = None
        if kind == "malformed":
            content = "Sure! Here are your questions: {questions: [oops"
        elif kind == "truncated":
            content, finish = content[: max(1, len(content) // 2)], "length"
        elif kind == "invalid":
            content = json.dumps({"questions": "none"})
        elif kind == "refusal":
            content, refusal = None, "I'm sorry, I can't help with that request."
        prompt_tokens = len(text) // 4
        completion_tokens = len(content or refusal or "") // 4
        if self.full_limit:
            completion_tokens = body.get("max_completion_tokens") or body.get("max_tokens") or 16384
        return 200, {
            "id": self.next_id("chatcmpl"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "finish_reason": finish,
                    "message": {"role": "assistant", "content": content, "refusal": refusal},
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }, {}

    # ---- files and batches -------------------------------------------------------------

    def upload(self, filename: str, data: bytes, purpose: str) -> dict[str, Any]:
        file_id = self.next_id("file")
        self.files[file_id] = (filename, data)
        return _file_object(file_id, filename, data, purpose)

    def create_batch(self, body: dict[str, Any]) -> dict[str, Any]:
        batch_id = self.next_id("batch")
        batch = {
            "id": batch_id,
            "object": "batch",
            "endpoint": body["endpoint"],
            "input_file_id": body["input_file_id"],
            "completion_window": body.get("completion_window", "24h"),
            "status": "validating",
            "output_file_id": None,
            "error_file_id": None,
            "created_at": int(time.time()),
            "request_counts": {"total": 0, "completed": 0, "failed": 0},
            "_polls": 0,
        }
        self.batches[batch_id] = batch
        return _public(batch)

    def poll_batch(self, batch_id: str) -> dict[str, Any] | None:
        batch = self.batches.get(batch_id)
        if batch is None:
            return None
        batch["_polls"] += 1
        if batch["status"] in ("validating", "in_progress") and batch["_polls"] >= self.batch_polls:
            self._run_batch(batch)
        elif batch["status"] == "validating":
            batch["status"] = "in_progress"
        return _public(batch)

    def _run_batch(self, batch: dict[str, Any]) -> None:
        _name, data = self.files[batch["input_file_id"]]
        out, errors = [], []
        for line in data.decode().splitlines():
            if not line.strip():
                continue
            request = json.loads(line)
            status, body, _ = self.chat(request["body"], {})
            record = {"id": self.next_id("req"), "custom_id": request["custom_id"]}
            if status == 200:
                out.append({**record, "response": {"status_code": 200, "body": body}, "error": None})
            else:
                errors.append({**record, "response": {"status_code": status, "body": body},
                               "error": {"code": str(status), "message": body["error"]["message"]}})
        batch["request_counts"] = {"total": len(out) + len(errors), "completed": len(out),
                                   "failed": len(errors)}
        batch["output_file_id"] = self.upload("output.jsonl", _jsonl(out), "batch_output")["id"]
        if errors:
            batch["error_file_id"] = self.upload("errors.jsonl", _jsonl(errors), "batch_output")["id"]
        batch["status"] = "completed"


def _reasoning_refusal(body: dict[str, Any]) -> str | None:
    """What OpenAI answers a reasoning model's request that carries chat-model parameters."""
    if not re.match(r"^(o\d|gpt-5)", str(body.get("model", ""))):
        return None
    if "max_tokens" in body:
        return ("Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead.")
    if "temperature" in body and body["temperature"] != 1:
        return "Unsupported value: 'temperature' does not support 0.2 with this model."
    return None


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _public(batch: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in batch.items() if not k.startswith("_")}


def _file_object(file_id: str, filename: str, data: bytes, purpose: str) -> dict[str, Any]:
    return {"id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time()),
            "filename": filename, "purpose": purpose, "status": "processed"}


def _error(message: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}}


# ---- canned answers ----------------------------------------------------------------------

_PASSAGE = re.compile(r'<passage id="([^"]+)"')
_TASK = re.compile(r"## Task `([a-z_]+)`\n(.*?)(?=\n## Task `|\Z)", re.S)


def _words(seed: str, n: int) -> list[str]:
    digest = hashlib.sha256(seed.encode()).digest()
    return [WORDS[digest[i] % len(WORDS)] for i in range(n)]


def canned_answer(body: dict[str, Any]) -> dict[str, Any]:
    """A schema-valid answer to one of curator's prompts: one question per task, built so
    that curator's slice checks pass (identifier quoted, paraphrase and negative worded
    away from the corpus, freshness answers that differ, multi-hop using every passage)."""
    messages = body.get("messages", [])
    user = next((m["content"] for m in messages if m["role"] == "user"), "")
    ids = _PASSAGE.findall(user)
    first = ids[0] if ids else "none"
    answer: dict[str, Any] = {}
    for slice_name, task in _TASK.findall(user):
        w = _words(slice_name + first, 6)
        if slice_name == "exact_identifier":
            quoted = re.findall(r"`([^`]+)`", task)
            ident = quoted[0] if quoted else first
            answer[slice_name] = [{"question": f"What does {ident} mean and how do I handle it?",
                                   "identifier": ident, "rationale": "Quotes the identifier."}]
        elif slice_name == "freshness":
            answer[slice_name] = [{"question": f"What is the current {w[0]} setting for {first}?",
                                   "old_answer": f"{w[1]} 10", "new_answer": f"{w[2]} 20",
                                   "rationale": "The value changed."}]
        elif slice_name == "multi_hop":
            answer[slice_name] = [{"question": f"how do the {w[0]} {w[1]} and {w[2]} {w[3]} steps combine",
                                   "passages_used": ids, "rationale": "Needs every passage."}]
        elif slice_name == "negative":
            answer[slice_name] = [{"question": f"is there a {w[0]} {w[1]} policy for {w[2]} {w[3]}",
                                   "rationale": "Not covered by the docs."}]
        else:
            answer[slice_name] = [{"question": f"how would a {w[0]} {w[1]} {w[2]} {w[3]} {w[4]}",
                                   "rationale": "Different words, same need."}]
    return answer


# ---- HTTP plumbing -----------------------------------------------------------------------


def _handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # Keep-alive and TCP_NODELAY, as real API servers do. Without NODELAY the
        # headers and the body go out as two small writes and the second waits for the
        # client's delayed ACK: ~40 ms added to every call, which no real server does.
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _send(self, status: int, body: Any, headers: dict[str, str] | None = None,
                  raw: bytes | None = None, content_type: str | None = None) -> None:
            data = raw if raw is not None else json.dumps(body).encode()
            try:
                self.send_response(status)
                self.send_header("content-type", content_type or (
                    "application/json" if raw is None else "application/octet-stream"))
                self.send_header("content-length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout test)

        def _body(self) -> bytes:
            length = int(self.headers.get("content-length") or 0)
            return self.rfile.read(length) if length else b""

        def _record(self, body: Any) -> tuple[str, dict[str, str]]:
            """Log the request (path, query, credentials as sent); (path, headers)."""
            headers = {k.lower(): v for k, v in self.headers.items()}
            path, _, query = self.path.partition("?")
            fake.requests.append({"path": path, "query": parse_qs(query), "body": body,
                                  "auth": headers.get("authorization"),
                                  "api_key": headers.get("api-key"), "headers": headers})
            return path, headers

        def do_POST(self) -> None:
            raw = self._body()
            content_type = self.headers.get("content-type", "")
            if self.path.split("?")[0].endswith("/files"):
                fields = _multipart(raw, content_type)
                path, headers = self._record({"purpose": fields.get("purpose")})
                filename, data = fields.get("file", ("upload.jsonl", b""))
                purpose = fields.get("purpose", (None, b"batch"))[1].decode()
                self._send(200, fake.upload(filename, data, purpose))
                return
            body = json.loads(raw or b"{}")
            path, headers = self._record(body)
            if path.endswith("/chat/completions"):
                status, payload, extra = fake.chat(body, headers)
                if isinstance(payload, RawBody):
                    self._send(status, None, extra, raw=payload.data, content_type=payload.content_type)
                else:
                    self._send(status, payload, extra)
            elif path.endswith("/batches"):
                self._send(200, fake.create_batch(body))
            else:
                self._send(404, _error(f"no route {path}"))

        def do_GET(self) -> None:
            path, _ = self._record(None)
            if m := re.search(r"/files/([^/]+)/content$", path):
                entry = fake.files.get(m.group(1))
                if entry is None:
                    self._send(404, _error("no such file"))
                else:
                    self._send(200, None, raw=entry[1])
            elif path.endswith("/stats"):
                self._send(200, {"chat_calls": fake.chat_calls})
            elif m := re.search(r"/batches/([^/]+)$", path):
                batch = fake.poll_batch(m.group(1))
                self._send(200 if batch else 404, batch or _error("no such batch"))
            else:
                self._send(404, _error(f"no route {path}"))

    return Handler


def _multipart(raw: bytes, content_type: str) -> dict[str, tuple[str | None, bytes]]:
    match = re.search(r'boundary="?([^";]+)"?', content_type)
    if not match:
        return {}
    boundary = b"--" + match.group(1).encode()
    fields: dict[str, tuple[str | None, bytes]] = {}
    for part in raw.split(boundary):
        if b"\r\n\r\n" not in part:
            continue
        head, _, data = part.partition(b"\r\n\r\n")
        name = re.search(rb'name="([^"]+)"', head)
        filename = re.search(rb'filename="([^"]*)"', head)
        if name:
            fields[name.group(1).decode()] = (
                filename.group(1).decode() if filename else None,
                data[:-2] if data.endswith(b"\r\n") else data,
            )
    return fields


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A started FakeOpenAI; stopped after the test."""
    server = FakeOpenAI().start()
    yield server
    server.stop()


def main() -> None:
    """`python -m tests.fake_openai --latency 0.2`: serve until killed (for benchmarks);
    prints the base URL on its first line, and `GET /stats` reports the call count."""
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.0)
    args = parser.parse_args()
    server = FakeOpenAI()
    server.latency = args.latency
    print(server.url, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.server.serve_forever(poll_interval=0.05)


if __name__ == "__main__":
    main()

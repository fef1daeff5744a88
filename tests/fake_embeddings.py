"""A real HTTP server on 127.0.0.1 speaking OpenAI's `POST /v1/embeddings`, with
deterministic vectors: each word (lower-cased, split on non-letters) adds 1 to the
dimension its CRC32 picks, so texts sharing words are near each other."""

from __future__ import annotations

import json
import re
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

DIM = 64


def vector(text: str) -> list[float]:
    vec = [0.0] * DIM
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        vec[zlib.crc32(word.encode()) % DIM] += 1.0
    return vec


class FakeEmbeddings:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail_next = 0  # answer this many requests with HTTP 500
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                fake.requests.append({"path": self.path, "body": body, "auth": self.headers.get("authorization")})
                if fake.fail_next:
                    fake.fail_next -= 1
                    status, reply = 500, {"error": {"message": "down", "type": "server_error"}}
                elif not self.path.endswith("/embeddings"):
                    status, reply = 404, {"error": {"message": "no route"}}
                else:
                    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    status, reply = 200, {"object": "list", "model": body["model"],
                                          "data": [{"object": "embedding", "index": i, "embedding": vector(t)}
                                                   for i, t in enumerate(texts)],
                                          "usage": {"prompt_tokens": 1, "total_tokens": 1}}
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def texts_sent(self) -> list[str]:
        return [t for r in self.requests for t in r["body"].get("input", [])]


@pytest.fixture
def fake_embeddings() -> Iterator[FakeEmbeddings]:
    server = FakeEmbeddings()
    server.thread.start()
    yield server
    server.server.shutdown()
    server.server.server_close()

"""A small retriever for the harness tests: HTTP on 127.0.0.1, a Python callable, a command."""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

SEEN: list[str] = []


def answer_for(query: str) -> list[str]:
    """The ids a query gets: a stable function of its words, so tests know what to expect."""
    return [f"doc-{len(query.split())}", "doc-x"]


def python_retriever(query: str, k: int) -> list[tuple[str, float, str]]:
    if "boom" in query:
        raise RuntimeError("retriever exploded")
    return [(doc, 1.0 / (i + 1), "rev1") for i, doc in enumerate(answer_for(query))][:k]


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # quiet
        return None

    def _reply(self, code: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _serve(self, query: str, k: int) -> None:
        SEEN.append(query)
        if self.path.startswith("http://"):  # asked as a forward proxy: the absolute URL
            self.server.proxied.append(self.path)  # type: ignore[attr-defined]
        self.server.headers_seen.append(dict(self.headers))  # type: ignore[attr-defined]
        if "fail500" in query:
            return self._reply(500, {"error": "boom"})
        if "echo401" in query:  # an error page that echoes the credentials it was sent
            return self._reply(401, {"error": f"bad credentials {self.headers.get('authorization')}"})
        if "slow" in query:
            time.sleep(0.6)
        time.sleep(getattr(self.server, "delay", 0.0))
        ids = answer_for(query)[:k]
        if urlsplit(self.path).path.endswith("/select"):  # Solr
            return self._reply(200, {"response": {"numFound": len(ids), "docs": [
                {"id": d, "score": 2.0 - i} for i, d in enumerate(ids)]}})
        return self._reply(200, {"hits": {"hits": [
            {"_id": d, "_score": 2.0 - i, "_source": {"revision": "r1"}} for i, d in enumerate(ids)]}})

    def do_GET(self) -> None:  # noqa: N802
        params = parse_qs(urlsplit(self.path).query)
        if urlsplit(self.path).path == "/search/":  # Vespa: ?yql=...&query=...&hits=k
            query, k = params["query"][0], int(params["hits"][0])
            SEEN.append(query)
            ids = answer_for(query)[:k]
            return self._reply(200, {"root": {"fields": {"totalCount": len(ids)}, "children": [
                {"id": f"index:docs/0/{d}", "relevance": 2.0 - i, "fields": {"id": d, "revision": "r1"}}
                for i, d in enumerate(ids)]}})
        self._serve(params["q"][0], int(params.get("rows", ["10"])[0]))

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if "q" in body:  # a plain JSON API: {"q", "k"} -> {"results": [{"id", "score"}]}
            SEEN.append(body["q"])
            return self._reply(200, {"results": [{"id": d, "score": 2.0 - i}
                                                 for i, d in enumerate(answer_for(body["q"])[: body["k"]])]})
        self._serve(body["query"]["match"]["text"], int(body["size"]))


def start_server() -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.headers_seen = []  # type: ignore[attr-defined]
    server.proxied = []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


if __name__ == "__main__":  # the command retriever: JSONL in, JSONL out
    # --echo-id: answers carry the request's id; a query with "slow" takes 1 s; each start
    # is logged to the file named by --starts; --slow-start takes 1 s before reading
    echo = "--echo-id" in sys.argv
    if "--slow-start" in sys.argv:  # start-up (imports, an index) before the first answer
        time.sleep(1.0)
    if "--starts" in sys.argv:
        with open(sys.argv[sys.argv.index("--starts") + 1], "a") as log:
            log.write("started\n")
    for line in sys.stdin:
        request = json.loads(line)
        if "slow" in request["query"]:
            time.sleep(1.0)
        if "boom" in request["query"]:
            print(json.dumps({"error": "cannot"}), flush=True)
            continue
        hits = [{"id": d, "score": 1.0} for d in answer_for(request["query"])[: request["k"]]]
        answer = {"results": hits, "id": request["id"]} if echo else {"results": hits}
        print(json.dumps(answer), flush=True)

"""Retriever adapters: each turns (query, k) into ranked hits `[(id, score, revision)]`.

`{query}` is JSON-escaped inside a body template and URL-encoded inside a URL template;
`{k}` is the integer k. Header values may name environment variables (`$NAME` or
`${NAME}`): they are read at run time and never stored or printed.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import importlib
import json
import os
import re
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from json.encoder import encode_basestring
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit, urlunsplit

from curator.errors import CuratorError

if TYPE_CHECKING:
    from curator.workspace import Workspace

Hit = tuple[str, float | None, str | None]
KINDS = ("http", "python", "command", "baseline")
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


class RequestFailed(Exception):
    """One request failed (HTTP status, timeout, bad response): recorded, not fatal."""


@dataclass
class RetrieverSpec:
    """What `[retrievers.NAME]` in curator.toml (or the command line) says."""

    name: str
    kind: str = "http"
    url: str | None = None
    method: str = "POST"
    body: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    hits: str = ""
    id: str = "id"
    score: str | None = "score"
    revision: str | None = None
    function: str | None = None
    command: str | None = None
    proxy: str | None = None  # http: else HTTP(S)_PROXY / NO_PROXY from the environment
    timeout: float = 10.0
    retries: int = 1

    @classmethod
    def from_dict(cls, name: str, data: dict[str, Any]) -> RetrieverSpec:
        known = set(cls.__dataclass_fields__) - {"name"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise CuratorError(f"[retrievers.{name}]: unknown key(s) {', '.join(unknown)}",
                               f"Known keys: {', '.join(sorted(known))} (docs/harness.md).")
        spec = cls(name=name, **data)
        if spec.kind not in KINDS:
            raise CuratorError(f"[retrievers.{name}] kind {spec.kind!r}: expected one of {', '.join(KINDS)}")
        if spec.kind == "http" and not spec.url:
            raise CuratorError(f"[retrievers.{name}]: an http retriever needs url")
        if spec.kind == "python" and not spec.function:
            raise CuratorError(f"[retrievers.{name}]: a python retriever needs function = \"pkg.module:func\"")
        if spec.kind == "command" and not spec.command:
            raise CuratorError(f"[retrievers.{name}]: a command retriever needs command")
        return spec

    def settings(self) -> dict[str, Any]:
        """For the artefact's `retriever` block: no secrets (no header values, no URL
        credentials or query string values)."""
        block: dict[str, Any] = {"name": self.name, "adapter": self.kind}
        if self.kind == "http":
            block.update(url=redact_url(self.url or ""), method=self.method.upper(),
                         template_sha256=hashlib.sha256(f"{self.url}\n{self.body or ''}".encode()).hexdigest()[:16],
                         headers=sorted(self.headers), hits=self.hits, id=self.id, score=self.score,
                         revision=self.revision)
            if self.proxy:
                block["proxy"] = redact_url(self.proxy)
        elif self.kind == "python":
            block["function"] = self.function
        elif self.kind == "command":
            block["command"] = shlex.split(self.command or "")[:1]
        block.update(timeout_s=self.timeout, retries=self.retries)
        return block


def redact_url(url: str) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def render(template: str, query: str, k: int, *, in_url: bool) -> str:
    """Fill `{query}` and `{k}` only (other braces, JSON's own, stay as they are)."""
    if "{" not in template:
        return template
    # encode_basestring is json.dumps(query, ensure_ascii=False) without building an encoder
    value = quote(query, safe="") if in_url else encode_basestring(query)[1:-1]
    return template.replace("{query}", value).replace("{k}", str(k))


def secret_values(headers: dict[str, str]) -> list[str]:
    """The environment values the header templates name: never written anywhere."""
    values = []
    for value in headers.values():
        for match in _ENV_REF.finditer(value):
            secret = os.environ.get(match.group(1) or match.group(2), "")
            if secret:
                values.append(secret)
    return values


def redact(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


def resolve_env(value: str, what: str) -> str:
    """`$VAR` / `${VAR}` in a header or proxy template, read from the environment."""
    def env(match: re.Match[str]) -> str:
        var = match.group(1) or match.group(2)
        if var not in os.environ:
            raise CuratorError(f"{what}: environment variable {var} is not set",
                               "Secrets come only from the environment, never curator.toml.")
        return os.environ[var]
    return _ENV_REF.sub(env, value)


def resolve_headers(headers: dict[str, str]) -> dict[str, str]:
    return {key: resolve_env(value, f"header {key}") for key, value in headers.items()}


@functools.cache
def _parts(path: str) -> tuple[str, ...]:
    cleaned = path.replace("[*]", "").replace("]", "").replace("[", ".")
    return tuple(part for part in cleaned.split(".") if part)


def dig(obj: Any, path: str | None) -> Any:
    """`a.b[0].c`, `hits.hits[*]` (the `[*]` is a no-op: the list itself). None if absent."""
    if not path:
        return obj
    return _walk(obj, _parts(path))


def _walk(obj: Any, parts: tuple[str, ...]) -> Any:
    """`dig` with the path already split (parse_hits walks every hit's few fields)."""
    for part in parts:
        if isinstance(obj, dict):
            obj = obj.get(part)
        elif isinstance(obj, list) and part.lstrip("-").isdigit():
            index = int(part)
            obj = obj[index] if -len(obj) <= index < len(obj) else None
        else:
            return None
        if obj is None:
            return None
    return obj


def parse_hits(data: Any, spec: RetrieverSpec) -> list[Hit]:
    items = dig(data, spec.hits)
    if not isinstance(items, list):
        raise RequestFailed(f"no list at {spec.hits or 'the top level'!r} in the response")
    get_id, get_score, get_revision = _getter(spec.id), _getter(spec.score), _getter(spec.revision)
    hits: list[Hit] = []
    for pos, item in enumerate(items, 1):
        if isinstance(item, str):
            hits.append((item, None, None))
            continue
        ident = get_id(item)
        if ident is None or ident == "":
            raise RequestFailed(f"hit {pos} has no id at {spec.id!r}")
        score = get_score(item)
        revision = get_revision(item)
        number = float(score) if type(score) is float or type(score) is int else None  # not bool
        hits.append((ident if type(ident) is str else str(ident), number,
                     None if revision is None else str(revision)))
    return hits


@functools.cache
def _getter(path: str | None) -> Callable[[Any], Any]:
    """A function reading `path` from a hit; a one-key path (the usual case) is a dict get."""
    if not path:
        return lambda _item: None
    parts = _parts(path)
    if len(parts) == 1 and not parts[0].lstrip("-").isdigit():
        key = parts[0]
        return lambda item: item.get(key) if type(item) is dict else None
    return lambda item: _walk(item, parts)


class Adapter:
    """`await search(query, k)` -> hits; `server_ms` is set where the retriever reports it."""

    async def start(self) -> None:
        return None

    async def ready(self, query: str, k: int) -> None:
        """Called untimed before each timed request (the command adapter warms a freshly
        started program here)."""
        return None

    async def search(self, query: str, k: int) -> list[Hit]:
        raise NotImplementedError

    async def close(self) -> None:
        return None


class HttpAdapter(Adapter):
    def __init__(self, spec: RetrieverSpec, concurrency: int):
        self.spec = spec
        self.concurrency = concurrency
        self.client: Any = None
        self.httpx: Any = None  # the httpx2 module, imported by start()
        self.headers: dict[str, str] = {}
        self.secrets: list[str] = []

    async def start(self) -> None:
        import httpx2

        self.httpx = httpx2
        self.headers = {"content-type": "application/json", **resolve_headers(self.spec.headers)}
        proxy = resolve_env(self.spec.proxy, "proxy") if self.spec.proxy else None
        self.secrets = secret_values({**self.spec.headers, "proxy": self.spec.proxy or ""})
        limits = httpx2.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
        # Loading the CA bundle costs 50-200 ms, several percent of a 1,000-query run; a
        # plain-http URL (redirects are not followed) never needs it. trust_env: proxies
        # from HTTP(S)_PROXY / NO_PROXY and SSL_CERT_FILE, as curl reads them.
        tls = (self.spec.url or "").lower().startswith("https:")
        self.client = httpx2.AsyncClient(timeout=self.spec.timeout, limits=limits, trust_env=True, verify=tls,
                                         proxy=proxy)

    async def search(self, query: str, k: int) -> list[Hit]:
        httpx2 = self.httpx
        spec = self.spec
        url = render(spec.url or "", query, k, in_url=True)
        body = render(spec.body, query, k, in_url=False).encode() if spec.body else None
        try:
            response = await self.client.request(spec.method.upper(), url, content=body, headers=self.headers)
        except httpx2.TimeoutException:
            raise RequestFailed(f"timeout after {spec.timeout:g} s") from None
        except httpx2.HTTPError as exc:
            raise RequestFailed(redact(f"{type(exc).__name__}: {exc}", self.secrets)) from None
        if response.status_code >= 400:
            # a server may echo the request's credentials in its error page
            raise RequestFailed(f"HTTP {response.status_code}: {redact(response.text, self.secrets)[:200]}")
        try:
            data = response.json()
        except ValueError:
            raise RequestFailed("the response is not JSON") from None
        return parse_hits(data, spec)

    async def close(self) -> None:
        if self.client is not None:
            await self.client.aclose()


class PythonAdapter(Adapter):
    """`function(query, k)` in process; returns ids, (id, score[, revision]) or dicts."""

    def __init__(self, spec: RetrieverSpec):
        module_name, _, attr = (spec.function or "").partition(":")
        try:
            module = importlib.import_module(module_name)
            self.function: Callable[..., Any] = getattr(module, attr)
        except (ImportError, AttributeError, ValueError) as exc:
            raise CuratorError(f"[retrievers.{spec.name}] function {spec.function!r}: cannot import ({exc})",
                               "Give it as package.module:function, importable from here.") from None

    async def search(self, query: str, k: int) -> list[Hit]:
        try:
            result = self.function(query, k)
            if asyncio.iscoroutine(result):
                result = await result
        except Exception as exc:  # the user's code: any failure is that query's failure
            raise RequestFailed(f"{type(exc).__name__}: {exc}") from None
        return [_coerce(item) for item in result]


def _coerce(item: Any) -> Hit:
    if isinstance(item, str):
        return (item, None, None)
    if isinstance(item, dict):
        return (str(item["id"]), item.get("score"), item.get("revision"))
    if isinstance(item, tuple | list) and item:
        score = item[1] if len(item) > 1 else None
        revision = item[2] if len(item) > 2 else None
        return (str(item[0]), None if score is None else float(score), None if revision is None else str(revision))
    raise RequestFailed(f"cannot read a hit from {item!r}")


class CommandAdapter(Adapter):
    """A program that reads one JSON request per line on stdin (`{"id", "query", "k"}`) and
    writes one JSON result per line (`{"results": [...]}`, optionally with the request's
    `id`), in the same order; requests are serial.

    A late answer must never be taken for the next query's: an answer carrying an `id`
    other than the current request's is discarded, and after a timeout a program that has
    not shown it echoes ids is restarted (its late answer dies with it).

    A program answers its first request only after its own start-up (imports, loading an
    index), so the first request to a (re)started program is sent once untimed first."""

    def __init__(self, spec: RetrieverSpec):
        self.spec = spec
        self.proc: asyncio.subprocess.Process | None = None
        self.lock = asyncio.Lock()
        self.seq = 0
        self.echoes_ids = False
        self.restarts = 0
        self.warm = False  # the running program has answered a request

    async def start(self) -> None:
        self.warm = False
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *shlex.split(self.spec.command or ""), stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, limit=1 << 24)
        except OSError as exc:
            raise CuratorError(f"[retrievers.{self.spec.name}] command: cannot start ({exc})") from None

    async def search(self, query: str, k: int) -> list[Hit]:
        async with self.lock:
            if self.proc is None or self.proc.returncode is not None:
                await self.start()  # restarted after a timeout, or after it ended
            self.seq += 1
            data = await self._ask(self.seq, query, k)
            self.warm = True
        results = data.get("results") if isinstance(data, dict) else data
        if isinstance(data, dict) and data.get("error"):
            raise RequestFailed(f"command: {data['error']}")
        if not isinstance(results, list):
            raise RequestFailed("command: expected {\"results\": [...]}")
        return [_coerce(item) for item in results]

    async def ready(self, query: str, k: int) -> None:
        async with self.lock:
            if self.warm and self.proc is not None and self.proc.returncode is None:
                return
            if self.proc is None or self.proc.returncode is not None:
                await self.start()
            self.seq += 1
            try:
                await self._ask(self.seq, query, k)
            except RequestFailed:
                return  # the timed request that follows says what is wrong
            self.warm = True

    async def _ask(self, seq: int, query: str, k: int) -> Any:
        proc = self.proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write((json.dumps({"id": seq, "query": query, "k": k}, ensure_ascii=False) + "\n").encode())
            await proc.stdin.drain()
            return await asyncio.wait_for(self._answer(proc.stdout, seq), self.spec.timeout)
        except TimeoutError:
            if not self.echoes_ids:
                await self._stop()
                self.restarts += 1
                raise RequestFailed(f"command: no answer within {self.spec.timeout:g} s (program restarted)") from None
            raise RequestFailed(f"command: no answer within {self.spec.timeout:g} s") from None
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise RequestFailed(f"command: {type(exc).__name__}") from None

    async def _answer(self, stdout: asyncio.StreamReader, seq: int) -> Any:
        """The next line that answers request `seq` (lines answering earlier ones are skipped)."""
        while True:
            line = await stdout.readline()
            if not line:
                raise RequestFailed("command: ended without an answer")
            try:
                data = json.loads(line)
            except ValueError:
                raise RequestFailed("command: the line it wrote is not JSON") from None
            if isinstance(data, dict) and "id" in data:
                if data["id"] != seq:
                    continue  # a late answer to an earlier request
                self.echoes_ids = True
            return data

    async def _stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.returncode is None:
            proc.kill()
            await proc.wait()

    async def close(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            try:
                await asyncio.wait_for(self.proc.wait(), 5)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()


class BaselineAdapter(Adapter):
    """curator's own BM25 over the workspace's corpus."""

    def __init__(self, ws: Workspace):
        self.ws = ws

    async def search(self, query: str, k: int) -> list[Hit]:
        return [(h.id, round(h.score, 4), h.revision) for h in self.ws.search(query, limit=k)]


def build_adapter(spec: RetrieverSpec, ws: Workspace, concurrency: int) -> Adapter:
    if spec.kind == "http":
        return HttpAdapter(spec, concurrency)
    if spec.kind == "python":
        return PythonAdapter(spec)
    if spec.kind == "command":
        return CommandAdapter(spec)
    return BaselineAdapter(ws)


def now_iso() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"

"""The model client: the official async `openai` client against any OpenAI-compatible
server, with structured output (JSON schema, falling back to JSON mode and one repair
attempt), retries with backoff, a per-run budget, and a log row for every HTTP attempt.

The API key is handed to the `openai` client and nowhere else: error texts pass through
`Redactor` before they are logged, stored or raised.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Mapping
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import openai
from openai.types.chat import ChatCompletion
from pydantic import BaseModel

from curator.errors import CuratorError
from curator.generate.keyguard import Redactor
from curator.generate.prompts import output_schema
from curator.generate.store import record_call
from curator.generate.wire import (
    ClientOptions,
    Prices,
    is_reasoning_model,
    log_params,
    parse_output,
    request_body,
    strict_schema,
    worst_case,
)
from curator.harness.adapters import resolve_headers
from curator.models import utcnow

__all__ = ["Budget", "CallLog", "CallResult", "ClientOptions", "ModelClient", "Prices", "Redactor",
           "is_reasoning_model", "log_params", "make_client", "parse_output", "request_body",
           "strict_schema"]

if TYPE_CHECKING:
    from curator.generate.tasks import Task
    from curator.workspace import Workspace

RESPONSE_FORMATS = ("json_schema", "json_object", "text")
_BACKOFF_BASE, _BACKOFF_MAX = 0.5, 30.0  # seconds


@dataclass
class Budget:
    """A run's limits. `max_calls` counts HTTP attempts (retries and repairs included);
    `max_cost` (USD) counts tokens at the price table's rates, reserving each call's worst
    case while it is in flight."""

    max_calls: int | None = None
    max_cost: float | None = None
    calls: int = 0
    cost: float = 0.0
    reserved: float = 0.0
    stopped: str | None = None  # why the run stopped early, if it did
    refused: float = 0.0  # the worst case of the call --max-cost refused

    def take(self, worst: float) -> bool | None:
        """Reserve one call whose cost is at most `worst` (its prompt and its completion
        token limit at the price table's rates). True: reserved; None: it fits once calls
        in flight settle (wait for one); False: a limit is reached. Reserving the worst
        case per in-flight call keeps `max_cost` a cap under concurrency."""
        if self.stopped:
            return False
        if self.max_calls is not None and self.calls >= self.max_calls:
            self.stopped = f"--max-calls {self.max_calls} reached"
            return False
        if self.max_cost is not None and self.cost + worst > self.max_cost:
            self.stopped = f"--max-cost {self.max_cost:g} reached"
            self.refused = worst
            return False
        if self.max_cost is not None and self.cost + self.reserved + worst > self.max_cost:
            return None  # what is in flight may cost less than reserved
        self.calls += 1
        self.reserved += worst
        return True

    def settle(self, worst: float, actual: float) -> None:
        self.reserved -= worst
        self.cost += actual


@dataclass
class CallResult:
    output: BaseModel | None = None  # set when the outcome is ok
    outcome: str = "ok"  # ok | refused | invalid | error | budget
    error: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    cost: float = 0.0


class CallLog:
    """Writes `model_calls` rows through the workspace's connection. With `executor` (a
    single worker), rows are written there, in order, so one thread owns the connection
    while requests are in flight."""

    def __init__(self, ws: Workspace, run_id: str, redact: Redactor, executor: Executor | None = None):
        self.ws = ws
        self.run_id = run_id
        self.redact = redact
        self.executor = executor

    def write(self, task: Task, params: dict[str, Any], **row: Any) -> None:
        record = {
            "run_id": self.run_id,
            "at": utcnow(),
            "model": params.get("model"),
            "prompt_hash": task.prompt_hash,
            "prompt_name": task.name,
            "prompt_version": task.version,
            "task_key": task.key,
            "passages": json.dumps(task.passage_ids),
            "params": json.dumps(params, sort_keys=True),
            **row,
        }
        if record.get("error"):
            record["error"] = self.redact(str(record["error"]))[:2000]
        if self.executor is not None:
            self.executor.submit(record_call, self.ws, record)
        else:
            record_call(self.ws, record)


def make_client(options: ClientOptions) -> openai.AsyncOpenAI:
    key = options.api_key.get_secret_value() if options.api_key else None
    if options.provider == "azure":
        return _azure_client(options, key)
    if not key:
        # Local servers (vLLM, Ollama, llama.cpp) accept any key; the client insists on one.
        key = "not-needed"
    return openai.AsyncOpenAI(
        api_key=key, base_url=options.base_url, timeout=options.timeout, max_retries=0,
        default_headers=resolve_headers(options.extra_headers) or None,
    )


def _azure_client(options: ClientOptions, key: str | None) -> openai.AsyncAzureOpenAI:
    """`AsyncAzureOpenAI`; what is not configured it reads itself from AZURE_OPENAI_ENDPOINT,
    OPENAI_API_VERSION and (without a key) AZURE_OPENAI_AD_TOKEN."""
    try:
        # The stubs want azure_endpoint or base_url as a str; the client takes None for
        # either and reads AZURE_OPENAI_ENDPOINT itself.
        return openai.AsyncAzureOpenAI(  # type: ignore[call-overload, misc]
            api_key=key,
            azure_endpoint=None if options.base_url else options.azure_endpoint,
            base_url=options.base_url,
            api_version=options.api_version,
            timeout=options.timeout,
            max_retries=0,
            default_headers=resolve_headers(options.extra_headers) or None,
        )
    except (openai.OpenAIError, ValueError) as exc:
        # The client's messages name arguments and variables, never a key.
        raise CuratorError(
            f"Azure OpenAI is not fully configured: {exc}",
            "Set [model] azure_endpoint and api_version in curator.toml (or AZURE_OPENAI_ENDPOINT "
            "and OPENAI_API_VERSION), and the key in AZURE_OPENAI_API_KEY (see docs/generate.md).",
        ) from None


class ModelClient:
    """Sends tasks with concurrency limits, retries, budget and logging."""

    def __init__(
        self,
        options: ClientOptions,
        *,
        log: CallLog,
        budget: Budget,
        prices: Prices,
        concurrency: int = 8,
    ):
        self.options = options
        self.log = log
        self.budget = budget
        self.prices = prices
        self.redact = log.redact
        self.client = make_client(options)
        self.semaphore = asyncio.Semaphore(concurrency)
        self.settled = asyncio.Condition()  # notified whenever a call's reservation settles
        self.mode = options.response_format if options.response_format != "auto" else "json_schema"
        self.auto = options.response_format == "auto"

    async def close(self) -> None:
        await self.client.close()

    async def run(self, task: Task, reply: str | None = None) -> CallResult:
        """Ask for `task`'s output; on invalid JSON make one repair attempt with the
        validation error; never raises for model or server trouble. `reply`: an answer
        received elsewhere (a Batch API result) that failed validation: only the repair
        is sent."""
        async with self.semaphore:
            messages = self._messages(task)
            result = CallResult()
            if reply is None:
                reply = await self._call(task, messages, result, kind="call")
                if reply is None:
                    return result
            output, problem = parse_output(reply, task.output)
            if output is None:
                messages = [
                    *messages,
                    {"role": "assistant", "content": reply},
                    {"role": "user", "content": "Your reply did not match the required JSON schema: "
                     f"{problem}\nReply again with only the corrected JSON object."},
                ]
                reply = await self._call(task, messages, result, kind="repair")
                if reply is None:
                    return result
                output, problem = parse_output(reply, task.output)
            result.output = output
            if output is None:
                result.outcome, result.error = "invalid", f"invalid JSON after one repair: {problem}"
            return result

    def _messages(self, task: Task) -> list[dict[str, str]]:
        system = task.system
        if self.mode != "json_schema":
            schema = json.dumps(output_schema(task.output), separators=(",", ":"))
            system += f"\n\nReply with one JSON object matching this JSON schema:\n{schema}"
        return [{"role": "system", "content": system}, {"role": "user", "content": task.user}]

    async def _call(
        self, task: Task, messages: list[dict[str, str]], result: CallResult, *, kind: str
    ) -> str | None:
        """One logical request, retried; returns the reply text or None (result says why)."""
        attempt = 0
        while True:
            estimate = worst_case(self.options, self.prices, task, messages)
            if not await self._reserve(estimate):
                result.outcome, result.error = "budget", self.budget.stopped or "budget reached"
                return None
            attempt += 1
            result.calls += 1
            sent_mode = self.mode
            params = log_params(self.options, sent_mode)
            kwargs = request_body(self.options, task, messages, sent_mode)
            start = time.perf_counter()
            row: dict[str, Any] = {"attempt": attempt, "kind": kind}
            try:
                # the body as built: `chat.completions.create` re-walks the schema per call
                response = await self.client.post("/chat/completions", body=kwargs, cast_to=ChatCompletion)
                if not isinstance(response, ChatCompletion):  # a body that is not JSON, e.g. a proxy's page
                    raise NotACompletion(str(response))
            except (openai.APIStatusError, openai.APIConnectionError, openai.APIResponseValidationError,
                    NotACompletion, ValueError) as exc:  # timeouts included; ValueError: a cut-off JSON body
                await self._settle(estimate, 0.0)
                row["latency_ms"] = (time.perf_counter() - start) * 1000
                headers, status, retryable = None, None, True
                if not isinstance(exc, (openai.APIStatusError, openai.APIConnectionError)):
                    row["status_code"] = 200
                    error = f"the server answered HTTP 200 with a body that is not a chat completion: {_excerpt(exc)}"
                elif isinstance(exc, openai.APIStatusError):
                    headers, status = exc.response.headers, exc.status_code
                    row["status_code"] = status
                    retryable = status in (408, 429) or status >= 500
                    error = self.redact(_error_text(exc))
                elif isinstance(exc, openai.APITimeoutError):
                    error = f"timed out after {self.options.timeout:g}s"
                else:
                    error = f"could not connect to {self.client.base_url}: {self.redact(str(exc))}"
                if status == 400 and self.auto and sent_mode != "text" and _format_rejected(error):
                    self.log.write(task, params, **row, outcome="unsupported", error=error)
                    # Step down once per refused format: under concurrency several calls
                    # sent in the same mode come back refused, and only the first steps.
                    if self.mode == sent_mode:
                        self.mode = RESPONSE_FORMATS[RESPONSE_FORMATS.index(sent_mode) + 1]
                    messages = self._messages(task) + messages[2:]
                    attempt -= 1
                    continue
                outcome = "retry" if retryable and attempt <= self.options.max_retries else "error"
                self.log.write(task, params, **row, outcome=outcome, error=error)
                if outcome == "retry":
                    await asyncio.sleep(self._delay(attempt, headers))
                    continue
                result.outcome, result.error = "error", f"HTTP {status}: {error}" if status else error
                if status in (401, 403):
                    raise CuratorError(
                        f"The model server refused the credentials (HTTP {status}).",
                        "Check the key in the environment variable named by [model] api_key_env "
                        "(default OPENAI_API_KEY, or AZURE_OPENAI_API_KEY for Azure).",
                    ) from None
                return None
            latency = (time.perf_counter() - start) * 1000
            usage = response.usage
            pt = usage.prompt_tokens if usage else 0
            ct = usage.completion_tokens if usage else 0
            cost = self.prices.cost(pt, ct)
            await self._settle(estimate, cost)
            result.prompt_tokens += pt
            result.completion_tokens += ct
            result.cost += cost
            choice = response.choices[0] if response.choices else None
            message = choice.message if choice else None
            refusal = getattr(message, "refusal", None) if message else None
            base = {**row, "status_code": 200, "prompt_tokens": pt, "completion_tokens": ct,
                    "cost": cost, "latency_ms": latency}
            if refusal:
                self.log.write(task, params, **base, outcome="refused", error=self.redact(refusal))
                result.outcome, result.error = "refused", f"the model refused: {self.redact(refusal)}"
                return None
            text = (message.content if message else None) or ""
            truncated = choice is not None and choice.finish_reason == "length"
            outcome = "ok" if parse_output(text, task.output)[0] is not None else "invalid"
            self.log.write(task, params, **base, outcome=outcome,
                           error="reply cut off at the token limit" if truncated else None)
            return text

    async def _reserve(self, worst: float) -> bool:
        """Take a call from the budget, waiting while only calls in flight stand between."""
        while True:
            verdict = self.budget.take(worst)
            if verdict is not None:
                return verdict
            async with self.settled:
                await self.settled.wait()

    async def _settle(self, worst: float, actual: float) -> None:
        self.budget.settle(worst, actual)
        async with self.settled:
            self.settled.notify_all()

    def _delay(self, attempt: int, headers: Mapping[str, str] | None) -> float:
        """Retry-After (seconds or ms) when the server sends it, else exponential backoff
        with full jitter."""
        if headers is not None:
            for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
                value = headers.get(name)
                if value:
                    try:
                        return min(float(value) * scale, _BACKOFF_MAX)
                    except ValueError:
                        pass  # an HTTP date: fall back to backoff
        cap = min(_BACKOFF_MAX, _BACKOFF_BASE * 2 ** (attempt - 1))
        return random.uniform(0, cap)


class NotACompletion(Exception):
    """The server answered 200 with something that is not a chat completion."""


def _excerpt(exc: Exception) -> str:
    """The start of what came back instead of a completion (an HTML title, a cut-off
    JSON body), on one line."""
    body = getattr(exc, "body", None) or getattr(exc, "doc", None) or str(exc)
    text = " ".join(str(body).split())
    return text[:120] + ("..." if len(text) > 120 else "")


def _error_text(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return str(exc.message)


def _format_rejected(message: str) -> bool:
    lowered = message.lower()
    return any(w in lowered for w in ("response_format", "json_schema", "json schema", "json_object"))

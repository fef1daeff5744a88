"""What goes on the wire: the client's options, the request body (temperature only when
set, the completion limit under the field the model family takes, `[model] extra_body`),
the parameters the call log records, each request's worst-case cost, and reading a reply.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, SecretStr, ValidationError

from curator.generate.prompts import output_schema
from curator.models import validation_problems

if TYPE_CHECKING:
    from curator.generate.tasks import Task


@dataclass
class ClientOptions:
    model: str
    base_url: str | None
    api_key: SecretStr | None
    provider: str = "openai"  # openai | azure
    azure_endpoint: str | None = None
    api_version: str | None = None
    deployment: str | None = None  # the name the server knows the model by (Azure)
    timeout: float = 60.0
    max_retries: int = 5
    temperature: float | None = None  # None: not sent (reasoning models refuse it)
    response_format: str = "auto"  # auto | json_schema | json_object | text
    max_tokens: int | None = None  # None: per task, see completion_limit()
    token_param: str = "auto"  # auto | max_tokens | max_completion_tokens
    extra_body: dict[str, Any] = field(default_factory=dict)
    extra_headers: dict[str, str] = field(default_factory=dict)

    @property
    def wire_model(self) -> str:
        """The request body's `model`: for Azure, the deployment (the client puts it in
        the URL, /openai/deployments/<deployment>/chat/completions)."""
        return self.deployment or self.model


@dataclass
class Prices:
    """USD per million tokens; `factor` multiplies both (the Batch API's half price)."""

    input: float | None = None
    output: float | None = None

    def cost(self, prompt_tokens: int, completion_tokens: int, factor: float = 1.0) -> float:
        if self.input is None or self.output is None:
            return 0.0
        return factor * (prompt_tokens * self.input + completion_tokens * self.output) / 1e6

    @property
    def known(self) -> bool:
        return self.input is not None and self.output is not None


# Model families that take `max_completion_tokens` (their limit covers reasoning tokens)
# and refuse `max_tokens` and a temperature other than the default: OpenAI's o-series
# (o1, o3-mini, o4-mini, ...) and gpt-5*, optionally behind a provider prefix (openai/o3).
_REASONING = re.compile(r"^(?:[\w.-]+/)?(?:o\d+|gpt-5)(?:$|[-.:_])", re.IGNORECASE)
_MIN_COMPLETION, _MIN_REASONING = 1024, 8192  # default completion limits per task (tokens)


def is_reasoning_model(name: str) -> bool:
    return bool(_REASONING.match(name))


def token_param(options: ClientOptions) -> str:
    """The request field holding the completion limit."""
    if options.token_param != "auto":
        return options.token_param
    return "max_completion_tokens" if is_reasoning_model(options.model) else "max_tokens"


def completion_limit(options: ClientOptions, task: Task) -> int:
    """`[model] max_tokens`, else four times the task's completion estimate, at least 1024
    tokens (8192 for a reasoning model, whose hidden reasoning counts against it)."""
    if options.max_tokens is not None:
        return options.max_tokens
    floor = _MIN_REASONING if is_reasoning_model(options.model) else _MIN_COMPLETION
    return max(floor, 4 * task.estimate_tokens[1])


def worst_case(options: ClientOptions, prices: Prices, task: Task, messages: list[dict[str, str]]) -> float:
    """The most one request can cost: its prompt (3 characters a token, more tokens than
    the usual 4 gives) and its full completion limit."""
    prompt = sum(len(m.get("content") or "") for m in messages) // 3 + 60
    return prices.cost(prompt, completion_limit(options, task))


def log_params(options: ClientOptions, mode: str) -> dict[str, Any]:
    """The parameters a `model_calls` row records for a request (header names, not values)."""
    params: dict[str, Any] = {"model": options.model}
    if options.temperature is not None:
        params["temperature"] = options.temperature
    if options.deployment:
        params["deployment"] = options.deployment
    if options.extra_body:
        params["extra_body"] = options.extra_body
    if options.extra_headers:
        params["extra_headers"] = sorted(options.extra_headers)
    return params | {"response_format": mode}


def request_body(options: ClientOptions, task: Task, messages: list[dict[str, str]],
                 mode: str = "json_schema") -> dict[str, Any]:
    """A chat-completions request body, as sent live or written into a batch file:
    temperature only when set, the completion limit under the field the model family
    takes, and `[model] extra_body` laid over it."""
    body: dict[str, Any] = {"model": options.wire_model, "messages": messages}
    if options.temperature is not None:
        body["temperature"] = options.temperature
    body[token_param(options)] = completion_limit(options, task)
    if mode == "json_schema":
        body["response_format"] = {"type": "json_schema", "json_schema": {
            "name": task.output.__name__[:64], "schema": strict_schema(task.output), "strict": True}}
    elif mode == "json_object":
        body["response_format"] = {"type": "json_object"}
    return body | options.extra_body


def parse_output(text: str, model: type[BaseModel]) -> tuple[BaseModel | None, str]:
    """(validated output, None) or (None, what was wrong) for a reply's text."""
    body = text.strip()
    if body.startswith("```"):  # some local models fence their JSON
        body = body.strip("`")
        body = body[body.find("{") :] if "{" in body else body
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON ({exc.msg} at character {exc.pos})"
    try:
        return model.model_validate(data), ""
    except ValidationError as exc:
        return None, validation_problems(exc, "reply", limit=5)



@functools.lru_cache(maxsize=64)
def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The pydantic JSON schema, with what OpenAI's strict mode needs (no titles)."""

    def clean(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: clean(v) for k, v in node.items() if not (k == "title" and isinstance(v, str))}
        if isinstance(node, list):
            return [clean(v) for v in node]
        return node

    return clean(output_schema(model))


"""Workspace configuration: `curator.toml`, overridden by environment variables.

Precedence, highest first: explicit arguments > `CURATOR_*` environment variables >
`curator.toml` > built-in defaults. The model key is never read from `curator.toml`
(it would end up in git): only from the environment variable named by
`model.api_key_env` (default `OPENAI_API_KEY`).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from curator.errors import ConfigError
from curator.models import validation_problems

CONFIG_FILE = "curator.toml"

DEFAULT_SLICES: dict[str, str] = {
    "exact_identifier": "Error codes, alert names, flags, config keys quoted verbatim.",
    "paraphrase": "The same need as a passage, in different words.",
    "multi_hop": "A procedure that needs several passages (all primaries required).",
    "negative": "The corpus does not answer it; nothing should come back.",
    "freshness": "The answer changed; only the current revision is right.",
}


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class SliceConfig(_Section):
    target: int = Field(10, ge=0)
    description: str = ""


class CorpusConfig(_Section):
    min_tokens: int = Field(200, ge=1)
    max_tokens: int = Field(900, ge=10)
    include: list[str] = Field(
        default_factory=lambda: ["*.md", "*.markdown", "*.mdx", "*.txt", "*.rst", "*.html", "*.htm"]
    )
    exclude: list[str] = Field(default_factory=lambda: [".git", "node_modules", ".curator"])


class ModelConfig(_Section):
    name: str = "gpt-4o-mini"
    provider: Literal["openai", "azure"] = "openai"
    base_url: str | None = None  # falls back to OPENAI_BASE_URL, then the client's default
    api_key_env: str | None = None  # None: OPENAI_API_KEY, or AZURE_OPENAI_API_KEY for azure
    # Azure OpenAI only; unset, the client reads AZURE_OPENAI_ENDPOINT / OPENAI_API_VERSION.
    azure_endpoint: str | None = None
    api_version: str | None = None
    deployment: str | None = None  # the deployment's name, when it is not the model's name
    concurrency: int = Field(8, ge=1, le=256)
    timeout: float = Field(60.0, gt=0)
    max_retries: int = Field(5, ge=0)
    temperature: float | None = Field(None, ge=0, le=2)  # unset: not sent (the server's default)
    max_tokens: int | None = Field(None, ge=1)  # completion limit per request; unset: per task
    token_param: Literal["auto", "max_tokens", "max_completion_tokens"] = "auto"
    extra_body: dict[str, Any] = Field(default_factory=dict)  # laid over every request body
    extra_headers: dict[str, str] = Field(default_factory=dict)  # $VAR reads the environment
    # USD per million tokens, {"model-name": {"input": 0.15, "output": 0.6}}
    prices: dict[str, dict[str, float]] = Field(
        default_factory=lambda: {
            "gpt-4o-mini": {"input": 0.15, "output": 0.60},
            "gpt-4o": {"input": 2.50, "output": 10.00},
            "gpt-4.1-mini": {"input": 0.40, "output": 1.60},
        }
    )


class LogsConfig(_Section):
    similarity: float = Field(88.0, ge=0, le=100)  # rapidfuzz score that joins a cluster
    min_count: int = Field(1, ge=1)
    min_length: int = Field(3, ge=1)
    max_length: int = Field(300, ge=1)
    redact_patterns: dict[str, str] = Field(default_factory=dict)  # KIND -> regex
    redact_names: str | None = None  # file of names (one per line) to redact as <NAME>
    noise_patterns: list[str] = Field(default_factory=list)  # regexes of queries to drop
    # The defaults of `curator import-logs`; its flags override them. A field left unset
    # is guessed from the first records; "" means the log has none (--time-field "").
    sample: Literal["top", "random", "pps"] = "top"
    limit: int = Field(500, ge=0)  # 0: no limit
    engine: Literal["auto", "duckdb", "python"] = "auto"
    query_field: str | None = None
    count_field: str | None = None
    time_field: str | None = None
    user_field: str | None = None
    hits_field: str | None = None
    clicks_field: str | None = None
    results_field: str | None = None
    latency_field: str | None = None
    param: str | None = None  # access logs: the URL parameter with the query
    search_paths: list[str] = Field(default_factory=list)  # request logs: the paths searches go to (prefixes)


class Gate(_Section):
    """`metric >= min` or `metric <= max` on each listed slice (`overall`: the whole set),
    and/or a p95 budget on the whole run. `max` suits failures, stale_rate, failure_rate and
    the latency percentiles p50/p95/p99 (milliseconds)."""

    metric: str = Field(
        "success@5",
        pattern=r"^((success|recall|precision|mrr|ndcg)@[1-9][0-9]*|negative_pass_rate|max_rank_pass_rate"
        r"|failures|failure_rate|stale_rate|p50|p95|p99)$",
    )
    min: float | None = None
    max: float | None = Field(None, ge=0)
    slices: list[str] = Field(default_factory=list)  # empty: every slice with cases
    max_p95_latency_ms: float | None = Field(None, gt=0, validate_default=True)

    @field_validator("max_p95_latency_ms")
    @classmethod
    def _something_to_check(cls, value: float | None, info: ValidationInfo) -> float | None:
        if value is None and info.data.get("min") is None and info.data.get("max") is None:
            raise ValueError("a gate needs min or max (with metric) or max_p95_latency_ms")
        return value


class ScoringConfig(_Section):
    k: list[int] = Field(default_factory=lambda: [5, 15])
    rel_level: int = Field(1, ge=1, le=2)  # 1: secondaries count as relevant; 2: primaries only
    negative_threshold: float | None = None
    gates: list[Gate] = Field(default_factory=list)
    bootstrap_resamples: int = Field(1000, ge=0)  # 0: no confidence intervals
    seed: int = 0  # of the bootstrap and the randomization test

    @field_validator("k")
    @classmethod
    def _positive(cls, value: list[int]) -> list[int]:
        if not value or any(k < 1 for k in value):
            raise ValueError("k values must be positive integers")
        return value


class GenerateConfig(_Section):
    """Defaults of `curator generate`; its flags override them."""

    passages: int = Field(20, ge=1)
    slices: list[str] = Field(default_factory=list)  # empty: every configured slice with a prompt
    multi_hop_ratio: float = Field(0.2, ge=0, le=5)  # multi-hop groups per selected passage
    group_size: int = Field(2, ge=2, le=3)
    min_words: int = Field(25, ge=1)  # shorter passages are not worth a question
    paraphrase_max_overlap: float = Field(80.0, ge=0, le=100)  # rapidfuzz, question vs passage
    negative_max_coverage: float = Field(0.75, ge=0, le=1)  # share of a negative's words in a hit
    duplicate_similarity: float = Field(90.0, ge=0, le=100)  # rapidfuzz, vs existing questions
    poll_interval: float = Field(30.0, gt=0)  # seconds between Batch API polls


class ReviewConfig(_Section):
    lease_minutes: int = Field(30, ge=1)
    suggestions: int = Field(8, ge=1, le=50)


class SuggestConfig(_Section):
    """Pooled suggestions (docs/review.md, "Suggestions"): the sources and their fusion."""

    dense: Literal["none", "openai", "local"] = "none"  # none: no dense retriever
    embedding_model: str = ""  # e.g. text-embedding-3-small, or a sentence-transformers name/path
    depth: int = Field(10, ge=1, le=1000)  # top-k taken from each stored run (TREC pooling)
    rrf_k: int = Field(60, ge=1)  # reciprocal-rank fusion: 1 / (rrf_k + rank)
    batch_size: int = Field(64, ge=1, le=2048)  # passages per embedding request
    runs_dirs: list[str] = Field(default_factory=lambda: ["retriever-runs", "runs"])


class Config(_Section):
    default_set: str = "main"
    reviewer: str | None = None
    slices: dict[str, SliceConfig] = Field(
        default_factory=lambda: {n: SliceConfig(description=d) for n, d in DEFAULT_SLICES.items()}
    )
    corpus: CorpusConfig = Field(default_factory=CorpusConfig)
    model: ModelConfig = Field(default_factory=ModelConfig)
    logs: LogsConfig = Field(default_factory=LogsConfig)
    scoring: ScoringConfig = Field(default_factory=ScoringConfig)
    review: ReviewConfig = Field(default_factory=ReviewConfig)
    generate: GenerateConfig = Field(default_factory=GenerateConfig)
    suggest: SuggestConfig = Field(default_factory=SuggestConfig)
    keymap: dict[str, str] = Field(default_factory=dict)  # binding id -> keys ("k,enter")
    # `curator run NAME`: [retrievers.NAME] tables, checked by curator.harness (docs/harness.md)
    retrievers: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @property
    def reviewer_name(self) -> str:
        return self.reviewer or os.environ.get("USER") or "reviewer"

    @property
    def api_key_env(self) -> str:
        default = "AZURE_OPENAI_API_KEY" if self.model.provider == "azure" else "OPENAI_API_KEY"
        return self.model.api_key_env or default

    def api_key(self) -> SecretStr | None:
        value = os.environ.get(self.api_key_env) or os.environ.get("CURATOR_API_KEY")
        return SecretStr(value) if value else None

    def resolved_base_url(self) -> str | None:
        if self.model.provider == "azure":  # OPENAI_BASE_URL points at OpenAI, not Azure
            return self.model.base_url
        return self.model.base_url or os.environ.get("OPENAI_BASE_URL")


# Environment variables with a fixed meaning. Any other `CURATOR_SECTION__KEY` variable
# sets `[section] key` (values parsed as TOML scalars when they can be).
_ENV_SHORTCUTS = {
    "CURATOR_SET": ("default_set",),
    "CURATOR_REVIEWER": ("reviewer",),
    "CURATOR_MODEL": ("model", "name"),
    "CURATOR_BASE_URL": ("model", "base_url"),
}


def _env_value(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def _apply_env(data: dict[str, Any], environ: dict[str, str]) -> dict[tuple[str, ...], str]:
    """Apply the `CURATOR_*` variables to `data`; returns which variable set which key path
    (so an invalid value is reported under the variable's name, not the file's)."""
    applied: dict[tuple[str, ...], str] = {}
    for name, raw in environ.items():
        if name in _ENV_SHORTCUTS:
            keys: tuple[str, ...] = _ENV_SHORTCUTS[name]
            value: Any = raw
        elif name.startswith("CURATOR_") and "__" in name:
            keys = tuple(part.lower() for part in name[len("CURATOR_") :].split("__"))
            value = _env_value(raw)
        else:
            continue
        target = data
        for key in keys[:-1]:
            target = target.setdefault(key, {})
        target[keys[-1]] = value
        applied[keys] = name
    return applied


def load_config(root: Path | None, environ: dict[str, str] | None = None) -> Config:
    """Read `root/curator.toml` (if any) and apply environment overrides."""
    data: dict[str, Any] = {}
    path = root / CONFIG_FILE if root else None
    if path and path.exists():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: not valid TOML: {exc}") from None
        except UnicodeDecodeError:
            raise ConfigError(f"{path}: not UTF-8 text") from None
    from_env = _apply_env(data, dict(os.environ if environ is None else environ))
    if "api_key" in data.get("model", {}):
        raise ConfigError(
            f"{path}: [model] api_key must not be stored in curator.toml",
            "Set the environment variable named by [model] api_key_env (default OPENAI_API_KEY).",
        )
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        problems = validation_problems(exc)
        named = sorted({name for error in exc.errors() for keys, name in from_env.items()
                        if tuple(str(part) for part in error["loc"][: len(keys)]) == keys})
        where = f"environment variable {', '.join(named)}" if named else str(path or "environment")
        raise ConfigError(f"{where}: invalid configuration: {problems}") from None


DEFAULT_TOML = (
    """\
# curator workspace configuration. Every key is optional; the values shown are the defaults.
# Environment variables override this file: CURATOR_SET, CURATOR_REVIEWER, CURATOR_MODEL,
# CURATOR_BASE_URL, and CURATOR_<SECTION>__<KEY> for anything else
# (for example CURATOR_SCORING__K="[5, 10]").

# The question set that commands use when none is named (datasets/<name>/).
default_set = "main"
# reviewer = "your-name"          # defaults to $USER

# Slices: what kinds of question the set must hold, and how many of each.
"""
    + "".join(f'[slices.{name}]\ntarget = 10\ndescription = "{text}"\n\n' for name, text in DEFAULT_SLICES.items())
    + """\
[corpus]
min_tokens = 200                 # small sections merge into their parent up to this size
max_tokens = 900                 # larger sections split at paragraph boundaries
# include = ["*.md", "*.markdown", "*.mdx", "*.txt", "*.rst", "*.html", "*.htm"]
# exclude = [".git", "node_modules", ".curator"]

[model]
# Any OpenAI-compatible server: OpenAI, Azure OpenAI, vLLM, Ollama, llama.cpp server.
name = "gpt-4o-mini"
provider = "openai"                      # "azure" for Azure OpenAI (see below)
# base_url = "http://127.0.0.1:8000/v1"   # else OPENAI_BASE_URL, else the client's default
# api_key_env = "OPENAI_API_KEY"         # AZURE_OPENAI_API_KEY with provider = "azure";
                                         # the key itself never goes in this file
# azure_endpoint = "https://RESOURCE.openai.azure.com"   # else AZURE_OPENAI_ENDPOINT
# api_version = "2024-10-21"             # else OPENAI_API_VERSION
# deployment = "my-gpt-4o-mini"          # default: the deployment is named like the model
concurrency = 8
timeout = 60
max_retries = 5
temperature = 0.2                        # unset: not sent; remove it for reasoning models (o1/o3/o4, gpt-5)
# max_tokens = 2048                      # completion limit per request; unset: per task (docs/generate.md)
# extra_body = { options = { num_ctx = 8192 } }   # merged into every request (Ollama, vLLM)
# extra_headers = { "X-Team" = "search", "X-Token" = "$MY_PROXY_TOKEN" }

[logs]
similarity = 88.0                # rapidfuzz score (0-100) that joins two queries in a cluster
min_count = 1
min_length = 3
max_length = 300
# noise_patterns = ["^test$", "^asdf"]
# redact_names = "people.txt"     # names (one per line) redacted as <NAME>, e.g. from a directory
# Defaults of `curator import-logs` (its flags override them):
# sample = "top"                 # top | random | pps
# limit = 500                    # review budget per import (0: no limit)
# engine = "auto"                # auto | duckdb | python
# query_field = "request.params.q"   # unset: guessed (query, q, search, ...); dotted paths work
# time_field = "@timestamp"      # unset: guessed; "" if the log has none
# user_field = "session_id"      # counted, never stored
# count_field = "n"              # pre-aggregated logs
# hits_field, clicks_field, results_field, latency_field, param (access logs) likewise
# search_paths = ["/search"]     # logs of requests: only these paths (autocomplete stays out)
# [logs.redact_patterns]
# TICKET = "INC-\\\\d{6}"

[scoring]
k = [5, 15]
rel_level = 1                    # 1: secondary passages count as relevant; 2: primaries only
# negative_threshold = 0.5       # a negative case fails if any result scores at or above this

# Gates: a red gate makes `curator score` exit 1.
# [[scoring.gates]]
# metric = "success@5"
# min = 0.8
# slices = []                    # empty: every slice that has cases
# [[scoring.gates]]
# max_p95_latency_ms = 250

[generate]                       # defaults of `curator generate`; its flags override them
passages = 20
# slices = ["paraphrase", "negative"]   # default: every slice above that has a prompt
multi_hop_ratio = 0.2            # multi-hop groups per selected passage
group_size = 2                   # passages per multi-hop group (2 or 3)
min_words = 25                   # shorter passages are not used
paraphrase_max_overlap = 80.0    # reject paraphrases this lexically close to the passage (0-100)
negative_max_coverage = 0.75     # reject negatives when a search hit holds this share of words
duplicate_similarity = 90.0      # drop questions this similar to an existing one (0-100)
poll_interval = 30.0             # seconds between Batch API polls

[review]
lease_minutes = 30
suggestions = 8

[suggest]
# Pooled suggestions: curator's BM25, log clicks/hits, the top `depth` of every stored run
# (retriever-runs/, runs/) that has the query, and a dense retriever when configured.
dense = "none"                   # none | openai ([model] client settings) | local (the "dense" extra)
# embedding_model = "text-embedding-3-small"   # or a sentence-transformers model name or path
depth = 10
rrf_k = 60                       # reciprocal-rank fusion constant
batch_size = 64                  # passages per embedding request

# [keymap]                       # binding id = "keys"; see `?` in `curator review`
# keep = "k"
"""
)

"""Score a question set against a retriever's ranked output.

    >>> import curator
    >>> result = curator.score(cases, {"dhl-cutoff": ["carriers/dhl.md#cutoff-times", ...]}, k=5)
    >>> result.overall["success@5"], result.passed

`score()` works in-process on cases and rankings; with `workspace=` and `write=True` it is
what `curator score` does: read the run file, score the set, check gates, store the artefact.
Definitions and choices: docs/scoring.md.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curator._process import paused_gc
from curator.config import Gate, ScoringConfig
from curator.errors import CuratorError
from curator.models import Case, utcnow
from curator.scoring.artefact import SCHEMA, git_state, write_artefact
from curator.scoring.evaluate import CHOICES, TIE_RULES, prepare, score_cases
from curator.scoring.gates import evaluate_gates, gate_ks
from curator.scoring.runs import RunData, coerce_run, read_run

if TYPE_CHECKING:
    from curator.questionset import QuestionSet
    from curator.workspace import Workspace

# progress(stage, done, total): stage "read" counts bytes, "score" counts questions.
Progress = Callable[[str, int, int], None]

__all__ = ["ScoreResult", "score"]


@dataclass
class ScoreResult:
    """The artefact as a dict, plus where it was written (if it was)."""

    artefact: dict[str, Any]
    path: Path | None = None

    @property
    def overall(self) -> dict[str, Any]:
        return self.artefact["metrics"]["overall"]

    @property
    def slices(self) -> dict[str, dict[str, Any]]:
        return self.artefact["metrics"]["slices"]

    @property
    def questions(self) -> dict[str, dict[str, Any]]:
        return self.artefact["questions"]

    @property
    def gates(self) -> list[dict[str, Any]]:
        return self.artefact["gates"]

    @property
    def passed(self) -> bool:
        return self.artefact["passed"]

    @property
    def problems(self) -> list[str]:
        return self.artefact["run"]["problems"]

    def failures(self) -> list[tuple[str, dict[str, Any]]]:
        return [(q, v) for q, v in self.questions.items() if v["failure"]]


def _cases_from(set_or_cases: QuestionSet | str | Path | Iterable[Case | dict[str, Any]]) -> tuple[list[Case], dict[str, Any]]:
    from curator.questionset import QuestionSet

    if isinstance(set_or_cases, str | Path):
        set_or_cases = QuestionSet(set_or_cases)
    if isinstance(set_or_cases, QuestionSet):
        if not set_or_cases.exists():
            raise CuratorError(f"{set_or_cases.root}: no question set here (no cases.jsonl)")
        result = set_or_cases.read()
        data = set_or_cases.cases_path.read_bytes()
        info = {
            "name": set_or_cases.name,
            "path": str(set_or_cases.cases_path),
            "sha256": hashlib.sha256(data).hexdigest(),
            "rev": result.lines,
            "problems": [str(p) for p in result.problems],  # torn or invalid lines, skipped
        }
        return list(result.cases.values()), info
    cases = [c if isinstance(c, Case) else Case.model_validate(c) for c in set_or_cases]
    return cases, {"name": None, "path": None, "sha256": None, "rev": None, "problems": []}


def _relative(path: str | None, workspace: Workspace | None) -> str | None:
    """Paths inside the workspace are stored relative to it, so artefacts travel with git."""
    if path is None or workspace is None or path == "<memory>":
        return path
    try:
        return str(Path(path).resolve().relative_to(workspace.root))
    except ValueError:
        return str(Path(path).resolve())


def _ks(k: int | Sequence[int] | None, config: ScoringConfig, gates: list[Gate]) -> list[int]:
    if k is None:
        base = list(config.k)
    elif isinstance(k, int):
        base = [k, 3 * k]
    else:
        base = list(k)
    if not base or any(not isinstance(x, int) or x < 1 for x in base):
        raise CuratorError(f"k must be positive integers, got {base!r}")
    return list(dict.fromkeys([*base, *gate_ks(gates)]))  # in order, each once


def _stage(progress: Progress | None, stage: str) -> Callable[[int, int], None] | None:
    """`progress` for one stage: called with (done, total)."""
    if progress is None:
        return None
    return lambda done, total: progress(stage, done, total)


def score(
    set_or_cases: QuestionSet | str | Path | Iterable[Case | dict[str, Any]],
    ranked: RunData | str | Path | Mapping[str, Any],
    *,
    fmt: str | None = None,
    k: int | Sequence[int] | None = None,
    rel_level: int | None = None,
    negative_threshold: float | None = None,
    gates: Iterable[Gate | dict[str, Any]] | None = None,
    workspace: Workspace | None = None,
    label: str | None = None,
    write: bool = False,
    progress: Progress | None = None,
) -> ScoreResult:
    """Score cases against ranked results, in process.

    `set_or_cases`: a QuestionSet, a set folder, or Case objects / dicts.
    `ranked`: a run file path (in format `fmt`, default detected), a `RunData`, or
    `{query_id: [ids] | [(id, score)] | [{id, score, revision}] | {id: score}}` (lists are
    in rank order). `k=5` scores at 5 and 15
    (Recall@3k); a list scores at exactly those (the first is the headline k). Options
    default to the workspace's `[scoring]` config when `workspace` is given. With
    `workspace`, passage revisions decide freshness and `write=True` stores the artefact
    in its runs/ folder. `progress(stage, done, total)` hears how reading a run file
    ("read", bytes) and scoring ("score", questions) go.
    """
    config = workspace.config.scoring if workspace is not None else ScoringConfig()
    gate_list = [g if isinstance(g, Gate) else Gate.model_validate(g) for g in (gates if gates is not None else config.gates)]
    ks = _ks(k, config, gate_list)
    level = rel_level if rel_level is not None else config.rel_level
    if level not in (1, 2):
        raise CuratorError(f"rel_level must be 1 or 2, got {level}")
    threshold = negative_threshold if negative_threshold is not None else config.negative_threshold
    revisions_of = workspace.revisions_of if workspace is not None else None
    with paused_gc():
        cases, set_info = _cases_from(set_or_cases)
        specs = prepare(cases, ks, level, revisions_of)
        if isinstance(ranked, str | Path):
            run = read_run(ranked, fmt, progress=_stage(progress, "read"))
        else:
            run = coerce_run(ranked)
        result = score_cases(specs, run.queries, ks, threshold, progress=_stage(progress, "score"),
                             resamples=config.bootstrap_resamples, seed=config.seed)
        run_info: dict[str, Any] = {
            "path": _relative(run.path, workspace),
            "format": run.format,
            "sha256": run.sha256,
            "queries": len(run.queries),
            "problems": [str(p) for p in run.problems],
        }
        # Resumed with the set's cases and the run's rankings alive (some 10^5 containers, no
        # cycles), the collector's next pass would scan them all (~0.1 s at 10k x 100).
        del cases, run
    if progress is not None:
        progress("score", len(specs), len(specs))
    verdicts = evaluate_gates(gate_list, result["metrics"], result["latency_ms"])
    sha, dirty = git_state(workspace.root) if workspace is not None else (None, None)
    artefact: dict[str, Any] = {
        "schema": SCHEMA,
        "created_at": utcnow(),
        "label": label,
        "workspace": {"root": str(workspace.root) if workspace is not None else None, "git_sha": sha, "dirty": dirty},
        "run": run_info,
        "set": {**set_info, "path": _relative(set_info["path"], workspace), "cases": len(specs)},
        "config": {
            "k": ks,
            "headline_k": ks[0],
            "rel_level": level,
            "secondaries_relevant": level == 1,
            "negative_threshold": threshold,
            "tie_rule": TIE_RULES[run_info["format"]],
            **CHOICES,
            "latency_percentile": "nearest rank",
            "bootstrap": {"resamples": config.bootstrap_resamples, "seed": config.seed, "level": 0.95},
            "gates": [g.model_dump(exclude_none=True) for g in gate_list],
        },
        "metrics": result["metrics"],
        "latency_ms": result["latency_ms"],
        "gates": verdicts,
        "passed": all(v["passed"] for v in verdicts),
        "run_time": result["run_time"],
        "missing": result["missing"],
        "failed": result["failed"],
        "unknown_queries": result["unknown_queries"],
        "duplicates": result["duplicates"],
        "questions": result["questions"],
    }
    path = write_artefact(workspace.runs_dir, artefact) if write and workspace is not None else None
    return ScoreResult(artefact, path)


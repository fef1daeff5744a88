"""Gates: minimum per-slice metrics and a p95 latency budget. A red gate fails `score`.

A gate is `curator.config.Gate` (from `[[scoring.gates]]` or `--gate`):
`metric` + `min` is checked on every listed slice (empty list: every slice where the
metric exists; `overall` names the whole set); `max_p95_latency_ms` on the whole run.
"""

from __future__ import annotations

import re
from typing import Any

from curator.config import Gate
from curator.errors import ConfigError
from curator.scoring.evaluate import METRIC_RE, RATE_METRICS

_FLAG_RE = re.compile(r"^\s*([a-z_]+(?:@\d+)?)\s*>=\s*([0-9.]+)\s*(?::\s*(.+))?$")


def check_metric_name(name: str) -> int | None:
    """The k a metric name needs (None for rates); ConfigError for an unknown name."""
    match = METRIC_RE.match(name)
    if match:
        return int(match.group(2))
    if name in RATE_METRICS:
        return None
    raise ConfigError(
        f"unknown gate metric {name!r}",
        "Use success@K, recall@K, precision@K, mrr@K, ndcg@K, negative_pass_rate or max_rank_pass_rate.",
    )


def parse_gate_flag(text: str) -> Gate:
    """`success@5>=0.8`, `recall@15>=0.9:paraphrase,multi_hop` or `p95<=250`."""
    latency = re.match(r"^\s*p95\s*<=\s*([0-9.]+)\s*(?:ms)?\s*$", text)
    if latency:
        try:
            return Gate(max_p95_latency_ms=float(latency.group(1)))
        except ValueError:
            raise ConfigError(f"cannot read gate {text!r}: the p95 budget must be a positive number") from None
    match = _FLAG_RE.match(text)
    if not match:
        raise ConfigError(
            f"cannot read gate {text!r}",
            "Write METRIC>=MIN[:SLICE,...] (success@5>=0.8:paraphrase) or p95<=MS (p95<=250).",
        )
    slices = [s.strip() for s in (match.group(3) or "").split(",") if s.strip()]
    check_metric_name(match.group(1))
    try:
        return Gate(metric=match.group(1), min=float(match.group(2)), slices=slices)
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        raise ConfigError(f"cannot read gate {text!r}: {exc}") from None


def gate_ks(gates: list[Gate]) -> list[int]:
    """The cut-offs the metric gates need."""
    ks = []
    for gate in gates:
        k = check_metric_name(gate.metric) if gate.min is not None else None
        if k is not None:
            ks.append(k)
    return ks


def evaluate_gates(gates: list[Gate], metrics: dict[str, Any], latency: dict[str, Any]) -> list[dict[str, Any]]:
    """One verdict per (gate, slice): value, threshold, passed and how far off."""
    verdicts: list[dict[str, Any]] = []
    for gate in gates:
        if gate.min is not None:  # gate.metric is a known name: Gate checks it
            names = gate.slices or [s for s, v in metrics["slices"].items() if gate.metric in v]
            for name in names:
                block = metrics["overall"] if name == "overall" else metrics["slices"].get(name)
                value = None if block is None else block.get(gate.metric)
                verdict = {"gate": f"{gate.metric} >= {gate.min:g}", "metric": gate.metric, "slice": name,
                           "min": gate.min, "value": value}
                note = "no cases" if block is None else "metric not defined for this slice"
                verdicts.append(_settle(verdict, None if value is None else value - gate.min, note))
        if gate.max_p95_latency_ms is not None:
            p95 = latency.get("p95")
            verdict = {"gate": f"p95 latency <= {gate.max_p95_latency_ms:g} ms", "metric": "p95_latency_ms",
                       "slice": "overall", "max": gate.max_p95_latency_ms, "value": p95}
            delta = None if p95 is None else gate.max_p95_latency_ms - p95
            verdicts.append(_settle(verdict, delta, "the run records no latency_ms"))
    return verdicts


def _settle(verdict: dict[str, Any], delta: float | None, note: str) -> dict[str, Any]:
    """`passed` and `delta` (how far inside the bound, negative when outside), or `note`
    when there is no value to check."""
    verdict["passed"] = delta is not None and delta >= -1e-12
    if delta is None:
        verdict["note"] = note
    else:
        verdict["delta"] = delta
    return verdict


def describe(verdict: dict[str, Any]) -> str:
    """`success@5 on paraphrase: 0.667 < 0.800 (short by 0.133)`."""
    where = verdict["slice"]
    value = verdict["value"]
    if value is None:
        return f"{verdict['gate']} on {where}: {verdict.get('note', 'no value')}"
    if verdict["metric"] == "p95_latency_ms":
        if verdict["passed"]:
            return f"p95 latency {value:.1f} ms <= {verdict['max']:g} ms"
        return f"p95 latency {value:.1f} ms > {verdict['max']:g} ms (over by {-verdict['delta']:.1f} ms)"
    if verdict["passed"]:
        return f"{verdict['metric']} on {where}: {value:.3f} >= {verdict['min']:.3f}"
    return f"{verdict['metric']} on {where}: {value:.3f} < {verdict['min']:.3f} (short by {-verdict['delta']:.3f})"

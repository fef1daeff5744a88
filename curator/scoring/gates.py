"""Gates: per-slice minimum metrics, maximum failures/stale rates and latency budgets.
A red gate fails `score`.

A gate is `curator.config.Gate` (from `[[scoring.gates]]` or `--gate`): `metric` + `min`
or `metric` + `max` is checked on every listed slice (empty list: every slice where the
metric exists; `overall` names the whole set). Latency gates (p50/p95/p99 + max, or the
older `max_p95_latency_ms`) check the listed slices, `overall` when none is listed.
The verdict is the point estimate; the interval is printed beside it.
"""

from __future__ import annotations

import re
from typing import Any

from curator.config import Gate
from curator.errors import ConfigError
from curator.scoring.evaluate import LATENCY_METRICS, MAX_METRICS, METRIC_RE, RATE_METRICS

_FLAG_RE = re.compile(r"^\s*([a-z_0-9]+(?:@\d+)?)\s*(>=|<=)\s*([0-9.]+)\s*(?:ms)?\s*(?::\s*(.+))?$")


def check_metric_name(name: str) -> int | None:
    """The k a metric name needs (None for rates, counts and latency); ConfigError for an
    unknown name."""
    match = METRIC_RE.match(name)
    if match:
        return int(match.group(2))
    if name in RATE_METRICS or name in MAX_METRICS or name in LATENCY_METRICS:
        return None
    raise ConfigError(
        f"unknown gate metric {name!r}",
        "Use success@K, recall@K, precision@K, mrr@K, ndcg@K, negative_pass_rate, max_rank_pass_rate "
        "(with >=), or failures, failure_rate, stale_rate, p50, p95, p99 (with <=).",
    )


def parse_gate_flag(text: str) -> Gate:
    """`success@5>=0.8`, `recall@15>=0.9:paraphrase,multi_hop`, `stale_rate<=0:freshness`,
    `failures<=0`, `p95<=250` or `p95<=120:exact_identifier`."""
    match = _FLAG_RE.match(text)
    if not match:
        raise ConfigError(
            f"cannot read gate {text!r}",
            "Write METRIC>=MIN[:SLICE,...] (success@5>=0.8:paraphrase) or METRIC<=MAX[:SLICE,...] "
            "(stale_rate<=0:freshness, p95<=250).",
        )
    metric, op, number, where = match.groups()
    slices = [s.strip() for s in (where or "").split(",") if s.strip()]
    check_metric_name(metric)
    if metric in LATENCY_METRICS and op != "<=":
        raise ConfigError(f"cannot read gate {text!r}: a latency gate is a budget, write {metric}<=MS")
    try:
        value = float(number)
        if op == ">=":
            return Gate(metric=metric, min=value, slices=slices)
        return Gate(metric=metric, max=value, slices=slices)
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        raise ConfigError(f"cannot read gate {text!r}: {exc}") from None


def gate_ks(gates: list[Gate]) -> list[int]:
    """The cut-offs the metric gates need."""
    ks = []
    for gate in gates:
        k = check_metric_name(gate.metric) if gate.min is not None or gate.max is not None else None
        if k is not None:
            ks.append(k)
    return ks


def evaluate_gates(gates: list[Gate], metrics: dict[str, Any], latency: dict[str, Any]) -> list[dict[str, Any]]:
    """One verdict per (gate, slice): value, threshold, passed and how far off. A latency
    gate is red while fewer than all scored queries of its slice carry a latency."""
    verdicts: list[dict[str, Any]] = []
    for gate in gates:
        if gate.min is not None or gate.max is not None:
            if gate.metric in LATENCY_METRICS:
                verdicts.extend(_latency_verdicts(gate.metric, gate.max or 0.0, gate.slices or ["overall"], metrics))
                continue
            names = gate.slices or [s for s, v in metrics["slices"].items() if gate.metric in v]
            for name in names:
                block = metrics["overall"] if name == "overall" else metrics["slices"].get(name)
                value = None if block is None else block.get(gate.metric)
                verdict: dict[str, Any] = {"metric": gate.metric, "slice": name, "value": value}
                interval = (block or {}).get("ci", {}).get(gate.metric)
                if interval is not None:
                    verdict["ci"] = interval  # shown beside the verdict, which is the point estimate
                note = "no cases" if block is None else "metric not defined for this slice"
                if gate.min is not None:
                    verdict.update(gate=f"{gate.metric} >= {gate.min:g}", min=gate.min)
                    delta = None if value is None else value - gate.min
                else:
                    assert gate.max is not None
                    verdict.update(gate=f"{gate.metric} <= {gate.max:g}", max=gate.max)
                    delta = None if value is None else gate.max - value
                verdicts.append(_settle(verdict, delta, note))
        if gate.max_p95_latency_ms is not None:
            verdicts.extend(_latency_verdicts("p95", gate.max_p95_latency_ms, gate.slices or ["overall"], metrics))
    return verdicts


def _latency_verdicts(metric: str, budget: float, slices: list[str], metrics: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for name in slices:
        block = metrics["overall"] if name == "overall" else metrics["slices"].get(name)
        lat = (block or {}).get("latency_ms") or {}
        value = lat.get(metric)
        verdict: dict[str, Any] = {"gate": f"{metric} latency <= {budget:g} ms", "metric": f"{metric}_latency_ms",
                                   "slice": name, "max": budget, "value": value,
                                   "with_latency": lat.get("n", 0), "scored": lat.get("of", 0)}
        if block is None:
            out.append(_settle(verdict, None, "no cases"))
        elif not lat.get("n"):
            out.append(_settle(verdict, None, f"none of {lat.get('of', 0)} scored queries carry latency_ms"))
        elif lat["n"] < lat["of"]:
            verdict["passed"] = False
            verdict["note"] = f"only {lat['n']} of {lat['of']} scored queries carry latency_ms"
            out.append(verdict)
        else:
            out.append(_settle(verdict, None if value is None else budget - value, "no latency"))
    return out


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
    if verdict["metric"].endswith("_latency_ms"):
        name = verdict["metric"].split("_")[0]
        text = f"{name} latency on {where}: {value:.1f} ms"
        if "delta" not in verdict:
            return f"{text}; {verdict.get('note', '')}"
        if verdict["passed"]:
            return f"{text} <= {verdict['max']:g} ms"
        return f"{text} > {verdict['max']:g} ms (over by {-verdict['delta']:.1f} ms)"
    if "max" in verdict:
        shown = f"{value:g}" if verdict["metric"] == "failures" else f"{value:.3f}"
        if verdict["passed"]:
            return f"{verdict['metric']} on {where}: {shown} <= {verdict['max']:g}"
        return f"{verdict['metric']} on {where}: {shown} > {verdict['max']:g} (over by {-verdict['delta']:.3g})"
    ci = f" (95% CI {verdict['ci'][0]:.3f}-{verdict['ci'][1]:.3f})" if verdict.get("ci") else ""
    if verdict["passed"]:
        return f"{verdict['metric']} on {where}: {value:.3f}{ci} >= {verdict['min']:.3f}"
    return f"{verdict['metric']} on {where}: {value:.3f}{ci} < {verdict['min']:.3f} (short by {-verdict['delta']:.3f})"

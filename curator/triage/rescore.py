"""Rescoring a stored run with the set's current labels, without the retriever.

The rankings come from the original run file when it is still there unchanged (sha256
as recorded), else from the artefact itself: its top results and the ranks of the
passages labelled when it was scored; other positions hold placeholders no label can
match, so a passage labelled since that ranked below the kept top counts as not
retrieved.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from curator._process import paused_gc
from curator.errors import InputError
from curator.scoring import ScoreResult, score
from curator.scoring.artefact import write_artefact
from curator.scoring.runs import FORMATS, Ranked, RunData, read_run
from curator.triage.items import load_artefact, run_name, set_of

if TYPE_CHECKING:
    from curator.workspace import Workspace

UNJUDGED = "\x00unjudged:"  # placeholder ids for ranks the artefact did not keep


def _run_from_file(ws: Workspace, artefact: dict[str, Any]) -> RunData | None:
    """The original run file, if it is still there unchanged."""
    info = artefact["run"]
    if not info.get("path") or info.get("path") == "<memory>" or not info.get("sha256"):
        return None
    path = Path(info["path"])
    if not path.is_absolute():
        path = ws.root / path
    if not path.is_file():
        return None
    try:
        run = read_run(path, info.get("format") if info.get("format") in FORMATS else None)
    except InputError:
        return None
    return run if run.sha256 == info["sha256"] else None


def _run_from_artefact(artefact: dict[str, Any]) -> RunData:
    """Each query's ranking rebuilt from what the artefact kept (a stale hit keeps a
    revision no label has)."""
    run = RunData({}, path=artefact["run"].get("path") or "<memory>", format="python",
                  sha256=artefact["run"].get("sha256"))
    for qid, q in artefact["questions"].items():
        if q.get("failure") == "missing":
            continue
        at: dict[int, tuple[str, float | None, str | None]] = {}
        for rank, top in enumerate(q.get("top") or [], 1):
            at[rank] = (top["id"], top.get("score"), top.get("revision"))
        for doc, rank in (q.get("ranks") or {}).items():
            if rank is not None and rank not in at:
                at[rank] = (doc, None, None)
        for doc, rank in (q.get("stale_ranks") or {}).items():
            if rank not in at:
                at[rank] = (doc, None, "\x00stale")
        ids: list[str] = []
        scores: list[float | None] = []
        revisions: list[str | None] = []
        for rank in range(1, max(at, default=0) + 1):
            doc, score_, revision = at.get(rank, (f"{UNJUDGED}{rank}", None, None))
            ids.append(doc)
            scores.append(score_)
            revisions.append(revision)
        has_revisions = any(r is not None for r in revisions)
        run.queries[qid] = Ranked(ids, scores, revisions if has_revisions else None, q.get("latency_ms"))
    return run


def rescore(ws: Workspace, artefact: dict[str, Any] | str | Path | None = None, *, write: bool = True,
            label: str | None = None) -> ScoreResult:
    """Recompute a stored run's metrics with the set's current labels and store a new
    artefact naming its source run (label `label`, default `rescore`)."""
    source = artefact if isinstance(artefact, dict) else load_artefact(ws, artefact)
    config = source["config"]
    label = label or "rescore"  # not the source's label by default: `curator triage LABEL` stays unambiguous
    with paused_gc():  # resumed once the rankings are freed, as in score()
        run = _run_from_file(ws, source)
        mode = "run file"
        if run is None:
            run, mode = _run_from_artefact(source), "artefact"
        result = score(set_of(ws, source), run, k=config["k"], rel_level=config["rel_level"],
                       negative_threshold=config.get("negative_threshold"), gates=config.get("gates") or [],
                       workspace=ws, label=label, write=False)
        del run
    art = result.artefact
    art["run"] = {**source["run"], "problems": art["run"]["problems"]}
    if mode == "artefact":
        # Placeholder ids of unkept ranks are not queries' results anyone should read.
        for q in art["questions"].values():
            q["top"] = [t for t in q.get("top", []) if not t["id"].startswith(UNJUDGED)]
    art["source_run"] = {
        "artefact": run_name(source),
        "created_at": source["created_at"],
        "label": source.get("label"),
        "set_sha256": source["set"].get("sha256"),
        "rankings_from": mode,
    }
    path = write_artefact(ws.runs_dir, art) if write else None
    return ScoreResult(art, path)


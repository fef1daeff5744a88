"""`curator run`: query a live retriever for every active case of a set and write a run.

Adapters (adapters.py): `http` (a URL and a JSON body or query-string template), `python`
(`package.module:function`), `command` (JSONL on stdin/stdout) and `baseline` (curator's
own BM25). runner.py drives them on one asyncio event loop and writes the JSONL run in the
format of docs/scoring.md (latency_ms, timestamp, error). docs/harness.md.
"""

from curator.harness.adapters import RetrieverSpec, build_adapter
from curator.harness.runner import RunOutcome, run_retriever

__all__ = ["RetrieverSpec", "RunOutcome", "build_adapter", "run_retriever"]

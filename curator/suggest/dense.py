"""Dense retrieval: passage embeddings from an OpenAI-compatible `/v1/embeddings` endpoint
(the `[model]` client settings generation uses) or a local sentence-transformers model
(the `dense` extra), stored in the workspace and searched exactly (cosine, numpy).

`index_corpus` embeds only passage texts whose (text hash, model) has no vector yet, so a
`corpus add` after an edit embeds the changed passages alone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from curator.errors import CuratorError
from curator.suggest import store
from curator.text import sha256_hex

if TYPE_CHECKING:
    from curator.config import Config
    from curator.workspace import Workspace


class Embedder(Protocol):
    name: str  # the model, as recorded with its vectors

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class OpenAIEmbedder:
    """`POST {base_url}/embeddings` through the openai client, with [model]'s base URL,
    key variable, provider (Azure), timeout and retries."""

    def __init__(self, config: Config, model: str):
        import openai

        self.name = model
        key = config.api_key()
        secret = key.get_secret_value() if key else None
        m = config.model
        self._secret = secret
        self._client: Any
        if m.provider == "azure":
            try:
                self._client = openai.AzureOpenAI(  # type: ignore[call-overload]
                    api_key=secret, azure_endpoint=None if m.base_url else m.azure_endpoint,
                    base_url=m.base_url, api_version=m.api_version, timeout=m.timeout, max_retries=m.max_retries)
            except (openai.OpenAIError, ValueError) as exc:
                raise CuratorError(f"Azure OpenAI is not fully configured: {exc}") from None
        else:
            self._client = openai.OpenAI(api_key=secret or "not-needed", base_url=config.resolved_base_url(),
                                         timeout=m.timeout, max_retries=m.max_retries)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import openai

        try:
            reply = self._client.embeddings.create(model=self.name, input=list(texts))
        except openai.APIError as exc:
            message = str(exc)
            if self._secret:
                message = message.replace(self._secret, "[key]")
            raise CuratorError(f"the embeddings endpoint failed: {message[:500]}",
                               "Check [suggest] embedding_model and [model] base_url (docs/configuration.md).") from None
        rows = sorted(reply.data, key=lambda d: d.index)
        if len(rows) != len(texts):
            raise CuratorError(f"the embeddings endpoint returned {len(rows)} vectors for {len(texts)} texts")
        return np.asarray([r.embedding for r in rows], dtype=np.float32)


# Torch's intra-op threads for the local model. Measured on the 2-core machine while it was
# shared (load 5-8, docs/benchmarks.md "Pooled suggestions"): one query's embedding took
# 12 ms of CPU with 1 thread and 70-90 ms with 2 (the second thread spins waiting for a
# core), 20 ms wall against 130; batches of passages embedded as fast with 1 as with 2.
TORCH_THREADS = 1


class LocalEmbedder:
    """A sentence-transformers model by name or path (install the `dense` extra), run on
    the CPU with TORCH_THREADS threads and without autograd."""

    def __init__(self, model: str):
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise CuratorError("[suggest] dense = \"local\" needs sentence-transformers",
                               "Install the extra: pip install 'curator-evalsets[dense]'.") from None
        torch.set_num_threads(TORCH_THREADS)
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # its "Loading weights" bar would land in our output
        self._torch = torch
        self.name = model
        try:
            self._model = SentenceTransformer(model, device="cpu")
        except (OSError, ValueError) as exc:
            raise CuratorError(f"cannot load the sentence-transformers model {model!r}: {exc}") from None
        if torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported():
            # The CPU multiplies bfloat16 natively (oneDNN says so): the weights in bf16 are
            # half the bytes a query's forward pass reads (it is memory-bound: a few tokens
            # against 22M weights), so 0.78x the CPU per query and 2.1-2.3x the passages
            # per second, vectors at cosine >= 0.9999 to float32's (docs/benchmarks.md).
            self._model.to(torch.bfloat16)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._torch.inference_mode():
            vectors = self._model.encode(list(texts), batch_size=64, show_progress_bar=False, convert_to_tensor=True)
            return vectors.float().numpy()


_LOCAL: dict[str, LocalEmbedder] = {}  # loaded models by name: torch and a model load once per process


def embedder_for(config: Config) -> Embedder | None:
    """The configured embedder, or None when `[suggest] dense` is "none"."""
    s = config.suggest
    if s.dense == "none":
        return None
    if not s.embedding_model:
        raise CuratorError(f"[suggest] dense = {s.dense!r} needs embedding_model",
                           "Name the model in curator.toml, e.g. embedding_model = \"text-embedding-3-small\".")
    if s.dense == "openai":
        return OpenAIEmbedder(config, s.embedding_model)
    if s.embedding_model not in _LOCAL:
        _LOCAL[s.embedding_model] = LocalEmbedder(s.embedding_model)
    return _LOCAL[s.embedding_model]


@dataclass
class IndexReport:
    passages: int  # current passages
    embedded: int  # texts embedded now
    cached: int  # texts that already had a vector of this model


def index_corpus(ws: Workspace, embedder: Embedder, batch_size: int = 64,
                 progress: Callable[[int, int], None] | None = None) -> IndexReport:
    """Embed every current passage text that has no vector of this model yet.
    `progress(done, total)` after each batch; each batch is stored as it arrives."""
    passages = store.current_passages(ws)
    known = store.known_hashes(ws, embedder.name)
    todo: dict[str, str] = {}
    for _, _, text in passages:
        digest = sha256_hex(text)
        if digest not in known:
            todo.setdefault(digest, text)
    items = list(todo.items())
    if progress is not None:
        progress(0, len(items))
    for start in range(0, len(items), batch_size):
        batch = items[start:start + batch_size]
        matrix = embedder.embed([text for _, text in batch])
        store.put_vectors(ws, embedder.name, [
            (digest, int(matrix.shape[1]), _unit(vec).tobytes()) for (digest, _), vec in zip(batch, matrix, strict=True)
        ])
        if progress is not None:
            progress(start + len(batch), len(items))
    return IndexReport(passages=len(passages), embedded=len(items), cached=len(passages) - len(items))


def _unit(vec: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vec))
    return (vec / norm if norm else vec).astype("<f4")


# numpy >= 2 counts bits; without it every query is scored over the whole matrix.
_POPCOUNT = hasattr(np, "bitwise_count")


class DenseIndex:
    """The current passages' vectors of one model as one contiguous float32 matrix; `search`
    is a cosine top-k. Over more than 2 x RESCORE passages a first pass ranks the passages
    by the Hamming distance between the signs of their vectors and the query's (48 bytes a
    passage for 384 dimensions, 1/32 of the float32 bytes a product reads: the product is
    memory-bound, 100k x 384 float32 is 154 MB a query), and the nearest RESCORE, or 1 in
    RESCORE_SHARE of the passages if that is more, are re-scored in float32; smaller
    corpora are scored exactly. `search_many` embeds several queries in one call; every
    query's result is kept, so a card's query is embedded and scored once however often
    it is shown."""

    CACHED = 512  # query results kept (a few hundred cards of one session)
    RESCORE = 256  # at least this many first-pass candidates are re-scored exactly
    # ... and at least 1 in this many passages: on 11.5k real MiniLM sentence vectors, 2%
    # re-scored keep 99.1% of the exact top 10 (bench/dense_recall.py)
    RESCORE_SHARE = 50

    def __init__(self, ws: Workspace, embedder: Embedder):
        self.embedder = embedder
        vectors = store.vectors(ws, embedder.name)
        self.ids: list[tuple[str, str]] = []
        rows: list[bytes] = []
        for pid, revision, text in store.current_passages(ws):
            vec = vectors.get(sha256_hex(text))
            if vec is not None:
                self.ids.append((pid, revision))
                rows.append(vec)
        self.matrix = (np.frombuffer(b"".join(rows), dtype="<f4").reshape(len(rows), -1)
                       if rows else np.zeros((0, 1), dtype=np.float32))
        # the sign bits one 64-bit word of dimensions per row, passages along each row, so
        # a query's distances are a few whole-array passes
        self._codes = (np.ascontiguousarray(sign_codes(self.matrix).T)
                       if _POPCOUNT and len(rows) > 2 * self.RESCORE else None)
        self._found: dict[tuple[str, int], list[tuple[str, str, float]]] = {}
        self._lock = threading.Lock()  # the app's card and prefetch workers share the index

    def search(self, query: str, k: int = 10) -> list[tuple[str, str, float]]:
        """(passage id, revision, cosine) of the `k` nearest current passages."""
        return self.search_many([query], k)[0]

    def search_many(self, queries: Sequence[str], k: int = 10) -> list[list[tuple[str, str, float]]]:
        """`search` for each of `queries`; the ones not seen before embedded in one call."""
        with self._lock:
            self._score([q for q in dict.fromkeys(queries) if (q, k) not in self._found and q.strip()], k)
            return [self._found.get((q, k), []) for q in queries]

    def candidates(self, vec: np.ndarray, k: int) -> np.ndarray | None:
        """Row numbers, ascending, of the passages the first pass keeps for the unit vector
        `vec`: the nearest by Hamming distance, ties in corpus order; None without a first
        pass (every row is scored)."""
        if self._codes is None:
            return None
        n = len(self.ids)
        keep = min(n, max(k, self.RESCORE, n // self.RESCORE_SHARE))
        query = sign_codes(vec[None, :])[0]
        distance = np.bitwise_count(self._codes[0] ^ query[0]).astype(np.uint16)
        for word in range(1, len(query)):
            distance += np.bitwise_count(self._codes[word] ^ query[word])
        # the distance that reaches `keep` passages: all the nearer ones, and of the
        # passages at that distance the first in corpus order
        reached = np.cumsum(np.bincount(distance))
        edge = int(np.searchsorted(reached, keep))
        nearer = np.flatnonzero(distance < edge)
        at_edge = np.flatnonzero(distance == edge)[:keep - len(nearer)]
        return np.sort(np.concatenate([nearer, at_edge]))

    def _score(self, todo: list[str], k: int) -> None:
        if todo and self.ids:
            vectors = self.embedder.embed(todo)
            if vectors.shape[1] != self.matrix.shape[1]:
                raise CuratorError(f"the query vector has {vectors.shape[1]} dimensions, the stored ones "
                                   f"{self.matrix.shape[1]}: was the model changed under the same name?")
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors = (vectors / np.where(norms == 0, 1, norms)).astype(np.float32)
            for query, vec in zip(todo, vectors, strict=True):
                picked = self.candidates(vec, k)
                # einsum, not `@`: numpy's BLAS runs a product of this size on worker
                # threads that then spin, and their CPU is taken from the model's forward
                # pass and BM25 (measured: the embedding at 1.5-2x the CPU after it)
                exact = np.einsum("ij,j->i", self.matrix if picked is None else self.matrix[picked], vec)
                if picked is None:  # every row scored: its top k
                    keep = min(k, len(exact))
                    picked = np.sort(np.argpartition(-exact, keep - 1)[:keep])
                    exact = exact[picked]
                order = np.argsort(-exact, kind="stable")[:k]
                if len(self._found) >= self.CACHED:
                    del self._found[next(iter(self._found))]  # the oldest
                self._found[(query, k)] = [(self.ids[picked[i]][0], self.ids[picked[i]][1], float(exact[i]))
                                           for i in order]


def sign_codes(matrix: np.ndarray) -> np.ndarray:
    """Each row's signs (bit set where the value is > 0) packed into 64-bit words."""
    bits = np.packbits(matrix > 0, axis=1)
    pad = -bits.shape[1] % 8
    if pad:
        bits = np.pad(bits, ((0, 0), (0, pad)))
    return np.ascontiguousarray(bits).view(np.uint64)


# Built indexes by (workspace root, model): a second Pool of the same workspace (the review
# app's reader connection, after `preload` ran on the command's) reuses the matrix, unless
# the corpus or its vectors changed since (then it is built again).
_INDEXES: dict[tuple[str, str], tuple[tuple[str | None, int], DenseIndex]] = {}


def index_for(ws: Workspace, embedder: Embedder) -> DenseIndex:
    """The dense index of the workspace's current passages for `embedder`'s model."""
    key = (str(ws.root.resolve()), embedder.name)
    with ws.lock:
        version = (ws.meta("corpus_version"), store.count(ws, embedder.name))
    cached = _INDEXES.get(key)
    if cached is not None and cached[0] == version:
        return cached[1]
    index = DenseIndex(ws, embedder)
    _INDEXES[key] = (version, index)
    return index


def preload(ws: Workspace) -> DenseIndex | None:
    """Load the configured dense retriever (the local model, the workspace's vectors) and
    embed one query, so the first card waits for none of it: `curator review` calls this
    before the app starts. None when `[suggest] dense` is "none"."""
    embedder = embedder_for(ws.config)
    if embedder is None:
        return None
    index = index_for(ws, embedder)
    index.search("warm up", ws.config.suggest.depth)
    return index

"""Dense retrieval: passage embeddings from an OpenAI-compatible `/v1/embeddings` endpoint
(the `[model]` client settings generation uses) or a local sentence-transformers model
(the `dense` extra), stored in the workspace and searched exactly (cosine, numpy).

`index_corpus` embeds only passage texts whose (text hash, model) has no vector yet, so a
`corpus add` after an edit embeds the changed passages alone.
"""

from __future__ import annotations

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


class LocalEmbedder:
    """A sentence-transformers model by name or path (install the `dense` extra)."""

    def __init__(self, model: str):
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise CuratorError("[suggest] dense = \"local\" needs sentence-transformers",
                               "Install the extra: pip install 'curator-evalsets[dense]'.") from None
        self.name = model
        try:
            self._model = SentenceTransformer(model, device="cpu")
        except (OSError, ValueError) as exc:
            raise CuratorError(f"cannot load the sentence-transformers model {model!r}: {exc}") from None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self._model.encode(list(texts), batch_size=64, show_progress_bar=False), dtype=np.float32)


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
    return LocalEmbedder(s.embedding_model)


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


class DenseIndex:
    """The current passages' vectors of one model as a matrix; `search` is an exact cosine
    top-k (one matrix-vector product: ~10 ms for 100k x 384 floats)."""

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

    def search(self, query: str, k: int = 10) -> list[tuple[str, str, float]]:
        """(passage id, revision, cosine) of the `k` nearest current passages."""
        if not self.ids or not query.strip():
            return []
        q = _unit(self.embedder.embed([query])[0])
        if q.shape[0] != self.matrix.shape[1]:
            raise CuratorError(f"the query vector has {q.shape[0]} dimensions, the stored ones "
                               f"{self.matrix.shape[1]}: was the model changed under the same name?")
        scores = self.matrix @ q
        k = min(k, len(self.ids))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(self.ids[i][0], self.ids[i][1], float(scores[i])) for i in top]

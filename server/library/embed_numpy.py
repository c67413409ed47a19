"""all-MiniLM-L6-v2's forward pass in plain numpy: the encoder that needs no runtime beyond numpy
(embed_onnx.py runs the same weights on onnxruntime when it is installed)."""

from __future__ import annotations

import contextlib
import ctypes
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from .embedder import EmbeddingError

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


class BlasSingleThread:
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


single_thread_blas = BlasSingleThread()


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


class MiniLM:
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
            raise EmbeddingError(f"model weights are not a BERT encoder ({exc!r})") from exc
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

"""MiniLM on onnxruntime: the same safetensors weights as the numpy encoder, as an ONNX graph built in memory.

Why: one query through the numpy encoder costs ~9 ms, most of it small-matrix GEMMs and per-operation
overhead; onnxruntime runs the identical arithmetic in ~3-4 ms and batches about twice as fast. The graph is
written from the packaged weights as ONNX bytes by ``onnx_wire`` (no torch, no model hub, and no ``onnx``
package, whose import with protobuf was ~0.3 s of a start with an empty cache), so the vectors are the
reference ones. numpy stays the fallback when onnxruntime cannot be imported.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from . import page_cache

log = logging.getLogger(__name__)

GRAPH_VERSION = 5  # bump when _build_graph or _save_graph changes: cached graph files carry it in their name
OPSET = 17  # LayerNormalization is an ONNX operator from opset 17
CONTRIB = "com.microsoft"  # onnxruntime's own operators (see _build_graph's fused)
LAYER_NORM_EPS = 1e-12
# Two threads per call, which spin while a call runs and stop when it returns. A query is bound by streaming the
# 42 MB of layer weights, which two cores do faster; measured in separate processes, 3 runs each, 48 templates:
# search p50 4.7-5.6 ms / p95 6.7-8.3 against 5.4-5.7 / 7.9-8.3 on one thread. Spinning inside a call saves the
# futex wake-up of each of the graph's ~54 operators: query embedding p50 4.5 -> 3.7 ms (200 queries x 3), and
# in-process search p50 6.5-7.4 -> 4.8-5.4 ms (two sessions, paired, 2 x 400 queries). onnxruntime's default
# keeps spinning after the call, which was worse than not spinning at all (search p50 9-10 ms, p95 ~18): its
# idle threads keep the cores from LanceDB's legs, from BLAS and from any other session (~50 ms of CPU in the
# 0.2 s after a call), hence ``force_spinning_stop``. Batches run one sub-batch after another at ~23-28 texts/s,
# the rate two one-thread calls side by side had; spinning does not change it. The second thread costs CPU
# (~1.7-2 CPU-seconds per second of a query), and with 2-4 searches at once on 2 cores spinning was ~2-7 % slower
# in queries a second than sleeping, so a server answering many searches at once on few cores may do better
# with one thread: ``ai.local_threads`` (OIC_AI_LOCAL_THREADS) overrides this.
THREADS = min(2, os.cpu_count() or 1)


def available() -> bool:
    """True when onnxruntime imports (cheap: find_spec only); the graphs are written by ``onnx_wire``."""
    import importlib.util

    return importlib.util.find_spec("onnxruntime") is not None


def session_options(threads: int, spin: bool = True) -> Any:
    """Every session's options here: ``threads`` per call, which spin only during a call (see THREADS; ``spin``
    False: they sleep between operators), one inter-op thread (the graphs are chains)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")  # see THREADS
    options.add_session_config_entry("session.force_spinning_stop", "1")
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return options


class OnnxMiniLM:
    """BERT encoder with mean pooling: (ids, mask) -> (batch, hidden), not normalised, like ``embed_numpy.MiniLM.encode``."""

    def __init__(self, model: str | bytes, words: np.ndarray, threads: int = THREADS, spin: bool = True) -> None:
        import onnxruntime as ort

        options = session_options(threads, spin)
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # The arena, memory patterns and pre-packed GEMM weights stay on (onnxruntime's defaults): measured
        # here, turning them off to save memory doubled query time and *raised* the peak during batches.
        self._session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        self._words = words
        self.hidden = int(words.shape[1])

    def encode(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        (pooled,) = self._session.run(None, {"token_embeddings": self._words[ids],
                                             "attention_mask": mask.astype(np.int64, copy=False)})
        return np.asarray(pooled, dtype=np.float32)

    @classmethod
    def load(cls, weights_path: Path, digest: str, cache_dir: Path | None, heads: int = 12,
             threads: int = THREADS, spin: bool = True) -> OnnxMiniLM:
        """The graph is built once per weights digest into ``cache_dir`` and loaded from there later.

        Building consumes the weights tensor by tensor, each written to the weights file as it comes, so the
        load never holds two full copies in Python (measured: ~0.35 s to build, write and load). Without a
        cache dir the graph, its weights inside, is built in memory on every start.
        """
        words = word_table(weights_path)
        target = cache_dir / f"minilm-{digest[:16]}-v{GRAPH_VERSION}.onnx" if cache_dir else None
        if target is not None and target.is_file() and target.with_suffix(".data").is_file():
            try:
                return cls(str(target), words, threads, spin)
            except Exception as exc:  # a truncated or foreign file: rebuild it
                log.warning("rebuilding the ONNX embedding graph %s (%s)", target, exc)
        from safetensors.numpy import load_file

        def built(model: str | bytes | None = None) -> OnnxMiniLM:
            try:
                return cls(model or _build_graph(load_file(str(weights_path)), heads), words, threads, spin)
            except Exception as exc:  # an onnxruntime without its transformer operators (see _build_graph)
                log.warning("onnxruntime refused the fused encoder graph (%s); running standard operators", exc)
                return cls(_build_graph(load_file(str(weights_path)), heads, fused=False), words, threads, spin)

        if target is None:
            return built()
        try:
            _save_graph(load_file(str(weights_path)), heads, target)
        except OSError as exc:
            log.warning("cannot cache the ONNX embedding graph in %s (%s); built in memory", cache_dir, exc)
            return built()
        return built(str(target))


def _save_graph(weights: dict[str, np.ndarray], heads: int, target: Path) -> None:
    """The graph built into ``target`` beside its weights in ``<name>.data``, both moved into place whole; other
    versions removed.

    Why external weights: onnxruntime then reads them from the file while it pre-packs them, instead of
    keeping the graph's own copy next to the packed one (measured: session 127 -> 98 MB, same speed).
    """
    import tempfile

    data = target.with_suffix(".data")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".graph-") as tmp:
        staged = Path(tmp) / target.name
        with open(staged.with_name(data.name), "wb") as handle:
            graph = _build_graph(weights, heads, _WeightsFile(handle, data.name))
        staged.write_bytes(graph)
        os.replace(staged.with_name(data.name), data)  # the weights first: the graph names them
        os.replace(staged, target)
    for stale in [*target.parent.glob("minilm-*.onnx"), *target.parent.glob("minilm-*.data")]:
        if stale not in (target, data):  # other versions or weights: ~45-90 MB each
            stale.unlink(missing_ok=True)


class _WeightsFile:
    """An initializer store (see :func:`_build_graph`): tensors of ``EXTERNAL_MIN`` bytes and more go to
    ``handle``, each at an offset aligned to ``ALIGN`` (so onnxruntime may map them), the graph naming the file
    ``location`` beside it; smaller ones stay in the graph."""

    EXTERNAL_MIN = 1024
    ALIGN = 4096

    def __init__(self, handle: Any, location: str) -> None:
        self.handle, self.location, self.offset = handle, location, 0

    def __call__(self, name: str, values: np.ndarray) -> bytes:
        from . import onnx_wire as wire

        if values.nbytes < self.EXTERNAL_MIN:
            return wire.array(name, values)
        pad = -self.offset % self.ALIGN
        raw = wire.little_endian(values)
        self.handle.write(b"\0" * pad + raw)
        self.offset += pad
        entry = wire.external_tensor(name, wire.elem_type(values.dtype), values.shape, self.location, len(raw),
                                     self.offset)
        self.offset += len(raw)
        return entry


WORD_TABLE = "embeddings.word_embeddings.weight"


def word_table(weights_path: Path) -> np.ndarray:
    """The word-embedding table (vocabulary x hidden), memory-mapped from the safetensors file.

    Why outside the graph: it is half the weights (30,522 x 384 floats, 47 MB), and a query reads only its
    own ~20 rows, so mapped pages cost almost no memory where a graph initializer is resident in full.
    Falls back to a copy in memory when the tensor is not little-endian float32.
    """
    with open(weights_path, "rb") as f:
        header_len = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(header_len))
    entry = header[WORD_TABLE]
    start, end = entry["data_offsets"]
    shape = tuple(int(n) for n in entry["shape"])
    if entry["dtype"] == "F32" and end - start == 4 * shape[0] * shape[1]:
        with open(weights_path, "rb") as f:  # a query looks rows up one by one: see page_cache
            page_cache.read_through(f.fileno(), 8 + header_len + start, end - start)
        mapped = np.memmap(weights_path, dtype="<f4", mode="r", offset=8 + header_len + start, shape=shape)
        # As a plain array over the same mapping: np.memmap's own indexing costs ~25 us a query against ~7.
        return mapped.view(np.ndarray)
    from safetensors import safe_open

    with safe_open(str(weights_path), framework="numpy") as tensors:
        return np.ascontiguousarray(tensors.get_tensor(WORD_TABLE), dtype=np.float32)


def _build_graph(w: dict[str, np.ndarray], heads: int, store: Callable[[str, np.ndarray], bytes] | None = None,
                 fused: bool = True) -> bytes:
    """The serialized ONNX model of the encoder, written with ``onnx_wire``; ``store`` makes each initializer's
    TensorProto (default: its values in the graph; :class:`_WeightsFile` writes them to a file).

    ``fused``: each layer as onnxruntime's own transformer operators (``com.microsoft`` Attention,
    SkipLayerNormalization, BiasGelu), 7 nodes a layer instead of 34. Why: a short query is ~220 small
    operators, each dispatched and split over the two threads on its own; fused, the query embedding measured
    p50 ~5.6-6.1 -> ~4.4-5.1 ms on 2 AVX2 cores (batches of long texts, bound by the products, ~5 %), with
    vectors at cosine > 0.99999 to the standard graph's. Without it, standard operators only: for an
    onnxruntime built without them."""
    from . import onnx_wire as wire

    store = store or wire.array
    nodes: list[bytes] = []
    inits: list[bytes] = []
    counter = iter(range(1_000_000))

    def name(prefix: str) -> str:
        return f"{prefix}_{next(counter)}"

    def const(array: np.ndarray, prefix: str = "c") -> str:
        n = name(prefix)
        inits.append(store(n, np.ascontiguousarray(array)))
        return n

    def op(kind: str, inputs: list[str], domain: str = "", **attrs: Any) -> str:
        out = name(kind.lower())
        nodes.append(wire.node(kind, inputs, [out], domain, **attrs))
        return out

    def f32(key: str) -> np.ndarray:
        # pop: each tensor is copied into the graph once and then released, which bounds peak memory
        return np.asarray(w.pop(key), dtype=np.float32)

    hidden = int(w[WORD_TABLE].shape[1])
    head_dim = hidden // heads
    n_layers = 1 + max(int(k.split(".")[2]) for k in w if k.startswith("encoder.layer."))

    def layer_norm(x: str, prefix: str) -> str:
        return op("LayerNormalization", [x, const(f32(prefix + ".weight")), const(f32(prefix + ".bias"))],
                  axis=-1, epsilon=LAYER_NORM_EPS)

    def dense(x: str, prefix: str, scale: float = 1.0) -> str:
        kernel = const((f32(prefix + ".weight") * np.float32(scale)).T)
        return op("Add", [op("MatMul", [x, kernel]), const(f32(prefix + ".bias") * np.float32(scale))])

    def skip_layer_norm(x: str, skip: str, bias: str, prefix: str) -> str:
        """LayerNorm(x + skip + bias), the residual's sum and the norm in one operator."""
        return op("SkipLayerNormalization", [x, skip, const(f32(prefix + ".weight")), const(f32(prefix + ".bias")), bias],
                  CONTRIB, epsilon=LAYER_NORM_EPS)

    def fused_layer(x: str, p: str, mask: str) -> str:
        qkv = [p + f"attention.self.{part}" for part in ("query", "key", "value")]
        attended = op("Attention", [x, const(np.concatenate([f32(n + ".weight").T for n in qkv], axis=1)),
                                    const(np.concatenate([f32(n + ".bias") for n in qkv])), mask],
                      CONTRIB, num_heads=heads)  # scales by 1/sqrt(head size); masked keys' weights underflow to 0
        x = skip_layer_norm(op("MatMul", [attended, const(f32(p + "attention.output.dense.weight").T)]), x,
                            const(f32(p + "attention.output.dense.bias")), p + "attention.output.LayerNorm")
        inter = op("BiasGelu", [op("MatMul", [x, const(f32(p + "intermediate.dense.weight").T)]),
                                const(f32(p + "intermediate.dense.bias"))], CONTRIB)  # exact (erf) GELU, BERT's
        return skip_layer_norm(op("MatMul", [inter, const(f32(p + "output.dense.weight").T)]), x,
                               const(f32(p + "output.dense.bias")), p + "output.LayerNorm")

    # Embeddings: word (looked up by the caller, see word_table) + position (0..L-1) + token type 0, then
    # LayerNorm. Positions 0..L-1 are the first L rows of the table: a Slice with 1-D bounds (ORT's optimiser
    # turns Gather(Range) into a Slice with scalar bounds, which it then refuses at run time).
    w.pop(WORD_TABLE)
    length = op("Slice", [op("Shape", ["token_embeddings"]), const(np.array([1], dtype=np.int64)),
                          const(np.array([2], dtype=np.int64))])
    positions = op("Slice", [const(f32("embeddings.position_embeddings.weight")),
                             const(np.array([0], dtype=np.int64)), length, const(np.array([0], dtype=np.int64))])
    token_type = const(f32("embeddings.token_type_embeddings.weight")[0])
    if fused:
        x = skip_layer_norm("token_embeddings", positions, token_type, "embeddings.LayerNorm")
    else:
        x = layer_norm(op("Add", [op("Add", ["token_embeddings", positions]), token_type]), "embeddings.LayerNorm")

    def standard_layers(x: str, mask_f: str) -> str:
        # Padded keys get -1e9 so their softmax weight underflows to exactly 0, as in the numpy encoder.
        key_bias = op("Mul", [op("Sub", [const(np.array(1.0, dtype=np.float32)), mask_f]),
                              const(np.array(-1e9, dtype=np.float32))])
        key_bias = op("Unsqueeze", [key_bias, const(np.array([1, 2], dtype=np.int64))])  # (B, 1, 1, L)
        split_heads = const(np.array([0, 0, heads, head_dim], dtype=np.int64))
        merge_heads = const(np.array([0, 0, hidden], dtype=np.int64))
        inv_sqrt2 = const(np.array(1.0 / np.sqrt(2.0), dtype=np.float32))
        half = const(np.array(0.5, dtype=np.float32))
        one = const(np.array(1.0, dtype=np.float32))

        def heads_of(t: str) -> str:
            return op("Transpose", [op("Reshape", [t, split_heads])], perm=[0, 2, 1, 3])  # (B, h, L, d)

        for i in range(n_layers):
            p = f"encoder.layer.{i}."
            q = heads_of(dense(x, p + "attention.self.query", scale=1.0 / np.sqrt(head_dim)))
            k = heads_of(dense(x, p + "attention.self.key"))
            v = heads_of(dense(x, p + "attention.self.value"))
            scores = op("Add", [op("MatMul", [q, op("Transpose", [k], perm=[0, 1, 3, 2])]), key_bias])
            context = op("MatMul", [op("Softmax", [scores], axis=-1), v])
            context = op("Reshape", [op("Transpose", [context], perm=[0, 2, 1, 3]), merge_heads])
            x = layer_norm(op("Add", [dense(context, p + "attention.output.dense"), x]),
                           p + "attention.output.LayerNorm")
            inter = dense(x, p + "intermediate.dense")
            # Exact GELU: 0.5 * x * (1 + erf(x / sqrt 2)), BERT's activation.
            gelu = op("Mul", [op("Mul", [inter, half]), op("Add", [op("Erf", [op("Mul", [inter, inv_sqrt2])]), one])])
            x = layer_norm(op("Add", [dense(gelu, p + "output.dense"), x]), p + "output.LayerNorm")
        return x

    mask_f = op("Cast", ["attention_mask"], to=wire.FLOAT)
    if fused:
        key_mask = op("Cast", ["attention_mask"], to=wire.INT32)  # Attention's raw (B, L) mask
        for i in range(n_layers):
            x = fused_layer(x, f"encoder.layer.{i}.", key_mask)
    else:
        x = standard_layers(x, mask_f)

    weights_bl1 = op("Unsqueeze", [mask_f, const(np.array([2], dtype=np.int64))])  # (B, L, 1)
    summed = op("ReduceSum", [op("Mul", [x, weights_bl1]), const(np.array([1], dtype=np.int64))], keepdims=0)
    counts = op("Max", [op("ReduceSum", [weights_bl1, const(np.array([1], dtype=np.int64))], keepdims=0),
                        const(np.array(1e-9, dtype=np.float32))])
    nodes.append(wire.node("Div", [summed, counts], ["pooled"]))
    return wire.model(
        "minilm", nodes,
        [wire.value("token_embeddings", wire.FLOAT, ["batch", "length", hidden]),
         wire.value("attention_mask", wire.INT64, ["batch", "length"])],
        [wire.value("pooled", wire.FLOAT, ["batch", hidden])], inits, opset=OPSET, producer="image-composer-mcp",
        domains=[(CONTRIB, 1)] if fused else [])

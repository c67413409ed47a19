from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

from bench import reference_checkout

os.environ.setdefault("LANCEDB_LOG", "error")

# Nothing a test runs may write into the real home: the default cache, saved templates and the user
# config file follow these (server/core/paths.py, platformdirs), in this process and in every subprocess.
_TEST_HOME = Path(tempfile.mkdtemp(prefix="oic-test-home-"))
for _var in ("XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME"):
    os.environ[_var] = str(_TEST_HOME / _var.lower())
atexit.register(shutil.rmtree, _TEST_HOME, True)

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
# Parity tests run against an os-image-composer checkout: ../shared/reference/os-image-composer, or any
# clone named by OIC_AI_REFERENCE_DIR (git clone https://github.com/open-edge-platform/os-image-composer).
REFERENCE = reference_checkout()
REFERENCE_TEMPLATES = REFERENCE / "image-templates"
LIBRARY = REPO / "image-templates"


def needs_reference() -> None:
    if not REFERENCE_TEMPLATES.is_dir():
        pytest.skip(f"no os-image-composer checkout at {REFERENCE}: reference-corpus test skipped "
                    "(set OIC_AI_REFERENCE_DIR to a clone to run it)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """tests/e2e/ starts real processes (stdio, HTTP, the CLI, replicas, installs): all of it is `slow`, so
    `pytest -m "not slow"` is the quick loop over tests/unit/ and tests/mcp/; `make test` still runs all."""
    e2e = Path(__file__).resolve().parent / "e2e"
    for item in items:
        if item.path.is_relative_to(e2e):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def agent_results_load_upstream(monkeypatch: pytest.MonkeyPatch):
    """Every template the agent returns in any test: if we call it valid, os-image-composer's own schema
    file (plain jsonschema, tests/upstream_schema.py) must accept it too, and no generated or refined one
    may carry metadata fields upstream refuses."""
    import image_composer_mcp.server.agent.results as agent

    from tests.upstream_schema import refusals_text

    seen: list = []
    original = agent.AgentResult.__init__

    def record(self, *args, **kwargs) -> None:  # noqa: ANN001
        original(self, *args, **kwargs)
        seen.append(self)

    monkeypatch.setattr(agent.AgentResult, "__init__", record)
    yield
    problems = []
    for result in seen:
        if not result.yaml:
            continue
        refused = refusals_text(result.yaml)
        if result.valid and refused:
            problems.append(f"revision {result.revision} called valid, but upstream refuses it: {refused[:3]}")
        if result.mode in ("generate", "refine"):  # questions and reverts hand back what was there
            problems += [f"revision {result.revision}: {r}" for r in refused if r.startswith("metadata")]
    assert not problems, "\n".join(problems)


class HashEmbedder:
    """Deterministic bag-of-words embedder for tests of index bookkeeping (not of retrieval quality)."""

    def __init__(self, model_id: str = "test:hash", dimensions: int = 32):
        self.model_id = model_id
        self.dimensions = dimensions
        self.calls: list[int] = []

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dimensions, dtype=np.float32)
        for word in text.lower().split():
            v[int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dimensions] += 1.0
        n = np.linalg.norm(v)
        return v / n if n else v

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls.append(len(texts))
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self.dimensions), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._vec(text)


@pytest.fixture
def hash_embedder() -> HashEmbedder:
    return HashEmbedder()


@pytest.fixture(scope="session")
def reference_engine(tmp_path_factory: pytest.TempPathFactory):
    """One engine over the real reference corpus with the real local embedder, shared by the session."""
    needs_reference()
    from image_composer_mcp.server.core.config import load_settings
    from image_composer_mcp.server.engine import build_engine

    cache = tmp_path_factory.mktemp("ref-cache")
    settings = load_settings(env={"OIC_AI_TEMPLATES_DIR": str(REFERENCE_TEMPLATES), "OIC_AI_CACHE_DIR": str(cache)})
    engine = build_engine(settings)
    engine.ready()
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def library_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("lib-cache")


@pytest.fixture(scope="session")
def library_engine(library_cache: Path):
    """The bundled image-templates/ library with the real local embedder."""
    from image_composer_mcp.server.core.config import load_settings
    from image_composer_mcp.server.engine import build_engine

    settings = load_settings(env={"OIC_AI_CACHE_DIR": str(library_cache)})
    engine = build_engine(settings)
    engine.ready()
    yield engine
    engine.close()


# The JSON-RPC `initialize` request of the tests that speak the protocol by hand (raw stdio and HTTP).
RAW_INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}


# The two-partition UEFI layout (ESP + root) that the test templates share.
UEFI_PARTITIONS = """\
    - id: boot
      type: esp
      start: 1MiB
      end: 513MiB
      fsType: fat32
      mountPoint: /boot/efi
    - id: rootfs
      type: linux-root-amd64
      start: 513MiB
      end: "0"
      fsType: ext4
      mountPoint: /
"""

MINIMAL_TEMPLATE = """\
metadata:
  description: {description}
  keywords: [{keywords}]
image:
  name: {name}
  version: "1.0.0"
target:
  os: ubuntu
  dist: ubuntu24
  arch: x86_64
  imageType: raw
disk:
  name: {name}
  size: 4GiB
  partitionTableType: gpt
  partitions:
""" + UEFI_PARTITIONS + """systemConfig:
  name: {name}
  packages: [{packages}]
"""


def write_template(directory: Path, name: str, description: str = "test image", keywords: str = "test",
                   packages: str = "openssh-server") -> Path:
    path = directory / f"{name}.yml"
    path.write_text(MINIMAL_TEMPLATE.format(name=name, description=description, keywords=keywords,
                                            packages=packages))
    return path

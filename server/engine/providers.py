"""What the engine is built from: the providers a caller may inject (tests, benchmarks, embedders of the
server) and, for each one not injected, how it is made from the settings.

Nothing here loads at import: numpy, LanceDB, the ONNX runtime and the LLM SDKs are imported when a provider
is first made.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..core import paths
from ..core.config import AISettings

if TYPE_CHECKING:
    from ..agent.conversations import ConversationStore
    from ..library.embedder import Embedder
    from ..llm.chat import OllamaProvider, OpenAIProvider
    from ..packages.verifier import PackageVerifier

log = logging.getLogger(__name__)

ChatPair = tuple["OllamaProvider | None", "OpenAIProvider | None"]


@dataclass(frozen=True)
class Providers:
    """Parts to use instead of building them from the settings; None means "build it from the settings".

    ``clock`` drives the conversation store and the package cache (their expiry and freshness), and the
    engine's uptime; ``fallback_cache_dir`` is where the cache goes when the configured one is not writable.
    """

    embedder: Embedder | None = None
    chat: ChatPair | None = None  # (ollama, openai), as chat_from_settings makes them
    conversations: ConversationStore | None = None
    verifier: PackageVerifier | None = None
    clock: Callable[[], float] | None = None
    fallback_cache_dir: Path = field(default_factory=paths.user_cache_dir)


def usable_cache_dir(preferred: Path, fallback: Path) -> tuple[Path | None, list[str]]:
    """The first writable cache dir among the configured one and the fallback; None means in-memory."""
    warnings: list[str] = []
    for candidate in (preferred, fallback):
        try:
            candidate.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=candidate, prefix=".probe-", delete=True) as fh:
                fh.write(b"x" * 4096)
                fh.flush()
            if candidate != preferred:
                warnings.append(f"cache directory {preferred} is not writable; using {candidate} instead "
                                "(set OIC_AI_CACHE_DIR to choose another)")
            return candidate, warnings
        except OSError as exc:
            warnings.append(f"cache directory {candidate} unusable: {exc.strerror or exc}")
    warnings.append("no writable cache directory: the index lives in a temporary folder and is rebuilt each start")
    return None, warnings


def embedder_from_settings(s: AISettings) -> tuple[Embedder, str | None]:
    """The configured embedder, and why semantic search is off when the local model is missing (then the
    embedder is keyword-only: search still answers by BM25, packages and target)."""
    from ..library.embed_local import KeywordOnlyEmbedder, local_model_missing
    from ..library.embeddings import create_embedder

    if s.embedding_provider == "local":
        why = local_model_missing(s.local_model_dir)
        if why is not None:
            return KeywordOnlyEmbedder(), (f"semantic search is off (ranking by keywords, packages and target "
                                           f"only): {why}")
    embedder = create_embedder(
        s.embedding_provider,
        ollama_base_url=s.ollama.base_url,
        ollama_model=s.ollama.embedding_model,
        openai_model=s.openai.embedding_model,
        openai_api_key=s.openai.api_key.get_secret_value() if s.openai.api_key else None,
        openai_base_url=s.openai.base_url,
        timeout=min(s.ollama.timeout, 60.0) if s.embedding_provider == "ollama" else s.openai.timeout,
        local_model_dir=s.local_model_dir,
        local_runtime=s.local_runtime,
        local_threads=s.local_threads,
        # The ONNX graph depends only on the weights: one per user, so every cache dir (and every
        # warm start of a new one) reuses it instead of building it again (~1 s).
        local_graph_dir=paths.user_cache_dir() / "models",
    )
    return embedder, None


def chat_from_settings(s: AISettings) -> tuple[OllamaProvider, OpenAIProvider]:
    """(ollama, openai) chat providers as configured; whether each is usable is decided when one is picked."""
    from ..llm.chat import OllamaProvider, OpenAIProvider

    key = s.openai.api_key.get_secret_value() if s.openai.api_key else None
    ollama = OllamaProvider(s.ollama.base_url, s.ollama.model, timeout=s.ollama.timeout)
    openai = OpenAIProvider(key, s.openai.model, base_url=s.openai.base_url, timeout=s.openai.timeout)
    return ollama, openai


def verifier_from_settings(s: AISettings, cache_dir: Path | None,
                           clock: Callable[[], float] | None = None) -> PackageVerifier:
    """The package verifier, its repository indexes cached under ``cache_dir`` (a temporary one without)."""
    from ..packages.verifier import PackageVerifier

    base = cache_dir if cache_dir is not None else Path(tempfile.mkdtemp(prefix="oic-pkg-"))
    p = s.packages
    return PackageVerifier(base / "packages", sources=p.sources or None, ttl_seconds=p.ttl, timeout=p.timeout,
                           offline=p.offline, allow_template_repositories=p.allow_template_repositories, clock=clock)

"""Choosing the embedder: the configured provider is in-process MiniLM (embed_local.py, default and
offline), Ollama or an OpenAI-compatible API (embed_remote.py, official SDKs); the interface is embedder.py.
"""

from __future__ import annotations

from pathlib import Path

from .embed_local import LocalEmbedder
from .embedder import Embedder, EmbeddingError

PROVIDERS = ("local", "ollama", "openai")


def create_embedder(provider: str, *, ollama_base_url: str, ollama_model: str, openai_model: str,
                    openai_api_key: str | None, openai_base_url: str | None, timeout: float,
                    local_model_dir: str | None = None, local_runtime: str = "auto",
                    local_graph_dir: Path | None = None, local_threads: int = 0) -> Embedder:
    """Build the configured embedder; nothing is loaded or contacted until the first embed call."""
    name = (provider or "local").strip().lower()
    if name == "local":
        return LocalEmbedder(local_model_dir, runtime=local_runtime, graph_dir=local_graph_dir,
                             threads=local_threads)
    # The remote embedders load httpx (~20-120 ms, depending on what is already imported): only when chosen.
    if name == "ollama":
        from .embed_remote import OllamaEmbedder

        return OllamaEmbedder(ollama_base_url, ollama_model, timeout)
    if name == "openai":
        from .embed_remote import OpenAIEmbedder

        return OpenAIEmbedder(openai_model, openai_api_key, openai_base_url, timeout)
    raise EmbeddingError(f"unknown embedding provider {provider!r}: use one of {', '.join(PROVIDERS)} "
                         "(OIC_AI_EMBEDDING_PROVIDER)")

"""The embedding provider interface: what every embedder offers, its error type, and row normalisation.

Every embedder returns L2-normalised float32 arrays of shape (n, dimensions) and carries a stable
``model_id`` that the index stores beside each vector, so vectors from different models are never mixed.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np


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


def normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    # Same clamp as torch's F.normalize: an all-zero vector stays zero instead of becoming NaN.
    return vectors / np.maximum(norms, 1e-12)

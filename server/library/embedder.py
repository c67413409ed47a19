"""The embedding provider interface: what every embedder offers, its error type, and row normalisation.

Every embedder returns L2-normalised float32 arrays of shape (n, dimensions) and carries a stable
``model_id`` that the index stores beside each vector, so vectors from different models are never mixed.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Protocol

import numpy as np

_inference = threading.local()


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


@contextlib.contextmanager
def on_inference(callback: Callable[[], None]) -> Iterator[None]:
    """Call ``callback`` on this thread when an embedder called inside the block starts its model run, the
    point from which it holds no GIL (at the latest when the block ends: a cached vector, or an embedder that
    does not say). Search uses it to start its other work on a second core only then: started earlier, that
    work held the GIL the query's tokenising needed and the two ran one after the other."""
    _inference.callback = callback
    try:
        yield
    finally:
        pending = getattr(_inference, "callback", None)
        _inference.callback = None
        if pending is not None:
            pending()


def inference_starts() -> None:
    """Called by an embedder right before its model run releases the GIL (see :func:`on_inference`)."""
    callback = getattr(_inference, "callback", None)
    if callback is not None:
        _inference.callback = None
        callback()

"""The glossary's concept labels, embedded once per model and kept in the cache dir.

Why: embedding the ~100 labels took ~75 ms of ORT time on every start, on the path to the first result
(the engine is ready only once they are embedded). They depend only on the model and the labels' text, so
a file keyed by both answers every later start; any difference, or a file that cannot be read, and they
are embedded again.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from . import npz_file

log = logging.getLogger(__name__)

FILE = "concept-labels.npz"


def load(path: Path, model_id: str, labels: list[str]) -> np.ndarray | None:
    """The vectors of ``labels`` stored at ``path`` by ``model_id``, or None."""
    kept = npz_file.read_kept(path, "concept label vectors")
    if kept is None:
        return None
    meta, arrays = kept
    vectors = arrays.get("vectors")
    if meta != {"model_id": model_id, "labels": labels} or vectors is None or vectors.dtype != np.float32 \
            or vectors.ndim != 2 or len(vectors) != len(labels):
        return None
    return vectors


def save(path: Path, model_id: str, labels: list[str], vectors: np.ndarray) -> None:
    """Keep the vectors for the next start; a failure only costs that start ~75 ms."""
    try:
        npz_file.write(path, {"model_id": model_id, "labels": labels},
                       {"vectors": np.asarray(vectors, dtype=np.float32)}, prefix=".labels-")
    except OSError as exc:
        log.info("concept label vectors not kept: %s", exc)

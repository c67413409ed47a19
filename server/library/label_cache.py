"""The glossary's concept labels, embedded once per model and kept in the cache dir.

Why: embedding the ~100 labels took ~75 ms of ORT time on every start, on the path to the first result
(the engine is ready only once they are embedded). They depend only on the model and the labels' text, so
a file keyed by both answers every later start; any difference, or a file that cannot be read, and they
are embedded again.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

FILE = "concept-labels.npz"


def load(path: Path, model_id: str, labels: list[str]) -> np.ndarray | None:
    """The vectors of ``labels`` stored at ``path`` by ``model_id``, or None."""
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(bytes(data["meta"]).decode())
            vectors = np.asarray(data["vectors"])
    except FileNotFoundError:
        return None
    except Exception as exc:  # noqa: BLE001 - an unreadable cache file is re-made, never an error
        log.info("concept label vectors at %s not used: %s", path, exc)
        return None
    if meta != {"model_id": model_id, "labels": labels} or vectors.dtype != np.float32 \
            or vectors.ndim != 2 or len(vectors) != len(labels):
        return None
    return vectors


def save(path: Path, model_id: str, labels: list[str], vectors: np.ndarray) -> None:
    """Write atomically (several servers may share the cache dir); a failure only costs the next start."""
    blob = np.frombuffer(json.dumps({"model_id": model_id, "labels": labels}).encode(), dtype=np.uint8)
    try:
        fd, temp = tempfile.mkstemp(prefix=".labels-", suffix=".npz", dir=path.parent)
    except OSError as exc:
        log.info("concept label vectors not kept: %s", exc)
        return
    try:
        with os.fdopen(fd, "wb") as handle:
            np.savez(handle, meta=blob, vectors=np.asarray(vectors, dtype=np.float32))
        os.replace(temp, path)
    except OSError as exc:
        Path(temp).unlink(missing_ok=True)
        log.info("concept label vectors not kept: %s", exc)

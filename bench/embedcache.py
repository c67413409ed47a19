"""A persistent text -> vector cache for the benchmark, so reruns embed nothing they embedded before."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

BATCH = 32


def text_key(model_id: str, text: str) -> str:
    return hashlib.sha256(f"{model_id}\0{text}".encode()).hexdigest()[:32]


class EmbeddingCache:
    """Vectors keyed by (model id, text), stored as one .npy plus a JSON list of keys."""

    def __init__(self, directory: Path, embedder: Any):
        self.directory = directory
        self.embedder = embedder
        self.model_id = str(embedder.model_id)
        self._keys: dict[str, int] = {}
        self._vectors = np.zeros((0, 0), dtype=np.float32)
        self.embedded = 0  # texts embedded by this process
        self.embed_seconds = 0.0
        self._load()

    @property
    def _npy(self) -> Path:
        return self.directory / "vectors.npy"

    @property
    def _json(self) -> Path:
        return self.directory / "keys.json"

    def _load(self) -> None:
        if self._npy.is_file() and self._json.is_file():
            try:
                keys = json.loads(self._json.read_text())
                vectors = np.load(self._npy)
                if len(keys) == len(vectors):
                    self._keys = {k: i for i, k in enumerate(keys)}
                    self._vectors = vectors.astype(np.float32, copy=False)
            except (OSError, ValueError):
                log.warning("embedding cache at %s unreadable; starting empty", self.directory)

    def _save(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        keys = sorted(self._keys, key=self._keys.__getitem__)
        tmp_npy = self._npy.with_suffix(".tmp.npy")
        np.save(tmp_npy, self._vectors)
        os.replace(tmp_npy, self._npy)
        tmp_json = self._json.with_suffix(".tmp")
        tmp_json.write_text(json.dumps(keys))
        os.replace(tmp_json, self._json)

    def missing(self, texts: list[str]) -> int:
        return len({t for t in texts if text_key(self.model_id, t) not in self._keys})

    def get(self, texts: list[str], label: str = "texts") -> np.ndarray:
        """Vectors for ``texts`` (n x d), embedding (and saving) the ones not cached yet."""
        todo = list(dict.fromkeys(t for t in texts if text_key(self.model_id, t) not in self._keys))
        if todo:
            # Similar lengths per batch: padding is wasted work in the numpy forward pass.
            todo.sort(key=len)
            log.info("embedding %d %s (cached: %d)", len(todo), label, len(texts) - len(todo))
            started = time.perf_counter()
            new: list[np.ndarray] = []
            for i in range(0, len(todo), BATCH):
                new.append(np.asarray(self.embedder.embed(todo[i:i + BATCH]), dtype=np.float32))
                done = min(i + BATCH, len(todo))
                if done % (BATCH * 4) == 0 or done == len(todo):
                    rate = done / (time.perf_counter() - started)
                    log.info("  %d/%d %s embedded (%.1f texts/s)", done, len(todo), label, rate)
            self.embed_seconds += time.perf_counter() - started
            self.embedded += len(todo)
            block = np.concatenate(new)
            base = len(self._vectors)
            self._vectors = block if base == 0 else np.concatenate([self._vectors, block])
            for j, text in enumerate(todo):
                self._keys[text_key(self.model_id, text)] = base + j
            self._save()
        return self._vectors[[self._keys[text_key(self.model_id, t)] for t in texts]]

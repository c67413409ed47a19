"""Table upkeep after writes: folding new rows into the full-text and vector indexes (optimize), and the
switch to (or retraining of) the IVF_SQ vector index when the row count calls for it. The half of
:class:`IndexSync` that keeps the table fast rather than current.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta
from typing import Any

from .lance_table import VECTOR_INDEX_MIN_ROWS, VECTOR_INDEX_PREFIX, VECTOR_INDEX_REGROW, retry_on_conflict
from .templates import TemplateRecord

log = logging.getLogger(__name__)

BACKGROUND_OPTIMIZE_MIN = 2_000  # from this many templates a sync's optimize (~1 s at 100,000) runs in the background


class IndexUpkeep:
    """Optimize and vector-index upkeep; the state lives in :class:`TemplateIndex`, which sets it up."""

    catalog: dict[str, TemplateRecord]
    vector_index_rows: int
    _lock: threading.RLock
    _table: Any
    _pending_optimize: int
    _optimizer: threading.Thread | None
    _loaded_version: int | None

    def _table_version(self) -> int | None:
        try:
            return int(self._table.version)
        except Exception:  # noqa: BLE001 - a version is an optimisation hint, never a reason to fail
            return None

    def _optimize_soon(self) -> None:
        """Optimize now for small libraries; for large ones (~1 s at 100,000 rows) in a background thread.

        Rows written but not yet folded into the indexes are found by flat scans meanwhile, so a sync
        returns as soon as its rows are committed. Called with the lock held.
        """
        if len(self.catalog) < BACKGROUND_OPTIMIZE_MIN:
            self._optimize()
        elif self._optimizer is None:
            self._optimizer = threading.Thread(target=self._optimizer_loop, name="index-optimize", daemon=True)
            self._optimizer.start()

    def _optimizer_loop(self) -> None:
        while True:
            with self._lock:
                # Checked under the lock: a sync that writes meanwhile sees this thread alive and relies on it.
                if not self._pending_optimize or self._table is None:
                    self._optimizer = None
                    return
                self._optimize()

    def _optimize(self) -> None:
        # Folds new rows into the FTS and vector indexes; concurrent optimizers from other processes may conflict.
        self._pending_optimize = 0  # a failed attempt is retried after the next write, not in a loop
        try:
            retry_on_conflict(lambda: self._table.optimize(cleanup_older_than=timedelta(hours=1)), 3, "optimize")
        except RuntimeError as exc:
            log.warning("index optimize skipped: %s", exc)
        self._ensure_vector_index()
        self._loaded_version = self._table_version()

    def _read_vector_index(self) -> None:
        self.vector_index_rows = 0
        for idx in self._table.list_indices():
            if idx.name.startswith(VECTOR_INDEX_PREFIX) and list(idx.columns) == ["vector"]:
                try:
                    self.vector_index_rows = int(idx.name[len(VECTOR_INDEX_PREFIX):])
                except ValueError:
                    self.vector_index_rows = 1

    def _vector_index_names(self) -> list[str]:
        return [idx.name for idx in self._table.list_indices() if list(idx.columns) == ["vector"]]

    def _ensure_vector_index(self) -> None:
        """Switch to (or retrain) the IVF_SQ index when the row count calls for it; see lance_table's docstring."""
        from lancedb.index import IvfSq

        self._read_vector_index()  # another process sharing the table may have built it
        rows = self._table.count_rows()
        trained = self.vector_index_rows
        if rows < VECTOR_INDEX_MIN_ROWS or (trained and rows < trained * VECTOR_INDEX_REGROW):
            return
        started = time.perf_counter()
        try:
            for name in self._vector_index_names():
                self._table.drop_index(name)
            self._table.create_index("vector", config=IvfSq(distance_type="cosine"),
                                     name=f"{VECTOR_INDEX_PREFIX}{rows}")
        except (RuntimeError, ValueError, OSError) as exc:
            # Flat search still answers correctly, only slower: never fail a sync over the index.
            log.warning("vector index not built (flat search continues): %s", exc)
            self._read_vector_index()
            return
        self.vector_index_rows = rows
        log.info("vector index IVF_SQ built over %d rows in %.1fs (flat search until now)", rows,
                 time.perf_counter() - started)

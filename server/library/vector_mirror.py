"""The in-memory mirror: an exact copy of the table's vectors, and its full-text leg, while search is flat.

Why: at library sizes LanceDB's per-query overhead (schema look-ups, an event-loop hop, plan building)
was most of the vector leg's ~4 ms, while a matrix-vector product over 10,000 x 384 floats takes
~0.3 ms; the same held for the full-text leg (text_mirror). LanceDB stays the store; the mirror follows
the catalog (rebuilt when the catalog object is swapped) and is dropped once the IVF index takes over.
The vectors are read on the first search; the full-text postings are built after them, in the background
(10,000 templates: ~0.6 s), and until they are ready LanceDB answers that leg with the same scores.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .lance_table import FTS_OPTIONS, VECTOR_INDEX_MIN_ROWS, vector_matrix
from .templates import TemplateRecord
from .text_mirror import TextMirror, reproduces

MIRROR_MAX_ROWS = VECTOR_INDEX_MIN_ROWS  # the mirror serves flat search only


class FilterColumns:
    """Rows of one catalog snapshot and their filter columns, for prefiltering like LanceDB's ``where``."""

    def __init__(self, catalog: dict[str, TemplateRecord], uids: list[str],
                 position: dict[str, int] | None = None) -> None:
        """``position``: uid -> row, when the caller has it already (built from ``uids`` otherwise)."""
        self.catalog = catalog
        self.uids = uids
        self.position = position if position is not None else {u: i for i, u in enumerate(uids)}
        self._columns: dict[str, np.ndarray] = {}

    def mask(self, filters: dict[str, str | None]) -> np.ndarray | None:
        keep: np.ndarray | None = None
        for column, value in filters.items():
            if not value:
                continue
            values = self._columns.get(column)
            if values is None:
                # A uid the catalog lacks (a patched quantized mirror's left-out row) matches no value.
                values = self._columns[column] = np.array(
                    [getattr(self.catalog.get(u), column, None) for u in self.uids], dtype=object)
            hit = values == value
            keep = hit if keep is None else keep & hit
        return keep


class VectorMirror(FilterColumns):
    """Vectors of one catalog snapshot."""

    def __init__(self, catalog: dict[str, TemplateRecord], uids: list[str], matrix: np.ndarray) -> None:
        super().__init__(catalog, uids)
        self.matrix = matrix
        self.text: TextMirror | None = None  # the full-text leg, once attach_text has built it


def fits(rows: int) -> bool:
    """Whether a table of ``rows`` rows is small enough for the mirror (read at call time, so tests can lower it)."""
    return rows <= MIRROR_MAX_ROWS


def load_mirror(table: Any, catalog: dict[str, TemplateRecord], dims: int) -> VectorMirror | None:
    """Read every vector of ``table`` that belongs to ``catalog``; None when the table outgrew the mirror."""
    rows = table.count_rows()
    if not fits(rows):
        return None
    data = table.search().select(["uid", "vector"]).limit(max(rows, 1)).to_arrow()
    uids = [u for u in data.column("uid").to_pylist()]
    matrix = vector_matrix(data.column("vector")) if uids else np.zeros((0, dims), dtype=np.float32)
    keep = [i for i, u in enumerate(uids) if u in catalog]
    return VectorMirror(catalog, [uids[i] for i in keep], np.ascontiguousarray(matrix[keep]))


def attach_text(mirror: VectorMirror, table: Any) -> None:
    """Build ``mirror``'s full-text leg from the table's ``text`` column (rows outside the mirror are left out,
    as they are of its vector leg); nothing when the index's analyzer is not the one text_mirror reproduces."""
    import pyarrow.compute as pc

    if not reproduces(FTS_OPTIONS):
        return
    rows = table.count_rows()
    data = table.search().select(["uid", "text"]).limit(max(rows, 1)).to_arrow()
    where = {uid: i for i, uid in enumerate(data.column("uid").to_pylist())}
    order = [where.get(uid, -1) for uid in mirror.uids]
    texts = data.column("text").combine_chunks()
    taken = pc.take(texts, [i if i >= 0 else None for i in order])  # None: a row the table no longer has
    mirror.text = TextMirror(taken)

"""The in-memory mirror: an exact copy of the table's vectors, and its full-text leg, while search is flat.

Why: at library sizes LanceDB's per-query overhead (schema look-ups, an event-loop hop, plan building)
was most of the vector leg's ~4 ms, while a matrix-vector product over 10,000 x 384 floats takes
~0.3 ms; the same held for the full-text leg (text_mirror). LanceDB stays the store; the mirror follows
the catalog (rebuilt when the catalog object is swapped) and is dropped once the IVF index takes over.
The vectors are read on the first search; the full-text postings are built after them, in the background
(10,000 templates: ~0.6 s), and until they are ready LanceDB answers that leg with the same scores.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from .embed_numpy import single_thread_blas
from .lance_table import FTS_OPTIONS, VECTOR_INDEX_MIN_ROWS, vector_matrix
from .ranking import name_ranks
from .templates import TemplateRecord
from .term_postings import TermPostings
from .text_mirror import TextMirror, reproduces

log = logging.getLogger(__name__)

MIRROR_MAX_ROWS = VECTOR_INDEX_MIN_ROWS  # the mirror serves flat search only
# From this many rows the scan is onnxruntime's: one call costs ~30 us more than numpy's product, which at
# 1,000 rows is all the product takes (measured: 0.03-0.04 ms either way).
SCAN_MIN_ROWS = 2_000


class FilterColumns:
    """Rows of one catalog snapshot and their filter columns, for prefiltering like LanceDB's ``where``."""

    def __init__(self, catalog: dict[str, TemplateRecord], uids: list[str],
                 position: dict[str, int] | None = None) -> None:
        """``position``: uid -> row, when the caller has it already (built from ``uids`` otherwise)."""
        self.catalog = catalog
        self.uids = uids
        self._position = position
        self._columns: dict[str, tuple[np.ndarray, dict[Any, int]]] = {}
        self._name_ranks: np.ndarray | None = None

    @property
    def position(self) -> dict[str, int]:
        """uid -> row, made at the first use (the full-text leg above the mirror's size never needs it: ~10 MB
        at 100,000 rows)."""
        position = self._position
        if position is None:
            position = self._position = {u: i for i, u in enumerate(self.uids)}
        return position

    def column(self, attr: str) -> tuple[np.ndarray, dict[Any, int]]:
        """Every row's ``attr`` as a code, with each distinct value's code (made at the first use): a query
        compares one integer per row, not one string. A uid the catalog lacks (a patched quantized mirror's
        left-out row) has None, which matches no filter."""
        coded = self._columns.get(attr)
        if coded is None:
            code_of: dict[Any, int] = {}
            codes = np.fromiter((code_of.setdefault(getattr(self.catalog.get(u), attr, None), len(code_of))
                                 for u in self.uids), dtype=np.int32, count=len(self.uids))
            coded = self._columns[attr] = (codes, code_of)
        return coded

    def rows_with(self, attr: str, value: str) -> np.ndarray:
        """Whether each row's ``attr`` is ``value``."""
        codes, code_of = self.column(attr)
        code = code_of.get(value)
        return codes == code if code is not None else np.zeros(len(codes), dtype=bool)

    def rows_where(self, attr: str, test: Callable[[Any], bool]) -> np.ndarray:
        """Whether each row's ``attr`` passes ``test`` (asked once per distinct value)."""
        codes, code_of = self.column(attr)
        return np.array([test(v) for v in code_of], dtype=bool)[codes]

    def mask(self, filters: dict[str, str | None]) -> np.ndarray | None:
        keep: np.ndarray | None = None
        for column, value in filters.items():
            if not value:
                continue
            hit = self.rows_with(column, value)
            keep = hit if keep is None else keep & hit
        return keep

    def name_ranks(self) -> np.ndarray:
        """Every row's place by template name (``ranking.name_ranks``), made at the first use."""
        ranks = self._name_ranks
        if ranks is None:
            codes, code_of = self.column("name")
            ranks = self._name_ranks = name_ranks([name or "" for name in code_of])[codes]
        return ranks


class VectorMirror(FilterColumns):
    """Vectors of one catalog snapshot."""

    def __init__(self, catalog: dict[str, TemplateRecord], uids: list[str], matrix: np.ndarray) -> None:
        """``matrix``: rows x dims. Kept as dims x rows (``columns``): onnxruntime's MatMul of the query by that
        layout scans 10,000 rows in ~0.2 ms and 20,000 in ~0.56, where numpy's product over rows x dims took
        0.54 and 1.9 ms on one thread, and onnxruntime's over rows x dims 1.1 ms at 20,000."""
        super().__init__(catalog, uids)
        self.columns = np.ascontiguousarray(np.asarray(matrix, dtype=np.float32).T)
        self.text: TextMirror | None = None  # the full-text leg, once attach_text has built it
        self._no_bias: np.ndarray | None = None
        self._terms: TermPostings | None = None
        self._terms_builder: threading.Thread | None = None

    def term_postings(self) -> TermPostings | None:
        """The rows' terms inverted (term_postings), None until built: the first call starts the build on a
        thread of its own, so no search waits for it."""
        if self._terms is None and self._terms_builder is None:
            with _lazy_lock:
                if self._terms_builder is None:
                    self._terms_builder = threading.Thread(target=self._build_terms, name="term-postings",
                                                           daemon=True)
                    self._terms_builder.start()
        return self._terms

    def terms_builder(self) -> threading.Thread | None:
        """The build of :meth:`term_postings` while it runs."""
        builder = self._terms_builder
        return builder if builder is not None and builder.is_alive() else None

    def _build_terms(self) -> None:
        try:
            self._terms = TermPostings(self.catalog, self.uids)
        except Exception as exc:  # noqa: BLE001 - candidates are then scored one by one, as before
            log.warning("the mirror's term postings were not built: %s", exc)

    @property
    def matrix(self) -> np.ndarray:
        """rows x dims (a view of ``columns``)."""
        return self.columns.T

    def nearest(self, qvec: np.ndarray, keep: np.ndarray | None,
                limit: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(rows, dot products) of the ``limit`` best rows among those ``keep`` allows, in no order, and every
        row's dot product (a row's vector is strided in ``columns``: reading a few rows again cost more than
        keeping the scan's); exact, by onnxruntime from ``SCAN_MIN_ROWS`` rows (numpy without it)."""
        query = np.asarray(qvec, dtype=np.float32)
        total = self.columns.shape[1]
        allowed = total if keep is None else int(np.count_nonzero(keep))
        count = min(limit, allowed)
        if count <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32), query @ self.columns
        session = _scan_session() if total >= SCAN_MIN_ROWS else None
        if session is not None:
            if keep is None:
                if self._no_bias is None or self._no_bias.shape[1] != total:
                    self._no_bias = np.zeros((1, total), dtype=np.float32)
                bias = self._no_bias
            else:
                bias = np.where(keep, np.float32(0), np.float32(-np.inf)).astype(np.float32)[None, :]
            try:
                values, rows, scores = session.run(None, {"query": query[None, :], "columns": self.columns,
                                                          "bias": bias, "count": np.array([count], dtype=np.int64)})
                return rows[0], values[0], scores[0]
            except Exception as exc:  # noqa: BLE001 - onnxruntime's own error types; numpy answers the same
                log.warning("the onnxruntime scan failed, numpy answers this search: %s", exc)
        with single_thread_blas():
            # One thread: OpenBLAS splits this product over the cores and the rendezvous costs more than it
            # saves (10,000 x 384 on 2 busy cores: 5.5 ms threaded, 1.2 ms on one), with identical sums.
            scores = query @ self.columns
        sims = scores if keep is None else np.where(keep, scores, -np.inf)
        top = np.argpartition(-sims, count - 1)[:count] if count < total else np.flatnonzero(np.isfinite(sims))
        return top, sims[top], scores


_scan: list[Any] = []  # the process's scan session once made; [None] without onnxruntime
_lazy_lock = threading.Lock()  # guards the lazy starts here (the scan session, a mirror's postings build)


def _scan_session() -> Any:
    """One onnxruntime session for every mirror: the query (1 x dims) times the columns (dims x rows, an input,
    so onnxruntime keeps no copy), plus the filter's bias (0 or -inf), then the ``count`` best (TopK)."""
    if not _scan:
        with _lazy_lock:
            if not _scan:
                try:
                    _scan.append(_make_scan_session())
                except Exception as exc:  # noqa: BLE001 - a broken onnxruntime install: numpy scans instead
                    log.warning("no onnxruntime scan for the mirror, numpy scans it: %s", exc)
                    _scan.append(None)
    return _scan[0]


def _make_scan_session() -> Any:
    from . import embed_onnx

    if not embed_onnx.available():
        return None
    import onnxruntime as ort

    return ort.InferenceSession(scan_model(), embed_onnx.session_options(embed_onnx.THREADS),
                                providers=["CPUExecutionProvider"])


def scan_model() -> bytes:
    """query (1 x dims) times the columns (dims x rows), plus the filter's bias, then the ``count`` best rows
    (TopK, unsorted), and the scores."""
    from . import embed_onnx
    from . import onnx_wire as wire

    return wire.model(
        "mirror-scan",
        [wire.node("MatMul", ["query", "columns"], ["scores"]),
         wire.node("Add", ["scores", "bias"], ["allowed"]),
         wire.node("TopK", ["allowed", "count"], ["best", "rows"], axis=-1, largest=1, sorted=0)],
        [wire.value("query", wire.FLOAT, [1, "dims"]), wire.value("columns", wire.FLOAT, ["dims", "rows"]),
         wire.value("bias", wire.FLOAT, [1, "rows"]), wire.value("count", wire.INT64, [1])],
        [wire.value("best", wire.FLOAT, [1, None]), wire.value("rows", wire.INT64, [1, None]),
         wire.value("scores", wire.FLOAT, [1, "rows"])], opset=embed_onnx.OPSET)


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
    # Every row usually belongs: the mirror's own copy (its transposed columns) is then the only one.
    return VectorMirror(catalog, [uids[i] for i in keep], matrix if len(keep) == len(uids) else matrix[keep])


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

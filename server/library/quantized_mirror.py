"""The vector leg in memory above the mirror's size: 8-bit codes scanned by onnxruntime, re-ranked exactly.

Why: from ``VECTOR_INDEX_MIN_ROWS`` rows LanceDB answers the vector leg from its IVF_SQ index, and at 100,000
rows that leg took ~9-12 ms a query, most of it LanceDB's fixed cost (its 12 partitions are all probed, so it
scans every 8-bit code anyway). The same scan as one onnxruntime ``MatMulInteger`` over codes it has packed
once takes ~1.3 ms on two threads, and picking the shortlist in the same run (TopK) a few tenths more. The
baseline it replaces holds every float32 vector (1,536 bytes a row); this holds onnxruntime's copy of the
codes (384 bytes a row, ~40 MB at 100,000 rows with its packing). The codes are handed over from memory as
an external initializer, which onnxruntime copies while loading: its C API (AddExternalInitializers) lets
the caller's buffer go after that.

Exact, as LanceDB's refine is: the ``REFINE`` x ``limit`` best rows by code are re-scored with their float32
vectors, read with ``pread`` from a file beside the index (the page cache holds it, not the process; it is
read through once when the codes load, page_cache.py). The codes are per-dimension symmetric (scale = the
dimension's largest magnitude / 127), the query is quantised to unsigned 8 bits per query; the shortlist's
recall against exact search is measured in ``make bench`` and tested. A local index keeps the codes and that
file for the next start (:func:`load`); otherwise the file has no name and goes with its handle.

Built in the background from one snapshot of the table when the index starts. When the catalog moves on,
the rows that changed are searched exactly beside the codes (their float32 vectors read from the table),
the codes' old copies left out; past ``PATCH_MAX`` such rows the codes are rebuilt, and a search waits for
that up to ``BUILD_WAIT``. Without onnxruntime, after a failed build or past ``MAX_ROWS`` LanceDB answers the
leg as before.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import numpy as np

from . import heap, npz_file, page_cache
from .background_build import BackgroundBuild
from .lance_table import VECTOR_INDEX_REFINE, sql_quote, vector_matrix
from .templates import TemplateRecord
from .vector_mirror import FilterColumns

log = logging.getLogger(__name__)

MAX_ROWS = 500_000  # ~200 MB of packed codes at 384 dimensions: past this LanceDB's index answers alone
REFINE = VECTOR_INDEX_REFINE
READ_BATCH = 8_192  # rows per Arrow batch while building: the build holds ~13 MB of floats, not the whole table
# The query in 7 bits (0..127 around 64): onnxruntime's u8 x s8 kernel on AVX2 without VNNI adds products in
# pairs into 16 bits, which saturate past 32,767; full-range queries (0..255) did so, and the true nearest row
# of a 42-row library fell out of the shortlist. 2 x 127 x 127 = 32,258 cannot saturate.
QUERY_RANGE = 63
QUERY_ZERO_POINT = 64
# Added to a filtered-out row's score: below any real one (|score| <= dims x 127 x 64 < 2^23), no overflow.
EXCLUDED = -(2**30)
PATCH_MAX = 2_000  # changed rows searched exactly beside the codes before a build is cheaper (~0.2 ms of a query)
CODES_FILE, ROWS_FILE = "quantized.npz", "quantized.f32"  # kept beside the table of a local index
CODES_TEMP, ROWS_TEMP = "quantized-codes-", "quantized-rows-"
FORMAT = 1
BUILD_WAIT = 10.0  # seconds a search waits for the codes of a new catalog (a build: ~1 s at 100,000 rows)


class _Codes:
    """What one build makes, shared by the mirrors patched from it: the session over the codes of the rows of
    ``catalog`` (``uids``, in that order), the codes' scale, and the file of their float32 vectors."""

    def __init__(self, catalog: dict[str, TemplateRecord], uids: list[str], codes: np.ndarray, scale: np.ndarray,
                 rows_file: IO[bytes], threads: int) -> None:
        self.catalog = catalog
        self.uids = uids
        self.position = {u: i for i, u in enumerate(uids)}
        self.scale = scale
        self.dims = int(codes.shape[0])
        self.file = rows_file
        self.fd = rows_file.fileno()
        self.session = _session(codes, threads)  # the caller drops ``codes``: onnxruntime has its own copy
        self.no_bias = np.zeros((1, len(uids)), dtype=np.int32)
        page_cache.read_through(self.fd)  # re-scoring reads rows one by one: see page_cache


class QuantizedMirror(FilterColumns):
    """One catalog snapshot: the codes of a build, less its rows that changed or went since (``stale``), plus
    the rows that changed or came since as float32 vectors (``delta``), searched exactly. Rows are numbered
    codes first, then delta; a changed row's uid maps to its delta row."""

    def __init__(self, catalog: dict[str, TemplateRecord], codes: _Codes, stale: np.ndarray | None = None,
                 delta_uids: list[str] | None = None, delta: np.ndarray | None = None) -> None:
        # Unpatched, the rows are the build's: its uid list and positions are shared, not copied (100,000 rows:
        # ~10 MB a dict).
        uids = [*codes.uids, *delta_uids] if delta_uids else codes.uids
        super().__init__(catalog, uids, codes.position if not delta_uids else None)
        self.codes = codes
        self.stale = stale
        self.delta = delta if delta is not None else np.zeros((0, codes.dims), dtype=np.float32)

    @property
    def dims(self) -> int:
        return self.codes.dims

    def close(self) -> None:
        self.codes.file.close()

    def shortlist(self, qvec: np.ndarray, keep: np.ndarray | None, count: int) -> np.ndarray:
        """Coded rows (ascending) of the ``count`` best approximate dot products with ``qvec`` among those
        ``keep`` allows (``keep`` over the coded rows); fewer when fewer are allowed. The ranking is
        onnxruntime's too (TopK): numpy's argpartition over 100,000 scores took ~0.5 ms more."""
        codes = self.codes
        allowed = len(codes.uids) if keep is None else int(np.count_nonzero(keep))
        count = min(count, allowed)
        weighted = np.asarray(qvec, dtype=np.float32) * codes.scale
        top = float(np.abs(weighted).max()) if len(weighted) else 0.0
        if count <= 0 or top == 0.0:
            return np.flatnonzero(keep)[:count] if keep is not None else np.arange(count)
        query = (np.rint(weighted * (QUERY_RANGE / top)) + QUERY_ZERO_POINT).astype(np.uint8)[None, :]
        bias = codes.no_bias if keep is None else np.where(keep, 0, EXCLUDED).astype(np.int32)[None, :]
        _values, (rows,) = codes.session.run(None, {"query": query, "bias": bias,
                                                    "count": np.array([count], dtype=np.int64)})
        return np.sort(rows)

    def vectors(self, rows: np.ndarray) -> np.ndarray:
        """The float32 vectors of ``rows`` (mirror row numbers): coded rows read from the file, delta rows
        from memory."""
        coded, width = len(self.codes.uids), self.dims * 4
        out = np.empty((len(rows), self.dims), dtype=np.float32)
        for i, row in enumerate(rows.tolist()):
            out[i] = self.delta[row - coded] if row >= coded else \
                np.frombuffer(os.pread(self.codes.fd, width, row * width), dtype=np.float32)
        return out

    def nearest(self, qvec: np.ndarray, keep: np.ndarray | None, limit: int) -> list[tuple[int, float]]:
        """(row, exact cosine) of the best ``limit`` rows ``keep`` allows, best first: the ``REFINE`` x ``limit``
        best coded rows by code, re-scored with their float32 vectors, and every delta row."""
        coded = len(self.codes.uids)
        allowed = keep[:coded] if keep is not None else None
        if self.stale is not None:
            allowed = ~self.stale if allowed is None else allowed & ~self.stale
        rows = self.shortlist(qvec, allowed, max(limit, 1) * REFINE)
        if len(self.delta):
            extra = np.arange(coded, coded + len(self.delta))
            rows = np.concatenate([rows, extra[keep[coded:]] if keep is not None else extra])
        if not len(rows):
            return []
        exact = self.vectors(rows) @ np.asarray(qvec, dtype=np.float32)
        order = np.argsort(-exact, kind="stable")[:limit]
        return [(int(rows[i]), float(exact[i])) for i in order]

    def patched(self, catalog: dict[str, TemplateRecord], table: Any) -> QuantizedMirror | None:
        """This mirror for ``catalog``: the rows that differ from the build's are found by record identity
        (a sync swaps in new records for changed templates only) and their vectors read from ``table``
        (or kept from this mirror). None when more than ``PATCH_MAX`` differ: then a build is cheaper."""
        codes = self.codes
        built = codes.catalog
        differ = [uid for uid, rec in catalog.items() if built.get(uid) is not rec]
        if len(differ) > PATCH_MAX:
            return None
        stale = np.fromiter((catalog.get(uid) is not built[uid] for uid in codes.uids), dtype=bool,
                            count=len(codes.uids))
        coded = len(codes.uids)
        have = {uid: self.delta[self.position[uid] - coded] for uid in differ
                if self.catalog.get(uid) is catalog[uid] and self.position.get(uid, -1) >= coded}
        fetch = [uid for uid in differ if uid not in have]
        if fetch:
            have.update(_table_vectors(table, fetch))
        delta_uids = [uid for uid in differ if uid in have]  # a row not in the table yet is left out, as a build would
        delta = np.stack([have[uid] for uid in delta_uids]) if delta_uids else None
        return QuantizedMirror(catalog, codes, stale if stale.any() else None, delta_uids, delta)


def _table_vectors(table: Any, uids: list[str]) -> dict[str, np.ndarray]:
    where = "uid IN (" + ", ".join(sql_quote(u) for u in uids) + ")"
    data = table.search().where(where).select(["uid", "vector"]).limit(len(uids)).to_arrow()
    return dict(zip(data.column("uid").to_pylist(), vector_matrix(data.column("vector")), strict=True))


def _session(codes: np.ndarray, threads: int) -> Any:
    """``MatMulInteger``: query (1 x dims, uint8, zero point 128) times the codes (dims x rows, int8), the codes
    given from memory (no copy into a model proto) and packed by onnxruntime once; plus the filter's bias
    (0, or ``EXCLUDED``), then the ``count`` best rows (TopK, unsorted)."""
    import onnxruntime as ort

    from .embed_onnx import session_options

    dims, rows = (int(n) for n in codes.shape)
    options = session_options(threads)
    options.add_external_initializers(["codes"], [ort.OrtValue.ortvalue_from_numpy(codes)])
    return ort.InferenceSession(codes_model(dims, rows), options, providers=["CPUExecutionProvider"])


def codes_model(dims: int, rows: int) -> bytes:
    """:func:`_session`'s graph, its codes an external initializer the session is given from memory."""
    from . import onnx_wire as wire

    return wire.model(
        "quantized-vectors",
        [wire.node("MatMulInteger", ["query", "codes", "zero"], ["scores"]),
         wire.node("Add", ["scores", "bias"], ["allowed"]),
         wire.node("TopK", ["allowed", "count"], ["best", "rows"], axis=-1, largest=1, sorted=0)],
        [wire.value("query", wire.UINT8, [1, dims]), wire.value("bias", wire.INT32, [1, rows]),
         wire.value("count", wire.INT64, [1])],
        [wire.value("best", wire.INT32, [1, None]), wire.value("rows", wire.INT64, [1, None])],
        [wire.external_tensor("codes", wire.INT8, [dims, rows], "codes", dims * rows),
         wire.tensor("zero", wire.UINT8, [], bytes([QUERY_ZERO_POINT]))])


def available() -> bool:
    from . import embed_onnx

    return embed_onnx.available()


def fits(rows: int) -> bool:
    from .vector_mirror import MIRROR_MAX_ROWS

    return MIRROR_MAX_ROWS < rows <= MAX_ROWS


def build(table: Any, catalog: dict[str, TemplateRecord], dims: int, directory: Path | None, threads: int,
          model_key: str | None = None) -> QuantizedMirror | None:
    """The mirror of ``catalog``'s rows in ``table``: floats to a file batch by batch (with each dimension's
    largest magnitude), then codes from that file batch by batch. With ``model_key`` (a local index) both are
    kept in ``directory`` for the next start (:func:`load`); else the file has no name."""
    started = time.perf_counter()
    rows = table.count_rows()
    if not fits(rows):
        return None
    version = int(table.version)
    named = directory is not None and model_key is not None
    if named:
        npz_file.abandoned(Path(str(directory)), ROWS_TEMP, suffix=".tmp")
    # Owned by the mirror from here (closed by it, or below on failure): no context manager.
    rows_file = (tempfile.NamedTemporaryFile(dir=str(directory), prefix=ROWS_TEMP, suffix=".tmp", delete=False)  # noqa: SIM115
                 if named else tempfile.TemporaryFile(dir=str(directory) if directory is not None else None))  # noqa: SIM115
    try:
        uids: list[str] = []
        peak = np.zeros(dims, dtype=np.float32)
        reader = table.search().select(["uid", "vector"]).limit(max(rows, 1)).to_batches(READ_BATCH)
        for batch in reader:
            batch_uids = batch.column("uid").to_pylist()
            matrix = vector_matrix(batch.column("vector"))
            keep = [i for i, uid in enumerate(batch_uids) if uid in catalog]
            matrix = np.ascontiguousarray(matrix[keep])
            np.maximum(peak, np.abs(matrix).max(axis=0, initial=0.0), out=peak)
            rows_file.write(matrix.tobytes())
            uids.extend(batch_uids[i] for i in keep)
        rows_file.flush()
        heap.trim()
        scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
        codes = np.empty((dims, len(uids)), dtype=np.int8)
        width = dims * 4
        for start in range(0, len(uids), READ_BATCH):
            count = min(READ_BATCH, len(uids) - start)
            chunk = np.frombuffer(os.pread(rows_file.fileno(), count * width, start * width), dtype=np.float32)
            codes[:, start:start + count] = np.clip(np.rint(chunk.reshape(count, dims) / scale), -127, 127).T
        if named:
            assert directory is not None and model_key is not None
            _save(Path(str(directory)), rows_file, codes, scale, uids, version=version, model_key=model_key)
        mirror = QuantizedMirror(catalog, _Codes(catalog, uids, codes, scale, rows_file, threads))
        del codes
        heap.trim()
    except BaseException:
        rows_file.close()
        if named:
            Path(rows_file.name).unlink(missing_ok=True)
        raise
    log.info("vector leg in memory: %d rows as 8-bit codes in %.1fs", len(uids), time.perf_counter() - started)
    return mirror


def _save(directory: Path, rows_file: Any, codes: np.ndarray, scale: np.ndarray, uids: list[str], *, version: int,
          model_key: str) -> None:
    """The rows' file under its name, then the codes with what they describe (a reader checks the rows' file
    by inode, size and mtime, so two servers writing at once leave a pair that matches or one that is rebuilt)."""
    try:
        os.replace(rows_file.name, directory / ROWS_FILE)
        info = os.fstat(rows_file.fileno())
        meta = {"format": FORMAT, "model_key": model_key, "dims": int(codes.shape[0]), "version": version,
                "rows": len(uids), "inode": info.st_ino, "size": info.st_size, "mtime_ns": info.st_mtime_ns}
        blob = np.frombuffer("\n".join(uids).encode(), dtype=np.uint8)
        npz_file.write(directory / CODES_FILE, meta, {"codes": codes, "scale": scale, "uids": blob}, CODES_TEMP)
    except OSError as exc:  # only the next start is slower (it builds again)
        log.info("the vector leg's codes were not kept for the next start: %s", exc)


def load(table: Any, catalog: dict[str, TemplateRecord], dims: int, directory: Path, threads: int,
         model_key: str) -> QuantizedMirror | None:
    """The codes a build kept in ``directory``, when they describe ``table`` as it is (its version, the model,
    every row of ``catalog``); else None."""
    path = directory / CODES_FILE
    if not path.is_file():
        return None
    try:
        meta, arrays = npz_file.read(path)
        codes, scale, blob = arrays["codes"], arrays["scale"], arrays["uids"]
        if not (isinstance(meta, dict) and meta.get("format") == FORMAT and meta.get("model_key") == model_key
                and meta.get("dims") == dims and meta.get("version") == int(table.version)
                and meta.get("rows") == len(catalog) and codes.dtype == np.int8
                and codes.shape == (dims, len(catalog)) and scale.dtype == np.float32 and scale.shape == (dims,)):
            return None
        uids = bytes(blob).decode().split("\n") if len(blob) else []
        if len(uids) != len(catalog) or any(uid not in catalog for uid in uids):
            return None
        rows_file = open(directory / ROWS_FILE, "rb")  # noqa: SIM115 - owned by the mirror
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, UnicodeDecodeError):
        return None
    info = os.fstat(rows_file.fileno())
    if ((info.st_ino, info.st_size, info.st_mtime_ns) != (meta.get("inode"), meta.get("size"), meta.get("mtime_ns"))
            or info.st_size != len(uids) * dims * 4):
        rows_file.close()
        return None
    try:
        mirror = QuantizedMirror(catalog, _Codes(catalog, uids, codes, scale, rows_file, threads))
    except BaseException:
        rows_file.close()
        raise
    del codes, arrays
    heap.trim()
    return mirror


def remove(directory: Path) -> None:
    """``cache clear``: the kept codes and rows go with the table."""
    for name in (CODES_FILE, ROWS_FILE):
        (directory / name).unlink(missing_ok=True)


class QuantizedKeeper(BackgroundBuild):
    """The current quantized mirror, rebuilt in a background thread whenever the catalog moves on."""

    def __init__(self, directory: Path | None, threads: int = 0, model_key: Callable[[], str] | None = None) -> None:
        """``threads``: onnxruntime's per scan; 0: the embedder's default (embed_onnx.THREADS). With ``model_key``
        (what the table's vectors depend on) the codes are kept in ``directory`` for the next start."""
        super().__init__()
        self._directory = directory
        self._model_key = model_key
        self._threads = threads
        self._enabled: bool | None = None  # whether onnxruntime is installed, asked at the first large catalog
        self._mirror: QuantizedMirror | None = None

    def current(self, table: Any, catalog: dict[str, TemplateRecord], dims: int,
                wait: float = BUILD_WAIT) -> QuantizedMirror | None:
        """The mirror of ``catalog``: the current one patched when few rows changed (``PATCH_MAX``), else built
        in a background thread, which this waits for up to ``wait`` seconds (LanceDB answers the leg if it
        takes longer). None outside the codes' size range, without onnxruntime, or when a build failed for
        this catalog.

        Why wait: the alternative is LanceDB's vector index, which a search then loads for good (~70 MB at
        100,000 rows, the margin under the baseline's peak memory), for the second a build takes.
        """
        mirror = self._mirror
        if mirror is not None and mirror.catalog is catalog:
            return mirror
        if not fits(len(catalog)):
            return None
        if self._enabled is None:
            self._enabled = available()
        if not self._enabled:
            return None
        deadline = time.monotonic() + wait
        while True:
            with self._lock:
                mirror = self._mirror
                if mirror is not None and mirror.catalog is catalog:
                    return mirror
                if self._closed or self._failed_for is catalog:
                    return None
                running = self._builder
                idle = running is None or not running.is_alive()
                if idle and mirror is not None:
                    try:
                        patched = mirror.patched(catalog, table)
                    except Exception as exc:  # noqa: BLE001 - a build reads the table afresh
                        log.info("the vector leg's codes are rebuilt: %s", exc)
                        patched = None
                    if patched is not None:
                        self._mirror = patched
                        return patched
                if running is None or idle:
                    # Stale: dropped, not closed, since a search on another thread may still be reading it.
                    self._mirror = None
                    running = self._builder = threading.Thread(target=self._build, args=(table, catalog, dims),
                                                               daemon=True, name="quantized-vectors")
                    running.start()
                builder = running
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            builder.join(remaining)
            if builder.is_alive():
                return None

    def _build(self, table: Any, catalog: dict[str, TemplateRecord], dims: int) -> None:
        from . import embed_onnx

        threads = self._threads or embed_onnx.THREADS
        key = self._model_key() if self._model_key is not None else None
        try:
            mirror = None
            if key is not None and self._directory is not None:
                mirror = load(table, catalog, dims, self._directory, threads, key)
            if mirror is None:
                mirror = build(table, catalog, dims, self._directory, threads, key)
        except Exception as exc:  # noqa: BLE001 - LanceDB's index keeps answering the leg
            self._give_up(catalog, "vector leg", exc)
            return
        with self._lock:
            if mirror is None:  # the table outgrew the codes meanwhile
                self._failed_for = catalog
            elif self._closed:
                mirror.close()
            else:
                self._mirror = mirror

    def ready_for(self, catalog: dict[str, TemplateRecord]) -> bool:
        mirror = self._mirror
        return mirror is not None and mirror.catalog is catalog

    def close(self) -> None:
        """No new builds, the current mirror let go. Not closed here: a search still running on another thread
        would read a closed (or, worse, reused) descriptor; its file goes with the last reference."""
        self.join(60)
        with self._lock:
            self._closed = True
            self._mirror = None

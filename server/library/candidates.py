"""Candidate retrieval: the vector leg and the full-text (BM25) leg of a search, from the LanceDB table
or from the in-memory mirrors: both legs for flat-search-sized tables (vector_mirror), the vector leg as
8-bit codes above that (quantized_mirror)."""

from __future__ import annotations

import concurrent.futures
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .lance_table import VECTOR_INDEX_NPROBES, VECTOR_INDEX_REFINE, vector_matrix
from .quantized_mirror import QuantizedMirror
from .vector_mirror import VectorMirror

if TYPE_CHECKING:
    from .text_leg import TextLeg


@dataclass
class Candidate:
    uid: str
    cosine: float
    bm25: float = 0.0
    in_vector_leg: bool = False
    in_text_leg: bool = False


@dataclass
class CandidateRows:
    """A mirror's candidates as arrays (the scorer reads them so, without an object per candidate): the vector
    leg's rows first in its order, then the full-text leg's other rows in its order."""
    rows: np.ndarray  # mirror rows, int64
    cosine: np.ndarray  # float64, the scan's float32 dot products widened
    bm25: np.ndarray  # float64, 0 outside the full-text leg
    in_vector: np.ndarray  # bool
    in_text: np.ndarray  # bool

    def only(self, keep: np.ndarray) -> CandidateRows:
        return CandidateRows(self.rows[keep], self.cosine[keep], self.bm25[keep], self.in_vector[keep],
                             self.in_text[keep])


def _fts_rows(table: Any, fts_query: str, where: str | None, limit: int, columns: list[str]) -> list[dict[str, Any]]:
    """The full-text leg: the best ``limit`` rows for ``fts_query`` among those matching ``where``, with ``_score``."""
    columns = _scored(columns)
    native = _native(table)
    if native is None:
        tq = table.search(fts_query, query_type="fts", fts_columns="text")
        if where:
            tq = tq.where(where, prefilter=True)
        rows: list[dict[str, Any]] = tq.limit(limit).select(columns).to_list()
        return rows
    return _submit_native(native, fts_query, where, limit, columns).result()


def _scored(columns: list[str]) -> list[str]:
    """``columns`` plus ``_score``, which the legs read: Lance 0.40 still adds it (and ``_distance``) unasked but
    has deprecated that (a warning per query, silenced by LANCEDB_LOG=error); a later release will leave it out."""
    return columns if "_score" in columns else [*columns, "_score"]


def _native(table: Any) -> Any:
    """The AsyncTable under LanceDB's sync table, or None (another table type: use its public API)."""
    native = getattr(table, "_table", None)
    return native if native is not None and hasattr(native, "query") else None


def _submit_native(native: Any, fts_query: str, where: str | None, limit: int,
                   columns: list[str]) -> concurrent.futures.Future[list[dict[str, Any]]]:
    """The full-text query on the table's async handle, scheduled on LanceDB's own event-loop thread.

    Why not ``table.search(..., query_type="fts")``: LanceDB's sync builder looks the schema up three times
    and hops to its event-loop thread six times per query (~6 ms of a ~7 ms leg at 48 templates). The same
    query on the async handle is one hop, with the same handle, snapshot and BM25 scores; scheduling it
    straight onto that loop (not from a worker thread that then waits on it) saves a second thread wake-up
    and keeps a waiting thread from competing for the GIL while the query is embedded.
    """
    import asyncio

    from lancedb.background_loop import LOOP

    async def run() -> list[dict[str, Any]]:
        query = native.query().nearest_to_text(fts_query, columns="text")
        if where:
            query = query.where(where)  # a prefilter, as with the sync builder's prefilter=True
        return _rows(await query.select(_scored(columns)).limit(limit).to_arrow())

    return asyncio.run_coroutine_threadsafe(run(), LOOP.loop)


def _rows(result: Any) -> list[dict[str, Any]]:
    """Arrow rows as dicts, with a vector column as numpy rows: ``to_pylist`` would make a Python float of
    every component (50 rows x 384 at 100,000 templates, ~2 ms a query)."""
    names = [n for n in result.column_names if n != "vector"]
    rows: list[dict[str, Any]] = result.select(names).to_pylist()
    if "vector" in result.column_names and rows:
        for row, vector in zip(rows, vector_matrix(result.column("vector")), strict=True):
            row["vector"] = vector
    return rows


def _vector_rows(table: Any, qvec: np.ndarray, where: str | None, limit: int,
                 vector_index_rows: int) -> list[dict[str, Any]]:
    """The vector leg: uid and cosine distance of the nearest ``limit`` rows matching ``where``.

    On the table's async handle in one event-loop hop, for the reason given in :func:`_submit_native`
    (the sync builder's schema look-ups and hops were ~4 of the leg's ~12 ms at 100,000 templates).
    """
    native = _native(table)
    vector = qvec.astype(np.float32)
    if native is None:
        vq = table.search(vector, vector_column_name="vector").distance_type("cosine")
        if vector_index_rows:
            vq = vq.nprobes(VECTOR_INDEX_NPROBES).refine_factor(VECTOR_INDEX_REFINE)
        if where:
            vq = vq.where(where, prefilter=True)
        found: list[dict[str, Any]] = vq.limit(limit).select(["uid", "_distance"]).to_list()
        return found
    import asyncio

    from lancedb.background_loop import LOOP

    async def run() -> list[dict[str, Any]]:
        query = native.query().nearest_to(vector).column("vector").distance_type("cosine")
        if vector_index_rows:
            query = query.nprobes(VECTOR_INDEX_NPROBES).refine_factor(VECTOR_INDEX_REFINE)
        if where:
            query = query.where(where)  # a prefilter by default on the async builder
        return _rows(await query.select(["uid", "_distance"]).limit(limit).to_arrow())

    return asyncio.run_coroutine_threadsafe(run(), LOOP.loop).result()


def text_only_candidates(table: Any, fts_query: str, where: str | None, limit: int) -> list[Candidate]:
    """Without a query vector (no embedding model): the full-text leg alone, or every row matching
    ``where`` when the query has no searchable words."""
    found: dict[str, Candidate] = {}
    if fts_query.strip():
        for row in _fts_rows(table, fts_query, where, limit, ["uid"]):
            found[row["uid"]] = Candidate(row["uid"], 0.0, bm25=float(row["_score"]), in_text_leg=True)
    if not found:
        scan = table.search().where(where) if where else table.search()
        for row in scan.limit(limit).select(["uid"]).to_list():
            found[row["uid"]] = Candidate(row["uid"], 0.0)
    return list(found.values())


TextRows = concurrent.futures.Future[list[dict[str, Any]]]


def start_text_leg(pool: concurrent.futures.ThreadPoolExecutor, table: Any, fts_query: str, where: str | None,
                   limit: int, columns: list[str], postings: TextLeg | None = None,
                   filters: dict[str, str | None] | None = None) -> TextRows | None:
    """The full-text leg in the background: it needs no query vector, so it runs while the query is embedded
    and the vector leg searched (onnxruntime, numpy and LanceDB all release the GIL). From ``postings`` (then
    prefiltered by ``filters``, ``where`` in structured form) when given, else from LanceDB; ``pool`` serves
    the postings and tables without LanceDB's async handle."""
    if not fts_query.strip():
        return None
    if postings is not None:
        return pool.submit(postings.rows, fts_query, filters or {}, limit)
    native = _native(table)
    if native is not None:
        return _submit_native(native, fts_query, where, limit, columns)
    return pool.submit(_fts_rows, table, fts_query, where, limit, columns)


def table_candidates(table: Any, qvec: np.ndarray, text_rows: TextRows | None, where: str | None, limit: int, *,
                     vector_index_rows: int, quantized: QuantizedMirror | None = None,
                     filters: dict[str, str | None] | None = None) -> list[Candidate]:
    """The full-text leg from LanceDB; the vector leg from ``quantized`` (prefiltered by ``filters``, ``where``
    in structured form) when given, else from LanceDB too (an IVF index, or a table too large for the
    mirror). ``text_rows`` must have selected uid, and vector unless ``quantized`` is given (it has them)."""
    found: dict[str, Candidate] = {}
    if quantized is not None:
        for position, cosine in quantized.nearest(qvec, quantized.mask(filters or {}), limit):
            uid = quantized.uids[position]
            found[uid] = Candidate(uid, cosine, in_vector_leg=True)
        if text_rows is not None:
            _add_text_hits(found, quantized, qvec, text_rows.result())
        return list(found.values())
    for hit in _vector_rows(table, qvec, where, limit, vector_index_rows):
        found[hit["uid"]] = Candidate(hit["uid"], 1.0 - float(hit["_distance"]), in_vector_leg=True)
    if text_rows is not None:
        for row in text_rows.result():
            cand = found.get(row["uid"])
            if cand is None:
                cos = float(np.dot(np.asarray(row["vector"], dtype=np.float32), qvec))
                cand = found[row["uid"]] = Candidate(row["uid"], cos)
            cand.bm25 = float(row["_score"])
            cand.in_text_leg = True
    return list(found.values())


def mirrored_rows(mirror: VectorMirror, qvec: np.ndarray, text: TextRows | str | list[tuple[int, float]] | None,
                  filters: dict[str, str | None], limit: int) -> CandidateRows:
    """The vector leg from the mirror (prefiltered by ``filters``); the full-text leg from the mirror's postings
    when ``text`` is the full-text query, their hits when it is a list (:func:`text_hits`), or LanceDB's rows
    when it is their future. Every candidate's cosine is the scan's score of its row."""
    keep = mirror.mask(filters)
    rows, _cosines, scores = mirror.nearest(qvec, keep, limit)
    hits = _text_hits(mirror, text, keep, limit)
    order = {row: i for i, row in enumerate(rows.tolist())}
    for pos, _ in hits:
        order.setdefault(pos, len(order))
    every = np.fromiter(order, dtype=np.int64, count=len(order))
    bm25 = np.zeros(len(every))
    in_text = np.zeros(len(every), dtype=bool)
    if hits:
        at = [order[pos] for pos, _ in hits]
        bm25[at] = [score for _, score in hits]
        in_text[at] = True
    return CandidateRows(every, scores[every].astype(np.float64), bm25, np.arange(len(every)) < len(rows), in_text)


def mirrored_candidates(mirror: VectorMirror, qvec: np.ndarray, text: TextRows | str | list[tuple[int, float]] | None,
                        filters: dict[str, str | None], limit: int) -> list[Candidate]:
    """:func:`mirrored_rows` as one object per candidate."""
    found = mirrored_rows(mirror, qvec, text, filters, limit)
    return [Candidate(mirror.uids[row], cosine, bm25, in_vector, in_text)
            for row, cosine, bm25, in_vector, in_text in zip(found.rows.tolist(), found.cosine.tolist(),
                                                              found.bm25.tolist(), found.in_vector.tolist(),
                                                              found.in_text.tolist(), strict=True)]


def text_hits(mirror: VectorMirror, fts_query: str, keep: np.ndarray | None, limit: int) -> list[tuple[int, float]]:
    """(mirror row, BM25 score) of the in-memory full-text leg's best ``limit`` rows among those ``keep`` allows."""
    return mirror.text.search(fts_query, keep, limit) if mirror.text is not None and fts_query.strip() else []


def _text_hits(mirror: VectorMirror, text: TextRows | str | list[tuple[int, float]] | None, keep: np.ndarray | None,
               limit: int) -> list[tuple[int, float]]:
    """(mirror row, BM25 score) of the full-text leg's rows."""
    if text is None:
        return []
    if isinstance(text, list):
        return text
    if isinstance(text, str):
        return text_hits(mirror, text, keep, limit)
    hits = []
    for row in text.result():
        pos = mirror.position.get(row["uid"])
        if pos is not None:  # None: written after the mirror was taken; it is rebuilt on the next query
            hits.append((pos, float(row["_score"])))
    return hits


def _add_text_hits(found: dict[str, Candidate], quantized: QuantizedMirror, qvec: np.ndarray,
                   rows: list[dict[str, Any]]) -> None:
    """The full-text leg's rows into ``found``, a new candidate's exact cosine from the mirror's float32 rows.
    A row the mirror lacks is not in its catalog (the index drops such candidates anyway)."""
    fresh = [(row["uid"], quantized.position[row["uid"]]) for row in rows
             if row["uid"] not in found and row["uid"] in quantized.position]
    if fresh:
        order = np.argsort([pos for _, pos in fresh], kind="stable")  # ascending offsets: a forward read
        positions = np.array([fresh[i][1] for i in order], dtype=np.int64)
        cosines = quantized.vectors(positions) @ np.asarray(qvec, dtype=np.float32)
        for i, cosine in zip(order.tolist(), cosines.tolist(), strict=True):
            found[fresh[i][0]] = Candidate(fresh[i][0], float(cosine))
    for row in rows:
        cand = found.get(row["uid"])
        if cand is not None:
            cand.bm25 = float(row["_score"])
            cand.in_text_leg = True

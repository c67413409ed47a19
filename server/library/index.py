"""The template index: the LanceDB table (search index and embedding cache in one) and the in-memory
catalog of records.

One row per template. A row is reused (no re-embedding) while the file's
fingerprint (size + mtime) or, failing that, its content hash still matches,
and the embedding model id is the same. The display fields live in the table
too, so a warm start needs no YAML parsing at all; below the IVF switch point it does not even open the
table (snapshot.py), and a new index answers from memory while its table is written
(TemplateIndex._start_new). The table's layout and scale choices are in lance_table.py, syncing in
index_sync.py, upkeep in index_upkeep.py, the two search legs in candidates.py.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from . import quantized_mirror, snapshot, term_counts, text_leg, vector_mirror
from .candidates import (
    Candidate,
    CandidateRows,
    mirrored_candidates,
    mirrored_rows,
    start_text_leg,
    table_candidates,
    text_only_candidates,
)
from .foreground import Foreground
from .index_sync import IndexStats, IndexSync, ProgressFn, ScanEntry, SyncReport
from .lance_table import (
    FTS_OPTIONS,
    TABLE,
    IndexError_,
    WriterLease,
    import_lancedb,
    python_values,
    table_schema,
)
from .long_lived import bulk_objects
from .quantized_mirror import QuantizedKeeper
from .templates import TEXT_VERSION, Fingerprint, LoadProblem, TemplateRecord
from .text_mirror import TextMirror, reproduces
from .vector_mirror import VectorMirror, attach_text, load_mirror

if TYPE_CHECKING:
    from ..storage.object_store import ObjectRoot
    from .embedder import Embedder

log = logging.getLogger(__name__)

CATALOG_BATCH_ROWS = 10_000
INDEX_DIR = "index.lance"  # the LanceDB database directory inside the cache dir


class TemplateIndex(IndexSync):
    """Owns the LanceDB table and the in-memory catalog of records."""

    def __init__(self, cache_dir: Path | None, roots: list[Path], embedder: Embedder, *, uri: str | None = None,
                 storage_options: dict[str, str] | None = None, object_roots: list[ObjectRoot] | None = None,
                 lease: WriterLease | None = None):
        self.roots = roots
        self.object_roots = {r.uri: r for r in object_roots or []}
        self.embedder = embedder
        self.lease = lease  # None: every process may write (a file lock serialises them on a local dir)
        self._storage_options = dict(storage_options or {})
        self._temp_dir: str | None = None
        self.location: Path | None  # a local directory, or None for object storage (then see self.uri)
        if uri is not None and "://" in uri:
            self.location = None
            self.uri = uri.rstrip("/")
        elif uri is not None:
            self.location = Path(uri).expanduser().resolve()
            self.uri = str(self.location)
        else:
            if cache_dir is None:
                self._temp_dir = tempfile.mkdtemp(prefix="oic-ai-index-")
                cache_dir = Path(self._temp_dir)
            self.location = cache_dir / INDEX_DIR
            self.uri = str(self.location)
        self._lock = threading.RLock()
        self._db: Any = None
        self._table: Any = None
        self.catalog: dict[str, TemplateRecord] = {}
        self._uid_by_name: dict[str, str] = {}
        self._fingerprint_overrides: dict[str, Fingerprint] = {}
        self.problems: list[LoadProblem] = []
        # Files that failed to load, by uid, with the (size, mtime_ns) they had: not read again until they change
        # (30 broken 1 MB files used to be re-read and re-parsed by every sync, i.e. every search after idle).
        self._broken: dict[str, tuple[int, int, LoadProblem]] = {}
        self._scan_skipped: list[LoadProblem] = []  # special files and refused symlinks seen by the last scan
        self.follow_external_symlinks = False  # ai.templates_follow_external_symlinks (see templates.py)
        self.stats = IndexStats()
        self._last_scan = 0.0
        self._pending_optimize = 0
        self.generation = 0  # bumped whenever the catalog changes, so derived caches know to rebuild
        self._loaded_version: int | None = None  # table version our catalog reflects; another writer moves it
        self._mirror: VectorMirror | None = None
        self._mirror_lock = threading.Lock()
        self._text_builder: threading.Thread | None = None
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self.vector_index_rows = 0  # rows the vector index was trained on; 0 = flat search
        self._scanner: threading.Thread | None = None
        self._optimizer: threading.Thread | None = None
        self._pending_scan: list[ScanEntry] | None = None
        self._scan_seconds = 0.0
        self.foreground = Foreground()  # searches in flight, for which the background scan makes way
        # The mirror on disk (snapshot.py): for a local index that only this process's kind of writer updates.
        self.snapshot_path = (self.location / snapshot.FILE
                              if self.location is not None and lease is None and not self.object_roots else None)
        self.from_snapshot = False  # searching from the mirror on disk; the table is not open (yet)
        # Above the mirror's size, the vector leg as 8-bit codes (quantized_mirror): kept beside the table for the
        # next start under the same conditions as the mirror on disk.
        self._quantized = QuantizedKeeper(self.location, model_key=(lambda: self.model_key)
                                          if self.snapshot_path is not None else None)
        self._text_leg = text_leg.TextLegKeeper(self.location, (lambda: self.model_key) if self.snapshot_path else None,
                                                after=lambda: self._quantized.join(60))
        self._embedded_ahead: dict[str, np.ndarray] = {}  # text -> vector, embedded before the table existed
        self._table_writer: threading.Thread | None = None  # writes a new index's table after it went live

    # ---- starting ------------------------------------------------------------
    def start(self, progress: ProgressFn | None = None) -> SyncReport | None:
        """Ready the index for searching: from the mirror on disk while it still describes the template files
        (LanceDB is not even imported), else by opening the table and syncing it with the files."""
        report = self._start_from_snapshot() or self._start_new(progress)
        if report is not None:
            return report
        self.open()
        report = self.sync(progress=progress)
        if self._table is not None:  # above the mirror's size, both legs' postings and codes are built from now on
            self._quantized.current(self._table, self.catalog, self.embedder.dimensions, wait=0)
            self._text_leg.current(self._table, self.catalog)
        return report

    def _start_new(self, progress: ProgressFn | None) -> SyncReport | None:
        """A new index (no table yet) below the mirror's size: every template is read and embedded, the mirror
        is built from them in memory and answers at once, and the table is written in the background.

        Why: on a cold start (48 templates) importing LanceDB, creating the table and its full-text index and
        reading the mirror back came to ~0.6 s on top of ~1.65 s of embedding; embedding while LanceDB
        imported was measured no faster on two cores (the import took a core from onnxruntime).
        """
        path = self.snapshot_path  # a local index that only this process's kind of writer updates
        table_dir = path.parent / f"{TABLE}.lance" if path is not None else None
        if table_dir is None or table_dir.exists() or not reproduces(FTS_OPTIONS):
            return None
        started = time.perf_counter()
        entries = self.scan()
        if not vector_mirror.fits(len(entries)):
            return None
        table_dir.parent.mkdir(parents=True, exist_ok=True)
        # The writer lock is held from here until the table is written, as a sync holds it while it embeds:
        # servers starting together on one empty cache dir then embed once, the others wait and take the rows.
        held = contextlib.ExitStack()
        handed_over = False
        try:
            if not held.enter_context(self._writer_lock(False)) or table_dir.exists():
                return None
            report, mirror = self._read_and_embed(entries, progress, started)
            with self._lock:
                self._table_writer = threading.Thread(target=self._write_new_table, args=(mirror, held),
                                                      name="index-write", daemon=True)
                self._table_writer.start()
                handed_over = True
            return report
        finally:
            if not handed_over:
                held.close()

    def _read_and_embed(self, entries: list[ScanEntry], progress: ProgressFn | None,
                        started: float) -> tuple[SyncReport, VectorMirror]:
        """Every template of a new index read and embedded, and the mirror built from them, made current."""
        problems = list(self._scan_skipped)
        records = []
        for root_s, rel, size, mtime_ns in entries:
            uid = f"{root_s}::{rel}"
            raw = self._read_file(uid, root_s, rel, size, mtime_ns, problems)
            rec = None if raw is None else self._parse_file(uid, root_s, rel, raw, size, mtime_ns, problems)
            if rec is not None:
                records.append(rec)
        vectors = self._embed_records(records, progress)
        matrix = np.stack([vectors[r.text] for r in records]) if records else \
            np.zeros((0, self.embedder.dimensions), dtype=np.float32)
        catalog = {f"{r.root}::{r.id}": r for r in records}
        mirror = VectorMirror(catalog, list(catalog), matrix)
        mirror.text = TextMirror([r.text for r in records])
        with self._lock:
            self.catalog, self._mirror, self._embedded_ahead = catalog, mirror, vectors
            self._reindex_names()
            self.generation += 1
        return self._account(SyncReport(scanned=len(entries), embedded=len(records)), problems, started), mirror

    def _write_new_table(self, mirror: VectorMirror, held: contextlib.ExitStack) -> None:
        """The table of :meth:`_start_new`'s records, with their vectors, then the writer lock ``held`` is
        released and the mirror written to disk."""
        try:
            with held, self._lock:
                self._connect()
                records = list(self.catalog.values())
                if records:
                    self._write(records, None)  # by text from _embedded_ahead: nothing is embedded again
                    self._optimize()
                mirror.catalog = self.catalog  # the same templates, their text now in the table
                self._loaded_version = self._table_version()
        except Exception as exc:  # noqa: BLE001 - searches go on from memory; the next sync writes the table
            log.error("the new index could not be written to %s: %s", self.uri, exc)
            self._table = None
            return
        finally:
            self._table_writer = None
        self._save_snapshot(mirror)

    def _start_from_snapshot(self) -> SyncReport | None:
        path = self.snapshot_path
        if path is None or not path.is_file():
            return None
        started = time.perf_counter()
        try:
            with bulk_objects():  # as for a catalog read from the table: later collections skip the records
                snap = snapshot.load(path, model_key=self.model_key, dims=self.embedder.dimensions)
        except Exception as exc:  # noqa: BLE001 - any unreadable or foreign file: the table answers instead
            log.info("the index mirror %s is not used (%s): opening the index", path, exc)
            return None
        if not vector_mirror.fits(len(snap.catalog)):
            return None
        entries = self.scan()
        with self._lock:
            if self._table is not None:
                return None
            self.catalog, self._fingerprint_overrides, self._broken = snap.catalog, snap.overrides, snap.broken
            if self._differs(entries):
                self.catalog, self._fingerprint_overrides, self._broken = {}, {}, {}
                log.info("templates changed since the index mirror was written: opening the index")
                return None
            self._reindex_names()
            self._mirror = snap.mirror
            self._loaded_version = snap.table_version
            self.from_snapshot = True
            self.generation += 1
            known = (self._known_broken(f"{root}::{rel}", size, mtime) for root, rel, size, mtime in entries)
            problems = [*self._scan_skipped, *(p for p in known if p is not None)]
            return self._account(SyncReport(scanned=len(entries), hits=len(self.catalog)), problems, started)

    # ---- opening -----------------------------------------------------------
    def open(self) -> None:
        with self._lock:
            if self._table is not None:
                return
            self._connect()
            self._load_catalog()

    def _connect(self) -> None:
        """Connect and open the table (creating it, and its full-text index, when there is none)."""
        with self._lock:
            if self._table is not None:
                return
            lancedb = import_lancedb()
            try:
                if self.location is not None:
                    self.location.mkdir(parents=True, exist_ok=True)
                # Readers see other processes' commits within a second (several servers may share a cache dir).
                self._db = lancedb.connect(self.uri, read_consistency_interval=timedelta(seconds=1),
                                           storage_options=self._storage_options or None)
                if self.lease is not None and TABLE not in self._db.table_names() and not self.lease.try_acquire():
                    self._wait_for_writer()  # the writer creates the table; two creators could race on a bucket
                if TABLE in self._db.table_names():
                    table = self._db.open_table(TABLE)
                    if not self._compatible(table) and self.lease is not None and not self.lease.try_acquire():
                        raise IndexError_(
                            f"the shared index at {self.uri} was built with another embedding model or text "
                            f"version than this replica's ({self.model_key}); run one version on every replica")
                    if not self._compatible(table):
                        log.info("embedding model changed: dropping the index to re-embed every template")
                        table = self._create_table(replace=True)
                else:
                    table = self._create_table()
                self._table = table
                self.from_snapshot = False
                self._loaded_version = self._table_version()
                self._read_vector_index()
            except OSError as exc:
                raise IndexError_(
                    f"cannot open the index at {self.uri}: {exc}. Set OIC_AI_CACHE_DIR to a writable directory."
                ) from exc
            except (RuntimeError, ValueError) as exc:
                if self.location is not None:
                    raise
                raise IndexError_(
                    f"cannot open the index at {self.uri}: {exc}. Check OIC_AI_INDEX_URI, the bucket, and the "
                    "storage settings (OIC_AI_STORAGE_ENDPOINT, _REGION, _ACCESS_KEY_ID, _SECRET_ACCESS_KEY)."
                ) from exc

    def _wait_for_writer(self, timeout: float = 300.0) -> None:
        """A replica that does not write waits for the writer to create the shared table."""
        deadline = time.monotonic() + timeout
        log.info("waiting for the index writer to create the shared index at %s", self.uri)
        while TABLE not in self._db.table_names():
            if self.lease is not None and self.lease.try_acquire():
                return  # the writer went away: this replica creates it
            if time.monotonic() > deadline:
                raise IndexError_(f"no replica created the shared index at {self.uri} within {timeout:.0f}s; "
                                  "check the writer replica's log")
            time.sleep(1.0)

    def _compatible(self, table: Any) -> bool:
        schema = table.schema
        if "vector" not in schema.names or "model_id" not in schema.names or "uid" not in schema.names:
            return False
        if schema.field("vector").type.list_size != self.embedder.dimensions:
            return False
        expected = set(table_schema(self.embedder.dimensions).names)
        if set(schema.names) != expected:
            return False
        rows = table.search().select(["model_id"]).limit(1).to_list()
        return not rows or rows[0]["model_id"] == self.model_key

    @property
    def model_key(self) -> str:
        """What a stored vector depends on: the embedding model and the text we built for it."""
        return f"{self.embedder.model_id}|text-v{TEXT_VERSION}"

    def _create_table(self, replace: bool = False) -> Any:
        """Create the table (or open the one another process created a moment ago) with its FTS index."""
        from lancedb.index import FTS

        schema = table_schema(self.embedder.dimensions)
        if replace:
            table = self._db.create_table(TABLE, schema=schema, mode="overwrite")
        else:
            try:
                # exist_ok: two servers starting on one empty cache dir must not wipe each other's rows.
                table = self._db.create_table(TABLE, schema=schema, exist_ok=True)
            except (RuntimeError, ValueError, OSError):
                table = self._db.open_table(TABLE)
        if not any("text" in getattr(ix, "columns", []) for ix in table.list_indices()):
            try:
                table.create_index("text", config=FTS(**FTS_OPTIONS))
            except (RuntimeError, ValueError) as exc:  # created concurrently by another process
                log.info("FTS index not created here: %s", exc)
        return table


    def _load_catalog(self) -> None:
        with bulk_objects():
            self._load_catalog_columns()

    def _load_catalog_columns(self) -> None:
        # Column-wise and without the vectors: fewer temporary objects than one dict per row.
        # The searchable text stays in the table (the full-text leg reads it there; only a sync embeds it, from
        # freshly parsed records): in memory it would be ~1.3 kB per template that no reader uses.
        names = [f.name for f in dataclasses.fields(TemplateRecord)]
        rows = self._table.count_rows()
        catalog: dict[str, TemplateRecord] = {}
        if rows:
            query = self._table.search().select(["uid", *(n for n in names if n != "text")]).limit(rows)
            # In batches, so the Arrow copy of the catalog is never held whole beside the Python one.
            for batch in query.to_batches(CATALOG_BATCH_ROWS):
                columns = [[""] * batch.num_rows if name == "text" else python_values(batch.column(name))
                           for name in names]
                for uid, values in zip(batch.column("uid").to_pylist(), zip(*columns, strict=True), strict=True):
                    catalog[uid] = TemplateRecord(*values)
        self.catalog = catalog
        self._reindex_names()
        self.generation += 1

    def _reindex_names(self) -> None:
        catalog = self.catalog
        ranks = {str(r): i for i, r in enumerate([*self.roots, *self.object_roots])}
        by_name: dict[str, str] = {}
        for uid in sorted(catalog, key=lambda u: (ranks.get(catalog[u].root, len(ranks)), u)):
            rec = catalog[uid]
            name = rec.name
            if name in by_name:
                # Same relative path under two roots: the later root's copy gets a qualified name.
                name = f"{name}@{Path(rec.root).name}"
                rec.name = name
            by_name[name] = uid
        self._uid_by_name = by_name

    # ---- reading -----------------------------------------------------------
    def candidates(self, qvec: np.ndarray | Callable[[], np.ndarray] | None, fts_query: str, where: str | None,
                   limit: int, filters: dict[str, str | None] | None = None) -> list[Candidate]:
        """Vector and full-text candidates; without a query vector (no embedding model) the full-text leg
        alone, or every row matching ``where`` when the query has no searchable words. ``qvec`` may be a
        function that embeds the query: it is called while the full-text leg runs. ``filters`` (column ->
        value) is ``where`` in structured form; with it, flat-search-sized tables answer the vector leg from
        the in-memory mirror."""
        if qvec is None:
            found = text_only_candidates(self._opened_table(), fts_query, where, limit)
            return [c for c in found if c.uid in self.catalog]
        structured = filters is not None or not where
        mirror = self._vector_mirror() if structured else None
        in_memory = mirror is not None and mirror.text is not None
        table = None if in_memory else self._opened_table()
        quantized = self._quantized.current(table, self.catalog, self.embedder.dimensions) \
            if mirror is None and structured else None
        # A text hit's cosine needs its vector: from the table only when no mirror holds it (~1.7 ms of a
        # 4-6 ms full-text leg at 100,000 templates).
        columns = ["uid"] if mirror is not None or quantized is not None else ["uid", "vector"]
        postings = self._text_leg.current(table, self.catalog, text_leg.READ_WAIT) if quantized else None
        text_rows = None if in_memory else start_text_leg(self._leg_pool(), table, fts_query, where, limit, columns,
                                                          postings, filters)
        vector = qvec() if callable(qvec) else qvec
        if mirror is not None:
            found = mirrored_candidates(mirror, vector, fts_query if in_memory else text_rows, filters or {}, limit)
        else:
            found = table_candidates(table, vector, text_rows, where, limit, vector_index_rows=self.vector_index_rows,
                                     quantized=quantized, filters=filters)
        return [c for c in found if c.uid in self.catalog]

    def memory_mirror(self) -> VectorMirror | None:
        """The mirror when it answers both legs (vectors and full-text postings in memory), else None."""
        mirror = self._vector_mirror()
        return mirror if mirror is not None and mirror.text is not None else None

    def mirror_rows(self, mirror: VectorMirror, qvec: np.ndarray, hits: list[tuple[int, float]],
                    filters: dict[str, str | None], limit: int) -> CandidateRows:
        """:meth:`candidates` from ``mirror`` (:meth:`memory_mirror`) as arrays, its full-text ``hits`` already
        found; without the rows a newer catalog no longer has (a mirror's rows are all its own catalog's)."""
        found, catalog = mirrored_rows(mirror, qvec, hits, filters, limit), self.catalog
        if mirror.catalog is catalog:
            return found
        inside = np.fromiter((mirror.uids[row] in catalog for row in found.rows.tolist()), bool, len(found.rows))
        return found if inside.all() else found.only(inside)

    def _opened_table(self) -> Any:
        """The table, opened now if the index started from the mirror on disk. No lock once open: a background
        optimize holds it for a second at 100,000 rows."""
        table = self._table
        if table is None:
            self.open()
            table = self._table
        return table

    def _vector_mirror(self) -> VectorMirror | None:
        """The in-memory copy of the vectors while search is flat (below the IVF switch point), following
        the catalog: rebuilt when the catalog object is swapped."""
        catalog = self.catalog
        mirror = self._mirror
        if mirror is not None and mirror.catalog is catalog:
            return mirror
        if self.vector_index_rows or not vector_mirror.fits(len(catalog)) or self._table is None:
            self._mirror = None
            return None
        with self._mirror_lock:
            if self._mirror is not None and self._mirror.catalog is self.catalog:
                return self._mirror
            self._mirror = load_mirror(self._table, self.catalog, self.embedder.dimensions)
            if self._mirror is not None:
                self._text_builder = threading.Thread(target=self._attach_text, args=(self._mirror, self._table),
                                                      name="text-mirror", daemon=True)
                self._text_builder.start()
            return self._mirror

    @property
    def source(self) -> str:
        """Where searches are answered from (cache_stats says so)."""
        if self._table_writer is not None:
            return "memory: a new index, its table being written"
        if self._table is None and self.from_snapshot:
            return "the mirror on disk; the table opens at the first change"
        mirror = self._mirror
        if mirror is not None and mirror.catalog is self.catalog:
            return "the table, through its in-memory mirror"
        if self._quantized.ready_for(self.catalog):
            postings = " and its full-text postings" if self._text_leg.ready_for(self.catalog) else ""
            return f"the table, with its vector leg's 8-bit codes{postings} in memory"
        return "the table"

    def wait_for_table(self, timeout: float = 30.0) -> None:
        """Until a new index's table is written (about a second at 48 templates; see :meth:`_start_new`)."""
        writer = self._table_writer
        if writer is not None:
            writer.join(timeout)

    def background_busy(self) -> bool:
        """Whether work runs in the background: the in-memory full-text leg's build, a new index's table, the
        mirror's term postings, the quantized vector leg's and the full-text leg's builds above its size."""
        return (any(w is not None and w.is_alive() for w in self._background_threads()) or self._quantized.busy()
                or self._text_leg.busy())

    def settle(self, timeout: float = 60.0) -> None:
        """Wait for that background work (benchmarks time searches after it)."""
        for worker in self._background_threads():
            if worker is not None:
                worker.join(timeout)
        self._quantized.join(timeout)
        self._text_leg.join(timeout)

    def _background_threads(self) -> list[threading.Thread | None]:
        mirror = self._mirror
        return [self._table_writer, self._text_builder, mirror.terms_builder() if mirror is not None else None]

    def _attach_text(self, mirror: VectorMirror, table: Any) -> None:
        """The mirror's full-text leg, built off the search path (on any failure LanceDB keeps answering it);
        then the whole mirror is written to disk for the next start."""
        try:
            attach_text(mirror, table)
        except Exception as exc:  # noqa: BLE001 - a closed or unreadable table: the LanceDB leg still works
            log.info("full-text leg stays in LanceDB: %s", exc)
            return
        self._save_snapshot(mirror)

    def _bookkeeping_changed(self) -> None:
        """A sync noted a touched or a broken file and changed no record: the mirror on disk would no longer
        match the files at the next start, so the current one is written again."""
        mirror = self._mirror
        if mirror is not None and mirror.text is not None:
            self._save_snapshot(mirror)

    def _save_snapshot(self, mirror: VectorMirror) -> None:
        path = self.snapshot_path
        if path is None or mirror.text is None or mirror.catalog is not self.catalog:
            return  # the catalog moved on meanwhile: the next mirror is written instead
        try:
            snapshot.save(path, mirror, model_key=self.model_key, table_version=self._loaded_version,
                          overrides=dict(self._fingerprint_overrides), broken=dict(self._broken))
        except Exception as exc:  # noqa: BLE001 - only the next start is slower (it opens the table)
            log.info("the index mirror was not written to %s: %s", path, exc)

    def _leg_pool(self) -> concurrent.futures.ThreadPoolExecutor:
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="fts-leg")
        return self._pool

    def by_name(self, name: str) -> TemplateRecord | None:
        uid = self._uid_by_name.get(name)
        if uid is None and name.endswith((".yml", ".yaml")):
            uid = self._uid_by_name.get(name.rsplit(".", 1)[0])
        return self.catalog.get(uid) if uid else None

    def names(self) -> list[str]:
        return sorted(self._uid_by_name)

    def records(self) -> list[TemplateRecord]:
        catalog = self.catalog
        return [catalog[uid] for uid in self._uid_by_name.values() if uid in catalog]

    def size_bytes(self) -> int | None:
        if self.location is None:
            return None  # object storage: ask the bucket
        total = 0
        for dirpath, _dirs, files in os.walk(self.location):
            for f in files:
                with contextlib.suppress(OSError):
                    total += (Path(dirpath) / f).stat().st_size
        return total

    def known_values(self, column: str) -> set[str]:
        return {getattr(r, column) for r in self.catalog.values() if getattr(r, column)}

    def all_packages(self) -> set[str]:
        return {p.lower() for p in set().union(*(r.packages for r in self.catalog.values()))}

    def clear(self) -> None:
        """Drop the table (``cache clear``): the next sync re-embeds everything."""
        with self._lock:
            self.open()
            self._db.drop_table(TABLE)
            if self.snapshot_path is not None:
                self.snapshot_path.unlink(missing_ok=True)
                for kept in (quantized_mirror, text_leg, term_counts):  # what a next start would read
                    kept.remove(self.snapshot_path.parent)
            self._mirror = None
            self._table = self._create_table()
            self.vector_index_rows = 0
            self.catalog = {}
            self._uid_by_name = {}
            self._fingerprint_overrides = {}
            self.generation += 1

    def close(self) -> None:
        # The writers end by writing the table or the mirror to disk: a short-lived CLI call must not cut them off.
        for worker in (self._table_writer, self._optimizer, self._text_builder):
            if worker is not None:
                worker.join(60)
        self._quantized.close()
        self._text_leg.close()
        with self._lock:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None
            self._table = None
            self._db = None
            if self._temp_dir:
                shutil.rmtree(self._temp_dir, ignore_errors=True)
                self._temp_dir = None


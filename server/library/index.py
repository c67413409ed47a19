"""The LanceDB table: the search index and the embedding cache in one.

One row per template. A row is reused (no re-embedding) while the file's
fingerprint (size + mtime) or, failing that, its content hash still matches,
and the embedding model id is the same. The display fields live in the table
too, so a warm start needs no YAML parsing at all.

Scale (measured by ``make bench``, see BENCHMARKS.md): vector search is exact (a flat scan) while the
table is small. Once a sync or bulk load leaves ``VECTOR_INDEX_MIN_ROWS`` (20,000) rows or more, the
index builds an IVF_SQ vector index itself (cosine, sqrt(rows) partitions) and queries it with
``VECTOR_INDEX_NPROBES`` probes and a refine factor of ``VECTOR_INDEX_REFINE`` (exact re-ranking of
twice the requested rows). Why these: on this 2-core machine the flat leg costs ~1.5 ms per 1,000 rows
(about 40 ms p95 at 20,000 rows, 80-120 ms at 50,000, several hundred ms at 100,000), so past ~20,000
rows flat search alone would eat the 100 ms p95 budget; IVF_SQ with 20 probes and refine 2 kept recall@10
against flat search at 1.00 on real MiniLM query vectors at 100,000 rows (without refine: 0.95), built in
~4-12 s, and answers in ~10-15 ms. IVF_PQ (recall 0.4) and IVF_HNSW_SQ (recall 0.8, 60 s build) lost.
The index is named after the row count it was trained on and retrained once the table has grown four-fold;
``optimize()`` after every write folds new rows into the FTS and vector indexes (rows written since are
still searched, by a flat scan, until then).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import gc
import importlib.util
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

import numpy as np

from ..core.diskfull import DiskFullError, is_disk_full
from .templates import (
    TEMPLATE_SUFFIXES,
    TEXT_VERSION,
    Fingerprint,
    LoadProblem,
    TemplateRecord,
    YamlError,
    content_hash,
    load_record,
    read_template_file,
    regular_file_stat,
)

if TYPE_CHECKING:
    from ..storage.object_store import ObjectRoot
    from .embeddings import Embedder

log = logging.getLogger(__name__)

TABLE = "templates"
EMBED_BATCH = 32
BULK_CHUNK = 25_000
WRITER_LOCK = "writer.lock"
WRITE_RETRIES = 5
VECTOR_INDEX_MIN_ROWS = 20_000
MIRROR_MAX_ROWS = VECTOR_INDEX_MIN_ROWS  # the in-memory vector mirror serves flat search only
VECTOR_INDEX_NPROBES = 20
VECTOR_INDEX_REFINE = 2
VECTOR_INDEX_PREFIX = "vector_ivfsq_"
VECTOR_INDEX_REGROW = 4  # retrain when the table has grown this many times past the training size
BACKGROUND_SCAN_MIN = 2_000  # from this many templates the periodic fingerprint scan leaves the search path
SCAN_DUTY = 50  # measured at 10,000 templates: duty 10 (a 0.13 s scan every 2 s) added ~15 ms to search p95
LIST_FIELDS = ("use_cases", "keywords", "explicit_keywords", "capabilities", "recommended_for", "packages",
               "terms_strong", "terms_weak")
STR_FIELDS = ("id", "root", "name", "image_name", "content_hash", "os", "dist", "arch", "image_type",
              "description", "use_case", "kernel", "text")

ProgressFn = Callable[[int, int, str], None]
ScanEntry = tuple[str, str, int, int]  # root, path relative to it (posix), size, mtime_ns


class IndexError_(RuntimeError):
    """The index cannot be opened or written; the message says what to do."""


class WriterLease(Protocol):
    """Who may write a shared index (the sync leader); the others follow its commits (server/storage/pg_lease.py)."""

    def try_acquire(self) -> bool: ...
    def release(self) -> None: ...


def _import_lancedb() -> Any:
    # LanceDB's Rust core logs to stderr at WARN unless told otherwise before import.
    os.environ.setdefault("LANCEDB_LOG", "error")
    if "lancedb" not in sys.modules:
        _defer_namespace_client()
    import lancedb

    return lancedb


def _defer_namespace_client() -> None:
    """Skip the REST namespace client's package __init__ until something actually uses it.

    ``import lancedb`` pulls in ``lance_namespace_urllib3_client``, whose __init__ imports every generated
    REST API class: ~0.8 s of a ~1.8 s import that a local, embedded table never needs, on the path from
    process start to the first search result. Its submodules (the models LanceDB does use) import normally;
    the first attribute read on the package itself runs the real __init__, so nothing is lost.
    """
    name = "lance_namespace_urllib3_client"
    if name in sys.modules:
        return
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        return
    package = types.ModuleType(name)
    package.__path__ = list(spec.submodule_search_locations)
    package.__spec__ = spec
    package.__file__ = spec.origin
    package.__package__ = name

    def complete(attr: str) -> Any:
        package.__dict__.pop("__getattr__", None)
        spec.loader.exec_module(package)
        return getattr(package, attr)

    package.__getattr__ = complete  # type: ignore[attr-defined]  # PEP 562 module __getattr__
    sys.modules[name] = package


def _retry_on_conflict(action: Callable[[], Any], attempts: int, what: str) -> Any:
    """LanceDB commits optimistically: when another process commits first, back off and try again."""
    for attempt in range(attempts):
        try:
            return action()
        except RuntimeError as exc:
            if "conflict" not in str(exc).lower() or attempt == attempts - 1:
                raise
            log.info("%s conflicted with another writer; retrying (%d)", what, attempt + 1)
            time.sleep(0.05 * 2 ** attempt)
    return None


def _schema(dims: int) -> Any:
    import pyarrow as pa

    fields = [pa.field("uid", pa.string(), nullable=False)]
    fields += [pa.field(name, pa.string()) for name in STR_FIELDS]
    fields += [pa.field(name, pa.list_(pa.string())) for name in LIST_FIELDS]
    fields += [
        pa.field("size", pa.int64()),
        pa.field("mtime_ns", pa.int64()),
        pa.field("has_metadata", pa.bool_()),
        pa.field("model_id", pa.string()),
        pa.field("dims", pa.int32()),
        pa.field("vector", pa.list_(pa.float32(), dims)),
    ]
    return pa.schema(fields)


@contextlib.contextmanager
def _bulk_objects() -> Iterator[None]:
    """Create many long-lived objects without the cyclic GC re-walking them (100,000 records: 9 s -> 4 s).

    Afterwards ``gc.freeze()`` parks everything alive in the permanent generation, so later collections
    (the scorer's per-template word sets, every request) do not traverse the catalog again either.
    Records hold no reference cycles: replaced ones are still freed by reference counting.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.freeze()
            gc.enable()


def _sql_quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def build_where(filters: dict[str, str | None]) -> str | None:
    clauses = [f"{col} = {_sql_quote(val)}" for col, val in filters.items() if val]
    return " AND ".join(clauses) or None


@dataclass
class SyncReport:
    scanned: int = 0
    embedded: int = 0
    hits: int = 0
    removed: int = 0
    problems: list[LoadProblem] = field(default_factory=list)
    seconds: float = 0.0
    followed: bool = False  # another replica is the writer: this one took the table as that replica left it


@dataclass
class Candidate:
    uid: str
    cosine: float
    bm25: float = 0.0
    in_vector_leg: bool = False
    in_text_leg: bool = False


@dataclass
class IndexStats:
    embedded_total: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    last_sync: float | None = None
    last_sync_seconds: float | None = None
    syncs: int = 0


class _VectorMirror:
    """Vectors of one catalog snapshot, with the filter columns for prefiltering like LanceDB's ``where``."""

    def __init__(self, catalog: dict[str, TemplateRecord], uids: list[str], matrix: np.ndarray) -> None:
        self.catalog = catalog
        self.uids = uids
        self.matrix = matrix
        self.position = {u: i for i, u in enumerate(uids)}
        self._columns: dict[str, np.ndarray] = {}

    def mask(self, filters: dict[str, str | None]) -> np.ndarray | None:
        keep: np.ndarray | None = None
        for column, value in filters.items():
            if not value:
                continue
            values = self._columns.get(column)
            if values is None:
                values = self._columns[column] = np.array([getattr(self.catalog[u], column) for u in self.uids],
                                                          dtype=object)
            hit = values == value
            keep = hit if keep is None else keep & hit
        return keep


class TemplateIndex:
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
            self.location = cache_dir / "index.lance"
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
        self._loaded_version: int | None = None
        self._mirror: _VectorMirror | None = None
        self._mirror_lock = threading.Lock()
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None  # table version our catalog reflects; another writer moves it
        self.vector_index_rows = 0  # rows the vector index was trained on; 0 = flat search
        self._scanner: threading.Thread | None = None
        self._optimizer: threading.Thread | None = None
        self._pending_scan: list[ScanEntry] | None = None
        self._scan_seconds = 0.0

    # ---- opening -----------------------------------------------------------
    def open(self) -> None:
        with self._lock:
            if self._table is not None:
                return
            lancedb = _import_lancedb()
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
            self._load_catalog()

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
        expected = set(_schema(self.embedder.dimensions).names)
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

        schema = _schema(self.embedder.dimensions)
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
                table.create_index(
                    "text",
                    config=FTS(with_position=False, base_tokenizer="simple", stem=True, remove_stop_words=True,
                               lower_case=True, ascii_folding=True),
                )
            except (RuntimeError, ValueError) as exc:  # created concurrently by another process
                log.info("FTS index not created here: %s", exc)
        return table

    def _table_version(self) -> int | None:
        try:
            return int(self._table.version)
        except Exception:  # noqa: BLE001 - a version is an optimisation hint, never a reason to fail
            return None

    def _upsert(self, table: Any) -> None:
        _retry_on_conflict(
            lambda: self._table.merge_insert("uid").when_matched_update_all().when_not_matched_insert_all()
            .execute(table), WRITE_RETRIES, "index write")

    def _load_catalog(self) -> None:
        with _bulk_objects():
            self._load_catalog_columns()

    def _load_catalog_columns(self) -> None:
        # Column-wise and without the vectors: fewer temporary objects than one dict per row.
        names = [f.name for f in dataclasses.fields(TemplateRecord)]
        rows = self._table.count_rows()
        catalog: dict[str, TemplateRecord] = {}
        if rows:
            data = self._table.search().select(["uid", *names]).limit(rows).to_arrow()
            columns = []
            for name in names:
                values = data.column(name).to_pylist()
                if name in LIST_FIELDS:
                    values = [v or [] for v in values]
                columns.append(values)
            for uid, values in zip(data.column("uid").to_pylist(), zip(*columns, strict=True), strict=True):
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

    # ---- syncing -----------------------------------------------------------
    def scan(self) -> list[ScanEntry]:
        """(root, relative path, size, mtime_ns) of every template file: the same files as
        ``templates.scan_files`` (in no particular order) but with ``os.scandir`` and no Path objects:
        0.5 s instead of 2.5 s for 100,000 files on the benchmark machine."""
        entries: list[ScanEntry] = []
        skipped: list[LoadProblem] = []
        for root in self.roots:
            root_s = str(root)
            if not os.path.isdir(root_s):
                continue
            stack = [(root_s, "")]
            while stack:
                directory, rel = stack.pop()
                try:
                    it = os.scandir(directory)
                except OSError:
                    continue
                with it:
                    for entry in it:
                        name = entry.name
                        if name.startswith("."):
                            continue
                        try:
                            if entry.is_dir(follow_symlinks=False):
                                if name not in ("files", "node_modules"):
                                    stack.append((entry.path, f"{rel}{name}/"))
                                continue
                            if not name.endswith(TEMPLATE_SUFFIXES):
                                continue
                            if entry.is_file(follow_symlinks=False):
                                st = entry.stat(follow_symlinks=False)
                            else:  # symlink, FIFO, device, socket: only the policy in templates.py decides
                                st = regular_file_stat(entry.path, root_s, self.follow_external_symlinks)
                        except ValueError as exc:
                            skipped.append(LoadProblem(entry.path, str(exc)))
                            continue
                        except OSError:
                            continue
                        entries.append((root_s, rel + name, st.st_size, st.st_mtime_ns))
        self._scan_skipped = skipped
        for uri, source in self.object_roots.items():
            entries.extend((uri, rel, size, mtime_ns) for rel, size, mtime_ns in source.scan())
        return entries

    def _known_broken(self, uid: str, size: int, mtime_ns: int) -> LoadProblem | None:
        known = self._broken.get(uid)
        return known[2] if known is not None and known[0] == size and known[1] == mtime_ns else None

    def _read_source(self, root_s: str, rel: str) -> bytes:
        source = self.object_roots.get(root_s)
        if source is not None:
            return source.read(rel)
        raw, _ = read_template_file(Path(root_s) / rel, root_s, follow_external=self.follow_external_symlinks)
        return raw

    def _load_source(self, root_s: str, rel: str, raw: bytes, size: int, mtime_ns: int) -> TemplateRecord:
        if root_s not in self.object_roots:
            root = Path(root_s)
            return load_record(root, root / rel, raw, fingerprint=Fingerprint(size, mtime_ns))
        from ..core.yamlsafe import load_mapping
        from .templates import MAX_TEMPLATE_BYTES, looks_like_template, record_from_data

        if size > MAX_TEMPLATE_BYTES:
            raise ValueError(f"object is {size:,} bytes, over the {MAX_TEMPLATE_BYTES:,}-byte template limit")
        parsed = load_mapping(raw, max_bytes=MAX_TEMPLATE_BYTES)
        if not looks_like_template(parsed.data):
            raise ValueError("not an image template (none of image, target, disk, systemConfig at top level)")
        return record_from_data(parsed.data, rel_id=rel, root=root_s, raw=raw,
                                fingerprint=Fingerprint(size, mtime_ns))

    def read_text(self, rec: TemplateRecord) -> str:
        """A template's current text, from its directory (read as safely as at index time) or its bucket;
        OSError or ValueError says why not."""
        return self._read_source(rec.root, rec.id).decode("utf-8")

    def _differs(self, entries: list[ScanEntry]) -> bool:
        """Whether a scan shows any added, removed or touched file (read-only: safe off the search thread)."""
        catalog = self.catalog
        overrides = self._fingerprint_overrides
        seen = 0
        for root_s, rel, size, mtime_ns in entries:
            uid = f"{root_s}::{rel}"
            rec = catalog.get(uid)
            if rec is None:
                if self._known_broken(uid, size, mtime_ns) is None:
                    return True
                continue
            seen += 1
            fp = overrides.get(uid)
            known = (fp.size, fp.mtime_ns) if fp else (rec.size, rec.mtime_ns)
            if known != (size, mtime_ns) and self._known_broken(uid, size, mtime_ns) is None:
                return True
        return seen != len(catalog)

    def sync(self, progress: ProgressFn | None = None, force: bool = False,
             entries: list[ScanEntry] | None = None, wait: bool = True) -> SyncReport | None:
        """Bring the table in line with the files on disk; embed only what changed.

        ``entries`` is a scan taken moments ago (by the background scanner); without it the roots are scanned now.
        One process writes at a time (a file lock next to the table): concurrent ``merge_insert``s of the same
        new rows would each insert them. With ``wait=False`` a sync that finds another process writing is
        skipped (returns None) instead of holding up a search; the next refresh tries again.
        """
        with self._lock:
            try:
                self.open()
                with self._writer_lock(wait) as acquired:
                    if not acquired:
                        self._last_scan = time.monotonic()
                        if self.lease is None:
                            return None
                        # Another replica leads: take its commits instead of writing the same rows.
                        self._follow_locked()
                        return SyncReport(scanned=len(self.catalog), hits=len(self.catalog), followed=True,
                                          problems=list(self.problems))
                    return self._sync_locked(progress, force, entries)
            except Exception as exc:
                if is_disk_full(exc):  # LanceDB's own text is a Rust error with a source path in it
                    raise DiskFullError(self.location.parent, "the template index") from None
                raise

    def follow(self) -> bool:
        """Reload the catalog if another writer committed since we loaded (True when it did)."""
        with self._lock:
            self.open()
            return self._follow_locked()

    def _follow_locked(self) -> bool:
        with contextlib.suppress(Exception):
            self._table.checkout_latest()
        version = self._table_version()
        if version is None or version == self._loaded_version:
            return False
        self._load_catalog()
        self._read_vector_index()
        self._loaded_version = version
        return True

    @property
    def version(self) -> int | None:
        """The table version the catalog reflects (for readiness checks)."""
        return self._loaded_version

    @property
    def is_writer(self) -> bool:
        """Whether this process currently may write (the sync leader, when a lease is configured)."""
        if self.lease is None:
            return True
        return bool(getattr(self.lease, "held", False))

    @contextlib.contextmanager
    def _writer_lock(self, wait: bool) -> Iterator[bool]:
        if self.lease is not None:  # a shared index: one leader among the replicas, chosen by the lease
            yield self.lease.try_acquire()
            return
        if fcntl is None or self.location is None:
            # No advisory file locks (Windows, object storage without a lease): LanceDB's optimistic commits
            # and _retry_on_conflict keep the table consistent; configure a lease to avoid duplicate work.
            yield True
            return
        with open(self.location / WRITER_LOCK, "a+b") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _sync_locked(self, progress: ProgressFn | None, force: bool,
                     entries: list[ScanEntry] | None) -> SyncReport:
        """The sync itself; the caller holds the thread lock and the inter-process writer lock."""
        with contextlib.suppress(Exception):
            # Our handle may lag another process's commit by up to the consistency interval; writing from a
            # stale snapshot would insert rows that process just wrote.
            self._table.checkout_latest()
        version = self._table_version()
        if version is not None and self._loaded_version is not None and version != self._loaded_version:
            # Another process wrote rows since we loaded: take them instead of embedding the same files again.
            self._load_catalog()
            self._loaded_version = version
        started = time.perf_counter()
        report = SyncReport()
        seen: set[str] = set()
        changed: list[TemplateRecord] = []
        problems: list[LoadProblem] = []
        scan = self.scan() if entries is None else entries
        problems.extend(self._scan_skipped)
        broken = self._broken
        report.scanned = len(scan)
        catalog = self.catalog
        overrides = self._fingerprint_overrides
        hits = 0
        # Locals and no per-file objects: this loop runs over every file at every sync.
        for root_s, rel, size, mtime_ns in scan:
            uid = f"{root_s}::{rel}"
            seen.add(uid)
            existing = catalog.get(uid)
            if not force and existing is not None:
                known = overrides.get(uid) or existing
                if known.size == size and known.mtime_ns == mtime_ns:
                    hits += 1
                    continue
            if not force:
                known_problem = self._known_broken(uid, size, mtime_ns)
                if known_problem is not None:
                    problems.append(known_problem)
                    continue
            fp = Fingerprint(size, mtime_ns)
            path = f"{root_s}/{rel}"
            try:
                raw = self._read_source(root_s, rel)
            except (OSError, ValueError) as exc:
                reason = f"cannot read: {exc.strerror or exc}" if isinstance(exc, OSError) else str(exc)
                problem = LoadProblem(path, reason)
                problems.append(problem)
                broken[uid] = (size, mtime_ns, problem)
                continue
            if not force and existing is not None and existing.content_hash == content_hash(raw):
                overrides[uid] = fp
                hits += 1
                continue
            try:
                rec = self._load_source(root_s, rel, raw, size, mtime_ns)
            except (YamlError, ValueError) as exc:
                problem = LoadProblem(str(path), str(exc))
                problems.append(problem)
                broken[uid] = (size, mtime_ns, problem)
                log.warning("skipping template %s: %s", path, exc)
                continue
            broken.pop(uid, None)
            changed.append(rec)
        for uid in [u for u in broken if u not in seen]:
            del broken[uid]
        report.hits = hits
        removed = [uid for uid in catalog if uid not in seen]
        # An edited template keeps its uid and so its name: the full name pass (a sort of every uid,
        # ~0.4 s at 100,000) is only needed when templates appear or disappear.
        names_stable = not removed and all(f"{r.root}::{r.id}" in self.catalog for r in changed)
        if names_stable:
            for rec in changed:
                rec.name = self.catalog[f"{rec.root}::{rec.id}"].name
        if changed:
            self._write(changed, progress)
        if removed:
            self._table.delete("uid IN (" + ", ".join(_sql_quote(u) for u in removed) + ")")
            catalog = dict(self.catalog)  # swapped, never mutated in place: readers may be iterating it
            for uid in removed:
                catalog.pop(uid, None)
                self._fingerprint_overrides.pop(uid, None)
            self.catalog = catalog
            self._pending_optimize += len(removed)
        if self._pending_optimize:
            self._optimize_soon()
        if changed or removed:
            self._loaded_version = self._table_version()  # our own commits are no reason to reload
            notify = getattr(self.lease, "notify", None)
            if notify is not None:
                notify()  # followers load the new version now rather than at their next poll
            if not names_stable:
                self._reindex_names()
            self.generation += 1
        report.embedded = len(changed)
        report.removed = len(removed)
        report.problems = problems
        report.seconds = time.perf_counter() - started
        self.problems = problems
        self.stats.embedded_total += report.embedded
        self.stats.cache_hits += report.hits
        self.stats.cache_misses += report.embedded
        self.stats.last_sync = time.time()
        self.stats.last_sync_seconds = report.seconds
        self.stats.syncs += 1
        self._last_scan = time.monotonic()
        if report.embedded or report.removed or problems:
            log.info("index sync: %d scanned, %d embedded, %d cache hits, %d removed, %d skipped in %.2fs",
                     report.scanned, report.embedded, report.hits, report.removed, len(problems), report.seconds)
        return report

    def _write(self, records: list[TemplateRecord], progress: ProgressFn | None) -> None:
        total = len(records)
        vectors: list[np.ndarray] = []
        done = 0
        for start in range(0, total, EMBED_BATCH):
            batch = records[start:start + EMBED_BATCH]
            vectors.append(np.asarray(self.embedder.embed([r.text for r in batch]), dtype=np.float32))
            done += len(batch)
            if progress:
                progress(done, total, batch[-1].id)
        table = self._arrow_rows(records, np.concatenate(vectors))
        self._upsert(table)
        self._remember(records)
        self._pending_optimize += 1

    def _arrow_rows(self, records: list[TemplateRecord], vectors: np.ndarray) -> Any:
        import pyarrow as pa

        dims = self.embedder.dimensions
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.shape != (len(records), dims):
            raise ValueError(f"expected {len(records)} vectors of {dims} dimensions, got shape {vectors.shape}")
        if not np.isfinite(vectors).all():
            raise ValueError("vectors contain NaN or infinity")
        # Column by column: building 100,000 row dicts first costs more than the write itself.
        columns: dict[str, Any] = {"uid": [f"{r.root}::{r.id}" for r in records]}
        for name in (*STR_FIELDS, *LIST_FIELDS):
            columns[name] = [getattr(r, name) for r in records]
        columns.update(size=[r.size for r in records], mtime_ns=[r.mtime_ns for r in records],
                       has_metadata=[r.has_metadata for r in records], model_id=[self.model_key] * len(records),
                       dims=[dims] * len(records))
        schema = _schema(dims)
        arrays = [pa.array(columns[f.name], type=f.type) for f in schema if f.name != "vector"]
        arrays.append(pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel(), type=pa.float32()), dims))
        return pa.Table.from_arrays(arrays, schema=schema)

    def _remember(self, records: list[TemplateRecord]) -> None:
        catalog = dict(self.catalog)  # swapped, never mutated in place: readers may be iterating it
        for rec in records:
            uid = f"{rec.root}::{rec.id}"
            catalog[uid] = rec
            self._fingerprint_overrides.pop(uid, None)
        self.catalog = catalog

    def bulk_load(self, records: list[TemplateRecord], vectors: np.ndarray, progress: ProgressFn | None = None) -> None:
        """Write records whose vectors were computed elsewhere (imports, benchmarks): no parsing, no embedding.

        ``vectors[i]`` must be the embedding of ``records[i].text`` by this index's embedder; the rows are
        stored as if a sync had embedded them, so a later sync of the same files is all cache hits.
        """
        with self._lock:
            self.open()
            total = len(records)
            if len(vectors) != total:
                raise ValueError(f"{total} records but {len(vectors)} vectors")
            fresh = not self.catalog and self._table.count_rows() == 0
            for start in range(0, total, BULK_CHUNK):
                chunk = records[start:start + BULK_CHUNK]
                table = self._arrow_rows(chunk, vectors[start:start + BULK_CHUNK])
                if fresh:
                    self._table.add(table)
                else:
                    self._upsert(table)
                self._remember(chunk)
                if progress:
                    progress(min(start + BULK_CHUNK, total), total, chunk[-1].id)
            self._pending_optimize += 1
            self._optimize()
            self._reindex_names()
            self.generation += 1

    def _optimize_soon(self) -> None:
        """Optimize now for small libraries; for large ones (~1 s at 100,000 rows) in a background thread.

        Rows written but not yet folded into the indexes are found by flat scans meanwhile, so a sync
        returns as soon as its rows are committed. Called with the lock held.
        """
        if len(self.catalog) < BACKGROUND_SCAN_MIN:
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
            _retry_on_conflict(lambda: self._table.optimize(cleanup_older_than=timedelta(hours=1)), 3, "optimize")
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
        """Switch to (or retrain) the IVF_SQ index when the row count calls for it; see the module docstring."""
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

    def refresh_if_stale(self, interval: float) -> SyncReport | None:
        """Fingerprint scan at most every ``interval`` seconds, so edits on disk show up.

        Small libraries (under ``BACKGROUND_SCAN_MIN`` templates, a scan of a few ms) are scanned right here.
        Larger ones are scanned by a background thread, never on the search path (100,000 files take
        ~0.7 s to stat), and at most once per ``SCAN_DUTY`` times the last scan's duration, so scanning holds
        the GIL at most 1/SCAN_DUTY of the time: edits then show up within ~7 s at 10,000 templates and
        ~30 s at 100,000 (``reindex`` picks them up at once). When that scan finds a difference, the next
        call syncs with it (only the changed files are read and embedded).
        """
        if self._table is None:
            return self.sync()
        pending = self._pending_scan
        if pending is not None:
            self._pending_scan = None
            return self.sync(entries=pending, wait=False)
        elapsed = time.monotonic() - self._last_scan
        if elapsed < interval:
            return None
        if len(self.catalog) < BACKGROUND_SCAN_MIN:
            return self.sync(wait=False)
        if elapsed < SCAN_DUTY * self._scan_seconds:
            return None
        with self._lock:
            if self._scanner is None or not self._scanner.is_alive():
                self._last_scan = time.monotonic()
                self._scanner = threading.Thread(target=self._background_scan, name="index-scan", daemon=True)
                self._scanner.start()
        return None

    def _background_scan(self) -> None:
        started = time.perf_counter()
        try:
            entries = self.scan()
            if self._differs(entries):
                self._pending_scan = entries
        except Exception as exc:  # noqa: BLE001 - a failed scan must not kill the server; the next one retries
            log.warning("background template scan failed: %s", exc)
        finally:
            self._scan_seconds = time.perf_counter() - started
            self._last_scan = time.monotonic()

    # ---- reading -----------------------------------------------------------
    def candidates(self, qvec: np.ndarray | None, fts_query: str, where: str | None, limit: int,
                   filters: dict[str, str | None] | None = None) -> list[Candidate]:
        """Vector and full-text candidates; without a query vector (no embedding model) the full-text leg
        alone, or every row matching ``where`` when the query has no searchable words. ``filters`` (column ->
        value) is ``where`` in structured form; with it, flat-search-sized tables answer the vector leg from
        the in-memory mirror."""
        mirror = self._vector_mirror() if qvec is not None and (filters is not None or not where) else None
        if mirror is not None:
            return self._candidates_mirrored(mirror, qvec, fts_query, where, filters or {}, limit)
        table = self._table  # no lock: a background optimize holds it for a second at 100,000 rows
        found: dict[str, Candidate] = {}
        if qvec is None:
            if fts_query.strip():
                tq = table.search(fts_query, query_type="fts", fts_columns="text")
                if where:
                    tq = tq.where(where, prefilter=True)
                for row in tq.limit(limit).select(["uid"]).to_list():
                    found[row["uid"]] = Candidate(row["uid"], 0.0, bm25=float(row["_score"]), in_text_leg=True)
            if not found:
                scan = table.search().where(where) if where else table.search()
                for row in scan.limit(limit).select(["uid"]).to_list():
                    found[row["uid"]] = Candidate(row["uid"], 0.0)
            return [c for c in found.values() if c.uid in self.catalog]
        text_rows = None
        if fts_query.strip():
            tq = table.search(fts_query, query_type="fts", fts_columns="text")
            if where:
                tq = tq.where(where, prefilter=True)
            # The two legs run concurrently: LanceDB releases the GIL while it searches.
            text_rows = self._leg_pool().submit(tq.limit(limit).select(["uid", "vector"]).to_list)
        vq = table.search(qvec.astype(np.float32), vector_column_name="vector").distance_type("cosine")
        if self.vector_index_rows:
            vq = vq.nprobes(VECTOR_INDEX_NPROBES).refine_factor(VECTOR_INDEX_REFINE)
        if where:
            vq = vq.where(where, prefilter=True)
        for row in vq.limit(limit).select(["uid"]).to_list():
            found[row["uid"]] = Candidate(row["uid"], 1.0 - float(row["_distance"]), in_vector_leg=True)
        if text_rows is not None:
            for row in text_rows.result():
                cand = found.get(row["uid"])
                if cand is None:
                    cos = float(np.dot(np.asarray(row["vector"], dtype=np.float32), qvec))
                    cand = found[row["uid"]] = Candidate(row["uid"], cos)
                cand.bm25 = float(row["_score"])
                cand.in_text_leg = True
        return [c for c in found.values() if c.uid in self.catalog]

    def _candidates_mirrored(self, mirror: _VectorMirror, qvec: np.ndarray, fts_query: str, where: str | None,
                             filters: dict[str, str | None], limit: int) -> list[Candidate]:
        sims = mirror.matrix @ np.asarray(qvec, dtype=np.float32)
        keep = mirror.mask(filters)
        if keep is not None:
            sims = np.where(keep, sims, -np.inf)
        k = min(limit, int(np.isfinite(sims).sum()))
        top = np.argpartition(-sims, k - 1)[:k] if 0 < k < len(sims) else np.flatnonzero(np.isfinite(sims))
        found = {mirror.uids[i]: Candidate(mirror.uids[i], float(sims[i]), in_vector_leg=True) for i in top}
        if fts_query.strip():
            tq = self._table.search(fts_query, query_type="fts", fts_columns="text")
            if where:
                tq = tq.where(where, prefilter=True)
            for row in tq.limit(limit).select(["uid"]).to_list():
                cand = found.get(row["uid"])
                if cand is None:
                    pos = mirror.position.get(row["uid"])
                    if pos is None:  # written after the mirror was taken: it is rebuilt on the next query
                        continue
                    cand = found[row["uid"]] = Candidate(row["uid"], float(mirror.matrix[pos] @ qvec))
                cand.bm25 = float(row["_score"])
                cand.in_text_leg = True
        return [c for c in found.values() if c.uid in self.catalog]

    def _vector_mirror(self) -> _VectorMirror | None:
        """An exact in-memory copy of the vectors while search is flat (below the IVF switch point).

        Why: at library sizes LanceDB's per-query overhead (schema look-ups, an event-loop hop, plan
        building) was most of the vector leg's ~4 ms, while a matrix-vector product over 10,000 x 384
        floats takes ~0.3 ms. LanceDB stays the store and the full-text leg; the mirror follows the
        catalog (rebuilt when the catalog object is swapped) and is dropped once the IVF index takes over.
        """
        catalog = self.catalog
        mirror = self._mirror
        if mirror is not None and mirror.catalog is catalog:
            return mirror
        if self.vector_index_rows or len(catalog) > MIRROR_MAX_ROWS or self._table is None:
            self._mirror = None
            return None
        with self._mirror_lock:
            if self._mirror is not None and self._mirror.catalog is self.catalog:
                return self._mirror
            catalog = self.catalog
            rows = self._table.count_rows()
            if rows > MIRROR_MAX_ROWS:
                return None
            data = self._table.search().select(["uid", "vector"]).limit(max(rows, 1)).to_arrow()
            uids = [u for u in data.column("uid").to_pylist()]
            flat = data.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
            matrix = np.asarray(flat, dtype=np.float32).reshape(len(uids), -1) if uids else \
                np.zeros((0, self.embedder.dimensions), dtype=np.float32)
            keep = [i for i, u in enumerate(uids) if u in catalog]
            self._mirror = _VectorMirror(catalog, [uids[i] for i in keep], np.ascontiguousarray(matrix[keep]))
            return self._mirror

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
        return {p.lower() for r in self.catalog.values() for p in r.packages}

    def clear(self) -> None:
        """Drop the table (``cache clear``): the next sync re-embeds everything."""
        with self._lock:
            self.open()
            self._db.drop_table(TABLE)
            self._table = self._create_table()
            self.vector_index_rows = 0
            self.catalog = {}
            self._uid_by_name = {}
            self._fingerprint_overrides = {}
            self.generation += 1

    def close(self) -> None:
        optimizer = self._optimizer
        if optimizer is not None:
            optimizer.join(60)
        with self._lock:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None
            self._table = None
            self._db = None
            if self._temp_dir:
                shutil.rmtree(self._temp_dir, ignore_errors=True)
                self._temp_dir = None


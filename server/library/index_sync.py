"""Keeping the index in line with the template files: scanning the roots, syncing changed files into the
table (embedding only what changed), following another writer's commits; the optimize/vector-index upkeep
after writes is in index_upkeep.py. :class:`IndexSync` is the half of :class:`TemplateIndex` that writes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

import numpy as np

from ..core.diskfull import DiskFullError, is_disk_full
from .foreground import Foreground
from .index_upkeep import IndexUpkeep
from .lance_table import (
    BULK_CHUNK,
    EMBED_BATCH,
    LIST_FIELDS,
    STR_FIELDS,
    WRITE_RETRIES,
    WRITER_LOCK,
    WriterLease,
    retry_on_conflict,
    sql_quote,
    table_schema,
)
from .templates import (
    TEMPLATE_SUFFIXES,
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
    from .embedder import Embedder

log = logging.getLogger(__name__)

BACKGROUND_SCAN_MIN = 2_000  # from this many templates the periodic fingerprint scan leaves the search path
SCAN_DUTY = 50  # measured at 10,000 templates: duty 10 (a 0.13 s scan every 2 s) added ~15 ms to search p95
SCAN_CHUNK = 64  # directory entries between the background scan's pauses for searches in flight (foreground.py)

ProgressFn = Callable[[int, int, str], None]
ScanEntry = tuple[str, str, int, int]  # root, path relative to it (posix), size, mtime_ns


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
class IndexStats:
    embedded_total: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    last_sync: float | None = None
    last_sync_seconds: float | None = None
    syncs: int = 0


class IndexSync(IndexUpkeep):
    """Scanning, syncing and table upkeep; the state lives in :class:`TemplateIndex`, which sets it up."""

    roots: list[Path]
    object_roots: dict[str, ObjectRoot]
    embedder: Embedder
    lease: WriterLease | None
    location: Path | None
    uri: str
    problems: list[LoadProblem]
    follow_external_symlinks: bool
    stats: IndexStats
    generation: int
    _fingerprint_overrides: dict[str, Fingerprint]
    _broken: dict[str, tuple[int, int, LoadProblem]]
    _scan_skipped: list[LoadProblem]
    _last_scan: float
    _scanner: threading.Thread | None
    _pending_scan: list[ScanEntry] | None
    _scan_seconds: float
    foreground: Foreground
    from_snapshot: bool
    _embedded_ahead: dict[str, np.ndarray]
    _table_writer: threading.Thread | None

    if TYPE_CHECKING:
        @property
        def model_key(self) -> str: ...
        def open(self) -> None: ...
        def _load_catalog(self) -> None: ...
        def _reindex_names(self) -> None: ...
        def _bookkeeping_changed(self) -> None: ...

    def _upsert(self, table: Any) -> None:
        retry_on_conflict(
            lambda: self._table.merge_insert("uid").when_matched_update_all().when_not_matched_insert_all()
            .execute(table), WRITE_RETRIES, "index write")

    # ---- syncing -----------------------------------------------------------
    def scan(self, pace: Callable[[], object] | None = None) -> list[ScanEntry]:
        """(root, relative path, size, mtime_ns) of every template file: the same files as
        ``templates.scan_files`` (in no particular order) but with ``os.scandir`` and no Path objects:
        0.5 s instead of 2.5 s for 100,000 files on the benchmark machine. ``pace`` is called every
        ``SCAN_CHUNK`` directory entries (the background scan makes way for searches there).

        Each directory is listed through a descriptor of its own, so a file's stat resolves one name from
        there instead of its whole path from /: 100,000 files stat'ed in a median 0.61 s instead of 0.72 s (six
        alternating runs on the benchmark machine, where ``find`` takes ~0.45 s)."""
        entries: list[ScanEntry] = []
        skipped: list[LoadProblem] = []
        seen = 0
        for root_s in dict.fromkeys(str(root) for root in self.roots):  # each uid once: see _sync_locked's count
            if not os.path.isdir(root_s):
                continue
            stack = [(root_s, "")]
            while stack:
                directory, rel = stack.pop()
                try:
                    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                except OSError:
                    continue
                try:
                    with os.scandir(fd) as it:
                        for entry in it:
                            seen += 1
                            if pace is not None and not seen % SCAN_CHUNK:
                                pace()
                            name = entry.name
                            if name.startswith("."):
                                continue
                            try:
                                if entry.is_dir(follow_symlinks=False):
                                    if name not in ("files", "node_modules"):
                                        stack.append((f"{directory}/{name}", f"{rel}{name}/"))
                                    continue
                                if not name.endswith(TEMPLATE_SUFFIXES):
                                    continue
                                if entry.is_file(follow_symlinks=False):
                                    st = entry.stat(follow_symlinks=False)  # fstatat(fd, name)
                                else:  # symlink, FIFO, device, socket: only the policy in templates.py decides
                                    st = regular_file_stat(f"{directory}/{name}", root_s,
                                                           self.follow_external_symlinks)
                            except ValueError as exc:
                                skipped.append(LoadProblem(f"{directory}/{name}", str(exc)))
                                continue
                            except OSError:
                                continue
                            entries.append((root_s, rel + name, st.st_size, st.st_mtime_ns))
                except OSError:
                    continue
                finally:
                    os.close(fd)
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

    def _read_file(self, uid: str, root_s: str, rel: str, size: int, mtime_ns: int,
                   problems: list[LoadProblem]) -> bytes | None:
        """A template file's bytes, or None with the reason noted in ``problems`` (and remembered as broken)."""
        try:
            return self._read_source(root_s, rel)
        except (OSError, ValueError) as exc:
            reason = f"cannot read: {exc.strerror or exc}" if isinstance(exc, OSError) else str(exc)
            problem = LoadProblem(f"{root_s}/{rel}", reason)
            problems.append(problem)
            self._broken[uid] = (size, mtime_ns, problem)
            return None

    def _parse_file(self, uid: str, root_s: str, rel: str, raw: bytes, size: int, mtime_ns: int,
                    problems: list[LoadProblem]) -> TemplateRecord | None:
        """The record of a template file's bytes, or None with the reason noted as :meth:`_read_file` does."""
        try:
            rec = self._load_source(root_s, rel, raw, size, mtime_ns)
        except (YamlError, ValueError) as exc:
            problem = LoadProblem(f"{root_s}/{rel}", str(exc))
            problems.append(problem)
            self._broken[uid] = (size, mtime_ns, problem)
            log.warning("skipping template %s/%s: %s", root_s, rel, exc)
            return None
        self._broken.pop(uid, None)
        return rec

    def read_text(self, rec: TemplateRecord) -> str:
        """A template's current text, from its directory (read as safely as at index time) or its bucket;
        OSError or ValueError says why not."""
        return self._read_source(rec.root, rec.id).decode("utf-8")

    def _differs(self, entries: list[ScanEntry], pace: Callable[[], object] | None = None) -> bool:
        """Whether a scan shows any added, removed or touched file (read-only: safe off the search thread);
        ``pace`` as in :meth:`scan`."""
        catalog = self.catalog
        overrides = self._fingerprint_overrides
        seen = 0
        for i, (root_s, rel, size, mtime_ns) in enumerate(entries):
            if pace is not None and not i % SCAN_CHUNK:
                pace()
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
                    where = self.location.parent if self.location is not None else self.uri
                    raise DiskFullError(where, "the template index") from None
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
            # and retry_on_conflict keep the table consistent; configure a lease to avoid duplicate work.
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
        changed: list[TemplateRecord] = []
        problems: list[LoadProblem] = []
        scan = self.scan() if entries is None else entries
        problems.extend(self._scan_skipped)
        broken = self._broken
        report.scanned = len(scan)
        catalog = self.catalog
        overrides = self._fingerprint_overrides
        bookkeeping = (dict(overrides), {u: b[:2] for u, b in broken.items()})  # see below
        hits = 0
        known_seen = 0  # scanned files the catalog has: all of it, unless some were removed
        catalog_get = catalog.get
        # Locals and no per-file objects: this loop runs over every file at every sync (at 100,000 templates
        # the set of every uid and a second look-up per file were ~0.1 s of a one-file re-index).
        for root_s, rel, size, mtime_ns in scan:
            uid = f"{root_s}::{rel}"
            existing = catalog_get(uid)
            if existing is not None:
                known_seen += 1
                if not force:
                    if existing.size == size and existing.mtime_ns == mtime_ns:
                        hits += 1
                        continue
                    known = overrides.get(uid)  # touched before with the same content
                    if known is not None and known.size == size and known.mtime_ns == mtime_ns:
                        hits += 1
                        continue
            if not force:
                known_problem = self._known_broken(uid, size, mtime_ns)
                if known_problem is not None:
                    problems.append(known_problem)
                    continue
            raw = self._read_file(uid, root_s, rel, size, mtime_ns, problems)
            if raw is None:
                continue
            if not force and existing is not None and existing.content_hash == content_hash(raw):
                overrides[uid] = Fingerprint(size, mtime_ns)
                hits += 1
                continue
            rec = self._parse_file(uid, root_s, rel, raw, size, mtime_ns, problems)
            if rec is not None:
                changed.append(rec)
        if broken or known_seen != len(catalog):
            seen = {f"{root_s}::{rel}" for root_s, rel, _, _ in scan}
            for uid in [u for u in broken if u not in seen]:
                del broken[uid]
            removed = [uid for uid in catalog if uid not in seen]
        else:
            removed = []
        report.hits = hits
        # An edited template keeps its uid and so its name: the full name pass (a sort of every uid,
        # ~0.4 s at 100,000) is only needed when templates appear or disappear.
        names_stable = not removed and all(f"{r.root}::{r.id}" in self.catalog for r in changed)
        if names_stable:
            for rec in changed:
                rec.name = self.catalog[f"{rec.root}::{rec.id}"].name
        if changed:
            self._write(changed, progress)
        if removed:
            self._table.delete("uid IN (" + ", ".join(sql_quote(u) for u in removed) + ")")
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
        elif bookkeeping != (overrides, {u: b[:2] for u, b in self._broken.items()}):
            self._bookkeeping_changed()  # a touched or broken file: the mirror on disk must say so too
        report.embedded = len(changed)
        report.removed = len(removed)
        return self._account(report, problems, started)

    def _account(self, report: SyncReport, problems: list[LoadProblem], started: float) -> SyncReport:
        """Finish ``report`` (a sync's, or a start from the mirror on disk) and count it in the stats."""
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

    def _embed_records(self, records: list[TemplateRecord], progress: ProgressFn | None) -> dict[str, np.ndarray]:
        """text -> vector for ``records``, embedded in batches."""
        vectors: dict[str, np.ndarray] = {}
        total = len(records)
        for start in range(0, total, EMBED_BATCH):
            batch = records[start:start + EMBED_BATCH]
            found = np.asarray(self.embedder.embed([r.text for r in batch]), dtype=np.float32)
            if found.ndim != 2 or len(found) != len(batch):
                raise ValueError(f"the embedder returned {found.shape} for {len(batch)} texts")
            vectors.update(zip((r.text for r in batch), found, strict=True))
            if progress:
                progress(min(start + EMBED_BATCH, total), total, batch[-1].id)
        return vectors

    def _write(self, records: list[TemplateRecord], progress: ProgressFn | None) -> None:
        # Vectors a new index embedded before its table existed (TemplateIndex._start_new) are taken by text.
        ahead, self._embedded_ahead = self._embedded_ahead, {}
        vectors = {**ahead, **self._embed_records([r for r in records if r.text not in ahead], progress)}
        table = self._arrow_rows(records, np.stack([vectors[r.text] for r in records]))
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
        schema = table_schema(dims)
        arrays = [pa.array(columns[f.name], type=f.type) for f in schema if f.name != "vector"]
        arrays.append(pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel(), type=pa.float32()), dims))
        return pa.Table.from_arrays(arrays, schema=schema)

    def _remember(self, records: list[TemplateRecord]) -> None:
        catalog = dict(self.catalog)  # swapped, never mutated in place: readers may be iterating it
        for rec in records:
            uid = f"{rec.root}::{rec.id}"
            rec.text = ""  # written and embedded: the table keeps it, as for a catalog loaded from the table
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

    def refresh_if_stale(self, interval: float) -> SyncReport | None:
        """Fingerprint scan at most every ``interval`` seconds, so edits on disk show up.

        Small libraries (under ``BACKGROUND_SCAN_MIN`` templates, a scan of a few ms) are scanned right here.
        Larger ones are scanned by a background thread, never on the search path (100,000 files take
        ~0.7 s to stat), and at most once per ``SCAN_DUTY`` times the last scan's duration, so scanning holds
        the GIL at most 1/SCAN_DUTY of the time: edits then show up within ~7 s at 10,000 templates and
        ~30 s at 100,000 (``reindex`` picks them up at once). That scan also pauses while a search runs
        (``foreground.py``), so under searches without pause it takes longer. When it finds a difference, the
        next call syncs with it (only the changed files are read and embedded).
        """
        if self._table is None and not self.from_snapshot and self._table_writer is None:
            return self.sync()
        pending = self._pending_scan
        if pending is not None:
            self._pending_scan = None
            return self.sync(entries=pending, wait=False)
        elapsed = time.monotonic() - self._last_scan
        if elapsed < interval:
            return None
        if len(self.catalog) < BACKGROUND_SCAN_MIN:
            if self._table is None:  # searching from the mirror on disk: the table is opened for a change only
                entries = self.scan()
                self._last_scan = time.monotonic()
                return self.sync(entries=entries, wait=False) if self._differs(entries) else None
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
        waited = 0.0

        def make_way() -> None:
            nonlocal waited
            waited += self.foreground.make_way()

        try:
            entries = self.scan(make_way)
            if self._differs(entries, make_way):
                self._pending_scan = entries
        except Exception as exc:  # noqa: BLE001 - a failed scan must not kill the server; the next one retries
            log.warning("background template scan failed: %s", exc)
        finally:
            self._scan_seconds = time.perf_counter() - started - waited  # SCAN_DUTY bounds the work, not the waits
            self._last_scan = time.monotonic()


"""The LanceDB table: the search index and the embedding cache in one.

One row per template. A row is reused (no re-embedding) while the file's
fingerprint (size + mtime) or, failing that, its content hash still matches,
and the embedding model id is the same. The display fields live in the table
too, so a warm start needs no YAML parsing at all.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from server.templates import (
    TEXT_VERSION,
    Fingerprint,
    LoadProblem,
    TemplateRecord,
    YamlError,
    content_hash,
    load_record,
    scan_files,
)

if TYPE_CHECKING:
    from server.embeddings import Embedder

log = logging.getLogger(__name__)

TABLE = "templates"
EMBED_BATCH = 32
LIST_FIELDS = ("use_cases", "keywords", "explicit_keywords", "capabilities", "recommended_for", "packages")
STR_FIELDS = ("id", "root", "name", "image_name", "content_hash", "os", "dist", "arch", "image_type",
              "description", "use_case", "kernel", "text")

ProgressFn = Callable[[int, int, str], None]


class IndexError_(RuntimeError):
    """The index cannot be opened or written; the message says what to do."""


def _import_lancedb() -> Any:
    # LanceDB's Rust core logs to stderr at WARN unless told otherwise before import.
    os.environ.setdefault("LANCEDB_LOG", "error")
    import lancedb

    return lancedb


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


class TemplateIndex:
    """Owns the LanceDB table and the in-memory catalog of records."""

    def __init__(self, cache_dir: Path | None, roots: list[Path], embedder: Embedder):
        self.roots = roots
        self.embedder = embedder
        self._temp_dir: str | None = None
        if cache_dir is None:
            self._temp_dir = tempfile.mkdtemp(prefix="oic-ai-index-")
            cache_dir = Path(self._temp_dir)
        self.location = cache_dir / "index.lance"
        self._lock = threading.RLock()
        self._db: Any = None
        self._table: Any = None
        self.catalog: dict[str, TemplateRecord] = {}
        self._uid_by_name: dict[str, str] = {}
        self._fingerprint_overrides: dict[str, Fingerprint] = {}
        self.problems: list[LoadProblem] = []
        self.stats = IndexStats()
        self._last_scan = 0.0
        self._pending_optimize = 0
        self.generation = 0  # bumped whenever the catalog changes, so derived caches know to rebuild

    # ---- opening -----------------------------------------------------------
    def open(self) -> None:
        with self._lock:
            if self._table is not None:
                return
            lancedb = _import_lancedb()
            try:
                self.location.mkdir(parents=True, exist_ok=True)
                # Readers see other processes' commits within a second (several servers may share a cache dir).
                self._db = lancedb.connect(str(self.location), read_consistency_interval=timedelta(seconds=1))
                if TABLE in self._db.table_names():
                    table = self._db.open_table(TABLE)
                    if not self._compatible(table):
                        log.info("embedding model changed: dropping the index to re-embed every template")
                        self._db.drop_table(TABLE)
                        table = None
                else:
                    table = None
                if table is None:
                    table = self._create_table()
                self._table = table
            except OSError as exc:
                raise IndexError_(
                    f"cannot open the index at {self.location}: {exc}. Set OIC_AI_CACHE_DIR to a writable directory."
                ) from exc
            self._load_catalog()

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

    def _create_table(self) -> Any:
        from lancedb.index import FTS

        table = self._db.create_table(TABLE, schema=_schema(self.embedder.dimensions), mode="overwrite")
        table.create_index(
            "text",
            config=FTS(with_position=False, base_tokenizer="simple", stem=True, remove_stop_words=True,
                       lower_case=True, ascii_folding=True),
        )
        return table

    def _load_catalog(self) -> None:
        columns = ["uid", *STR_FIELDS, *LIST_FIELDS, "size", "mtime_ns", "has_metadata"]
        data = self._table.to_arrow().select(columns).to_pylist() if self._table.count_rows() else []
        self.catalog = {}
        for row in data:
            uid = row.pop("uid")
            for name in LIST_FIELDS:
                row[name] = list(row[name] or [])
            self.catalog[uid] = TemplateRecord(**row)
        self._reindex_names()
        self.generation += 1

    def _reindex_names(self) -> None:
        self._uid_by_name = {}
        for uid in sorted(self.catalog, key=lambda u: (self._root_rank(self.catalog[u].root), u)):
            rec = self.catalog[uid]
            name = rec.name
            if name in self._uid_by_name:
                # Same relative path under two roots: the later root's copy gets a qualified name.
                name = f"{name}@{Path(rec.root).name}"
                rec.name = name
            self._uid_by_name[name] = uid

    def _root_rank(self, root: str) -> int:
        for i, r in enumerate(self.roots):
            if str(r) == root:
                return i
        return len(self.roots)

    # ---- syncing -----------------------------------------------------------
    def sync(self, progress: ProgressFn | None = None, force: bool = False) -> SyncReport:
        """Bring the table in line with the files on disk; embed only what changed."""
        with self._lock:
            self.open()
            started = time.perf_counter()
            report = SyncReport()
            seen: set[str] = set()
            changed: list[TemplateRecord] = []
            problems: list[LoadProblem] = []
            for root, path, fp in scan_files(self.roots):
                uid = f"{root}::{path.relative_to(root).as_posix()}"
                seen.add(uid)
                report.scanned += 1
                existing = self.catalog.get(uid)
                if not force and existing is not None and self._same_fingerprint(uid, existing, fp):
                    report.hits += 1
                    continue
                try:
                    raw = path.read_bytes()
                except OSError as exc:
                    problems.append(LoadProblem(str(path), f"cannot read: {exc}"))
                    continue
                if not force and existing is not None and existing.content_hash == content_hash(raw):
                    self._fingerprint_overrides[uid] = fp
                    report.hits += 1
                    continue
                try:
                    rec = load_record(root, path, raw)
                except (YamlError, ValueError) as exc:
                    problems.append(LoadProblem(str(path), str(exc)))
                    log.warning("skipping template %s: %s", path, exc)
                    continue
                changed.append(rec)
            removed = [uid for uid in self.catalog if uid not in seen]
            if changed:
                self._write(changed, progress)
            if removed:
                self._table.delete("uid IN (" + ", ".join(_sql_quote(u) for u in removed) + ")")
                for uid in removed:
                    self.catalog.pop(uid, None)
                    self._fingerprint_overrides.pop(uid, None)
                self._pending_optimize += len(removed)
            if self._pending_optimize:
                self._optimize()
            if changed or removed:
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

    def _same_fingerprint(self, uid: str, rec: TemplateRecord, fp: Fingerprint) -> bool:
        known = self._fingerprint_overrides.get(uid) or Fingerprint(rec.size, rec.mtime_ns)
        return known == fp

    def _write(self, records: list[TemplateRecord], progress: ProgressFn | None) -> None:
        total = len(records)
        rows: list[dict[str, Any]] = []
        done = 0
        for start in range(0, total, EMBED_BATCH):
            batch = records[start:start + EMBED_BATCH]
            vectors = self.embedder.embed([r.text for r in batch])
            for rec, vec in zip(batch, vectors, strict=True):
                row = {name: getattr(rec, name) for name in (*STR_FIELDS, *LIST_FIELDS)}
                row.update(uid=f"{rec.root}::{rec.id}", size=rec.size, mtime_ns=rec.mtime_ns,
                           has_metadata=rec.has_metadata, model_id=self.model_key,
                           dims=self.embedder.dimensions, vector=np.asarray(vec, dtype=np.float32))
                rows.append(row)
            done += len(batch)
            if progress:
                progress(done, total, batch[-1].id)
        import pyarrow as pa

        table = pa.Table.from_pylist(rows, schema=_schema(self.embedder.dimensions))
        (self._table.merge_insert("uid").when_matched_update_all().when_not_matched_insert_all().execute(table))
        for rec in records:
            uid = f"{rec.root}::{rec.id}"
            self.catalog[uid] = rec
            self._fingerprint_overrides.pop(uid, None)
        self._pending_optimize += 1

    def _optimize(self) -> None:
        # Folds new rows into the FTS index; concurrent optimizers from other processes may conflict.
        for attempt in range(3):
            try:
                self._table.optimize(cleanup_older_than=timedelta(hours=1))
                self._pending_optimize = 0
                return
            except RuntimeError as exc:
                if "conflict" not in str(exc).lower() or attempt == 2:
                    log.warning("index optimize skipped: %s", exc)
                    return
                time.sleep(0.1 * (attempt + 1))

    def refresh_if_stale(self, interval: float) -> SyncReport | None:
        """Cheap fingerprint scan at most every ``interval`` seconds, so edits on disk show up."""
        if self._table is not None and time.monotonic() - self._last_scan < interval:
            return None
        return self.sync()

    # ---- reading -----------------------------------------------------------
    def candidates(self, qvec: np.ndarray, fts_query: str, where: str | None, limit: int) -> list[Candidate]:
        with self._lock:
            table = self._table
        found: dict[str, Candidate] = {}
        vq = table.search(qvec.astype(np.float32), vector_column_name="vector").distance_type("cosine")
        if where:
            vq = vq.where(where, prefilter=True)
        for row in vq.limit(limit).select(["uid"]).to_list():
            found[row["uid"]] = Candidate(row["uid"], 1.0 - float(row["_distance"]), in_vector_leg=True)
        if fts_query.strip():
            tq = table.search(fts_query, query_type="fts", fts_columns="text")
            if where:
                tq = tq.where(where, prefilter=True)
            for row in tq.limit(limit).select(["uid", "vector"]).to_list():
                cand = found.get(row["uid"])
                if cand is None:
                    cos = float(np.dot(np.asarray(row["vector"], dtype=np.float32), qvec))
                    cand = found[row["uid"]] = Candidate(row["uid"], cos)
                cand.bm25 = float(row["_score"])
                cand.in_text_leg = True
        return [c for c in found.values() if c.uid in self.catalog]

    def by_name(self, name: str) -> TemplateRecord | None:
        uid = self._uid_by_name.get(name)
        if uid is None and name.endswith((".yml", ".yaml")):
            uid = self._uid_by_name.get(name.rsplit(".", 1)[0])
        return self.catalog.get(uid) if uid else None

    def names(self) -> list[str]:
        return sorted(self._uid_by_name)

    def records(self) -> list[TemplateRecord]:
        return [self.catalog[uid] for uid in self._uid_by_name.values()]

    def size_bytes(self) -> int:
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
            self.catalog = {}
            self._uid_by_name = {}
            self._fingerprint_overrides = {}
            self.generation += 1

    def close(self) -> None:
        with self._lock:
            self._table = None
            self._db = None
            if self._temp_dir:
                shutil.rmtree(self._temp_dir, ignore_errors=True)
                self._temp_dir = None


"""The full-text leg in memory above the mirror's size: LanceDB's BM25 scores from postings of the table's rows.

Why: from the mirror's size (vector_mirror) LanceDB answered the full-text leg, and at 100,000 templates
that query took p50 / p95 ~8 / 14 ms inside a search (4.7 / 8.4 ms alone), on its own threads beside the
query's embedding, which it slowed by ~2 ms on two cores. Searches' p95 was ~1.4x the baseline's, nearly
all of it this leg. The same scores from postings in memory (text_mirror) take ~1-4 ms on one thread.

Cost: the postings (8 bytes each: ~67 MB at 100,000 of the benchmark's templates) and the vocabulary; a
search that no longer asks LanceDB's full-text index also no longer loads it (~50-100 MB after a few hundred
queries). The build reads the table 4,096 rows at a time and places each batch's postings as it goes
(~5 s and a peak of ~170 MB over the result at 100,000 rows).

Exact as below the switch point: the same analyzer and BM25, with the statistics of the rows it was built
from. It describes one catalog's content: a template whose content changes makes LanceDB answer the leg
again until a rebuild in the background is done (LanceDB's own statistics also lag such an edit until its
index is rebuilt). A local index keeps the postings beside the table for the next start (``FILE``), valid
while every template's content hash is the one it was built from: an edit undone leaves them valid.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from . import heap, npz_file, quantized_mirror
from .background_build import BackgroundBuild
from .lance_table import FTS_OPTIONS
from .templates import TemplateRecord
from .text_mirror import TextMirror, reproduces
from .vector_mirror import FilterColumns

log = logging.getLogger(__name__)

READ_BATCH = 4_096  # rows per Arrow batch while building (~4.5 MB of text at the benchmark's sizes)
FILE, TEMP = "fulltext.npz", "fulltext-"  # kept beside the table of a local index
FORMAT = 1
READ_WAIT = 2.0  # seconds a search waits for the kept postings being read (~0.2-0.5 s at 100,000 templates)


class TextLeg(FilterColumns):
    """Postings of the rows of one catalog's content, row ``i`` being template ``uids[i]``."""

    def __init__(self, catalog: dict[str, TemplateRecord], uids: list[str], text: TextMirror) -> None:
        super().__init__(catalog, uids)
        self.text = text
        self._differs = 0  # id of the last catalog found to differ

    def describes(self, catalog: dict[str, TemplateRecord]) -> bool:
        """Whether ``catalog`` has exactly these templates with the content these postings were built from (a
        sync swaps in new records for changed templates only; a record taken from the table again compares
        by its content hash)."""
        if catalog is self.catalog:
            return True
        if id(catalog) == self._differs:
            return False
        built = self.catalog
        if len(catalog) == len(built) and all(
                (old := built.get(uid)) is not None and (old is rec or old.content_hash == rec.content_hash)
                for uid, rec in catalog.items()):
            self.catalog = catalog  # the same content: the old catalog goes, and the next search compares nothing
            return True
        # By id, not the object: holding a catalog that went would keep its records. A new catalog at a reused
        # id costs at most a needless rebuild.
        self._differs = id(catalog)
        return False

    def rows(self, fts_query: str, filters: dict[str, str | None], limit: int) -> list[dict[str, Any]]:
        """The best ``limit`` rows for ``fts_query`` among those ``filters`` allow, as LanceDB's leg gives them
        (``uid`` and ``_score``)."""
        uids = self.uids
        return [{"uid": uids[row], "_score": score}
                for row, score in self.text.search(fts_query, self.mask(filters), limit)]


def fits(rows: int) -> bool:
    """Whether a table of ``rows`` gets this leg: the size range of the vector leg's codes, and an analyzer
    text_mirror reproduces."""
    return quantized_mirror.fits(rows) and reproduces(FTS_OPTIONS)


def build(table: Any, catalog: dict[str, TemplateRecord]) -> TextLeg:
    """The postings of ``catalog``'s rows in ``table``, read a batch at a time."""
    started = time.perf_counter()
    uids: list[str] = []
    own = _keys(catalog)

    def texts() -> Iterator[Any]:
        reader = table.search().select(["uid", "text"]).limit(max(table.count_rows(), 1)).to_batches(READ_BATCH)
        for batch in reader:
            batch_uids = batch.column("uid").to_pylist()
            keep = [i for i, uid in enumerate(batch_uids) if uid in catalog]
            uids.extend(own[batch_uids[i]] for i in keep)
            column = batch.column("text")
            yield column if len(keep) == len(batch_uids) else column.take(keep)

    text = TextMirror.from_batches(texts())
    log.info("full-text leg in memory: %d rows in %.1fs", len(uids), time.perf_counter() - started)
    return TextLeg(catalog, uids, text)


def _keys(catalog: dict[str, TemplateRecord]) -> dict[str, str]:
    """uid -> the catalog's own string for it: the leg's row list then holds no second copy of every uid
    (~9 MB at 100,000 templates)."""
    return {uid: uid for uid in catalog}


def _digest(uids: list[str], catalog: dict[str, TemplateRecord]) -> str:
    """What the postings of ``uids`` depend on in ``catalog``: each row's template and content, in row order
    (KeyError for a uid the catalog lacks)."""
    # One update of one joined text: an update per row was ~0.1 s of a start at 100,000 templates.
    return hashlib.sha256("".join([f"{uid}\t{catalog[uid].content_hash}\n" for uid in uids]).encode()).hexdigest()


def save(directory: Path, leg: TextLeg, model_key: str) -> None:
    """Keep ``leg`` for the next start (only that start is slower when this fails)."""
    try:
        vocabulary, postings = leg.text.state()
        vocabulary = {**vocabulary, "words": [], "word_ids": []}  # a cache (TextMirror.forget_words)
        meta = {"format": FORMAT, "model_key": model_key, "analyzer": FTS_OPTIONS, "rows": len(leg.uids),
                "digest": _digest(leg.uids, leg.catalog), "vocabulary": vocabulary}
        blob = np.frombuffer("\n".join(leg.uids).encode(), dtype=np.uint8)
        npz_file.write(directory / FILE, meta, {**postings, "uids": blob}, TEMP)
    except (OSError, KeyError) as exc:
        log.info("the full-text postings were not kept for the next start: %s", exc)


def load(directory: Path, catalog: dict[str, TemplateRecord], model_key: str) -> TextLeg | None:
    """The postings kept in ``directory`` when they describe ``catalog`` (its templates and their content, the
    text version, the analyzer); else None."""
    path = directory / FILE
    if not path.is_file():
        return None
    try:
        meta, arrays = npz_file.read(path)
        if not (isinstance(meta, dict) and meta.get("format") == FORMAT and meta.get("model_key") == model_key
                and meta.get("analyzer") == FTS_OPTIONS and meta.get("rows") == len(catalog)):
            return None
        blob = arrays.pop("uids")
        uids = bytes(blob).decode().split("\n") if len(blob) else []
        if len(uids) != len(catalog) or _digest(uids, catalog) != meta.get("digest"):
            return None
        own = _keys(catalog)
        uids = [own[uid] for uid in uids]
        text = TextMirror.restore(meta["vocabulary"], arrays)
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile, UnicodeDecodeError):
        return None
    if text.rows != len(uids):
        return None
    return TextLeg(catalog, uids, text)


def remove(directory: Path) -> None:
    """``cache clear``: the kept postings go with the table."""
    (directory / FILE).unlink(missing_ok=True)


class TextLegKeeper(BackgroundBuild):
    """The current leg, read or built in a background thread whenever the catalog's content moves on; a search
    waits only for a read (:meth:`current`), never for a build (LanceDB answers meanwhile)."""

    def __init__(self, directory: Path | None, model_key: Callable[[], str] | None = None,
                 after: Callable[[], None] | None = None) -> None:
        """With ``model_key`` (what the table's text column depends on) the postings are kept in ``directory``.
        ``after``: waits for other background work a read or build should not overlap (the vector leg's codes:
        their peaks and these would add up; read beside them, the peak at 100,000 templates was ~60-110 MB higher
        and the first search no sooner)."""
        super().__init__()
        self._directory = directory
        self._model_key = model_key
        self._after = after
        self._leg: TextLeg | None = None
        self._reading = threading.Event()  # set once the running thread's read of the kept postings is over

    def current(self, table: Any, catalog: dict[str, TemplateRecord], wait: float = 0.0) -> TextLeg | None:
        """The leg of ``catalog``, or None while it is built (started here), outside :func:`fits`, or when a build
        failed for this catalog. While the postings kept on disk are read, this waits for them up to ``wait``
        seconds.

        Why wait for a read and not a build: a read takes ~0.2-0.5 s at 100,000 templates, and a search that
        does not wait asks LanceDB's full-text index, which loads for good on its first query (~50-100 MB) and
        answered the searches meanwhile in ~40-250 ms each (~15 ms from the postings)."""
        leg = self._leg
        if leg is not None and leg.describes(catalog):
            return leg
        if table is None or not fits(len(catalog)):
            return None
        with self._lock:
            running = self._builder
            if self._closed or self._failed_for is catalog:
                return None
            if running is None or not running.is_alive():
                self._reading = threading.Event()
                self._builder = threading.Thread(target=self._build, args=(table, catalog, self._reading),
                                                 daemon=True, name="text-leg")
                self._builder.start()
            reading = self._reading
        if wait > 0 and reading.wait(wait):
            leg = self._leg
            if leg is not None and leg.describes(catalog):
                return leg
        return None

    def _build(self, table: Any, catalog: dict[str, TemplateRecord], reading: threading.Event) -> None:
        key = self._model_key() if self._model_key is not None else None
        directory = self._directory if key is not None else None
        try:
            try:
                if self._after is not None:
                    self._after()
                leg = load(directory, catalog, key) if directory is not None and key is not None else None
                if leg is not None:
                    self._publish(leg)
            finally:
                reading.set()
            if leg is None:
                leg = build(table, catalog)
                if directory is not None and key is not None:
                    save(directory, leg, key)
                self._publish(leg)
            heap.trim()
        except Exception as exc:  # noqa: BLE001 - LanceDB's index keeps answering the leg
            self._give_up(catalog, "full-text leg", exc)

    def _publish(self, leg: TextLeg) -> None:
        leg.text.forget_words()
        with self._lock:
            if not self._closed:
                self._leg = leg

    def ready_for(self, catalog: dict[str, TemplateRecord]) -> bool:
        leg = self._leg
        return leg is not None and leg.describes(catalog)

    def close(self) -> None:
        """No new builds; the current leg let go (a search on another thread may still hold it)."""
        self.join(60)
        with self._lock:
            self._closed = True
            self._leg = None

"""The in-memory mirror on disk, so a warm start answers its first searches without opening LanceDB.

Why: on a warm start over stdio at 48 templates, importing LanceDB (with Arrow) took 0.45-0.55 s of the
~1.6 s to the first result and ~80 MB of the peak RSS, though below the IVF switch point both search legs
are answered from the mirror (vector_mirror, text_mirror) and the table is only read to build it.

The file is a cache of the table, never a second store. It is written after the mirror's full-text leg is
built (a background thread, after the first search) and it is used only while it still describes the files:
the start-up scan compares every template's size and mtime with the snapshot's catalog, as a sync compares
them with the table's. The embedding model and text version (``model_key``), the analyzer options and this
format are part of it; any difference, or a file that cannot be read whole, and the table is opened as
before. The first change on disk (or a save, or ``cache clear``) opens the table and syncs; the next
search's mirror is then written again.

One ``.npz`` (numpy's zip of arrays, read with ``allow_pickle=False``): the vectors, the full-text
postings, and a JSON document with the catalog (column-wise), the vocabulary and the bookkeeping.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .lance_table import FTS_OPTIONS
from .templates import Fingerprint, LoadProblem, TemplateRecord
from .text_mirror import TextMirror
from .vector_mirror import VectorMirror

FORMAT = 1
FILE = "mirror.npz"  # inside the LanceDB database directory, beside the table (LanceDB lists *.lance only)
_FIELDS = [f for f in dataclasses.fields(TemplateRecord) if f.name != "text"]  # the catalog holds no text
_POSTINGS = ("doc", "start", "weight", "idf")


@dataclass
class Snapshot:
    catalog: dict[str, TemplateRecord]
    mirror: VectorMirror
    overrides: dict[str, Fingerprint]  # files touched without a change of content (see IndexSync)
    broken: dict[str, tuple[int, int, LoadProblem]]  # files that failed to load, with the size and mtime they had
    table_version: int | None


def save(path: Path, mirror: VectorMirror, *, model_key: str, table_version: int | None,
         overrides: dict[str, Fingerprint], broken: dict[str, tuple[int, int, LoadProblem]]) -> None:
    """Write ``mirror`` (which must have its full-text leg) atomically: readers see the old file or the new one."""
    if mirror.text is None:
        raise ValueError("the mirror's full-text leg is not built yet")
    records = [mirror.catalog[uid] for uid in mirror.uids]
    vocabulary, postings = mirror.text.state()
    meta = {
        "format": FORMAT, "model_key": model_key, "analyzer": FTS_OPTIONS, "table_version": table_version,
        "uids": mirror.uids,
        "records": {f.name: [getattr(r, f.name) for r in records] for f in _FIELDS},
        "overrides": {uid: [fp.size, fp.mtime_ns] for uid, fp in overrides.items()},
        "broken": [[uid, size, mtime, p.path, p.message] for uid, (size, mtime, p) in broken.items()],
        "vocabulary": vocabulary,
    }
    blob = np.frombuffer(json.dumps(meta, separators=(",", ":")).encode(), dtype=np.uint8)
    _remove_abandoned(path.parent)
    fd, temp = tempfile.mkstemp(prefix=".mirror-", suffix=".npz", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            np.savez(handle, meta=blob, vectors=mirror.matrix, doc=postings["doc"], start=postings["start"],
                     weight=postings["weight"], idf=postings["idf"])
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _remove_abandoned(directory: Path, age_s: float = 3600.0) -> None:
    """Temporary files of writers that were killed mid-write (a finished write renames its file)."""
    now = time.time()
    for temp in directory.glob(".mirror-*.npz"):
        with contextlib.suppress(OSError):
            if now - temp.stat().st_mtime > age_s:
                temp.unlink()


def load(path: Path, *, model_key: str, dims: int) -> Snapshot:
    """The snapshot at ``path``; ValueError (or OSError) says why it cannot be used."""
    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(bytes(data["meta"]).decode())
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise ValueError("written by another version of the server")
        if meta.get("model_key") != model_key:
            raise ValueError(f"made with another embedding model or text version ({meta.get('model_key')})")
        if meta.get("analyzer") != FTS_OPTIONS:
            raise ValueError("made with other full-text analyzer options")
        vectors = np.ascontiguousarray(data["vectors"])
        postings = {name: data[name] for name in _POSTINGS}
    uids = meta["uids"]
    if vectors.dtype != np.float32 or vectors.ndim != 2 or vectors.shape != (len(uids), dims):
        raise ValueError(f"vectors of shape {vectors.shape}, expected ({len(uids)}, {dims}) float32")
    columns = meta["records"]
    if set(columns) != {f.name for f in _FIELDS} or any(len(v) != len(uids) for v in columns.values()):
        raise ValueError("the catalog's columns do not match the records")
    catalog = {uid: TemplateRecord(**dict(zip(columns, values, strict=True)))
               for uid, values in zip(uids, zip(*columns.values(), strict=True), strict=True)}
    if len(catalog) != len(uids):
        raise ValueError("a template appears twice")
    mirror = VectorMirror(catalog, list(uids), vectors)
    text = TextMirror.restore(meta["vocabulary"], postings)
    if text.rows != len(uids):
        raise ValueError("the full-text postings do not cover the same rows as the vectors")
    mirror.text = text
    overrides = {uid: Fingerprint(int(size), int(mtime)) for uid, (size, mtime) in meta["overrides"].items()}
    broken = {uid: (int(size), int(mtime), LoadProblem(str(where), str(message)))
              for uid, size, mtime, where, message in meta["broken"]}
    version = meta.get("table_version")
    return Snapshot(catalog, mirror, overrides, broken, version if isinstance(version, int) else None)


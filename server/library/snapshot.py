"""The in-memory mirror on disk, so a warm start answers its first searches without opening LanceDB.

Why: on a warm start over stdio at 48 templates, importing LanceDB (with Arrow) took 0.45-0.55 s of the
~1.6 s to the first result and ~80 MB of the peak RSS, though below the IVF switch point both search legs
are answered from the mirror (vector_mirror, text_mirror) and the table is only read to build it.

The file is a cache of the table, never a second store. It is written after the mirror's full-text leg is
built (a background thread, after the first search), after a new index's table is written, and again when a
sync notes a touched or broken file; it is used only while it still describes the files:
the start-up scan compares every template's size and mtime with the snapshot's catalog, as a sync compares
them with the table's. The embedding model and text version (``model_key``), the analyzer options and this
format are part of it; any difference, or a file that cannot be read whole, and the table is opened as
before. The first change on disk (or a save, or ``cache clear``) opens the table and syncs; the next
search's mirror is then written again.

One ``.npz`` (numpy's zip of arrays, read with ``allow_pickle=False``): the vectors, the full-text
postings, the catalog column by column, and a small JSON document with the vocabulary and the bookkeeping.
A text column is its distinct values (JSON) and one int32 code per value, so reading it makes one Python
string per distinct value, shared by every record that has it, as the table's dictionary-encoded read does
(10,000 templates: the whole catalog as JSON took 0.25 s to parse and 25 MB on disk).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import npz_file
from .lance_table import FTS_OPTIONS
from .templates import Fingerprint, LoadProblem, TemplateRecord
from .text_mirror import TextMirror
from .vector_mirror import VectorMirror

FORMAT = 2
FILE = "mirror.npz"  # inside the LanceDB database directory, beside the table (LanceDB lists *.lance only)
_KINDS = {"str": "str", "int": "int", "bool": "bool", "list[str]": "list"}
# The catalog holds no text. A field of another type fails here, at import, rather than in a later start.
_FIELDS = [(f.name, _KINDS[str(f.type)]) for f in dataclasses.fields(TemplateRecord) if f.name != "text"]
_COLUMNS = [("uid", "str"), *_FIELDS]


@dataclass
class Snapshot:
    catalog: dict[str, TemplateRecord]
    mirror: VectorMirror
    overrides: dict[str, Fingerprint]  # files touched without a change of content (see IndexSync)
    broken: dict[str, tuple[int, int, LoadProblem]]  # files that failed to load, with the size and mtime they had
    table_version: int | None


def save(path: Path, mirror: VectorMirror, *, model_key: str, table_version: int | None,
         overrides: dict[str, Fingerprint], broken: dict[str, tuple[int, int, LoadProblem]]) -> None:
    """Write ``mirror`` (which must have its full-text leg) for the next start."""
    if mirror.text is None:
        raise ValueError("the mirror's full-text leg is not built yet")
    records = [mirror.catalog[uid] for uid in mirror.uids]
    vocabulary, postings = mirror.text.state()
    distinct, arrays = _encode_catalog(mirror.uids, records)
    meta = {
        "format": FORMAT, "model_key": model_key, "analyzer": FTS_OPTIONS, "table_version": table_version,
        "rows": len(records), "distinct": distinct,
        "overrides": {uid: [fp.size, fp.mtime_ns] for uid, fp in overrides.items()},
        "broken": [[uid, size, mtime, p.path, p.message] for uid, (size, mtime, p) in broken.items()],
        "vocabulary": vocabulary,
    }
    npz_file.write(path, meta, {"vectors": mirror.matrix, **postings, **arrays}, prefix=".mirror-")


def _encode_strings(values: list[str]) -> tuple[list[str], np.ndarray]:
    code: dict[str, int] = {}
    codes = np.fromiter((code.setdefault(v, len(code)) for v in values), dtype=np.int32, count=len(values))
    return list(code), codes


def _encode_catalog(uids: list[str], records: list[TemplateRecord]) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """Per column: ints and flags as arrays; text as distinct values and codes; lists also as their lengths."""
    distinct: dict[str, list[str]] = {}
    arrays: dict[str, Any] = {}
    for name, kind in _COLUMNS:
        values = uids if name == "uid" else [getattr(r, name) for r in records]
        if kind == "int" or kind == "bool":
            arrays[f"col.{name}"] = np.array(values, dtype=np.int64 if kind == "int" else np.bool_)
        elif kind == "str":
            distinct[name], arrays[f"col.{name}"] = _encode_strings(values)
        else:
            arrays[f"len.{name}"] = np.fromiter(map(len, values), dtype=np.int32, count=len(values))
            distinct[name], arrays[f"col.{name}"] = _encode_strings([item for v in values for item in v])
    return distinct, arrays


def _decode_catalog(distinct: dict[str, Any], data: Any, rows: int) -> list[list[Any]]:
    """The columns of :func:`_encode_catalog`, uid first; ValueError when one does not fit."""
    columns: list[list[Any]] = []
    for name, kind in _COLUMNS:
        codes = data[f"col.{name}"]
        if kind == "int" or kind == "bool":
            if codes.dtype != (np.int64 if kind == "int" else np.bool_) or codes.shape != (rows,):
                raise ValueError(f"column {name} does not fit the records")
            columns.append(codes.tolist())
            continue
        words = distinct[name]
        if not isinstance(words, list) or not all(isinstance(w, str) for w in words) or codes.dtype != np.int32 \
                or codes.ndim != 1 or (len(codes) and (codes.min() < 0 or codes.max() >= len(words))):
            raise ValueError(f"column {name} does not fit its values")
        flat = np.array(words, dtype=object)[codes].tolist() if len(codes) else []
        if kind == "str":
            if len(flat) != rows:
                raise ValueError(f"column {name} does not fit the records")
            columns.append(flat)
            continue
        counts = data[f"len.{name}"]
        if counts.shape != (rows,) or (rows and counts.min() < 0) or int(counts.sum()) != len(flat):
            raise ValueError(f"column {name} does not fit the records")
        ends = np.cumsum(counts).tolist()
        columns.append([flat[start:end] for start, end in zip([0, *ends[:-1]], ends, strict=True)])
    return columns


def load(path: Path, *, model_key: str, dims: int) -> Snapshot:
    """The snapshot at ``path``; ValueError (or OSError) says why it cannot be used."""
    meta, data = npz_file.read(path)
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ValueError("written by another version of the server")
    if meta.get("model_key") != model_key:
        raise ValueError(f"made with another embedding model or text version ({meta.get('model_key')})")
    if meta.get("analyzer") != FTS_OPTIONS:
        raise ValueError("made with other full-text analyzer options")
    vectors = data["vectors"]  # as written, dims x rows in memory (VectorMirror.columns): kept without a copy
    rows = int(meta["rows"])
    uids, *columns = _decode_catalog(meta["distinct"], data, rows)
    if vectors.dtype != np.float32 or vectors.ndim != 2 or vectors.shape != (rows, dims):
        raise ValueError(f"vectors of shape {vectors.shape}, expected ({rows}, {dims}) float32")
    by_name = dict(zip((name for name, _ in _FIELDS), columns, strict=True))
    ordered = [by_name[f.name] if f.name in by_name else [""] * rows for f in dataclasses.fields(TemplateRecord)]
    catalog = {uid: TemplateRecord(*values) for uid, values in zip(uids, zip(*ordered, strict=True), strict=True)}
    if len(catalog) != len(uids):
        raise ValueError("a template appears twice")
    mirror = VectorMirror(catalog, list(uids), vectors)
    text = TextMirror.restore(meta["vocabulary"], data)  # it reads the arrays TextMirror.state() named
    if text.rows != len(uids):
        raise ValueError("the full-text postings do not cover the same rows as the vectors")
    mirror.text = text
    overrides = {uid: Fingerprint(int(size), int(mtime)) for uid, (size, mtime) in meta["overrides"].items()}
    broken = {uid: (int(size), int(mtime), LoadProblem(str(where), str(message)))
              for uid, size, mtime, where, message in meta["broken"]}
    version = meta.get("table_version")
    return Snapshot(catalog, mirror, overrides, broken, version if isinstance(version, int) else None)


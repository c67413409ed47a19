"""The LanceDB table underneath the index: importing LanceDB, the row schema, the table's constants,
retried commits and SQL filters.

Scale (measured by ``make bench``, see BENCHMARKS.md): vector search is exact (a flat scan) while the
table is small. Once a sync or bulk load leaves ``VECTOR_INDEX_MIN_ROWS`` (20,000) rows or more, the
index builds an IVF_SQ vector index itself (cosine, LanceDB's default partitioning of about 8,000 rows per
partition: 12 at 100,000 rows) and queries it with ``VECTOR_INDEX_NPROBES`` probes and a refine factor of
``VECTOR_INDEX_REFINE`` (exact re-ranking of twice the requested rows). Up to ~160,000 rows the probes
cover every partition, so the leg is a scan of the 8-bit codes plus that re-ranking. Why these: on this
2-core machine the flat leg costs ~1.5 ms per 1,000 rows (about 40 ms p95 at 20,000 rows, 80-120 ms at
50,000, several hundred ms at 100,000), so past ~20,000 rows flat search alone would eat the 100 ms p95
budget; IVF_SQ with 20 probes and refine 2 kept recall@10 against flat search at 1.00 on real MiniLM query
vectors at 100,000 rows (without refine: 0.94) and answers in ~6-9 ms alone. sqrt(rows) partitions (316 at
100,000) were no faster (p50 5.2-6.4 ms against 5.8-7.2: LanceDB's fixed cost per query dominates) and
lost recall (0.995 at 20 probes). IVF_PQ (recall 0.4) and IVF_HNSW_SQ (recall 0.8, 60 s build) lost.
The index is named after the row count it was trained on and retrained once the table has grown four-fold;
``optimize()`` after every write folds new rows into the FTS and vector indexes (rows written since are
still searched, by a flat scan, until then). The IVF index answers only when the in-memory codes
(quantized_mirror) cannot: without onnxruntime, while they are rebuilt for longer than a search waits, or
past their row limit. Likewise the FTS index answers only while the in-memory postings (text_leg) are built
or stale.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
import time
import types
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

log = logging.getLogger(__name__)

TABLE = "templates"
EMBED_BATCH = 32
BULK_CHUNK = 25_000
WRITER_LOCK = "writer.lock"
WRITE_RETRIES = 5
VECTOR_INDEX_MIN_ROWS = 20_000
VECTOR_INDEX_NPROBES = 20
VECTOR_INDEX_REFINE = 2
VECTOR_INDEX_PREFIX = "vector_ivfsq_"
VECTOR_INDEX_REGROW = 4  # retrain when the table has grown this many times past the training size
# The full-text index's analyzer; text_mirror reproduces exactly this one (its tests compare the scores).
FTS_OPTIONS: dict[str, Any] = {"with_position": False, "base_tokenizer": "simple", "language": "English", "max_token_length": 40,
                               "lower_case": True, "stem": True, "remove_stop_words": True, "ascii_folding": True}
LIST_FIELDS = ("use_cases", "keywords", "explicit_keywords", "capabilities", "recommended_for", "packages",
               "terms_strong", "terms_weak")
STR_FIELDS = ("id", "root", "name", "image_name", "content_hash", "os", "dist", "arch", "image_type",
              "description", "use_case", "kernel", "text")


class IndexError_(RuntimeError):
    """The index cannot be opened or written; the message says what to do."""


class WriterLease(Protocol):
    """Who may write a shared index (the sync leader); the others follow its commits (server/storage/pg_lease.py)."""

    def try_acquire(self) -> bool: ...
    def release(self) -> None: ...


def import_lancedb() -> Any:
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
    loader = spec.loader
    package = types.ModuleType(name)
    package.__path__ = list(spec.submodule_search_locations)
    package.__spec__ = spec
    package.__file__ = spec.origin
    package.__package__ = name

    def complete(attr: str) -> Any:
        package.__dict__.pop("__getattr__", None)
        loader.exec_module(package)
        return getattr(package, attr)

    package.__dict__["__getattr__"] = complete  # PEP 562: a module's __getattr__ answers missing attributes
    sys.modules[name] = package


def retry_on_conflict(action: Callable[[], Any], attempts: int, what: str) -> Any:
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


def table_schema(dims: int) -> Any:
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


def python_values(column: Any) -> list[Any]:
    """A string or list-of-strings column as Python values, with one str object per distinct value.

    Why: templates share most of their words, package names and keywords, and ``to_pylist`` makes a new str
    for every occurrence. At 100,000 templates the catalog took 1.6 GB that way and 0.8 GB deduplicated
    (through Arrow's dictionary encoding), and builds in half the time.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = column.type
    if pa.types.is_list(kind) and pa.types.is_string(kind.value_type):
        lists = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        offsets = lists.offsets.to_numpy()
        items = _distinct_objects(pc.dictionary_encode(lists.values, null_encoding="encode"))
        return [items[start:stop].tolist() for start, stop in zip(offsets[:-1], offsets[1:], strict=True)]
    if pa.types.is_string(kind):
        whole = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        return _distinct_objects(pc.dictionary_encode(whole, null_encoding="encode")).tolist()
    values: list[Any] = column.to_pylist()
    return values


def _distinct_objects(encoded: Any) -> np.ndarray:
    """An object array of the encoded values in row order, every row pointing at its value's one str."""
    distinct = np.array(encoded.dictionary.to_pylist(), dtype=object)
    return distinct[encoded.indices.to_numpy(zero_copy_only=False)]


def vector_matrix(column: Any) -> np.ndarray:
    """The table's ``vector`` column (an Arrow fixed-size list array, or a chunked one) as a float32
    (rows, dims) matrix, read through Arrow, never as Python floats."""
    if hasattr(column, "combine_chunks"):
        column = column.combine_chunks()
    flat = column.flatten().to_numpy(zero_copy_only=False)
    return np.asarray(flat, dtype=np.float32).reshape(len(column), column.type.list_size)


def sql_quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def build_where(filters: dict[str, str | None]) -> str | None:
    clauses = [f"{col} = {sql_quote(val)}" for col, val in filters.items() if val]
    return " AND ".join(clauses) or None


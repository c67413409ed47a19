"""Where flat vector search stops being fast enough, and what the IVF_SQ index costs and recalls instead.

Vector-only LanceDB tables of growing size (prefixes of the 100,000-row corpus vectors), queried with the
real embeddings of the labelled queries: flat latency, IVF_SQ build time, IVF_SQ latency with the
parameters server/library/lance_table.py sets, and recall@10 / recall@50 of IVF_SQ against exact (numpy) search.
50 is the depth of our vector leg (max(4 * top_k, 50) candidates).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.measure import summary

SWEEP_SIZES = (10_000, 20_000, 50_000, 100_000)
FLAT_QUERIES = 20
LEG_DEPTH = 50


def corpus_vectors(index_dir: Path) -> np.ndarray:
    os.environ.setdefault("LANCEDB_LOG", "error")
    import lancedb

    table = lancedb.connect(str(index_dir / "index.lance")).open_table("templates")
    data = table.search().select(["vector"]).limit(table.count_rows()).to_arrow()
    flat = data.column("vector").combine_chunks().flatten().to_numpy()
    return flat.reshape(data.num_rows, -1).astype(np.float32)


def _recall(got: list[list[int]], exact: np.ndarray, k: int) -> float:
    return float(np.mean([len(set(g[:k]) & set(e[:k].tolist())) / k for g, e in zip(got, exact, strict=True)]))


def sweep(vectors: np.ndarray, qvecs: np.ndarray, sizes: tuple[int, ...] = SWEEP_SIZES) -> list[dict[str, Any]]:
    import lancedb
    import pyarrow as pa
    from image_composer_mcp.server.library.lance_table import VECTOR_INDEX_NPROBES, VECTOR_INDEX_REFINE
    from lancedb.index import IvfSq

    results = []
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        db = lancedb.connect(tmp)
        for n in sizes:
            if n > len(vectors):
                continue
            part = vectors[:n]
            table = db.create_table(f"v{n}", pa.table({
                "rid": pa.array(np.arange(n)),
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(part.ravel(), type=pa.float32()), part.shape[1]),
            }))
            exact = np.argsort(-(qvecs @ part.T), axis=1)[:, :LEG_DEPTH]

            def run(q: np.ndarray, indexed: bool, refine: bool = True, table: Any = table) -> tuple[list[int], float]:
                query = table.search(q).distance_type("cosine").limit(LEG_DEPTH).select(["rid"])
                if indexed:
                    query = query.nprobes(VECTOR_INDEX_NPROBES)
                    if refine:
                        query = query.refine_factor(VECTOR_INDEX_REFINE)
                t = time.perf_counter()
                rows = query.to_list()
                return [r["rid"] for r in rows], (time.perf_counter() - t) * 1000

            run(qvecs[0], False)  # warm the table files
            flat = [run(q, False)[1] for q in qvecs[:FLAT_QUERIES]]
            t = time.perf_counter()
            table.create_index("vector", config=IvfSq(distance_type="cosine"))
            build = time.perf_counter() - t
            run(qvecs[0], True)
            ivf = [run(q, True) for q in qvecs]
            raw = [run(q, True, refine=False)[0] for q in qvecs]
            results.append({
                "rows": n,
                "flat": summary(flat),
                "ivf_build_s": round(build, 2),
                "ivf": summary([x[1] for x in ivf]),
                "recall@10": round(_recall([x[0] for x in ivf], exact, 10), 4),
                "recall@50": round(_recall([x[0] for x in ivf], exact, 50), 4),
                "recall@10_no_refine": round(_recall(raw, exact, 10), 4),
            })
            db.drop_table(f"v{n}")
    return results

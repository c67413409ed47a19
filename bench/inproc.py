"""In-process measurements: engine start, search latency, incremental re-index; the baseline as a process."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.measure import summary

REPO = Path(__file__).resolve().parents[1]


def _settings(roots: list[Path], cache_dir: Path) -> Any:
    import os

    from image_composer_mcp.server.core.config import load_settings

    return load_settings(env={"OIC_AI_TEMPLATES_DIR": os.pathsep.join(str(r) for r in roots),
                              "OIC_AI_CACHE_DIR": str(cache_dir), "OIC_AI_PROVIDER": "offline"})


def _edit(raw: bytes) -> bytes:
    """A realistic one-template edit: the description changes, so the template must be re-embedded."""
    for marker in (b'description: "', b"description: "):
        if marker in raw:
            return raw.replace(marker, marker + b"Edited for the benchmark. ", 1)
    return raw + b"\n# edited for the benchmark\n"


def engine_run(roots: list[Path], cache_dir: Path, first_query: str, queries: list[str],
               edit_file: Path | None) -> dict[str, Any]:
    """Engine.ready, first search, N searches, then one edited template: re-index time and the next search."""
    from image_composer_mcp.server.engine import build_engine

    out: dict[str, Any] = {}
    started = time.perf_counter()
    engine = build_engine(_settings(roots, cache_dir))
    try:
        engine.ready()
        out["ready_s"] = round(time.perf_counter() - started, 3)
        t = time.perf_counter()
        engine.search(first_query)
        out["first_search_s"] = round(time.perf_counter() - t, 3)
        out.update(_during_background(engine, queries))
        latencies = []
        for query in queries:
            t = time.perf_counter()
            engine.search(query)
            latencies.append((time.perf_counter() - t) * 1000)
        out["latency"] = summary(latencies)
        out["latencies_ms"] = [round(x, 2) for x in latencies]
        index = engine.index
        assert index is not None
        out["vector_index_rows"] = index.vector_index_rows
        quantized = index._quantized.current(index._opened_table(), index.catalog, engine.searcher.embedder.dimensions,
                                             wait=0)
        if quantized is not None:
            out["quantized"] = quantized_recall(quantized, engine.searcher.embedder, queries[:100])
        t = time.perf_counter()
        scan = index.scan()
        out["scan_s"] = round(time.perf_counter() - t, 3)
        out["scanned_files"] = len(scan)
        if edit_file is not None:
            original = edit_file.read_bytes()
            try:
                edit_file.write_bytes(_edit(original))
                t = time.perf_counter()
                report = engine.reindex()
                out["reindex_one_s"] = round(time.perf_counter() - t, 3)
                out["reindex_embedded"] = report.embedded
                t = time.perf_counter()
                _wait_optimizer(index)
                out["background_optimize_s"] = round(time.perf_counter() - t, 3)
                t = time.perf_counter()
                engine.search(queries[0] + " after edit")
                out["first_search_after_edit_s"] = round(time.perf_counter() - t, 3)
            finally:
                edit_file.write_bytes(original)
            # The other way a change arrives: the periodic scan notices it (run here directly, untimed) and the
            # next search applies it without scanning again.
            index._background_scan()
            t = time.perf_counter()
            report = index.refresh_if_stale(0.0)
            out["apply_scanned_change_s"] = round(time.perf_counter() - t, 3)
            _wait_optimizer(index)
            if report is None or report.embedded != 1:
                engine.reindex()
                _wait_optimizer(index)
    finally:
        engine.close()
        del engine
        gc.collect()
    return out


def quantized_recall(mirror: Any, embedder: Any, queries: list[str], k: int = 50) -> dict[str, Any]:
    """The 8-bit codes' leg (server/library/quantized_mirror.py) against exact search over the same float32
    vectors, with real query embeddings: recall at 10 and 50, and the leg's own latency."""
    exact_matrix = mirror.vectors(np.arange(len(mirror.uids)))
    recall10, recall50, latency = [], [], []
    for query in queries:
        vector = np.asarray(embedder.embed_query(query), dtype=np.float32)
        t = time.perf_counter()
        found = [row for row, _ in mirror.nearest(vector, None, k)]
        latency.append((time.perf_counter() - t) * 1000)
        truth = np.argsort(-(exact_matrix @ vector), kind="stable")[:k].tolist()
        recall10.append(len(set(found[:10]) & set(truth[:10])) / 10)
        recall50.append(len(set(found) & set(truth)) / k)
    return {"rows": len(mirror.uids), "queries": len(queries), "recall@10": round(float(np.mean(recall10)), 4),
            "recall@50": round(float(np.mean(recall50)), 4), "latency": summary(latency)}


def _during_background(engine: Any, queries: list[str]) -> dict[str, Any]:
    """The first search leaves work in the background below the IVF switch point (the in-memory full-text
    leg's build): searches while it runs, timed on their own (the same queries with a word added, so the
    timed set below meets no cached result), then the wait for it to end. The timed set runs after it."""
    index = engine.index
    assert index is not None
    during: list[float] = []
    t0 = time.perf_counter()
    for query in queries:
        if not index.background_busy():
            break
        t = time.perf_counter()
        engine.search(f"{query} please")
        during.append((time.perf_counter() - t) * 1000)
    index.settle()
    out: dict[str, Any] = {"background_s": round(time.perf_counter() - t0, 3), "searches_during_background": len(during)}
    if during:
        out["latency_during_background"] = summary(during)
    return out


def _wait_optimizer(index: Any, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while getattr(index, "_optimizer", None) is not None and time.monotonic() < deadline:
        time.sleep(0.01)


def full_sync(roots: list[Path], vectors_by_text: dict[str, np.ndarray], model_id: str, dims: int) -> dict[str, Any]:
    """The real sync pipeline (scan, read, parse, build text, write, optimize) into an empty index, with
    the embedding step replaced by a lookup of precomputed vectors: indexing cost without embedding."""
    from image_composer_mcp.server.library.index import TemplateIndex

    class Lookup:
        def __init__(self) -> None:
            self.model_id = model_id
            self.dimensions = dims
            self.missing = 0

        def embed(self, texts: list[str]) -> np.ndarray:
            out = []
            for text in texts:
                vec = vectors_by_text.get(text)
                if vec is None:
                    self.missing += 1
                    vec = np.full(dims, 1 / np.sqrt(dims), dtype=np.float32)
                out.append(vec)
            return np.stack(out)

        def embed_query(self, text: str) -> np.ndarray:
            return self.embed([text])[0]

    lookup = Lookup()
    with tempfile.TemporaryDirectory(prefix="bench-sync-") as tmp:
        index = TemplateIndex(Path(tmp), roots, lookup)
        t = time.perf_counter()
        report = index.sync()
        seconds = time.perf_counter() - t
        _wait_optimizer(index)
        index.close()
    return {"templates": report.embedded, "seconds": round(seconds, 3),
            "templates_per_s": round(report.embedded / seconds, 1) if seconds else None,
            "lookup_misses": lookup.missing}


def leave_mirror(roots: list[Path], cache_dir: Path, first_query: str) -> dict[str, Any]:
    """What a server that ran before leaves for the next start: one search, then its background work (the
    mirror on disk below the IVF switch point, server/library/snapshot.py; above it the vector leg's 8-bit
    codes and the full-text leg's postings beside the table). In a process of its own."""
    return engine_process(roots, cache_dir, first_query, [], None, prime=True)


def _prime(roots: list[Path], cache_dir: Path, first_query: str) -> dict[str, Any]:
    from image_composer_mcp.server.engine import build_engine

    engine = build_engine(_settings(roots, cache_dir))
    try:
        engine.ready()
        index = engine.index
        assert index is not None
        already = index.from_snapshot
        engine.search(first_query)
        index.settle()
        path = index.snapshot_path
        return {"mirror_was_current": already, "mirror_on_disk": path is not None and path.is_file()}
    finally:
        engine.close()


def engine_process(roots: list[Path], cache_dir: Path, first_query: str, queries: list[str],
                   edit_file: Path | None, prime: bool = False) -> dict[str, Any]:
    """:func:`engine_run` in a process of its own, as the baseline runs: inside the benchmark process (its
    corpora and earlier engines in memory) our search measured p50 9.3 ms at 48 templates against ~6.5 ms
    in a process of its own."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump({"roots": [str(r) for r in roots], "cache_dir": str(cache_dir), "first_query": first_query,
                   "queries": queries, "edit_file": str(edit_file) if edit_file else None, "prime": prime}, fh)
        job = fh.name
    try:
        proc = subprocess.run([sys.executable, "-m", "bench.inproc", job], cwd=str(REPO), capture_output=True,
                              text=True, timeout=3600)
    finally:
        Path(job).unlink(missing_ok=True)
    if proc.returncode != 0:
        return {"error": proc.stderr[-2000:]}
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def main(argv: list[str]) -> int:
    import logging
    import os

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    os.environ.setdefault("LANCEDB_LOG", "error")
    job = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    # The report's "engine ready" column is with modules already imported (start-up has its own rows).
    import image_composer_mcp.server.engine.composition  # noqa: F401
    import image_composer_mcp.server.library.index  # noqa: F401
    import image_composer_mcp.server.library.search  # noqa: F401
    import onnxruntime  # noqa: F401
    import tokenizers  # noqa: F401
    from image_composer_mcp.server.library.lance_table import import_lancedb

    if job.get("prime"):
        json.dump(_prime([Path(r) for r in job["roots"]], Path(job["cache_dir"]), job["first_query"]), sys.stdout)
        return 0
    import_lancedb()
    out = engine_run([Path(r) for r in job["roots"]], Path(job["cache_dir"]), job["first_query"], job["queries"],
                     Path(job["edit_file"]) if job["edit_file"] else None)
    json.dump(out, sys.stdout)
    return 0


LATENCY_ROUNDS = 3


def alternating_runs(roots: list[Path], cache_dir: Path, docs_prefix: Path, first_query: str, queries: list[str],
                     edit_file: Path | None, rounds: int = LATENCY_ROUNDS) -> tuple[dict[str, Any], dict[str, Any]]:
    """Ours and the baseline, each in a process of its own, in turns (ours, baseline, ours, ...), latencies
    pooled over the rounds. Why: on a shared VM the machine's speed drifts within a minute, and one run of each,
    one after the other, measured that drift as much as the difference (one size's p95 ratio moved between 1.0
    and 1.7x from run to run). Everything but the latencies is the first round's; only it edits a template.

    The baseline runs twice a round, its embedder's threads spinning during a call (our setting) and sleeping,
    and keeps whichever setting gave it the lower pooled p95: its brute force multiplies on OpenBLAS's own
    threads, and the two pools' spinning fought over the 2 cores (measured at 10,000 templates: baseline p95
    8.9-9.9 ms sleeping, 14.4-17.1 ms spinning), while at 48 spinning made it faster. The other setting's
    figures stay beside it (``other_setting``)."""
    ours, spinning, sleeping = [], [], []
    for round_ in range(rounds):
        ours.append(engine_process(roots, cache_dir, first_query, queries, edit_file if round_ == 0 else None))
        spinning.append(baseline_process(docs_prefix, first_query, queries))
        sleeping.append(baseline_process(docs_prefix, first_query, queries, spin=False))
    settings = sorted(((_pooled(spinning), "spinning"), (_pooled(sleeping), "sleeping")),
                      key=lambda pair: _p95(pair[0]))
    (base, name), (other, other_name) = settings
    base = {**base, "embedder_threads": name,
            "other_setting": {"embedder_threads": other_name, "latency": other.get("latency")}}
    return _pooled(ours), base


def _p95(pooled: dict[str, Any]) -> float:
    latency = pooled.get("latency") or {}
    return float(latency.get("p95_ms") or "inf")


def _pooled(runs: list[dict[str, Any]]) -> dict[str, Any]:
    done = [r for r in runs if "error" not in r]
    if not done:
        return runs[0]
    out = dict(done[0])
    out["pooled_latencies_ms"] = [x for r in done for x in r.get("latencies_ms", [])]  # rounds in order, paired
    out["latency"] = summary(out["pooled_latencies_ms"])
    out["latency_rounds"] = [r["latency"] for r in done]
    out["failed_rounds"] = len(runs) - len(done)
    return out


def baseline_process(docs_prefix: Path, first_query: str, queries: list[str], spin: bool = True) -> dict[str, Any]:
    """Run the baseline as its own process: start -> first result, per-query latency, peak RSS. ``spin``: its
    embedder's threads spin during a call (see :func:`alternating_runs`)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump([first_query, *queries], fh)
        qpath = fh.name
    spawned = time.time()
    args = [sys.executable, "-m", "bench.baseline", "--docs", str(docs_prefix), "--queries", qpath]
    proc = subprocess.run(args if spin else [*args, "--no-spin"], cwd=str(REPO), capture_output=True, text=True,
                          timeout=1800)
    Path(qpath).unlink(missing_ok=True)
    if proc.returncode != 0:
        return {"error": proc.stderr[-2000:]}
    data = json.loads(proc.stdout)
    lat = data["latencies_ms"]
    return {"documents": data["documents"], "load_s": data["load_s"],
            "first_result_s": round(data["first_result_at"] - spawned, 3),
            "latency": summary(lat[1:]), "latencies_ms": [round(x, 2) for x in lat[1:]],
            "peak_rss_mb": data["peak_rss_mb"]}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

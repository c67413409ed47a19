"""Retrieval quality of our search and of the upstream baseline on the labelled query sets.

Two kinds of set per real corpus:

* the original labelled set (tests/data/queries-<corpus>.yaml), reported as before;
* the needs set (bench/eval/search-<corpus>.yaml): queries written from user needs, split once into a
  development half (tuning allowed) and a held-out test half, reported per half and per query type.

Quality only, without the speed runs (seconds, not minutes):

    python -m bench.quality [--split dev|test] [--misses]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench.baseline import BaselineIndex, load_docs, save_docs
from bench.embedcache import EmbeddingCache
from bench.evaluation import SPLITS, LabelledQuery, QualityReport, evaluate, load_queries

log = logging.getLogger(__name__)

RANK_DEPTH = 10
EVAL_DIR = Path(__file__).resolve().parent / "eval"


@dataclass
class RealCorpus:
    name: str  # "reference" or "library"
    root: Path
    queries: Path | None
    needs: Path | None = None  # bench/eval/search-<name>.yaml, split into dev/test
    extra: dict[str, Path] = field(default_factory=dict)


def report_dict(report: QualityReport) -> dict[str, Any]:
    return {"overall": report.metrics(), "by_type": report.by_type(),
            "misses_at_3": [{"query": o.query.query, "type": o.query.type, "rank": o.rank, "top3": o.ranked[:3]}
                            for o in report.failures(3)]}


def ours_engine(corpus: RealCorpus, cache_dir: Path) -> Any:
    from image_composer_mcp.server.core.config import load_settings
    from image_composer_mcp.server.engine import build_engine

    settings = load_settings(env={"OIC_AI_TEMPLATES_DIR": str(corpus.root), "OIC_AI_CACHE_DIR": str(cache_dir),
                                  "OIC_AI_PROVIDER": "offline"})
    engine = build_engine(settings)
    engine.ready()
    return engine


def baseline_index(corpus: RealCorpus, embed_cache: EmbeddingCache, save_to: Path | None = None) -> BaselineIndex:
    docs = load_docs(corpus.root)
    vectors = embed_cache.get([d.searchable_text() for d in docs], f"upstream texts ({corpus.name})")
    if save_to is not None:
        save_docs(save_to, docs, vectors)
    return BaselineIndex(docs, vectors)


def _compare(queries: list[LabelledQuery], engine: Any, baseline: BaselineIndex, embed_cache: EmbeddingCache,
             ) -> dict[str, Any]:
    """Both systems as shipped (their thresholds, top 5) and as pure rankers (no threshold, top 10)."""
    # Query vectors through the same cache: identical inputs for both systems, embedded once.
    texts = [q.query for q in queries]
    qvecs = dict(zip(texts, embed_cache.get(texts, "queries"), strict=True))
    searcher = engine.searcher

    def ours(threshold: bool, k: int) -> Callable[[str], tuple[list[str], str]]:
        def rank(query: str) -> tuple[list[str], str]:
            outcome = searcher.search(query, k, use_threshold=threshold)
            return [r.record.name for r in outcome.results], outcome.query_type
        return rank

    def base(threshold: bool, k: int) -> Callable[[str], tuple[list[str], str]]:
        def rank(query: str) -> tuple[list[str], str]:
            hits = baseline.search(query, qvecs[query], top_k=k, min_score=0.40 if threshold else -np.inf)
            return [h.name for h in hits], ""
        return rank

    return {
        "templates": len(baseline),
        "queries": len(queries),
        "shipped": {"ours": report_dict(evaluate(queries, ours(True, 5))),
                    "baseline": report_dict(evaluate(queries, base(True, 5)))},
        "ranking": {"ours": report_dict(evaluate(queries, ours(False, RANK_DEPTH))),
                    "baseline": report_dict(evaluate(queries, base(False, RANK_DEPTH)))},
    }


def evaluate_corpus(corpus: RealCorpus, engine: Any, baseline: BaselineIndex, embed_cache: EmbeddingCache,
                    splits: tuple[str, ...] = SPLITS) -> dict[str, Any]:
    """The original labelled set at the top level (as before) and the needs set per half under "needs"."""
    started = time.perf_counter()
    out: dict[str, Any] = {}
    if corpus.queries is not None:
        out = _compare(load_queries(corpus.queries), engine, baseline, embed_cache)
    if corpus.needs is not None:
        out["needs"] = {half: _compare(load_queries(corpus.needs, half), engine, baseline, embed_cache)
                        for half in splits}
    out["seconds"] = round(time.perf_counter() - started, 2)
    return out


def real_corpora(repo: Path, reference_root: Path) -> tuple[list[RealCorpus], list[str]]:
    notes: list[str] = []
    corpora: list[RealCorpus] = []

    def needs(name: str) -> Path | None:
        path = EVAL_DIR / f"search-{name}.yaml"
        return path if path.is_file() else None

    if reference_root.is_dir():
        q = repo / "tests" / "data" / "queries-reference.yaml"
        corpora.append(RealCorpus("reference", reference_root, q if q.is_file() else None, needs("reference")))
    else:
        notes.append(f"{reference_root} is absent (fresh clone without ../shared): reference-corpus figures skipped")
    q = repo / "tests" / "data" / "queries-library.yaml"
    corpora.append(RealCorpus("library", repo / "image-templates", q if q.is_file() else None, needs("library")))
    if not q.is_file():
        notes.append("tests/data/queries-library.yaml is absent: no quality figures for our library")
    return corpora, notes


def _line(label: str, o: dict[str, Any], b: dict[str, Any]) -> str:
    rej = f"  rejected {o['rejected']:.2f}/{b['rejected']:.2f}" if "rejected" in o else ""
    return (f"  {label:<18} n={o['queries']:<3} hit@3 {o['hit@3']:.3f}/{b['hit@3']:.3f}  "
            f"MRR {o['mrr']:.3f}/{b['mrr']:.3f}  empty {o['empty']}/{b['empty']}{rej}")


def _print(name: str, result: dict[str, Any], misses: bool) -> None:
    for mode in ("shipped", "ranking"):
        ours, base = result[mode]["ours"], result[mode]["baseline"]
        print(f"{name} [{mode}] ours/baseline", file=sys.stderr)
        for t, o in ours["by_type"].items():
            print(_line(t, o, base["by_type"][t]), file=sys.stderr)
        print(_line("OVERALL", ours["overall"], base["overall"]), file=sys.stderr)
    if misses:
        for m in result["shipped"]["ours"]["misses_at_3"]:
            print(f"    miss [{m['type']}] {m['query']!r} rank={m['rank']} top3={m['top3']}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    from image_composer_mcp.server.library.embed_local import LocalEmbedder

    from bench import corpus as corpus_mod

    p = argparse.ArgumentParser(prog="python -m bench.quality", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--split", choices=SPLITS, action="append", help="needs-set half(s) to run (default both)")
    p.add_argument("--misses", action="store_true", help="list our misses at 3")
    p.add_argument("--cache", default=str(corpus_mod.REPO / ".bench-cache"))
    p.add_argument("--json", default=None, help="also write the figures to this file")
    p.add_argument("--update-report", action="store_true",
                   help="rewrite the quality section and quality targets of BENCHMARKS.md (and bench/plots/quality.png)")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    os.environ.setdefault("LANCEDB_LOG", "error")
    cache = Path(args.cache).resolve()
    embed_cache = EmbeddingCache(cache / "embeddings", LocalEmbedder())
    corpora, notes = real_corpora(corpus_mod.REPO, corpus_mod.REFERENCE)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    results: dict[str, Any] = {}
    for rc in corpora:
        engine = ours_engine(rc, cache / f"quality-{rc.name}")
        try:
            base = baseline_index(rc, embed_cache)
            results[rc.name] = evaluate_corpus(rc, engine, base, embed_cache, tuple(args.split or SPLITS))
        finally:
            engine.close()
        if "shipped" in results[rc.name]:
            _print(f"{rc.name} labelled set", results[rc.name], args.misses)
        for half, res in results[rc.name].get("needs", {}).items():
            _print(f"{rc.name} needs set, {half} half", res, args.misses)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1), encoding="utf-8")
    if args.update_report:
        from bench.measure import machine
        from bench.report import update_quality_section

        m = machine()
        update_quality_section(results, corpus_mod.REPO / "BENCHMARKS.md", corpus_mod.REPO / "bench" / "plots",
                               f"{m['date']} ({m['cpu']}, {m['cores']} cores)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

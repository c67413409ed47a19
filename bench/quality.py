"""Retrieval quality of our search and of the upstream baseline on the labelled query sets."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.baseline import BaselineIndex, load_docs, save_docs
from bench.embedcache import EmbeddingCache
from server.evaluation import LabelledQuery, QualityReport, evaluate, load_queries

log = logging.getLogger(__name__)

RANK_DEPTH = 10


@dataclass
class RealCorpus:
    name: str  # "reference" or "library"
    root: Path
    queries: Path | None


def report_dict(report: QualityReport) -> dict[str, Any]:
    return {"overall": report.metrics(), "by_type": report.by_type(),
            "misses_at_3": [{"query": o.query.query, "type": o.query.type, "rank": o.rank, "top3": o.ranked[:3]}
                            for o in report.failures(3)]}


def ours_engine(corpus: RealCorpus, cache_dir: Path) -> Any:
    from server.config import load_settings
    from server.engine import Engine

    settings = load_settings(env={"OIC_AI_TEMPLATES_DIR": str(corpus.root), "OIC_AI_CACHE_DIR": str(cache_dir),
                                  "OIC_AI_PROVIDER": "offline"})
    engine = Engine(settings)
    engine.ready()
    return engine


def baseline_index(corpus: RealCorpus, embed_cache: EmbeddingCache, save_to: Path | None = None) -> BaselineIndex:
    docs = load_docs(corpus.root)
    vectors = embed_cache.get([d.searchable_text() for d in docs], f"upstream texts ({corpus.name})")
    if save_to is not None:
        save_docs(save_to, docs, vectors)
    return BaselineIndex(docs, vectors)


def evaluate_corpus(corpus: RealCorpus, engine: Any, baseline: BaselineIndex, embed_cache: EmbeddingCache,
                    ) -> dict[str, Any]:
    """Both systems as shipped (their thresholds, top 5) and as pure rankers (no threshold, top 10)."""
    assert corpus.queries is not None
    queries: list[LabelledQuery] = load_queries(corpus.queries)
    # Query vectors through the same cache: identical inputs for both systems, embedded once.
    qvecs = dict(zip([q.query for q in queries], embed_cache.get([q.query for q in queries], "queries"), strict=True))
    searcher = engine.searcher

    def ours(threshold: bool, k: int):
        def rank(query: str) -> tuple[list[str], str]:
            outcome = searcher.search(query, k, use_threshold=threshold)
            return [r.record.name for r in outcome.results], outcome.query_type
        return rank

    def base(threshold: bool, k: int):
        def rank(query: str) -> tuple[list[str], str]:
            hits = baseline.search(query, qvecs[query], top_k=k, min_score=0.40 if threshold else -np.inf)
            return [h.name for h in hits], ""
        return rank

    started = time.perf_counter()
    out = {
        "templates": len(baseline),
        "queries": len(queries),
        "shipped": {"ours": report_dict(evaluate(queries, ours(True, 5))),
                    "baseline": report_dict(evaluate(queries, base(True, 5)))},
        "ranking": {"ours": report_dict(evaluate(queries, ours(False, RANK_DEPTH))),
                    "baseline": report_dict(evaluate(queries, base(False, RANK_DEPTH)))},
    }
    out["seconds"] = round(time.perf_counter() - started, 2)
    return out


def real_corpora(repo: Path, reference_root: Path) -> tuple[list[RealCorpus], list[str]]:
    notes: list[str] = []
    corpora: list[RealCorpus] = []
    if reference_root.is_dir():
        q = repo / "tests" / "data" / "queries-reference.yaml"
        corpora.append(RealCorpus("reference", reference_root, q if q.is_file() else None))
    else:
        notes.append(f"{reference_root} is absent (fresh clone without ../shared): reference-corpus figures skipped")
    q = repo / "tests" / "data" / "queries-library.yaml"
    corpora.append(RealCorpus("library", repo / "image-templates", q if q.is_file() else None))
    if not q.is_file():
        notes.append("tests/data/queries-library.yaml is absent: no quality figures for our library")
    return corpora, notes


"""Retrieval quality over a labelled query set: hit@k, MRR and nDCG@5, overall and by query type.

A query labelled with no relevant template (``relevant: []``) is an *irrelevant* query: it is answered
correctly only by an empty result list. Such queries are kept out of the ranking metrics and counted in
``rejected`` instead; ``empty`` counts relevant queries that came back with nothing at all.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from image_composer_mcp.server.core.yamlsafe import parse_yaml

SPLITS = ("dev", "test")


@dataclass
class LabelledQuery:
    query: str
    relevant: list[str]
    type: str = ""
    split: str = ""  # "dev" (tuning allowed), "test" (held out) or "" (not split)

    @property
    def irrelevant(self) -> bool:
        return not self.relevant


@dataclass
class QueryOutcome:
    query: LabelledQuery
    ranked: list[str]
    predicted_type: str
    rank: int | None  # 1-based rank of the first relevant result

    def hit(self, k: int) -> bool:
        if self.query.irrelevant:
            return not self.ranked
        return self.rank is not None and self.rank <= k


@dataclass
class QualityReport:
    outcomes: list[QueryOutcome] = field(default_factory=list)

    def metrics(self, outcomes: list[QueryOutcome] | None = None) -> dict[str, float]:
        every = self.outcomes if outcomes is None else outcomes
        items = [o for o in every if not o.query.irrelevant]
        negatives = [o for o in every if o.query.irrelevant]
        n = len(items) or 1
        ndcg = 0.0
        for o in items:
            rel = set(o.query.relevant)
            dcg = sum(1 / math.log2(i + 2) for i, name in enumerate(o.ranked[:5]) if name in rel)
            ideal = sum(1 / math.log2(i + 2) for i in range(min(5, len(rel))))
            ndcg += dcg / ideal if ideal else 0.0
        out: dict[str, float] = {
            "queries": len(items),
            "hit@1": round(sum(o.hit(1) for o in items) / n, 4),
            "hit@3": round(sum(o.hit(3) for o in items) / n, 4),
            "mrr": round(sum(1 / o.rank for o in items if o.rank) / n, 4),
            "ndcg@5": round(ndcg / n, 4),
            "empty": sum(not o.ranked for o in items),
        }
        if negatives:
            out["irrelevant"] = len(negatives)
            out["rejected"] = round(sum(o.hit(1) for o in negatives) / len(negatives), 4)
        return out

    def by_type(self) -> dict[str, dict[str, float]]:
        groups: dict[str, list[QueryOutcome]] = defaultdict(list)
        for o in self.outcomes:
            groups[o.query.type or o.predicted_type].append(o)
        return {t: self.metrics(items) for t, items in sorted(groups.items())}

    def failures(self, k: int = 3) -> list[QueryOutcome]:
        return [o for o in self.outcomes if not o.hit(k)]


def load_queries(path: Path, split: str | None = None) -> list[LabelledQuery]:
    """The labelled queries of a file; with ``split``, only that half ("dev" or "test")."""
    if split is not None and split not in SPLITS:
        raise ValueError(f"unknown split '{split}'; use one of {', '.join(SPLITS)}")
    data = parse_yaml(path.read_bytes()).data or []
    queries = [LabelledQuery(str(q["query"]), [str(r) for r in q.get("relevant") or []], str(q.get("type", "")),
                             str(q.get("split", ""))) for q in data]
    return [q for q in queries if split is None or q.split == split]


def evaluate(queries: list[LabelledQuery], rank: Callable[[str], tuple[list[str], str]]) -> QualityReport:
    """``rank(query)`` returns the ranked template names (top 10 or so) and the predicted query type."""
    report = QualityReport()
    for q in queries:
        ranked, qtype = rank(q.query)
        first = next((i + 1 for i, name in enumerate(ranked) if name in set(q.relevant)), None)
        report.outcomes.append(QueryOutcome(q, ranked, qtype, first))
    return report


def summarize(report: QualityReport) -> dict[str, Any]:
    return {"overall": report.metrics(), "by_type": report.by_type(),
            "failures": [{"query": o.query.query, "rank": o.rank, "top3": o.ranked[:3]} for o in report.failures()]}

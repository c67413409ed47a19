"""The query stream for latency runs: the labelled queries plus deterministic variants, all distinct.

Distinct on purpose: the server caches results (30 s) and query vectors, so a repeated query would measure
a dictionary lookup. Every timed search here embeds its query and runs the full retrieval.
"""

from __future__ import annotations

from bench.evaluation import LabelledQuery

FIRST_QUERY = "minimal edge image with docker for a first search"
SUFFIXES = ("on x86_64", "for arm64", "with ssh access", "for a small office", "as a raw disk", "for production",
            "with monitoring", "for a lab", "without a desktop", "for a factory line", "with cloud-init",
            "for a retail store")


def latency_queries(labelled: list[LabelledQuery], n: int) -> list[str]:
    base = list(dict.fromkeys(q.query for q in labelled)) or ["minimal ubuntu image", "edge gateway with docker"]
    out: list[str] = []
    seen = {FIRST_QUERY.lower()}
    round_ = 0
    while len(out) < n and round_ <= len(SUFFIXES):
        for q in base:
            text = q if round_ == 0 else f"{q} {SUFFIXES[(round_ - 1 + len(out)) % len(SUFFIXES)]}"
            if text.lower() not in seen:
                seen.add(text.lower())
                out.append(text)
                if len(out) >= n:
                    break
        round_ += 1
    return out

"""Counts and latencies the engine keeps for cache_stats."""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, field


def _quantile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@dataclass
class LatencyBook:
    """Counts and recent latencies per label."""

    window: int = 1000
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    samples: dict[str, deque[float]] = field(default_factory=dict)

    def add(self, label: str, ms: float) -> None:
        self.counts[label] += 1
        self.samples.setdefault(label, deque(maxlen=self.window)).append(ms)

    def summary(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for label, values in self.samples.items():
            ordered = sorted(values)
            out[label] = {"count": self.counts[label], "p50_ms": round(_quantile(ordered, 0.5), 2),
                          "p95_ms": round(_quantile(ordered, 0.95), 2),
                          "mean_ms": round(sum(ordered) / len(ordered), 2)}
        return out


@dataclass
class ValidationCounts:
    valid: int = 0
    invalid: int = 0

    def add(self, valid: bool) -> None:
        if valid:
            self.valid += 1
        else:
            self.invalid += 1

    def summary(self) -> dict[str, float | int | None]:
        total = self.valid + self.invalid
        return {"checks": total, "valid": self.valid,
                "success_rate": round(self.valid / total, 4) if total else None}

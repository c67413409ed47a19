"""Small measuring helpers: percentiles, peak RSS from /proc, and a description of the machine."""

from __future__ import annotations

import datetime as dt
import os
import platform
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100), as numpy's default."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def ratio_interval(ours: list[float], base: list[float], q: float = 95, level: float = 0.95,
                   resamples: int = 2000, seed: int = 0) -> tuple[float, float] | None:
    """A bootstrap interval for percentile ``q`` of ``ours`` over that of ``base``: the searches resampled in
    pairs (the same query in the same round on both sides) when the lists pair up, each side alone otherwise.
    None without enough searches to say."""
    import numpy as np

    if len(ours) < 20 or len(base) < 20:
        return None
    a, b = np.asarray(ours, dtype=np.float64), np.asarray(base, dtype=np.float64)
    rng = np.random.default_rng(seed)
    pick_a = rng.integers(0, len(a), (resamples, len(a)))
    pick_b = pick_a if len(a) == len(b) else rng.integers(0, len(b), (resamples, len(b)))
    ratios = np.percentile(a[pick_a], q, axis=1) / np.percentile(b[pick_b], q, axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return float(low), float(high)


def summary(latencies_ms: list[float]) -> dict[str, float]:
    return {"n": len(latencies_ms), "p50_ms": round(percentile(latencies_ms, 50), 2),
            "p95_ms": round(percentile(latencies_ms, 95), 2), "p99_ms": round(percentile(latencies_ms, 99), 2),
            "mean_ms": round(sum(latencies_ms) / len(latencies_ms), 2) if latencies_ms else float("nan")}


def proc_status_kb(pid: int | str, field: str) -> int | None:
    """A ``kB`` field of /proc/<pid>/status (VmHWM = peak RSS, VmRSS = current)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def peak_rss_mb(pid: int | str = "self") -> float | None:
    kb = proc_status_kb(pid, "VmHWM")
    return round(kb / 1024, 1) if kb is not None else None


def children_matching(needle: str) -> list[int]:
    """Descendant processes of this one whose command line contains ``needle``."""
    me = os.getpid()
    parents: dict[int, int] = {}
    cmdlines: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        parents[int(entry.name)] = ppid
        cmdlines[int(entry.name)] = cmd
    found = []
    for pid, cmd in cmdlines.items():
        p = parents.get(pid)
        while p and p != me and p in parents:
            p = parents[p]
        if p == me and needle in cmd:
            found.append(pid)
    return found


@contextmanager
def timer() -> Iterator[dict[str, float]]:
    box: dict[str, float] = {}
    started = time.perf_counter()
    try:
        yield box
    finally:
        box["seconds"] = time.perf_counter() - started


def machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_gb = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    versions: dict[str, str] = {}
    for mod in ("lancedb", "pyarrow", "numpy", "mcp"):
        try:
            from importlib.metadata import version

            versions[mod] = version(mod)
        except Exception:  # noqa: BLE001 - a missing version is only cosmetic
            versions[mod] = "?"
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "ram_gb": mem_gb,
        "os": f"{platform.system()} {platform.release()}",
        "python": sys.version.split()[0],
        "versions": versions,
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }

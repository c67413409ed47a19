"""Latency, cold start and peak memory through the real server process over stdio (mcp.Client)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from bench.measure import children_matching, peak_rss_mb, summary

REPO = Path(__file__).resolve().parents[1]
FIRST_RESULT_TIMEOUT = 900.0


def server_env(roots: list[Path], cache_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        OIC_AI_TEMPLATES_DIR=os.pathsep.join(str(r) for r in roots),
        OIC_AI_CACHE_DIR=str(cache_dir),
        # Search needs no LLM; "offline" keeps provider probing out of the measurement.
        OIC_AI_PROVIDER="offline",
        OIC_AI_LOG_LEVEL="WARNING",
        LANCEDB_LOG="error",
        PYTHONUNBUFFERED="1",
    )
    return env


async def _session(roots: list[Path], cache_dir: Path, first_query: str, queries: list[str]) -> dict[str, Any]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "image_composer_mcp.server.transport.cli"], env=server_env(roots, cache_dir),
                                   cwd=str(REPO))
    out: dict[str, Any] = {}
    started = time.perf_counter()
    async with Client(params, read_timeout_seconds=FIRST_RESULT_TIMEOUT) as client:
        out["handshake_s"] = round(time.perf_counter() - started, 3)
        first = await client.call_tool("search_templates", {"query": first_query, "top_k": 5})
        out["first_result_s"] = round(time.perf_counter() - started, 3)
        out["first_result_ok"] = not first.is_error and bool((first.structured_content or {}).get("results"))
        latencies: list[float] = []
        errors = 0
        for query in queries:
            t = time.perf_counter()
            result = await client.call_tool("search_templates", {"query": query, "top_k": 5})
            latencies.append((time.perf_counter() - t) * 1000)
            errors += bool(result.is_error)
        out["latency"] = summary(latencies) if latencies else None
        out["latencies_ms"] = [round(x, 2) for x in latencies]
        out["errors"] = errors
        stats = await client.call_tool("cache_stats", {})
        sc = stats.structured_content or {}
        out["server_stats"] = {k: sc.get(k) for k in ("templates_indexed", "embedded_this_run", "cache_hits",
                                                      "last_sync_seconds", "index_size_bytes")}
        pids = children_matching("image_composer_mcp.server.transport.cli")
        out["peak_rss_mb"] = peak_rss_mb(pids[0]) if pids else None
    return out


def run_session(roots: list[Path], cache_dir: Path, first_query: str, queries: list[str]) -> dict[str, Any]:
    """Start a server process, time start -> first result, then ``queries`` one by one; read its peak RSS."""
    return anyio.run(_session, roots, cache_dir, first_query, queries)


def run_session_without_mirror(roots: list[Path], cache_dir: Path, first_query: str,
                               queries: list[str]) -> dict[str, Any]:
    """:func:`run_session` with no mirror on disk (the first start after an import or an upgrade): the table
    answers the start, as before server/library/snapshot.py. The session leaves a new mirror behind."""
    from image_composer_mcp.server.library import snapshot
    from image_composer_mcp.server.library.index import INDEX_DIR

    (cache_dir / INDEX_DIR / snapshot.FILE).unlink(missing_ok=True)
    return run_session(roots, cache_dir, first_query, queries)

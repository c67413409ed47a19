"""cache_stats: index, embedding cache and query metrics."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

from ..server.engine import Engine
from ._common import call_engine, result


class SkippedFile(BaseModel):
    path: str
    reason: str


class CacheStats(BaseModel):
    templates_indexed: int
    template_roots: list[str]
    save_dir: str = Field("", description="where save_as writes; indexed beside template_roots")
    semantic_search: str = Field("on", description="off while no embedding model is installed (see warnings)")
    embedded_this_run: int
    cache_hits: int
    cache_misses: int
    cache_hit_rate: float | None
    embedding_provider: str
    model_id: str
    dimensions: int
    index_location: str
    index_size_bytes: int | None = Field(description="None when the index is in object storage")
    index_source: str = Field("", description="where searches are answered from: the table, its in-memory "
                                              "mirror, the mirror on disk, a new index whose table is being "
                                              "written, or the table with its vector leg's 8-bit codes (and "
                                              "its full-text postings) in memory")
    last_sync: float | None = Field(description="unix time of the last index sync")
    last_sync_seconds: float | None
    syncs: int
    skipped_files: list[SkippedFile]
    queries: dict[str, dict[str, float]] = Field(description="count and latency (ms) by query type")
    tools: dict[str, dict[str, float]] = Field(description="count and latency (ms) by tool")
    warnings: list[str]
    uptime_seconds: float
    extra: dict[str, Any] = Field(default_factory=dict)


def to_text(s: CacheStats) -> str:
    rate = f"{s.cache_hit_rate:.0%}" if s.cache_hit_rate is not None else "n/a"
    lines = [
        f"{s.templates_indexed} templates indexed from {', '.join(s.template_roots)}",
        f"embedding model {s.model_id} ({s.dimensions} dims, provider {s.embedding_provider}); "
        f"semantic search {s.semantic_search}",
        f"embedding cache: {s.cache_hits} hits, {s.cache_misses} misses, hit rate {rate}; "
        f"{s.embedded_this_run} embedded this run",
        f"index at {s.index_location} "
        f"({f'{s.index_size_bytes / 1024:.0f} KiB' if s.index_size_bytes is not None else 'object storage'}), "
        f"{s.syncs} syncs" + (f"; searching {s.index_source}" if s.index_source else ""),
    ]
    for qtype, q in sorted(s.queries.items()):
        lines.append(f"queries {qtype}: {q['count']:.0f}, p50 {q['p50_ms']} ms, p95 {q['p95_ms']} ms")
    for f in s.skipped_files:
        lines.append(f"skipped {f.path}: {f.reason}")
    lines.extend(f"warning: {w}" for w in s.warnings)
    return "\n".join(lines)


def register(mcp: MCPServer, engine: Engine) -> None:
    @mcp.tool(
        name="cache_stats",
        title="Index and cache statistics",
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False),
    )
    async def cache_stats() -> Annotated[CallToolResult, CacheStats]:
        """Report the template index and embedding cache: templates indexed, cache hits/misses and hit rate,
        model, index location and size, last sync, skipped files and query latency by query type."""
        stats = await call_engine(engine, "cache_stats", engine.stats)
        model = CacheStats(**stats)
        return result(model, to_text(model))

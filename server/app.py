"""Assembly: build the MCPServer, register tools and resources around one Engine."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer

from server.config import AISettings
from server.engine import Engine

log = logging.getLogger(__name__)

VERSION = "0.1.0"

INSTRUCTIONS = """\
Tools for OS Image Composer image templates (YAML files that describe an OS image: target OS/distribution/arch,
disk layout, packages, kernel, bootloader).
- search_templates: find existing working templates that match a need ("minimal edge image for ubuntu",
  "image with nginx and docker-ce", "cloud elxr raw", "without docker"). Read a result's full YAML through its
  template:// resource URI. Use it first when the user wants to see or start from an example.
- validate_template: check a template (YAML text or an indexed name) against the schema and semantic rules;
  every issue has a line, column and a hint. Use it on any template before presenting it as correct.
- verify_packages: check that package names exist in the target distribution's real repositories; missing
  ones get suggestions. "verified: false" means a repository could not be read, not that packages are missing.
- cache_stats: index size, embedding-cache hit rate, query latency; use it when diagnosing the server.
Resources: template://{name} (YAML of one template), templates://index (all templates), schema://template
(the JSON Schema of a template).
"""


def create_app(settings: AISettings, engine: Engine | None = None) -> MCPServer:
    engine = engine or Engine(settings)

    @asynccontextmanager
    async def lifespan(_server: MCPServer) -> AsyncIterator[dict[str, Any]]:
        engine.start()  # loads in a background thread; the handshake does not wait
        try:
            yield {"engine": engine}
        finally:
            await anyio.to_thread.run_sync(engine.close)

    mcp = MCPServer(
        "mcp-server-image-composer",
        title="OS Image Composer templates",
        instructions=INSTRUCTIONS,
        version=VERSION,
        lifespan=lifespan,
        log_level=settings.server.log_level,
    )
    from resources import templates as template_resources
    from tools import cache_stats, search, validate, verify_packages

    for module in (search, validate, verify_packages, cache_stats):
        module.register(mcp, engine)
    template_resources.register(mcp, engine)
    mcp.engine = engine  # type: ignore[attr-defined]  # handy for tests and the CLI
    return mcp

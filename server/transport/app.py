"""Assembly: build the MCPServer, register tools and resources around one Engine."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer

from ..core.config import AISettings
from ..core.paths import package_version
from ..engine import Engine, build_engine

log = logging.getLogger(__name__)

VERSION = package_version()

INSTRUCTIONS = """\
Tools for OS Image Composer image templates (YAML files that describe an OS image: target OS/distribution/arch,
disk layout, packages, kernel, bootloader).
- search_templates: find existing working templates that match a need ("minimal edge image for ubuntu",
  "image with nginx and docker-ce", "cloud elxr raw", "without docker"). Read a result's full YAML through its
  template:// resource URI. Use it first when the user wants to see or start from an example.
- generate_template: create a new template from a plain-words description; the result is grounded on real
  templates, validated, self-corrected and package-verified, and carries a conversation_id.
- refine_template: change that template in conversation ("add docker and monitoring packages", "change the
  disk size to 8GiB and add a separate /data partition"), ask about it ("what packages are included?"), or
  "undo" / "revert to revision 2". Everything not mentioned is preserved; the result has a diff.
- validate_template: check a template (YAML text or an indexed name) against the schema and semantic rules;
  every issue has a line, column and a hint. Use it on any template before presenting it as correct.
- verify_packages: check that package names exist in the target distribution's real repositories; missing
  ones get suggestions. "verified: false" means a repository could not be read, not that packages are missing.
- cache_stats: index size, embedding-cache hit rate, query latency; use it when diagnosing the server.
Resources: template://{name} (YAML of one template), templates://index (all templates), schema://template
(the JSON Schema of a template). Prompts: create-image-template, review-template.
"""


@contextmanager
def _sdk_logging_skipped() -> Iterator[None]:
    """MCPServer() calls the SDK's ``configure_logging``, a ``logging.basicConfig`` that does nothing once the
    root logger has handlers (the CLI's, server/core/logs.py) but imports rich first: ~60-75 ms of every start
    (create_app 0.15 -> 0.085 s, measured). Skipped only then, so the SDK's own set-up still runs for an
    in-process caller that configured no logging."""
    from mcp.server.mcpserver import server as sdk_server

    original = getattr(sdk_server, "configure_logging", None)
    if original is None or not logging.getLogger().handlers:
        yield
        return
    sdk_server.configure_logging = lambda *_args, **_kwargs: None  # type: ignore[assignment]
    try:
        yield
    finally:
        sdk_server.configure_logging = original


def create_app(settings: AISettings, engine: Engine | None = None) -> MCPServer:
    # Whoever builds the engine closes it. Over SSE (and for in-process clients) the lifespan runs once per
    # connection, so a caller that passes its own engine (server/transport/http.py, tests) keeps it open across them.
    owns_engine = engine is None
    engine = engine or build_engine(settings)

    @asynccontextmanager
    async def lifespan(_server: MCPServer) -> AsyncIterator[dict[str, Any]]:
        engine.start()  # loads in a background thread; the handshake does not wait
        try:
            yield {"engine": engine}
        finally:
            if owns_engine:
                await anyio.to_thread.run_sync(engine.close)

    with _sdk_logging_skipped():
        mcp = MCPServer(
            "mcp-server-image-composer",
            title="OS Image Composer templates",
            instructions=INSTRUCTIONS,
            version=VERSION,
            lifespan=lifespan,
            log_level=settings.server.log_level,
        )
    from ...resources import templates as template_resources
    from ...tools import cache_stats, generate, refine, search, validate, verify_packages

    for module in (search, validate, verify_packages, cache_stats):
        module.register(mcp, engine)
    generate.register(mcp, engine)
    refine.register(mcp, engine)
    template_resources.register(mcp, engine)
    # -- prompts and argument aliases (resources/prompts.py, tools/_common.py) --
    from ...resources import prompts
    from ...tools._common import inline_output_schemas, install_argument_aliases

    prompts.register(mcp, engine)
    install_argument_aliases(mcp)
    inline_output_schemas(mcp)
    mcp.engine = engine  # type: ignore[attr-defined]  # handy for tests and the CLI
    return mcp

"""Shared plumbing for tool adapters: run engine calls off the event loop, map errors, build results."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from server.engine import Engine

log = logging.getLogger(__name__)
T = TypeVar("T")

# Domain errors whose message is written for the client: shown as is.
CLIENT_ERRORS: tuple[type[BaseException], ...] = (ValueError, KeyError, LookupError, TimeoutError, RuntimeError)


def result(model: BaseModel, text: str) -> CallToolResult:
    """Structured content plus a text copy that is useful on its own (some clients ignore structure)."""
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=model.model_dump(mode="json"))


async def call_engine(engine: Engine, tool: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run blocking engine work in a worker thread; turn domain errors into ToolErrors the model can act on."""
    started = time.perf_counter()
    try:
        return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))
    except ToolError:
        raise
    except CLIENT_ERRORS as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        log.info("%s refused: %s", tool, message)
        raise ToolError(str(message)) from exc
    finally:
        engine.tool_latency.add(tool, (time.perf_counter() - started) * 1000)

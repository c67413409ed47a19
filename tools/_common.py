"""Shared plumbing for tool adapters: run engine calls off the event loop, map errors, build results."""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from ..server.core.logs import redact
from ..server.core.yamlsafe import MAX_BYTES as YAML_MAX_BYTES
from ..server.engine import Engine

log = logging.getLogger(__name__)
T = TypeVar("T")

# Length limits of tool arguments, in characters: generous for real use, small enough that one argument cannot
# balloon memory or a response (a 20 MB package name used to be accepted and echoed four times). Validation
# errors name the argument and the limit.
MAX_NAME_CHARS = 256  # package, template, file and conversation names, filter values
MAX_TEXT_CHARS = 64 * 1024  # requests, instructions, queries (search itself keeps ai.search.max_query_chars)
MAX_YAML_CHARS = 2 * YAML_MAX_BYTES  # just over 1 MiB still gets the YAML size error and its advice
MAX_LIST_ITEMS = 5000  # package lists

# Domain errors whose message is written for the client: shown as is.
CLIENT_ERRORS: tuple[type[Exception], ...] = (ValueError, KeyError, LookupError, TimeoutError, RuntimeError)


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
        raise ToolError(redact(str(message))) from exc
    finally:
        engine.tool_latency.add(tool, (time.perf_counter() - started) * 1000)


# ---- argument aliases --------------------------------------------------------------------------
# Models invent argument names ("question" for "query", "topK" for "top_k"). A rename is applied only
# when the tool really has the canonical parameter, does not itself have a parameter with the alias's
# name, and the canonical one was not given; anything else is left for the normal validation to report.
# camelCase spellings of snake_case parameters (topK, imageType, conversationId) are accepted for every tool.
_TARGET = {"dist": ("distribution", "distro"), "arch": ("architecture",)}
ARGUMENT_ALIASES: dict[str, dict[str, tuple[str, ...]]] = {
    "search_templates": {
        "query": ("question", "prompt", "q", "text", "search", "search_query", "request", "description"),
        "top_k": ("limit", "k", "n", "max_results", "num_results", "count"),
        **_TARGET,
    },
    "generate_template": {
        "request": ("prompt", "description", "query", "question", "requirements", "text", "instruction"),
        "conversation_id": ("conversation", "session_id", "session"),
        **_TARGET,
    },
    "refine_template": {
        "instruction": ("prompt", "request", "message", "change", "changes", "feedback", "query", "text"),
        "conversation_id": ("conversation", "session_id", "session", "id"),
    },
    "validate_template": {
        "yaml": ("yaml_text", "template", "template_yaml", "content", "text", "yaml_content"),
        "name": ("template_name", "file"),
    },
    "verify_packages": {
        "packages": ("package_names", "names", "package", "package_list"),
        "yaml": ("yaml_text", "template", "template_yaml", "content"),
        "name": ("template_name",),
        **_TARGET,
    },
}

_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def _snake(name: str) -> str:
    return _CAMEL.sub(r"_\1", name).lower()


def rewrite_arguments(tool: str, arguments: dict[str, Any], params: set[str]) -> dict[str, Any]:
    """Arguments with known aliases renamed to the tool's own parameter names (see ARGUMENT_ALIASES)."""
    out = dict(arguments)
    for key in list(out):
        snake = _snake(key)
        if key not in params and snake != key and snake in params and snake not in out:
            out[snake] = out.pop(key)
    for canonical, aliases in ARGUMENT_ALIASES.get(tool, {}).items():
        if canonical not in params or canonical in out:
            continue
        for alias in aliases:
            if alias in out and alias not in params:
                out[canonical] = out.pop(alias)
                log.debug("tool %s: argument '%s' taken as '%s'", tool, alias, canonical)
                break
    return out


def install_argument_aliases(mcp: MCPServer) -> None:
    """Rewrite tools/call arguments before validation (MCPServer middleware runs ahead of it)."""
    known: dict[str, set[str]] = {}

    async def parameters(tool: str) -> set[str] | None:
        if tool not in known:
            for t in await mcp.list_tools():
                known[t.name] = set((t.input_schema or {}).get("properties", {}))
        return known.get(tool)

    async def argument_aliases(ctx: Any, call_next: Any) -> Any:
        params = ctx.params
        if ctx.method == "tools/call" and isinstance(params, Mapping):
            tool, arguments = params.get("name"), params.get("arguments")
            if isinstance(tool, str) and isinstance(arguments, Mapping) and arguments:
                names = await parameters(tool)
                if names is not None:
                    fixed = rewrite_arguments(tool, dict(arguments), names)
                    if fixed != arguments:
                        ctx = dataclasses.replace(ctx, params={**params, "arguments": fixed})
        return await call_next(ctx)

    mcp.middleware.append(argument_aliases)


_ANNOTATIONS = frozenset({"title", "description", "default", "examples"})  # keywords that never reject a value


def inline_definitions(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with each ``{"$ref": "#/$defs/X"}`` replaced by X itself and ``$defs`` dropped; a recursive
    definition keeps its reference (and ``$defs`` stays for it).

    Why: MCP clients check every result against the tool's output schema, and the Python SDK's jsonschema check
    resolves a ``$ref`` through its registry at each object it visits. A search result's five hits made that
    ~0.3-0.5 ms of each call's ~1.4 ms check (measured on this VM); some clients do not resolve ``$ref`` at all.
    """
    defs = schema.get("$defs")
    if not isinstance(defs, dict):
        return schema
    kept: set[str] = set()

    def walk(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                name = ref.removeprefix("#/$defs/")
                beside = {key: value for key, value in node.items() if key != "$ref"}
                if name in seen or name not in defs or not set(beside) <= _ANNOTATIONS:
                    kept.add(name)  # the reference stays, so its definition must
                    return {key: walk(value, seen) for key, value in node.items()}
                return {**walk(defs[name], (*seen, name)), **beside}  # a field's own description wins
            return {key: walk(value, seen) for key, value in node.items() if key != "$defs"}
        if isinstance(node, list):
            return [walk(item, seen) for item in node]
        return node

    out: dict[str, Any] = walk(schema, ())
    if kept:
        out["$defs"] = {name: defs[name] for name in sorted(kept) if name in defs}
    return out


def inline_output_schemas(mcp: MCPServer) -> None:
    """Every registered tool's output schema without ``$ref`` (see :func:`inline_definitions`). The SDK reads
    ``fn_metadata.output_schema`` live (its docstring says so); it has no public setter for it."""
    for tool in mcp._tool_manager.list_tools():  # noqa: SLF001
        if tool.fn_metadata.output_schema is not None:
            tool.fn_metadata.output_schema = inline_definitions(tool.fn_metadata.output_schema)


async def agent_call(engine: Engine, tool: str, call: Awaitable[T]) -> T:
    """Await an agent coroutine with the same error mapping as :func:`call_engine`."""
    from ..server.agent.conversations import ConversationNotFound
    from ..server.llm.chat import LLMError

    refused: tuple[type[Exception], ...] = (LLMError, *CLIENT_ERRORS)
    started = time.perf_counter()
    try:
        return await call
    except ToolError:
        raise
    except ConversationNotFound as exc:
        raise ToolError(redact(str(exc))) from exc
    except refused as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        log.info("%s refused: %s", tool, message)
        raise ToolError(redact(str(message))) from exc
    finally:
        engine.tool_latency.add(tool, (time.perf_counter() - started) * 1000)

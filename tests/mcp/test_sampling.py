"""Sampling (the MCP client's own LLM) through a real in-process ``mcp.Client``, in both protocol eras.

2026-07-28 connections have no back-channel: the bridge answers through input-required rounds and
replays earlier answers; legacy (2025-11-25) connections send ``sampling/createMessage`` mid-call.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from image_composer_mcp.server.llm.chat import ChatMessage, LLMError, SamplingDeferred, strict_json_schema
from image_composer_mcp.tools._agent_common import sampling_provider
from mcp import Client
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, CreateMessageRequestParams, CreateMessageResult, TextContent
from pydantic import BaseModel

pytestmark = pytest.mark.anyio


class Spec(BaseModel):
    os: str
    arch: str | None = None
    packages: list[str] = []


SCHEMA = strict_json_schema(Spec)


def _server() -> MCPServer:
    mcp = MCPServer("sampling-test", log_level="WARNING")

    @mcp.tool()
    async def plan(request: str, ctx: Context[Any, Any]) -> dict[str, Any]:
        """Ask the client's LLM for a spec (complete_json) and for a free-text note (chat)."""
        provider = sampling_provider(ctx, timeout=10)
        ok, reason = await provider.available()
        if not ok:
            return {"available": False, "reason": reason, "protocol": ctx.protocol_version}
        try:
            spec = await provider.complete_json([ChatMessage("user", request)], SCHEMA, name="spec")
            note = (await provider.chat([ChatMessage("system", "Be brief."), ChatMessage("user", "a note")])).text
        except SamplingDeferred as pending:
            return pending.payload  # type: ignore[no-any-return]
        except LLMError as exc:
            return {"available": True, "error": str(exc), "protocol": ctx.protocol_version}
        return {"available": True, "spec": spec, "note": note, "protocol": ctx.protocol_version}

    return mcp


def _scripted(answers: list[str], asked: list[CreateMessageRequestParams]):
    async def sampling(_ctx: Any, params: CreateMessageRequestParams) -> CreateMessageResult:
        asked.append(params)
        return CreateMessageResult(role="assistant", model="client-llm",
                                   content=TextContent(type="text", text=answers.pop(0)))

    return sampling


def _result(r: CallToolResult) -> dict[str, Any]:
    assert not r.is_error, r.content
    return r.structured_content or json.loads(r.content[0].text)  # type: ignore[union-attr]


@pytest.mark.parametrize(("mode", "protocol"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
async def test_complete_json_and_chat_over_sampling_in_both_eras(mode: str, protocol: str) -> None:
    asked: list[CreateMessageRequestParams] = []
    answers = ['{"os": "ubuntu", "arch": null, "packages": ["nginx"]}', "short note"]
    async with Client(_server(), mode=mode, sampling_callback=_scripted(answers, asked)) as c:
        data = _result(await c.call_tool("plan", {"request": "ubuntu with nginx"}))
    assert data == {"available": True, "spec": {"os": "ubuntu", "arch": None, "packages": ["nginx"]},
                    "note": "short note", "protocol": protocol}
    # Each question reached the client's LLM exactly once, even though 2026-07-28 replays the call.
    assert len(asked) == 2
    assert json.dumps(SCHEMA, separators=(",", ":")) in (asked[0].system_prompt or "")
    assert asked[0].messages[0].content.text == "ubuntu with nginx"  # type: ignore[union-attr]
    assert asked[1].system_prompt == "Be brief."


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_answer_that_breaks_the_schema_is_retried_once_with_the_problem(mode: str) -> None:
    asked: list[CreateMessageRequestParams] = []
    answers = ['{"os": 24}', '{"os": "ubuntu", "arch": "x86_64", "packages": null}', "note"]
    async with Client(_server(), mode=mode, sampling_callback=_scripted(answers, asked)) as c:
        data = _result(await c.call_tool("plan", {"request": "ubuntu"}))
    assert data["spec"] == {"os": "ubuntu", "arch": "x86_64", "packages": None}
    assert len(asked) == 3
    retry = asked[1].messages
    assert retry[-2].content.text == '{"os": 24}'  # type: ignore[union-attr]
    assert "24 is not of type 'string'" in retry[-1].content.text  # type: ignore[union-attr]


async def test_a_client_that_answers_without_text_gets_a_clear_error_on_2026() -> None:
    from mcp.types import ImageContent

    async def sampling(_ctx: Any, params: CreateMessageRequestParams) -> CreateMessageResult:
        return CreateMessageResult(role="assistant", model="m",
                                   content=ImageContent(type="image", data="AAAA", mime_type="image/png"))

    async with Client(_server(), sampling_callback=sampling) as c:
        data = _result(await c.call_tool("plan", {"request": "ubuntu"}))
    assert data["protocol"] == "2026-07-28"
    assert "sampling" in data["error"] and "not text" in data["error"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_client_without_the_sampling_capability_is_told_why(mode: str) -> None:
    async with Client(_server(), mode=mode) as c:
        data = _result(await c.call_tool("plan", {"request": "ubuntu"}))
    assert data["available"] is False
    assert "did not declare the sampling capability" in data["reason"]

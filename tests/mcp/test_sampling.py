"""Sampling (the MCP client's own LLM) through a real in-process ``mcp.Client`` and the real app, in both eras.

Plan mode asks the client's LLM one structured question per call, through the SDK's ``Resolve``/``Sample``
flow: on 2026-07-28 (``mode="auto"``) as input-required rounds before the tool body runs, on 2025-11-25
(``mode="legacy"``) as ``sampling/createMessage`` from the resolver. Either way the client sees exactly the
questions the agent asks: the plan, and at most one retry when the answer breaks the schema. Questions, undo and
edits the offline composer fully understands never reach the client.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from image_composer_mcp.server.core.config import load_settings
from image_composer_mcp.server.core.yamlsafe import load_mapping
from image_composer_mcp.server.engine import build_engine
from image_composer_mcp.server.transport.app import create_app
from mcp import Client
from mcp.types import CreateMessageRequestParams, CreateMessageResult, ImageContent, TextContent

pytestmark = pytest.mark.anyio

MODES = [("auto", "2026-07-28"), ("legacy", "2025-11-25")]
EMPTY_PLAN = {"os": None, "dist": None, "arch": None, "image_type": None, "add_packages": [],
              "remove_packages": [], "disk_size": None, "hostname": None, "kernel_cmdline_append": [],
              "minimal": False}


def _plan(**facts: Any) -> str:
    return json.dumps({**EMPTY_PLAN, **facts})


def _app(cache: Any, provider: str = "auto"):
    # No ollama (a dead address) and no openai: "auto" lands on the client's LLM when it offers sampling.
    env = {"OIC_AI_CACHE_DIR": str(cache), "OLLAMA_HOST": "http://127.0.0.1:9"}
    settings = load_settings(env=env, overrides={"packages.offline": True, "agent.llm_mode": "plan",
                                                 "provider": provider})
    return create_app(settings, engine=build_engine(settings))


def _scripted(answers: list[Any], asked: list[CreateMessageRequestParams]):
    async def sampling(_ctx: Any, params: CreateMessageRequestParams) -> CreateMessageResult:
        asked.append(params)
        answer = answers.pop(0)
        content = answer if isinstance(answer, ImageContent) else TextContent(type="text", text=answer)
        return CreateMessageResult(role="assistant", model="client-llm", content=content)

    return sampling


async def _call(c: Client, tool: str, **args: Any) -> dict[str, Any]:
    r = await c.call_tool(tool, args)
    assert not r.is_error, r.content[0].text  # type: ignore[union-attr]
    assert r.structured_content is not None
    return r.structured_content


def _text(params: CreateMessageRequestParams, index: int) -> str:
    return params.messages[index].content.text  # type: ignore[union-attr]


def _packages(data: dict[str, Any]) -> list[str]:
    return load_mapping(data["yaml"]).data["systemConfig"]["packages"]


@pytest.mark.parametrize(("mode", "protocol"), MODES)
async def test_generate_asks_the_clients_llm_once_for_the_plan_and_merges_it(library_cache, mode, protocol):
    asked: list[CreateMessageRequestParams] = []
    request = "ubuntu 24.04 x86_64 raw image, hostname edge-01"
    async with Client(_app(library_cache), mode=mode,
                      sampling_callback=_scripted([_plan(add_packages=["nginx"])], asked)) as c:
        assert c.protocol_version == protocol
        data = await _call(c, "generate_template", request=request)
    assert len(asked) == 1  # asked once, even though 2026-07-28 runs the call in rounds
    assert f"Request: {request}" in _text(asked[0], 0)
    assert '"add_packages"' in (asked[0].system_prompt or "") and "request_spec" in (asked[0].system_prompt or "")
    assert asked[0].temperature == 0.0
    assert data["provider"] == "sampling+composer" and data["valid"]
    assert "nginx" in _packages(data)  # the offline parse could not know it
    assert data["plan"]["add_packages"] == ["nginx"]
    assert any("sampling's plan" in n and "nginx" in n for n in data["notes"])


@pytest.mark.parametrize(("mode", "protocol"), MODES)
async def test_an_answer_that_breaks_the_schema_is_retried_once_with_the_problem(library_cache, mode, protocol):
    asked: list[CreateMessageRequestParams] = []
    answers = ['{"os": 24}', _plan(add_packages=["nginx"])]
    async with Client(_app(library_cache), mode=mode, sampling_callback=_scripted(answers, asked)) as c:
        data = await _call(c, "generate_template", request="ubuntu 24.04 x86_64 raw image")
    assert len(asked) == 2
    retry = asked[1]
    assert _text(retry, -2) == '{"os": 24}'
    assert _text(retry, -1).startswith("That answer was rejected:") and "does not follow the schema" in _text(retry, -1)
    assert retry.messages[:-2] == asked[0].messages and retry.system_prompt == asked[0].system_prompt
    assert data["provider"] == "sampling+composer" and "nginx" in _packages(data)


@pytest.mark.parametrize(("mode", "protocol"), MODES)
async def test_no_json_twice_leaves_the_offline_result_and_says_so(library_cache, mode, protocol):
    asked: list[CreateMessageRequestParams] = []
    answers = ["Sure! An Ubuntu image.", "I cannot write JSON."]
    async with Client(_app(library_cache), mode=mode, sampling_callback=_scripted(answers, asked)) as c:
        data = await _call(c, "generate_template", request="ubuntu 24.04 x86_64 raw image with docker")
    assert len(asked) == 2
    assert data["provider"] == "sampling+offline" and data["valid"]
    assert "docker" in data["yaml"]
    assert any(n.startswith("sampling could not plan") for n in data["notes"])


async def test_an_answer_without_text_leaves_the_offline_result_and_says_so(library_cache):
    asked: list[CreateMessageRequestParams] = []
    image = ImageContent(type="image", data="AAAA", mime_type="image/png")
    async with Client(_app(library_cache), sampling_callback=_scripted([image], asked)) as c:
        data = await _call(c, "generate_template", request="ubuntu 24.04 x86_64 raw image")
    assert len(asked) == 1  # no retry: there was no text to show the model
    assert data["provider"] == "sampling+offline"
    assert any("sampling could not plan" in n and "not text" in n for n in data["notes"])


@pytest.mark.parametrize(("mode", "protocol"), MODES)
async def test_refine_asks_only_for_edits_the_offline_composer_did_not_understand(library_cache, mode, protocol):
    asked: list[CreateMessageRequestParams] = []
    answers = [_plan(), _plan(add_packages=["nginx"])]
    async with Client(_app(library_cache), mode=mode, sampling_callback=_scripted(answers, asked)) as c:
        made = await _call(c, "generate_template", request="ubuntu 24.04 x86_64 raw image")
        conv = made["conversation_id"]
        assert len(asked) == 1
        understood = await _call(c, "refine_template", conversation_id=conv, instruction="add docker")
        assert len(asked) == 1 and understood["provider"] == "offline" and understood["revision"] == 2
        question = await _call(c, "refine_template", conversation_id=conv, instruction="what packages are included?")
        assert len(asked) == 1 and question["mode"] == "question"
        instruction = "make it a proper web box"
        edited = await _call(c, "refine_template", conversation_id=conv, instruction=instruction)
        assert len(asked) == 2
        assert f"Request: {instruction}" in _text(asked[1], 0) and "edit_plan" in (asked[1].system_prompt or "")
        assert edited["provider"] == "sampling+composer" and edited["revision"] == 3
        assert "nginx" in _packages(edited)
        undone = await _call(c, "refine_template", conversation_id=conv, instruction="undo")
    assert len(asked) == 2  # undo never reaches an LLM
    assert undone["mode"] == "revert" and undone["yaml"] == understood["yaml"]


@pytest.mark.parametrize(("mode", "protocol"), MODES)
async def test_a_client_without_sampling_gets_the_offline_result_not_an_error(library_cache, mode, protocol):
    async with Client(_app(library_cache), mode=mode) as c:
        assert c.protocol_version == protocol
        data = await _call(c, "generate_template", request="ubuntu 24.04 x86_64 raw image with docker")
        assert data["provider"] == "offline" and data["valid"]
        assert any("did not declare the sampling capability" in s for s in data["skipped_providers"])
        edited = await _call(c, "refine_template", conversation_id=data["conversation_id"],
                             instruction="make it a proper web box")
        assert edited["provider"] == "offline"
    async with Client(_app(library_cache, provider="sampling"), mode=mode) as c:
        r = await c.call_tool("generate_template", {"request": "ubuntu 24.04 x86_64 raw image"})
    assert r.is_error and "did not declare the sampling capability" in r.content[0].text  # type: ignore[union-attr]


async def test_a_call_that_cannot_ask_the_client_edits_the_template_once(library_cache, monkeypatch):
    from image_composer_mcp.server.agent.refine import Refiner

    edits: list[str] = []
    offline_edit = Refiner._offline_edit

    async def counted(self: Refiner, instruction: str, *args: Any) -> Any:
        edits.append(instruction)
        return await offline_edit(self, instruction, *args)

    monkeypatch.setattr(Refiner, "_offline_edit", counted)
    async with Client(_app(library_cache)) as c:
        data = await _call(c, "generate_template", request="ubuntu 24.04 x86_64 raw image with docker")
        await _call(c, "refine_template", conversation_id=data["conversation_id"], instruction="add vim")
    assert edits == ["add vim"]  # by the call only: the plan resolver decides without editing

"""Oversize tool arguments are refused at the door, naming the argument and the limit, without echoing them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from image_composer_mcp.server.core.config import load_settings
from image_composer_mcp.server.engine import build_engine
from image_composer_mcp.server.transport.app import create_app
from image_composer_mcp.tools._common import MAX_LIST_ITEMS, MAX_NAME_CHARS, MAX_TEXT_CHARS, MAX_YAML_CHARS
from mcp import Client

pytestmark = pytest.mark.anyio

HUGE = 2 * 1024 * 1024  # characters: over every limit


@pytest.fixture
def app(library_cache):
    settings = load_settings(env={"OIC_AI_CACHE_DIR": str(library_cache), "OLLAMA_HOST": "http://127.0.0.1:9"},
                             overrides={"packages.offline": True, "provider": "offline"})
    return create_app(settings, engine=build_engine(settings))


CASES: list[tuple[str, dict[str, Any], int]] = [
    ("verify_packages", {"packages": ["p" * HUGE], "dist": "ubuntu24", "arch": "x86_64"}, MAX_NAME_CHARS),
    ("verify_packages", {"packages": ["p"] * (MAX_LIST_ITEMS + 1)}, MAX_LIST_ITEMS),
    ("verify_packages", {"packages": ["nginx"], "dist": "d" * HUGE}, MAX_NAME_CHARS),
    ("search_templates", {"query": "q" * HUGE}, MAX_TEXT_CHARS),
    ("search_templates", {"query": "nginx", "os": "o" * 1000}, MAX_NAME_CHARS),
    ("validate_template", {"name": "n" * 1000}, MAX_NAME_CHARS),
    ("validate_template", {"yaml": "a" * (MAX_YAML_CHARS + 1)}, MAX_YAML_CHARS),
    ("generate_template", {"request": "r" * HUGE}, MAX_TEXT_CHARS),
    ("generate_template", {"request": "nginx", "save_as": "s" * 1000}, MAX_NAME_CHARS),
    ("refine_template", {"conversation_id": "c" * 1000, "instruction": "add vim"}, MAX_NAME_CHARS),
    ("refine_template", {"conversation_id": "c", "instruction": "i" * HUGE}, MAX_TEXT_CHARS),
]


@pytest.mark.parametrize(("tool", "arguments", "limit"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
async def test_oversize_arguments_are_refused(app, tool: str, arguments: dict[str, Any], limit: int) -> None:
    async with Client(app) as client:
        r = await client.call_tool(tool, arguments)
    assert r.is_error
    text = json.dumps([getattr(b, "text", "") for b in r.content])
    assert f"at most {limit} " in text or f"at most {limit:,} " in text, text[:500]
    assert len(text) < 20_000  # the oversize value is not echoed back


async def test_names_at_the_limit_are_accepted(app) -> None:
    async with Client(app) as client:
        r = await client.call_tool("verify_packages", {"packages": ["x" * MAX_NAME_CHARS], "dist": "ubuntu24",
                                                       "arch": "x86_64"})
    assert not r.is_error, r.content[0].text[:500]

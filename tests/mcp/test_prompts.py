"""MCP prompts and argument aliases, through an in-process mcp.Client."""

from __future__ import annotations

import pytest
from image_composer_mcp.server.core.config import load_settings
from image_composer_mcp.server.transport.app import create_app
from mcp import Client

from tests.conftest import write_template

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory):
    from image_composer_mcp.server.engine import build_engine

    templates = tmp_path_factory.mktemp("prompt-templates")
    write_template(templates, "web-nginx", description="web server with nginx", packages="nginx")
    write_template(templates, "robot-ros", description="robotics with ROS 2", packages="ros-humble-desktop")
    settings = load_settings(env={"OIC_AI_TEMPLATES_DIR": str(templates), "OIC_AI_PROVIDER": "offline",
                                  "OIC_AI_CACHE_DIR": str(tmp_path_factory.mktemp("prompt-cache"))})
    eng = build_engine(settings)
    eng.ready()
    yield eng
    eng.close()


@pytest.fixture
async def client(engine):
    async with Client(create_app(engine.settings, engine=engine)) as c:
        yield c


async def test_prompts_are_listed_with_arguments(client):
    prompts = {p.name: p for p in (await client.list_prompts()).prompts}
    create, review = prompts["create-image-template"], prompts["review-template"]
    assert create.title == "Create an image template" and review.title == "Review my template"
    assert {(a.name, a.required) for a in create.arguments} == {("request", True), ("target", False)}
    assert {(a.name, a.required) for a in review.arguments} == {("template", True), ("focus", False)}
    assert all(a.description for a in create.arguments + review.arguments)


async def test_create_prompt_walks_through_the_registered_tools(client):
    r = await client.get_prompt("create-image-template", {"request": "edge kiosk with chromium",
                                                          "target": "ubuntu24 x86_64 raw"})
    text = r.messages[0].content.text
    assert r.messages[0].role == "user"
    assert "edge kiosk with chromium" in text and "ubuntu24 x86_64 raw" in text
    assert text.index("search_templates") < text.index("validate_template") < text.index("verify_packages")
    tools = {t.name for t in (await client.list_tools()).tools}
    # only tools this build really has are named
    for name in ("generate_template", "refine_template"):
        assert (name in text) == (name in tools)


async def test_review_prompt_asks_for_validation_and_package_checks(client):
    yaml_text = "image:\n  name: x\n  version: '1'\n# ```nested fence```\n"
    r = await client.get_prompt("review-template", {"template": yaml_text, "focus": "security"})
    text = r.messages[0].content.text
    assert "validate_template" in text and "verify_packages" in text and "security" in text
    assert "````yaml\n" + yaml_text.rstrip() + "\n````" in text  # fenced so the pasted text stays intact
    r = await client.get_prompt("review-template", {"template": "web-nginx"})
    text = r.messages[0].content.text
    assert "template://web-nginx" in text and 'name="web-nginx"' in text


async def test_aliases_reach_the_tools(client):
    r = await client.call_tool("search_templates", {"question": "ROS 2 robotics", "topK": 1})
    assert not r.is_error, r.content
    assert r.structured_content["query"] == "ROS 2 robotics" and len(r.structured_content["results"]) == 1
    r = await client.call_tool("search_templates", {"prompt": "nginx web server", "limit": 1})
    assert r.structured_content["results"][0]["name"] == "web-nginx"
    r = await client.call_tool("validate_template", {"yaml_text": "image: [unclosed\n"})
    assert not r.is_error and r.structured_content["valid"] is False
    r = await client.call_tool("validate_template", {"template_name": "web-nginx"})
    assert r.structured_content["valid"] is True and r.structured_content["template"] == "web-nginx"


async def test_aliases_for_generate_and_refine(client):
    r = await client.call_tool("generate_template", {"prompt": "web server with nginx", "distribution": "ubuntu24"})
    assert not r.is_error, r.content
    conversation = r.structured_content["conversation_id"]
    r = await client.call_tool("refine_template", {"conversationId": conversation,
                                                   "message": "what packages are included?"})
    assert not r.is_error, r.content

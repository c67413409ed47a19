"""The MCP surface through a real mcp.Client, in-process."""

from __future__ import annotations

import json

import pytest
from image_composer_mcp.server.core.config import load_settings
from image_composer_mcp.server.transport.app import create_app
from mcp import Client, MCPError
from mcp.types import ResourceTemplateReference

from tests.conftest import REFERENCE_TEMPLATES, needs_reference, write_template

pytestmark = pytest.mark.anyio


@pytest.fixture
async def client(reference_engine):
    needs_reference()
    app = create_app(reference_engine.settings, engine=reference_engine)
    async with Client(app) as c:
        yield c


async def test_tools_are_listed_with_titles_annotations_and_schemas(client):
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert {"search_templates", "cache_stats"} <= set(tools)
    search = tools["search_templates"]
    assert search.title and search.annotations.read_only_hint and search.annotations.idempotent_hint
    assert search.output_schema["properties"]["results"]
    assert set(search.input_schema["properties"]) >= {"query", "top_k", "os", "dist", "arch", "image_type"}
    assert tools["cache_stats"].annotations.read_only_hint
    # Output schemas are published without $ref: clients check every result against them (tools/_common.py)
    for tool in tools.values():
        assert tool.output_schema and "$ref" not in json.dumps(tool.output_schema), tool.name
    hit = search.output_schema["properties"]["results"]["items"]
    assert hit["properties"]["scores"]["required"] == ["semantic", "keyword", "package"]


async def test_search_returns_structured_and_readable_results(client):
    r = await client.call_tool("search_templates", {"query": "cloud elxr raw image", "top_k": 3})
    assert not r.is_error
    data = r.structured_content
    assert data["query_type"] in ("semantic", "keyword-heavy")
    top = data["results"][0]
    assert top["name"] == "elxr-cloud-amd64" and top["file"] == "elxr-cloud-amd64.yml"
    assert top["uri"] == "template://elxr-cloud-amd64"
    assert set(top["scores"]) == {"semantic", "keyword", "package"}
    assert {"os", "dist", "arch", "image_type", "penalties", "matched_packages"} <= set(top)
    text = r.content[0].text
    assert "elxr-cloud-amd64" in text and "score" in text and "template://" in text


async def test_search_with_no_match_says_so(client):
    r = await client.call_tool("search_templates", {"query": "banana bread with walnuts"})
    assert not r.is_error
    assert r.structured_content["results"] == []
    assert "no relevant templates found" in r.content[0].text


async def test_bad_arguments_are_tool_errors_with_advice(client):
    r = await client.call_tool("search_templates", {"query": "edge", "top_k": 999})
    assert r.is_error and "top_k is 999" in r.content[0].text
    r = await client.call_tool("search_templates", {"query": ""})
    assert r.is_error and "query is empty" in r.content[0].text
    r = await client.call_tool("search_templates", {"query": "edge", "arch": "sparc"})
    assert r.is_error and "unknown arch filter" in r.content[0].text
    r = await client.call_tool("search_templates", {"top_k": 2})
    assert r.is_error  # missing query: pydantic validation error, server keeps serving
    ok = await client.call_tool("search_templates", {"query": "edge"})
    assert not ok.is_error


async def test_cache_stats(client):
    await client.call_tool("search_templates", {"query": "robotics"})
    r = await client.call_tool("cache_stats", {})
    s = r.structured_content
    assert s["templates_indexed"] == 48
    assert s["model_id"].startswith("local:") and s["dimensions"] == 384
    assert s["cache_hits"] + s["cache_misses"] >= 48
    assert s["index_size_bytes"] > 0 and s["last_sync"]
    assert any(v["count"] >= 1 for v in s["queries"].values())
    assert "templates indexed" in r.content[0].text
    assert s["index_source"] and f"searching {s['index_source']}" in r.content[0].text


async def test_template_resources_listing_schema_and_completion(client):
    templates = (await client.list_resource_templates()).resource_templates
    assert any(t.uri_template == "template://{name}" for t in templates)
    body = await client.read_resource("template://ubuntu24-x86_64-minimal-raw")
    content = body.contents[0]
    assert content.mime_type == "application/yaml"
    assert content.text == (REFERENCE_TEMPLATES / "ubuntu24-x86_64-minimal-raw.yml").read_text()
    listing = json.loads((await client.read_resource("templates://index")).contents[0].text)
    assert listing["count"] == 48 and {"name", "os", "dist", "uri"} <= set(listing["templates"][0])
    schema = json.loads((await client.read_resource("schema://template")).contents[0].text)
    assert "$defs" in schema
    done = await client.complete(ResourceTemplateReference(type="ref/resource", uri="template://{name}"),
                                 {"name": "name", "value": "emt3-x86_64-emf"})
    assert done.completion.values and all("emf" in v for v in done.completion.values)
    with pytest.raises(MCPError):
        await client.read_resource("template://does-not-exist")


async def test_handshake_does_not_wait_for_the_index(tmp_path):
    """initialize and tools/list answer while the engine still loads in the background."""
    write_template(tmp_path, "only")
    settings = load_settings(env={"OIC_AI_CACHE_DIR": str(tmp_path / "cache"), "OIC_AI_TEMPLATES_DIR": str(tmp_path)})
    app = create_app(settings)
    engine = app.engine
    async with Client(app) as c:
        tools = await c.list_tools()
        assert tools.tools
    assert engine._thread is not None

"""What an installed server does when a piece is missing, over a real in-process mcp.Client: no embedding
model (keyword-only search that says so), an empty library (an error, not "nothing found"), and where
save_as writes by default (the user templates dir, indexed, never the bundled library)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from image_composer_mcp.server.core.config import load_settings
from image_composer_mcp.server.engine import build_engine
from image_composer_mcp.server.transport.app import create_app
from mcp import Client

from tests.conftest import LIBRARY

pytestmark = pytest.mark.anyio


def _app(tmp_path: Path, **env: str):
    settings = load_settings(env={"OIC_AI_CACHE_DIR": str(tmp_path / "cache"), "OIC_AI_PROVIDER": "offline",
                                  "OIC_AI_PACKAGES_OFFLINE": "true", **env})
    return create_app(settings, engine=build_engine(settings))


async def test_without_the_model_search_answers_by_keywords_and_says_so(tmp_path: Path,
                                                                        caplog: pytest.LogCaptureFixture):
    app = _app(tmp_path, OIC_AI_LOCAL_MODEL_DIR=str(tmp_path / "no-model"))
    async with Client(app) as client:
        first = await client.call_tool("search_templates", {"query": "ubuntu edge gateway with docker"})
        second = await client.call_tool("search_templates", {"query": "azure linux iso installer"})
        stats = (await client.call_tool("cache_stats", {})).structured_content
    assert not first.is_error and not second.is_error
    data = first.structured_content
    assert data["results"][0]["name"] == "ubuntu24-x86_64-edge-gateway-docker-raw"
    assert data["weights"]["semantic"] == 0 and all(h["scores"]["semantic"] == 0 for h in data["results"])
    note = data["notices"][0]
    assert "semantic search is off" in note and "OIC_AI_LOCAL_MODEL_DIR" in note and str(tmp_path / "no-model") in note
    assert first.content[0].text.splitlines()[0] == f"Note: {note}"
    assert second.structured_content["results"]
    assert stats["semantic_search"] == "off" and stats["warnings"].count(note) == 1
    assert stats["model_id"] == "none:keyword-only"
    assert sum("semantic search is off" in r.getMessage() for r in caplog.records) == 1  # warned once


async def test_an_empty_library_is_a_clear_tool_error(tmp_path: Path):
    app = _app(tmp_path, OIC_AI_TEMPLATES_DIR=str(tmp_path / "nothing-here"))
    async with Client(app) as client:
        r = await client.call_tool("search_templates", {"query": "ubuntu edge gateway with docker"})
        stats = (await client.call_tool("cache_stats", {})).structured_content
    assert r.is_error
    text = r.content[0].text
    assert "template library is empty" in text and "nothing-here (missing)" in text and "OIC_AI_TEMPLATES_DIR" in text
    assert stats["templates_indexed"] == 0
    assert any("does not exist" in w for w in stats["warnings"])


async def test_save_as_defaults_to_the_user_templates_dir_which_is_indexed(tmp_path: Path):
    before = sorted(p.name for p in LIBRARY.iterdir())
    app = _app(tmp_path)
    async with Client(app) as client:
        gen = await client.call_tool("generate_template", {"request": "minimal ubuntu 24.04 image with nginx",
                                                           "save_as": "my-nginx"})
        assert not gen.is_error, gen.content[0].text
        found = await client.call_tool("search_templates", {"query": "minimal ubuntu 24.04 image with nginx",
                                                            "top_k": 10})
    user_dir = Path(os.environ["XDG_DATA_HOME"]) / "mcp-server-image-composer" / "templates"
    assert gen.structured_content["saved_to"] == str(user_dir / "my-nginx.yml")
    assert (user_dir / "my-nginx.yml").is_file()
    assert sorted(p.name for p in LIBRARY.iterdir()) == before  # the bundled library is untouched
    assert "my-nginx.yml" in {h["file"] for h in found.structured_content["results"]}
    (user_dir / "my-nginx.yml").unlink()



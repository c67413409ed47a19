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


def test_config_file_from_the_working_directory_then_the_user_config_dir(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch):
    user_config = Path(os.environ["XDG_CONFIG_HOME"]) / "mcp-server-image-composer" / "config.yaml"
    user_config.parent.mkdir(parents=True, exist_ok=True)
    user_config.write_text("ai:\n  provider: ollama\n  cache:\n    dir: ~/oic-cache\n")
    try:
        monkeypatch.chdir(tmp_path)
        settings = load_settings(env={})
        assert settings.provider == "ollama"
        assert settings.cache_path == (Path.home() / "oic-cache").resolve()  # ~ expands, not config-relative
        (tmp_path / "config.yaml").write_text("ai:\n  provider: offline\n")
        assert load_settings(env={}).provider == "offline"  # ./config.yaml still wins
    finally:
        user_config.unlink()


def test_server_json_describes_this_package_for_the_registry():
    import json
    import tomllib

    from tests.conftest import REPO

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    server = json.loads((REPO / "server.json").read_text())
    assert server["$schema"].startswith("https://static.modelcontextprotocol.io/schemas/")
    assert server["version"] == project["version"]
    kinds = {p["registryType"]: p for p in server["packages"]}
    assert set(kinds) == {"pypi", "oci"}
    assert kinds["pypi"]["identifier"] == project["name"] and kinds["pypi"]["version"] == project["version"]
    assert kinds["pypi"]["transport"]["type"] == "stdio"
    assert kinds["oci"]["identifier"].endswith(f":{project['version']}")
    assert kinds["oci"]["transport"] == {**kinds["oci"]["transport"], "type": "streamable-http"}
    assert kinds["oci"]["transport"]["url"].endswith(":8765/mcp")
    # PyPI ownership: the README carries the registry name
    assert f"mcp-name: {server['name']}" in (REPO / "README.md").read_text()

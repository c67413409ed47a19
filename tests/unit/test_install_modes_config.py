"""Where an installed server finds its configuration (working directory, then the user config dir), and
the registry description of this package (server.json)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from image_composer_mcp.server.core.config import load_settings


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

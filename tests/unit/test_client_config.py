"""The client configuration examples (mcp.json.example): valid JSON with the documented entries."""

from __future__ import annotations

import json

from tests.conftest import REPO


def test_client_config_example_is_valid_json_with_the_documented_entries():
    example = json.loads((REPO / "mcp.json.example").read_text())
    vscode = next(v for k, v in example.items() if k.startswith(".vscode/mcp.json"))
    assert all(i["password"] for i in vscode["inputs"])
    assert vscode["servers"]["image-composer"]["env"]["OPENAI_API_KEY"] == "${input:openai-api-key}"
    remote = vscode["servers"]["image-composer-remote"]
    assert remote["url"].endswith("/mcp") and remote["headers"]["Authorization"].startswith("Bearer ${input:")
    desktop = [v for k, v in example.items() if k.startswith("claude_desktop_config.json")]
    servers = [s for d in desktop for s in d["mcpServers"].values()]
    commands = [s["command"] for s in servers]
    # after pip/pipx (the installed command), via uvx (runs the package), and from a checkout
    assert any(c.endswith("/.local/bin/mcp-server-image-composer") for c in commands)
    uvx = next(s for s in servers if s["command"] == "uvx")
    assert uvx["args"][0] == "--from" and uvx["args"][-1] == "mcp-server-image-composer"
    assert any(c.endswith("/.venv/bin/mcp-server-image-composer") for c in commands)

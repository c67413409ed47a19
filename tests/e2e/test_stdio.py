"""End to end over a real stdio subprocess: the console script, JSON-RPC only on stdout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import RAW_INITIALIZE, REFERENCE_TEMPLATES, REPO, needs_reference

pytestmark = pytest.mark.anyio


def _env(reference_engine) -> dict[str, str]:
    env = dict(os.environ)
    env.update(OIC_AI_TEMPLATES_DIR=str(REFERENCE_TEMPLATES), OIC_AI_CACHE_DIR=str(reference_engine.cache_dir),
               PYTHONUNBUFFERED="1")
    return env


async def test_search_over_stdio(reference_engine):
    needs_reference()
    params = StdioServerParameters(command=sys.executable, args=["-m", "image_composer_mcp"], env=_env(reference_engine),
                                   cwd=str(REPO))
    async with Client(params) as client:
        tools = await client.list_tools()
        assert "search_templates" in {t.name for t in tools.tools}
        r = await client.call_tool("search_templates", {"query": "ROS 2 robotics with Gazebo", "top_k": 3})
        assert not r.is_error
        assert "robotics" in r.structured_content["results"][0]["name"]
        stats = await client.call_tool("cache_stats", {})
        # the warm cache from the session fixture was reused: nothing re-embedded in the subprocess
        assert stats.structured_content["embedded_this_run"] == 0
        assert stats.structured_content["cache_hits"] == 48


def _rpc(proc: subprocess.Popen, message: dict) -> None:
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()


def test_stdout_carries_only_json_rpc(reference_engine):
    needs_reference()
    proc = subprocess.Popen([sys.executable, "-m", "image_composer_mcp", "--log-level", "DEBUG"], cwd=str(REPO),
                            env=_env(reference_engine), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        _rpc(proc, RAW_INITIALIZE)
        first = json.loads(proc.stdout.readline())
        assert first["id"] == 1 and "serverInfo" in first["result"]
        _rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "search_templates", "arguments": {"query": "minimal without docker"}}})
        _rpc(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                    "params": {"name": "cache_stats", "arguments": {}}})
        seen = set()
        deadline = time.monotonic() + 120
        while seen != {2, 3} and time.monotonic() < deadline:
            line = proc.stdout.readline()
            assert line, "server closed stdout"
            msg = json.loads(line)  # every stdout line must be a JSON-RPC message
            assert msg["jsonrpc"] == "2.0"
            if "id" in msg:
                seen.add(msg["id"])
        assert seen == {2, 3}
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        rest = proc.stdout.read()
    for line in rest.splitlines():
        assert json.loads(line)["jsonrpc"] == "2.0"
    assert "search type=" in proc.stderr.read()  # logs went to stderr


def test_cli_search_json(reference_engine):
    needs_reference()
    out = subprocess.run([sys.executable, "-m", "image_composer_mcp", "search", "debian initrd for PXE", "--json"],
                         cwd=str(REPO), env=_env(reference_engine), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["results"][0]["name"] == "debian13-x86_64-minimal-initrd"


def test_cli_bad_config_fails_with_a_clear_message(tmp_path):
    env = dict(os.environ, OIC_AI_PROVIDER="skynet")
    out = subprocess.run([sys.executable, "-m", "image_composer_mcp", "index"], cwd=str(tmp_path), env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "ai.provider" in out.stderr and "skynet" in out.stderr and out.stdout == ""

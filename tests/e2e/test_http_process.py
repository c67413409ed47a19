"""The HTTP server as a real subprocess (python -m image_composer_mcp): a remote bind without the flag
is refused, SIGTERM during a call finishes it, SIGINT when idle exits cleanly."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import anyio
import httpx
import pytest
from mcp import Client

from tests.conftest import REPO
from tests.mcp import test_http as served
from tests.mcp.test_http import _env, _streamable
from tests.unit.test_http_settings import TOKEN

dirs = served.dirs  # the in-process tests' templates, as a fixture of this module too


# ---- subprocesses: the real CLI ---------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(proc: subprocess.Popen, port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read()
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).json()["index"] == "ready":
                return
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.1)
    raise AssertionError("server did not become healthy")


def _cli_env(dirs, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OIC_AI_")}
    env.update(_env(dirs), PYTHONUNBUFFERED="1", **extra)
    return env


def test_remote_bind_without_flag_exits_2(dirs):
    out = subprocess.run([sys.executable, "-m", "image_composer_mcp", "--transport", "streamable-http", "--host", "0.0.0.0",
                          "--port", str(_free_port())], cwd=str(REPO), env=_cli_env(dirs),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "--allow-remote" in out.stderr and out.stdout == ""


class _SlowRepository(BaseHTTPRequestHandler):
    """A Debian 'Packages' index that takes a while to arrive, so a verify_packages call is in flight."""

    delay = 2.0
    body = b"Package: nginx\nVersion: 1.24.0-2ubuntu7\nArchitecture: amd64\n\n"

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        time.sleep(self.delay)
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def slow_repository() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _SlowRepository)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/dists/noble/main/binary-amd64/Packages"
    httpd.shutdown()


@pytest.mark.anyio
async def test_sigterm_during_a_call_finishes_it_and_exits_cleanly(dirs, slow_repository, tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(f"ai:\n  packages:\n    sources:\n      ubuntu24: ['{slow_repository}']\n")
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "image_composer_mcp", "--config", str(config), "--transport", "streamable-http",
         "--port", str(port)],
        cwd=str(REPO), env=_cli_env(dirs, OIC_AI_AUTH_TOKEN=TOKEN), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        await anyio.to_thread.run_sync(_wait_healthy, proc, port)
        url = f"http://127.0.0.1:{port}"
        async with Client(_streamable(url)) as client:
            await client.list_tools()  # the client checks results against the listed output schemas
            result = {}

            async def call() -> None:
                result["r"] = await client.call_tool("verify_packages", {
                    "packages": ["nginx"], "dist": "ubuntu24", "arch": "x86_64"})

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await anyio.sleep(0.8)  # the call is now waiting on the slow repository
                proc.send_signal(signal.SIGTERM)
        r = result["r"]
        assert not r.is_error, r.content
        assert r.structured_content["found"] == ["nginx"]
        code = await anyio.to_thread.run_sync(lambda: proc.wait(timeout=30))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stdout, stderr = proc.communicate()
    assert code == 0, stderr
    assert "Traceback" not in stderr, stderr
    assert "received SIGTERM" in stderr and "stopped" in stderr
    assert stdout == ""
    assert TOKEN not in stderr


def test_sigint_when_idle_exits_cleanly(dirs, tmp_path):
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "image_composer_mcp", "--transport", "sse", "--port", str(port)],
        cwd=str(REPO), env=_cli_env(dirs), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_healthy(proc, port)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr = proc.stderr.read()
    assert code == 0, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr

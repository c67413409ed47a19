"""Server replicas as real subprocesses, and a round-robin balancer in front of them (tests and make bench).

Each replica is the real CLI serving stateless streamable HTTP on its own 127.0.0.1 port, configured only
through the environment a team deployment uses (README, Deployment for teams). The balancer sends each HTTP
request to the next replica in turn, so one MCP session's requests land on different replicas; like a real
balancer with health checks it skips a replica that refuses connections, and answers 502 when a replica dies
with the request in flight (the client cannot know whether that request took effect).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.services import free_port

REPO = Path(__file__).resolve().parents[1]


@dataclass
class Replica:
    env: dict[str, str]
    log_path: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "image_composer_mcp", "--transport", "streamable-http", "--stateless", "--json-response",
             "--port", str(self.port)],
            cwd=str(REPO), env=self.env, stdout=subprocess.DEVNULL, stderr=log)
        log.close()

    def wait_ready(self, timeout: float = 240) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"replica on port {self.port} exited: {self.log_tail()}")
            with contextlib.suppress(httpx.HTTPError, ValueError):
                r = httpx.get(f"{self.url}/healthz/ready", timeout=5)
                if r.status_code == 200 and r.json().get("templates"):
                    return r.json()
            time.sleep(0.25)
        raise AssertionError(f"replica on port {self.port} not ready after {timeout}s: {self.log_tail()}")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def replica_env(base: dict[str, str], cache_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OIC_AI_", "AWS_"))}
    env.update(base, OIC_AI_CACHE_DIR=str(cache_dir), PYTHONUNBUFFERED="1", LANCEDB_LOG="error")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


class RoundRobin:
    """A minimal HTTP balancer (ASGI): each request to the next live backend, bodies buffered."""

    def __init__(self, backends: list[str]):
        self.backends = backends
        self._next = 0
        self._client: httpx.AsyncClient | None = None

    async def __call__(self, scope: dict, receive, send) -> None:  # type: ignore[no-untyped-def]
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(120, connect=2))
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in (b"host", b"content-length")]
        target = scope["path"] + (("?" + scope["query_string"].decode()) if scope.get("query_string") else "")
        for _ in range(len(self.backends)):
            backend = self.backends[self._next % len(self.backends)]
            self._next += 1
            try:
                r = await self._client.request(scope["method"], backend + target, content=body, headers=headers)
            except httpx.ConnectError:
                continue  # refused: that replica is down; the request never reached it
            except httpx.HTTPError:
                await _reply(send, 502, b"replica failed during the request")
                return
            skip = {"content-length", "transfer-encoding", "content-encoding", "connection"}
            out = [(k.encode(), v.encode()) for k, v in r.headers.items() if k.lower() not in skip]
            out.append((b"content-length", str(len(r.content)).encode()))
            await send({"type": "http.response.start", "status": r.status_code, "headers": out})
            await send({"type": "http.response.body", "body": r.content})
            return
        await _reply(send, 503, b"no replica is reachable")


async def _reply(send, status: int, body: bytes) -> None:  # type: ignore[no-untyped-def]
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


@contextlib.contextmanager
def balancer(backends: list[str]) -> Iterator[str]:
    """The round-robin balancer on a free 127.0.0.1 port, in a thread; yields its base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(RoundRobin(backends), host="127.0.0.1", port=port, log_config=None,
                                           access_log=False, lifespan="on"))
    thread = threading.Thread(target=server.run, name="balancer", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def mcp_client(url: str):  # type: ignore[no-untyped-def]
    """An MCP client for ``url`` (a replica or the balancer) over streamable HTTP."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=120))
    return Client(streamable_http_client(f"{url}/mcp", http_client=http))


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)

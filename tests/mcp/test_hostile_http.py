"""Slow and greedy HTTP clients on 127.0.0.1: idle sockets, slowloris headers, slow bodies, connection floods,
session floods. Every wait is bounded; nothing here measures speed, only that the server lets go."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from image_composer_mcp.server.core.config import load_settings
from image_composer_mcp.server.transport.app import create_app
from image_composer_mcp.server.transport.http import build_http_app, make_server, resolve_token

from tests.conftest import write_template

TOKEN = "hostile-token-0a9b8c7d6e5f4a3b"
BOUND = 30.0  # seconds any single wait may take before the test fails


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory):
    from image_composer_mcp.server.engine import build_engine

    templates = tmp_path_factory.mktemp("hostile-http-templates")
    write_template(templates, "web-nginx", "web server with nginx", "web", "nginx")
    env = {"OIC_AI_TEMPLATES_DIR": str(templates), "OIC_AI_CACHE_DIR": str(tmp_path_factory.mktemp("hh-cache"))}
    eng = build_engine(load_settings(env=env))
    eng.ready()
    yield eng, env
    eng.close()


@contextmanager
def server(engine, **settings: object) -> Iterator[tuple[str, int]]:
    eng, env = engine
    overrides = {f"server.{k}": v for k, v in settings.items()}
    overrides.setdefault("server.transport", "streamable-http")
    overrides.setdefault("server.shutdown_timeout", 1)
    overrides.setdefault("server.auth_token", TOKEN)
    s = load_settings(env=env, overrides=overrides)
    app = build_http_app(create_app(s, engine=eng), eng, s.server, resolve_token(s.server))
    uv = make_server(app, s.server)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    thread = threading.Thread(target=lambda: asyncio.run(uv.serve(sockets=[sock])), daemon=True)
    thread.start()
    deadline = time.monotonic() + BOUND
    while not uv.started:
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}", port
    finally:
        uv.should_exit = True
        thread.join(BOUND)


def _closed_by_server(sock: socket.socket, deadline: float, trickle: bytes = b"") -> bool:
    """Whether the server closes ``sock`` before ``deadline`` (optionally while we trickle bytes at it)."""
    sock.settimeout(0.2)
    while time.monotonic() < deadline:
        if trickle:
            try:
                sock.sendall(trickle)
            except OSError:
                return True
        try:
            data = sock.recv(4096)
        except TimeoutError:
            continue
        except OSError:
            return True
        if data == b"" or data.startswith(b"HTTP/1.1 4"):
            return True
    return False


def test_idle_unauthenticated_connections_are_closed(engine) -> None:
    with server(engine, request_read_timeout=1, max_connections=1000) as (url, port):
        socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(200)]
        try:
            deadline = time.monotonic() + BOUND
            assert all(_closed_by_server(s, deadline) for s in socks)
            assert httpx.get(f"{url}/healthz", timeout=5).status_code == 200  # still serving
        finally:
            for s in socks:
                s.close()


def test_slowloris_headers_are_cut_off(engine) -> None:
    with server(engine, request_read_timeout=1) as (_url, port):
        sock = socket.create_connection(("127.0.0.1", port))
        try:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            assert _closed_by_server(sock, time.monotonic() + BOUND, trickle=b"X-Slow: 1\r\n")
        finally:
            sock.close()


def test_slow_request_body_is_cut_off(engine) -> None:
    with server(engine, request_read_timeout=1) as (_url, port):
        sock = socket.create_connection(("127.0.0.1", port))
        try:
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         b"Accept: application/json, text/event-stream\r\n"
                         b"Authorization: Bearer " + TOKEN.encode() + b"\r\nContent-Length: 100000\r\n\r\n{")
            assert _closed_by_server(sock, time.monotonic() + BOUND, trickle=b" ")
        finally:
            sock.close()


def test_idle_keep_alive_connection_after_a_response_is_closed(engine) -> None:
    with server(engine, request_read_timeout=1, keep_alive_timeout=1) as (_url, port):
        sock = socket.create_connection(("127.0.0.1", port))
        try:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            sock.settimeout(BOUND)
            assert sock.recv(4096).startswith(b"HTTP/1.1 200")
            # A byte of a next request cancels uvicorn's own keep-alive timer; our read deadline still applies.
            sock.sendall(b"G")
            assert _closed_by_server(sock, time.monotonic() + BOUND)
        finally:
            sock.close()


def test_connections_beyond_the_cap_are_refused(engine) -> None:
    with server(engine, request_read_timeout=60, max_connections=20) as (url, port):
        socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(60)]
        try:
            deadline = time.monotonic() + BOUND
            closed = [_closed_by_server(s, min(deadline, time.monotonic() + 0.5)) for s in socks]
            assert sum(closed) >= 40  # everything past the cap, at once (not after the 60 s read deadline)
        finally:
            for s in socks:
                s.close()
        deadline = time.monotonic() + BOUND
        while True:  # once they are gone, the server serves again
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "server did not recover after the flood"
            time.sleep(0.1)


def _initialize(client: httpx.Client, url: str) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "flood", "version": "0"}}}
    return client.post(f"{url}/mcp", json=body, headers={
        "Authorization": f"Bearer {TOKEN}", "Accept": "application/json, text/event-stream"})


def test_session_flood_is_capped(engine) -> None:
    with server(engine, max_sessions=5, json_response=True) as (url, _port), httpx.Client(timeout=BOUND) as client:
        answers = [_initialize(client, url) for _ in range(12)]
        codes = [r.status_code for r in answers]
        assert codes[:5] == [200] * 5 and set(codes[5:]) == {503}
        first = answers[0].headers["mcp-session-id"]
        ping = client.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "ping"}, headers={
            "Authorization": f"Bearer {TOKEN}", "Accept": "application/json, text/event-stream",
            "mcp-session-id": first, "mcp-protocol-version": "2025-11-25"})
        assert ping.status_code == 200  # the sessions that exist keep working


def test_idle_sessions_expire_and_free_room(engine) -> None:
    with server(engine, max_sessions=2, session_idle_timeout=1, json_response=True) as (url, _port), \
            httpx.Client(timeout=BOUND) as client:
        assert [_initialize(client, url).status_code for _ in range(3)] == [200, 200, 503]
        deadline = time.monotonic() + BOUND
        while _initialize(client, url).status_code != 200:
            assert time.monotonic() < deadline, "idle sessions were never reclaimed"
            time.sleep(0.2)


def test_settings_are_documented(engine) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for key in ("request_read_timeout", "keep_alive_timeout", "max_connections", "max_header_bytes",
                "max_sessions", "session_idle_timeout"):
        assert f"OIC_AI_SERVER_{key.upper()}" in readme, key


def test_sse_host_rejection_logs_one_line_not_a_traceback(engine, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    with server(engine, transport="sse", auth_token=None) as (url, _port):
        with httpx.Client(timeout=BOUND) as client:
            bad_host = client.get(f"{url}/sse", headers={"Host": "evil.example.com"})
            bad_origin = client.get(f"{url}/sse", headers={"Origin": "http://evil.example.com"})
        assert bad_host.status_code == 421 and bad_origin.status_code == 403
        deadline = time.monotonic() + BOUND  # the server logs after the client has its answer
        while len([r for r in caplog.records if "/sse" in r.getMessage() or r.exc_info]) < 2:
            assert time.monotonic() < deadline, "nothing was logged"
            time.sleep(0.05)
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records if r.exc_info]
    assert "Traceback" not in caplog.text and "Exception in ASGI application" not in caplog.text
    lines = [r.getMessage() for r in caplog.records if "/sse" in r.getMessage() and "answered" in r.getMessage()]
    assert len(lines) == 2 and "421" in lines[0] and "403" in lines[1]

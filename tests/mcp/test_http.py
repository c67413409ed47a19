"""HTTP transports against real servers on 127.0.0.1: streamable HTTP (stateful, stateless), SSE, /healthz,
bearer-token auth, Host/Origin checks, body limit, 20 concurrent clients (the CLI's HTTP server as a subprocess: tests/e2e/test_http_process.py)."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx
import httpx2
import pytest
from image_composer_mcp.server.core.config import load_settings
from image_composer_mcp.server.transport.app import create_app
from image_composer_mcp.server.transport.http import (
    build_http_app,
    make_server,
    resolve_token,
)
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import RAW_INITIALIZE, write_template
from tests.unit.test_http_settings import TOKEN

# name, description, package, a query that should find it first
TEMPLATES = [
    ("web-nginx", "web server with nginx reverse proxy", "nginx", "nginx web server"),
    ("robot-ros", "robotics image with ROS 2 humble", "ros-humble-desktop", "ROS 2 robotics"),
    ("db-postgres", "database server running postgresql", "postgresql", "postgresql database"),
    ("vision-ai", "AI vision inference with openvino", "openvino", "openvino inference"),
    ("kiosk-browser", "kiosk display with chromium browser", "chromium", "chromium kiosk display"),
]


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    templates = tmp_path_factory.mktemp("http-templates")
    for name, description, package, _query in TEMPLATES:
        write_template(templates, name, description=description, keywords=name.split("-")[1], packages=package)
    return {"templates": templates, "cache": tmp_path_factory.mktemp("http-cache")}


def _env(dirs: dict[str, Path]) -> dict[str, str]:
    return {"OIC_AI_TEMPLATES_DIR": str(dirs["templates"]), "OIC_AI_CACHE_DIR": str(dirs["cache"])}


@pytest.fixture(scope="module")
def engine(dirs):
    from image_composer_mcp.server.engine import build_engine

    eng = build_engine(load_settings(env=_env(dirs)))
    eng.ready()
    yield eng
    eng.close()


@contextmanager
def http_server(engine, dirs, **server: object) -> Iterator[str]:
    """A real uvicorn server in a thread on a free port; yields its base URL."""
    overrides = {f"server.{k}": v for k, v in server.items()}
    overrides.setdefault("server.transport", "streamable-http")
    overrides.setdefault("server.shutdown_timeout", 2)
    settings = load_settings(env=_env(dirs), overrides=overrides)
    mcp = create_app(settings, engine=engine)
    app = build_http_app(mcp, engine, settings.server, resolve_token(settings.server))
    uv = make_server(app, settings.server)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    thread = threading.Thread(target=lambda: asyncio.run(uv.serve(sockets=[sock])), daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not uv.started:
        assert thread.is_alive() and time.monotonic() < deadline, "server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        uv.should_exit = True
        thread.join(15)
        sock.close()


def _auth(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _streamable(url: str, token: str | None = TOKEN, hook=None):
    hooks = {"response": [hook]} if hook else {}
    client = httpx2.AsyncClient(headers=_auth(token) if token else {}, timeout=httpx2.Timeout(30, read=120),
                                event_hooks=hooks)
    return streamable_http_client(f"{url}/mcp", http_client=client)


INIT = RAW_INITIALIZE
JSON_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


# ---- real servers in this process ------------------------------------------------------------------
def test_healthz_answers_without_a_token(engine, dirs):
    with http_server(engine, dirs, auth_token=TOKEN) as url:
        r = httpx.get(f"{url}/healthz")
        assert r.status_code == 200
        assert r.json()["status"] == "ok" and r.json()["index"] == "ready"
        assert r.json()["transport"] == "streamable-http"


def test_missing_or_wrong_token_gets_401_with_a_challenge(engine, dirs, caplog):
    with caplog.at_level(logging.INFO), http_server(engine, dirs, auth_token=TOKEN) as url:
        body = json.dumps(INIT)
        r = httpx.post(f"{url}/mcp", content=body, headers=JSON_HEADERS)
        assert r.status_code == 401
        assert r.headers["www-authenticate"].startswith('Bearer realm="mcp-server-image-composer"')
        wrong = "wrong-token-that-must-not-be-logged"
        r = httpx.post(f"{url}/mcp", content=body, headers={**JSON_HEADERS, **_auth(wrong)})
        assert r.status_code == 401 and 'error="invalid_token"' in r.headers["www-authenticate"]
        r = httpx.post(f"{url}/mcp", content=body, headers={**JSON_HEADERS, "Authorization": f"Basic {TOKEN}"})
        assert r.status_code == 401
        r = httpx.post(f"{url}/mcp", content=body, headers={**JSON_HEADERS, **_auth()})
        assert r.status_code == 200
    assert "rejected POST /mcp" in caplog.text
    assert wrong not in caplog.text and TOKEN not in caplog.text


@pytest.mark.anyio
async def test_client_without_token_cannot_connect(engine, dirs):
    statuses: list[int] = []

    async def hook(response):
        statuses.append(response.status_code)

    # the SDK wraps the failed handshake in task-group errors
    with http_server(engine, dirs, auth_token=TOKEN) as url, pytest.raises(BaseExceptionGroup):
        async with Client(_streamable(url, token=None, hook=hook)) as client:
            await client.list_tools()
    assert statuses and set(statuses) == {401}


@pytest.mark.anyio
@pytest.mark.parametrize(("stateless", "json_response"), [(False, False), (True, False), (False, True)])
async def test_streamable_http_with_token(engine, dirs, stateless, json_response):
    session_ids: list[str] = []
    content_types: set[str] = set()

    async def hook(response):
        if "mcp-session-id" in response.headers:
            session_ids.append(response.headers["mcp-session-id"])
        if response.request.method == "POST" and response.status_code == 200:
            content_types.add(response.headers["content-type"].split(";")[0])

    with http_server(engine, dirs, auth_token=TOKEN, stateless=stateless, json_response=json_response) as url:
        for mode in ("auto", "legacy"):
            async with Client(_streamable(url, hook=hook), mode=mode) as client:
                tools = {t.name for t in (await client.list_tools()).tools}
                assert {"search_templates", "validate_template", "cache_stats"} <= tools
                r = await client.call_tool("search_templates", {"query": "ROS 2 robotics", "top_k": 2})
                assert not r.is_error
                assert r.structured_content["results"][0]["name"] == "robot-ros"
                prompts = {p.name for p in (await client.list_prompts()).prompts}
                assert {"create-image-template", "review-template"} <= prompts
    # only legacy stateful connections get a protocol session
    assert bool(session_ids) is (not stateless)
    if json_response:
        assert content_types == {"application/json"}
    else:
        assert "text/event-stream" in content_types


@pytest.mark.anyio
async def test_sse_transport_with_token(engine, dirs):
    with http_server(engine, dirs, transport="sse", auth_token=TOKEN) as url:
        r = httpx.get(f"{url}/sse", timeout=5)
        assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
        assert httpx.get(f"{url}/healthz").json()["transport"] == "sse"
        async with Client(sse_client(f"{url}/sse", headers=_auth())) as client:
            r = await client.call_tool("search_templates", {"query": "postgresql database"})
            assert r.structured_content["results"][0]["name"] == "db-postgres"
        # a second connection still works: the engine outlives each SSE connection's lifespan
        async with Client(sse_client(f"{url}/sse", headers=_auth())) as client:
            r = await client.call_tool("search_templates", {"query": "openvino inference"})
            assert r.structured_content["results"][0]["name"] == "vision-ai"


def test_foreign_host_and_origin_are_refused_on_loopback(engine, dirs):
    body = json.dumps(INIT)
    with http_server(engine, dirs, auth_token=TOKEN) as url:
        port = url.rsplit(":", 1)[1]
        headers = {**JSON_HEADERS, **_auth()}
        r = httpx.post(f"{url}/mcp", content=body, headers={**headers, "Host": "evil.example"})
        assert r.status_code == 421
        r = httpx.post(f"{url}/mcp", content=body, headers={**headers, "Host": f"attacker.example:{port}"})
        assert r.status_code == 421
        r = httpx.post(f"{url}/mcp", content=body, headers={**headers, "Origin": "http://evil.example"})
        assert r.status_code == 403
        assert httpx.post(f"{url}/mcp", content=body, headers=headers).status_code == 200


def test_configured_hosts_and_origins_are_accepted(engine, dirs):
    body = json.dumps(INIT)
    with http_server(engine, dirs, auth_token=TOKEN, allowed_hosts=["mcp.example.com:*"],
                     allowed_origins=["https://app.example.com"]) as url:
        port = url.rsplit(":", 1)[1]
        headers = {**JSON_HEADERS, **_auth()}
        r = httpx.post(f"{url}/mcp", content=body, headers={**headers, "Host": f"mcp.example.com:{port}",
                                                            "Origin": "https://app.example.com"})
        assert r.status_code == 200
        r = httpx.post(f"{url}/mcp", content=body, headers={**headers, "Host": "mcp.example.com"})
        assert r.status_code == 200  # "name:*" also covers the bare name a proxy on port 443 forwards
        r = httpx.post(f"{url}/mcp", content=body, headers={**headers, "Host": f"other.example.com:{port}"})
        assert r.status_code == 421
        r = httpx.post(f"{url}/mcp", content=body, headers={**headers, "Origin": "https://evil.example.com"})
        assert r.status_code == 403


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
def test_oversized_body_gets_413(engine, dirs, transport):
    with http_server(engine, dirs, transport=transport, auth_token=TOKEN, max_body_bytes=4096) as url:
        big = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "validate_template", "arguments": {"yaml": "x" * 10_000}}})
        target = f"{url}/mcp" if transport == "streamable-http" else f"{url}/messages/?session_id=0" + "0" * 31
        r = httpx.post(target, content=big, headers={**JSON_HEADERS, **_auth()})
        assert r.status_code == 413
        if transport == "streamable-http":
            small = json.dumps(INIT)
            assert httpx.post(target, content=small, headers={**JSON_HEADERS, **_auth()}).status_code == 200


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_twenty_concurrent_clients_see_only_their_own_answers(engine, dirs, mode):
    clients = 20
    answers: dict[int, list[tuple[str, str, int]]] = {}
    session_ids: set[str] = set()

    async def hook(response):
        if "mcp-session-id" in response.headers:
            session_ids.add(response.headers["mcp-session-id"])

    async def one(i: int) -> None:
        name, _d, _p, query = TEMPLATES[i % len(TEMPLATES)]
        got = answers.setdefault(i, [])
        async with Client(_streamable(url, hook=hook), mode=mode) as client:
            for round_ in range(3):
                q = f"{query} {i}-{round_}"
                r = await client.call_tool("search_templates", {"query": q, "top_k": 1 + (i + round_) % 3})
                assert not r.is_error, r.content
                data = r.structured_content
                got.append((data["query"], data["results"][0]["name"], len(data["results"])))
                assert data["query"] == q  # no cross-talk: each answer belongs to this client's question
                assert data["results"][0]["name"] == name

    with http_server(engine, dirs, auth_token=TOKEN) as url:
        async with anyio.create_task_group() as tg:
            for i in range(clients):
                tg.start_soon(one, i)
    assert len(answers) == clients and all(len(v) == 3 for v in answers.values())
    if mode == "legacy":
        assert len(session_ids) == clients  # one protocol session per client


def test_no_oauth_discovery_is_advertised(engine, dirs):
    with http_server(engine, dirs, auth_token=TOKEN) as url:
        r = httpx.get(f"{url}/.well-known/oauth-protected-resource/mcp")
        assert r.status_code == 404  # not 401: clients should use their configured bearer header
        assert "resource_metadata" not in httpx.post(f"{url}/mcp", content="{}").headers["www-authenticate"]


@pytest.fixture(scope="module")
def offline_engine(dirs):
    from image_composer_mcp.server.engine import build_engine

    eng = build_engine(load_settings(env=_env(dirs) | {"OLLAMA_HOST": "http://127.0.0.1:9"},
                               overrides={"provider": "offline", "packages.offline": True}))
    eng.ready()
    yield eng
    eng.close()


@pytest.mark.anyio
async def test_twenty_clients_with_their_own_conversations_and_no_lost_updates(offline_engine, dirs):
    results: dict[int, dict] = {}

    async def own(i: int, url: str) -> None:
        async with Client(_streamable(url)) as client:
            gen = (await client.call_tool("generate_template", {"request": f"web server number {i}",
                                                                "conversation_id": f"client-{i}"})).structured_content
            r = await client.call_tool("refine_template", {"conversation_id": gen["conversation_id"],
                                                           "instruction": f"set the hostname to host-{i}"})
            assert not r.is_error, r.content
            results[i] = r.structured_content

    with http_server(offline_engine, dirs, auth_token=TOKEN) as url:
        async with anyio.create_task_group() as tg:
            for i in range(20):
                tg.start_soon(own, i, url)
        for i, data in results.items():
            assert data["conversation_id"] == f"client-{i}" and data["revision"] == 2
            assert f"hostname: host-{i}" in data["yaml"]

        # five clients refine ONE conversation at the same time: every change lands, in some order
        async with Client(_streamable(url)) as client:
            shared = (await client.call_tool("generate_template", {"request": "postgresql database server"}))
            assert not shared.is_error, shared.content[0].text
            cid = shared.structured_content["conversation_id"]
        packages = ["vim", "htop", "tmux", "curl", "jq"]

        async def add(pkg: str) -> None:
            async with Client(_streamable(url)) as c:
                r = await c.call_tool("refine_template", {"conversation_id": cid, "instruction": f"add {pkg}"})
                assert not r.is_error, r.content

        async with anyio.create_task_group() as tg:
            for pkg in packages:
                tg.start_soon(add, pkg)
        async with Client(_streamable(url)) as client:
            final = (await client.call_tool("refine_template", {"conversation_id": cid,
                                                                "instruction": "what packages are included?"}))
            data = final.structured_content
    assert data["revision"] == 1 + len(packages)
    for pkg in packages:
        assert f"- {pkg}\n" in data["yaml"]

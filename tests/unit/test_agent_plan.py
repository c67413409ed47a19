"""The engine's agent without a client: the validator's warnings about leftovers of removed software, the
LLM plan path with an in-test provider that implements ``complete_json``, and a word the repository index
knows becoming a package."""

from __future__ import annotations

import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from image_composer_mcp.server.composer.adherence import enabled_services, installed
from image_composer_mcp.server.core.config import load_settings
from image_composer_mcp.server.core.yamlsafe import load_mapping
from image_composer_mcp.server.engine import Engine, Providers, build_engine
from image_composer_mcp.server.llm.chat import ChatMessage, LLMUnavailable
from image_composer_mcp.server.validation.validator import validate_text

pytestmark = pytest.mark.anyio


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


def test_validator_warns_about_a_program_or_timer_of_software_that_is_not_installed():
    """firewall-offline-cmd without firewalld fails the build; dnf-automatic.timer's stem ``dnf`` is installed,
    so only its whole name tells that its package is not. The library templates as shipped warn about neither."""
    from image_composer_mcp.server.composer.output import dump_yaml

    from tests.conftest import LIBRARY

    text = (LIBRARY / "el10-x86_64-web-server-httpd-raw.yml").read_text()
    assert not [w for w in validate_text(text).warnings if w.code.startswith("consistency.")]
    doc = load_mapping(text).data
    doc["systemConfig"]["packages"] = [p for p in doc["systemConfig"]["packages"]
                                       if p not in ("firewalld", "dnf-automatic")]
    messages = {w.message for w in validate_text(dump_yaml(doc)).warnings
                if w.code in ("consistency.program_without_package", "consistency.service_without_package")}
    assert any("runs firewall-offline-cmd" in m for m in messages), messages
    assert any("enables dnf-automatic" in m for m in messages), messages
    assert not any("chronyd" in m or "tar" in m for m in messages), messages


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


async def test_the_models_spec_is_judged_on_its_own(library_cache):
    """The result carries the model's spec as it answered; the bench composes it alone and judges it with the
    same check as the merged result, so "how often the model is right" is measured apart from the merge."""
    from image_composer_mcp.tools._agent_common import to_model

    from bench.agent_bench import judge_spec, template_misses

    provider = PlanningProvider(PLAN)
    engine = _engine(library_cache, provider)
    request = "debian 13 box with curl on a 16 GB disk, plus that audit tool lynis"
    try:
        r = await engine.agent.generate(request)
        assert r.plan is not None and r.plan.arch == "aarch64" and r.plan.disk_size == "64GiB"
        assert to_model(r).plan == r.plan  # what the tool returns, for the bench over MCP
        merged = load_mapping(r.yaml).data
        # The model alone: its arch and size are taken, its junk package is passed on to the composer.
        model_facts = {"dist": "debian13", "arch": "aarch64", "size": "64GiB", "has": ["lynis", "tuned"]}
        alone = judge_spec(engine.agent, request, r.plan.model_copy(update={"add_packages": ["lynis", "tuned"]}),
                           model_facts)
        assert alone == [] and len(provider.calls) == 1  # judged by the composer: no second model call
        assert template_misses(merged, r.valid, model_facts) == [
            "arch is 'x86_64', wanted 'aarch64'", "disk size is '16GiB', wanted '64GiB'"]
        # What the request states: the merged result holds it, the model's spec alone misses size and curl.
        stated = {"dist": "debian13", "size": "16GiB", "has": ["curl", "lynis"]}
        assert template_misses(merged, r.valid, stated) == []
        assert judge_spec(engine.agent, request, r.plan, stated) == [
            "package curl missing", "disk size is '64GiB', wanted '16GiB'"]
    finally:
        engine.close()
    offline = _engine(library_cache / "offline")
    try:
        assert (await offline.agent.generate("debian 13 minimal image")).plan is None  # no plan asked
    finally:
        offline.close()


async def test_a_models_minimal_guess_does_not_swap_the_base(library_cache):
    """Seen with SmolLM2 in `bench.llm --plan-only`: its minimal=true made plan mode worse than offline."""
    request = "elxr arm64 cloud image with cloud-init and qemu guest agent"
    plan = {**PLAN, "os": None, "dist": None, "arch": None, "add_packages": [], "disk_size": "8GiB",
            "hostname": None, "minimal": True}
    engine = _engine(library_cache, PlanningProvider(plan))
    try:
        r = await engine.agent.generate(request)
    finally:
        engine.close()
    assert r.provider == "ollama+composer" and {"cloud-init", "qemu-guest-agent"} <= installed(load_mapping(r.yaml).data)


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


# ---- a word is a package when the target's repository index says so ---------------------------------------
class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def valkey_repo(tmp_path: Path):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "Packages").write_text("".join(f"Package: {n}\nVersion: 1.0\nArchitecture: amd64\n\n"
                                           for n in ("valkey", "openssh-server", "curl", "python3",
                                                     "python3-numpy", "postgresql", "postgresql-16")))
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_QuietHandler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/Packages"
    server.shutdown()


async def _generate_with_index(library_cache: Path, repo: str, request: str) -> Any:
    """``request`` generated with ``repo`` as ubuntu24's only repository index."""
    settings = load_settings(env={"OIC_AI_CACHE_DIR": str(library_cache)},
                             overrides={"packages.sources": {"ubuntu24": [repo]}})
    engine = build_engine(settings)
    try:
        return await engine.agent.generate(request)
    finally:
        engine.close()


async def test_a_word_the_repository_index_knows_becomes_a_package(library_cache, valkey_repo):
    r = await _generate_with_index(library_cache, valkey_repo, "ubuntu 24.04 image with valkey and frobnitz")
    doc = load_mapping(r.yaml).data
    assert "valkey" in installed(doc)  # in no template or capability, but in the ubuntu24 index
    assert "frobnitz" not in installed(doc) and "not understood: frobnitz" in r.explanation.lower()


async def test_the_index_places_a_python_library_and_a_versioned_name_and_the_answer_says_how(library_cache,
                                                                                                valkey_repo):
    r = await _generate_with_index(library_cache, valkey_repo,
                                   "ubuntu 24.04 server with python3, numpy and postgresql 16")
    have = installed(load_mapping(r.yaml).data)
    assert {"python3-numpy", "postgresql-16"} <= have and "postgresql" not in have
    said = " ".join(r.notes)
    assert "numpy -> python3-numpy" in said and "postgresql 16 -> postgresql-16" in said
    assert "version not pinned" not in r.explanation and "not understood: numpy" not in r.explanation.lower()



async def test_deciding_whether_to_ask_the_client_probes_no_llm_when_the_answer_is_known():
    """The MCP layer asks this before every generate and refine call: it must not probe Ollama or OpenAI when
    the client cannot be asked or another provider is named."""
    from image_composer_mcp.server.agent.loop import Agent
    from image_composer_mcp.server.llm.chat import CallbackProvider

    class Unprobed:
        name = "ollama"

        async def available(self) -> tuple[bool, str]:
            raise AssertionError("Ollama was probed")

    class Services:
        def __init__(self, provider: str):
            self.settings = load_settings(env={"OIC_AI_PROVIDER": provider})

        def chat_providers(self) -> tuple[Unprobed, None]:
            return Unprobed(), None

    async def never(*_args: Any) -> str:
        raise AssertionError("the client was asked")

    undeclared = CallbackProvider(never, available=False, reason="not declared")
    declared = CallbackProvider(never, available=True, reason="declared")
    assert not await Agent(Services("auto")).asks_client(undeclared)  # type: ignore[arg-type]
    assert not await Agent(Services("auto")).asks_client(None)  # type: ignore[arg-type]
    assert not await Agent(Services("ollama")).asks_client(declared)  # type: ignore[arg-type]
    assert await Agent(Services("sampling")).asks_client(declared)  # type: ignore[arg-type]

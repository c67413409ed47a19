"""The agent loop for small models: compact prompts, answers of only the changed sections, deterministic clean-up.

Scripted replies below are what SmolLM2-135M actually wrote (bench-results/llm.json), trimmed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from image_composer_mcp.server.core.config import load_settings
from image_composer_mcp.server.core.yamlsafe import load_mapping
from image_composer_mcp.server.engine import build_engine
from image_composer_mcp.server.transport.app import create_app
from image_composer_mcp.server.validation.validator import validate_text
from mcp import Client

from tests.conftest import LIBRARY
from tests.fake_llm import FakeLLM
from tests.unit.test_agent_compact_repair import GOOD


def make_app(cache: Path, llm: FakeLLM, style: str = "compact", **overrides: Any):
    env = {"OIC_AI_CACHE_DIR": str(cache), "OLLAMA_HOST": "http://127.0.0.1:9"}
    settings = load_settings(env=env, overrides={
        "packages.offline": True, "provider": "openai", "openai.base_url": llm.url + "/v1",
        # These tests are about the model writing YAML itself (compact prompts, repair): the "yaml" mode.
        "openai.api_key": "local", "agent.prompt_style": style, "agent.llm_mode": "yaml", **overrides})
    return create_app(settings, engine=build_engine(settings))


def honest(data: dict[str, Any]) -> dict[str, Any]:
    assert data["valid"] == validate_text(data["yaml"]).valid
    return data


async def call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    r = await client.call_tool(tool, args)
    assert not r.is_error, r.content[0].text
    return honest(r.structured_content)


# ---- the loop, with scripted replies ------------------------------------------------------------------------

@pytest.mark.anyio
async def test_an_answer_of_changed_sections_is_completed_and_valid_at_once(library_cache):
    reply = "Here you go:\n```yaml\nsystemConfig:\n  hostname: gw-17\n```\n"
    with FakeLLM([reply]) as llm:
        async with Client(make_app(library_cache, llm)) as c:
            data = await call(c, "generate_template", request="ubuntu 24.04 edge gateway with docker, hostname gw-17")
    assert data["valid"] and data["provider"] == "openai" and data["attempts"] == 1
    doc = load_mapping(data["yaml"]).data
    grounding = load_mapping((LIBRARY / f"{data['grounded_on'][0]}.yml").read_text()).data
    assert doc["systemConfig"]["hostname"] == "gw-17" and doc["disk"] == grounding["disk"]
    assert "comes from the example unchanged" in data["explanation"]
    prompt = llm.requests[0]["body"]["messages"][-1]["content"]
    assert "Changes to make" in prompt and "systemConfig.hostname = gw-17" in prompt


@pytest.mark.anyio
async def test_syntax_slips_and_invented_keys_are_cleaned_up_and_said(library_cache):
    reply = ('```yaml\nimage: my-gw\n  name: gw-image\n  version: "2.0.0"\n  description: a gateway\n'
             "target:\n  os: ubuntu\n  dist: ubuntu24\n```")
    with FakeLLM([reply]) as llm:
        async with Client(make_app(library_cache, llm)) as c:
            data = await call(c, "generate_template", request="ubuntu 24.04 edge gateway with docker")
    assert data["valid"] and data["attempts"] == 1 and len(llm.requests) == 1
    assert load_mapping(data["yaml"]).data["image"] == {"name": "gw-image", "version": "2.0.0"}
    assert "YAML syntax errors" in data["explanation"] and "$.image.description" in data["explanation"]


@pytest.mark.anyio
async def test_errors_go_back_with_the_completed_template_in_a_fresh_prompt(library_cache):
    bad = "```yaml\ntarget:\n  imageType: floppy\n```"
    good = "```yaml\ntarget:\n  imageType: raw\nsystemConfig:\n  hostname: fixed-1\n```"
    with FakeLLM([bad, good]) as llm:
        async with Client(make_app(library_cache, llm)) as c:
            data = await call(c, "generate_template", request="ubuntu 24.04 edge gateway with docker")
    assert data["valid"] and data["attempts"] == 2
    assert load_mapping(data["yaml"]).data["systemConfig"]["hostname"] == "fixed-1"
    fix = llm.requests[1]["body"]["messages"]
    assert len(fix) == 2 and "floppy" in fix[-1]["content"] and "systemConfig:" in fix[-1]["content"]


@pytest.mark.anyio
async def test_compact_refinement_changes_only_what_the_model_wrote(library_cache):
    with FakeLLM(["```yaml\nsystemConfig:\n  hostname: gw-1\n```", '```yaml\nimage:\n  version: "2.1.0"\n```',
                  '```yaml\nimage:\n  version: "2.1.0"\n```']) as llm:
        async with Client(make_app(library_cache, llm)) as c:
            gen = await call(c, "generate_template", request="ubuntu 24.04 edge gateway with docker")
            cid = gen["conversation_id"]
            # words the composer does not read, so the model answers (a version it reads itself: no model call)
            r = await call(c, "refine_template", conversation_id=cid, instruction="mark this build as the spring release")
            assert r["valid"] and r["provider"] == "openai"
            before, after = load_mapping(gen["yaml"]).data, load_mapping(r["yaml"]).data
            assert after["image"]["version"] == "2.1.0"
            assert {k: v for k, v in after.items() if k != "image"} == {k: v for k, v in before.items() if k != "image"}
            # The same answer again changes nothing: that is said, not passed off as done.
            again = await call(c, "refine_template", conversation_id=cid, instruction="bump the image version")
            assert "left the template unchanged" in again["explanation"]
    assert "Change request: mark this build as the spring release" in llm.requests[1]["body"]["messages"][-1]["content"]


@pytest.mark.anyio
async def test_full_style_salvages_an_unparsable_template_after_the_fix_loop(library_cache):
    broken = GOOD.replace("systemConfig:\n", "systemConfig: edge\n", 1).replace("hostname: ubuntu-edge-gw",
                                                                               "hostname: gw-5")
    with FakeLLM([f"```yaml\n{broken}```"] * 3) as llm:
        async with Client(make_app(library_cache, llm, style="full")) as c:
            data = await call(c, "generate_template", request="ubuntu 24.04 edge gateway with docker")
    assert len(llm.requests) == 3 and data["provider"] == "openai+repair" and data["valid"]
    assert load_mapping(data["yaml"]).data["systemConfig"]["hostname"] == "gw-5"
    assert "unparsable line" in data["explanation"]


@pytest.mark.anyio
async def test_without_the_safety_net_the_remaining_errors_are_reported(library_cache):
    with FakeLLM(["```yaml\ntarget:\n  imageType: floppy\n```"] * 3) as llm:
        app = make_app(library_cache, llm, **{"agent.require_valid_output": False})
        async with Client(app) as c:
            data = await call(c, "generate_template", request="ubuntu 24.04 edge gateway with docker")
    assert len(llm.requests) == 3
    assert data["valid"] or data["provider"].endswith("+repair")
    if not data["valid"]:
        assert any("imageType" in e["path"] for e in data["errors"]) and "NOT valid" in data["explanation"]


@pytest.mark.anyio
async def test_a_package_group_the_model_left_out_is_enforced(library_cache):
    without_ssh = GOOD.replace("    - openssh-server\n", "")
    with FakeLLM([f"```yaml\n{without_ssh}```"]) as llm:
        async with Client(make_app(library_cache, llm, style="full")) as c:
            data = await call(c, "generate_template", request="ubuntu 24.04 edge gateway with docker and ssh")
    assert data["valid"] and data["provider"] == "openai"
    assert "openssh-server" in load_mapping(data["yaml"]).data["systemConfig"]["packages"]
    assert "add ssh" in data["explanation"]
    assert "the packages for: containers, ssh" in llm.requests[0]["body"]["messages"][-1]["content"]


@pytest.mark.anyio
async def test_a_static_address_the_model_left_out_is_enforced_for_the_targets_network_manager(library_cache):
    from image_composer_mcp.server.knowledge.static_network import StaticAddress, read_all

    with FakeLLM([f"```yaml\n{GOOD}```"]) as llm:  # the model's template has no network configuration
        async with Client(make_app(library_cache, llm, style="full")) as c:
            data = await call(c, "generate_template",
                              request="ubuntu 24.04 edge gateway with docker, eth0 at 10.0.0.5/24, gateway 10.0.0.1")
    assert data["valid"] and data["provider"] == "openai"
    commands = [str(x.get("cmd")) for x in load_mapping(data["yaml"]).data["systemConfig"].get("configurations") or []]
    assert read_all(commands) == [StaticAddress("eth0", "10.0.0.5/24", "10.0.0.1")]
    assert any("/etc/systemd/network/10-static-eth0.network" in x for x in commands)
    assert "no static address 10.0.0.5/24 on eth0, gateway 10.0.0.1" in data["explanation"]  # said as enforced
    assert "10-static-eth0.network" in llm.requests[0]["body"]["messages"][-1]["content"]  # asked in the target's form

"""generate_template / refine_template end to end: real MCP client, real engine, scripted LLM servers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from image_composer_mcp.server.composer.adherence import unmet
from image_composer_mcp.server.core.config import load_settings
from image_composer_mcp.server.core.yamlsafe import load_mapping, parse_yaml
from image_composer_mcp.server.engine import build_engine
from image_composer_mcp.server.transport.app import create_app
from mcp import Client
from mcp.types import CreateMessageResult, TextContent

from tests.conftest import LIBRARY, REPO
from tests.fake_llm import FakeLLM

pytestmark = pytest.mark.anyio

GOOD = (LIBRARY / "ubuntu24-x86_64-edge-gateway-docker-raw.yml").read_text()
DEAD = "http://127.0.0.1:9"


def load_mapping_list(path: Path) -> list[dict[str, Any]]:
    return parse_yaml(path.read_bytes()).data


def make_app(cache: Path, tmp_path: Path | None = None, **overrides: Any):
    env = {"OIC_AI_CACHE_DIR": str(cache), "OLLAMA_HOST": DEAD}
    # The free-form path (the model writes YAML; validate -> fix -> repair) is what most tests here exercise;
    # test_llm_plans_and_the_composer_writes covers the default "plan" mode.
    base: dict[str, Any] = {"packages.offline": True, "agent.llm_mode": "yaml"}
    if tmp_path is not None:
        base["save_dir"] = str(tmp_path / "saved")
    base.update(overrides)
    settings = load_settings(env=env, overrides=base)
    return create_app(settings, engine=build_engine(settings))


def _data(result) -> dict[str, Any]:
    return result.structured_content


async def _generate(client, request: str, **kw) -> dict[str, Any]:
    r = await client.call_tool("generate_template", {"request": request, **kw})
    assert not r.is_error, r.content[0].text
    return _data(r)


# ---- the LLM providers -------------------------------------------------------------------------------------
async def test_llm_plans_and_the_composer_writes(library_cache):
    """Default mode: the model answers the RequestSpec as schema-constrained JSON; the rules' facts win."""
    plan = {"os": "ubuntu", "dist": "ubuntu24", "arch": "aarch64", "image_type": "raw",
            "add_packages": ["nginx", "definitely-not-a-package"], "remove_packages": [], "disk_size": None,
            "hostname": "edge-01", "kernel_cmdline_append": [], "minimal": False}
    with FakeLLM([json.dumps(plan)]) as llm:
        app = make_app(library_cache, provider="ollama", **{"ollama.base_url": llm.url, "agent.llm_mode": "plan"})
        async with Client(app) as c:
            data = _data(await c.call_tool("generate_template",
                                           {"request": "ubuntu 24.04 x86_64 web server with nginx, hostname edge-01"}))
    body = llm.requests[0]["body"]
    assert body["format"]["type"] == "object" and "add_packages" in body["format"]["properties"]
    assert data["provider"] == "ollama+composer" and data["valid"]
    doc = load_mapping(data["yaml"]).data
    assert doc["target"]["arch"] == "x86_64"  # the request named x86_64: the rules win over the model's aarch64
    packages = doc["systemConfig"]["packages"]
    assert "nginx" in packages and "definitely-not-a-package" not in packages  # unknown names are never used
    assert doc["systemConfig"]["hostname"] == "edge-01"


async def test_ollama_clean_yaml_in_prose_and_fences(library_cache, tmp_path):
    reply = f"Sure! Here is your template:\n\n```yaml\n{GOOD}```\n\nLet me know if you need changes."
    with FakeLLM([reply]) as llm:
        app = make_app(library_cache, provider="ollama", **{"ollama.base_url": llm.url})
        async with Client(app) as c:
            seen: list[tuple[float, str]] = []

            async def on_progress(p: float, total: float | None, msg: str | None) -> None:
                seen.append((p, msg or ""))

            r = await c.call_tool("generate_template", {"request": "ubuntu edge gateway with docker"},
                                  progress_callback=on_progress)
            data = _data(r)
    assert data["provider"] == "ollama" and data["valid"] and data["attempts"] == 1
    assert load_mapping(data["yaml"]).data["target"]["dist"] == "ubuntu26"  # "ubuntu" alone: the newest supported release
    assert len(data["grounded_on"]) == 3
    body = llm.requests[0]["body"]
    assert llm.requests[0]["path"] == "/api/chat" and body["model"] == "llama3.1:8b"
    assert body["options"]["temperature"] <= 0.2
    prompt = body["messages"][-1]["content"]
    assert "ubuntu edge gateway with docker" in prompt and "Example 1" in prompt
    assert any("generating" in m for _p, m in seen) and any("verifying" in m for _p, m in seen)


async def test_fix_loop_feeds_errors_back(library_cache):
    broken = GOOD.replace("arch: x86_64", "arch: amd64", 1)
    with FakeLLM([f"```yaml\n{broken}```", f"```yaml\n{GOOD}```"]) as llm:
        app = make_app(library_cache, provider="openai", **{"openai.base_url": llm.url + "/v1",
                                                            "openai.api_key": "sk-test-key-1234"})
        async with Client(app) as c:
            data = await _generate(c, "ubuntu edge gateway with docker")
    assert data["valid"] and data["attempts"] == 2 and data["provider"] == "openai"
    fix_prompt = llm.requests[1]["body"]["messages"][-1]["content"]
    assert "target.arch" in fix_prompt and "not valid" in fix_prompt
    assert llm.requests[1]["body"]["messages"][-2]["role"] == "assistant"


async def test_reply_that_never_becomes_valid_falls_back_honestly(library_cache):
    with FakeLLM(["I am a small model and I like turtles."] * 5) as llm:
        app = make_app(library_cache, provider="ollama", **{"ollama.base_url": llm.url})
        async with Client(app) as c:
            data = await _generate(c, "minimal debian 13 image for arm64")
    assert len(llm.requests) == 3  # 1 + max_fix_attempts (2)
    assert data["attempts"] == 3
    assert data["valid"] is True and data["provider"] == "ollama+offline"
    assert "stayed invalid" in data["explanation"]
    assert load_mapping(data["yaml"]).data["target"]["arch"] == "aarch64"


async def test_never_valid_without_fallback_reports_the_errors(library_cache):
    broken = GOOD.replace("imageType: raw", "imageType: floppy")
    with FakeLLM([f"```yaml\n{broken}```"] * 3) as llm:
        app = make_app(library_cache, provider="ollama",
                       **{"ollama.base_url": llm.url, "agent.require_valid_output": False})
        async with Client(app) as c:
            data = await _generate(c, "ubuntu edge gateway with docker")
    assert data["valid"] is False or data["provider"].endswith("+repair")
    if not data["valid"]:
        assert data["errors"] and "NOT valid" in data["explanation"]


async def test_partially_broken_reply_is_repaired_section_by_section(library_cache):
    doc = load_mapping(GOOD).data
    doc["systemConfig"]["hostname"] = "gw-17"
    doc["disk"]["partitionTableType"] = "zfs-magic"
    from image_composer_mcp.server.composer.output import dump_yaml

    with FakeLLM([f"```yaml\n{dump_yaml(doc)}```"] * 3) as llm:
        app = make_app(library_cache, provider="ollama", **{"ollama.base_url": llm.url})
        async with Client(app) as c:
            data = await _generate(c, "ubuntu edge gateway with docker, hostname gw-17")
    assert data["valid"] and data["provider"] == "ollama+repair"
    result = load_mapping(data["yaml"]).data
    assert result["systemConfig"]["hostname"] == "gw-17"
    assert result["disk"]["partitionTableType"] == "gpt"


async def test_llm_timeout_is_a_clear_error_for_an_explicit_provider(library_cache):
    with FakeLLM([GOOD], delay=3) as llm:
        app = make_app(library_cache, provider="ollama", **{"ollama.base_url": llm.url, "ollama.timeout": 0.5})
        async with Client(app) as c:
            r = await c.call_tool("generate_template", {"request": "edge gateway"})
    assert r.is_error and "timed out" in r.content[0].text.lower()


async def test_explicit_provider_unavailable_is_not_silently_switched(library_cache):
    app = make_app(library_cache, provider="ollama")
    async with Client(app) as c:
        r = await c.call_tool("generate_template", {"request": "edge gateway"})
        assert r.is_error and "ollama" in r.content[0].text.lower()
    app = make_app(library_cache, provider="openai")
    async with Client(app) as c:
        r = await c.call_tool("generate_template", {"request": "edge gateway"})
        assert r.is_error and "OPENAI_API_KEY" in r.content[0].text


async def test_auto_falls_through_to_offline_and_says_why(library_cache):
    app = make_app(library_cache)
    async with Client(app) as c:
        data = await _generate(c, "edge gateway with docker for ubuntu")
    assert data["provider"] == "offline"
    assert any(s.startswith("ollama:") for s in data["skipped_providers"])
    assert any(s.startswith("openai:") for s in data["skipped_providers"])


async def test_sampling_uses_the_clients_own_llm(library_cache):
    """Free-form YAML mode asks the client mid-call: a legacy connection can (plan mode, both eras: test_sampling)."""
    asked: list[Any] = []

    async def sampling(_ctx, params) -> CreateMessageResult:
        asked.append(params)
        return CreateMessageResult(role="assistant", model="client-llm",
                                   content=TextContent(type="text", text=f"```yaml\n{GOOD}```"))

    app = make_app(library_cache, provider="sampling")
    async with Client(app, mode="legacy", sampling_callback=sampling) as c:
        data = await _generate(c, "ubuntu edge gateway with docker")
    assert data["provider"] == "sampling" and data["valid"]
    assert asked and asked[0].system_prompt and "YAML" in asked[0].system_prompt


async def test_free_form_sampling_on_the_2026_protocol_says_only_the_plan_is_asked(library_cache):
    asked: list[Any] = []

    async def sampling(_ctx, params) -> CreateMessageResult:
        asked.append(params)
        raise AssertionError("free-form YAML mode never asks the client on 2026-07-28")

    app = make_app(library_cache, provider="sampling")
    async with Client(app, sampling_callback=sampling) as c:
        r = await c.call_tool("generate_template", {"request": "ubuntu edge gateway with docker"})
    assert r.is_error and "asked once, for the plan, before the call" in r.content[0].text
    assert asked == []
    app = make_app(library_cache, provider="auto")  # auto: the offline composer, and the answer says why
    async with Client(app, sampling_callback=sampling) as c:
        data = await _generate(c, "ubuntu edge gateway with docker")
    assert data["provider"] == "sampling+offline" and data["valid"] and asked == []
    assert any("asked once, for the plan, before the call" in n for n in data["notes"])


async def test_sampling_unavailable_on_the_2026_protocol_is_explained(library_cache):
    app = make_app(library_cache, provider="sampling")
    async with Client(app) as c:
        r = await c.call_tool("generate_template", {"request": "edge gateway"})
    assert r.is_error and "sampling" in r.content[0].text


# ---- conversations: the ADR's interaction modes --------------------------------------------------------------
async def test_conversation_modes_and_adr_cases(library_cache):
    app = make_app(library_cache)
    async with Client(app) as c:
        gen = await _generate(c, "minimal ubuntu 24.04 image")
        cid = gen["conversation_id"]
        assert gen["revision"] == 1 and gen["valid"]
        before = load_mapping(gen["yaml"]).data

        r = _data(await c.call_tool("refine_template", {"conversation_id": cid,
                                                         "instruction": "add monitoring packages"}))
        assert r["mode"] == "refine" and r["revision"] == 2 and r["valid"]
        after = load_mapping(r["yaml"]).data
        added = set(after["systemConfig"]["packages"]) - set(before["systemConfig"]["packages"])
        assert "prometheus-node-exporter" in added
        assert "+    - prometheus-node-exporter" in r["diff"] or "prometheus-node-exporter" in r["diff"]

        r = _data(await c.call_tool("refine_template", {"conversation_id": cid,
                                                         "instruction": "change disk size to 8GiB"}))
        resized = load_mapping(r["yaml"]).data
        assert resized["disk"]["size"] == "8GiB"
        assert {k: v for k, v in resized.items() if k != "disk"} == {k: v for k, v in after.items() if k != "disk"}

        r = _data(await c.call_tool("refine_template", {
            "conversation_id": cid, "instruction": "add a separate /data partition of 2GiB and set hostname to edge-01"}))
        data = load_mapping(r["yaml"]).data
        assert any(p.get("mountPoint") == "/data" for p in data["disk"]["partitions"])
        assert data["systemConfig"]["hostname"] == "edge-01" and r["valid"]

        q = _data(await c.call_tool("refine_template", {"conversation_id": cid,
                                                         "instruction": "what packages are included?"}))
        assert q["mode"] == "question" and q["revision"] == r["revision"]
        assert "prometheus-node-exporter" in q["answer"]

        back = _data(await c.call_tool("refine_template", {"conversation_id": cid,
                                                            "instruction": "revert to revision 1"}))
        assert back["mode"] == "revert" and back["yaml"] == gen["yaml"]
        assert back["revision"] == r["revision"] + 1


async def test_unknown_conversation_says_to_generate(library_cache):
    app = make_app(library_cache)
    async with Client(app) as c:
        r = await c.call_tool("refine_template", {"conversation_id": "nope-123", "instruction": "add vim"})
    assert r.is_error and "generate_template" in r.content[0].text


async def test_client_chosen_id_and_persistence_across_restart(library_cache, tmp_path):
    cache = tmp_path / "cache"
    import shutil

    shutil.copytree(library_cache, cache)
    async with Client(make_app(cache)) as c:
        gen = await _generate(c, "debian 13 kvm virtualization host", conversation_id="my-chat-1")
        assert gen["conversation_id"] == "my-chat-1"
    async with Client(make_app(cache)) as c:
        r = _data(await c.call_tool("refine_template", {"conversation_id": "my-chat-1", "instruction": "add vim"}))
        assert r["revision"] == 2 and "vim" in load_mapping(r["yaml"]).data["systemConfig"]["packages"]


async def test_save_as_writes_safely_and_indexes_at_once(library_cache, tmp_path):
    app = make_app(library_cache, tmp_path)
    async with Client(app) as c:
        gen = await _generate(c, "azure linux minimal image", save_as="my-azl")
        saved = Path(gen["saved_to"])
        assert saved.name == "my-azl.yml" and saved.read_text() == gen["yaml"]
        found = await c.call_tool("validate_template", {"name": "my-azl"})
        assert found.structured_content["valid"]
        again = await c.call_tool("generate_template", {"request": "azure linux minimal image", "save_as": "my-azl"})
        assert again.is_error and "overwrite" in again.content[0].text
        for bad in ("../escape", "/etc/passwd", "a/b.yml", ".hidden"):
            r = await c.call_tool("generate_template", {"request": "minimal", "save_as": bad})
            assert r.is_error and "plain file name" in r.content[0].text
        ok = await c.call_tool("generate_template", {"request": "azure linux minimal image", "save_as": "my-azl",
                                                     "overwrite": True})
        assert not ok.is_error


# ---- the offline provider over all six OS families --------------------------------------------------------
OFFLINE_TABLE = [(row["request"], row["want"]) for row in load_mapping_list(REPO / "tests" / "data" / "requests.yaml")]


@pytest.fixture(scope="module")
async def offline_client(library_cache):
    async with Client(make_app(library_cache)) as c:
        yield c


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize(("request_text", "want"), OFFLINE_TABLE, ids=[r for r, _ in OFFLINE_TABLE])
async def test_offline_generation_meets_every_stated_constraint(offline_client, request_text, want):
    data = await _generate(offline_client, request_text)
    assert data["valid"], data["errors"]
    assert unmet(load_mapping(data["yaml"]).data, want) == []


REFINEMENTS = parse_yaml((REPO / "tests" / "data" / "refinements.yaml").read_bytes()).data


@pytest.mark.parametrize("row", REFINEMENTS, ids=[r["instruction"] for r in REFINEMENTS])
async def test_offline_refinement_table(offline_client, row):
    gen = await _generate(offline_client, row["start"])
    r = await offline_client.call_tool("refine_template", {"conversation_id": gen["conversation_id"],
                                                           "instruction": row["instruction"]})
    data = _data(r)
    assert not r.is_error and data["valid"], data["errors"]
    assert data["revision"] == 2 and data["diff"]
    assert unmet(load_mapping(data["yaml"]).data, row["want"]) == []


async def test_an_edit_that_changes_nothing_says_why_and_makes_no_revision(offline_client):
    gen = await _generate(offline_client, "el10 web server with httpd")
    r = await offline_client.call_tool("refine_template", {"conversation_id": gen["conversation_id"],
                                                           "instruction": "remove cockpit"})
    data = _data(r)
    assert not r.is_error and data["revision"] == 1 and not data["changes"]
    assert data["notes"] == ["nothing to remove: cockpit is not in the package list"], data["notes"]
    assert "nothing to remove: cockpit" in data["explanation"].lower() and "not understood" not in data["explanation"].lower()


async def test_software_the_last_edit_removed_is_put_back_by_pronoun(offline_client):
    gen = await _generate(offline_client, "ubuntu 24.04 image with nginx and htop")
    cid = gen["conversation_id"]
    removed = _data(await offline_client.call_tool("refine_template", {"conversation_id": cid,
                                                                       "instruction": "remove nginx and htop"}))
    back = _data(await offline_client.call_tool("refine_template", {"conversation_id": cid,
                                                                    "instruction": "add them back"}))
    packages = load_mapping(back["yaml"]).data["systemConfig"]["packages"]
    assert removed["revision"] == 2 and back["revision"] == 3 and {"nginx", "htop"} <= set(packages)
    assert "read as what the last edit removed: nginx, htop" in back["explanation"]
    again = _data(await offline_client.call_tool("refine_template", {"conversation_id": cid,
                                                                     "instruction": "put it back"}))
    assert again["revision"] == 3 and "the last edit removed no package" in again["explanation"]


async def test_what_the_last_edit_added_is_taken_out_by_pronoun(offline_client):
    cid = (await _generate(offline_client, "el10 minimal image"))["conversation_id"]

    async def refine(instruction: str) -> dict[str, Any]:
        return _data(await offline_client.call_tool("refine_template", {"conversation_id": cid, "instruction": instruction}))

    await refine("add the kernel argument audit=1")
    out = await refine("actually remove that kernel argument")
    assert "audit=1" not in load_mapping(out["yaml"]).data["systemConfig"]["kernel"]["cmdline"]
    assert "read as the kernel arguments the last edit added: audit=1" in out["explanation"]
    await refine("add htop and iotop")
    out = await refine("drop those packages")
    assert not {"htop", "iotop"} & set(load_mapping(out["yaml"]).data["systemConfig"]["packages"])
    kept = await refine("remove those packages")  # the last edit added none: nothing else is taken
    assert kept["revision"] == out["revision"] and "the last edit added no packages" in kept["explanation"]


async def test_an_undo_takes_back_as_many_edits_as_it_says(library_cache):
    app = make_app(library_cache)
    async with Client(app) as c:
        gen = await _generate(c, "ubuntu 24.04 minimal image")
        cid = gen["conversation_id"]
        steps = []
        for instruction in ("add nginx", "add htop", "add curl"):
            steps.append(_data(await c.call_tool("refine_template", {"conversation_id": cid,
                                                                     "instruction": instruction})))
        back = _data(await c.call_tool("refine_template", {"conversation_id": cid,
                                                            "instruction": "revert the last two changes"}))
        assert back["mode"] == "revert" and back["yaml"] == steps[0]["yaml"]
        first = _data(await c.call_tool("refine_template", {"conversation_id": cid,
                                                             "instruction": "go back to the original"}))
        assert first["yaml"] == gen["yaml"]
        too_far = await c.call_tool("refine_template", {"conversation_id": cid, "instruction": "undo 3 times"})
        assert too_far.is_error and "revision" in too_far.content[0].text


async def test_an_artifact_removed_that_the_image_does_not_write_is_said(offline_client):
    cid = (await _generate(offline_client, "el10 minimal image"))["conversation_id"]
    out = _data(await offline_client.call_tool("refine_template", {"conversation_id": cid,
                                                                   "instruction": "drop the qcow2 output"}))
    said = out["explanation"].lower()
    assert "nothing to remove: no qcow2 artifact" in said and "could not find an edit" not in said

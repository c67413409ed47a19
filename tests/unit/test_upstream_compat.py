"""The upstream contract: ADR metadata folded into upstream's fields, user-brought ADR templates still
searchable, and the bench counting os-image-composer's own verdict apart from ours."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from image_composer_mcp.server.composer.output import conform_text
from image_composer_mcp.server.validation.upstream import conform, upstream_errors
from image_composer_mcp.server.validation.validator import validate_data, validate_text

from tests.conftest import LIBRARY, MINIMAL_TEMPLATE
from tests.upstream_schema import refusals, refusals_text

BASE = yaml.safe_load(MINIMAL_TEMPLATE.format(name="demo", description="demo image", keywords="edge",
                                              packages="openssh-server"))


def _with_metadata(meta: object) -> dict:
    return {**BASE, "metadata": meta}


# --------------------------------------------------------------------------- conform


def test_adr_fields_move_into_upstream_fields_and_are_reported() -> None:
    data = _with_metadata({
        "description": "gateway",
        "useCase": "edge-gateway",
        "use_cases": ["protocol translation"],
        "keywords": ["edge", "Docker"],
        "capabilities": ["docker", "tpm2"],
        "recommendedFor": "factory floors",
    })
    assert refusals(data)  # what the library used to ship
    fixed, changes = conform(data)
    assert fixed["metadata"] == {
        "description": "gateway",
        "use_cases": ["edge-gateway", "protocol translation", "factory floors"],  # the category leads
        "keywords": ["edge", "Docker", "tpm2"],  # case-insensitive de-duplication keeps the first spelling
    }
    assert refusals(fixed) == [] and validate_data(fixed).valid
    assert any("metadata.useCase" in c and "metadata.recommendedFor" in c and "use_cases" in c for c in changes)
    assert any("metadata.capabilities" in c and "keywords" in c for c in changes)
    assert data["metadata"]["capabilities"] == ["docker", "tpm2"], "the input is not modified"
    assert {k: v for k, v in fixed.items() if k != "metadata"} == {k: v for k, v in BASE.items() if k != "metadata"}


@pytest.mark.parametrize(
    ("meta", "expected", "change"),
    [
        ({"keywords": "edge, iot", "use_cases": "kiosk"}, {"keywords": ["edge", "iot"], "use_cases": ["kiosk"]},
         "as a list of strings"),
        ({"description": "x", "author": "me", "version": 2}, {"description": "x"}, "dropped metadata.author"),
        ({"tags": ["a", 1, {"b": 2}]}, {"keywords": ["a", "1"]}, "moved metadata.tags"),
        ("just a sentence", {"description": "just a sentence"}, "not a mapping"),
        ({"description": ["two", "parts"]}, {"description": "two; parts"}, "not a string"),
    ],
)
def test_other_refused_shapes_are_rewritten(meta: object, expected: dict, change: str) -> None:
    fixed, changes = conform(_with_metadata(meta))
    assert fixed["metadata"] == expected
    assert any(change in c for c in changes), changes
    assert refusals(fixed) == []


@pytest.mark.parametrize("meta", [None, [], ""])
def test_empty_metadata_that_upstream_refuses_is_removed(meta: object) -> None:
    fixed, changes = conform(_with_metadata(meta))
    assert "metadata" not in fixed and changes and refusals(fixed) == []


@pytest.mark.parametrize("meta", [{}, {"description": "d", "use_cases": ["a"], "keywords": ["b"]}])
def test_acceptable_metadata_is_left_alone(meta: dict) -> None:
    data = _with_metadata(meta)
    fixed, changes = conform(data)
    assert fixed is data and changes == []


def test_conform_text_rewrites_only_when_needed() -> None:
    clean = (LIBRARY / "ubuntu24-x86_64-edge-gateway-docker-raw.yml").read_text()
    assert conform_text(clean) == (clean, [])  # comments and layout of a clean template survive
    adr = MINIMAL_TEMPLATE.format(name="d", description="x", keywords="edge", packages="curl").replace(
        "  keywords: [edge]\n", "  keywords: [edge]\n  capabilities: [firewall]\n")
    assert refusals_text(adr)
    text, changes = conform_text(adr)
    assert refusals_text(text) == [] and validate_text(text).valid
    assert yaml.safe_load(text)["metadata"]["keywords"] == ["edge", "firewall"] and changes
    assert conform_text("image: [unclosed\nmetadata:\n") == ("image: [unclosed\nmetadata:\n", [])


# --------------------------------------------------------------------------- our verdict vs the schema file


@pytest.mark.parametrize(
    "mutation",
    [
        lambda d: d["metadata"].update(capabilities=["x"]),
        lambda d: d["metadata"].update(useCase="edge"),
        lambda d: d["systemConfig"].update(pakages=["x"]),
        lambda d: d["target"].update(arch="amd64"),
        lambda d: d.update(extra={"a": 1}),
    ],
)
def test_validator_refuses_whatever_the_schema_file_refuses(mutation) -> None:  # noqa: ANN001
    data = yaml.safe_load(yaml.safe_dump(BASE))
    mutation(data)
    assert refusals(data) and upstream_errors(data)
    assert not validate_data(data).valid


def test_string_limits_apply_on_top_of_the_schema() -> None:
    data = yaml.safe_load(yaml.safe_dump(BASE))
    data["systemConfig"]["hostname"] = "gw\u00a0one"  # a no-break space pasted from a web page
    assert refusals(data) == []  # the schema has no opinion...
    report = validate_data(data)  # ...upstream's inputcheck does
    assert [e.code for e in report.errors] == ["string.control"]


# --------------------------------------------------------------------------- user-brought ADR templates


ADR_TEMPLATE = MINIMAL_TEMPLATE.format(
    name="adr-gateway", description="gateway for remote farms", keywords="edge", packages="openssh-server"
).replace("  keywords: [edge]\n",
          "  keywords: [edge]\n  useCase: agriculture\n  capabilities: [lorawan-bridge]\n"
          "  recommendedFor: [vineyard soil sensors]\n")


def test_index_reads_adr_fields_of_user_templates_and_search_uses_them(tmp_path: Path) -> None:
    from image_composer_mcp.server.core.config import load_settings
    from image_composer_mcp.server.engine import build_engine

    from tests.conftest import write_template

    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "adr-gateway.yml").write_text(ADR_TEMPLATE)
    write_template(templates, "plain-one", description="plain ubuntu server", keywords="server")
    write_template(templates, "plain-two", description="edge gateway with docker", keywords="edge, docker",
                   packages="docker.io")
    engine = build_engine(load_settings(env={"OIC_AI_TEMPLATES_DIR": str(templates),
                                       "OIC_AI_CACHE_DIR": str(tmp_path / "cache")}))
    try:
        engine.ready()
        rec = engine.index.by_name("adr-gateway")
        assert rec.use_case == "agriculture" and rec.capabilities == ["lorawan-bridge"]
        assert rec.recommended_for == ["vineyard soil sensors"]
        for query in ("lorawan bridge", "vineyard soil sensors", "agriculture image"):
            top = engine.search(query, 3).results
            assert top and top[0].record.name == "adr-gateway", query
        # ...and validate_template tells the user what os-image-composer will say about it.
        report, _ = engine.validate(name="adr-gateway")
        assert not report.valid
        assert {e.path for e in report.errors} == {
            "$.metadata.useCase", "$.metadata.capabilities", "$.metadata.recommendedFor"}
        assert all("not accepted by os-image-composer: move" in e.message for e in report.errors)
    finally:
        engine.close()


# --------------------------------------------------------------------------- bench counters


def test_bench_counts_upstream_validity_apart() -> None:
    from bench.agent_bench import markdown, upstream_accepts
    from bench.llm import Record, _summary
    from bench.llm import markdown as llm_markdown

    clean = (LIBRARY / "ubuntu24-x86_64-edge-gateway-docker-raw.yml").read_text()
    assert upstream_accepts(clean) and not upstream_accepts(ADR_TEMPLATE) and not upstream_accepts("a: [")
    records = [Record("generate", "offline", f"r{i}", True, "offline", 1, [], 0.1, upstream_valid=i < 2)
               for i in range(3)]
    assert _summary(records)["upstream_valid"] == 2
    meta = {"model": "m", "threads": 1, "n_ctx": 1, "max_tokens": 1, "machine": "x", "limit": None, "date": "d",
            "duration_min": 0}
    table = llm_markdown({"offline": records}, meta)
    assert "upstream schema accepts" in table and "| 2/3 (67 %) |" in table
    figures = {"generation": {"requests": 4, "valid_rate": 1.0, "upstream_valid_rate": 0.75,
                              "constraint_adherence": 1.0, "latency_ms_p50": 1, "latency_ms_p95": 2, "failures": []},
               "refinement": {"instructions": 2, "success_rate": 1.0, "upstream_valid_rate": 1.0,
                              "latency_ms_p50": 1, "latency_ms_p95": 2, "failures": []},
               "validation": {"library": {"templates": 40, "total_ms": 1, "per_template_ms_p50": 1,
                                          "per_template_ms_p95": 1, "errors": 0, "upstream_refused": 0}},
               "verification": {"checked": 1, "index_packages": 1, "first_ms": 1, "repeat_ms_p50": 1,
                                "repeat_ms_p95": 1, "after_restart_ms": 1}}
    text = markdown(figures)
    assert "own schema file, unchanged (counted apart) | 75% |" in text
    assert "0 refused by upstream's schema" in text


# --------------------------------------------------------------------------- the LLM path


@pytest.mark.anyio
@pytest.mark.parametrize("style", ["full", "compact"])
async def test_llm_answer_with_adr_metadata_is_conformed_before_validation(library_cache, style) -> None:
    from image_composer_mcp.server.agent.loop import Agent
    from image_composer_mcp.server.core.config import load_settings
    from image_composer_mcp.server.engine import build_engine

    from tests.fake_llm import FakeLLM

    good = (LIBRARY / "ubuntu24-x86_64-edge-gateway-docker-raw.yml").read_text()
    copied = good.replace("  keywords:\n", "  useCase: edge-gateway\n  capabilities:\n    - zz-mesh-relay\n"
                          "  recommendedFor:\n    - zz remote oil rigs\n  keywords:\n", 1)
    assert refusals_text(copied)  # what small models copy from ADR-style examples
    with FakeLLM([f"```yaml\n{copied}```"] * 3) as llm:
        settings = load_settings(
            env={"OIC_AI_CACHE_DIR": str(library_cache), "OLLAMA_HOST": "http://127.0.0.1:9"},
            # the model writes the YAML itself here ("yaml" mode): that is where copied ADR metadata comes from
            overrides={"packages.offline": True, "agent.verify_packages": False, "provider": "openai",
                       "agent.llm_mode": "yaml",
                       "openai.base_url": llm.url + "/v1", "openai.api_key": "sk-test-key-1234",
                       "agent.prompt_style": style})
        engine = build_engine(settings)
        try:
            result = await Agent(engine).generate("ubuntu edge gateway with docker")
        finally:
            engine.close()
    assert result.valid and result.provider == "openai" and result.attempts == 1, result.explanation
    assert refusals_text(result.yaml) == []
    meta = yaml.safe_load(result.yaml)["metadata"]
    assert set(meta) <= {"description", "use_cases", "keywords"}
    assert "zz-mesh-relay" in meta["keywords"] and "zz remote oil rigs" in meta["use_cases"]
    assert "Moved metadata.capabilities into metadata.keywords" in result.explanation
    assert result.trace[0]["valid"] and not result.trace[0]["valid_as_written"]

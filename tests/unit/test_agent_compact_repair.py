"""The deterministic pieces under the agent loop for small models: salvaging YAML, pruning invented
keys, merging an answer onto the base template, completing sections, and the compact prompt.
"""

from __future__ import annotations

from image_composer_mcp.server.agent import prompts
from image_composer_mcp.server.agent.repair import (
    complete_from_base,
    deep_merge,
    merge_onto_base,
    prune_unknown,
    salvage_yaml,
)
from image_composer_mcp.server.core.yamlsafe import load_mapping
from image_composer_mcp.server.validation.validator import validate_data

from tests.conftest import LIBRARY

GOOD = (LIBRARY / "ubuntu24-x86_64-edge-gateway-docker-raw.yml").read_text()


BASE = load_mapping(GOOD).data


# ---- deterministic pieces ---------------------------------------------------------------------------------
def test_salvage_turns_a_scalar_opener_back_into_a_section():
    text = 'image: debian13-minimal\n  name: debian13-minimal-arm64\n  version: "3.0.0"\n'
    data, touched = salvage_yaml(text)
    assert data == {"image": {"name": "debian13-minimal-arm64", "version": "3.0.0"}} and touched == [1]


def test_salvage_drops_a_line_it_cannot_place_and_gives_up_on_prose():
    data, touched = salvage_yaml("systemConfig:\n  hostname: a\n - stray: [\n  packages:\n    - vim\n")
    assert data == {"systemConfig": {"hostname": "a", "packages": ["vim"]}} and touched
    assert salvage_yaml("just words, no yaml here: : :\n  : ::")[0] is None


def test_prune_unknown_removes_only_invented_keys():
    doc = {**BASE, "image": {**BASE["image"], "description": "made up"}}
    pruned, removed = prune_unknown(doc, validate_data(doc).errors)
    assert removed == ["$.image.description"] and pruned == BASE


def test_a_short_package_list_extends_the_base_list_a_near_complete_one_replaces_it():
    base = BASE["systemConfig"]["packages"]
    merged = deep_merge(BASE, {"systemConfig": {"packages": ["htop"]}})
    assert merged["systemConfig"]["packages"] == [*base, "htop"]
    assert merged["systemConfig"]["hostname"] == BASE["systemConfig"]["hostname"]
    without = [p for p in base if p != "jq"]
    assert deep_merge(BASE, {"systemConfig": {"packages": without}})["systemConfig"]["packages"] == without


def test_completion_fills_sections_and_hoists_stray_keys():
    merged, filled = complete_from_base({"hostname": "gw-17", "arch": "amd64"}, BASE)
    assert merged["systemConfig"]["hostname"] == "gw-17" and merged["target"]["arch"] == "x86_64"
    assert {"disk", "image", "metadata"} <= set(filled) and validate_data(merged).valid


def test_section_repair_keeps_the_rest_of_a_section_the_model_wrote_partly():
    fixed = merge_onto_base({"systemConfig": {"hostname": "gw-9"}, "disk": {"partitionTableType": "zfs"}}, BASE)
    assert fixed.data["systemConfig"]["hostname"] == "gw-9" and fixed.data["systemConfig"]["packages"]
    assert "disk" in fixed.dropped and validate_data(fixed.data).valid


def test_compact_prompt_is_short_and_explicit():
    examples = [(n, (LIBRARY / n).read_text(), load_mapping((LIBRARY / n).read_text()).data) for n in (
        "ubuntu24-x86_64-edge-gateway-docker-raw.yml", "ubuntu26-aarch64-edge-gateway-podman-raw.yml",
        "ubuntu24-x86_64-monitoring-prometheus-grafana-raw.yml")]
    full = prompts.generation_messages("edge box", {}, examples, "full")
    compact = prompts.generation_messages("edge box", {"arch": "aarch64"}, examples, "compact",
                                          hints=["systemConfig.hostname = gw-7"])
    user = compact[1][1]
    assert len(user) < len(full[1][1]) / 2
    assert "metadata:" not in user and "typeUUID" not in user and "# partitions: boot (/boot/efi)" in user
    assert user.count("Other similar templates") == 1 and "ubuntu26-aarch64-edge-gateway-podman" in user
    assert "- target.arch = aarch64" in user and "- systemConfig.hostname = gw-7" in user
    assert "ONLY the top-level sections you change" in compact[0][1]
    assert load_mapping(prompts.compact_example(GOOD)).data.keys() == BASE.keys() - {"metadata"}

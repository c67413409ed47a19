"""The model's free-text values in a plan must have the shape of what they name; placeholders are no value."""

from __future__ import annotations

from typing import Any

import pytest
from image_composer_mcp.server.agent.spec_plan import merge_specs, parse_planned, spec_from_plan
from image_composer_mcp.server.composer.request_spec import RequestSpec
from image_composer_mcp.server.knowledge.loader import load_capabilities
from image_composer_mcp.server.knowledge.request_words import load_request_words

EMPTY: dict[str, Any] = {"os": None, "dist": None, "arch": None, "image_type": None, "add_packages": [],
                         "remove_packages": [], "disk_size": None, "hostname": None, "kernel_cmdline_append": [],
                         "minimal": False}


def _spec(**facts: Any) -> RequestSpec:
    return spec_from_plan(parse_planned({**EMPTY, **facts}), load_capabilities())


@pytest.mark.parametrize("word", sorted(load_request_words().placeholders) + ["", "  ", "NULL", '"none"', "N/A"])
def test_a_placeholder_is_no_value_in_any_free_text_field(word: str) -> None:
    spec = _spec(os=word, dist=word, arch=word, disk_size=word, hostname=word, add_packages=[word],
                 remove_packages=[word], kernel_cmdline_append=[word])
    assert (spec.os, spec.dist, spec.arch, spec.disk_size, spec.hostname) == (None, None, None, None, None)
    assert spec.add_packages == spec.remove_packages == spec.kernel_cmdline_append == []


@pytest.mark.parametrize("name", ["edge 01", "-edge", "edge-", "edge_01", "a" * 64, "x.-y", "ed!ge", "1 2"])
def test_a_hostname_must_be_an_rfc_1123_host_name(name: str) -> None:
    assert _spec(hostname=name).hostname is None


@pytest.mark.parametrize("name", ["edge-01", "EDGE01", "gw.example.com", "a" * 63])
def test_a_real_host_name_is_taken(name: str) -> None:
    assert _spec(hostname=name).hostname == name


def test_packages_and_kernel_parameters_keep_their_shape() -> None:
    spec = _spec(add_packages=["nginx", "Curl", "two words", "null", "'htop'"],
                 kernel_cmdline_append=["isolcpus=2-3 nohz_full=2-3", "quiet", "none", "console=ttyS0,115200n8"])
    assert spec.add_packages == ["nginx", "curl", "htop"]
    assert spec.kernel_cmdline_append == ["isolcpus=2-3", "nohz_full=2-3", "quiet", "console=ttyS0,115200n8"]


def test_the_merge_takes_no_placeholder_from_the_model() -> None:
    rules = RequestSpec()
    merged, taken = merge_specs(rules, {**EMPTY, "hostname": "nil", "disk_size": "none", "dist": "null",
                                        "add_packages": ["none"]}, {"none", "nil"}, load_capabilities())
    assert taken == [] and merged.hostname is None and merged.disk_size is None and merged.add_packages == []

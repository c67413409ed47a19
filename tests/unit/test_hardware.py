"""An image for a machine of its own (capabilities.yaml `hardware`): the words that say so, and what a VM or
cloud template gives up for it (server/composer/parse_target.py _hardware, system_edits.py on_hardware,
base.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from image_composer_mcp.server.composer.base import baggage, unasked
from image_composer_mcp.server.composer.compose import apply_instruction, compose
from image_composer_mcp.server.composer.request_parser import parse_request
from image_composer_mcp.server.knowledge.loader import load_capabilities

LIBRARY = Path(__file__).resolve().parents[2] / "image-templates"
CLOUD = "ubuntu24-x86_64-cloud-vm-qcow2-vmdk-raw"


def _template(name: str) -> dict:
    return yaml.safe_load((LIBRARY / f"{name}.yml").read_text(encoding="utf-8"))


def _packages(data: dict) -> list[str]:
    return [str(p) for p in data["systemConfig"].get("packages") or []]


@pytest.mark.parametrize("request_text", [
    "bare metal ubuntu 24.04 server", "ubuntu for an intel NUC", "debian on a mini-pc", "elxr for industrial PCs",
    "ubuntu server for Dell PowerEdge R750 machines", "debian for a physical server in our rack",
    "arm64 debian for a single-board computer",
])
def test_words_for_a_machine_of_its_own_are_read_as_hardware(request_text):
    spec = parse_request(request_text)
    assert spec.hardware is True, request_text
    assert not spec.unparsed, spec.unparsed


@pytest.mark.parametrize("request_text", ["an HMI touch panel for the plant floor on debian",
                                          "self-checkout terminal image, debian", "an operator panel, debian 13"])
def test_a_machine_that_is_a_kiosk_is_hardware_and_the_kiosk(request_text):
    spec = parse_request(request_text)
    assert spec.hardware is True and "kiosk" in spec.add_groups, (spec.hardware, spec.add_groups)


def test_bare_metal_is_not_a_minimal_request_and_a_negated_one_is_not_hardware():
    spec = parse_request("bare metal debian with nginx")
    assert spec.hardware and not spec.minimal
    assert parse_request("a bare debian image").minimal  # "bare" alone still means nothing extra
    assert parse_request("ubuntu 24.04, not bare metal").hardware is None


def test_a_cloud_template_on_hardware_loses_its_vm_kernel_cloud_init_and_guest_agents():
    result = compose("ubuntu 24.04 for a NUC with postgresql", _template(CLOUD))
    packages = _packages(result.data)
    kernel = result.data["systemConfig"]["kernel"]
    assert kernel["packages"] == ["linux-image-generic-hwe-24.04"]
    assert kernel["version"] == load_capabilities().dists["ubuntu24"].kernel_version
    assert not {"cloud-init", "cloud-guest-utils", "cloud-initramfs-growroot", "qemu-guest-agent",
                "open-vm-tools"} & set(packages)
    assert "postgresql" in packages
    assert result.data["systemConfig"]["hostname"] != "ubuntu-cloud"  # the cloud template's name left with it
    assert any(c.startswith("kernel linux-image-virtual -> linux-image-generic-hwe-24.04") for c in result.changes)


def test_the_same_template_keeps_them_when_nothing_says_hardware():
    result = compose("ubuntu 24.04 with postgresql", _template(CLOUD))
    assert result.data["systemConfig"]["kernel"]["packages"] == ["linux-image-virtual"]
    assert "cloud-init" in _packages(result.data)


def test_an_edit_moves_an_image_onto_hardware_and_asked_for_cloud_init_stays():
    edited = apply_instruction(_template(CLOUD), "this will run on bare metal")
    assert edited.data["systemConfig"]["kernel"]["packages"] == ["linux-image-generic-hwe-24.04"]
    assert "cloud-init" not in _packages(edited.data)
    assert any("not for a machine of its own" in c for c in edited.changes)
    kept = apply_instruction(_template(CLOUD), "runs on bare metal, keep cloud-init")
    assert "cloud-init" in _packages(kept.data)


def test_hardware_counts_a_vm_kernel_and_cloud_init_against_a_starting_template():
    caps = load_capabilities()
    request, plain = "ubuntu 24.04 on bare metal with docker", "ubuntu 24.04 with docker"
    spec = parse_request(request)
    cloud = _template(CLOUD)
    assert set(baggage(cloud, spec, caps)["cloud-init"]) == {"cloud-init", "cloud-guest-utils",
                                                              "cloud-initramfs-growroot"}
    assert "cloud-init" not in baggage(cloud, parse_request(plain), caps)
    # its three cloud-init packages, and its virtual kernel weighing like a group
    assert unasked(CLOUD, cloud, spec, caps, request) == unasked(CLOUD, cloud, parse_request(plain), caps, plain) + 4


def test_no_hardware_word_hides_a_machine_the_architecture_is_read_from():
    caps = load_capabilities()
    machines = {" ".join(str(m).lower().split()) for info in caps.arch_info.values() for m in info.get("hardware") or {}}
    words = {" ".join(w.lower().replace("-", " ").split()) for w in caps.hardware.words}
    assert not {w for w in words if any(m in w for m in machines)}
    assert parse_request("azure linux for ampere altra servers").arch == "aarch64"

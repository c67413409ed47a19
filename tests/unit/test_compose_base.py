"""Choosing the starting template and leaving out what nobody asked for: a group travels with its kernel and its
kernel parameters, not only its packages (server/composer/base.py, editing.remove_groups)."""

from __future__ import annotations

from pathlib import Path

import yaml
from image_composer_mcp.server.composer.base import baggage, choose_base, strip_plan
from image_composer_mcp.server.composer.compose import compose
from image_composer_mcp.server.composer.request_parser import parse_request
from image_composer_mcp.server.knowledge.loader import load_capabilities

LIBRARY = Path(__file__).resolve().parents[2] / "image-templates"
RT_TUNING = ("isolcpus", "nohz_full", "rcu_nocbs", "irqaffinity", "intel_idle.max_cstate", "nmi_watchdog")


def _template(name: str) -> dict:
    return yaml.safe_load((LIBRARY / f"{name}.yml").read_text(encoding="utf-8"))


def _params(data: dict) -> list[str]:
    return str(data["systemConfig"]["kernel"].get("cmdline") or "").split()


def test_a_real_time_kernel_and_its_tuning_are_baggage_where_the_group_has_no_packages():
    """EMT's real-time group has no packages of its own: its template still carries it, by kernel and cmdline."""
    caps = load_capabilities()
    request = "emt image with python3 and git"
    rt = _template("emt3-x86_64-realtime-industrial-raw")
    carried = baggage(rt, parse_request(request), caps)
    assert "kernel-rt-drivers-gpu" in carried["realtime"]
    assert {p.split("=", 1)[0] for p in carried["realtime"]} >= set(RT_TUNING)
    assert "realtime" in strip_plan("emt3-x86_64-realtime-industrial-raw", rt, parse_request(request), request, caps)
    asked = parse_request("real-time emt image with python3")
    assert "realtime" not in baggage(rt, asked, caps)  # asked for: not baggage
    plain = _template("emt3-x86_64-immutable-secureboot-raw")
    candidates = [("emt3-x86_64-realtime-industrial-raw", "", rt), ("emt3-x86_64-immutable-secureboot-raw", "", plain)]
    assert choose_base(candidates, parse_request(request), caps)[0][0] == "emt3-x86_64-immutable-secureboot-raw"


def test_leaving_real_time_out_resets_the_kernel_and_removes_its_tuning_and_says_so():
    rt = _template("debian13-x86_64-realtime-industrial-raw")
    assert any(p.split("=", 1)[0] in RT_TUNING for p in _params(rt))
    result = compose("debian server with postgresql", rt, strip_groups=["realtime"])
    kernel = result.data["systemConfig"]["kernel"]
    assert kernel["packages"] == ["linux-image-amd64"]
    left = _params(result.data)
    assert not [p for p in left if p.split("=", 1)[0] in RT_TUNING]
    assert "console=ttyS0,115200" in left  # the console is no tuning
    said = [c for c in result.changes if c.startswith("left out of the starting template")]
    assert any("kernel back to linux-image-amd64" in c and "kernel parameters isolcpus=" in c for c in said), said


def test_leaving_virtualization_out_removes_the_iommu_parameters_it_set():
    kvm = _template("debian13-x86_64-kvm-virtualization-host-raw")
    assert "intel_iommu=on" in _params(kvm)
    result = compose("debian server with postgresql", kvm, strip_groups=["virtualization"])
    assert not [p for p in _params(result.data) if p.split("=", 1)[0] in ("intel_iommu", "iommu")]
    assert any("kernel parameters intel_iommu=on" in c for c in result.changes), result.changes

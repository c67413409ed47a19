"""A unified kernel image asked for in words (server/composer/parse_system.py _uki, system_edits.py)."""

from __future__ import annotations

from pathlib import Path

import yaml
from image_composer_mcp.server.composer.compose import apply_instruction, compose
from image_composer_mcp.server.composer.request_parser import parse_request

LIBRARY = Path(__file__).resolve().parents[2] / "image-templates"


def _template(name: str) -> dict:
    return yaml.safe_load((LIBRARY / f"{name}.yml").read_text(encoding="utf-8"))


def test_uki_words_set_the_kernel_flag_and_the_bootloader_that_boots_it():
    for text in ("ubuntu 24.04 uki image", "debian 13 with a unified kernel image", "build it as a UKI"):
        spec = parse_request(text)
        assert spec.uki is True and spec.bootloader == "systemd-boot", text
        assert not spec.unparsed, (text, spec.unparsed)
    assert parse_request("no uki please").uki is False


def test_uki_with_grub_named_is_reported_not_set():
    spec = parse_request("debian with grub and a uki")
    assert spec.uki is None and spec.bootloader == "grub"
    assert any("systemd-boot" in n for n in spec.notes)


def test_a_grub_template_asked_for_a_uki_boots_it_with_systemd_boot_and_no_grub():
    result = compose("debian 13 with a unified kernel image", _template("debian13-x86_64-minimal-base-raw"))
    system = result.data["systemConfig"]
    assert system["kernel"]["uki"] is True
    assert system["bootloader"]["provider"] == "systemd-boot"
    assert not [p for p in system["packages"] if str(p).startswith(("grub", "shim"))]
    edited = apply_instruction(result.data, "turn off the uki")
    assert edited.data["systemConfig"]["kernel"]["uki"] is False

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from image_composer_mcp.server.core.yamlsafe import YamlError, load_mapping, parse_yaml
from image_composer_mcp.server.library.templates import content_hash, load_record, scan_files

from tests.conftest import REFERENCE_TEMPLATES, needs_reference, write_template


def test_content_hash_is_sha256_prefix():
    data = b"image:\n  name: x\n"
    assert content_hash(data) == hashlib.sha256(data).hexdigest()[:16]


def test_metadata_in_both_spellings(tmp_path: Path):
    (tmp_path / "adr.yml").write_text(
        "metadata:\n  useCase: industrial-iot\n  description: ADR style\n  keywords: [plc]\n"
        "  capabilities: [security, monitoring]\n  recommendedFor: [factory gateways]\n"
        "image: {name: adr}\ntarget: {os: ubuntu, dist: ubuntu24, arch: x86_64, imageType: raw}\n")
    (tmp_path / "up.yml").write_text(
        "metadata:\n  use_cases: [cloud deployment, virtual machine]\n  description: upstream style\n"
        "image: {name: up}\ntarget: {os: debian, dist: debian13, arch: aarch64, imageType: iso}\n")
    adr = load_record(tmp_path, tmp_path / "adr.yml")
    up = load_record(tmp_path, tmp_path / "up.yml")
    assert adr.use_case == "industrial-iot" and adr.capabilities == ["security", "monitoring"]
    assert adr.recommended_for == ["factory gateways"] and "plc" in adr.keywords
    assert up.use_cases == ["cloud deployment", "virtual machine"]
    assert "Use cases: industrial-iot" in adr.text and "Recommended for: factory gateways" in adr.text
    assert up.dist == "debian13" and up.arch == "aarch64" and up.image_type == "iso"


def test_keywords_inferred_without_metadata(tmp_path: Path):
    (tmp_path / "emt3-x86_64-edge-rt-initrd.yml").write_text(
        "image: {name: x}\ntarget: {os: edge-microvisor-toolkit, dist: emt3, arch: x86_64, imageType: img}\n"
        "systemConfig:\n  immutability: {enabled: true}\n  packages: [moby-engine, nginx, ros-jazzy-desktop,"
        " intel-dlstreamer, prometheus-node-exporter]\n  kernel: {version: '6.12', cmdline: 'isolcpus=2-3'}\n")
    rec = load_record(tmp_path, tmp_path / "emt3-x86_64-edge-rt-initrd.yml")
    assert not rec.has_metadata
    for word in ("edge", "real-time", "initrd", "container", "web-server", "robotics", "inference",
                 "monitoring", "immutable", "microvisor", "network-boot"):
        assert word in rec.keywords, word
    assert "Packages: moby-engine" in rec.text
    assert "image:" not in rec.text  # readable lines, never raw YAML


def test_non_templates_and_broken_files_are_rejected(tmp_path: Path):
    (tmp_path / "list.yml").write_text("- a\n- b\n")
    (tmp_path / "other.yml").write_text("foo: bar\n")
    (tmp_path / "broken.yml").write_text("image: [unclosed\n")
    with pytest.raises(YamlError, match="not a mapping"):
        load_record(tmp_path, tmp_path / "list.yml")
    with pytest.raises(ValueError, match="not an image template"):
        load_record(tmp_path, tmp_path / "other.yml")
    with pytest.raises(YamlError) as err:
        load_record(tmp_path, tmp_path / "broken.yml")
    assert err.value.line == 2


def test_scan_skips_hidden_and_file_overlay_dirs(tmp_path: Path):
    write_template(tmp_path, "a")
    (tmp_path / ".git").mkdir()
    write_template(tmp_path / ".git", "hidden")
    (tmp_path / "sub" / "files").mkdir(parents=True)
    write_template(tmp_path / "sub", "nested")
    write_template(tmp_path / "sub" / "files", "overlay")
    found = sorted(p.relative_to(tmp_path).as_posix() for _root, p, _fp in scan_files([tmp_path]))
    assert found == ["a.yml", "sub/nested.yml"]


def test_alias_bomb_and_deep_nesting_are_refused_quickly():
    bomb = "a: &a [x,x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 10) + "]\n" for i in range(8))
    with pytest.raises(YamlError, match="alias bomb"):
        parse_yaml(bomb)
    with pytest.raises(YamlError, match="nested"):
        parse_yaml("[" * 5000 + "]" * 5000)
    with pytest.raises(YamlError, match="nested"):
        parse_yaml("".join("  " * i + f"k{i}:\n" for i in range(200)) + "  " * 200 + "v: 1\n")


def test_safe_loader_refuses_python_objects_and_reports_positions():
    with pytest.raises(YamlError):
        parse_yaml("x: !!python/object/apply:os.system ['echo hi']\n")
    parsed = load_mapping("a:\n  b:\n    - 1\n    - 2\na2: 3\na2: 4\n")
    assert parsed.position(("a", "b", 1)) == (4, 7)
    assert parsed.duplicate_keys and parsed.duplicate_keys[0][0] == ("a2",)
    with pytest.raises(YamlError, match="over the"):
        parse_yaml("x" * 2_000_000)
    with pytest.raises(YamlError, match="NUL"):
        parse_yaml("a: b\x00")
    with pytest.raises(YamlError, match="UTF-8"):
        parse_yaml(b"\xff\xfe\x00garbage")


def test_every_reference_template_loads():
    needs_reference()
    records = [load_record(REFERENCE_TEMPLATES, p) for _r, p, _f in scan_files([REFERENCE_TEMPLATES])]
    assert len(records) == 48
    assert all(r.os and r.dist and r.arch and r.image_type for r in records)
    assert len({r.name for r in records}) == 48

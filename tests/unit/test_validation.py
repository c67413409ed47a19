"""Tests for server.validation: schema sync with upstream, semantic rules, hostile input."""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import random
import re
from pathlib import Path

import pytest
import yaml
from image_composer_mcp.server.knowledge.sizes import template_bytes
from image_composer_mcp.server.validation import upstream as upstream_compat
from image_composer_mcp.server.validation.report import Issue, ValidationReport
from image_composer_mcp.server.validation.validator import (
    MAX_BYTES,
    MAX_ISSUES,
    load_schema,
    validate_data,
    validate_text,
)
from jsonschema import Draft202012Validator

from tests.conftest import UEFI_PARTITIONS

SHARED = Path(__file__).resolve().parents[3] / "shared"
UPSTREAM = SHARED / "reference" / "os-image-composer"
TEMPLATES = UPSTREAM / "image-templates"
UPSTREAM_SCHEMA = UPSTREAM / "schema" / "os-image-template.schema.json"


def _reference_templates() -> list[Path]:
    return sorted(TEMPLATES.glob("*.yml")) if TEMPLATES.is_dir() else []


needs_shared = pytest.mark.skipif(
    not TEMPLATES.is_dir(), reason="reference corpus (/work/shared) not available"
)

# A small valid raw template; line numbers below refer to this text.
BASE = """\
image:
  name: demo
  version: "1.0.0"
target:
  os: ubuntu
  dist: ubuntu24
  arch: x86_64
  imageType: raw
disk:
  name: demo-disk
  size: 4GiB
  partitionTableType: gpt
  partitions:
""" + UEFI_PARTITIONS + """systemConfig:
  name: demo-system
  packages:
    - curl
    - openssh-server
"""
# Line numbers in BASE
L_ARCH, L_SIZE = 7, 11
L_P0_START, L_P0_END, L_P0_FS = 16, 17, 18
L_P1_TYPE, L_P1_START, L_P1_END, L_P1_MOUNT = 21, 22, 23, 25
L_PACKAGES, L_PKG0 = 28, 29


def _sub(text: str, old: str, new: str, count: int = 1) -> str:
    assert old in text, old
    return text.replace(old, new, count)


def _only(report: ValidationReport, code: str, severity: str = "error") -> Issue:
    pool = report.errors if severity == "error" else report.warnings
    found = [i for i in pool if i.code == code]
    assert len(found) == 1, (code, report.summary())
    return found[0]


def _codes(issues: list[Issue]) -> set[str]:
    return {i.code for i in issues}


# --------------------------------------------------------------------------- basics


def test_base_template_is_clean() -> None:
    report = validate_text(BASE)
    assert report.valid, report.summary()
    assert report.errors == [] and report.warnings == []
    assert report.data is not None and report.data["target"]["arch"] == "x86_64"


def test_report_to_dict_is_json() -> None:
    report = validate_text(_sub(BASE, "packages:", "pakages:"))
    out = report.to_dict()
    json.dumps(out)
    assert out["valid"] is False and out["error_count"] == 1
    assert out["errors"][0]["code"] == "schema.additionalProperties"
    assert set(out["errors"][0]) == {"path", "message", "line", "column", "hint", "code", "severity"}


def test_bytes_input_and_validate_data_agree() -> None:
    assert validate_text(BASE.encode()).valid
    data = yaml.safe_load(BASE)
    report = validate_data(data)
    assert report.valid
    bad = copy.deepcopy(data)
    bad["target"]["arch"] = "amd64"
    report = validate_data(bad)
    issue = _only(report, "schema.enum")
    assert issue.path == "$.target.arch" and issue.line is None and issue.column is None


# --------------------------------------------------------------------------- reference corpus


@needs_shared
def test_reference_corpus_has_48_templates() -> None:
    assert len(_reference_templates()) == 48


@needs_shared
@pytest.mark.parametrize("path", _reference_templates(), ids=lambda p: p.name)
def test_reference_template_has_no_errors(path: Path) -> None:
    report = validate_text(path.read_bytes(), base_dir=path.parent)
    assert report.valid, report.summary()
    assert report.errors == []


@needs_shared
def test_reference_placeholders_are_warnings() -> None:
    report = validate_text((TEMPLATES / "azl3-x86_64-edge-raw.yml").read_text())
    assert report.valid
    paths = {w.path for w in report.warnings if w.code == "placeholder"}
    assert "$.packageRepositories[0].url" in paths
    assert "$.packageRepositories[0].pkey" in paths
    assert "$.systemConfig.users[0].groups[0]" in paths


# --------------------------------------------------------------------------- schema sync with upstream

BUNDLED_SCHEMA = Path(__file__).resolve().parents[2] / "resources" / "os-image-template.schema.json"


def _upstream_validator() -> Draft202012Validator:
    """Upstream's UserTemplate from the reference copy in ../shared, independent of our loader."""
    schema = json.loads(UPSTREAM_SCHEMA.read_text())
    schema = {**schema, "$ref": "#/$defs/UserTemplate"}
    return Draft202012Validator(schema)


def _error_keys(validator: Draft202012Validator, doc: dict) -> set[tuple[tuple, str]]:
    return {(tuple(e.absolute_path), str(e.validator)) for e in validator.iter_errors(doc)}


@needs_shared
def test_bundled_schema_is_upstreams_file_byte_for_byte() -> None:
    assert BUNDLED_SCHEMA.read_bytes() == UPSTREAM_SCHEMA.read_bytes()


def test_bundled_schema_matches_its_recorded_source() -> None:
    source = upstream_compat.schema_source()
    assert hashlib.sha256(BUNDLED_SCHEMA.read_bytes()).hexdigest() == source["sha256"]
    assert source["path"] == "internal/config/schema/os-image-template.schema.json"
    assert re.fullmatch(r"[0-9a-f]{40}", source["commit"])
    # Used as is: our loader hands out exactly that document, and nothing widens it.
    assert load_schema() == json.loads(BUNDLED_SCHEMA.read_text())
    assert upstream_compat.schema_text() == BUNDLED_SCHEMA.read_text()
    metadata = load_schema()["$defs"]["Metadata"]
    assert set(metadata["properties"]) == {"description", "use_cases", "keywords"}
    assert metadata["additionalProperties"] is False


def _mutations() -> list[tuple[str, callable]]:
    def drop_version(d: dict) -> None:
        d["image"].pop("version", None)

    def bad_arch(d: dict) -> None:
        d["target"]["arch"] = "amd64"

    def bad_dist(d: dict) -> None:
        d["target"]["dist"] = "zz9"

    def unknown_key(d: dict) -> None:
        d.setdefault("systemConfig", {"name": "x"})["pakages"] = ["a"]

    def bad_package(d: dict) -> None:
        d.setdefault("systemConfig", {"name": "x"}).setdefault("packages", []).append("bad pkg>=1")

    def dup_package(d: dict) -> None:
        pk = d.setdefault("systemConfig", {"name": "x"}).setdefault("packages", [])
        pk += ["zz-dup", "zz-dup"]

    def secure_boot_off(d: dict) -> None:
        d.setdefault("systemConfig", {"name": "x"})["immutability"] = {
            "enabled": False,
            "secureBootDBKey": "a.key",
        }

    def int_start(d: dict) -> None:
        if d.get("disk", {}).get("partitions"):
            d["disk"]["partitions"][0]["start"] = 1

    def url_and_path(d: dict) -> None:
        d["packageRepositories"] = [{"codename": "x", "url": "https://a", "path": "/b", "pkey": "https://k"}]

    def bad_pkey(d: dict) -> None:
        d["packageRepositories"] = [{"codename": "x", "url": "https://a", "pkey": "nope"}]

    def bad_name(d: dict) -> None:
        d["image"]["name"] = "bad name!"

    def adr_metadata(d: dict) -> None:
        d["metadata"] = {"useCase": "edge", "capabilities": ["security"], "recommendedFor": ["kiosks"]}

    def adr_metadata_str(d: dict) -> None:
        d["metadata"] = {"description": "x", "recommendedFor": "kiosks"}

    def unknown_metadata(d: dict) -> None:
        d["metadata"] = {"nonsense": 1}

    def user_without_name(d: dict) -> None:
        d.setdefault("systemConfig", {"name": "x"})["users"] = [{"password": "$6$x$y"}]

    def kernel_uki_string(d: dict) -> None:
        d.setdefault("systemConfig", {"name": "x"}).setdefault("kernel", {})["uki"] = "yes"

    return [
        (f.__name__, f)
        for f in (
            drop_version,
            bad_arch,
            bad_dist,
            unknown_key,
            bad_package,
            dup_package,
            secure_boot_off,
            int_start,
            url_and_path,
            bad_pkey,
            bad_name,
            adr_metadata,
            adr_metadata_str,
            unknown_metadata,
            user_without_name,
            kernel_uki_string,
        )
    ]


@needs_shared
def test_verdict_agrees_with_upstream_on_corpus_and_mutations() -> None:
    """Same schema errors as upstream's file, and never valid where upstream refuses."""
    upstream = _upstream_validator()
    ours = upstream_compat.user_template_validator()
    compared = 0
    for path in _reference_templates():
        original = yaml.safe_load(path.read_text())
        docs = [("original", original)]
        for name, mutate in _mutations():
            doc = copy.deepcopy(original)
            mutate(doc)
            docs.append((name, doc))
        for name, doc in docs:
            where = f"{path.name}/{name}"
            up = _error_keys(upstream, doc)
            assert _error_keys(ours, doc) == up, where
            report = validate_data(doc)
            if up:
                assert not report.valid, where
            if name == "original":
                assert report.valid, where
            compared += 1
    assert compared == 48 * (1 + len(_mutations()))


@pytest.mark.parametrize(
    ("field", "value", "move"),
    [
        ("capabilities", ["security"], "move these words into metadata.keywords"),
        ("useCase", "edge", "move its value into metadata.use_cases"),
        ("recommendedFor", "kiosks", "move these phrases into metadata.use_cases"),
        ("recommendedFor", 3, "move these phrases into metadata.use_cases"),
    ],
)
def test_adr_metadata_is_refused_like_upstream_with_a_hint(field: str, value: object, move: str) -> None:
    text = BASE + f"metadata:\n  description: demo\n  {field}: {json.dumps(value)}\n"
    report = validate_text(text)
    issue = _only(report, "schema.additionalProperties")
    assert issue.path == f"$.metadata.{field}" and (issue.line, issue.column) == (33, 3)
    assert issue.message == f"metadata.{field} is not accepted by os-image-composer: {move}"
    assert "description, use_cases, keywords" in issue.hint
    assert not report.valid


def test_unknown_metadata_key_suggests_the_upstream_ones() -> None:
    report = validate_text(BASE + "metadata:\n  keyword: [edge]\n  author: me\n")
    by_path = {i.path: i for i in report.errors}
    assert "metadata.keywords" in by_path["$.metadata.keyword"].message
    assert "os-image-composer refuses it" in by_path["$.metadata.author"].message
    assert "description, use_cases, keywords" in by_path["$.metadata.author"].hint


def test_metadata_fields_typed() -> None:
    report = validate_text(BASE + "metadata:\n  description: 3\n  keywords: edge\n")
    by_path = {i.path: i for i in report.errors}
    assert by_path["$.metadata.description"].line == 32
    assert by_path["$.metadata.keywords"].code == "schema.type"
    assert "[edge]" in by_path["$.metadata.keywords"].hint


# --------------------------------------------------------------------------- schema error messages


def test_typo_key_points_at_key_and_suggests() -> None:
    report = validate_text(_sub(BASE, "  packages:", "  pakages:"))
    issue = _only(report, "schema.additionalProperties")
    assert issue.path == "$.systemConfig.pakages"
    assert (issue.line, issue.column) == (L_PACKAGES, 3)
    assert "Did you mean 'packages'?" in (issue.hint or "")


def test_typo_top_level_key() -> None:
    report = validate_text(_sub(BASE, "systemConfig:", "sytemConfig:"))
    issue = _only(report, "schema.additionalProperties")
    assert issue.path == "$.sytemConfig" and issue.line == 26 and issue.column == 1
    assert "'systemConfig'" in (issue.hint or "")


def test_enum_message_lists_allowed_values() -> None:
    issue = _only(validate_text(_sub(BASE, "arch: x86_64", "arch: amd64")), "schema.enum")
    assert issue.message == "target.arch is 'amd64'; allowed: x86_64, aarch64, armv7hl"
    assert (issue.path, issue.line, issue.column) == ("$.target.arch", L_ARCH, 9)
    assert "x86_64" in (issue.hint or "")


def test_dist_enum_names_the_os() -> None:
    issue = _only(validate_text(_sub(BASE, "dist: ubuntu24", "dist: ubuntu22")), "schema.enum")
    assert issue.path == "$.target.dist" and issue.line == 6
    assert "allowed for ubuntu: ubuntu24, ubuntu26" in issue.message


def test_number_version_hint_keeps_source_text() -> None:
    issue = _only(validate_text(_sub(BASE, 'version: "1.0.0"', "version: 1.10")), "schema.type")
    assert issue.path == "$.image.version" and issue.line == 3
    assert issue.hint == 'Quote it: "1.10".'


def test_unquoted_zero_end_is_a_type_error_like_upstream() -> None:
    issue = _only(validate_text(_sub(BASE, 'end: "0"', "end: 0")), "schema.type")
    assert (issue.path, issue.line) == ("$.disk.partitions[1].end", L_P1_END)
    assert issue.hint == 'Quote it: "0".'


def test_missing_required_keys() -> None:
    report = validate_text("image:\n  name: x\ntarget:\n  os: ubuntu\n")
    paths = {i.path: i for i in report.errors if i.code == "schema.required"}
    assert set(paths) == {"$.image.version", "$.target.dist", "$.target.arch", "$.target.imageType"}
    assert paths["$.image.version"].line == 2
    assert "x86_64" in (paths["$.target.arch"].hint or "")


def test_duplicate_package_is_error_naming_it() -> None:
    report = validate_text(_sub(BASE, "    - openssh-server\n", "    - openssh-server\n    - curl\n"))
    issue = _only(report, "schema.uniqueItems")
    assert issue.path == "$.systemConfig.packages[2]" and issue.line == 31
    assert "'curl'" in issue.message


def test_repository_alternatives_are_summarised() -> None:
    text = BASE + (
        "packageRepositories:\n"
        "  - codename: only-name\n"
        "  - codename: both\n    url: https://a.example/\n    path: /srv/repo\n    pkey: https://a.example/k\n"
        "  - codename: badkey\n    url: https://b.example/\n    pkey: not-a-key\n"
    )
    report = validate_text(text)
    by_code: dict[str, list[Issue]] = {}
    for issue in report.errors:
        by_code.setdefault(issue.code, []).append(issue)
    one_of = {i.path: i for i in by_code["schema.oneOf"]}
    assert "needs 'path' or 'url'" in one_of["$.packageRepositories[0]"].message
    assert "sets both path and url" in one_of["$.packageRepositories[1]"].message
    assert by_code["schema.anyOf"][0].message == "repository 'only-name' needs 'pkey' or 'pkeys'"
    pkey = by_code["schema.pkey"][0]
    assert pkey.path == "$.packageRepositories[2].pkey" and pkey.line == 39


def test_duplicate_yaml_key_is_an_error_like_upstreams_yaml_v3() -> None:
    # gopkg.in/yaml.v3 decodes with uniqueKeys on: "mapping key "name" already defined at line 2".
    report = validate_text(_sub(BASE, "  name: demo\n", "  name: demo\n  name: demo2\n"))
    assert not report.valid
    issue = _only(report, "yaml.duplicate_key")
    assert (issue.path, issue.line, issue.column) == ("$.image.name", 3, 3)
    assert "os-image-composer refuses" in issue.message


# --------------------------------------------------------------------------- semantic rules


def test_redhat_compatible_dist() -> None:
    issue = _only(
        validate_text(_sub(_sub(BASE, "os: ubuntu", "os: redhat-compatible-distro"), "ubuntu24", "el9")),
        "target.dist",
    )
    assert (issue.path, issue.line) == ("$.target.dist", 6)
    assert "el10" in issue.message


def test_no_default_config_for_aarch64_iso() -> None:
    text = "image: {name: x, version: '1'}\ntarget:\n  os: debian\n  dist: debian13\n  arch: aarch64\n  imageType: iso\n"
    report = validate_text(text)
    issue = _only(report, "target.no_defaults", "warning")
    assert (issue.path, issue.line) == ("$.target.arch", 5)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1MiB", 1 << 20),
        ("512M", 512 << 20),
        ("4GiB", 4 << 30),
        ("4G", 4 << 30),
        ("4GB", 4 * 10**9),
        ("513MB", 513 * 10**6),
        ("64KiB", 65536),
        ("8K", 8192),
        ("0", 0),
        (0, 0),
    ],
)
def test_template_bytes_accepts_upstream_forms(value: object, expected: int) -> None:
    assert template_bytes(value) == (expected, None)


@pytest.mark.parametrize(
    ("value", "hint_part"),
    [
        ("4 GiB", "remove the space"),
        ("4gib", "case-sensitive"),
        ("1.5GiB", "whole number"),
        ("512", "add a unit"),
        ("1TiB", "1024GiB"),
        ("12parsecs", "unknown unit"),
        ("", "digits"),
        ("-1MiB", "digits"),
    ],
)
def test_template_bytes_rejects_with_hint(value: str, hint_part: str) -> None:
    size, hint = template_bytes(value)
    assert size is None and hint_part in (hint or "")


def test_bad_sizes_reported_at_field() -> None:
    report = validate_text(_sub(_sub(BASE, "size: 4GiB", "size: 4gib"), "end: 513MiB", "end: 513 MiB"))
    disk = _only(report, "disk.size_format")
    assert (disk.path, disk.line) == ("$.disk.size", L_SIZE)
    part = _only(report, "partition.size_format")
    assert (part.path, part.line, part.column) == ("$.disk.partitions[0].end", L_P0_END, 12)
    assert part.hint == "remove the space: 513MiB"


def test_partition_overlap() -> None:
    issue = _only(validate_text(_sub(BASE, "start: 513MiB", "start: 400MiB")), "partition.overlap")
    assert (issue.path, issue.line) == ("$.disk.partitions[1].start", L_P1_START)
    assert "'rootfs' overlaps partition 'boot'" in issue.message


def test_partition_start_not_before_end() -> None:
    issue = _only(validate_text(_sub(BASE, "end: 513MiB", "end: 1MiB")), "partition.start_after_end")
    assert (issue.path, issue.line) == ("$.disk.partitions[0].end", L_P0_END)


def test_partition_beyond_disk_size() -> None:
    report = validate_text(_sub(BASE, "size: 4GiB", "size: 300MiB"))
    found = [(i.path, i.line) for i in report.errors if i.code == "partition.beyond_disk"]
    assert found == [("$.disk.partitions[0].end", L_P0_END), ("$.disk.partitions[1].start", L_P1_START)]
    assert "beyond disk.size 300MiB" in report.errors[0].message


def test_partition_start_inside_partition_table() -> None:
    issue = _only(validate_text(_sub(BASE, "start: 1MiB", "start: 1K")), "partition.start_in_table")
    assert (issue.path, issue.line) == ("$.disk.partitions[0].start", L_P0_START)


def test_grow_partition_must_be_last_and_single() -> None:
    report = validate_text(_sub(BASE, "end: 513MiB", 'end: "0"'))
    not_last = _only(report, "partition.grow_not_last")
    assert (not_last.path, not_last.line) == ("$.disk.partitions[0].end", L_P0_END)
    multiple = _only(report, "partition.multiple_grow")
    assert (multiple.path, multiple.line) == ("$.disk.partitions[1].end", L_P1_END)
    assert "partition.overlap" not in _codes(report.errors)


def test_duplicate_partition_id_and_mount_point() -> None:
    text = _sub(_sub(BASE, "- id: rootfs", "- id: boot"), "mountPoint: /\n", "mountPoint: /boot/efi/\n")
    report = validate_text(text)
    dup_id = _only(report, "partition.duplicate_id")
    assert (dup_id.path, dup_id.line) == ("$.disk.partitions[1].id", 20)
    dup_mount = _only(report, "partition.duplicate_mount")
    assert (dup_mount.path, dup_mount.line) == ("$.disk.partitions[1].mountPoint", L_P1_MOUNT)


def test_unsupported_and_missing_fs_type() -> None:
    report = validate_text(_sub(BASE, "fsType: ext4", "fsType: btrfs"))
    issue = _only(report, "partition.fs_type")
    assert (issue.path, issue.line) == ("$.disk.partitions[1].fsType", 24)
    report = validate_text(_sub(BASE, "      fsType: ext4\n", ""))
    issue = _only(report, "partition.fs_type")
    assert issue.path == "$.disk.partitions[1]" and issue.line == 20


def test_root_type_for_other_arch_is_warning() -> None:
    report = validate_text(_sub(BASE, "arch: x86_64", "arch: aarch64"))
    assert report.valid
    issue = _only(report, "partition.arch_mismatch", "warning")
    assert (issue.path, issue.line) == ("$.disk.partitions[1].type", L_P1_TYPE)
    assert "linux-root-arm64" in (issue.hint or "")


def test_root_guid_for_other_arch_is_warning() -> None:
    text = _sub(BASE, "type: linux-root-amd64", "typeUUID: b921b045-1df0-41c3-af44-4c6f280d3fae")
    issue = _only(validate_text(text), "partition.arch_mismatch", "warning")
    assert (issue.path, issue.line) == ("$.disk.partitions[1].typeUUID", L_P1_TYPE)


def test_type_and_type_uuid_disagree() -> None:
    text = _sub(
        BASE,
        "type: linux-root-amd64",
        "type: linux-root-amd64\n      typeUUID: B921B045-1DF0-41C3-AF44-4C6F280D3FAE",
    )
    issue = _only(validate_text(text), "partition.type_mismatch")
    assert (issue.path, issue.line) == ("$.disk.partitions[1].typeUUID", 22)
    assert "linux-root-arm64" in issue.message


def test_generic_linux_type_with_specific_guid_is_fine() -> None:
    text = _sub(
        BASE, "type: linux-root-amd64", "type: linux\n      typeUUID: 4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709"
    )
    report = validate_text(text)
    assert report.valid and not report.warnings, report.summary()


def test_bad_guid_and_unknown_type() -> None:
    report = validate_text(_sub(BASE, "type: linux-root-amd64", "type: rootfs\n      typeUUID: not-a-guid"))
    issue = _only(report, "partition.bad_guid")
    assert (issue.path, issue.line) == ("$.disk.partitions[1].typeUUID", 22)
    report = validate_text(_sub(BASE, "type: linux-root-amd64", "type: linux-rot-amd64"))
    warn = _only(report, "partition.unknown_type", "warning")
    assert (warn.path, warn.line) == ("$.disk.partitions[1].type", L_P1_TYPE)
    assert "'linux-root-amd64'" in (warn.hint or "")


def test_efi_without_esp() -> None:
    text = _sub(_sub(BASE, "type: esp", "type: linux"), "mountPoint: /boot/efi", "mountPoint: /boot")
    issue = _only(validate_text(text), "disk.esp_missing")
    assert (issue.path, issue.line, issue.column) == ("$.disk.partitions", 13, 3)


def test_esp_recognised_by_guid_and_legacy_needs_none() -> None:
    by_guid = _sub(BASE, "type: esp", "typeUUID: C12A7328-F81F-11D2-BA4B-00A0C93EC93B")
    assert validate_text(by_guid).valid
    legacy = _sub(
        _sub(BASE, "type: esp", "type: linux"),
        "  packages:",
        "  bootloader:\n    bootType: legacy\n    provider: grub\n  packages:",
    )
    report = validate_text(legacy)
    assert "disk.esp_missing" not in _codes(report.errors)
    warn = _only(report, "bootloader.no_bios_boot", "warning")
    assert (warn.path, warn.line) == ("$.systemConfig.bootloader.bootType", 29)


def test_esp_must_be_fat() -> None:
    issue = _only(validate_text(_sub(BASE, "fsType: fat32", "fsType: ext4")), "partition.esp_fs")
    assert (issue.path, issue.line) == ("$.disk.partitions[0].fsType", L_P0_FS)


def test_legacy_with_systemd_boot() -> None:
    text = _sub(
        BASE, "  packages:", "  bootloader:\n    bootType: legacy\n    provider: systemd-boot\n  packages:"
    )
    issue = _only(validate_text(text), "bootloader.legacy_systemd_boot")
    assert (issue.path, issue.line) == ("$.systemConfig.bootloader.provider", 30)


def test_raw_disk_without_root_or_size() -> None:
    report = validate_text(_sub(BASE, "      mountPoint: /\n", "      mountPoint: /data\n"))
    issue = _only(report, "disk.no_root")
    assert (issue.path, issue.line) == ("$.disk.partitions", 13)
    report = validate_text(_sub(BASE, "  size: 4GiB\n", ""))
    issue = _only(report, "disk.size_missing")
    assert (issue.path, issue.line) == ("$.disk", 9)


def test_disk_without_partitions_and_mbr_limit() -> None:
    text = BASE.split("  partitionTableType")[0] + "systemConfig:\n  name: s\n"
    warn = _only(validate_text(text), "disk.no_partitions", "warning")
    assert (warn.path, warn.line) == ("$.disk", 9)
    extra = "".join(
        f"    - id: p{i}\n      type: linux\n      start: {1000 + i}MiB\n      end: {1001 + i}MiB\n      fsType: ext4\n"
        for i in range(3)
    )
    text = _sub(_sub(BASE, "partitionTableType: gpt", "partitionTableType: mbr"), "systemConfig:", "")
    text = _sub(text, "    - id: rootfs", extra + "    - id: rootfs") + "systemConfig:\n  name: s\n"
    warn = _only(validate_text(text), "disk.mbr_limit", "warning")
    assert (warn.path, warn.line) == ("$.disk.partitions", 13)


SECURE = "  immutability:\n    enabled: {enabled}\n    secureBootDBKey: db.key\n    secureBootDBCrt: db.crt\n{cer}  packages:"


def test_secure_boot_keys_need_immutability() -> None:
    text = _sub(BASE, "  packages:", SECURE.format(enabled="false", cer="    secureBootDBCer: db.cer\n"))
    issue = _only(validate_text(text), "immutability.secure_boot_disabled")
    assert (issue.path, issue.line, issue.column) == ("$.systemConfig.immutability.enabled", 29, 14)


def test_secure_boot_needs_all_three_files() -> None:
    text = _sub(BASE, "  packages:", SECURE.format(enabled="true", cer=""))
    issue = _only(validate_text(text), "immutability.secure_boot_incomplete")
    assert issue.path == "$.systemConfig.immutability.secureBootDBCer" and issue.line == 29
    assert "secureBootDBCer" in issue.message


def test_secure_boot_with_legacy_boot() -> None:
    text = _sub(BASE, "  packages:", SECURE.format(enabled="true", cer="    secureBootDBCer: db.cer\n") + "")
    text = _sub(text, "  immutability:", "  bootloader:\n    bootType: legacy\n  immutability:")
    issue = _only(validate_text(text), "immutability.secure_boot_legacy")
    assert (issue.path, issue.line) == ("$.systemConfig.immutability.secureBootDBKey", 32)


def test_immutability_without_hash_partition_warns() -> None:
    text = _sub(BASE, "  packages:", "  immutability:\n    enabled: true\n  packages:")
    warn = _only(validate_text(text), "immutability.no_hash_partition", "warning")
    assert (warn.path, warn.line) == ("$.systemConfig.immutability.enabled", 29)
    with_hash = _sub(
        text,
        "    - id: rootfs",
        "    - id: roothashmap\n      type: linux\n      start: 513MiB\n"
        "      end: 1013MiB\n      fsType: ext4\n      mountPoint: none\n    - id: rootfs",
    )
    with_hash = _sub(with_hash, '      start: 513MiB\n      end: "0"', '      start: 1013MiB\n      end: "0"')
    report = validate_text(with_hash)
    assert report.valid and "immutability.no_hash_partition" not in _codes(report.warnings), report.summary()


def test_packages_for_wrong_arch() -> None:
    text = _sub(
        _sub(BASE, "arch: x86_64", "arch: aarch64"),
        "    - curl\n",
        "    - curl\n    - grub-efi-amd64-signed\n    - shim-x64\n    - qemu-system-x86\n",
    )
    text = _sub(text, "type: linux-root-amd64", "type: linux-root-arm64")
    report = validate_text(text)
    issues = [i for i in report.errors if i.code == "packages.wrong_arch"]
    assert [(i.path, i.line) for i in issues] == [
        ("$.systemConfig.packages[1]", 30),
        ("$.systemConfig.packages[2]", 31),
    ]
    assert issues[0].hint == "Use 'grub-efi-arm64-signed' for aarch64."
    # and the other way round, including kernel packages and rpm file names
    text = _sub(BASE, "    - curl\n", "    - curl\n    - grub2-efi-aa64\n") + (
        "  kernel:\n    packages:\n      - linux-image-arm64\n      - kernel-6.6.aarch64.rpm\n"
    )
    report = validate_text(text)
    paths = [(i.path, i.line) for i in report.errors if i.code == "packages.wrong_arch"]
    assert paths == [
        ("$.systemConfig.packages[1]", 30),
        ("$.systemConfig.kernel.packages[0]", 34),
        ("$.systemConfig.kernel.packages[1]", 35),
    ]


def test_package_duplicates_across_lists_warn() -> None:
    text = (
        BASE
        + "  kernel:\n    packages:\n      - curl\n      - linux-image-generic\n      - linux-image-generic\n"
    )
    report = validate_text(text)
    assert report.valid
    dups = [(w.path, w.line) for w in report.warnings if w.code == "packages.duplicate"]
    assert dups == [("$.systemConfig.kernel.packages[0]", 33), ("$.systemConfig.kernel.packages[2]", 35)]


def test_placeholder_warnings() -> None:
    text = BASE + "packageRepositories:\n  - codename: x\n    url: <URL>\n    pkey: <PUBLIC_KEY_URL>\n"
    report = validate_text(text)
    assert report.valid
    found = [(w.path, w.line) for w in report.warnings if w.code == "placeholder"]
    assert found == [("$.packageRepositories[0].url", 33), ("$.packageRepositories[0].pkey", 34)]


def test_plain_text_password_warns_hashed_does_not() -> None:
    users = "  users:\n    - name: admin\n      password: hunter2\n      hash_algo: sha512\n"
    report = validate_text(BASE + users)
    assert report.valid
    warn = _only(report, "users.plaintext_password", "warning")
    assert (warn.path, warn.line, warn.column) == ("$.systemConfig.users[0].password", 33, 17)
    assert "hash_algo" in warn.message and "openssl passwd -6" in (warn.hint or "")
    hashed = (
        BASE
        + "  users:\n    - name: admin\n      password: \"$6$salt$abcdef\"\n    - name: b\n      password: ''\n"
    )
    report = validate_text(hashed)
    assert report.valid and not report.warnings, report.summary()
    bogus = BASE + '  users:\n    - name: admin\n      password: "$ecret"\n    - name: admin\n'
    report = validate_text(bogus)
    assert _only(report, "users.bad_hash", "warning").line == 33
    assert _only(report, "users.duplicate", "warning").path == "$.systemConfig.users[1].name"


def test_additional_files(tmp_path: Path) -> None:
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "present.conf").write_text("x")
    text = BASE + (
        "  additionalFiles:\n"
        "    - local: files/present.conf\n      final: /etc/present.conf\n"
        "    - local: files/missing.conf\n      final: /etc/missing.conf\n"
        "    - local: files/present.conf\n      final: etc/relative.conf\n"
        "    - local: files/present.conf\n      dest: /etc/x\n"
    )
    report = validate_text(text, base_dir=tmp_path)
    assert report.valid
    missing = _only(report, "additional_files.missing", "warning")
    assert (missing.path, missing.line) == ("$.systemConfig.additionalFiles[1].local", 34)
    assert _only(report, "additional_files.final_relative", "warning").line == 37
    unknown = _only(report, "additional_files.unknown_key", "warning")
    assert (unknown.path, unknown.line) == ("$.systemConfig.additionalFiles[3].dest", 39)
    assert _only(report, "additional_files.incomplete", "warning").path == "$.systemConfig.additionalFiles[3]"
    # without base_dir the file system is not consulted
    assert "additional_files.missing" not in _codes(validate_text(text).warnings)


def test_configurations_entries() -> None:
    text = BASE + "  configurations:\n    - cmd: echo ok\n    - command: echo typo\n"
    report = validate_text(text)
    unknown = _only(report, "configurations.unknown_key", "warning")
    assert (unknown.path, unknown.line) == ("$.systemConfig.configurations[1].command", 33)
    assert _only(report, "configurations.no_cmd", "warning").path == "$.systemConfig.configurations[1]"


def test_repository_warnings() -> None:
    repo = '  - codename: r\n    url: https://r.example/\n    pkey: "[trusted=yes]"\n'
    text = (
        BASE
        + "packageRepositories:\n"
        + repo
        + repo
        + "  - codename: s\n    url: r.example\n    pkey: /k.gpg\n"
    )
    report = validate_text(text)
    assert report.valid
    dup = _only(report, "repo.duplicate", "warning")
    assert (dup.path, dup.line) == ("$.packageRepositories[1]", 35)
    assert {w.line for w in report.warnings if w.code == "repo.untrusted"} == {34, 37}
    assert _only(report, "repo.url", "warning").line == 39


def test_system_config_without_name_and_bad_hostname() -> None:
    text = _sub(BASE, "  name: demo-system\n", "  hostname: bad_host!\n")
    report = validate_text(text)
    assert _only(report, "system.name_missing", "warning").line == 26
    assert _only(report, "system.hostname", "warning").path == "$.systemConfig.hostname"


# --------------------------------------------------------------------------- hostile input


def _rejected(report: ValidationReport, code: str) -> Issue:
    assert report.valid is False and report.data is None
    assert len(report.errors) == 1, report.summary()
    issue = report.errors[0]
    assert issue.code == code, issue
    assert issue.message
    return issue


def test_yaml_syntax_error_has_position() -> None:
    issue = _rejected(validate_text("image:\n  name: x\n   version: 1\n"), "yaml.syntax")
    assert (issue.line, issue.column) == (3, 11)
    assert "mapping values are not allowed" in issue.message


def test_unterminated_quote() -> None:
    issue = _rejected(validate_text('image:\n  name: "x\n'), "yaml.syntax")
    assert issue.line == 3


def test_billion_laughs() -> None:
    lines = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    issue = _rejected(validate_text("\n".join(lines) + "\n"), "yaml.alias_bomb")
    assert issue.line is not None


def test_deep_flow_nesting() -> None:
    _rejected(validate_text("[" * 10_000 + "]" * 10_000), "yaml.too_deep")
    _rejected(validate_text("a: " + "{b: " * 10_000 + "1" + "}" * 10_000), "yaml.too_deep")


def test_deep_block_nesting() -> None:
    _rejected(validate_text("- " * 10_000 + "x\n"), "yaml.too_deep")
    block = "".join(" " * i + "k:\n" for i in range(1_000)) + " " * 1_000 + "v: 1\n"
    _rejected(validate_text(block), "yaml.too_deep")


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("- a\n- b\n", "yaml.not_mapping"),
        ("just a string\n", "yaml.not_mapping"),
        ("42", "yaml.not_mapping"),
        ("", "yaml.empty"),
        ("   \n\t\n  ", "yaml.empty"),
        (b"", "yaml.empty"),
        ("~\n", "yaml.empty"),
        ("a: 1\n---\nb: 2\n", "yaml.syntax"),
        ("x: !!python/object:os.system ls\n", "yaml.tag"),
        ("a: &a [*a]\n", "yaml.recursive_alias"),
    ],
)
def test_non_template_documents(text: str | bytes, code: str) -> None:
    _rejected(validate_text(text), code)


def test_size_limit() -> None:
    assert MAX_BYTES == 1024 * 1024
    issue = _rejected(validate_text("a: " + "x" * (5 * 1024 * 1024)), "yaml.too_large")
    assert "limit" in issue.message
    _rejected(validate_text(b" " * (5 * 1024 * 1024)), "yaml.too_large")
    _rejected(validate_text(BASE, max_bytes=100), "yaml.too_large")


def test_random_binary() -> None:
    rng = random.Random(1234)
    for _ in range(20):
        report = validate_text(rng.randbytes(rng.randint(1, 8192)))
        assert report.valid is False and report.errors
        assert report.errors[0].code.startswith("yaml.")


def test_nul_byte() -> None:
    issue = _rejected(validate_text("image:\n  name: a\x00b\n"), "yaml.binary")
    assert issue.line == 2
    _rejected(validate_text(b"image: \x00"), "yaml.binary")


def test_odd_yaml_types_do_not_crash() -> None:
    text = "image:\n  name: x\n  version: 2024-01-01\n1: 2\n~: 3\nblob: !!binary aGVsbG8=\ntarget: {os: ubuntu}\n"
    report = validate_text(text)
    assert report.valid is False
    json.dumps(report.to_dict())
    paths = {i.path for i in report.errors}
    assert {"$.image.version", '$["1"]', "$.null", "$.blob"} <= paths


def test_wrong_shapes_everywhere_do_not_crash(caplog: pytest.LogCaptureFixture) -> None:
    # A crashing rule is logged and skipped, so the log is where a crash would show.
    caplog.set_level(logging.ERROR, logger="image_composer_mcp.server.validation")
    shapes = [None, 1, "x", [], {}, [1, "a", None], {"a": [1]}, True]
    sections = ["image", "target", "disk", "systemConfig", "packageRepositories", "metadata"]
    base = yaml.safe_load(BASE)
    for section in sections:
        for shape in shapes:
            doc = copy.deepcopy(base)
            doc[section] = shape
            report = validate_data(doc)
            json.dumps(report.to_dict())
            assert all(i.code != "internal.error" for i in report.errors)
    for key in ("partitions", "size", "artifacts"):
        for shape in shapes:
            doc = copy.deepcopy(base)
            doc["disk"][key] = shape
            assert all(i.code != "internal.error" for i in validate_data(doc).errors)
    for key in ("start", "end", "type", "typeUUID", "flags", "fsType", "mountPoint", "id"):
        for shape in shapes:
            doc = copy.deepcopy(base)
            doc["disk"]["partitions"][0][key] = shape
            doc["systemConfig"]["users"] = [{"name": shape, "password": shape, "hash_algo": shape}, shape]
            doc["systemConfig"]["additionalFiles"] = [{"local": shape, "final": shape}, shape]
            doc["packageRepositories"] = [
                {"codename": shape, "url": shape, "pkey": shape, "allowPackages": shape}
            ]
            assert all(i.code != "internal.error" for i in validate_data(doc).errors)
    for key in (
        "packages",
        "users",
        "additionalFiles",
        "configurations",
        "kernel",
        "bootloader",
        "immutability",
    ):
        for shape in shapes:
            doc = copy.deepcopy(base)
            doc["systemConfig"][key] = shape
            assert all(i.code != "internal.error" for i in validate_data(doc).errors)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_issue_flood_is_truncated() -> None:
    text = BASE + "".join(f"junk{i}: 1\n" for i in range(MAX_ISSUES + 50))
    report = validate_text(text)
    assert len(report.errors) == MAX_ISSUES + 1
    last = report.errors[-1]
    assert last.code == "issues.truncated" and last.message == "50 more errors not shown"


def test_validate_data_non_mapping_and_cycles() -> None:
    assert validate_data([1, 2]).errors[0].code == "schema.type"  # type: ignore[arg-type]
    cyclic: dict = {}
    cyclic["image"] = cyclic
    report = validate_data(cyclic)
    assert report.valid is False and report.errors[0].code == "schema.too_deep"
    assert validate_text(None).valid is False  # type: ignore[arg-type]


# --------------------------------------------------------------------------- upstream's load and build checks


@pytest.mark.parametrize(
    ("value", "code", "part"),
    [
        ('"a\\x07b"', "string.control", "U+0007"),
        ('"gw\\u00a0one"', "string.control", "NO-BREAK SPACE"),
        ('"zero\\u200bwidth"', "string.control", "ZERO WIDTH SPACE"),
        ('"nul\\0byte"', "string.nul", "NUL character at character 4"),
        ('"' + "x" * 4097 + '"', "string.too_long", "4,097 characters long; os-image-composer accepts at most 4,096"),
    ],
)
def test_upstream_string_checks_are_errors(value: str, code: str, part: str) -> None:
    report = validate_text(_sub(BASE, "  name: demo-system\n", f"  name: demo-system\n  hostname: {value}\n"))
    issue = _only(report, code)
    assert issue.path == "$.systemConfig.hostname" and issue.line == 28
    assert part in issue.message and issue.hint
    assert not report.valid


def test_upstream_string_checks_allow_what_upstream_allows() -> None:
    long_ok = "x" * 4096
    text = _sub(BASE, "  name: demo-system\n",
                f'  name: demo-system\n  description: "tab\\there, new\\nline, é 日本 ✓"\n'
                f'  configurations:\n    - cmd: "{long_ok}"\n')
    report = validate_text(text)
    assert report.valid, report.summary()
    assert not {i.code for i in report.errors + report.warnings} & {"string.control", "string.too_long"}


def test_lone_surrogate_from_json_input_is_invalid_utf8() -> None:
    data = yaml.safe_load(BASE)
    data["systemConfig"]["description"] = "bad \ud800 text"
    issue = _only(validate_data(data), "string.encoding")
    assert issue.path == "$.systemConfig.description"


@pytest.mark.parametrize("word", ["yes", "on", "No", "off"])
def test_yaml11_booleans_are_text_for_upstream(word: str) -> None:
    # PyYAML reads these as booleans, os-image-composer's YAML 1.2 parser as text: a boolean field refuses them...
    report = validate_text(BASE + f"  users:\n    - name: ops\n      sudo: {word}\n")
    issue = _only(report, "schema.type")
    assert issue.path == "$.systemConfig.users[0].sudo" and issue.line == 33
    assert "YAML 1.2" in issue.hint and "true or false" in issue.hint
    # ...and a string field accepts them, as upstream does.
    ok = validate_text(BASE + f"  users:\n    - name: ops\n      sudo: true\n      shell: {word}\n")
    assert not [e for e in ok.errors if e.path.endswith(".shell")], ok.summary()


def test_yaml12_booleans_and_quoted_text_unchanged() -> None:
    report = validate_text(BASE + '  users:\n    - name: ops\n      sudo: True\n      shell: "yes"\n')
    assert report.valid, report.summary()
    assert report.data["systemConfig"]["users"][0] == {"name": "ops", "sudo": True, "shell": "yes"}


def test_timestamps_and_sexagesimals_stay_as_written() -> None:
    report = validate_text(_sub(BASE, "  name: demo-system\n",
                                "  name: demo-system\n  description: 2024-01-01 12:00:00\n  hostname: 1:30\n"))
    assert report.data["systemConfig"]["description"] == "2024-01-01 12:00:00"
    assert report.data["systemConfig"]["hostname"] == "1:30"
    assert not [e for e in report.errors if e.code == "schema.type"], report.summary()


def test_values_upstream_schema_allows_but_its_build_refuses() -> None:
    text = _sub(BASE, "  partitionTableType: gpt\n", "  partitionTableType: gpt\n  artifacts:\n"
                "    - type: raw\n      compression: bz2\n    - type: qcow2\n      compression: gzip\n")
    text = text + "  bootloader:\n    bootType: efi\n    provider: grub2\n"
    report = validate_text(text)
    by_path = {i.path: i for i in report.errors}
    assert by_path["$.disk.artifacts[0].compression"].code == "build.compression"
    assert by_path["$.disk.artifacts[1].compression"].hint == "Use gz."
    boot = by_path["$.systemConfig.bootloader.provider"]
    assert boot.code == "build.bootloader" and "grub" in boot.hint
    assert len(report.errors) == 3
    # grub, systemd-boot, gz, xz and zstd are what the build handles
    fine = text.replace("bz2", "xz").replace("gzip", "zstd").replace("grub2", "grub")
    assert validate_text(fine).valid

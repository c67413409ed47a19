"""The offline provider: request parsing, composition from a base template, refinement, YAML output."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from image_composer_mcp.server.composer.adherence import lets_in, unmet, want_from_spec
from image_composer_mcp.server.composer.answers import summarize
from image_composer_mcp.server.composer.base import strip_plan
from image_composer_mcp.server.composer.compose import apply_instruction, apply_spec, compose
from image_composer_mcp.server.composer.output import dump_yaml
from image_composer_mcp.server.composer.request_parser import parse_request
from image_composer_mcp.server.knowledge.loader import load_capabilities
from image_composer_mcp.server.knowledge.sizes import template_mib

from bench import reference_checkout
from tests.upstream_schema import refusals

REFERENCE = reference_checkout()
TEMPLATES = REFERENCE / "image-templates"


# --------------------------------------------------------------------------- helpers


def _validator():
    """Our validator when present; otherwise upstream's UserTemplate schema via jsonschema."""
    try:
        from image_composer_mcp.server.validation.validator import validate_data
    except ImportError:  # pragma: no cover - only before validation.py existed
        validate_data = None
    if validate_data is not None:

        def check(data: dict) -> list[str]:
            return [str(e) for e in validate_data(data).errors]

        return check
    schema_path = REFERENCE / "schema" / "os-image-template.schema.json"
    if not schema_path.is_file():
        pytest.skip("no validator and no upstream schema")
    import jsonschema

    schema = json.loads(schema_path.read_text())
    schema = {**schema, "$ref": "#/$defs/UserTemplate"}

    def check_schema(data: dict) -> list[str]:
        return [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(data)]

    return check_schema


def assert_valid(data: dict) -> None:
    errors = _validator()(data)
    assert not errors, "\n".join(errors)
    # os-image-composer's own schema file with plain jsonschema, independently of our validator.
    assert refusals(data) == [], refusals(data)
    # The YAML text we hand out must read back to the same data.
    assert yaml.safe_load(dump_yaml(data)) == data


def load(name: str) -> dict:
    path = TEMPLATES / name
    if not path.is_file():
        pytest.skip(f"reference template {name} not present (../shared missing)")
    return yaml.safe_load(path.read_text())


def packages(data: dict) -> list[str]:
    return list((data.get("systemConfig") or {}).get("packages") or [])


def kernel(data: dict) -> dict:
    return (data.get("systemConfig") or {}).get("kernel") or {}


def partition(data: dict, mount: str) -> dict | None:
    for part in (data.get("disk") or {}).get("partitions") or []:
        if part.get("mountPoint") == mount:
            return part
    return None


def mib(value: Any) -> int:
    text = str(value)
    for unit, factor in (("GiB", 1024), ("MiB", 1)):
        if text.endswith(unit):
            return int(text[: -len(unit)]) * factor
    raise AssertionError(f"unexpected size {value!r}")


def assert_geometry(data: dict) -> None:
    """Partitions are ordered, do not overlap and stay inside the disk."""
    disk = data.get("disk") or {}
    parts = disk.get("partitions") or []
    if not parts or "size" not in disk:
        return
    size = mib(disk["size"]) if str(disk["size"]).endswith(("GiB", "MiB")) else None
    cursor = 0
    for i, part in enumerate(parts):
        start = mib(part["start"])
        assert start >= cursor, f"partition {part['id']} overlaps the previous one"
        if str(part["end"]) == "0":
            assert i == len(parts) - 1, "only the last partition may grow to the end of the disk"
            cursor = size or start
        else:
            cursor = mib(part["end"])
            assert cursor > start
    if size is not None:
        assert cursor <= size


def changed_paths(before: Any, after: Any, path: str = "") -> set[str]:
    """Dotted paths whose values differ (lists compared whole)."""
    if isinstance(before, dict) and isinstance(after, dict):
        out: set[str] = set()
        for key in set(before) | set(after):
            sub = f"{path}.{key}" if path else str(key)
            if key not in before or key not in after:
                out.add(sub)
            else:
                out |= changed_paths(before[key], after[key], sub)
        return out
    return set() if before == after else {path}


# --------------------------------------------------------------------------- inline bases (always run)

UBUNTU_BASE: dict = {
    "image": {"name": "minimal-os-image-ubuntu", "version": "24.04"},
    "target": {"os": "ubuntu", "dist": "ubuntu24", "arch": "x86_64", "imageType": "raw"},
    "disk": {
        "name": "Minimal_Raw",
        "artifacts": [{"type": "raw", "compression": "gz"}],
        "size": "4GiB",
        "partitionTableType": "gpt",
        "partitions": [
            {"id": "boot", "type": "esp", "flags": ["esp", "boot"], "start": "1MiB", "end": "513MiB",
             "fsType": "fat32", "mountPoint": "/boot/efi", "mountOptions": "umask=0077"},
            {"id": "rootfs", "type": "linux-root-amd64", "start": "513MiB", "end": "0", "fsType": "ext4",
             "mountPoint": "/", "mountOptions": "defaults"},
        ],
    },
    "systemConfig": {
        "name": "Minimal_Raw",
        "description": "Default yml configuration for raw image",
        "bootloader": {"bootType": "efi", "provider": "grub"},
        "immutability": {"enabled": False},
        "packages": ["ubuntu-minimal", "grub-efi-amd64-signed", "grub2-common", "grub-pc-bin", "grub-efi-amd64",
                     "grub-efi-amd64-bin", "systemd", "openssh-server", "vim", "systemd-resolved"],
        "kernel": {"version": "6.17", "cmdline": "console=ttyS0,115200 console=tty0 loglevel=7",
                   "packages": ["linux-image-generic-hwe-24.04"]},
    },
}  # fmt: skip

AZL_BASE: dict = {
    "image": {"name": "azl3-x86_64-edge", "version": "1.0.0"},
    "target": {"os": "azure-linux", "dist": "azl3", "arch": "x86_64", "imageType": "raw"},
    "systemConfig": {
        "name": "edge",
        "description": "Default yml configuration for edge image",
        "immutability": {"enabled": True},
        "users": [{"name": "testuser", "hash_algo": "sha512"}],
        "packages": ["cloud-init", "rsyslog"],
        "kernel": {"version": "6.12", "cmdline": "console=ttyS0,115200 console=tty0 loglevel=7"},
    },
}


# --------------------------------------------------------------------------- knowledge


def test_knowledge_families_groups_and_aliases() -> None:
    caps = load_capabilities()
    assert load_capabilities() is caps  # cached
    assert caps.family_of("azl3") == "azure-linux"
    assert caps.family_of("ubuntu26") == "ubuntu"
    assert caps.family_of("Azure Linux") == "azure-linux"
    assert caps.family_of("centos stream") == "redhat-compatible-distro"
    assert caps.family_of("windows") is None
    assert caps.group_for_word("Docker") == "containers"
    assert caps.group_for_word("node exporter") == "monitoring"
    assert caps.group_for_word("real-time") == caps.group_for_word("real time") == "realtime"
    assert caps.packages_for("containers", "ubuntu24")[0] == "docker.io"
    assert "moby-engine" in caps.packages_for("containers", "azl3")
    assert "podman" in caps.packages_for("containers", "el10")
    assert caps.packages_for("ros2", "azl3") == []
    assert "prometheus-node-exporter" in caps.packages_for("monitoring", "debian")
    assert {"docker", "docker.io", "docker-ce", "moby-engine"} <= caps.aliases("docker.io")
    assert "podman" not in caps.aliases("docker.io")  # a substitute, not the same software
    assert caps.translate_package("docker-ce", "azl3") == "moby-engine"
    assert caps.translate_package("docker.io", "el10") == "podman"
    assert caps.translate_package("curl", "emt3") == "curl"
    assert caps.translate_package("kubectl", "azl3") == "kubernetes-client"
    assert caps.translate_package("ddrescue", "ubuntu24") == "gddrescue"  # Debian's ddrescue was another tool
    assert caps.translate_package("locales", "el10") == "glibc-locale-source"
    assert caps.translate_package("google-authenticator", "debian13") == "libpam-google-authenticator"
    assert caps.rename_for_arch("grub-efi-amd64-bin", "deb", "aarch64") == "grub-efi-arm64-bin"
    assert caps.rename_for_arch("grub-efi-arm64-bin", "deb", "x86_64") == "grub-efi-amd64-bin"
    assert caps.rename_for_arch("shim-x64", "rpm", "aarch64") == "shim-aa64"
    assert caps.rename_for_arch("grub-pc-bin", "deb", "aarch64") is None
    assert caps.partition_types["linux-root-arm64"] == "b921b045-1df0-41c3-af44-4c6f280d3fae"
    assert caps.kernel_packages("debian13", "aarch64") == ["linux-image-arm64"]
    assert caps.kernel_packages("debian13", "x86_64", realtime=True) == ["linux-image-rt-amd64"]


@pytest.mark.skipif(not TEMPLATES.is_dir(), reason="../shared missing")
def test_knowledge_agrees_with_the_reference_corpus() -> None:
    """Root partition types and kernel packages the knowledge names are the ones upstream uses."""
    caps = load_capabilities()
    for path in TEMPLATES.glob("*.yml"):
        data = yaml.safe_load(path.read_text())
        arch = data["target"]["arch"]
        for part in (data.get("disk") or {}).get("partitions") or []:
            # ubuntu24-aarch64-server-cloud.yml is an upstream sample that keeps an amd64 root type.
            if part.get("mountPoint") == "/" and path.name != "ubuntu24-aarch64-server-cloud.yml":
                assert part["type"] == caps.root_type(arch), path.name
            uuid = str(part.get("typeUUID", "")).lower()
            if uuid:
                assert uuid in caps.partition_types.values(), (path.name, uuid)
    default = (
        REFERENCE
        / "osv"
        / "ubuntu"
        / "ubuntu24"
        / "imageconfigs"
        / "defaultconfigs"
        / "default-raw-x86_64.yml"
    )
    if default.is_file():
        kernel_pkgs = yaml.safe_load(default.read_text())["systemConfig"]["kernel"]["packages"]
        assert caps.kernel_packages("ubuntu24", "x86_64") == kernel_pkgs


# --------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    "text",
    [
        "what packages are included?",
        "What is the disk layout?",
        "explain this template",
        "summarize",
        "which kernel does it use?",
        "does it have docker?",
        "how big is the disk?",
        "show me the users",
        "list the partitions",
        "is immutability enabled?",
        "docker?",
    ],
)
def test_questions_are_not_edits(text: str) -> None:
    assert parse_request(text).is_question
    result = apply_instruction(UBUNTU_BASE, text)
    assert result.data == UBUNTU_BASE
    assert result.changes == []


@pytest.mark.parametrize(
    "text",
    [
        "can you add docker?",
        "could you please remove vim?",
        "add docker",
        "change disk size to 8GiB",
        "without vim",
    ],
)
def test_polite_and_plain_edits_are_not_questions(text: str) -> None:
    assert not parse_request(text).is_question


def test_parse_full_request() -> None:
    spec = parse_request(
        "ubuntu 24.04 edge image for arm64 with docker and monitoring, without vim, 8GiB disk, "
        "a separate /data partition of 4GiB, hostname edge-01, kernel 6.12, add isolcpus=2,3 to the kernel "
        "cmdline, add user ops with sudo, immutable, qcow2 output"
    )
    assert (spec.os, spec.dist, spec.arch) == ("ubuntu", "ubuntu24", "aarch64")
    assert spec.add_groups == ["containers", "monitoring"]
    assert spec.remove_packages == ["vim"]
    assert spec.disk_size == "8GiB"
    assert spec.partitions == [
        {"action": "add", "mountPoint": "/data", "size": "4GiB", "fsType": None, "fill": False}
    ]
    assert spec.hostname == "edge-01"
    assert spec.kernel_version == "6.12"
    assert spec.kernel_cmdline_append == ["isolcpus=2,3"]
    assert spec.users == [{"action": "add", "name": "ops", "sudo": True}]
    assert spec.immutability is True
    assert spec.artifacts == ["qcow2"]
    assert "edge" in spec.use_cases
    assert spec.unparsed == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("remove vim", {"remove_packages": ["vim"]}),
        ("without docker", {"remove_groups": ["containers"]}),
        ("add tcpdump", {"add_packages": ["tcpdump"]}),  # a real package name wins over its group
        ("install nginx, htop and jq", {"add_packages": ["nginx", "htop", "jq"]}),
        ("replace vim with nano", {"add_packages": ["nano"], "remove_packages": ["vim"]}),
        ("use podman instead of docker", {"add_packages": ["podman"], "remove_groups": ["containers"]}),
        ("switch from ubuntu to debian 13", {"os": "debian", "dist": "debian13"}),
        ("make it an aarch64 image", {"arch": "aarch64"}),
        ("convert to iso", {"image_type": "iso"}),
        ("disable immutability", {"immutability": False}),
        ("make it mutable", {"immutability": False}),
        ("enable secure boot", {"secure_boot": True}),
        ("set kernel cmdline to 'console=ttyS0 quiet'", {"kernel_cmdline": "console=ttyS0 quiet"}),
        ("remove quiet from the kernel command line", {"kernel_cmdline_remove": ["quiet"]}),
        ("increase the disk by 2GiB", {"disk_size_delta": "+2GiB"}),
        (
            "make the root partition 6GiB",
            {"partitions": [{"action": "resize", "mountPoint": "/", "size": "6GiB"}]},
        ),
        ("remove the /opt partition", {"partitions": [{"action": "remove", "mountPoint": "/opt"}]}),
        ("delete user testuser", {"users": [{"action": "remove", "name": "testuser"}]}),
        ("use systemd-boot", {"bootloader": "systemd-boot"}),
        ("rename the image to factory-gw", {"name": "factory-gw"}),
        ("output qcow2 instead of vhdx", {"artifacts": ["qcow2"], "remove_artifacts": ["vhdx"]}),
        ("I don't want vim or nano", {"remove_packages": ["vim", "nano"], "add_packages": []}),
        ("do not install vim", {"remove_packages": ["vim"], "is_question": False}),
        # a vendor stack the archives lack: said (spec.notes), neither added nor reported as not understood
        ("add the nvidia driver", {"add_packages": [], "unparsed": [], "add_groups": []}),
        ("edge image with k3s and docker, 32GiB", {"disk_size": "32GiB", "add_groups": ["containers"]}),
        (
            "make the /data partition xfs and 10GiB",
            {"partitions": [{"action": "resize", "mountPoint": "/data", "size": "10GiB", "fsType": "xfs"}]},
        ),
        (
            "give /var its own 4GiB partition",
            {
                "partitions": [
                    {"action": "add", "mountPoint": "/var", "size": "4GiB", "fsType": None, "fill": False}
                ]
            },
        ),
        ("compress the image with xz", {"artifact_compression": "xz", "add_packages": []}),
        ("turn off immutability and secure boot", {"immutability": False, "secure_boot": False}),
        ("no desktop", {"remove_groups": ["desktop"], "use_cases": []}),
        (
            "add user ops with sudo, add intel_iommu=on to the kernel cmdline",
            {
                "kernel_cmdline_append": ["intel_iommu=on"],
                "users": [{"action": "add", "name": "ops", "sudo": True}],
            },
        ),
        (
            "add isolcpus=2,3 and nohz_full=2,3 to the kernel command line",
            {"kernel_cmdline_append": ["isolcpus=2,3", "nohz_full=2,3"]},
        ),
    ],
)
def test_parse_instruction(text: str, expected: dict) -> None:
    spec = parse_request(text).to_dict()
    for key, value in expected.items():
        assert spec[key] == value, (key, spec)


def test_unknown_words_are_reported_not_invented() -> None:
    spec = parse_request("image with nginx and frobnicator")
    assert spec.add_packages == ["nginx"]
    assert spec.unparsed == ["frobnicator"]
    assert parse_request("image with frobnicator", known_packages=["frobnicator"]).add_packages == [
        "frobnicator"
    ]


def test_plaintext_password_is_never_stored() -> None:
    result = apply_instruction(UBUNTU_BASE, "add user ops with sudo and password hunter2")
    users = result.data["systemConfig"]["users"]
    assert users == [{"name": "ops", "sudo": True}]
    assert "hunter2" not in result.yaml
    assert any("password" in c for c in result.changes)


# --------------------------------------------------------------------------- compose: one table over all families

# (base template, request, expectations). Expectation keys: os, dist, arch, type, has (packages present),
# lacks (absent), size, parts ({mount: size or None}), host, kver, cmdline (substrings), users ({name: sudo}),
# immutable, artifacts, kernel (kernel packages), repo (url substring).
COMPOSE_CASES: list[tuple[str, str, dict]] = [
    ("ubuntu24-x86_64-minimal-raw.yml",
     "ubuntu 24.04 minimal raw image with ssh, cloud-init and a 2GiB /data partition, hostname node1",
     {"os": "ubuntu", "dist": "ubuntu24", "type": "raw", "has": ["openssh-server", "cloud-init"],
      "parts": {"/data": "2GiB"}, "host": "node1"}),
    ("ubuntu24-x86_64-edge-raw.yml", "ubuntu edge image with docker and monitoring, 8GiB disk, hostname edge-01",
     {"dist": "ubuntu24", "has": ["docker.io", "prometheus-node-exporter"], "size": "8GiB", "host": "edge-01",
      "immutable": True}),
    ("ubuntu24-x86_64-edge-raw.yml", "ubuntu edge image with ros2 and monitoring",
     {"has": ["ros-jazzy-ros-base", "sysstat"], "repo": "packages.ros.org"}),
    ("ubuntu26-x86_64-minimal-raw.yml", "ubuntu 26.04 arm64 raw image with docker, 8GiB disk",
     {"dist": "ubuntu26", "arch": "aarch64", "has": ["docker.io", "grub-efi-arm64"], "lacks": ["grub-pc-bin"],
      "size": "8GiB", "root_type": "linux-root-arm64"}),
    ("ubuntu24-x86_64-minimal-raw.yml", "ubuntu 24.04 real-time image with kernel cmdline isolcpus=2,3",
     {"has": ["rt-tests"], "cmdline": ["isolcpus=2,3", "preempt=full"]}),
    ("ubuntu24-server-cloud-amd64.yml", "ubuntu cloud server image for arm64 with secure boot and immutability",
     {"arch": "aarch64", "immutable": True, "secure_boot": True, "root_type": "linux-root-arm64",
      "lacks": ["grub-pc"], "kernel": ["linux-image-generic-hwe-24.04"]}),
    ("debian13-x86_64-minimal-raw.yml",
     "debian 13 real-time image with kernel cmdline isolcpus=2,3 and user ops with sudo",
     {"os": "debian", "dist": "debian13", "has": ["rt-tests"], "kernel": ["linux-image-rt-amd64"],
      "cmdline": ["isolcpus=2,3"], "users": {"ops": True}}),
    ("debian13-aarch64-minimal-raw.yml", "debian trixie arm64 image without vim, with monitoring and qcow2 output",
     {"arch": "aarch64", "lacks": ["vim"], "has": ["prometheus-node-exporter"], "artifacts": ["qcow2"]}),
    ("debian13-x86_64-minimal-iso.yml", "debian 13 desktop iso with virtualization",
     {"type": "iso", "has": ["xfce4", "libvirt-daemon-system", "qemu-system-x86"]}),
    ("ubuntu24-x86_64-minimal-raw.yml", "debian 13 image with docker",
     {"os": "debian", "dist": "debian13", "has": ["docker.io", "docker-compose"], "lacks": ["ubuntu-minimal"],
      "kernel": ["linux-image-amd64"], "kver": "6.12.74"}),
    ("elxr12-x86_64-minimal-raw.yml", "elxr cloud raw image with docker-ce and nginx, 16GiB disk",
     {"os": "wind-river-elxr", "dist": "elxr12", "has": ["docker.io", "nginx"], "lacks": ["docker-ce"],
      "size": "16GiB"}),
    ("elxr12-x86_64-edge-raw.yml", "eLxr 12 edge image with security hardening, hostname gw",
     {"has": ["auditd", "apparmor"], "host": "gw", "immutable": True}),
    ("elxr12-aarch64-minimal-raw.yml", "elxr12 arm64 image with ssh and a 1GiB swap partition",
     {"arch": "aarch64", "has": ["openssh-server"], "parts": {"none": "1GiB"}}),
    ("azl3-x86_64-minimal-raw.yml",
     "azure linux 3 image with docker and monitoring, 8GiB disk, separate /var/log partition of 2GiB",
     {"os": "azure-linux", "dist": "azl3", "has": ["moby-engine", "moby-cli", "prometheus-node-exporter"],
      "lacks": ["docker.io"], "size": "8GiB", "parts": {"/var/log": "2GiB"}}),
    ("azl3-x86_64-minimal-raw.yml",
     "azure linux 3 edge image with docker, 8GiB disk, a separate /data partition of 2GiB, hostname gw-01, "
     "add user ops with sudo, add intel_iommu=on to the kernel cmdline, qcow2 output",
     {"has": ["moby-engine"], "size": "8GiB", "parts": {"/data": "2GiB"}, "host": "gw-01", "users": {"ops": True},
      "cmdline": ["intel_iommu=on"], "no_cmdline": ["sudo", "ops"], "artifacts": ["qcow2"]}),
    ("azl3-x86_64-edge-raw.yml", "azl3 arm64 edge image with ssh and cloud-init",
     {"arch": "aarch64", "has": ["openssh-server", "cloud-init"]}),
    ("debian13-x86_64-minimal-raw.yml", "azure linux 3 image with docker and monitoring",
     {"os": "azure-linux", "dist": "azl3", "has": ["moby-engine", "sysstat"], "lacks": ["apt-utils", "vim-tiny"],
      "kernel": ["kernel"]}),
    ("azl3-x86_64-minimal-raw.yml", "azure linux image with a real-time kernel, kernel version 6.6",
     {"kernel": ["kernel-rt"], "kver": "6.6"}),
    ("emt3-x86_64-minimal-raw.yml", "emt3 real-time image with a 2GiB /data partition and kernel 6.12",
     {"os": "edge-microvisor-toolkit", "dist": "emt3", "kernel": ["kernel-rt-drivers-gpu"],
      "parts": {"/data": "2GiB"}, "kver": "6.12"}),
    ("emt3-x86_64-edge-raw.yml", "edge microvisor toolkit image without docker, with ai inference",
     {"lacks": ["moby-engine", "docker-cli", "docker-compose"], "has": ["openvino-2025.3.0"],
      "repo": "yum.repos.intel.com"}),
    ("emt3-x86_64-emf-raw.yml", "emt3 image with monitoring and user admin with sudo, immutable",
     {"has": ["sysstat"], "users": {"admin": True}, "immutable": True, "parts": {"none": None}}),
    ("rcd10-x86_64-minimal-raw.yml", "el10 image with docker and security hardening, 16GB disk",
     {"os": "redhat-compatible-distro", "dist": "el10", "has": ["podman", "audit", "firewalld"],
      "lacks": ["docker.io", "moby-engine"], "size": "16GiB"}),
    ("rcd10-x86_64-minimal-raw.yml", "centos stream 10 desktop image with virtualization for aarch64",
     {"arch": "aarch64", "has": ["gnome-shell", "qemu-kvm", "libvirt"], "root_type": "linux-root-arm64"}),
    ("rcd10-x86_64-dlstreamer.yml", "el10 video analytics image with hostname cam-01 and qcow2 output",
     {"has": ["openvino-2025.3.0"], "host": "cam-01", "artifacts": ["qcow2"]}),
    ("ubuntu24-x86_64-dlstreamer.yml", "el10 ai inference image",
     {"os": "redhat-compatible-distro", "has": ["intel-dlstreamer-2025.2.0"], "lacks": ["ubuntu-minimal"],
      "kernel": ["kernel"], "repo": "yum.repos.intel.com", "no_repo": "apt.repos.intel.com"}),
    ("azl3-x86_64-minimal-raw.yml", "ubuntu 24.04 image with docker",
     {"os": "ubuntu", "has": ["docker.io"], "name_has": "ubuntu24"}),
    ("ubuntu24-x86_64-robotics-jazzy-raw.yml", "debian 13 robotics image",
     {"dist": "debian13", "lacks": ["ubuntu-desktop-minimal"], "has": ["xfce4"], "no_repo": "packages.ros.org"}),
]  # fmt: skip


def _check_expectations(data: dict, expect: dict) -> None:
    # The facts a request states are judged by the run-time check (server/composer/adherence.py); what follows
    # it is the composer's own detail (partition sizes, kernel lists, sudo, repositories, names).
    want = {key: expect[key] for key in ("os", "dist", "arch", "type", "has", "lacks", "size", "cmdline",
                                         "immutable") if key in expect}
    want.update({"hostname": expect["host"]} if "host" in expect else {})
    want.update({"artifact": expect["artifacts"]} if "artifacts" in expect else {})
    want.update({"user": list(expect["users"])} if "users" in expect else {})
    want.update({"mount": list(expect["parts"])} if "parts" in expect else {})
    assert unmet(data, want) == [], unmet(data, want)
    if "size" in expect:
        assert data["disk"]["size"] == expect["size"]
    for mount, size in expect.get("parts", {}).items():
        part = partition(data, mount)
        if size:
            assert mib(part["end"]) - mib(part["start"]) == mib(size)
    if "kver" in expect:
        assert kernel(data)["version"] == expect["kver"]
    for piece in expect.get("no_cmdline", []):
        assert piece not in kernel(data).get("cmdline", "").split()
    if "kernel" in expect:
        assert kernel(data)["packages"] == expect["kernel"]
    for name, sudo in expect.get("users", {}).items():
        user = next(u for u in data["systemConfig"]["users"] if u["name"] == name)
        assert user.get("sudo", False) is sudo
        assert "password" not in user
    if expect.get("secure_boot"):
        assert data["systemConfig"]["immutability"]["secureBootDBKey"]
    if "root_type" in expect:
        assert partition(data, "/")["type"] == expect["root_type"]
    urls = " ".join(str(r.get("url")) for r in data.get("packageRepositories") or [])
    if "repo" in expect:
        assert expect["repo"] in urls
    if "no_repo" in expect:
        assert expect["no_repo"] not in urls
    if "name_has" in expect:
        assert expect["name_has"] in data["image"]["name"]


@pytest.mark.parametrize(
    ("base", "request_text", "expect"), COMPOSE_CASES, ids=[c[1][:48] for c in COMPOSE_CASES]
)
def test_compose_applies_every_constraint(base: str, request_text: str, expect: dict) -> None:
    source = load(base)
    pristine = copy.deepcopy(source)
    result = compose(request_text, source, base_file=base)
    assert source == pristine, "compose must not modify its base"
    assert result.unhandled == [], result.unhandled
    assert result.changes and result.changes[0] == f"started from {base}"
    assert_valid(result.data)
    assert_geometry(result.data)
    _check_expectations(result.data, expect)
    # A fitting name and searchable metadata.
    name = result.data["image"]["name"]
    assert name.startswith(f"{result.data['target']['dist']}-{result.data['target']['arch']}-")
    assert name.endswith(result.data["target"]["imageType"])
    meta = result.data["metadata"]
    assert meta["description"] and meta["use_cases"] and result.data["target"]["dist"] in meta["keywords"]


def test_compose_families_are_all_covered() -> None:
    caps = load_capabilities()
    seen = set()
    for _base, text, expect in COMPOSE_CASES:
        spec = parse_request(text)
        seen.add(expect.get("os") or spec.os)
    assert set(caps.families) <= seen
    assert len(COMPOSE_CASES) >= 24


@pytest.mark.parametrize("base", [UBUNTU_BASE, AZL_BASE], ids=["ubuntu-inline", "azl3-inline"])
def test_compose_from_inline_bases(base: dict) -> None:
    result = compose(
        "edge image with docker, monitoring and ssh, without vim, 8GiB disk, hostname gw-1, "
        "add user ops with sudo, qcow2 output",
        base,
    )
    assert result.unhandled == []
    assert_valid(result.data)
    assert_geometry(result.data)
    pkgs = set(packages(result.data))
    family = result.data["target"]["os"]
    docker = "docker.io" if family == "ubuntu" else "moby-engine"
    assert {docker, "openssh-server"} <= pkgs
    assert "vim" not in pkgs
    assert result.data["disk"]["size"] == "8GiB"
    assert result.data["systemConfig"]["hostname"] == "gw-1"
    assert "qcow2" in [a["type"] for a in result.data["disk"]["artifacts"]]
    assert result.data["image"]["name"] == result.data["systemConfig"]["name"] == result.data["disk"]["name"]


def test_compose_explicit_arguments_override_the_text() -> None:
    result = compose("minimal image with docker", UBUNTU_BASE, dist="azl3", arch="aarch64", image_type="raw")
    assert result.data["target"] == {
        "os": "azure-linux",
        "dist": "azl3",
        "arch": "aarch64",
        "imageType": "raw",
    }
    assert "moby-engine" in packages(result.data)
    assert not [p for p in packages(result.data) if p.startswith(("grub-efi-amd64", "ubuntu-"))]
    assert partition(result.data, "/")["type"] == "linux-root-arm64"
    assert_valid(result.data)


def test_compose_reports_what_it_cannot_do() -> None:
    result = compose("azure linux image with ros2 and frobnicator", AZL_BASE)
    assert any("ros2" in u for u in result.unhandled)
    assert "frobnicator" in result.unhandled
    assert_valid(result.data)


# --------------------------------------------------------------------------- refinement: only what is asked changes

REFINE_CASES: list[tuple[dict | str, str, set[str]]] = [
    (UBUNTU_BASE, "add docker and monitoring packages", {"systemConfig.packages"}),
    (UBUNTU_BASE, "add monitoring packages", {"systemConfig.packages"}),
    (UBUNTU_BASE, "change disk size to 8GiB", {"disk.size"}),
    (UBUNTU_BASE, "change the disk size to 8GiB and add a separate /data partition", {"disk.size", "disk.partitions"}),
    (UBUNTU_BASE, "remove vim", {"systemConfig.packages"}),
    (UBUNTU_BASE, "set hostname to gateway-01", {"systemConfig.hostname"}),
    (UBUNTU_BASE, "set the kernel version to 6.12", {"systemConfig.kernel.version"}),
    (UBUNTU_BASE, "add intel_iommu=on to the kernel command line", {"systemConfig.kernel.cmdline"}),
    (UBUNTU_BASE, "add user admin with sudo", {"systemConfig.users"}),
    (UBUNTU_BASE, "rename the image to factory-gw", {"image.name"}),
    (UBUNTU_BASE, "output qcow2 instead of vhdx", {"disk.artifacts"}),
    (UBUNTU_BASE, "switch to arm64", {"target.arch", "disk.partitions", "systemConfig.packages"}),
    (UBUNTU_BASE, "use systemd-boot", {"systemConfig.bootloader.provider", "systemConfig.packages"}),
    (UBUNTU_BASE, "enable immutability", {"systemConfig.immutability.enabled", "disk.partitions", "disk.size"}),
    (UBUNTU_BASE, "add a 2GiB swap partition", {"disk.partitions", "disk.size"}),
    (UBUNTU_BASE, "convert to iso", {"target.imageType", "disk"}),
    (AZL_BASE, "remove user testuser", {"systemConfig.users"}),
    (AZL_BASE, "disable immutability", {"systemConfig.immutability.enabled"}),
    (AZL_BASE, "add nginx and tcpdump", {"systemConfig.packages"}),
    (AZL_BASE, "add docker-ce", {"systemConfig.packages"}),
    (AZL_BASE, "make it real-time", {"systemConfig.kernel.packages"}),
    # Keywords naming the removed software go with it (coherent removal).
    ("emt3-x86_64-edge-raw.yml", "without docker", {"systemConfig.packages", "metadata.keywords"}),
    ("emt3-x86_64-emf-raw.yml", "remove the /opt partition", {"disk.partitions"}),
    ("emt3-x86_64-emf-raw.yml", "make the root partition 4GiB", {"disk.partitions", "disk.size"}),
    ("debian13-x86_64-minimal-raw.yml", "remove quiet from the kernel command line and add quiet splash to the kernel command line",
     {"systemConfig.kernel.cmdline"}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("base", "instruction", "allowed"), REFINE_CASES, ids=[c[1][:48] for c in REFINE_CASES]
)
def test_refinement_changes_only_what_is_asked(base: dict | str, instruction: str, allowed: set[str]) -> None:
    data = load(base) if isinstance(base, str) else base
    pristine = copy.deepcopy(data)
    result = apply_instruction(data, instruction)
    assert data == pristine, "refinement must not modify its input"
    assert result.unhandled == [], result.unhandled
    assert result.changes
    changed = changed_paths(data, result.data)
    assert changed == allowed, f"changed {sorted(changed)}; expected {sorted(allowed)}"
    assert_valid(result.data)
    assert_geometry(result.data)


def test_refine_disk_and_data_partition_geometry() -> None:
    result = apply_instruction(
        UBUNTU_BASE, "change the disk size to 8GiB and add a separate 4GiB /data partition"
    )
    parts = result.data["disk"]["partitions"]
    assert [p["mountPoint"] for p in parts] == ["/boot/efi", "/data", "/"]
    assert (parts[1]["start"], parts[1]["end"]) == ("513MiB", "4609MiB")
    assert (parts[2]["start"], parts[2]["end"]) == ("4609MiB", "0")
    assert result.data["disk"]["size"] == "8GiB"


def test_refine_partition_that_does_not_fit_grows_the_disk() -> None:
    result = apply_instruction(UBUNTU_BASE, "set the disk size to 5GiB and add a 6GiB /data partition")
    assert mib(result.data["disk"]["size"]) >= 513 + 6 * 1024 + 1024
    assert any("so the partitions fit" in c for c in result.changes)
    assert_geometry(result.data)


def root_mib(data: dict) -> int:
    root = partition(data, "/")
    assert root is not None
    end = mib(data["disk"]["size"]) if root["end"] == "0" else mib(root["end"])
    return end - mib(root["start"])


def test_a_large_new_partition_grows_the_disk_rather_than_starve_root() -> None:
    before = root_mib(UBUNTU_BASE)
    result = apply_instruction(UBUNTU_BASE, "add a 6GiB /data partition")
    assert root_mib(result.data) >= before
    assert any("keeps its size" in c for c in result.changes)
    assert_geometry(result.data)


def test_a_small_new_partition_takes_its_room_from_a_disk_already_enlarged() -> None:
    grown = apply_instruction(UBUNTU_BASE, "grow the disk by 10G").data
    result = apply_instruction(grown, "add a 2G /data partition")
    assert result.data["disk"]["size"] == grown["disk"]["size"] == "14GiB"
    assert root_mib(result.data) == root_mib(grown) - 2048


def test_a_partition_on_a_disk_sized_by_the_user_takes_room_that_root_can_spare() -> None:
    sized = apply_instruction(UBUNTU_BASE, "make the disk 50GB").data
    result = apply_instruction(sized, "put /var/lib/docker on its own 30GB partition")
    assert result.data["disk"]["size"] == sized["disk"]["size"]
    assert root_mib(result.data) == root_mib(sized) - 30 * 1024


def test_root_resized_without_the_word_partition_keeps_filling_the_disk() -> None:
    for words in ("make root 6GB", "root should be 6 GB", "grow / to 6GiB"):
        result = apply_instruction(UBUNTU_BASE, words)
        assert not result.unhandled, words
        assert partition(result.data, "/")["end"] == "0", words
        assert 6 * 1024 <= root_mib(result.data) < 6 * 1024 + 8, words
        assert_geometry(result.data)


def test_that_partition_is_the_one_the_image_added() -> None:
    added = apply_instruction(UBUNTU_BASE, "add a 2GB /data partition").data
    assert partition(apply_instruction(added, "make that partition xfs").data, "/data")["fsType"] == "xfs"
    bigger = apply_instruction(added, "make the new partition 3GB").data
    assert mib(partition(bigger, "/data")["end"]) - mib(partition(bigger, "/data")["start"]) == 3072
    nothing = apply_instruction(UBUNTU_BASE, "make that partition xfs")
    assert nothing.data == UBUNTU_BASE
    assert any("which partition is meant" in u for u in nothing.unhandled)


def test_refine_shrinking_shrinks_flexible_partitions_first() -> None:
    data = copy.deepcopy(UBUNTU_BASE)
    data["disk"]["partitions"][1]["end"] = "3584MiB"
    result = apply_instruction(data, "change disk size to 2GiB")
    assert result.data["disk"]["size"] == "2GiB"
    root = partition(result.data, "/")
    assert int(root["end"].removesuffix("MiB")) <= 2047
    assert not result.unhandled
    assert_valid(result.data)


def test_refine_shrinking_below_the_fixed_partitions_is_refused_naming_them() -> None:
    data = copy.deepcopy(UBUNTU_BASE)
    data["disk"]["partitions"][1]["end"] = "3584MiB"
    result = apply_instruction(data, "change disk size to 1GiB")
    assert result.data["disk"]["size"] == "4GiB"
    refusal = " ".join(result.unhandled)
    assert "too small" in refusal and "boot" in refusal


def test_refine_arch_switch_translates_guids_and_kernel() -> None:
    base = load("ubuntu24-server-cloud-amd64.yml")
    result = apply_instruction(base, "switch to aarch64")
    root = partition(result.data, "/")
    assert root["type"] == "linux-root-arm64"
    assert root["typeUUID"] == "b921b045-1df0-41c3-af44-4c6f280d3fae"
    assert partition(result.data, "/boot/efi")["typeUUID"] == "c12a7328-f81f-11d2-ba4b-00a0c93ec93b"
    assert "grub-pc" not in packages(result.data)
    assert result.data["image"]["name"] == "ubuntu-server-cloud-arm64"
    assert_valid(result.data)


def test_refine_distribution_switch_translates_packages_and_drops_foreign_repos() -> None:
    base = load("ubuntu24-x86_64-dlstreamer.yml")
    result = apply_instruction(base, "port this to azure linux")
    assert result.data["target"]["os"] == "azure-linux"
    assert result.data["target"]["dist"] == "azl3"
    assert not [p for p in packages(result.data) if p.startswith("ubuntu-")]
    assert not [r for r in result.data.get("packageRepositories") or [] if "apt." in str(r.get("url"))]
    assert kernel(result.data)["packages"] == ["kernel"]
    assert_valid(result.data)


def test_refine_docker_translates_across_families() -> None:
    on_ubuntu = apply_instruction(UBUNTU_BASE, "add docker")
    moved = apply_instruction(on_ubuntu.data, "switch to azure linux 3")
    pkgs = packages(moved.data)
    assert "moby-engine" in pkgs and "docker.io" not in pkgs
    back = apply_instruction(moved.data, "switch to debian 13")
    assert "docker.io" in packages(back.data) and "moby-engine" not in packages(back.data)


def test_refine_secure_boot_turns_on_immutability_with_key_placeholders() -> None:
    result = apply_instruction(AZL_BASE, "enable secure boot")
    imm = result.data["systemConfig"]["immutability"]
    assert imm["enabled"] is True
    assert imm["secureBootDBKey"].startswith("${")
    assert_valid(result.data)
    off = apply_instruction(result.data, "disable secure boot")
    assert set(off.data["systemConfig"]["immutability"]) == {"enabled"}


def test_apply_spec_returns_new_dict_and_changes() -> None:
    spec = parse_request("add docker, hostname h1")
    new, changes = apply_spec(UBUNTU_BASE, spec)
    assert new is not UBUNTU_BASE and "docker.io" in packages(new)
    assert "docker.io" not in packages(UBUNTU_BASE)
    assert any("hostname" in c for c in changes)


def test_instruction_with_nothing_to_do_is_reported() -> None:
    result = apply_instruction(UBUNTU_BASE, "frobnicate the quux")
    assert result.data == UBUNTU_BASE
    assert result.unhandled


# --------------------------------------------------------------------------- YAML output and summaries


def test_dump_yaml_is_stable_and_upstream_shaped() -> None:
    text = dump_yaml(UBUNTU_BASE)
    assert text == dump_yaml(yaml.safe_load(text))
    assert yaml.safe_load(text) == UBUNTU_BASE
    assert 'end: "0"' in text and 'version: "24.04"' in text and 'version: "6.17"' in text
    assert "  packages:\n    - ubuntu-minimal" in text  # sequences indented under their key
    assert "cmdline: console=ttyS0,115200 console=tty0 loglevel=7\n" in text  # plain where safe
    keys = [line.split(":")[0] for line in text.splitlines() if line and not line.startswith((" ", "-"))]
    assert keys == ["image", "target", "disk", "systemConfig"]
    shuffled = dict(reversed(list(UBUNTU_BASE.items())))
    assert dump_yaml(shuffled) == text


def test_summarize_answers_from_the_template() -> None:
    assert "ubuntu-minimal" in summarize(UBUNTU_BASE, "what packages are included?")
    layout = summarize(UBUNTU_BASE, "explain the disk layout")
    assert "4GiB" in layout and "rootfs" in layout and "end of disk" in layout
    assert summarize(UBUNTU_BASE, "does it have docker?").startswith("No")
    with_docker = apply_instruction(UBUNTU_BASE, "add docker").data
    assert summarize(with_docker, "does it have docker?").startswith("Yes")
    overview = summarize(AZL_BASE, "summarize this template")
    assert "Azure Linux" in overview and "cloud-init" in overview and "testuser" in overview
    assert "6.12" in summarize(AZL_BASE, "which kernel does it use?")


def test_use_case_word_at_the_end_of_a_request_does_not_overrun() -> None:
    # Regression: a one-word use case ("server") as the last token matched under a 3-word window.
    from image_composer_mcp.server.composer.request_parser import parse_request

    for text in ("postgresql database server", "web server", "server", "minimal edge"):
        parse_request(text)


def test_random_word_salad_never_crashes_the_parser_or_composer() -> None:
    """Seeded fuzzing: whatever a user types, the offline provider answers instead of raising."""
    import random

    from image_composer_mcp.server.core.yamlsafe import load_mapping

    repo = Path(__file__).resolve().parents[2]
    caps = load_capabilities()
    phrases = [*caps.triggers(), *caps.absence_words, *(w for uc in caps.use_cases.values() for w in uc.words)]
    words = sorted({w for t in phrases for w in t.split()})
    extra = ("add remove without with and or to the disk size 8GiB 512MiB /data partition hostname kernel "
              "cmdline user admin sudo arm64 x86_64 ubuntu debian azure elxr el10 iso raw img immutable secure "
              "boot server web edge minimal for set change switch undo what packages docker nginx vim , . ; : "
              "'q' 24.04 13 isolcpus=2 console=ttyS0 - = 0 100GiB 1KiB headless kiosk not needed is fine 15 "
              "make git user")
    words += extra.split()
    bases = [load_mapping(p.read_text()).data for p in sorted((repo / "image-templates").glob("*.yml"))[:8]]
    rng = random.Random(20261123)
    for _ in range(400):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 12)))
        base = rng.choice(bases)
        parse_request(text)
        compose(text, base)
        apply_instruction(base, text)


def _library(name: str) -> dict:
    return yaml.safe_load((Path(__file__).resolve().parents[2] / "image-templates" / name).read_text())


def test_minimal_request_drops_what_nothing_explains_and_says_so() -> None:
    # A kiosk template asked for as a minimal image: its kiosk group (browser, compositor, fonts) and what no
    # group explains are not asked for, nor the distribution's base system: a minimal request leaves them out,
    # and says so.
    request, name = "minimal debian 13 image with curl and jq", "debian13-x86_64-kiosk-chromium-raw"
    base = _library(name + ".yml")
    spec = parse_request(request)
    result = compose(request, base, base_file=name, spec=spec,
                     strip_groups=strip_plan(name, base, spec, request, load_capabilities()))
    pkgs = packages(result.data)
    assert {"curl", "jq", "openssh-server"} <= set(pkgs)
    assert not {"chromium", "cage"} & set(pkgs)
    assert any("not asked for" in c and "chromium" in c for c in result.changes), result.changes
    assert any(p in pkgs for p in load_capabilities().all_bootloader_packages("debian")), "it must still boot"


def test_other_requests_name_what_the_starting_template_brought_unasked() -> None:
    # hwloc is in no capability group: a request that is not minimal keeps it, and is told so.
    result = compose("debian 13 image with curl and jq", _library("debian13-x86_64-realtime-industrial-raw.yml"),
                     base_file="debian13-x86_64-realtime-industrial-raw")
    assert "hwloc" in packages(result.data)
    kept = [c for c in result.changes if c.startswith("kept from the starting template (not asked for)")]
    assert kept and "hwloc" in kept[0] and "curl" not in kept[0], result.changes


def test_a_named_desktop_environment_replaces_the_templates_own():
    library = Path(__file__).resolve().parents[2] / "image-templates"
    gnome = yaml.safe_load((library / "ubuntu24-x86_64-desktop-workstation-raw.yml").read_text(encoding="utf-8"))
    assert "ubuntu-desktop-minimal" in gnome["systemConfig"]["packages"]
    done = apply_instruction(gnome, "switch the desktop to xfce")
    packages = done.data["systemConfig"]["packages"]
    assert {"xfce4", "lightdm"} <= set(packages)
    assert "ubuntu-desktop-minimal" not in packages and "gdm3" not in packages
    assert any("in place of the desktop packages" in c for c in done.changes), done.changes
    el10 = apply_instruction(yaml.safe_load((library / "el10-x86_64-minimal-base-raw.yml").read_text(encoding="utf-8")),
                             "add the kde desktop")
    assert any("kde-desktop" in p and "not available" in p for p in el10.problems), el10.problems


@pytest.mark.parametrize("text", ["4 GB swap and the rest as root", "root takes the remaining space",
                                  "the rest of the disk for /"])
def test_the_rest_of_the_disk_for_root_is_read_and_checked(text):
    library = Path(__file__).resolve().parents[2] / "image-templates"
    plain = yaml.safe_load((library / "azl3-x86_64-minimal-base-raw.yml").read_text(encoding="utf-8"))
    done = apply_instruction(plain, text)
    assert any("/ already fills the rest of the disk" in c for c in done.changes), done.changes
    assert not done.problems and not any("not understood" in c for c in done.changes)
    # Where another partition takes the end of the disk, the wish is reported, not claimed.
    opt = yaml.safe_load((library / "emt3-x86_64-immutable-secureboot-raw.yml").read_text(encoding="utf-8"))
    kept = apply_instruction(opt, text)
    assert any("/ does not fill the rest of the disk" in p for p in kept.problems), kept.problems


def test_switching_the_desktop_stops_enabling_the_old_display_manager():
    library = Path(__file__).resolve().parents[2] / "image-templates"
    gnome = yaml.safe_load((library / "ubuntu24-x86_64-desktop-workstation-raw.yml").read_text(encoding="utf-8"))
    assert any("gdm.service" in c["cmd"] for c in gnome["systemConfig"]["configurations"])
    done = apply_instruction(gnome, "switch to xfce")
    commands = [c["cmd"] for c in done.data["systemConfig"]["configurations"]]
    assert not any("gdm" in c for c in commands) and any("NetworkManager.service" in c for c in commands)


def test_a_host_named_after_the_old_release_follows_a_switch():
    library = Path(__file__).resolve().parents[2] / "image-templates"
    debian = yaml.safe_load((library / "debian13-x86_64-minimal-base-raw.yml").read_text(encoding="utf-8"))
    assert debian["systemConfig"]["hostname"] == "debian13"
    done = apply_instruction(debian, "actually make it ubuntu 24.04")
    assert done.data["systemConfig"]["hostname"] == "ubuntu24"


@pytest.mark.parametrize("instruction", ["add docker, but not docker-compose", "add docker but not compose"])
def test_a_group_asked_for_without_one_of_its_packages_brings_the_rest(instruction):
    done = apply_instruction(UBUNTU_BASE, instruction)
    packages = done.data["systemConfig"]["packages"]
    assert "docker.io" in packages and not any(p.startswith("docker-compose") for p in packages)
    assert not done.problems and any("without its docker-compose-v2" in c for c in done.changes), done.changes
    assert not any(c.startswith("nothing to remove") for c in done.changes), done.changes


def test_a_kiosk_page_replaces_the_kiosks_default_and_is_reported_where_there_is_no_kiosk():
    library = Path(__file__).resolve().parents[2] / "image-templates"
    kiosk = yaml.safe_load((library / "debian13-x86_64-kiosk-chromium-raw.yml").read_text(encoding="utf-8"))
    done = apply_instruction(kiosk, "show https://example.com on the kiosk")
    commands = [c["cmd"] for c in done.data["systemConfig"]["configurations"]]
    assert "mkdir -p /etc/kiosk && echo 'https://example.com' > /etc/kiosk/url" in commands
    assert not any("localhost" in c for c in commands) and any("kiosk.service" in c for c in commands)
    plain = apply_instruction(UBUNTU_BASE, "open https://example.com at boot")
    assert any("no kiosk" in p for p in plain.problems), plain.problems


@pytest.mark.parametrize(("request_text", "said"), [("elxr image for a thin client with xfce", True),
                                                     ("immutable elxr image with xfce", False),
                                                     ("elxr image with xfce, not immutable", False)])
def test_an_immutable_root_kept_from_the_starting_template_is_said(request_text, said) -> None:
    name = "elxr12-x86_64-immutable-secureboot-raw"
    result = compose(request_text, _library(name + ".yml"), base_file=name)
    kept = [c for c in result.changes if "immutable root (dm-verity)" in c]
    assert bool(kept) == said, result.changes
    if said:
        assert "secure boot keys" in kept[0] and "not immutable" in kept[0]


def test_an_edit_onto_a_machine_of_its_own_renames_a_host_name_that_named_the_cloud() -> None:
    base = _library("ubuntu24-x86_64-cloud-vm-qcow2-vmdk-raw.yml")
    assert base["systemConfig"]["hostname"] == "ubuntu-cloud"
    moved = apply_instruction(base, "actually it is going on a physical intel NUC, not a vm")
    assert moved.data["systemConfig"]["hostname"] == "ubuntu24" and not moved.unhandled
    assert any(c.startswith("hostname ubuntu-cloud -> ubuntu24") for c in moved.changes), moved.changes
    named = apply_instruction(base, "it goes on a NUC, hostname nuc-07")
    assert named.data["systemConfig"]["hostname"] == "nuc-07"
    kept = apply_instruction(base, "add curl")  # nothing left: the name stays
    assert kept.data["systemConfig"]["hostname"] == "ubuntu-cloud"


def test_a_partition_formatted_by_name_and_swap_switched_off_are_written() -> None:
    base = _library("debian13-x86_64-minimal-base-raw.yml")
    result = apply_instruction(base, "put /var/log on its own 5G partition formatted xfs and turn swap off")
    (log,) = [p for p in result.data["disk"]["partitions"] if p.get("mountPoint") == "/var/log"]
    assert log["fsType"] == "xfs"
    assert "systemctl mask swap.target" in [c["cmd"] for c in result.data["systemConfig"]["configurations"]]
    assert not result.unhandled


def test_users_given_roles_after_their_names_are_written_with_them() -> None:
    base = _library("debian13-x86_64-minimal-base-raw.yml")
    result = apply_instruction(base, "add users alice (admin) and bob, then make bob an admin too")
    users = {u["name"]: u.get("sudo") for u in result.data["systemConfig"]["users"]}
    assert users == {"alice": True, "bob": True}, result.changes
    assert not result.unhandled


def test_accounts_of_the_starting_template_nobody_asked_for_are_left_out_or_said() -> None:
    name = "ubuntu24-x86_64-edge-gateway-docker-raw"
    base = _library(name + ".yml")
    stripped = compose("ubuntu 24.04 box with nginx", base, base_file=name, strip_groups=["containers", "mqtt"])
    assert "users" not in stripped.data["systemConfig"]
    # its docker group left with the containers group, before the account
    assert "left out of the starting template (not asked for): user edgeadmin (sudo; groups sudo)" in stripped.changes
    kept = compose("ubuntu 24.04 edge gateway with docker", base, base_file=name)
    assert [u["name"] for u in kept.data["systemConfig"]["users"]] == ["edgeadmin"]
    assert any(c.startswith("kept from the starting template (not asked for): user edgeadmin") for c in kept.changes)
    asked = compose("ubuntu 24.04 edge gateway with docker and user edgeadmin", base, base_file=name)
    assert not any("user edgeadmin" in c and "not asked for" in c for c in asked.changes)


def test_an_account_the_starting_templates_configuration_names_stays_with_it() -> None:
    name = "debian13-x86_64-kiosk-chromium-raw"
    result = compose("debian 13 kiosk", _library(name + ".yml"), base_file=name, strip_groups=["ssh"])
    assert [u["name"] for u in result.data["systemConfig"]["users"]] == ["kiosk"]


def test_sizes_changed_by_an_amount_or_a_factor_change_the_right_thing() -> None:
    base = _library("debian13-x86_64-minimal-base-raw.yml")
    grown = apply_instruction(base, "make the disk +10G")
    assert grown.data["disk"]["size"] == "14GiB"
    with_data = apply_instruction(grown.data, "add a separate /data partition of 2G").data
    resized = apply_instruction(with_data, "grow /data by 2G")
    (data,) = [p for p in resized.data["disk"]["partitions"] if p.get("mountPoint") == "/data"]
    assert template_mib(data["end"]) - template_mib(data["start"]) == 4096
    assert resized.data["disk"]["size"] == "14GiB"  # the disk is the disk's, whatever a partition does
    halved = apply_instruction(resized.data, "halve the disk")
    assert halved.data["disk"]["size"] == "7GiB"


def test_a_user_renamed_keeps_its_settings() -> None:
    base = _library("ubuntu24-x86_64-edge-gateway-docker-raw.yml")
    result = apply_instruction(base, "rename user edgeadmin to alice")
    (user,) = result.data["systemConfig"]["users"]
    assert user["name"] == "alice" and user["sudo"] is True and "renamed user edgeadmin -> alice" in result.changes
    assert apply_instruction(base, "rename user bob to carol").changes == ["nothing to rename: no user bob"]


def test_a_hardened_el10_image_keeps_selinux_on() -> None:
    base = _library("el10-x86_64-minimal-base-raw.yml")
    assert "selinux=0" in base["systemConfig"]["kernel"]["cmdline"]
    result = compose("a hardened el10 server", base, base_file="el10-x86_64-minimal-base-raw")
    cmdline = result.data["systemConfig"]["kernel"]["cmdline"].split()
    assert "selinux=0" not in cmdline and {"selinux=1", "enforcing=1"} <= set(cmdline)
    assert "selinux-policy-targeted" in result.data["systemConfig"]["packages"]


def test_a_move_to_aarch64_drops_x86_boot_and_kernel_parameters() -> None:
    base = _library("emt3-x86_64-ai-video-analytics-dlstreamer-raw.yml")
    assert any(w.startswith("i915.") for w in base["systemConfig"]["kernel"]["cmdline"].split())
    moved = apply_instruction(base, "switch to arm64")
    assert not any(w.startswith("i915.") for w in moved.data["systemConfig"]["kernel"]["cmdline"].split())
    cloud = _library("ubuntu24-x86_64-cloud-vm-qcow2-vmdk-raw.yml")
    assert any(p.get("type") == "bios" for p in cloud["disk"]["partitions"])
    arm = apply_instruction(cloud, "build it for arm64")
    assert not any(p.get("type") == "bios" for p in arm.data["disk"]["partitions"])
    assert any(c.startswith("BIOS boot partition dropped") for c in arm.changes)


def test_a_release_switch_keeps_the_familys_own_packages_and_leaves_what_the_new_release_lacks() -> None:
    base = _library("ubuntu24-x86_64-robotics-ros2-jazzy-raw.yml")
    moved = apply_instruction(base, "put it on ubuntu 26.04")
    packages = moved.data["systemConfig"]["packages"]
    assert "ubuntu-minimal" in packages  # ubuntu's own name, on another ubuntu
    assert not any(p.startswith("ros-jazzy-") for p in packages)
    assert any(p.startswith("ros2 (") and "not available for ubuntu26" in p for p in moved.problems)


def test_a_move_to_x86_64_takes_the_arm_uart_and_the_arch_in_the_host_name_along() -> None:
    base = _library("ubuntu24-aarch64-cloud-vm-qcow2-raw.yml")
    moved = apply_instruction(base, "make it x86")
    system = moved.data["systemConfig"]
    assert "ttyAMA" not in system["kernel"]["cmdline"] and "console=ttyS0" in system["kernel"]["cmdline"]
    assert "arm64" not in system["hostname"]


@pytest.mark.parametrize(("base", "database", "place"), [
    ("debian13-x86_64-minimal-base-raw.yml", "postgresql", "/var/lib/postgresql"),
    ("el10-x86_64-minimal-base-raw.yml", "postgresql-server", "/var/lib/pgsql"),
    ("el10-x86_64-minimal-base-raw.yml", "mariadb-server", "/var/lib/mysql"),
])
def test_a_partition_for_the_database_is_the_data_directory_of_the_one_the_image_has(base, database, place):
    with_db = apply_instruction(_library(base), f"add {database}").data
    result = apply_instruction(with_db, "add a separate 10G partition for the database")
    assert partition(result.data, place) is not None, result.changes
    assert not result.unhandled


def test_a_partition_for_the_database_without_one_asks_which():
    result = apply_instruction(_library("debian13-x86_64-minimal-base-raw.yml"), "add a 10G partition for the db")
    assert result.data["disk"]["partitions"] == _library("debian13-x86_64-minimal-base-raw.yml")["disk"]["partitions"]
    assert any("which database" in u for u in result.unhandled), result.unhandled


def test_a_databases_directory_follows_the_targets_package_format():
    result = apply_instruction(_library("el10-x86_64-minimal-base-raw.yml"), "add a 30G postgresql partition")
    assert partition(result.data, "/var/lib/pgsql") is not None and partition(result.data, "/var/lib/postgresql") is None
    assert any("/var/lib/pgsql instead" in c for c in result.changes), result.changes
    spec = parse_request("alma 10 postgres server with a 30G postgresql partition")
    assert unmet(result.data, want_from_spec(spec, "el10")) == []


def test_a_wish_said_not_applied_is_the_whole_answer():
    result = apply_instruction(_library("azl3-x86_64-minimal-base-raw.yml"), "add the nvidia driver")
    assert any("not applied" in n for n in result.spec.notes)
    assert not any("could not find an edit" in u for u in result.unhandled), result.unhandled


def test_a_question_about_a_partitions_size_is_answered_with_its_size():
    gateway = _library("ubuntu24-x86_64-edge-gateway-docker-raw.yml")
    answer = summarize(gateway, "how big is the root partition?")
    assert "rootfs: 8GiB" in answer and "/var/lib/docker" not in answer  # that partition alone
    answer = summarize(gateway, "how much space does /var/lib/docker get?")
    assert answer.startswith("- containers: ") and "(the rest of the disk)" in answer and "rootfs" not in answer


def test_why_a_package_is_there_is_the_group_it_belongs_to():
    gateway = _library("ubuntu24-x86_64-edge-gateway-docker-raw.yml")
    assert summarize(gateway, "why is docker.io there?").startswith("docker.io is there as part of containers (")
    assert summarize(gateway, "why is nginx there?").startswith("No: the template does not list nginx")


def test_who_can_log_in_is_the_users():
    answer = summarize(_library("ubuntu24-x86_64-edge-gateway-docker-raw.yml"), "who can log in?")
    assert answer.startswith("Users: ") and "Packages" not in answer


def test_another_familys_group_member_is_no_explained_package_here():
    from image_composer_mcp.server.composer.base import leftovers

    base = _library("ubuntu26-aarch64-edge-gateway-podman-raw.yml")
    caps = load_capabilities()
    assert "nftables" in leftovers(base, parse_request("ubuntu 26.04 with nothing but ssh"), caps)
    result = compose("a really small ubuntu 26.04 image for aarch64 with nothing but ssh", base)
    assert "nftables" not in packages(result.data)
    kept = compose("ubuntu 26.04 arm64 image with htop", base)
    assert any("kept from the starting template" in c and "nftables" in c for c in kept.changes), kept.changes


@pytest.mark.parametrize(("written", "opened", "lets"), [
    ("firewall-offline-cmd --add-service=http --add-service=https", "443/tcp", True),
    ("firewall-offline-cmd --add-port=8080/tcp", "8080/tcp", True),
    ("firewall-offline-cmd --add-port=8080/tcp", "80/tcp", False),
    ("ufw allow 443/tcp", "https", True), ("ufw allow 9000:9010/udp", "9000-9010/udp", True),
    ("ufw allow 443/tcp", "22/tcp", False), ("", "ssh", False),
    # a port said without its protocol is TCP's
    ("firewall-offline-cmd --add-service=cockpit", "9090", True), ("ufw allow 443/udp", "443", False),
])
def test_a_port_is_let_in_by_its_number_or_its_services_name(written, opened, lets):
    assert lets_in(written, opened) is lets


def test_adherence_wants_each_opened_port_let_in():
    doc = {"systemConfig": {"configurations": [{"cmd": "firewall-offline-cmd --add-port=443/tcp"}]}}
    assert unmet(doc, {"opened": ["https", "8080/tcp"]}) == ["port 8080/tcp not let in by the firewall"]


def test_a_group_taken_out_keeps_another_groups_share_of_it_out_and_switches_it_off():
    # "hardened, without selinux": the hardening group brings SELinux's packages and selinux=1 enforcing=1; the
    # removal wins, the answer says what was left out, and SELinux is off at boot.
    request = "hardened el10 image without selinux"
    base = _library("el10-x86_64-minimal-base-raw.yml")
    spec = parse_request(request)
    assert spec.add_groups == ["security"] and spec.remove_groups == ["mac"]
    done = compose(request, base, base_file="el10-x86_64-minimal-base-raw", spec=spec)
    pkgs = set(packages(done.data))
    cmdline = done.data["systemConfig"]["kernel"]["cmdline"].split()
    assert {"audit", "aide"} <= pkgs and not {"selinux-policy-targeted", "policycoreutils"} & pkgs
    assert "selinux=0" in cmdline and not {"selinux=1", "enforcing=1"} & set(cmdline)
    assert any("without its selinux-policy-targeted" in c and "takes mac out" in c for c in done.changes), done.changes
    assert unmet(done.data, want_from_spec(spec, "el10")) == []
    # The same request judged against a template that kept SELinux on fails the check, by name.
    on = copy.deepcopy(done.data)
    on["systemConfig"]["kernel"]["cmdline"] += " selinux=1"
    on["systemConfig"]["packages"].append("policycoreutils")
    problems = unmet(on, want_from_spec(spec, "el10"))
    assert "kernel cmdline still has selinux=1" in problems and "package policycoreutils still present" in problems


@pytest.mark.parametrize("request_text", ["ubuntu 24.04 without apparmor", "ubuntu 24.04, disable apparmor",
                                          "ubuntu 24.04 with apparmor turned off"])
def test_an_lsm_the_kernel_starts_by_itself_is_switched_off_on_the_command_line(request_text):
    spec = parse_request(request_text)
    assert spec.remove_groups == ["mac"] and "apparmor" not in spec.remove_packages
    done = compose(request_text, _library("ubuntu24-x86_64-cloud-vm-qcow2-vmdk-raw.yml"),
                   base_file="ubuntu24-x86_64-cloud-vm-qcow2-vmdk-raw", spec=spec)
    assert "apparmor=0" in done.data["systemConfig"]["kernel"]["cmdline"].split()
    assert any("apparmor=0" in c for c in done.changes), done.changes
    assert not any(c.startswith("nothing to remove") for c in done.changes)


def test_turning_a_permissive_lsm_off_drops_every_value_of_its_parameters():
    base = _library("azl3-x86_64-minimal-base-raw.yml")
    permissive = apply_instruction(base, "add selinux in permissive mode").data
    assert "enforcing=0" in permissive["systemConfig"]["kernel"]["cmdline"]
    off = apply_instruction(permissive, "actually turn selinux off")
    words = off.data["systemConfig"]["kernel"]["cmdline"].split()
    assert "selinux=0" in words and not [w for w in words if w.startswith("enforcing=") or w == "selinux=1"]
    assert "selinux-policy" not in packages(off.data)


def test_a_partition_resized_before_roots_says_what_root_gives_and_grows_the_disk_when_root_would_starve():
    base = _library("emt3-x86_64-minimal-base-raw.yml")
    with_swap = apply_instruction(base, "add a 2G swap partition").data
    assert with_swap["disk"]["size"] == "6GiB"
    bigger = apply_instruction(with_swap, "actually make swap 4G")
    assert bigger.data["disk"]["size"] == "8GiB", bigger.changes  # root would have kept 1.5 GiB
    assert any("so rootfs keeps its size" in c for c in bigger.changes), bigger.changes
    smaller = apply_instruction(bigger.data, "shrink swap to 1G")
    assert smaller.data["disk"]["size"] == "8GiB"
    assert any("rootfs takes the room: now" in c for c in smaller.changes), smaller.changes


def test_removing_the_debuggers_keeps_the_compiler_and_git():
    base = _library("ubuntu24-x86_64-developer-dkms-raw.yml")
    built = apply_instruction(base, "add build-essential, git, gdb and strace").data
    done = apply_instruction(built, "remove everything related to debugging")
    pkgs = set(packages(done.data))
    assert {"build-essential", "git"} <= pkgs and not {"gdb", "strace"} & pkgs, done.changes


@pytest.mark.parametrize(("name", "packages_added"), [("el10-x86_64-minimal-base-raw.yml", {"grub2-pc", "grub2-pc-modules"}),
                                                      ("debian13-x86_64-minimal-base-raw.yml", {"grub-pc-bin"}),
                                                      ("azl3-x86_64-minimal-base-raw.yml", {"grub2-pc"})])
def test_legacy_boot_gets_grubs_bios_core_and_a_bios_boot_partition_first(name, packages_added):
    from image_composer_mcp.server.validation.validator import validate_data

    done = apply_instruction(_library(name), "switch to legacy bios boot")
    boot = done.data["systemConfig"]["bootloader"]
    assert (boot["bootType"], boot["provider"]) == ("legacy", "grub")
    assert packages_added <= set(packages(done.data)), done.changes
    first = done.data["disk"]["partitions"][0]
    assert first["flags"] == ["bios_grub"] and (first["start"], first["end"]) == ("1MiB", "5MiB")
    assert "grub-pc" not in packages(done.data)  # it conflicts with grub-efi-amd64, which stays
    report = validate_data(done.data)
    assert not report.errors and "bootloader.no_bios_boot" not in {w.code for w in report.warnings}


def test_systemd_boot_asked_for_by_name_with_legacy_boot_is_refused():
    done = apply_instruction(_library("azl3-x86_64-minimal-base-raw.yml"), "use systemd-boot with legacy bios boot")
    assert any("systemd-boot only boots in EFI mode" in p for p in done.problems), done.problems


def test_a_role_asked_for_by_its_name_keeps_the_software_the_template_fills_it_with():
    base = _library("el10-x86_64-web-server-httpd-raw.yml")
    spec = parse_request("el10 web server")
    done = compose("el10 web server", base, base_file="el10-x86_64-web-server-httpd-raw", spec=spec)
    pkgs = set(packages(done.data))
    assert "httpd" in pkgs and "nginx" not in pkgs
    assert any("the template's httpd fills its role" in c for c in done.changes), done.changes
    named = compose("el10 web server with nginx", base, base_file="el10-x86_64-web-server-httpd-raw",
                    spec=parse_request("el10 web server with nginx"))
    assert "nginx" in packages(named.data) and "httpd" not in packages(named.data)


def test_a_role_the_template_fills_brings_none_of_the_groups_companions():
    podman = apply_instruction(_library("ubuntu24-x86_64-edge-gateway-docker-raw.yml"), "replace docker with podman").data
    done = apply_instruction(podman, "add containers")
    assert not {"containerd", "docker-compose-v2", "docker.io"} & set(packages(done.data))  # Docker's, not podman's
    assert any("the template's podman fills its role" in c for c in done.changes), done.changes


@pytest.mark.parametrize(("instruction", "database", "gone"), [
    ("get rid of the database", "postgresql", {"postgresql", "postgresql-contrib"}),
    ("drop the db", "mariadb", {"mariadb-server"}),
])
def test_the_database_taken_out_by_its_role_is_whichever_the_image_has(instruction, database, gone):
    base = _library("el10-x86_64-minimal-base-raw.yml")
    built = apply_instruction(base, "add " + " and ".join(sorted(gone)) + " and nginx").data
    done = apply_instruction(built, instruction)
    pkgs = set(packages(done.data))
    assert not gone & pkgs and "nginx" in pkgs, done.changes
    assert any(c.startswith(f"removed the database ({database})") for c in done.changes), done.changes


def test_the_database_taken_out_of_an_image_without_one_is_said_not_there():
    done = apply_instruction(_library("el10-x86_64-minimal-base-raw.yml"), "get rid of the database")
    assert done.changes == ["nothing to remove: the image has no database (postgresql, mariadb)"]


def test_a_keyboard_layout_said_again_replaces_the_one_written():
    base = _library("debian13-x86_64-minimal-base-raw.yml")
    german = apply_instruction(base, "add a german keyboard").data
    french = apply_instruction(german, "switch the keyboard to french").data
    commands = [c["cmd"] for c in french["systemConfig"]["configurations"] if "XKBLAYOUT" in c["cmd"]]
    assert len(commands) == 1 and 'XKBLAYOUT="fr"' in commands[0]


def _on_calendar(data: dict) -> list[str]:
    return [c["cmd"].split("OnCalendar=")[1].split("\\n")[0] for c in data["systemConfig"]["configurations"]
            if "OnCalendar=" in c["cmd"]]


def test_a_schedule_said_in_part_keeps_the_earlier_ones_other_part():
    nightly = apply_instruction(_library("azl3-x86_64-minimal-base-raw.yml"), "reboot every night at 3am").data
    saturdays = apply_instruction(nightly, "reboot on saturdays instead")
    assert _on_calendar(saturdays.data) == ["Sat *-*-* 03:00:00"], saturdays.changes
    assert not any("at midnight" in c for c in saturdays.changes) and not saturdays.spec.notes
    sundays = apply_instruction(saturdays.data, "make it weekly on sundays instead")
    assert _on_calendar(sundays.data) == ["Sun *-*-* 03:00:00"], sundays.changes
    later = apply_instruction(sundays.data, "run it at 4am")
    assert _on_calendar(later.data) == ["Sun *-*-* 04:00:00"], later.changes
    assert unmet(later.data, want_from_spec(later.spec)) == []


def test_a_schedule_said_by_a_pronoun_names_which_when_there_are_none_or_several():
    plain = _library("azl3-x86_64-minimal-base-raw.yml")
    none = apply_instruction(plain, "make it weekly")
    assert none.data == plain and any("no scheduled reboot or job" in p for p in none.problems)
    two = apply_instruction(plain, "reboot every night at 3am and run /opt/backup.sh every sunday at 2am").data
    which = apply_instruction(two, "run it at 5am")
    assert _on_calendar(which.data) == _on_calendar(two) and any("which one?" in p for p in which.problems)


def test_a_disk_resized_says_which_partition_takes_the_room_when_it_is_not_root():
    done = apply_instruction(_library("ubuntu24-x86_64-edge-gateway-docker-raw.yml"), "make the disk 100G")
    assert done.changes == ["disk size 16GiB -> 100GiB (/var/lib/docker takes the rest of the disk, so the room goes "
                            "to it; root stays 8GiB)"]
    plain = apply_instruction(_library("el10-x86_64-minimal-base-raw.yml"), "make the disk 100G")
    assert plain.changes == ["disk size 8GiB -> 100GiB"]


def test_a_service_account_is_added_with_no_note_about_its_password():
    done = apply_instruction(_library("debian13-x86_64-minimal-base-raw.yml"), "add user svc-backup that cannot log in")
    assert done.data["systemConfig"]["users"] == [{"name": "svc-backup", "shell": "/usr/sbin/nologin"}]
    assert not any("has no password" in c for c in done.changes), done.changes


def test_a_kernel_version_the_template_has_is_said_already_set():
    base = _library("el10-x86_64-minimal-base-raw.yml")
    version = str(base["systemConfig"]["kernel"]["version"])
    done = apply_instruction(base, f"set the kernel to {version}")
    assert done.changes == [f"kernel version already {version}"] and not done.unhandled


def test_what_the_firewall_lets_in_is_answered_from_its_commands():
    base = _library("el10-x86_64-minimal-base-raw.yml")
    assert summarize(base, "what's open in the firewall?") == "Firewall: none installed, so nothing blocks a port."
    opened = apply_instruction(base, "add a firewall allowing ssh and https and port 8080").data
    assert summarize(opened, "which ports are open?") == "Firewall: firewalld; lets in 8080/tcp, ssh, https."


@pytest.mark.parametrize(("instruction", "question", "answer"), [
    (None, "what timezone is it in?", "timezone: not set in the template, so the image's own (UTC"),
    ("set the timezone to Europe/Oslo", "what timezone is it in?",
     "timezone: set by `ln -sf /usr/share/zoneinfo/Europe/Oslo /etc/localtime`."),
    ("disable ipv6", "is ipv6 disabled?", "ipv6: kernel parameter ipv6.disable=1."),
    (None, "what's the ssh port?", "ssh port: not set in the template, so sshd's default (port 22) applies."),
])
def test_a_question_about_a_setting_is_answered_from_what_writes_it(instruction, question, answer):
    base = yaml.safe_load((Path(__file__).resolve().parents[2] / "image-templates" /
                           "debian13-x86_64-minimal-base-raw.yml").read_text(encoding="utf-8"))
    data = apply_instruction(base, instruction).data if instruction else base
    assert summarize(data, question).startswith(answer)


def test_whether_the_image_fits_a_disk_is_answered_yes_or_how():
    base = _library("el10-x86_64-minimal-base-raw.yml")
    assert summarize(base, "will it fit on a 16G disk?") == "Yes: the image's disk is 8GiB, no more than 16GiB."
    assert summarize(base, "is it small enough for a 4 gig stick?").startswith(
        "Not as it is: the image's disk is 8GiB, more than 4GiB. Its partitions fit in 4GiB: say 'make the disk 4GiB'")
    big = apply_instruction(base, "make the disk 40G and add a 30G /data partition").data
    assert "once shrunk (partition /data: 30GiB ->" in summarize(big, "does it fit on a 16 GB ssd?")
    no = summarize(big, "will it fit on a 1G disk?")
    # what the partitions need at their minimum: 1MiB before them, boot 600MiB, /data 256MiB, root 1GiB, the GPT
    assert no.startswith("No: the image's disk is 40GiB, and it cannot be made 1GiB") and "at least 1882MiB" in no


def test_a_user_asked_for_that_the_template_has_is_said_present():
    done = apply_instruction(_library("ubuntu24-aarch64-robotics-ros2-jazzy-raw.yml"), "with a user robot")
    assert "user robot already present" in done.changes


@pytest.mark.parametrize("instruction", ["make it a kiosk in firefox", "a kiosk with firefox showing https://x.example"])
def test_firefox_named_for_a_kiosk_runs_in_chromiums_place(instruction):
    done = apply_instruction(_library("debian13-x86_64-minimal-base-raw.yml"), instruction)
    pkgs = set(packages(done.data))
    assert "firefox-esr" in pkgs and "chromium" not in pkgs
    commands = " ".join(str(c["cmd"]) for c in done.data["systemConfig"]["configurations"])
    assert "cage -s -- firefox-esr --kiosk" in commands and "chromium" not in commands
    assert any("firefox-esr in chromium's place, as asked" in c for c in done.changes)
    back = apply_instruction(done.data, "remove the kiosk")  # what stands in a package's place leaves with the group
    assert "firefox-esr" not in packages(back.data) and "kiosk.service" not in str(back.data)


@pytest.mark.parametrize("question", ["will it build?", "can the image be built?", "does this boot?"])
def test_will_it_build_points_at_the_build_check(question):
    data = yaml.safe_load((Path(__file__).resolve().parents[2] / "image-templates" / "debian13-x86_64-minimal-base-raw.yml")
                          .read_text(encoding="utf-8"))
    answer = summarize(data, question)
    assert answer.startswith("Will it build:") and "check_build=true" in answer


def test_removing_the_part_of_a_group_named_keeps_the_part_kept() -> None:
    """"remove qemu but keep libvirt": qemu's packages go, libvirt's and the rest of the host's stay; a package that
    fills the group's role instead ("swap docker for podman") still takes the whole group."""
    spec = parse_request("remove qemu but keep libvirt")
    assert not spec.remove_groups and spec.remove_packages == ["qemu[-.]*"]
    start = compose("debian 13 with libvirt and qemu", load("debian13-x86_64-minimal-raw.yml")).data
    result = apply_instruction(start, "remove qemu but keep libvirt")
    have = packages(result.data)
    assert not [p for p in have if p.startswith("qemu")]
    assert {"libvirt-daemon-system", "libvirt-clients", "virtinst", "ovmf"} <= set(have)
    assert parse_request("swap docker for podman").remove_groups == ["containers"]
    assert parse_request("remove qemu").remove_groups == ["virtualization"]


def test_a_wanted_size_in_units_templates_do_not_use_compares_by_its_value() -> None:
    doc = {"disk": {"size": "1024GiB"}}
    assert unmet(doc, {"size": "1TiB"}) == [] and unmet(doc, {"min_size": "1TiB"}) == []
    assert unmet(doc, {"size": "2TiB"})


@pytest.mark.parametrize("instruction", ["lock edge's password", "edge's password should be locked"])
def test_a_locked_password_takes_a_templates_password_out(instruction) -> None:
    data = copy.deepcopy(UBUNTU_BASE)
    data["systemConfig"]["users"] = [{"name": "edge", "password": "$6$salt$hash", "hash_algo": "sha512"}]
    result = apply_instruction(data, instruction)
    (user,) = result.data["systemConfig"]["users"]
    assert user == {"name": "edge"} and "updated user edge (password locked (its password taken out))" in result.changes
    assert_valid(result.data)

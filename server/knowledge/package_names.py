"""Cross-distribution package knowledge: distributions, architectures, name equivalents.

Package managers disagree on names for the same software (``docker.io`` on Debian,
``moby-engine`` on Azure Linux, ``docker-ce`` from Docker's own repository). When a
name is missing from a target's index these tables give the names worth trying
there; the caller keeps only those that really exist in the consulted index, so an
entry here can never make a package look present.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .loader import load_capabilities


@dataclass(frozen=True)
class DistInfo:
    os: str
    family: str  # "deb" or "rpm": decides the index format and the architecture names


def _dist_tables() -> tuple[dict[str, DistInfo], dict[str, str], dict[str, str], dict[str, str]]:
    """Distribution and architecture facts, read from the one knowledge source (resources/capabilities.yaml)."""
    caps = load_capabilities()
    dists = {d.id: DistInfo(d.family, caps.families[d.family].pkg_type) for d in caps.dists.values()}
    aliases: dict[str, str] = {}
    for dist in caps.dists.values():
        for word in dist.words:
            w = word.lower()
            if re.fullmatch(r"[a-z][a-z0-9]*", w) and w != dist.id:
                aliases.setdefault(w, dist.id)
    for family in caps.families.values():
        for word in family.words:
            w = word.lower()
            if re.fullmatch(r"[a-z][a-z0-9]*", w) and w not in dists:
                aliases.setdefault(w, family.default_dist)
    defaults = {family.id: family.default_dist for family in caps.families.values()}
    arch = {str(a).lower(): canon for canon, info in caps.arch_info.items()
            for a in [canon, *(info.get("aliases") or ())]}
    # 32-bit ARM appears in repository indexes (armhf / armv7hl) though no template targets it.
    arch |= {"armv7hl": "armv7hl", "armhf": "armv7hl"}
    return dists, aliases, defaults, arch


# Other spellings seen in the upstream configs (config.yml says "rcd10" and "aria" where templates say
# "el10" and "elxr12") and codenames come from the dists' `words`; the default dist of an OS is used only
# when a caller names the OS but not the distribution.
DISTS, DIST_ALIASES, OS_DEFAULT_DIST, _ARCH_CANON = _dist_tables()

OS_FAMILY: dict[str, str] = {info.os: info.family for info in DISTS.values()}

_ARCH_BY_FAMILY: dict[str, dict[str, str]] = {
    "deb": {"x86_64": "amd64", "aarch64": "arm64", "armv7hl": "armhf"},
    "rpm": {"x86_64": "x86_64", "aarch64": "aarch64", "armv7hl": "armv7hl"},
}
# Architecture-independent packages install on every architecture.
ARCH_INDEPENDENT: dict[str, str] = {"deb": "all", "rpm": "noarch"}


def canonical_dist(os: str | None, dist: str | None) -> str | None:
    """Known distribution id for (os, dist), or the lower-cased dist as given, or None."""
    if dist:
        d = dist.strip().lower()
        return DIST_ALIASES.get(d, d)
    if os:
        return OS_DEFAULT_DIST.get(os.strip().lower())
    return None


def canonical_arch(arch: str) -> str:
    a = arch.strip().lower()
    return _ARCH_CANON.get(a, a)


def family_arch(family: str, arch: str) -> str:
    """Architecture name as the family's indexes spell it (amd64 for deb, x86_64 for rpm)."""
    canon = canonical_arch(arch)
    return _ARCH_BY_FAMILY.get(family, {}).get(canon, canon)


# Groups of names that mean the same software somewhere. Order inside a group is the
# order suggestions are offered in, so the most common choice comes first.
EQUIVALENT_GROUPS: list[tuple[str, ...]] = [
    ("docker", "docker.io", "docker-ce", "moby-engine", "docker-engine", "moby"),
    ("docker-cli", "docker-ce-cli", "moby-cli", "docker.io"),
    ("containerd", "containerd.io", "moby-containerd", "containerd2"),
    ("runc", "moby-runc"),
    ("docker-compose", "docker-compose-plugin", "docker-compose-v2", "moby-compose"),
    ("docker-buildx", "docker-buildx-plugin", "moby-buildx"),
    ("openssh-server", "openssh", "ssh"),
    ("openssh-client", "openssh-clients", "ssh-client"),
    (
        "kernel",
        "linux-image-amd64",
        "linux-image-arm64",
        "linux-image-generic",
        "linux-generic",
        "kernel-core",
        "linux-image",
    ),
    ("kernel-headers", "kernel-devel", "linux-headers-amd64", "linux-headers-arm64", "linux-headers-generic"),
    (
        "linux-firmware",
        "firmware-linux",
        "firmware-linux-free",
        "firmware-linux-nonfree",
        "linux-firmware-all",
    ),
    ("python3-pip", "python-pip", "python3-pip-wheel"),
    ("python3-dev", "python3-devel"),
    ("python3", "python", "python3-minimal"),
    ("nginx", "nginx-core", "nginx-full", "nginx-light", "nginx-mainline"),
    ("apache2", "httpd"),
    ("cron", "cronie", "cronie-anacron", "systemd-cron"),
    ("vim", "vim-enhanced", "vim-nox", "vim-minimal", "vim-tiny"),
    ("network-manager", "NetworkManager"),
    ("dnsutils", "bind9-dnsutils", "bind-utils", "bind9-host"),
    ("iproute2", "iproute"),
    ("procps", "procps-ng"),
    ("netcat", "netcat-openbsd", "netcat-traditional", "nmap-ncat", "nc"),
    ("ntp", "chrony", "ntpsec", "systemd-timesyncd"),
    ("grub-efi-amd64", "grub2-efi-x64", "grub2-efi", "grub2-efi-binary"),
    ("grub-efi-arm64", "grub2-efi-aa64"),
    ("grub-pc", "grub2-pc", "grub2"),
    ("grub2-common", "grub-common", "grub2-tools", "grub2-tools-minimal"),
    ("shim-signed", "shim", "shim-x64", "shim-unsigned"),
    ("xz-utils", "xz"),
    ("iputils-ping", "iputils"),
    ("gnupg", "gnupg2"),
    ("isc-dhcp-client", "dhclient", "dhcp-client", "dhcpcd"),
    ("git", "git-core"),
    ("build-essential", "gcc", "make"),
    ("libssl-dev", "openssl-devel"),
    ("zlib1g-dev", "zlib-devel"),
    ("zlib1g", "zlib"),
    ("libffi-dev", "libffi-devel"),
    ("avahi-daemon", "avahi"),
    ("libvirt-daemon-system", "libvirt", "libvirt-daemon"),
    ("qemu-kvm", "qemu-system-x86", "qemu-system-x86-64"),
    ("qemu-guest-agent", "qemu-ga"),
    ("intel-media-va-driver", "intel-media-driver", "intel-media-va-driver-non-free"),
    ("libgl1-mesa-dri", "mesa-dri-drivers", "mesa-libGL"),
    ("locales", "glibc-langpack-en", "glibc-locale-source", "glibc-all-langpacks"),
    ("selinux-policy-default", "selinux-policy", "selinux-policy-targeted"),
    ("policycoreutils", "policycoreutils-python-utils"),
    ("wget", "wget2"),
    ("nodejs", "node"),
    ("squashfs-tools", "squashfs"),
    ("tpm2-tools", "tpm2-tss"),
    ("ufw", "firewalld"),
    ("apparmor", "selinux-policy"),
    ("openjdk-17-jre", "java-17-openjdk"),
    ("openjdk-21-jre", "java-21-openjdk"),
    ("e2fsprogs", "e2fsprogs-libs"),
    ("rsyslog", "syslog-ng"),
    ("sudo", "doas"),
    ("prometheus-node-exporter", "node_exporter", "golang-github-prometheus-node-exporter"),
    # Names people search with (formerly a separate table in search.py).
    ("prometheus-node-exporter", "node-exporter"),
    ("openssh-server", "sshd"),
    ("httpd", "apache"),
    ("qemu-system-x86", "qemu", "kvm"),
    ("podman", "podman-docker"),
    ("mysql-server", "mysql", "mariadb-server", "mariadb"),
    ("postgresql", "postgres"),
]

_GROUPS_BY_NAME: dict[str, list[tuple[str, ...]]] = {}
for _group in EQUIVALENT_GROUPS:
    for _name in _group:
        _GROUPS_BY_NAME.setdefault(_name, []).append(_group)

# Suffix conventions that differ between the families.
_SUFFIX_SWAPS: list[tuple[str, str]] = [
    ("-dev", "-devel"),
    ("-devel", "-dev"),
    ("-dbg", "-debuginfo"),
    ("-debuginfo", "-dbg"),
    ("-doc", "-docs"),
    ("-docs", "-doc"),
    ("-utils", "-tools"),
    ("-tools", "-utils"),
]

_KERNEL_IMAGE = re.compile(r"^linux-image-.+$")

# Where no single name corresponds, a name prefix does: Debian-family kernels are
# linux-image-<flavour>, so "kernel" there means "some linux-image-*".
EQUIVALENT_PREFIXES: dict[str, tuple[str, ...]] = {
    "kernel": ("linux-image-",),
    "kernel-core": ("linux-image-",),
    "kernel-rt": ("linux-image-rt-", "linux-image-realtime"),
    "kernel-headers": ("linux-headers-",),
    "kernel-devel": ("linux-headers-",),
    "kernel-modules": ("linux-modules-",),
    "linux-firmware": ("firmware-",),
}


def equivalent_prefixes(name: str) -> tuple[str, ...]:
    """Name prefixes whose packages may stand in for ``name`` on another family."""
    return EQUIVALENT_PREFIXES.get(name, ())


def equivalents(name: str) -> list[str]:
    """Names that stand for the same software elsewhere, most common first, without ``name``."""
    out: list[str] = []
    for group in _GROUPS_BY_NAME.get(name, []):
        out.extend(n for n in group if n != name and n not in out)
    if _KERNEL_IMAGE.match(name):
        for n in ("linux-image-amd64", "linux-image-arm64", "linux-image-generic", "kernel"):
            if n != name and n not in out:
                out.append(n)
    return out


def spelling_variants(name: str) -> list[str]:
    """Rule-based cross-family spellings: ``-dev`` <-> ``-devel``, ``libfoo-dev`` <-> ``foo-devel``."""
    out: list[str] = []

    def add(n: str) -> None:
        if n and n != name and n not in out:
            out.append(n)

    for old, new in _SUFFIX_SWAPS:
        if name.endswith(old):
            stem = name[: -len(old)]
            add(stem + new)
            # Debian puts "lib" in front of library dev packages, rpm usually does not.
            if stem.startswith("lib") and new == "-devel":
                add(stem[3:] + new)
            if not stem.startswith("lib") and new == "-dev":
                add("lib" + stem + new)
    if name.startswith("python-"):
        add("python3-" + name[len("python-") :])
    if name.startswith("python3-"):
        add("python-" + name[len("python3-") :])
    if name.lower() != name:
        add(name.lower())
    return out

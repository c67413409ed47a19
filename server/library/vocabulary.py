"""Domain words shared by keyword inference (templates) and query analysis (search).

Kept in one place so the words a template is described with and the words a
query is understood with cannot drift apart.
"""

from __future__ import annotations

import functools
import re

# Distribution identity: dist id -> words a person might use for it.
DIST_WORDS: dict[str, list[str]] = {
    "azl3": ["azure", "azure-linux", "azl", "azl3", "mariner", "microsoft", "cbl-mariner"],
    "emt3": ["emt", "emt3", "edge-microvisor-toolkit", "microvisor", "intel"],
    "elxr12": ["elxr", "elxr12", "wind-river", "windriver", "wind", "river", "aria", "debian-based", "bookworm"],
    "ubuntu24": ["ubuntu", "ubuntu24", "noble", "24.04", "canonical"],
    "ubuntu26": ["ubuntu", "ubuntu26", "26.04", "resolute", "canonical"],
    "debian13": ["debian", "debian13", "trixie"],
    "el10": ["el10", "rhel", "rhel10", "redhat", "red-hat", "rcd", "rcd10", "centos", "alma", "almalinux", "rocky",
             "redhat-compatible-distro", "enterprise-linux", "centos-stream", "rockylinux"],
}

# Releases with no template of their own: the words still name the OS (a preference for its family).
OS_WORDS: dict[str, list[str]] = {
    "ubuntu": ["ubuntu", "canonical", "jammy", "focal"],
}

OS_FOR_DIST: dict[str, str] = {
    "azl3": "azure-linux",
    "emt3": "edge-microvisor-toolkit",
    "elxr12": "wind-river-elxr",
    "ubuntu24": "ubuntu",
    "ubuntu26": "ubuntu",
    "debian13": "debian",
    "el10": "redhat-compatible-distro",
}

ARCH_WORDS: dict[str, list[str]] = {
    "x86_64": ["x86_64", "x86-64", "amd64", "x64", "intel", "x86"],
    "aarch64": ["aarch64", "arm64", "arm", "armv8"],
}

IMAGE_TYPE_WORDS: dict[str, list[str]] = {
    "raw": ["raw", "disk", "disk-image"],
    "iso": ["iso", "installer", "install", "live", "bootable"],
    "img": ["img", "initrd", "initramfs", "netboot", "pxe", "network-boot"],
}

# Fragments of file names and what they tell a searcher.
FILENAME_HINTS: dict[str, list[str]] = {
    "cloud": ["cloud", "vm", "virtual-machine", "cloud-init"],
    "minimal": ["minimal", "base", "small", "lightweight"],
    "edge": ["edge", "iot", "gateway"],
    "raw": ["raw", "disk-image"],
    "iso": ["iso", "installer"],
    "initrd": ["initrd", "network-boot", "pxe", "netboot", "diskless"],
    "desktop": ["desktop", "gui", "graphical", "workstation"],
    "server": ["server", "headless"],
    "dlstreamer": ["dlstreamer", "ai", "video-analytics", "inference", "openvino", "gstreamer", "vision"],
    "emf": ["emf", "edge-manageability", "orchestration", "edge"],
    "rt": ["rt", "real-time", "realtime", "low-latency", "deterministic", "industrial"],
    "uki": ["uki", "unified-kernel-image", "secure-boot", "systemd-boot"],
    "ros2": ["ros2", "ros", "robotics", "robot"],
    "robotics": ["robotics", "robot", "ros2"],
    "jazzy": ["jazzy", "ros2"],
    "dkms": ["dkms", "kernel-module", "driver", "developer"],
    "ptl": ["ptl", "panther-lake", "intel"],
    "virtualization": ["virtualization", "kvm", "hypervisor", "libvirt", "qemu"],
    "kiosk": ["kiosk", "display", "signage"],
    "hardened": ["hardened", "security", "cis", "audit"],
    "secure": ["secure", "security"],
    "immutable": ["immutable", "read-only", "dm-verity", "atomic"],
    "monitoring": ["monitoring", "observability", "metrics", "prometheus"],
    "docker": ["docker", "container", "containers"],
    "container": ["container", "containers", "docker"],
    "k8s": ["kubernetes", "k8s", "k3s"],
    "web": ["web", "http", "nginx"],
}

# Package-name patterns and what they imply.
PACKAGE_HINTS: list[tuple[re.Pattern[str], list[str]]] = [
    (re.compile(r"^(docker|docker\.io|docker-ce|moby-)"), ["container", "containers", "docker"]),
    (re.compile(r"^(containerd|runc|podman|cri-o|buildah|skopeo)"), ["container", "containers"]),
    (re.compile(r"^(nginx|apache2|httpd|lighttpd|caddy)"), ["web-server", "web", "http"]),
    (re.compile(r"^ros-"), ["robotics", "ros2", "robot"]),
    (re.compile(r"(openvino|dlstreamer|intel-dlstreamer|gstreamer)"), ["ai", "inference", "video-analytics", "vision"]),
    (re.compile(r"(linux-rt|preempt|-rt$|realtime|kernel-rt)"), ["real-time", "realtime", "rt", "low-latency"]),
    (re.compile(r"(prometheus|node-exporter|collectd|telegraf|grafana|sysstat)"), ["monitoring", "observability"]),
    (re.compile(r"^cloud-(init|guest-utils|utils)"), ["cloud", "cloud-init", "vm"]),
    (re.compile(r"^(qemu-kvm|qemu-system|libvirt|virt-manager|virtinst|qemu-guest-agent)"),
     ["virtualization", "kvm", "vm"]),
    (re.compile(r"^(xorg|xserver|gnome|xfce|kde|plasma|weston|wayland|lightdm|gdm|ubuntu-desktop|mesa)"),
     ["desktop", "gui", "graphical"]),
    (re.compile(r"^openssh-server$"), ["ssh", "remote-access"]),
    (re.compile(r"^dkms$|-dkms$"), ["dkms", "kernel-module", "driver"]),
    (re.compile(r"(selinux|apparmor|auditd|^audit$|aide|fail2ban|tpm2|clevis|cryptsetup)"),
     ["security", "hardened"]),
    (re.compile(r"^(k3s|kubelet|kubeadm|kubectl|kubernetes)"), ["kubernetes", "k8s", "orchestration"]),
    (re.compile(r"^(gazebo|gz-|ignition)"), ["simulation", "robotics", "gazebo"]),
    (re.compile(r"(realsense|librealsense)"), ["camera", "realsense", "robotics"]),
    (re.compile(r"^(level-zero|intel-level-zero|intel-opencl|intel-media|libze|intel-gpu|xpu-smi)"),
     ["gpu", "intel-gpu", "acceleration"]),
    (re.compile(r"(npu)"), ["npu", "acceleration"]),
    (re.compile(r"^(watchdog)$"), ["watchdog", "reliability"]),
    (re.compile(r"^(mosquitto|paho)"), ["mqtt", "iot"]),
]

CMDLINE_HINTS: list[tuple[re.Pattern[str], list[str]]] = [
    (re.compile(r"isolcpus|nohz_full|rcu_nocbs|preempt=full|intel_pstate=disable"), ["real-time", "low-latency"]),
    (re.compile(r"console=ttyS"), ["serial-console", "headless"]),
]

STOPWORDS: frozenset[str] = frozenset(
    ["a", "an", "the", "is", "are", "was", "were", "be", "been", "being", "have", "has", "had", "do", "does", "did", "will", "would", "could", "should", "may", "might", "must", "shall", "i", "me", "my", "we", "our", "you", "your", "he", "she", "it", "they", "them", "their", "this", "that", "these", "those", "and", "or", "but", "if", "then", "for", "of", "to", "in", "on", "at", "by", "with", "from", "as", "into", "through", "during", "before", "after", "above", "below", "up", "down", "want", "need", "needs", "create", "make", "build", "please", "can", "help", "me", "some", "any", "one", "image", "images", "template", "templates", "os", "based", "using", "use", "give", "show", "find", "like", "also", "just", "get", "new", "set", "up", "which", "what", "provide", "providing", "includes", "include", "including"]
)

# Technical terms for query classification: formats, acronyms, kernel/boot/security jargon. Distribution
# names are deliberately absent: "cloud elxr raw image" is a description, not a keyword query.
TECHNICAL_TERMS: frozenset[str] = frozenset(
    """iot pxe rt uki dkms kvm qemu emf ros2 ptl gpu npu efi uefi tpm tpm2 initrd initramfs img iso raw qcow2 vhd
    vhdx vmdk vdi gpt mbr ext4 xfs btrfs squashfs vfat fat32 dm-verity verity selinux apparmor sr-iov sriov cuda
    openvino dlstreamer gstreamer netboot grub grub2 systemd-boot secureboot secure-boot k8s k3s mqtt tsn
    preempt_rt preempt-rt realtime real-time hwe lts cis fips ima luks rootfs ota a/b""".split()  # noqa: SIM905
)

NEGATION_WORDS: frozenset[str] = frozenset({"without", "no", "exclude", "excluding", "except", "not", "minus", "w/o"})

# Query words that mean the same thing as another, so "containers" matches "docker" templates.
SYNONYMS: dict[str, list[str]] = {
    "container": ["docker", "containers"],
    "containers": ["docker", "container"],
    "docker": ["container", "containers"],
    "iot": ["edge", "gateway"],
    "gateway": ["edge", "iot"],
    "realtime": ["real-time", "rt"],
    "real-time": ["realtime", "rt"],
    "rt": ["real-time", "realtime"],
    "ros": ["ros2", "robotics"],
    "ros2": ["ros", "robotics"],
    "robot": ["robotics"],
    "robotics": ["robot", "ros2"],
    "pxe": ["initrd", "netboot", "network-boot"],
    "netboot": ["initrd", "pxe"],
    "installer": ["iso"],
    "iso": ["installer"],
    "vm": ["cloud", "virtual-machine"],
    "virtual": ["vm", "virtualization"],
    "kvm": ["virtualization"],
    "hypervisor": ["virtualization", "kvm"],
    "gui": ["desktop"],
    "desktop": ["gui"],
    "ai": ["inference", "openvino"],
    "inference": ["ai", "openvino"],
    "vision": ["video-analytics", "dlstreamer"],
    "video": ["video-analytics", "dlstreamer"],
    "analytics": ["video-analytics"],
    "observability": ["monitoring"],
    "monitoring": ["observability"],
    "hardened": ["security"],
    "secure": ["security", "secure-boot"],
    "immutable": ["read-only", "dm-verity"],
    "arm": ["aarch64", "arm64"],
    "arm64": ["aarch64"],
    "amd64": ["x86_64"],
    "x86": ["x86_64"],
    "small": ["minimal"],
    "lightweight": ["minimal"],
    "base": ["minimal"],
    "web": ["web-server", "nginx"],
    "webserver": ["web-server", "nginx"],
    "kubernetes": ["k8s", "k3s"],
    "vhd": ["cloud", "azure"],
    "qcow2": ["cloud", "vm"],
}

_TOKEN = re.compile(r"[a-z0-9][a-z0-9._+-]*[a-z0-9+]|[a-z0-9]")


def tokenize(text: str) -> list[str]:
    """Lower-case tokens keeping technical names whole (``docker-ce``, ``x86_64``, ``24.04``)."""
    return _TOKEN.findall(text.lower().replace("_", "_"))


def split_parts(name: str) -> list[str]:
    """File-name parts: ``ubuntu24-x86_64-edge-raw.yml`` -> ubuntu24, x86_64, edge, raw."""
    stem = re.sub(r"\.(ya?ml)$", "", name.lower())
    stem = stem.replace("x86_64", "x86§64")
    return [p.replace("§", "_") for p in re.split(r"[-_./\s]+", stem) if p]


def dist_for_word(word: str) -> list[str]:
    return [d for d, words in DIST_WORDS.items() if word in words or word == d]


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Plural to singular, just enough for matching ("containers" ~ "container", "libraries" ~ "library")."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word

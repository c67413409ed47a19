"""Realistic template variants for large benchmark corpora.

Real templates (our library, plus the upstream reference set when present) are mutated in two levels:

* level 1 (``themed_variant``): a real template re-purposed for one of ``THEMES`` (kiosk, IoT gateway,
  k3s node, ...): new name, metadata (description, use cases, keywords; the ADR's extra fields folded into those two),
  the theme's packages for the distribution family, a new image name/version/hostname. Disk layout, kernel,
  bootloader, target and the source's own packages stay as they were, so every variant stays buildable
  and passes ``server.validation.validate_text``.
* level 2 (``site_variant``): a level-1 variant customised for one site of a fleet: renamed, versioned,
  a sentence added to the description, one or two everyday tools added to the packages.

Everything is deterministic for a given seed. ``render_yaml`` writes the mutated mapping back as YAML that
parses to exactly the same data (checked in tests/unit/test_bench.py), so records can be computed from the
in-memory data without re-parsing 100,000 files.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from image_composer_mcp.server.core.yamlsafe import YamlError, load_mapping
from image_composer_mcp.server.library.templates import TEMPLATE_SUFFIXES

DEB = "deb"
RPM = "rpm"
FAMILY = {"ubuntu24": DEB, "ubuntu26": DEB, "debian13": DEB, "elxr12": DEB, "azl3": RPM, "emt3": RPM, "el10": RPM}
DISPLAY = {
    "ubuntu24": "Ubuntu 24.04 LTS", "ubuntu26": "Ubuntu 26.04", "debian13": "Debian 13 (trixie)",
    "elxr12": "Wind River eLxr 12", "azl3": "Azure Linux 3.0", "emt3": "Edge Microvisor Toolkit 3",
    "el10": "a Red Hat compatible EL10 distribution",
}
IMAGE_TYPE_PHRASE = {"raw": "raw disk image", "iso": "bootable installer ISO", "img": "initrd for network boot"}


@dataclass(frozen=True)
class Theme:
    slug: str
    title: str
    use_cases: tuple[str, ...]
    keywords: tuple[str, ...]
    capabilities: tuple[str, ...]
    recommended_for: tuple[str, ...]
    deb: tuple[str, ...]
    rpm: tuple[str, ...]


THEMES: tuple[Theme, ...] = (
    Theme("kiosk", "Digital signage and self-service kiosk",
          ("digital signage", "self-service kiosk", "full-screen web display"),
          ("kiosk", "signage", "display", "chromium"), ("auto-login", "full-screen-browser", "watchdog"),
          ("retail and lobby screens", "unattended touch terminals"),
          ("chromium", "xserver-xorg", "openbox", "unclutter", "watchdog"),
          ("chromium", "xorg-x11-server-Xorg", "openbox", "watchdog")),
    Theme("container-host", "Container host for edge workloads",
          ("run containerised edge applications", "docker compose stacks on site"),
          ("docker", "containers", "container-runtime", "edge"), ("container-runtime", "ssh-access"),
          ("edge nodes running vendor containers", "lab machines for container testing"),
          ("docker.io", "containerd", "docker-compose"), ("moby-engine", "moby-cli", "containerd")),
    Theme("web-server", "Web server appliance",
          ("host an internal web application", "reverse proxy in front of services"),
          ("web", "nginx", "http", "reverse-proxy"), ("web-server", "tls-termination"),
          ("small intranet sites", "a reverse proxy at a branch office"),
          ("nginx", "certbot", "ufw"), ("nginx", "certbot", "firewalld")),
    Theme("iot-gateway", "IoT gateway collecting sensor data over MQTT",
          ("collect sensor data", "MQTT broker at the edge", "protocol gateway"),
          ("iot", "gateway", "mqtt", "sensors", "edge"), ("mqtt-broker", "store-and-forward"),
          ("factory floor sensor networks", "building automation gateways"),
          ("mosquitto", "mosquitto-clients", "python3-paho-mqtt", "can-utils"),
          ("mosquitto", "python3-paho-mqtt", "can-utils")),
    Theme("monitoring-node", "Monitoring and observability node",
          ("collect host metrics", "ship logs to a central server"),
          ("monitoring", "observability", "prometheus", "metrics"), ("metrics-export", "log-shipping"),
          ("fleet health dashboards", "capacity planning"),
          ("prometheus-node-exporter", "collectd", "sysstat", "rsyslog"),
          ("node_exporter", "collectd", "sysstat", "rsyslog")),
    Theme("k3s-node", "Lightweight Kubernetes (k3s) worker node",
          ("join a k3s cluster", "run kubernetes pods at the edge"),
          ("kubernetes", "k3s", "k8s", "orchestration", "cluster"), ("kubernetes-node", "container-runtime"),
          ("edge clusters managed centrally", "small kubernetes labs"),
          ("containerd", "iptables", "conntrack", "socat"), ("containerd", "iptables", "conntrack-tools", "socat")),
    Theme("database", "Database server",
          ("host a PostgreSQL database", "local cache with Redis"),
          ("database", "postgresql", "sql", "redis"), ("persistent-storage", "database"),
          ("line-of-business databases at a site", "edge data buffering"),
          ("postgresql", "redis-server", "pgbackrest"), ("postgresql-server", "redis", "pgbackrest")),
    Theme("hardened", "Security-hardened baseline",
          ("CIS-style hardened host", "audited production baseline"),
          ("hardened", "security", "cis", "audit", "compliance"), ("audit-logging", "mandatory-access-control"),
          ("regulated environments", "internet-facing hosts"),
          ("auditd", "apparmor", "fail2ban", "aide", "libpam-pwquality"),
          ("audit", "selinux-policy-targeted", "fail2ban", "aide")),
    Theme("vpn-gateway", "Site-to-site VPN gateway",
          ("connect a branch office to HQ", "WireGuard tunnel endpoint"),
          ("vpn", "wireguard", "network", "firewall"), ("vpn-endpoint", "firewall"),
          ("branch connectivity", "remote maintenance access"),
          ("wireguard-tools", "nftables", "iproute2"), ("wireguard-tools", "nftables", "iproute")),
    Theme("build-agent", "CI build agent",
          ("run CI jobs", "build packages and containers"),
          ("ci", "build", "developer", "git", "compiler"), ("build-toolchain", "ssh-access"),
          ("self-hosted CI runners", "reproducible builds"),
          ("build-essential", "git", "make", "python3-venv"), ("gcc", "make", "git", "python3-pip")),
    Theme("rt-control", "Real-time industrial control node",
          ("PLC-style motion control", "deterministic fieldbus communication"),
          ("real-time", "industrial", "low-latency", "deterministic", "tsn"), ("time-sync", "low-latency"),
          ("machine control on the factory floor", "time-sensitive networking"),
          ("linuxptp", "ethtool", "rt-tests"), ("linuxptp", "ethtool", "rt-tests")),
    Theme("retail-pos", "Retail point-of-sale terminal",
          ("point of sale", "receipt printing", "barcode scanning"),
          ("retail", "pos", "point-of-sale", "kiosk"), ("peripheral-support", "auto-login"),
          ("store checkout lanes", "pop-up stores"),
          ("cups", "printer-driver-escpr", "xserver-xorg", "chromium"), ("cups", "xorg-x11-server-Xorg", "chromium")),
    Theme("video-analytics", "Video analytics pipeline",
          ("camera stream analytics", "object detection on video"),
          ("video-analytics", "vision", "camera", "gstreamer", "ai"), ("media-pipeline", "hardware-decode"),
          ("smart-city cameras", "quality inspection on a line"),
          ("gstreamer1.0-tools", "gstreamer1.0-plugins-good", "ffmpeg", "v4l-utils"),
          ("gstreamer1", "gstreamer1-plugins-good", "ffmpeg", "v4l-utils")),
    Theme("ml-inference", "Machine-learning inference server",
          ("serve ML models", "batch inference at the edge"),
          ("ai", "inference", "machine-learning", "python", "model-serving"), ("model-serving", "python-runtime"),
          ("edge AI deployments", "data-science prototypes"),
          ("python3", "python3-pip", "python3-numpy", "libgomp1"), ("python3", "python3-pip", "python3-numpy", "libgomp")),
    Theme("virt-host", "Virtualization host",
          ("run virtual machines", "consolidate legacy workloads"),
          ("virtualization", "kvm", "hypervisor", "libvirt", "qemu"), ("kvm", "vm-management"),
          ("consolidating small servers", "lab hypervisors"),
          ("qemu-system-x86", "libvirt-daemon-system", "virtinst", "bridge-utils"),
          ("qemu-kvm", "libvirt", "virt-install")),
    Theme("file-server", "Network file server",
          ("share files over SMB and NFS", "backup target"),
          ("storage", "nas", "samba", "nfs", "file-server"), ("network-shares", "persistent-storage"),
          ("small offices", "site-local backups"),
          ("samba", "nfs-kernel-server", "smartmontools"), ("samba", "nfs-utils", "smartmontools")),
    Theme("dev-workstation", "Developer workstation",
          ("day-to-day development", "debugging target images"),
          ("developer", "workstation", "desktop", "toolchain"), ("build-toolchain", "graphical-desktop"),
          ("firmware and application developers", "training labs"),
          ("git", "build-essential", "gdb", "vim", "xserver-xorg"), ("git", "gcc", "gdb", "vim-enhanced")),
    Theme("router", "Software router and firewall",
          ("route between site networks", "edge firewall"),
          ("router", "firewall", "network", "routing", "bgp"), ("routing", "firewall"),
          ("branch edge routing", "lab networks"),
          ("frr", "nftables", "dnsmasq", "conntrack"), ("frr", "nftables", "dnsmasq", "conntrack-tools")),
    Theme("time-server", "Precision time server",
          ("serve NTP and PTP time", "grandmaster clock for a plant"),
          ("ntp", "ptp", "time-sync", "chrony"), ("time-sync",),
          ("plants that need synchronised clocks", "telecom sites"),
          ("chrony", "linuxptp", "gpsd"), ("chrony", "linuxptp", "gpsd")),
    Theme("thin-client", "Thin client for remote desktops",
          ("connect to VDI sessions", "shared front-desk terminals"),
          ("thin-client", "vdi", "rdp", "desktop"), ("remote-desktop", "auto-login"),
          ("call centres", "shared terminals in clinics"),
          ("freerdp2-x11", "xserver-xorg", "openbox"), ("freerdp", "xorg-x11-server-Xorg", "openbox")),
    Theme("log-collector", "Central log collector",
          ("aggregate logs from a site", "forward logs to a SIEM"),
          ("logging", "syslog", "observability", "siem"), ("log-shipping", "persistent-storage"),
          ("security operations", "troubleshooting fleets"),
          ("rsyslog", "logrotate", "fluent-bit"), ("rsyslog", "logrotate", "fluent-bit")),
    Theme("nvr", "Network video recorder",
          ("record IP camera streams", "video retention on site"),
          ("nvr", "camera", "video", "recording", "storage"), ("media-pipeline", "persistent-storage"),
          ("shops and warehouses with CCTV", "site security"),
          ("ffmpeg", "v4l-utils", "nginx"), ("ffmpeg", "v4l-utils", "nginx")),
    Theme("telco-edge", "Telco edge packet-processing node",
          ("user-plane packet processing", "5G edge workloads"),
          ("telco", "5g", "dpdk", "networking", "low-latency"), ("packet-processing", "sr-iov"),
          ("telecom edge sites", "network function labs"),
          ("dpdk", "linuxptp", "ethtool", "pciutils"), ("dpdk", "linuxptp", "ethtool", "pciutils")),
    Theme("backup", "Backup appliance",
          ("nightly backups of site servers", "offsite replication"),
          ("backup", "restore", "storage", "replication"), ("snapshots", "persistent-storage"),
          ("branch offices without IT staff", "disaster recovery"),
          ("restic", "rsync", "borgbackup"), ("restic", "rsync", "borgbackup")),
)

EVERYDAY_TOOLS = ("vim", "curl", "htop", "tmux", "jq", "git", "rsync", "chrony", "lsof", "strace", "tcpdump",
                  "less", "wget", "nano", "ethtool", "pciutils")
SITES = ("store", "plant", "lab", "branch", "depot", "clinic", "campus", "warehouse", "hub", "line")
REGIONS = ("EMEA", "APAC", "US east", "US west", "LATAM", "Nordics", "Japan", "India")
SITE_NOTES = (
    "Customised for the {site} fleet in {region}.",
    "Adds site tooling for {region} {site} deployments.",
    "Rolled out to {site} sites in {region} by the platform team.",
    "Variant maintained for {region} {site} locations; pinned versions.",
)


@dataclass
class Source:
    """A real template: its file stem and parsed data."""

    stem: str
    data: dict[str, Any]

    @property
    def target(self) -> dict[str, Any]:
        t = self.data.get("target")
        return t if isinstance(t, dict) else {}


@dataclass
class Variant:
    name: str  # file stem, also image.name
    data: dict[str, Any]
    parent: int = -1  # index of the level-1 variant this one derives from (level 2 only)


def load_sources(roots: list[Path]) -> list[Source]:
    """Every parseable template under the roots (sorted by name for determinism)."""
    sources: list[Source] = []
    for root in roots:
        if not root.is_dir():
            continue
        for path in sorted(root.iterdir()):
            if path.suffix not in TEMPLATE_SUFFIXES or not path.is_file():
                continue
            try:
                parsed = load_mapping(path.read_bytes())
            except YamlError:
                continue
            if isinstance(parsed.data, dict) and isinstance(parsed.data.get("target"), dict):
                sources.append(Source(path.stem, parsed.data))
    return sources


def _packages(data: dict[str, Any]) -> list[str]:
    system = data.get("systemConfig") if isinstance(data.get("systemConfig"), dict) else {}
    return [str(p) for p in system.get("packages") or []]


def _base_part(stem: str, target: dict[str, Any]) -> str:
    """What is left of a source name once distribution and architecture are removed: 'minimal-raw'."""
    drop = {str(target.get("dist", "")).lower(), str(target.get("arch", "")).lower(), "x86", "64", "amd64"}
    parts = [p for p in re.split(r"[-_]", stem.lower()) if p and p not in drop and not re.fullmatch(r"\D+\d+", p)]
    return "-".join(parts[-2:]) or str(target.get("imageType", "image"))


def themed_variant(source: Source, theme: Theme, rng: random.Random, with_metadata: bool = True) -> Variant:
    """Level 1: the source re-purposed for a theme (see module docstring)."""
    target = source.target
    dist = str(target.get("dist", ""))
    arch = str(target.get("arch", ""))
    itype = str(target.get("imageType", "raw"))
    name = f"{dist}-{arch}-{theme.slug}-{_base_part(source.stem, target)}"
    data = {k: v for k, v in source.data.items() if k != "metadata"}
    image = dict(data.get("image") or {})
    image["name"] = name
    image["version"] = f"{rng.randint(1, 3)}.{rng.randint(0, 9)}.{rng.randint(0, 20)}"
    data["image"] = image
    system = dict(data.get("systemConfig") or {})
    # Overlay files live beside the source template; a variant written elsewhere cannot reference them.
    system.pop("additionalFiles", None)
    pkgs = _packages(source.data)
    extra = [p for p in (theme.deb if FAMILY.get(dist) == DEB else theme.rpm) if p not in pkgs]
    system["packages"] = pkgs + extra
    system["name"] = name[:60]
    if "hostname" in system:
        system["hostname"] = f"{theme.slug}-{rng.randint(1, 99):02d}"
    display = DISPLAY.get(dist, dist)
    description = (f"{theme.title} on {display} ({arch}), shipped as a {IMAGE_TYPE_PHRASE.get(itype, itype)}. "
                   f"Based on the {source.stem} template with {', '.join(extra[:3]) or 'its base packages'} added.")
    system["description"] = description
    data["systemConfig"] = system
    if with_metadata:
        k = rng.randint(2, len(theme.use_cases))
        # Only os-image-composer's own metadata fields: the ADR's useCase/recommendedFor words go into
        # use_cases and its capabilities into keywords (server.upstream_compat), so every variant loads there.
        data = {"metadata": {
            "description": description,
            "use_cases": [theme.slug, *rng.sample(theme.use_cases, k), *theme.recommended_for],
            "keywords": [*theme.keywords, dist, *(c for c in theme.capabilities if c not in theme.keywords)],
        }, **data}
    return Variant(name, data)


def site_variant(parent: Variant, parent_index: int, serial: int, rng: random.Random) -> Variant:
    """Level 2: a level-1 variant customised for one site (see module docstring)."""
    site = rng.choice(SITES)
    region = rng.choice(REGIONS)
    name = f"{parent.name}-{site}{serial}"
    note = rng.choice(SITE_NOTES).format(site=site, region=region)
    data = dict(parent.data)
    image = dict(data.get("image") or {})
    image["name"] = name
    image["version"] = f"{rng.randint(1, 4)}.{rng.randint(0, 12)}.{serial % 50}"
    data["image"] = image
    system = dict(data.get("systemConfig") or {})
    pkgs = list(system.get("packages") or [])
    for tool in rng.sample(EVERYDAY_TOOLS, rng.randint(0, 2)):
        if tool not in pkgs:
            pkgs.append(tool)
    system["packages"] = pkgs
    if "hostname" in system:
        system["hostname"] = f"{site}{serial % 10000:04d}"
    system["description"] = f"{system.get('description', '')} {note}".strip()
    data["systemConfig"] = system
    meta = data.get("metadata")
    if isinstance(meta, dict):
        meta = dict(meta)
        meta["description"] = f"{meta.get('description', '')} {note}".strip()
        meta["keywords"] = [*meta.get("keywords", []), site]
        data["metadata"] = meta
    return Variant(name, data, parent_index)


def make_pool(sources: list[Source], size: int, seed: int = 7) -> list[Variant]:
    """``size`` distinct level-1 variants spread evenly over sources and themes (a few without metadata)."""
    rng = random.Random(seed)
    pairs = [(s, t) for s in sources for t in THEMES]
    rng.shuffle(pairs)
    pool: list[Variant] = []
    seen: set[str] = set()
    for source, theme in pairs:
        # Real libraries are not all annotated: one template in eight carries no metadata block.
        variant = themed_variant(source, theme, rng, with_metadata=rng.random() >= 0.125)
        if variant.name in seen:
            continue
        seen.add(variant.name)
        pool.append(variant)
        if len(pool) >= size:
            break
    return pool


def parent_order(pool_size: int, seed: int = 11) -> list[int]:
    """The order in which level-2 variants cycle through the pool (every parent used equally often)."""
    order = list(range(pool_size))
    random.Random(seed).shuffle(order)
    return order


def corpus_variant(pool: list[Variant], order: list[int], serial: int, seed: int = 11) -> Variant:
    """Level-2 variant number ``serial``; depends only on (pool, seed, serial), so any range can be built alone."""
    p = order[serial % len(order)]
    return site_variant(pool[p], p, serial, random.Random(seed * 1_000_003 + serial))


def make_corpus(pool: list[Variant], size: int, seed: int = 11, start: int = 0) -> list[Variant]:
    """Level-2 variants with serials ``start`` .. ``start + size - 1``."""
    order = parent_order(len(pool), seed)
    return [corpus_variant(pool, order, serial, seed) for serial in range(start, start + size)]


# ---- YAML writing ------------------------------------------------------------------------------------------

_PLAIN = re.compile(r"^[A-Za-z][A-Za-z0-9_./+-]*$")
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_SPECIAL = {"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"}


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    text = str(value)
    if _PLAIN.match(text) and text.lower() not in _SPECIAL:
        return text
    # A JSON string is a valid YAML double-quoted scalar.
    return json.dumps(text, ensure_ascii=False)


def _key(key: Any) -> str:
    text = str(key)
    return text if _KEY.match(text) and text.lower() not in _SPECIAL else json.dumps(text, ensure_ascii=False)


def _emit(value: Any, indent: int, out: list[str]) -> None:
    pad = " " * indent
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, dict) and v or isinstance(v, list) and v:
                out.append(f"{pad}{_key(k)}:")
                _emit(v, indent + 2, out)
            else:
                out.append(f"{pad}{_key(k)}: {_inline(v)}")
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict) and item:
                sub: list[str] = []
                _emit(item, indent + 2, sub)
                out.append(f"{pad}- {sub[0].lstrip()}")
                out.extend(sub[1:])
            elif isinstance(item, list) and item:
                sub = []
                _emit(item, indent + 2, sub)
                out.append(f"{pad}- {sub[0].lstrip()}")
                out.extend(sub[1:])
            else:
                out.append(f"{pad}- {_inline(item)}")


def _inline(value: Any) -> str:
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return _scalar(value)


def render_yaml(data: dict[str, Any], header: str = "") -> str:
    """Block-style YAML that parses back to ``data`` exactly."""
    out = [f"# {line}" for line in header.splitlines()] if header else []
    _emit(data, 0, out)
    return "\n".join(out) + "\n"

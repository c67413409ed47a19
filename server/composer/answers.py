"""Answering questions about a template ("what packages are included?", "does it have docker?") from the
template itself, without changing it."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field

from ..knowledge.file_shares import described
from ..knowledge.loader import Capabilities, load_capabilities
from ..knowledge.sizes import CASUAL_SIZE, fmt_size, parse_casual, template_mib
from ..knowledge.static_network import read_all
from ..knowledge.system_settings import Setting, load_settings
from .adherence import let_in
from .coherence import written_commands
from .editing import mapping_at, short_list, template_packages
from .layout import Layout, is_fill
from .phrasing import alternatives


def summarize(data: dict, question: str) -> str:
    """Answer an explanation question about a template from the template itself."""
    caps = load_capabilities()
    q = (question or "").lower()
    sections = {
        "packages": r"\bpackages?\b|\binstalled\b|\bsoftware\b|\binclude[sd]?\b|\bcontain",
        "disk": r"\bdisk\b|\bpartition|\blayout\b|\bstorage\b|\bmount|\bsize\b|\bartifact|\bformat\b|\bqcow|\bvhd"
                r"|\bspace\b|\bhow\s+(?:big|large)\b|(?<![\w.])/[\w./-]*",
        "kernel": r"\bkernel\b|\bcmdline\b|\bcommand[\s-]?line\b|\bboot\s+param",
        "users": r"\busers?\b|\baccounts?\b|\blogins?\b|\blog\s*-?\s*in\b|\bwho\b",
        "boot": r"\bboot\s*loader\b|\bgrub\b|\bsystemd-boot\b|\bsecure\s*boot\b|\bimmutab|\bread-only\b|\bverity\b|\buefi\b",
        "repos": r"\brepo(?:sitor(?:y|ies))?s?\b|\bsources?\b",
        "target": r"\b(?:os|distro|distribution|arch(?:itecture)?|image\s+type|target|platform)\b",
        "host": r"\bhost\s*name\b",
        "firewall": r"\bfirewall|\bports?\b|\bopen\b|\bufw\b|\bfirewalld\b|\bnftables\b",
        "network": r"\bip(?:v4)?\b|\bip\s+address|\bnetwork(?:ing)?\b(?!\s+(?:share|mount|drive))|\bgateway\b|\bdhcp\b"
                   r"|\bstatic\b|\binterfaces?\b|\beth\d",
        "shares": r"\bshar(?:e|es|ed|ing)\b|\bexport(?:s|ed)?\b|\bsamba\b|\bsmb\b|\bnfs\b",
    }
    asked = [name for name, pattern in sections.items() if re.search(pattern, q)]
    why = _why_answer(data, q, caps)
    if why:
        return why
    fit = _fit_answer(data, q, caps)
    if fit:
        return fit
    if _WILL_IT_BUILD.search(q):
        return ("Will it build: this answer reads the template alone, whose validity against os-image-composer's "
                "schema and our checks is in this reply. Whether every package's dependencies resolve, nothing "
                "conflicts and the install fits the root partition is the build check, which reads the repository "
                "indexes: validate_template with check_build=true (or verify_packages with closure=true).")
    mount = _partition_asked(data, q, caps)
    if mount:
        return mount
    setting = _setting_answer(data, q)
    if setting:
        return setting
    presence = _presence_answer(data, q, caps)
    if presence:
        return presence
    if (
        not asked
        or re.search(r"\b(?:summar|overview|explain|describe|what\s+is\s+this|what\s+does\s+(?:it|this))", q)
        and len(asked) < 2
    ):
        asked = asked or list(sections)
        return "\n".join(_overview(data, caps, asked if len(asked) < len(sections) else None))
    return "\n".join(_overview(data, caps, asked))

# "will it build?", "does this boot?", "can the image be built?"
_WILL_IT_BUILD = re.compile(r"\b(?:will|would|does|do|can|could)\s+(?:it|this|that|the\s+(?:image|template))\s+"
                            r"(?:(?:actually|really|still)\s+)?(?:build|boot|be\s+built|work)\b")


def _why_answer(data: dict, q: str, caps: Capabilities) -> str | None:
    """"why is containerd there?": what a listed package is there for, by the capability group it belongs to."""
    m = re.search(r"\bwhy\s+(?:is|are|does|do)\s+(?:it\s+(?:have|include)\s+|there\s+)?(?:an?\s+|the\s+)?"
                  r"([a-z0-9][\w.+-]*)", q)
    if not m or m.group(1) not in {p.lower() for p in template_packages(data)}:
        return None
    name = m.group(1)
    groups = [g for g in caps.groups_of_package(name) if g in caps.groups]
    if groups:
        return (f"{name} is there as part of " + "; ".join(f"{g} ({caps.groups[g].description})" for g in groups)
                + f". Say 'remove {name}' to take it out alone.")
    return (f"{name} is listed in the template's packages, and no capability group explains it: it came with the "
            f"starting template or was asked for. Say 'remove {name}' to take it out.")


@dataclass
class _Trial:
    """A layout change tried on a copy, to see whether it could be made (layout.EditLog)."""

    caps: Capabilities
    changes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


# "will it fit on a 16G disk?", "does this fit in a 32 GB sd card?", "is it small enough for an 8 gig stick?"
_FIT = re.compile(rf"\b(?:(?:will|would|does|do|can|could)\s+(?:it|this|that|the\s+image)\s+(?:fit|go)\s+(?:on|in|onto|into)"
                  rf"|(?:small|little)\s+enough\s+(?:for|to\s+fit\s+(?:on|in|onto|into))|fits?\s+(?:on|in|onto|into))"
                  rf"\s+(?:an?\s+|the\s+|my\s+|our\s+)?({CASUAL_SIZE})", re.I)


def _fit_answer(data: dict, q: str, caps: Capabilities) -> str | None:
    """"will it fit on a 16G disk?": yes when the image's disk is no larger; else whether it can be made that small
    (the disk shrunk on a copy, as an edit would: data partitions at their minimum, root at 1GiB)."""
    m = _FIT.search(q)
    disk = data.get("disk") if isinstance(data.get("disk"), dict) else None
    asked = parse_casual(m.group(1)) if m else None
    if not m or disk is None or not asked:
        return None
    size, have = fmt_size(asked), template_mib(disk.get("size"))
    if have is None:
        return f"The template sets no disk size, so whether it fits {size} is not known; say 'make the disk {size}'."
    if have <= asked:
        return f"Yes: the image's disk is {disk.get('size')}, no more than {size}."
    trial = _Trial(caps)
    Layout(trial, copy.deepcopy(disk)).set_size(size)
    if trial.problems:
        return f"No: the image's disk is {disk.get('size')}, and it cannot be made {size}: {trial.problems[0]}."
    shrunk = [c.removesuffix(" to fit the disk") for c in trial.changes if c.startswith("partition ")]
    return (f"Not as it is: the image's disk is {disk.get('size')}, more than {size}. Its partitions fit in {size}"
            + (f" once shrunk ({'; '.join(shrunk)})" if shrunk else "") + f": say 'make the disk {size}' to shrink it.")


def _partition_asked(data: dict, q: str, caps: Capabilities) -> str | None:
    """"how much space does /var/lib/docker get?", "how big is root?": that partition's line alone."""
    disk = data.get("disk") if isinstance(data.get("disk"), dict) else None
    named = re.findall(r"(?<![\w.])(/[\w./-]*)", q) + (["/"] if re.search(r"\broot(?:\s+partition|fs)?\b", q) else [])
    if not disk or not named:
        return None
    lines = [line for line in _overview(data, caps, ["disk"])[1:]
             if any(line.endswith(f"mounted at {m.rstrip('/') or '/'}") for m in named)]
    return "\n".join(lines).strip() or None


def _firewall(sc: dict, packages: list[str], caps: Capabilities) -> str:
    """The firewall the template installs (the firewall group's software) and what its configuration commands let
    in (firewalld's offline command, ufw's rules), as server/composer/system_edits.open_ports writes them."""
    universe = caps.group_package_universe("firewall")
    installed = [p for p in packages if p in universe]
    if not installed:
        return "Firewall: none installed, so nothing blocks a port."
    opened = let_in(written_commands(sc))
    return (f"Firewall: {', '.join(installed)}; " + (f"lets in {', '.join(opened)}" if opened
                                                     else "no rule written here, so its own default applies") + ".")


def _setting_answer(data: dict, q: str) -> str | None:
    """"what timezone is it in?", "is ipv6 off?", "what's the ssh port?": a setting the question names by its words
    (system_settings.yaml), answered from the commands and kernel parameters that write it, or said unset with
    whose default applies."""
    for setting in sorted(load_settings().values(), key=lambda s: -max(map(len, s.words))):
        if setting.value == "none" or not (setting.command or setting.sysctl or setting.cmdline or setting.runs):
            continue
        words = alternatives(setting.words, between=r"[\s_-]*")
        if not re.search(rf"(?<![\w-])(?:{words})(?![\w-])", q):
            continue
        sc = mapping_at(data, "systemConfig")
        commands = [str(c.get("cmd") or "") for c in sc.get("configurations") or [] if isinstance(c, dict)]
        pattern = setting.replaces or (re.escape(setting.sysctl.split("=")[0].strip()) if setting.sysctl else "")
        written = [c for c in commands if pattern and re.search(pattern, c)]
        cmdline = str(mapping_at(sc, "kernel").get("cmdline") or "").split()
        keys = {p.split("=")[0] for p in setting.cmdline}
        params = [p for p in cmdline if p.split("=")[0] in keys]
        if written or params:
            return f"{setting.name}: " + "; ".join([*(f"set by `{c}`" for c in written),
                                                     *(f"kernel parameter {p}" for p in params)]) + "."
        kernel = bool(setting.cmdline or setting.sysctl)  # a kernel's setting: "the kernel's default" is right
        default = setting.default if kernel or setting.default != Setting.default else "the distribution's own"
        return f"{setting.name}: not set in the template, so {default} applies."
    return None


def _presence_answer(data: dict, q: str, caps: Capabilities) -> str | None:
    """ "does it have docker?" / "is vim included?" -> a direct yes or no."""
    m = re.search(
        r"\b(?:does\s+(?:it|this|the\s+image)\s+(?:have|include|contain|ship)|is|are|has\s+it\s+got|any)\s+([a-z0-9][\w.+-]*)",
        q,
    )
    if not m:
        return None
    word = m.group(1)
    if word in ("it", "this", "there", "the", "a", "an", "immutability", "immutable", "secure"):
        return None
    pkgs = template_packages(data)
    group = caps.group_for_word(word)
    wanted = (
        caps.group_package_universe(group)
        if group and word not in caps.known_packages()
        else caps.aliases(word)
    )
    found = sorted(p for p in pkgs if p in wanted or p.lower() in {w.lower() for w in wanted})
    if found:
        return f"Yes: {word} is provided by {', '.join(found)}."
    if group or word in caps.known_packages():
        return (
            f"No: the template does not list {word}"
            + (f" (nothing from the {group} group)" if group else "")
            + "."
        )
    return None

def _overview(data: dict, caps: Capabilities, only: list[str] | None) -> list[str]:
    want = (lambda s: True) if only is None else (lambda s: s in only)
    lines: list[str] = []
    image = mapping_at(data, "image")
    target = mapping_at(data, "target")
    sc = mapping_at(data, "systemConfig")
    meta = mapping_at(data, "metadata")
    dist = str(target.get("dist", "?"))
    label = caps.dists[dist].label if dist in caps.dists else dist
    if only is None or "target" in only:
        lines.append(
            f"{image.get('name', 'unnamed')} {image.get('version', '')}: {label} ({target.get('os', '?')}), "
            f"{target.get('arch', '?')}, {target.get('imageType', '?')} image."
        )
        if meta.get("description"):
            lines.append(f"Purpose: {meta['description']}")
        elif sc.get("description"):
            lines.append(f"Purpose: {sc['description']}")
    if want("packages"):
        pkgs = [str(p) for p in sc.get("packages") or []]
        if pkgs:
            groups = sorted({g for p in pkgs for g in caps.groups_of_package(p)})
            lines.append(f"Packages ({len(pkgs)}): {short_list(pkgs, 60)}")
            if groups:
                lines.append("Capabilities recognised: " + ", ".join(groups))
        else:
            lines.append("Packages: none listed; the distribution's default package set applies.")
    if want("disk"):
        disk = data.get("disk") if isinstance(data.get("disk"), dict) else None
        if disk:
            arts = ", ".join(
                a.get("type", "?") + (f" ({a['compression']})" if a.get("compression") else "")
                for a in disk.get("artifacts") or []
                if isinstance(a, dict)
            )
            lines.append(
                f"Disk: {disk.get('size', 'size unset')} {disk.get('partitionTableType', '')}, artifacts: {arts or 'none'}."
            )
            disk_mib = template_mib(disk.get("size"))
            for p in disk.get("partitions") or []:
                if isinstance(p, dict):
                    fill = is_fill(p.get("end"))
                    end = "end of disk" if fill else p.get("end")
                    start, stop = template_mib(p.get("start")), disk_mib if fill else template_mib(p.get("end"))
                    # "how big is root?": the size itself, not only where it starts and ends
                    size = f"{fmt_size(stop - start)}{' (the rest of the disk)' if fill else ''}, " if (
                        start is not None and stop is not None and stop > start) else ""
                    lines.append(
                        f"  - {p.get('id', '?')}: {size}{p.get('type', '?')} {p.get('fsType', '')} "
                        f"{p.get('start', '?')} -> {end}, mounted at {p.get('mountPoint', '-')}"
                    )
        else:
            lines.append("Disk: no disk section; the distribution's default layout applies.")
    if want("kernel"):
        kernel = mapping_at(sc, "kernel")
        if kernel:
            lines.append(
                f"Kernel: version {kernel.get('version', 'default')}, packages {', '.join(map(str, kernel.get('packages') or [])) or 'default'}, "
                f"cmdline {kernel.get('cmdline', 'default')!r}."
            )
        else:
            lines.append("Kernel: distribution default.")
    if want("users"):
        users = [u for u in sc.get("users") or [] if isinstance(u, dict)]
        if users:
            lines.append(
                "Users: "
                + "; ".join(
                    f"{u.get('name')}"
                    + (" (sudo)" if u.get("sudo") else "")
                    + (f" groups {', '.join(map(str, u['groups']))}" if u.get("groups") else "")
                    for u in users
                )
            )
        else:
            lines.append("Users: none defined.")
    if want("boot"):
        boot = mapping_at(sc, "bootloader")
        imm = mapping_at(sc, "immutability")
        secure = any(k.startswith("secureBoot") for k in imm)
        lines.append(
            f"Boot: {boot.get('provider', 'default bootloader')} ({boot.get('bootType', 'efi')}); immutability "
            f"{'enabled' if imm.get('enabled') else 'disabled' if imm else 'default'}; secure boot {'configured' if secure else 'not configured'}."
        )
    if want("firewall") and only is not None:
        lines.append(_firewall(sc, template_packages(data), caps))
    if want("network") and only is not None:
        commands = [str(c.get("cmd") or "") for c in sc.get("configurations") or [] if isinstance(c, dict)]
        statics = read_all(commands)
        lines.append("Network: " + ("; ".join(s.describe() for s in statics) + ("; any other interface by DHCP" if all(s.interface for s in statics) else "")
                                    if statics else "no static address written, so the wired interfaces get theirs "
                                    "by DHCP (the distribution's default configuration)") + ".")
    if want("shares") and only is not None:
        shares = described([str(c.get("cmd") or "") for c in sc.get("configurations") or [] if isinstance(c, dict)])
        lines.append("Shares: " + ("; ".join(shares) if shares else "no folder is shared by this template") + ".")
    if want("host") and sc.get("hostname"):
        lines.append(f"Hostname: {sc['hostname']}.")
    if want("repos"):
        repos = [r for r in data.get("packageRepositories") or [] if isinstance(r, dict)]
        if repos:
            lines.append(
                "Extra repositories: "
                + "; ".join(f"{r.get('codename')} {r.get('url', r.get('path', ''))}" for r in repos)
            )
        elif only is not None:
            lines.append("Extra repositories: none (distribution repositories only).")
    return lines

"""Capability knowledge: what plain words mean in packages, per distribution family.

The facts live in ``resources/capabilities.yaml`` (learnt from the upstream templates and
per-distro defaults); this module loads them once and answers questions such as "which
packages give monitoring on azl3?", "which family is el10?", "what is docker.io called on
Azure Linux?". The composer, search ranking and package suggestions share it.

Keys inside the YAML that are indexed by distribution accept, from most to least
specific: a dist id (``ubuntu24``), a family id (the ``target.os`` value, ``ubuntu``),
or a package type (``deb`` / ``rpm``).
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..core.paths import resource_text
from ..core.yamlsafe import load_mapping
from .entries import (
    NOT_TARGET_KEYS,
    Dist,
    Family,
    Group,
    Hardware,
    UseCase,
    VendorStack,
    as_tuple,
    entry_names,
    read_family,
    read_group,
)
from .shell_words import path_words

logger = logging.getLogger(__name__)

RESOURCE = "capabilities.yaml"
ARCHES = ("x86_64", "aarch64")

# Package-name characters: a word boundary that does not split "docker.io" or "grub-efi-amd64".
_NAME_CHARS = r"A-Za-z0-9+_.:~-"


def normalize_phrase(text: str) -> str:
    """Lower-case, treat '-' and '_' as spaces, collapse whitespace: how triggers are compared."""
    return " ".join(re.sub(r"[-_]+", " ", text.lower()).split())


class Capabilities:
    """Read-only view over ``capabilities.yaml``. Build with :func:`load_capabilities`."""

    def __init__(self, raw: Mapping[str, Any]):
        self.arch_info: dict[str, dict[str, Any]] = dict(raw.get("architectures") or {})
        self.partition_types: dict[str, str] = {
            k: str(v).lower() for k, v in (raw.get("partition_types") or {}).items()
        }
        self.mount_types: dict[str, str] = dict(raw.get("mount_types") or {})
        self.layouts: dict[str, dict[str, Any]] = dict(raw.get("layouts") or {})
        self.families: dict[str, Family] = {
            fid: read_family(fid, spec) for fid, spec in (raw.get("families") or {}).items()
        }
        self.dists: dict[str, Dist] = {d.id: d for f in self.families.values() for d in f.dists.values()}
        self.groups: dict[str, Group] = {
            gid: read_group(gid, spec) for gid, spec in (raw.get("groups") or {}).items()
        }
        self.use_cases: dict[str, UseCase] = {
            uid: UseCase(uid, str(spec.get("label", uid)), tuple(str(w) for w in spec.get("words") or ()))
            for uid, spec in (raw.get("use_cases") or {}).items()
        }
        self.full_release_names: dict[str, str] = {
            normalize_phrase(str(k)): str(v).lower() for k, v in (raw.get("full_release_names") or {}).items()}
        self.os_nouns: tuple[str, ...] = tuple(str(n).lower() for n in raw.get("os_nouns") or ())
        # "headless" -> the groups it takes out (normalized phrases).
        self.absence_words: dict[str, tuple[str, ...]] = {
            normalize_phrase(str(w)): as_tuple(g) for w, g in (raw.get("absence_words") or {}).items()}
        self.vendor_stacks: dict[str, VendorStack] = {
            str(k): VendorStack(as_tuple(v.get("words")), as_tuple(v.get("instead_of")), str(v.get("note") or ""))
            for k, v in (raw.get("vendor_stacks") or {}).items()}
        hardware = raw.get("hardware") or {}
        self.hardware = Hardware(as_tuple(hardware.get("words")), as_tuple(hardware.get("leave_groups")),
                                 tuple(re.compile(p) for p in as_tuple(hardware.get("vm_kernels"))),
                                 as_tuple(hardware.get("virtual_words")))
        self.portable: frozenset[str] = frozenset(str(p) for p in raw.get("portable") or ())
        self.common_software: frozenset[str] = frozenset(str(p) for p in raw.get("common_software") or ())
        self._equivalents: list[dict[str, Any]] = [dict(e) for e in raw.get("equivalents") or ()]
        # The rules package_names.py applies beyond the equivalences (see `package_names` in the YAML).
        self.package_name_rules: dict[str, Any] = dict(raw.get("package_names") or {})
        self._arch_renames: list[dict[str, str]] = [dict(r) for r in raw.get("arch_renames") or ()]
        self._x86_only: tuple[re.Pattern[str], ...] = tuple(re.compile(p) for p in raw.get("x86_only") or ())
        self._x86_only_cmdline = tuple(re.compile(p) for p in raw.get("x86_only_cmdline") or ())
        self._class_of: dict[str, int] = {}
        for index, entry in enumerate(self._equivalents):
            for name in entry_names(entry):
                self._class_of.setdefault(name.lower(), index)
        unsupported = raw.get("unsupported") or {}
        self.unsupported_os: dict[str, dict[str, Any]] = {
            str(k).lower(): dict(v or {}) for k, v in (unsupported.get("os") or {}).items()
        }
        self.unsupported_arch: dict[str, dict[str, Any]] = {
            str(k).lower(): dict(v or {}) for k, v in (unsupported.get("arch") or {}).items()
        }
        self.exclusive: dict[str, tuple[str, ...]] = {
            str(k): as_tuple(v) for k, v in (raw.get("exclusive") or {}).items()
        }
        self.addons: dict[str, tuple[re.Pattern[str], ...]] = {
            str(k): tuple(re.compile(p) for p in as_tuple(v)) for k, v in (raw.get("addons") or {}).items()}
        self.base_groups: frozenset[str] = frozenset(str(g) for g in raw.get("base_groups") or ())
        self.system_groups: frozenset[str] = frozenset(str(g) for g in raw.get("system_groups") or ())
        self._base_system: dict[str, tuple[str, ...]] = {
            str(k): as_tuple(v) for k, v in (raw.get("base_system") or {}).items()
        }
        self._triggers: dict[str, str] = {}
        for group in self.groups.values():
            for trigger in group.triggers:
                self._triggers.setdefault(normalize_phrase(trigger), group.id)

    # ------------------------------------------------------------------ distributions

    def unsupported_os_pattern(self, phrase: str) -> str:
        """A regular expression naming an operating system no template targets (``unsupported.os``), with its
        release in group 1 when one follows. An ambiguous word ("windows", "alpine") names it only with its maker
        before it, or a release, an edition or an image noun after it ("microsoft windows", "windows 11", "alpine linux",
        "an alpine image")."""
        words = r"[\s_-]*".join(re.escape(w) for w in re.split(r"[\s_-]+", phrase) if w)
        release = r"(?:\s*(?:linux\s*)?(\d+(?:\.\d+)?))?"
        if not self.unsupported_os[phrase].get("ambiguous"):
            return rf"(?<![\w.+/-]){words}{release}(?![\w+/-])"
        edition = r"server|iot|xp|vista|ltsc|embedded|enterprise|pro|home|edition|linux|os"
        # an image of it is the OS as well ("a tiny alpine image", "a windows vm"), in a request for an image
        image = r"image|images|vm|iso|box|based|install|installation"
        return (rf"(?<![\w.+/-])(?:(?:microsoft|vmware|google)\s+{words}|{words}(?=\s*(?:linux\s*)?\d|\s+(?:{edition})\b"
                rf"|[\s-]+(?:{image})\b))"
                rf"(?:\s+(?:{edition})\b)*{release}(?![\w+/-])")

    @functools.cached_property
    def unsupported_os_regexes(self) -> tuple[tuple[str, re.Pattern[str]], ...]:
        """Each unsupported operating system's phrase with its :meth:`unsupported_os_pattern` compiled
        (case-insensitive), the longest phrase first so that it claims its span before a name inside it."""
        return tuple((phrase, re.compile(self.unsupported_os_pattern(phrase), re.I))
                     for phrase in sorted(self.unsupported_os, key=len, reverse=True))

    def maker_pattern(self, maker: str) -> str:
        """A regular expression naming an operating system by its maker (a family's ``makers``): the maker before an
        OS noun ("microsoft's linux", "intel's own edge os") or after one with from/by ("a distro from microsoft")."""
        maker_re = r"[\s_-]*".join(re.escape(w) for w in maker.split())
        nouns = "|".join(r"\s+".join(map(re.escape, n.split())) for n in sorted(self.os_nouns, key=len, reverse=True))
        return (rf"(?<![\w.+/-])(?:{maker_re}(?:['’]s)?(?:\s+own)?(?:\s+(?:edge|embedded|cloud|server|iot))?"
                rf"\s+(?:{nouns})|(?:{nouns})\s+(?:(?:made|built|maintained)\s+)?(?:from|by)\s+{maker_re})(?![\w+/-])")

    @functools.cached_property
    def maker_regexes(self) -> tuple[tuple[str, re.Pattern[str]], ...]:
        """(family, its :meth:`maker_pattern` compiled) for each family's makers: read for every search query."""
        return tuple((family.id, re.compile(self.maker_pattern(m), re.I))
                     for family in self.families.values() for m in family.makers)

    def maker_named(self, text: str) -> str | None:
        """The family an operating system named by its maker in ``text`` is, if any."""
        return next((family for family, pattern in self.maker_regexes if pattern.search(text)), None)

    def family_of(self, os_or_dist: str | None) -> str | None:
        """Family id (the target.os value) for an os id, a dist id or a common spelling."""
        if not os_or_dist:
            return None
        key = os_or_dist.strip().lower()
        if key in self.families:
            return key
        if key in self.dists:
            return self.dists[key].family
        if key in ("deb", "rpm"):
            return None
        phrase = normalize_phrase(key)
        for dist in self.dists.values():
            if phrase in (normalize_phrase(w) for w in dist.words):
                return dist.family
        for family in self.families.values():
            if phrase in (normalize_phrase(w) for w in family.words):
                return family.id
        return None

    def dist_of(self, os_or_dist: str | None) -> str | None:
        """Dist id for a dist id or spelling; a bare family gives its default dist."""
        if not os_or_dist:
            return None
        key = os_or_dist.strip().lower()
        if key in self.dists:
            return key
        phrase = normalize_phrase(key)
        for dist in self.dists.values():
            if phrase in (normalize_phrase(w) for w in dist.words):
                return dist.id
        family = self.family_of(key)
        return self.families[family].default_dist if family else None

    def family(self, os_or_dist: str) -> Family | None:
        fid = self.family_of(os_or_dist)
        return self.families.get(fid) if fid else None

    def pkg_type(self, os_or_dist: str | None) -> str | None:
        fam = self.family(os_or_dist) if os_or_dist else None
        return fam.pkg_type if fam else None

    def arch_of(self, word: str | None) -> str | None:
        """Canonical template arch (x86_64 / aarch64) for any common spelling."""
        if not word:
            return None
        key = word.strip().lower()
        for arch, info in self.arch_info.items():
            if key == arch or key in (str(a).lower() for a in info.get("aliases") or ()):
                return arch
        return None

    def arch_search_words(self, arch: str) -> tuple[str, ...]:
        """The single words that name an architecture in template search, in their written order."""
        return as_tuple(self.arch_info.get(arch, {}).get("search_words"))

    def root_type(self, arch: str) -> str:
        return str(self.arch_info.get(arch, {}).get("root_type", "linux-root-amd64"))

    def _keys(self, os_or_dist: str | None) -> list[str]:
        """Lookup keys from most to least specific: dist, family, package type."""
        if not os_or_dist:
            return []
        keys: list[str] = []
        key = os_or_dist.lower()
        if key in self.dists:
            keys.append(key)
        fid = self.family_of(key)
        if fid:
            keys.append(fid)
            keys.append(self.families[fid].pkg_type)
        return keys

    def _pick(self, mapping: Mapping[str, Any], os_or_dist: str | None) -> Any:
        for key in self._keys(os_or_dist):
            if key in mapping:
                return mapping[key]
        return None

    def base_system(self, os_or_dist: str) -> set[str]:
        """Packages any image of the distribution carries (base_system in capabilities.yaml, all levels)."""
        return {name for key in self._keys(os_or_dist) for name in self._base_system.get(key, ())}

    def kernel_version(self, dist: str) -> str | None:
        info = self.dists.get(self.dist_of(dist) or "")
        return info.kernel_version if info else None

    def kernel_packages(self, os_or_dist: str, arch: str, *, realtime: bool = False) -> list[str]:
        """Kernel packages for a distribution and arch; the PREEMPT_RT flavour when asked and known."""
        if realtime:
            flavours = (
                self._pick(self.groups["realtime"].kernel_packages, os_or_dist)
                if "realtime" in self.groups
                else None
            )
            if flavours and flavours.get(arch):
                return list(flavours[arch])
        info = self.dists.get(self.dist_of(os_or_dist) or "")
        return list(info.kernel_packages.get(arch, ())) if info else []

    def bootloader_packages(self, os_or_dist: str, arch: str, provider: str) -> list[str]:
        fam = self.family(os_or_dist)
        if not fam:
            return []
        provider = "grub" if provider.startswith("grub") else provider
        return list(fam.bootloader_packages.get(provider, {}).get(arch, ()))

    def all_bootloader_packages(self, os_or_dist: str) -> set[str]:
        fam = self.family(os_or_dist)
        if not fam:
            return set()
        return {
            p for by_arch in fam.bootloader_packages.values() for names in by_arch.values() for p in names
        }

    def is_specific_to(self, package: str, os_or_dist: str) -> bool:
        """True when the name only makes sense in that family (ubuntu-minimal, tdnf, ...)."""
        fam = self.family(os_or_dist)
        return fam is not None and any(p.search(package) for p in fam.specific)

    # ------------------------------------------------------------------ groups

    def group_for_word(self, word: str) -> str | None:
        """Capability group a word or phrase triggers ('docker' -> 'containers'), or None."""
        return self._triggers.get(normalize_phrase(word))

    def triggers(self) -> dict[str, str]:
        """Every normalized trigger phrase -> group id."""
        return dict(self._triggers)

    def group_available(self, group: str, os_or_dist: str, arch: str | None = None) -> bool:
        spec = self.groups.get(group)
        if spec is None:
            return False
        if arch == "aarch64" and spec.x86_only:
            return False
        return (
            self._pick(spec.packages, os_or_dist) is not None
            or self._pick(spec.kernel_packages, os_or_dist) is not None
        )

    def packages_for(self, group: str, family: str, arch: str | None = None) -> list[str]:
        """Package names the group stands for on a family or dist ([] when it has none there)."""
        spec = self.groups.get(group)
        if spec is None:
            return []
        if arch == "aarch64" and spec.x86_only:
            return []
        names = list(self._pick(spec.packages, family) or ())
        if arch:
            pkg_type = self.pkg_type(family)
            out: list[str] = []
            for name in names:
                renamed = self.rename_for_arch(name, pkg_type, arch)
                if renamed and renamed not in out:
                    out.append(renamed)
            names = out
        return names

    def group_note(self, group: str, os_or_dist: str) -> str | None:
        spec = self.groups.get(group)
        return self._pick(spec.notes, os_or_dist) if spec else None

    def group_repositories(self, group: str, os_or_dist: str) -> list[dict]:
        spec = self.groups.get(group)
        return [dict(r) for r in (self._pick(spec.repositories, os_or_dist) or ())] if spec else []

    def group_configurations(self, group: str, os_or_dist: str) -> list[dict]:
        spec = self.groups.get(group)
        return [dict(c) for c in (self._pick(spec.configurations, os_or_dist) or ())] if spec else []

    def group_words(self, group: str) -> set[str]:
        """The one-word names of a group (its id and one-word triggers): a host or user name made of one of them
        ("kiosk", "podman-svc", "rt-controller") names the group."""
        spec = self.groups.get(group)
        if spec is None:
            return set()
        return {w.lower() for w in (group, *spec.triggers, *spec.account_words,
                                    *(m.rstrip("/").rsplit("/", 1)[-1] for m in spec.mounts)) if " " not in w}

    def names_group(self, name: str, groups: Iterable[str]) -> bool:
        """Whether a host or user name names one of ``groups`` ("www01" a web server's, by its /var/www)."""
        words = {w for g in groups for w in self.group_words(g)}
        return bool(set(re.split(r"[-_.]+|(?<=[a-z])\d+$", name.lower())) & words)

    def group_users(self, group: str, os_or_dist: str) -> list[dict]:
        """Accounts the group's configuration runs as (the kiosk session's user)."""
        spec = self.groups.get(group)
        return [dict(u) for u in (self._pick(spec.users, os_or_dist) or ())] if spec else []

    def group_cmdline(self, group: str, os_or_dist: str, mode: str | None = None) -> list[str]:
        spec = self.groups.get(group)
        if spec is None:
            return []
        way = spec.modes.get(mode or "")
        chosen = self._pick(way.cmdline_append, os_or_dist) if way is not None else None
        return list(chosen if chosen is not None else self._pick(spec.cmdline_append, os_or_dist) or ())

    def group_switch_off(self, group: str, os_or_dist: str) -> list[str]:
        """The kernel parameters that switch ``group``'s software off at boot on this target (``switch_off``)."""
        spec = self.groups.get(group)
        return list(self._pick(spec.switch_off, os_or_dist) or ()) if spec else []

    def group_own_parameters(self, group: str) -> set[str]:
        """The names of the kernel parameters ``group`` sets, on any target and in any mode (selinux, enforcing)."""
        spec = self.groups.get(group)
        if spec is None:
            return set()
        lists = [*spec.cmdline_append.values(), *(v for m in spec.modes.values() for v in m.cmdline_append.values()),
                 *spec.switch_off.values()]
        return {p.split("=", 1)[0] for params in lists for p in params}

    def mode_note(self, group: str, mode: str, os_or_dist: str) -> str | None:
        """What to say about running ``group`` in ``mode`` on this target (e.g. that it has no such switch)."""
        spec = self.groups.get(group)
        way = spec.modes.get(mode) if spec else None
        return self._pick(way.notes, os_or_dist) if way is not None else None

    def group_tuning(self, group: str, cmdline: str) -> list[str]:
        """The parameters of ``cmdline`` that ``group`` tunes (``cmdline_tuning``, by name, or its own)."""
        spec = self.groups.get(group)
        if spec is None:
            return []
        # Its own parameters count only with its own values: selinux=0 is the opposite of the group's selinux=1.
        own = {p for v in spec.cmdline_append.values() for p in v}
        return [w for w in cmdline.split() if w.split("=", 1)[0] in spec.cmdline_tuning or w in own]

    def group_kernel_packages(self, group: str, os_or_dist: str, arch: str) -> list[str]:
        spec = self.groups.get(group)
        by_arch = self._pick(spec.kernel_packages, os_or_dist) if spec else None
        return list(by_arch.get(arch, ())) if by_arch else []

    def groups_of_package(self, package: str) -> set[str]:
        """Groups whose package list (any family) contains the name or one of its aliases, or whose members
        it is."""
        names = {n.lower() for n in self.aliases(package)}
        found: set[str] = set()
        for group in self.groups.values():
            if any(m.search(package.lower()) for m in group.members):
                found.add(group.id)
                continue
            for plist in group.packages.values():
                if names & {p.lower() for p in plist}:
                    found.add(group.id)
                    break
        return found

    def group_members(self, group: str, names: Iterable[str], where: str | None = None) -> list[str]:
        """Those of ``names`` that belong to the group: its packages (on ``where``, else in any family, with
        aliases and kernel packages), and its members."""
        spec = self.groups.get(group)
        if spec is None:
            return []
        listed = self.packages_for(group, where) if where is not None else self.group_package_universe(group)
        universe = {n.lower() for n in listed}
        return [n for n in names if n.lower() in universe or any(m.search(n.lower()) for m in spec.members)]

    def group_configuration(self, group: str, cmd: str) -> bool:
        """Whether a configuration command sets the group up: one of its configuration words, or a path named for
        the group (``/etc/kiosk/url``, ``/etc/sysctl.d/90-realtime.conf``)."""
        spec = self.groups.get(group)
        words = spec.configuration_words if spec else ()
        return (any(re.search(rf"(?<![\w.-]){re.escape(w)}(?![\w-])", cmd) for w in words)
                or bool(path_words(cmd) & self.group_words(group)))

    def group_package_universe(self, group: str) -> set[str]:
        """Every name the group uses in any family, with aliases (for removing a group)."""
        spec = self.groups.get(group)
        if spec is None:
            return set()
        out: set[str] = set()
        for plist in list(spec.packages.values()):
            for name in plist:
                out |= self.aliases(name)
        for by_arch in spec.kernel_packages.values():
            for names in by_arch.values():
                out.update(names)
        return out

    # ------------------------------------------------------------------ package names

    def aliases(self, package: str) -> set[str]:
        """Cross-distribution names of the same software, the name itself included.

        ``aliases("docker.io") == {"docker.io", "docker", "docker-ce", "moby-engine", "podman", ...}``.
        """
        index = self._class_of.get(package.lower())
        if index is None:
            return {package}
        return {package, *entry_names(self._equivalents[index])}

    def translate_package(self, package: str, os_or_dist: str) -> str | None:
        """The name this software has on the target (unchanged when unknown; None when it has no counterpart)."""
        index = self._class_of.get(package.lower())
        if index is None:
            return package
        entry = self._equivalents[index]
        for key in self._keys(os_or_dist):
            if key in entry:
                if entry[key]:
                    return str(entry[key])
                substitute = self._pick(entry.get("substitutes") or {}, os_or_dist)
                return str(substitute) if substitute else None
        return package

    def has_equivalent_entry(self, package: str) -> bool:
        return package.lower() in self._class_of

    def rename_for_arch(self, package: str, pkg_type: str | None, arch: str) -> str | None:
        """Package name on ``arch`` (grub-efi-amd64 -> grub-efi-arm64); None when x86-only on aarch64."""
        source = "x86_64" if arch == "aarch64" else "aarch64"
        for rule in self._arch_renames:
            if pkg_type and rule.get("pkg_type") not in (None, pkg_type):
                continue
            old, new = str(rule.get(source, "")), str(rule.get(arch, ""))
            if not old or not new:
                continue
            how = rule.get("match", "exact")
            if how == "token":
                renamed, count = re.subn(rf"(^|-){re.escape(old)}(-|$)", rf"\g<1>{new}\g<2>", package)
                if count:
                    return renamed
            elif how == "prefix" and package.startswith(old):
                return new + package[len(old) :]
            elif how == "exact" and package == old:
                return new
        if arch == "aarch64" and self.is_x86_only(package):
            return None
        return package

    def is_x86_only_parameter(self, parameter: str) -> bool:
        """A kernel parameter of x86 hardware ("i915.force_probe=*", "intel_pstate=disable")."""
        return any(p.search(parameter) for p in self._x86_only_cmdline)

    def is_x86_only(self, package: str) -> bool:
        return any(p.search(package) for p in self._x86_only)

    def equivalent_names(self) -> set[str]:
        """Every name of the equivalences, aliases among them ("postgres" of postgresql), lower case."""
        return set(self._class_of)

    def known_packages(self) -> set[str]:
        """Every package name this knowledge mentions (groups, equivalents, portable and common software, kernels,
        bootloaders)."""
        names: set[str] = set(self.portable | self.common_software)
        for group in self.groups.values():
            for plist in group.packages.values():
                names.update(plist)
            for by_arch in group.kernel_packages.values():
                for plist in by_arch.values():
                    names.update(plist)
        for entry in self._equivalents:
            names.update(str(n) for k, n in entry.items() if k not in NOT_TARGET_KEYS and n)
        for fam in self.families.values():
            names |= self.all_bootloader_packages(fam.id)
            for dist in fam.dists.values():
                for plist in dist.kernel_packages.values():
                    names.update(plist)
        return names

    def equivalent_entries(self) -> list[dict[str, Any]]:
        """The ``equivalents`` entries in file order (package suggestions read their ``suggest`` order)."""
        return self._equivalents

    def alias_names(self) -> set[str]:
        """Spellings that are not package names anywhere but mean one (docker-ce, docker, ...)."""
        return {str(a) for entry in self._equivalents for a in entry.get("aliases") or ()}

    def layout(self, name: str, arch: str) -> dict[str, Any] | None:
        spec = self.layouts.get(name)
        if not spec:
            return None
        parts = []
        for part in spec.get("partitions") or ():
            item = dict(part)
            if item.get("type") == "{root_type}":
                item["type"] = self.root_type(arch)
            if "flags" in item:
                item["flags"] = list(item["flags"])
            parts.append(item)
        return {"size": str(spec.get("size", "4GiB")), "partitions": parts}


# Keys of an `equivalents` entry that are not a distribution's name for the software.
@functools.lru_cache(maxsize=1)
def load_capabilities() -> Capabilities:
    """The bundled knowledge, parsed once (it is read-only data shipped with the package)."""
    text = resource_text(RESOURCE)
    return Capabilities(load_mapping(text).data)


__all__ = ["Capabilities", "Dist", "Family", "Group", "UseCase", "VendorStack", "load_capabilities", "normalize_phrase"]

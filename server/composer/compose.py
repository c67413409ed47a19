"""The offline provider: a deterministic generator and structured editor for templates.

``compose`` starts from the best retrieved template and applies every constraint a request
states; ``apply_instruction`` refines an existing template and changes only what is asked.
Both share :func:`apply_spec`, which works on a copy and returns a human-readable change
list. No LLM is involved: the request is parsed by :mod:`server.request_parser` and the
distribution facts come from :mod:`server.knowledge`.
"""

from __future__ import annotations

import copy
import fnmatch
import logging
import re
from dataclasses import dataclass, field
from typing import Any

from ..knowledge.loader import Capabilities, load_capabilities
from ..knowledge.sizes import fmt_offset, fmt_size, template_mib
from ..validation.upstream import conform
from . import coherence
from .layout import (
    GPT_TAIL_MIB,
    MIN_ROOT_MIB,
    VERITY_HASH_MIB,
)
from .layout import (
    Layout as _Layout,
)
from .layout import (
    is_fill as _is_fill,
)
from .layout import (
    part_id as _pid,
)
from .output import dump_yaml
from .request_parser import RequestSpec, is_question, parse_request

logger = logging.getLogger(__name__)




@dataclass
class ComposeResult:
    data: dict
    yaml: str
    changes: list[str]
    spec: RequestSpec
    unhandled: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- public API


def compose(
    request: str,
    base: dict,
    *,
    base_file: str | None = None,
    os: str | None = None,
    dist: str | None = None,
    arch: str | None = None,
    image_type: str | None = None,
    spec: RequestSpec | None = None,
    strip_groups: list[str] | None = None,
) -> ComposeResult:
    """A new template for ``request``, built from the best retrieved template ``base``.

    ``spec`` is the request as understood once by the caller (the agent); without it the request is parsed
    here. ``strip_groups`` are capability groups of the base that nobody asked for (server.compose_base):
    they leave first, with everything they brought.
    """
    caps = load_capabilities()
    if spec is None:
        spec = parse_request(request, known_packages=_template_packages(base))
    spec.is_question = False  # a generation request is never "just a question"
    if os:
        spec.os = caps.family_of(os) or os
    if dist:
        spec.dist = caps.dist_of(dist) or dist
        spec.os = spec.os if os else caps.family_of(spec.dist) or spec.os
    if arch:
        spec.arch = caps.arch_of(arch) or arch
    if image_type:
        spec.image_type = image_type
    start_changes: list[str] = []
    if strip_groups:
        edit = _Edit(base, caps)
        edit.remove_groups(strip_groups)
        edit.clean_up_after_removals()
        edit.tidy()
        base = edit.data
        start_changes = [f"left out of the starting template (not asked for): {c.removeprefix('removed ')}"
                         for c in edit.changes if c.startswith("removed ")]
    data, changes, problems = _apply(base, spec, caps)
    changes = start_changes + changes
    _drop_sample_repositories(data, changes)
    if base_file:
        changes.insert(0, f"started from {base_file}")
    _name_and_describe(data, spec, request, caps, changes)
    return ComposeResult(data, dump_yaml(data), changes, spec, [*spec.unparsed, *problems])


def apply_instruction(data: dict, instruction: str, *, spec: RequestSpec | None = None,
                      known_packages: list[str] | set[str] = ()) -> ComposeResult:
    """Refine ``data`` as ``instruction`` asks (``spec``: the instruction as already understood); everything not
    mentioned is preserved."""
    caps = load_capabilities()
    if spec is None:
        spec = parse_request(instruction, known_packages={*_template_packages(data), *known_packages})
    if spec.is_question:
        same = copy.deepcopy(data)
        return ComposeResult(same, dump_yaml(same), [], spec, [])
    new, changes, problems = _apply(data, spec, caps)
    new, moved = conform(new)  # metadata os-image-composer refuses (the ADR's fields) -> its own fields
    changes += moved
    unhandled = [*spec.unparsed, *problems]
    if spec.is_empty() and not unhandled:
        unhandled.append(f"could not find an edit in: {instruction!r}")
    return ComposeResult(new, dump_yaml(new), changes, spec, unhandled)


def apply_spec(data: dict, spec: RequestSpec) -> tuple[dict, list[str]]:
    """Apply a parsed spec to a copy of ``data``; returns the new dict and what changed.

    Requests that could not be applied are listed too, prefixed with "not applied:".
    """
    new, changes, problems = _apply(data, spec, load_capabilities())
    return new, [*changes, *(f"not applied: {p}" for p in problems)]


def is_explanation_question(text: str) -> bool:
    """Same test the parser uses: "what packages are included?" is a question, not an edit."""
    return is_question(text)


# --------------------------------------------------------------------------- the core


class _Edit:
    """One application of a spec to a deep copy of a template."""

    def __init__(self, data: dict, caps: Capabilities):
        self.data = copy.deepcopy(data) if isinstance(data, dict) else {}
        self.caps = caps
        self.changes: list[str] = []
        self.problems: list[str] = []
        self.keep_root = True
        self.removed: list[str] = []  # every package taken out, for the coherence pass
        self.named: set[str] = set()  # packages the request named (after translation), for exclusive roles
        self.translated: list[tuple[str, str]] = []  # (old, new) package names of a distribution switch
        target = self.data.get("target") if isinstance(self.data.get("target"), dict) else {}
        self.dist = caps.dist_of(str(target.get("dist") or "")) or str(target.get("dist") or "")
        self.family = caps.family_of(str(target.get("os") or "")) or caps.family_of(self.dist) or ""
        self.arch = caps.arch_of(str(target.get("arch") or "")) or str(target.get("arch") or "x86_64")

    # ------------------------------------------------------------ accessors

    def system(self, create: bool = True) -> dict:
        sc = self.data.get("systemConfig")
        if not isinstance(sc, dict):
            if not create:
                return {}
            sc = {}
            self.data["systemConfig"] = sc
        return sc

    def packages(self) -> list[str]:
        sc = self.system()
        pkgs = sc.get("packages")
        if not isinstance(pkgs, list):
            pkgs = []
            sc["packages"] = pkgs
        return pkgs

    def kernel(self) -> dict:
        sc = self.system()
        kernel = sc.get("kernel")
        if not isinstance(kernel, dict):
            kernel = {}
            sc["kernel"] = kernel
        return kernel

    def disk(self) -> dict | None:
        disk = self.data.get("disk")
        return disk if isinstance(disk, dict) else None

    def pkg_type(self) -> str | None:
        return self.caps.pkg_type(self.family) if self.family else None

    def add_package(self, name: str) -> bool:
        pkgs = self.packages()
        present = {str(p) for p in pkgs}
        if name in present or self._same_software(name, present):
            return False
        pkgs.append(name)
        return True

    def _same_software(self, name: str, present: set[str]) -> bool:
        """An alias already in the list only counts when it is this family's name for the software."""
        for alias in (self.caps.aliases(name) - {name}) & present:
            if self.caps.translate_package(alias, self.dist or self.family) == alias:
                return True
        return False

    def remove_packages(self, names: set[str]) -> list[str]:
        sc = self.system(create=False)
        removed: list[str] = []
        lowered = {n.lower() for n in names}
        patterns = [n for n in names if any(ch in n for ch in "*?[")]
        for key in ("packages",):
            plist = sc.get(key)
            if isinstance(plist, list):
                keep = []
                for p in plist:
                    text = str(p)
                    if text.lower() in lowered or any(fnmatch.fnmatchcase(text, pat) for pat in patterns):
                        removed.append(text)
                        self.removed.append(text)
                    else:
                        keep.append(p)
                sc[key] = keep
        return removed

    # ------------------------------------------------------------ the steps

    def run(self, spec: RequestSpec) -> None:
        for note in spec.notes:
            self.changes.append(f"note: {note}")
        self.switch_distribution(spec)
        self.switch_arch(spec)
        self.switch_image_type(spec)
        self.remove_groups(spec.remove_groups)
        self.remove_named_packages(spec.remove_packages)
        self.add_groups(spec.add_groups)
        self.add_named_packages(spec.add_packages)
        self.one_per_role()
        self.kernel_edits(spec)
        self.hostname(spec.hostname)
        self.users(spec.users)
        self.bootloader(spec)
        # Disk size first so a dm-verity layout is cut for the final size; partitions last
        # so that an added /data sits in the final layout.
        self.keep_root = not (spec.disk_size or spec.disk_size_delta)
        self.disk_size_edits(spec)
        self.immutability(spec.immutability)
        self.secure_boot(spec.secure_boot)
        self.partition_edits(spec)
        self.artifacts(spec)
        if spec.name and _image(self.data).get("name") != spec.name:
            _image(self.data)["name"] = spec.name
            self.changes.append(f"image name set to {spec.name}")
        self.clean_up_after_removals()
        self.tidy()

    # ------------------------------------------------------------ coherence

    def one_per_role(self) -> None:
        """One web server, one container engine, one display manager, unless the request named several."""
        present = [str(p) for p in self.packages()]
        for role, extra in coherence.exclusive_drops(present, self.named, self.caps).items():
            removed = self.remove_packages(set(extra))
            if removed:
                self.changes.append(f"removed {', '.join(removed)}: one {role.replace('-', ' ')} is enough and "
                                    f"the request named {', '.join(sorted(set(self.caps.exclusive[role]) & self.named))}")

    def clean_up_after_removals(self) -> None:
        """What removed software brought goes with it: its partitions, services, group memberships, keywords."""
        if not self.removed:
            return
        installed = [str(p) for p in self.system(create=False).get("packages") or []]
        gone = coherence.gone_stems(self.removed, installed, self.caps)
        if not gone:
            return
        system = self.system(create=False)
        services = coherence.drop_services(system, gone) if system else []
        groups = coherence.drop_user_groups(system, gone) if system else []
        keywords = coherence.drop_keywords(self.data, gone)
        disk = self.disk()
        for mount in coherence.mounts_of(disk, gone):
            if disk is not None:
                _Layout(self, disk).remove(mount)
        parts = ([f"services {', '.join(services)}"] if services else []) + (
            [f"group memberships {', '.join(groups)}"] if groups else []) + (
            [f"keywords {', '.join(keywords)}"] if keywords else [])
        if parts:
            self.changes.append("also removed what the removed software needed: " + "; ".join(parts))

    # ------------------------------------------------------------ distribution and arch

    def switch_distribution(self, spec: RequestSpec) -> None:
        caps = self.caps
        new_family = caps.family_of(spec.os) if spec.os else None
        new_dist = caps.dist_of(spec.dist) if spec.dist else None
        if spec.os and not new_family:
            self.problems.append(f"unknown operating system {spec.os!r}")
            return
        if new_dist and not new_family:
            new_family = caps.family_of(new_dist)
        if new_family and not new_dist:
            new_dist = (
                self.dist
                if caps.family_of(self.dist) == new_family
                else caps.families[new_family].default_dist
            )
        if not new_family or not new_dist or (new_family == self.family and new_dist == self.dist):
            return
        old_family, old_dist = self.family, self.dist
        target = self.data.setdefault("target", {})
        target["os"], target["dist"] = new_family, new_dist
        self.changes.append(
            f"target changed from {old_family or '?'}/{old_dist or '?'} to {new_family}/{new_dist}"
        )
        self.family, self.dist = new_family, new_dist
        if not old_family or not old_dist:
            return
        self._translate_packages(old_family, old_dist)
        self._translate_kernel(old_family, old_dist, self.arch)
        self._translate_repositories(old_dist)
        self._translate_users(old_family)
        self._translate_files(old_dist)
        self._translate_version(old_dist)
        self._rename_everywhere(old_dist, new_dist)
        self._translate_metadata(old_family, old_dist)
        if old_family != new_family and caps.pkg_type(old_family) != caps.pkg_type(new_family):
            self._warn_configurations()

    def _translate_metadata(self, old_family: str, old_dist: str) -> None:
        """Description, keywords and use cases name the new distribution and the translated packages."""
        meta = self.data.get("metadata")
        if not isinstance(meta, dict):
            return
        caps = self.caps
        old_d, new_d = caps.dists.get(old_dist), caps.dists.get(self.dist)
        old_f, new_f = caps.families.get(old_family), caps.families.get(self.family)
        pairs = [(old_d.label, new_d.label) if old_d and new_d else None,
                 (old_f.label, new_f.label) if old_f and new_f else None,
                 (old_dist, self.dist), (old_family, self.family)]
        pairs += [(old, new) for old, new in self.translated]
        words = [p for p in pairs if p and p[0] and p[0] != p[1]]

        def rename(text: str) -> str:
            for old, new in words:
                text = re.sub(rf"(?<![\w.-]){re.escape(old)}(?![\w-])", new, text)
            return text

        changed = False
        if isinstance(meta.get("description"), str):
            # The user's own words ("Requested as: ...") are quoted, not rewritten.
            head, sep, quoted = meta["description"].partition("Requested as:")
            new = rename(head) + sep + quoted
            if new != meta["description"]:
                meta["description"], changed = new, True
        for key in ("keywords", "use_cases"):
            if isinstance(meta.get(key), list):
                new = list(dict.fromkeys(rename(str(k)) for k in meta[key]))
                if new != meta[key]:
                    meta[key], changed = new, True
        if changed:
            self.changes.append("metadata (description, keywords, use cases) rewritten for the new distribution")

    def _translate_packages(self, old_family: str, old_dist: str) -> None:
        caps = self.caps
        sc = self.system(create=False)
        plist = sc.get("packages")
        if not isinstance(plist, list) or not plist:
            return
        same_type = caps.pkg_type(old_family) == caps.pkg_type(self.family)
        old_kernel = _kernel_like(plist, caps, old_dist)
        old_boot = caps.all_bootloader_packages(old_family)
        listed = {str(p) for p in plist}
        old_spec = caps.families[old_family]
        boot_providers = {
            prov
            for prov, by_arch in old_spec.bootloader_packages.items()
            for names in by_arch.values()
            if set(names) & listed
        }
        kept: list[str] = []
        renamed: list[str] = []
        dropped: list[str] = []
        # A capability group moves as a whole only when the template really has it: a
        # family-specific package of it (ubuntu-desktop-minimal) or most of its package list.
        present = {g for g in caps.groups if _group_present(caps, g, old_dist, listed)}
        groups_needed: dict[str, list[str]] = {}
        for raw in plist:
            name = str(raw)
            if name in old_kernel or name in old_boot:
                continue  # replaced as a set below
            if caps.has_equivalent_entry(name):
                new = caps.translate_package(name, self.dist)
                if new and new != name:
                    renamed.append(f"{name} -> {new}")
                    self.translated.append((name, new))
                if new:
                    kept.append(new)
                else:
                    dropped.append(name)
                continue
            owners = [
                g for g in caps.groups_of_package(name) if caps.group_available(g, self.dist, self.arch)
            ]
            if caps.is_specific_to(name, old_family):
                for g in owners:
                    groups_needed.setdefault(g, []).append(name)
                if not owners:
                    dropped.append(name)
                continue
            if same_type or name in caps.portable:
                kept.append(name)
                continue
            carried = [g for g in owners if g in present]
            for g in carried:
                groups_needed.setdefault(g, []).append(name)
            if not carried:
                dropped.append(name)
        for group, old_names in groups_needed.items():
            new_names = [n for n in caps.packages_for(group, self.dist, self.arch) if n not in kept]
            kept += new_names
            renamed.append(f"{group}: {', '.join(old_names)} -> {', '.join(new_names) or 'already present'}")
        if old_kernel:
            kept += [
                k
                for k in caps.kernel_packages(self.dist, self.arch, realtime=_is_rt(old_kernel))
                if k not in kept
            ]
        for provider in sorted(boot_providers):
            kept += [b for b in caps.bootloader_packages(self.dist, self.arch, provider) if b not in kept]
        sc["packages"] = list(dict.fromkeys(kept))
        if renamed:
            self.changes.append("packages translated: " + ", ".join(renamed))
        if old_kernel or boot_providers:
            self.changes.append(f"kernel/bootloader packages replaced with {self.family}'s")
        if dropped:
            self.changes.append(
                f"dropped {len(dropped)} package(s) with no {self.family} counterpart: "
                + _short_list(dropped)
            )

    def _translate_kernel(self, old_family: str, old_dist: str, old_arch: str) -> None:
        caps = self.caps
        kernel = self.system(create=False).get("kernel")
        if not isinstance(kernel, dict):
            return
        packages = kernel.get("packages")
        if isinstance(packages, list) and packages:
            rt = _is_rt([str(p) for p in packages])
            new = caps.kernel_packages(self.dist, self.arch, realtime=rt)
            if new and [str(p) for p in packages] != new:
                kernel["packages"] = new
                self.changes.append(f"kernel packages: {', '.join(map(str, packages))} -> {', '.join(new)}")
        version = caps.kernel_version(self.dist)
        if version and kernel.get("version") and str(kernel["version"]) != version and old_dist != self.dist:
            self.changes.append(f"kernel version {kernel['version']} -> {version} ({self.dist} default)")
            kernel["version"] = version

    def _translate_repositories(self, old_dist: str) -> None:
        repos = self.data.get("packageRepositories")
        if not isinstance(repos, list):
            return
        kept, dropped = [], []
        for repo in repos:
            url = str(repo.get("url", "")) if isinstance(repo, dict) else ""
            if isinstance(repo, dict) and (url.startswith("<") or not url and not repo.get("path")):
                kept.append(repo)  # placeholder samples belong to no distribution
            else:
                dropped.append(repo.get("codename", "?") if isinstance(repo, dict) else str(repo))
        if dropped:
            self.changes.append(
                f"dropped package repositories of {old_dist}: " + _short_list(map(str, dropped))
            )
        if kept:
            self.data["packageRepositories"] = kept
        else:
            self.data.pop("packageRepositories", None)

    def _translate_users(self, old_family: str) -> None:
        old = self.caps.families[old_family].admin_group
        new = self.caps.families[self.family].admin_group
        if old == new:
            return
        for user in self.system(create=False).get("users") or []:
            if isinstance(user, dict) and isinstance(user.get("groups"), list) and old in user["groups"]:
                user["groups"] = [new if g == old else g for g in user["groups"]]
                self.changes.append(f"user {user.get('name')}: admin group {old} -> {new}")

    def _translate_files(self, old_dist: str) -> None:
        files = self.system(create=False).get("additionalFiles")
        if not isinstance(files, list):
            return
        info = self.caps.dists.get(old_dist)
        markers = {old_dist, *(filter(None, [info.codename if info else None]))}
        kept, dropped = [], []
        for item in files:
            text = " ".join(str(v) for v in item.values()) if isinstance(item, dict) else str(item)
            if any(m and m in text for m in markers) or (self.pkg_type() == "rpm" and "sources.list" in text):
                dropped.append(item.get("final", text) if isinstance(item, dict) else text)
            else:
                kept.append(item)
        if dropped:
            self.system()["additionalFiles"] = kept
            if not kept:
                self.system().pop("additionalFiles", None)
            self.changes.append(
                f"dropped {old_dist}-specific additional files: " + _short_list(map(str, dropped))
            )

    def _translate_version(self, old_dist: str) -> None:
        image = _image(self.data)
        old_info, new_info = self.caps.dists.get(old_dist), self.caps.dists.get(self.dist)
        if old_info and new_info and str(image.get("version", "")) == old_info.release:
            image["version"] = new_info.release
            self.changes.append(f"image version {old_info.release} -> {new_info.release}")

    def _warn_configurations(self) -> None:
        configs = self.system(create=False).get("configurations")
        if not isinstance(configs, list):
            return
        manager = re.compile(
            r"\b(apt|apt-get|dpkg)\b" if self.pkg_type() == "rpm" else r"\b(dnf|tdnf|yum|rpm)\b"
        )
        odd = [
            str(c.get("cmd", ""))
            for c in configs
            if isinstance(c, dict) and manager.search(str(c.get("cmd", "")))
        ]
        if odd:
            self.problems.append(
                "configuration commands use the other package manager; review: " + _short_list(odd, 2)
            )

    def _rename_everywhere(self, old: str, new: str) -> None:
        """Keep names honest: 'azl3-x86_64-edge' becomes 'ubuntu24-x86_64-edge' after a switch."""
        pairs = [(old, new)]
        for section, key in (("image", "name"), ("systemConfig", "name"), ("disk", "name")):
            holder = self.data.get(section)
            if isinstance(holder, dict) and isinstance(holder.get(key), str):
                value = holder[key]
                for a, b in pairs:
                    value = re.sub(rf"(?<![A-Za-z0-9]){re.escape(a)}(?![A-Za-z0-9])", b, value)
                if value != holder[key]:
                    self.changes.append(f"{section}.{key} {holder[key]} -> {value}")
                    holder[key] = value

    def switch_arch(self, spec: RequestSpec) -> None:
        caps = self.caps
        new_arch = caps.arch_of(spec.arch) if spec.arch else None
        if spec.arch and not new_arch:
            self.problems.append(f"unsupported architecture {spec.arch!r} (use x86_64 or aarch64)")
            return
        if not new_arch or new_arch == self.arch:
            return
        old_arch = self.arch
        self.data.setdefault("target", {})["arch"] = new_arch
        self.arch = new_arch
        self.changes.append(f"architecture {old_arch} -> {new_arch}")
        pkg_type = self.pkg_type()
        sc = self.system(create=False)
        if isinstance(sc.get("packages"), list):
            new_list, renamed, dropped = [], [], []
            for raw in sc["packages"]:
                name = str(raw)
                new = caps.rename_for_arch(name, pkg_type, new_arch)
                if new is None:
                    dropped.append(name)
                    continue
                if new != name:
                    renamed.append(f"{name} -> {new}")
                new_list.append(new)
            sc["packages"] = list(dict.fromkeys(new_list))
            if renamed:
                self.changes.append(f"packages renamed for {new_arch}: " + ", ".join(renamed))
            if dropped:
                self.changes.append(f"dropped x86-only packages: {_short_list(dropped)}")
        kernel = sc.get("kernel")
        if (
            isinstance(kernel, dict)
            and isinstance(kernel.get("packages"), list)
            and kernel["packages"]
            and self.family
        ):
            old = [str(p) for p in kernel["packages"]]
            new = caps.kernel_packages(self.dist, new_arch, realtime=_is_rt(old))
            if new and new != old:
                kernel["packages"] = new
                self.changes.append(f"kernel packages: {', '.join(old)} -> {', '.join(new)}")
        disk = self.disk()
        if disk:
            old_root, new_root = caps.root_type(old_arch), caps.root_type(new_arch)
            old_uuid, new_uuid = caps.partition_types.get(old_root), caps.partition_types.get(new_root)
            for part in disk.get("partitions") or []:
                if not isinstance(part, dict):
                    continue
                if part.get("type") == old_root:
                    part["type"] = new_root
                    self.changes.append(f"partition {part.get('id')}: type {old_root} -> {new_root}")
                if old_uuid and str(part.get("typeUUID", "")).lower() == old_uuid:
                    part["typeUUID"] = new_uuid
                    self.changes.append(f"partition {part.get('id')}: typeUUID -> {new_uuid}")
        for section in ("image", "systemConfig", "disk"):
            holder = self.data.get(section)
            if isinstance(holder, dict) and isinstance(holder.get("name"), str):
                value = holder["name"]
                for a, b in (
                    (old_arch, new_arch),
                    (caps.arch_info[old_arch]["deb"], caps.arch_info[new_arch]["deb"]),
                ):
                    value = re.sub(rf"(?<![A-Za-z0-9]){re.escape(str(a))}(?![A-Za-z0-9])", str(b), value)
                if value != holder["name"]:
                    self.changes.append(f"{section}.name {holder['name']} -> {value}")
                    holder["name"] = value

    def switch_image_type(self, spec: RequestSpec) -> None:
        new = spec.image_type
        if not new and (
            spec.artifacts
            or spec.disk_size
            or spec.disk_size_delta
            or any(p.get("action") for p in spec.partitions)
        ):
            current = str((self.data.get("target") or {}).get("imageType", "raw"))
            if current != "raw" and spec.artifacts:
                new = "raw"  # qcow2/vhdx are disk formats: only raw images produce them
        if not new:
            return
        target = self.data.setdefault("target", {})
        old = target.get("imageType")
        if old == new:
            return
        target["imageType"] = new
        self.changes.append(f"image type {old or '?'} -> {new}")
        if new in ("iso", "img") and self.disk() is not None:
            self.data.pop("disk")
            self.changes.append(
                f"disk section removed ({new} images take their layout from the distribution defaults)"
            )
        if new == "raw" and self.disk() is None:
            self.ensure_disk(spec.disk_size)

    # ------------------------------------------------------------ packages and groups

    def remove_groups(self, groups: list[str]) -> None:
        caps = self.caps
        for group in groups:
            universe = caps.group_package_universe(group)
            removed = self.remove_packages(universe)
            extra: list[str] = []
            if group == "realtime":
                extra += self._reset_kernel_flavour()
            for repo in caps.group_repositories(group, self.dist):
                extra += self._remove_repo(repo)
            configs = self.system(create=False).get("configurations")
            wanted = caps.group_configurations(group, self.dist)
            if isinstance(configs, list) and wanted:
                left = [c for c in configs if c not in wanted]
                if len(left) != len(configs):
                    self.system()["configurations"] = left
                    extra.append("its configuration commands")
            if removed or extra:
                what = ", ".join(removed) if removed else ""
                self.changes.append(f"removed {group}: " + "; ".join(x for x in (what, *extra) if x))
            else:
                self.changes.append(
                    f"nothing to remove for {group}: none of its packages are in the template"
                )

    def _reset_kernel_flavour(self) -> list[str]:
        kernel = self.system(create=False).get("kernel")
        if not isinstance(kernel, dict) or not isinstance(kernel.get("packages"), list):
            return []
        if not _is_rt([str(p) for p in kernel["packages"]]):
            return []
        new = self.caps.kernel_packages(self.dist, self.arch)
        kernel["packages"] = new
        return [f"kernel back to {', '.join(new)}"]

    def _remove_repo(self, repo: dict) -> list[str]:
        repos = self.data.get("packageRepositories")
        if not isinstance(repos, list):
            return []
        left = [r for r in repos if not (isinstance(r, dict) and r.get("url") == repo.get("url"))]
        if len(left) == len(repos):
            return []
        if left:
            self.data["packageRepositories"] = left
        else:
            self.data.pop("packageRepositories")
        return [f"repository {repo.get('url')}"]

    def remove_named_packages(self, names: list[str]) -> None:
        for name in names:
            wanted = set(self.caps.aliases(name)) | {name}
            removed = self.remove_packages(wanted)
            kernel = self.system(create=False).get("kernel")
            if isinstance(kernel, dict) and isinstance(kernel.get("packages"), list):
                left = [p for p in kernel["packages"] if str(p) not in wanted]
                if len(left) != len(kernel["packages"]):
                    removed += [str(p) for p in kernel["packages"] if str(p) in wanted]
                    kernel["packages"] = left
            if removed:
                self.changes.append(f"removed package(s): {', '.join(removed)}")
            else:
                self.changes.append(f"nothing to remove: {name} is not in the package list")

    def add_groups(self, groups: list[str]) -> None:
        caps = self.caps
        where = self.dist or self.family
        for group in groups:
            if not where:
                self.problems.append(f"cannot add {group}: the template has no target.os/dist")
                continue
            if not caps.group_available(group, where, self.arch):
                note = caps.group_note(group, where)
                self.problems.append(
                    f"{group} ({caps.groups[group].description}) is not available for {where}/{self.arch}"
                    + (f": {note}" if note else "")
                )
                continue
            added = [p for p in caps.packages_for(group, where, self.arch) if self.add_package(p)]
            extra: list[str] = []
            kernel_pkgs = caps.group_kernel_packages(group, where, self.arch)
            if kernel_pkgs:
                kernel = self.kernel()
                old = [str(p) for p in kernel.get("packages") or []]
                if old != kernel_pkgs:
                    kernel["packages"] = kernel_pkgs
                    extra.append(f"kernel packages {', '.join(kernel_pkgs)}")
                    old_in_list = self.remove_packages(set(old) | set(caps.kernel_packages(where, self.arch)))
                    if old_in_list:
                        extra.append(f"replaced {', '.join(old_in_list)} in packages")
            for param in caps.group_cmdline(group, where):
                if self._append_cmdline(param):
                    extra.append(f"kernel parameter {param}")
            for repo in caps.group_repositories(group, where):
                if self._add_repo(repo):
                    extra.append(f"repository {repo.get('url')}")
            for config in caps.group_configurations(group, where):
                configs = self.system().setdefault("configurations", [])
                if config not in configs:
                    configs.append(config)
                    extra.append(f"configuration `{config.get('cmd')}`")
            if added or extra:
                parts = ([f"packages {', '.join(added)}"] if added else []) + extra
                self.changes.append(f"added {group} ({caps.groups[group].description}): " + "; ".join(parts))
            else:
                self.changes.append(f"{group} already present")
            note = caps.group_note(group, where)
            if note:
                self.changes.append(f"note: {note}")

    def _add_repo(self, repo: dict) -> bool:
        repos = self.data.setdefault("packageRepositories", [])
        if any(isinstance(r, dict) and r.get("url") == repo.get("url") for r in repos):
            return False
        repos.append(dict(repo))
        return True

    def add_named_packages(self, names: list[str]) -> None:
        caps = self.caps
        where = self.dist or self.family
        for name in names:
            new = caps.translate_package(name, where) if where else name
            if new is None:
                self.problems.append(f"{name} has no counterpart on {where}")
                continue
            renamed = caps.rename_for_arch(new, self.pkg_type(), self.arch)
            if renamed is None:
                self.problems.append(f"{new} is built for x86_64 only")
                continue
            self.named.add(renamed)
            if self.add_package(renamed):
                how = f" (the {where} name for {name})" if renamed != name else ""
                self.changes.append(f"added package {renamed}{how}")
            else:
                self.changes.append(f"{renamed} already present")

    # ------------------------------------------------------------ kernel, host, users, boot

    def kernel_edits(self, spec: RequestSpec) -> None:
        if spec.kernel_version:
            kernel = self.kernel()
            old = kernel.get("version")
            if str(old) != spec.kernel_version:
                kernel["version"] = spec.kernel_version
                self.changes.append(f"kernel version {old or 'unset'} -> {spec.kernel_version}")
        if spec.kernel_cmdline is not None:
            kernel = self.kernel()
            old = kernel.get("cmdline")
            kernel["cmdline"] = spec.kernel_cmdline
            self.changes.append(f"kernel cmdline set to {spec.kernel_cmdline!r} (was {old!r})")
        for param in spec.kernel_cmdline_append:
            if self._append_cmdline(param):
                self.changes.append(f"kernel cmdline: added {param}")
        for param in spec.kernel_cmdline_remove:
            kernel = self.kernel()
            words = str(kernel.get("cmdline") or "").split()
            key = param.split("=", 1)[0]
            left = [w for w in words if w != param and not ("=" not in param and w.split("=", 1)[0] == key)]
            if len(left) != len(words):
                kernel["cmdline"] = " ".join(left)
                self.changes.append(f"kernel cmdline: removed {param}")
            else:
                self.changes.append(f"kernel cmdline has no {param}")

    def _append_cmdline(self, param: str) -> bool:
        kernel = self.kernel()
        words = str(kernel.get("cmdline") or "").split()
        if param in words:
            return False
        key = param.split("=", 1)[0]
        if "=" in param and key != "console":
            # Same key with another value: replace it rather than pass both.
            for i, w in enumerate(words):
                if w.split("=", 1)[0] == key:
                    words[i] = param
                    kernel["cmdline"] = " ".join(words)
                    return True
        words.append(param)
        kernel["cmdline"] = " ".join(words)
        return True

    def hostname(self, hostname: str | None) -> None:
        if not hostname:
            return
        sc = self.system()
        old = sc.get("hostname")
        if old != hostname:
            sc["hostname"] = hostname
            self.changes.append(f"hostname {old or 'unset'} -> {hostname}")

    def users(self, users: list[dict]) -> None:
        if not users:
            return
        sc = self.system()
        for request in users:
            name = request.get("name")
            existing = sc.get("users") if isinstance(sc.get("users"), list) else []
            if request.get("action") == "remove":
                left = [u for u in existing if not (isinstance(u, dict) and u.get("name") == name)]
                if len(left) != len(existing):
                    if left:
                        sc["users"] = left
                    else:
                        sc.pop("users", None)
                    self.changes.append(f"removed user {name}")
                else:
                    self.changes.append(f"nothing to remove: no user {name}")
                continue
            entry = next((u for u in existing if isinstance(u, dict) and u.get("name") == name), None)
            created = entry is None
            if entry is None:
                entry = {"name": name}
                existing.append(entry)
                sc["users"] = existing
            details = []
            if request.get("sudo") is not None:
                entry["sudo"] = bool(request["sudo"])
                details.append("sudo" if request["sudo"] else "no sudo")
            if request.get("groups"):
                groups = list(dict.fromkeys([*(entry.get("groups") or []), *request["groups"]]))
                entry["groups"] = [g for g in groups if not str(g).startswith("<")]
                details.append("groups " + ", ".join(entry["groups"]))
            for key in ("shell", "home"):
                if request.get(key):
                    entry[key] = request[key]
                    details.append(f"{key} {request[key]}")
            verb = "added user" if created else "updated user"
            self.changes.append(f"{verb} {name}" + (f" ({'; '.join(details)})" if details else ""))
            if created:
                self.changes.append(
                    f"note: user {name} has no password; set a hashed one (password + hash_algo) or log in with SSH keys"
                )

    def bootloader(self, spec: RequestSpec) -> None:
        if not spec.bootloader and not spec.boot_type:
            return
        sc = self.system()
        boot = sc.get("bootloader") if isinstance(sc.get("bootloader"), dict) else {}
        old = dict(boot)
        provider = (
            spec.bootloader
            or boot.get("provider")
            or ("grub" if spec.boot_type == "legacy" else "systemd-boot")
        )
        boot_type = spec.boot_type or boot.get("bootType") or "efi"
        if provider == "systemd-boot" and boot_type == "legacy":
            self.problems.append("systemd-boot only boots in EFI mode; use grub for legacy BIOS boot")
            return
        boot["bootType"], boot["provider"] = boot_type, provider
        sc["bootloader"] = boot
        if old != boot:
            self.changes.append(
                f"bootloader {old.get('provider', 'default')}/{old.get('bootType', 'default')} -> {provider}/{boot_type}"
            )
        old_provider = old.get("provider")
        if self.family and old_provider and old_provider != provider:
            old_names = set(self.caps.bootloader_packages(self.family, self.arch, str(old_provider)))
            new_names = self.caps.bootloader_packages(self.family, self.arch, provider)
            if old_names & {str(p) for p in self.packages()}:
                removed = self.remove_packages(old_names - set(new_names))
                added = [p for p in new_names if self.add_package(p)]
                self.changes.append(
                    f"bootloader packages: removed {', '.join(removed) or 'none'}; added {', '.join(added) or 'none'}"
                )

    def immutability(self, value: bool | None) -> None:
        if value is None:
            return
        sc = self.system()
        imm = sc.get("immutability") if isinstance(sc.get("immutability"), dict) else {}
        old = imm.get("enabled")
        imm["enabled"] = value
        if not value:
            for key in ("secureBootDBKey", "secureBootDBCrt", "secureBootDBCer"):
                if imm.pop(key, None) is not None:
                    self.changes.append(f"removed {key} (secure boot keys need immutability)")
        sc["immutability"] = imm
        if old != value:
            self.changes.append(f"immutability {'enabled' if value else 'disabled'}")
        else:
            self.changes.append(f"immutability already {'enabled' if value else 'disabled'}")
        if value:
            self._verity_layout()
            provider = (
                (sc.get("bootloader") or {}).get("provider")
                if isinstance(sc.get("bootloader"), dict)
                else None
            )
            if provider and str(provider).startswith("grub"):
                self.changes.append(
                    "note: the upstream immutable images boot with systemd-boot (UKI); consider 'use systemd-boot'"
                )
        elif (
            old and self.disk() and any(_pid(p) == "roothashmap" for p in self.disk().get("partitions") or [])
        ):
            self.changes.append(
                "note: the roothashmap (dm-verity hash) partition is kept; remove it if unused"
            )

    def _verity_layout(self) -> None:
        """Give an immutable root the dm-verity hash partition the upstream layouts have."""
        disk = self.disk()
        if not disk or not isinstance(disk.get("partitions"), list) or not disk["partitions"]:
            return
        parts = disk["partitions"]
        if any(_pid(p) == "roothashmap" for p in parts):
            return
        root_i = next(
            (i for i, p in enumerate(parts) if isinstance(p, dict) and p.get("mountPoint") == "/"), None
        )
        if root_i is None:
            return
        layout = _Layout(self, disk)
        root = parts[root_i]
        start = _mib(root.get("start"))
        if start is None:
            return
        if _is_fill(root.get("end")):
            available = (layout.size_mib or 0) - start
            if self.keep_root and layout.size_mib:
                # No size was asked for: keep the root as big as it was and grow the disk for
                # the hash and a 1GiB writable /opt.
                root_size = max(MIN_ROOT_MIB, available - GPT_TAIL_MIB)
                layout.grow_disk_to(start + root_size + VERITY_HASH_MIB + 1024 + GPT_TAIL_MIB)
            else:
                needed = MIN_ROOT_MIB + VERITY_HASH_MIB + 512
                if layout.size_mib and available < needed:
                    layout.grow_disk_to(start + needed)
                    available = (layout.size_mib or 0) - start
                root_size = max(MIN_ROOT_MIB, ((available - VERITY_HASH_MIB) * 2 // 3) // 256 * 256)
            root["end"] = _fmt_mib(start + root_size)
            hash_part = layout.new_partition(
                "roothashmap", "none", start + root_size, start + root_size + VERITY_HASH_MIB
            )
            hash_part["mountPoint"] = "none"
            hash_part.pop("mountOptions", None)
            parts.insert(root_i + 1, hash_part)
            if not any(isinstance(p, dict) and p.get("mountPoint") == "/opt" for p in parts):
                data = layout.new_partition("userdata", "/opt", start + root_size + VERITY_HASH_MIB, None)
                data.pop("mountOptions", None)
                parts.insert(root_i + 2, data)
            else:
                parts[root_i + 1]["end"] = "0"
            self.changes.append(
                f"disk: rootfs fixed at {_fmt_size(root_size)}, added roothashmap ({VERITY_HASH_MIB}MiB, dm-verity hash)"
                + (" and userdata (/opt, rest of the disk)" if parts[root_i + 1]["end"] != "0" else "")
            )
        else:
            end = _mib(root.get("end"))
            if end is None:
                return
            hash_part = layout.new_partition("roothashmap", "none", end, end + VERITY_HASH_MIB)
            hash_part["mountPoint"] = "none"
            hash_part.pop("mountOptions", None)
            layout.insert_after(root_i, hash_part, VERITY_HASH_MIB)
            self.changes.append(f"disk: added roothashmap ({VERITY_HASH_MIB}MiB dm-verity hash) after rootfs")

    def secure_boot(self, value: bool | None) -> None:
        if value is None:
            return
        sc = self.system()
        imm = sc.get("immutability") if isinstance(sc.get("immutability"), dict) else {}
        keys = ("secureBootDBKey", "secureBootDBCrt", "secureBootDBCer")
        if value:
            if not imm.get("enabled"):
                self.immutability(True)
                imm = sc["immutability"]
            placeholders = {
                "secureBootDBKey": "${SECURE_BOOT_DB_KEY}",
                "secureBootDBCrt": "${SECURE_BOOT_DB_CRT}",
                "secureBootDBCer": "${SECURE_BOOT_DB_CER}",
            }
            added = [k for k in keys if not imm.get(k)]
            for k in added:
                imm[k] = placeholders[k]
            boot = sc.get("bootloader") if isinstance(sc.get("bootloader"), dict) else None
            if boot and boot.get("bootType") == "legacy":
                boot["bootType"] = "efi"
                self.changes.append("boot type legacy -> efi (secure boot needs UEFI)")
            if added:
                self.changes.append(
                    "secure boot enabled: set the environment variables SECURE_BOOT_DB_KEY, SECURE_BOOT_DB_CRT and "
                    "SECURE_BOOT_DB_CER to your db key (.key/.pem), certificate (.crt/.pem) and DER certificate (.cer)"
                )
        else:
            removed = [k for k in keys if imm.pop(k, None) is not None]
            self.changes.append("secure boot disabled" if removed else "secure boot was not configured")

    # ------------------------------------------------------------ disk

    def ensure_disk(self, size: str | None = None) -> dict:
        disk = self.disk()
        if disk is not None:
            return disk
        immutable = bool((self.system(create=False).get("immutability") or {}).get("enabled"))
        layout = self.caps.layout("minimal", self.arch) or {"size": "4GiB", "partitions": []}
        name = str(self.system(create=False).get("name") or "Default_Raw")
        disk = {
            "name": name,
            "artifacts": [{"type": "raw", "compression": "gz"}],
            "size": size or layout["size"],
            "partitionTableType": "gpt",
            "partitions": layout["partitions"],
        }
        self.data["disk"] = disk
        self.changes.append(
            f"added a disk section (ESP + root, {disk['size']}); it replaces the distribution's default layout"
        )
        if immutable:
            self._verity_layout()  # sized for this disk, as in the upstream immutable defaults
        return disk

    def _disk_for_edit(self) -> dict | None:
        image_type = str((self.data.get("target") or {}).get("imageType", "raw"))
        if image_type != "raw" and self.disk() is None:
            self.problems.append(f"disk size and partitions apply to raw images; this one is {image_type}")
            return None
        return self.disk()

    def disk_size_edits(self, spec: RequestSpec) -> None:
        if not (spec.disk_size or spec.disk_size_delta or spec.partitions):
            return
        if (
            self._disk_for_edit() is None
            and str((self.data.get("target") or {}).get("imageType", "raw")) != "raw"
        ):
            return
        created = self.disk() is None
        disk = self.ensure_disk(spec.disk_size)
        layout = _Layout(self, disk)
        if spec.disk_size_delta:
            layout.change_size_by(spec.disk_size_delta)
        if spec.disk_size and not created and disk.get("size") != spec.disk_size:
            layout.set_size(spec.disk_size)

    def partition_edits(self, spec: RequestSpec) -> None:
        disk = self.disk()
        if not spec.partitions or disk is None:
            return
        layout = _Layout(self, disk)
        for request in spec.partitions:
            action = request.get("action")
            if action == "remove":
                layout.remove(request["mountPoint"])
            elif action == "resize":
                if request.get("fsType"):
                    layout.set_fs(request["mountPoint"], request["fsType"])
                if request.get("size"):
                    layout.resize(request["mountPoint"], request["size"])
            else:
                layout.add(
                    request["mountPoint"],
                    request.get("size"),
                    request.get("fsType"),
                    bool(request.get("fill")),
                )

    def artifacts(self, spec: RequestSpec) -> None:
        if not (spec.artifacts or spec.remove_artifacts or spec.artifact_compression):
            return
        image_type = str((self.data.get("target") or {}).get("imageType", "raw"))
        if image_type != "raw":
            self.problems.append(f"output artifacts apply to raw images; this one is {image_type}")
            return
        disk = self.ensure_disk()
        arts = [a for a in disk.get("artifacts") or [] if isinstance(a, dict)]
        if spec.remove_artifacts:
            drop_all = "*" in spec.remove_artifacts
            if drop_all:
                left = [a for a in arts if a.get("type") in spec.artifacts]
            else:
                left = [a for a in arts if a.get("type") not in spec.remove_artifacts]
            gone = [str(a.get("type")) for a in arts if a not in left]
            if gone:
                self.changes.append(f"removed artifact(s): {', '.join(gone)}")
            arts = left
        for kind in spec.artifacts:
            if not any(a.get("type") == kind for a in arts):
                item: dict[str, Any] = {"type": kind}
                if spec.artifact_compression:
                    item["compression"] = spec.artifact_compression
                arts.append(item)
                self.changes.append(
                    f"added {kind} artifact"
                    + (f" ({spec.artifact_compression})" if spec.artifact_compression else "")
                )
            elif spec.artifact_compression:
                for a in arts:
                    if a.get("type") == kind and a.get("compression") != spec.artifact_compression:
                        a["compression"] = spec.artifact_compression
                        self.changes.append(f"{kind} artifact compressed with {spec.artifact_compression}")
        if spec.artifact_compression and not spec.artifacts:
            for a in arts:
                if a.get("compression") != spec.artifact_compression:
                    a["compression"] = spec.artifact_compression
            self.changes.append(f"artifacts compressed with {spec.artifact_compression}")
        if arts:
            disk["artifacts"] = arts
        else:
            disk.pop("artifacts", None)
            self.changes.append("note: no output artifacts left; the build writes the raw disk only")

    def tidy(self) -> None:
        sc = self.data.get("systemConfig")
        if isinstance(sc, dict):
            if isinstance(sc.get("packages"), list):
                sc["packages"] = list(dict.fromkeys(str(p) for p in sc["packages"]))
                if not sc["packages"]:
                    sc.pop("packages")
            if sc.get("kernel") == {}:
                sc.pop("kernel")
            if sc.get("configurations") == []:
                sc.pop("configurations")
        if self.data.get("packageRepositories") == []:
            self.data.pop("packageRepositories")


def _apply(data: dict, spec: RequestSpec, caps: Capabilities) -> tuple[dict, list[str], list[str]]:
    edit = _Edit(data, caps)
    edit.run(spec)
    logger.debug("offline edit: %d change(s), %d problem(s)", len(edit.changes), len(edit.problems))
    return edit.data, edit.changes, edit.problems


# --------------------------------------------------------------------------- naming and metadata


def _drop_sample_repositories(data: dict, changes: list[str]) -> None:
    """Upstream samples carry '<URL>' repositories to be filled in; a generated template must not."""
    repos = data.get("packageRepositories")
    if not isinstance(repos, list):
        return
    samples = [
        r for r in repos if isinstance(r, dict) and "<" in str(r.get("url", "")) + str(r.get("pkey", ""))
    ]
    if not samples:
        return
    left = [r for r in repos if r not in samples]
    if left:
        data["packageRepositories"] = left
    else:
        data.pop("packageRepositories")
    changes.append(
        "dropped sample repositories with placeholders: " + ", ".join(str(r.get("codename")) for r in samples)
    )


_GROUP_SLUG = {
    "containers": "docker", "monitoring": "monitoring", "ros2": "ros2", "realtime": "rt", "ai": "ai",
    "desktop": "desktop", "virtualization": "virt", "security": "secure", "cloud-init": "cloud",
    "kubernetes": "k3s", "web-server": "web", "podman": "podman",
}  # fmt: skip


def _name_and_describe(
    data: dict, spec: RequestSpec, request: str, caps: Capabilities, changes: list[str]
) -> None:
    target = data.get("target") if isinstance(data.get("target"), dict) else {}
    dist = str(target.get("dist") or "custom")
    arch = str(target.get("arch") or "x86_64")
    image_type = str(target.get("imageType") or "raw")
    family = caps.family_of(dist) or caps.family_of(str(target.get("os") or ""))
    parts: list[str] = []
    for uc in spec.use_cases:
        parts.append(uc)
    for group in spec.add_groups:
        slug = _GROUP_SLUG.get(group)
        if group == "containers" and family == "redhat-compatible-distro":
            slug = "podman"
        if slug:
            parts.append(slug)
    parts = list(dict.fromkeys(p for p in parts if p not in (dist, arch, image_type)))[:4] or ["custom"]
    slug = spec.name or "-".join([dist, arch, *parts, image_type])
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", slug).strip("-_") or "image"
    image = _image(data)
    if image.get("name") != slug:
        changes.append(f"image name {image.get('name') or 'unset'} -> {slug}")
        image["name"] = slug
    image.setdefault("version", caps.dists[dist].release if dist in caps.dists else "1.0.0")
    sc = data.get("systemConfig")
    if isinstance(sc, dict):
        sc["name"] = slug
    disk = data.get("disk")
    if isinstance(disk, dict):
        disk["name"] = slug  # upstream: "1:1 mapping to the systemConfig name"
    label = caps.dists[dist].label if dist in caps.dists else dist
    use_labels = [caps.use_cases[u].label for u in dict.fromkeys(spec.use_cases) if u in caps.use_cases]
    group_labels = [caps.groups[g].description.split(" (")[0] for g in spec.add_groups if g in caps.groups]
    description = f"{label} {arch} {image_type} image"
    if use_labels:
        description += " for " + ", ".join(use_labels)
    if group_labels:
        description += "; includes " + ", ".join(g[0].lower() + g[1:] for g in group_labels)
    request_text = " ".join(request.split())
    if request_text:
        description += f". Requested as: {request_text[:200]}"
    if isinstance(sc, dict):
        sc["description"] = description.split(". Requested as:")[0]
    keywords = [dist, family or "", arch, image_type, *spec.use_cases, *spec.add_groups]
    for group in spec.add_groups:
        first = caps.groups[group].triggers[0] if group in caps.groups and caps.groups[group].triggers else ""
        if first and not first.startswith(group[:5]):
            keywords.append(first)
    metadata = {
        "description": description,
        "use_cases": list(dict.fromkeys([*use_labels, *group_labels])) or [f"{label} {image_type} image"],
        "keywords": list(dict.fromkeys(k for k in keywords if k))[:16],
    }
    data["metadata"] = metadata
    changes.append("metadata written (description, use_cases, keywords)")


# --------------------------------------------------------------------------- summaries


def summarize(data: dict, question: str) -> str:
    """Answer an explanation question about a template from the template itself."""
    caps = load_capabilities()
    q = (question or "").lower()
    sections = {
        "packages": r"\bpackages?\b|\binstalled\b|\bsoftware\b|\binclude[sd]?\b|\bcontain",
        "disk": r"\bdisk\b|\bpartition|\blayout\b|\bstorage\b|\bmount|\bsize\b|\bartifact|\bformat\b|\bqcow|\bvhd",
        "kernel": r"\bkernel\b|\bcmdline\b|\bcommand[\s-]?line\b|\bboot\s+param",
        "users": r"\busers?\b|\baccounts?\b|\blogin\b",
        "boot": r"\bboot\s*loader\b|\bgrub\b|\bsystemd-boot\b|\bsecure\s*boot\b|\bimmutab|\bread-only\b|\bverity\b|\buefi\b",
        "repos": r"\brepo(?:sitor(?:y|ies))?s?\b|\bsources?\b",
        "target": r"\b(?:os|distro|distribution|arch(?:itecture)?|image\s+type|target|platform)\b",
        "host": r"\bhost\s*name\b",
    }
    asked = [name for name, pattern in sections.items() if re.search(pattern, q)]
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
    pkgs = _template_packages(data)
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
    image = data.get("image") if isinstance(data.get("image"), dict) else {}
    target = data.get("target") if isinstance(data.get("target"), dict) else {}
    sc = data.get("systemConfig") if isinstance(data.get("systemConfig"), dict) else {}
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
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
            lines.append(f"Packages ({len(pkgs)}): {_short_list(pkgs, 60)}")
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
            for p in disk.get("partitions") or []:
                if isinstance(p, dict):
                    end = "end of disk" if _is_fill(p.get("end")) else p.get("end")
                    lines.append(
                        f"  - {p.get('id', '?')}: {p.get('type', '?')} {p.get('fsType', '')} "
                        f"{p.get('start', '?')} -> {end}, mounted at {p.get('mountPoint', '-')}"
                    )
        else:
            lines.append("Disk: no disk section; the distribution's default layout applies.")
    if want("kernel"):
        kernel = sc.get("kernel") if isinstance(sc.get("kernel"), dict) else {}
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
        boot = sc.get("bootloader") if isinstance(sc.get("bootloader"), dict) else {}
        imm = sc.get("immutability") if isinstance(sc.get("immutability"), dict) else {}
        secure = any(k.startswith("secureBoot") for k in imm)
        lines.append(
            f"Boot: {boot.get('provider', 'default bootloader')} ({boot.get('bootType', 'efi')}); immutability "
            f"{'enabled' if imm.get('enabled') else 'disabled' if imm else 'default'}; secure boot {'configured' if secure else 'not configured'}."
        )
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


# --------------------------------------------------------------------------- helpers


def _image(data: dict) -> dict:
    image = data.get("image")
    if not isinstance(image, dict):
        image = {}
        data["image"] = image
    return image


def _template_packages(data: Any) -> list[str]:
    if not isinstance(data, dict):
        return []
    sc = data.get("systemConfig")
    if not isinstance(sc, dict):
        return []
    names = [str(p) for p in sc.get("packages") or []]
    kernel = sc.get("kernel")
    if isinstance(kernel, dict):
        names += [str(p) for p in kernel.get("packages") or []]
    return names


def _kernel_like(packages: list[Any], caps: Capabilities, dist: str) -> set[str]:
    known = {
        k
        for arch in ("x86_64", "aarch64")
        for rt in (False, True)
        for k in caps.kernel_packages(dist, arch, realtime=rt)
    }
    pattern = re.compile(
        r"^(linux-image-|linux-headers-|linux-generic|linux-virtual$|kernel($|-rt|-drivers|-64k|-core|-modules))"
    )
    return {str(p) for p in packages if str(p) in known or pattern.match(str(p))}


def _group_present(caps: Capabilities, group: str, family: str, listed: set[str]) -> bool:
    names = caps.packages_for(group, family)
    if not names:
        return False
    have = sum(1 for n in names if n in listed)
    return have * 2 >= len(names) and have > 0


def _is_rt(packages: list[str]) -> bool:
    return any(re.search(r"(^|-)rt(-|$)|realtime", p) for p in packages)


_mib = template_mib
_fmt_mib = fmt_offset
_fmt_size = fmt_size


def _short_list(items: Any, limit: int = 8) -> str:
    items = [str(i) for i in items]
    if len(items) <= limit:
        return ", ".join(items)
    return ", ".join(items[:limit]) + f" and {len(items) - limit} more"


__all__ = [
    "ComposeResult",
    "RequestSpec",
    "apply_instruction",
    "apply_spec",
    "compose",
    "dump_yaml",
    "is_explanation_question",
    "parse_request",
    "summarize",
]

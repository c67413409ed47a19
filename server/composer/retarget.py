"""Switching a template to another distribution or architecture: packages, kernel, bootloader, repositories,
users' admin group, files, version, names and metadata translated with the capability knowledge."""

from __future__ import annotations

import re
from typing import Any

from ..knowledge.loader import Capabilities
from ..knowledge.request_words import load_request_words
from .editing import TemplateEdit, image_section, is_rt, short_list
from .request_spec import RequestSpec


class RetargetEdit(TemplateEdit):
    """The distribution and architecture switch of an edit."""

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
        if old_family == new_family:  # another release: the packages stay as named (another family translates them)
            self._without_unavailable_groups(old_dist)
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

    def _without_unavailable_groups(self, old_dist: str) -> None:
        """A capability the template has that the new distribution cannot have (ROS 2 Jazzy on Ubuntu 26.04) leaves
        with its packages, and the answer says why, instead of packages no repository of the new one carries."""
        caps = self.caps
        sc = self.system(create=False)
        listed = {str(p) for p in sc.get("packages") or []}
        for group in sorted(caps.groups):
            if not group_present(caps, group, old_dist, listed) or caps.group_available(group, self.dist, self.arch):
                continue
            members = set(caps.group_members(group, sorted(listed), old_dist))
            if not members:
                continue
            sc["packages"] = [p for p in sc.get("packages") or [] if str(p) not in members]
            listed -= members
            why = caps.group_note(group, self.dist) or f"{self.dist} has no packages for it"
            self.problems.append(f"{group} ({caps.groups[group].description}) is not available for {self.dist}: {why}; "
                                 f"its packages left: {short_list(sorted(members))}")

    def _translate_packages(self, old_family: str, old_dist: str) -> None:
        caps = self.caps
        sc = self.system(create=False)
        plist = sc.get("packages")
        if not isinstance(plist, list) or not plist:
            return
        same_type = caps.pkg_type(old_family) == caps.pkg_type(self.family)
        old_kernel = kernel_like(plist, caps, old_dist)
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
        present = {g for g in caps.groups if group_present(caps, g, old_dist, listed)}
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
            if caps.is_specific_to(name, old_family) and old_family != self.family:  # ubuntu24 -> 26 keeps them
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
                for k in caps.kernel_packages(self.dist, self.arch, realtime=is_rt(old_kernel))
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
                + short_list(dropped)
            )

    def _translate_kernel(self, old_family: str, old_dist: str, old_arch: str) -> None:
        caps = self.caps
        kernel = self.system(create=False).get("kernel")
        if not isinstance(kernel, dict):
            return
        packages = kernel.get("packages")
        if isinstance(packages, list) and packages:
            rt = is_rt([str(p) for p in packages])
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
                f"dropped package repositories of {old_dist}: " + short_list(map(str, dropped))
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
                f"dropped {old_dist}-specific additional files: " + short_list(map(str, dropped))
            )

    def _translate_version(self, old_dist: str) -> None:
        image = image_section(self.data)
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
                "configuration commands use the other package manager; review: " + short_list(odd, 2)
            )

    def _rename_everywhere(self, old: str, new: str) -> None:
        """Keep names honest: 'azl3-x86_64-edge' becomes 'ubuntu24-x86_64-edge' after a switch, and a host
        named after the old release ('debian13', 'azl3-minimal') is named after the new one."""
        pairs = [(old, new)]
        for section, key in (("image", "name"), ("systemConfig", "name"), ("disk", "name"),
                             ("systemConfig", "hostname")):
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
                self.changes.append(f"dropped x86-only packages: {short_list(dropped)}")
        kernel = sc.get("kernel")
        if (
            isinstance(kernel, dict)
            and isinstance(kernel.get("packages"), list)
            and kernel["packages"]
            and self.family
        ):
            old = [str(p) for p in kernel["packages"]]
            new_kernel = caps.kernel_packages(self.dist, new_arch, realtime=is_rt(old))
            if new_kernel and new_kernel != old:
                kernel["packages"] = new_kernel
                self.changes.append(f"kernel packages: {', '.join(old)} -> {', '.join(new_kernel)}")
        if new_arch == "x86_64" and isinstance(kernel, dict) and "ttyAMA" in str(kernel.get("cmdline") or ""):
            # the Arm PL011 UART has no x86 counterpart of its name: an x86 machine's first serial port is ttyS0
            old_line = str(kernel["cmdline"])
            kernel["cmdline"] = re.sub(r"\bconsole=ttyAMA(\d+)", r"console=ttyS\1", old_line)
            self.changes.append("serial console ttyAMA (Arm's UART) -> ttyS on x86_64")
        hostname = sc.get("hostname")
        if isinstance(hostname, str):
            new_host = hostname
            for a, b in ((old_arch, new_arch), (caps.arch_info[old_arch]["deb"], caps.arch_info[new_arch]["deb"])):
                new_host = re.sub(rf"(?<![A-Za-z0-9]){re.escape(str(a))}(?![A-Za-z0-9])", str(b), new_host)
            if new_host != hostname:
                sc["hostname"] = new_host.replace("_", "-")  # x86_64 is no host name's spelling
                self.changes.append(f"hostname {hostname} -> {sc['hostname']} (it named the old architecture)")
        if new_arch == "aarch64" and isinstance(kernel, dict) and kernel.get("cmdline"):
            words = str(kernel["cmdline"]).split()
            x86 = [w for w in words if caps.is_x86_only_parameter(w)]
            if x86:
                kernel["cmdline"] = " ".join(w for w in words if w not in x86)
                self.changes.append(f"kernel parameters of x86 hardware dropped: {', '.join(x86)}")
        disk = self.disk()
        if disk and new_arch == "aarch64":  # legacy BIOS boot is x86's: an aarch64 image boots by UEFI alone
            parts = disk.get("partitions") or []
            bios = [p for p in parts if isinstance(p, dict) and (p.get("type") == "bios"
                                                                   or "bios_grub" in (p.get("flags") or []))]
            if bios:
                disk["partitions"] = [p for p in parts if not any(p is b for b in bios)]
                self.changes.append(f"BIOS boot partition dropped (aarch64 boots by UEFI): {bios[0].get('id')}")
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


def kernel_like(packages: list[Any], caps: Capabilities, dist: str) -> set[str]:
    known = {
        k
        for arch in ("x86_64", "aarch64")
        for rt in (False, True)
        for k in caps.kernel_packages(dist, arch, realtime=rt)
    }
    pattern = load_request_words().kernel_package
    return {str(p) for p in packages if str(p) in known or pattern.match(str(p))}

def group_present(caps: Capabilities, group: str, family: str, listed: set[str]) -> bool:
    names = caps.packages_for(group, family)
    if not names:
        return False
    have = sum(1 for n in names if n in listed)
    return have * 2 >= len(names) and have > 0

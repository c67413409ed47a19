"""The edit in progress: one application of a request's spec to a deep copy of a template.

:class:`TemplateEdit` holds the copy, the change list and the problems, reads and writes the package list,
adds and removes capability groups and named packages, and keeps what is left coherent (one web server,
what removed software brought goes with it). The other edits (retarget, system_edits, disk_edits) build on it;
:class:`server.composer.compose.Edit` puts them together in the order a request is applied.
"""

from __future__ import annotations

import copy
import fnmatch
import re
from collections.abc import Iterable
from typing import Any

from ..knowledge import nft_ruleset
from ..knowledge.entries import GroupVariant
from ..knowledge.loader import Capabilities
from ..knowledge.package_names import versioned_build
from ..knowledge.request_words import load_request_words
from ..knowledge.stems import service_spans
from . import coherence, module_lists
from .layout import Layout
from .request_spec import DATABASE


class TemplateEdit:
    """One application of a spec to a deep copy of a template."""

    def __init__(self, data: dict, caps: Capabilities):
        self.data = copy.deepcopy(data) if isinstance(data, dict) else {}
        self.caps = caps
        self.changes: list[str] = []
        self.problems: list[str] = []
        self.keep_root = True
        self.removed: list[str] = []  # every package taken out, for the coherence pass
        self.named: set[str] = set()  # packages the request named (after translation), for exclusive roles
        self.group_added: set[str] = set()  # packages this edit added as part of a group (reported with it)
        self.translated: list[tuple[str, str]] = []  # (old, new) package names of a distribution switch
        self.withdrawn: list[str] = []  # the request's notes the template made untrue (a default not used)
        target = mapping_at(self.data, "target")
        self.dist = caps.dist_of(str(target.get("dist") or "")) or str(target.get("dist") or "")
        self.family = caps.family_of(str(target.get("os") or "")) or caps.family_of(self.dist) or ""
        self.arch = caps.arch_of(str(target.get("arch") or "")) or str(target.get("arch") or "x86_64")

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

    def _append_cmdline(self, param: str) -> bool:
        """Add ``param`` to the kernel command line; False when the line already says it. A key's other value is
        replaced rather than passed twice. Consoles are keyed by their device, since several may be listed
        ("console=tty0 console=ttyS0,115200"): "console=ttyS0" beside "console=ttyS0,115200" is that console
        already, and "console=ttyS0,9600" changes its speed."""
        kernel = self.kernel()
        words = str(kernel.get("cmdline") or "").split()
        if param in words:
            return False
        key, _, value = param.partition("=")
        if key == "console":
            device, _, options = value.partition(",")
            for i, w in enumerate(words):
                wkey, _, wvalue = w.partition("=")
                if wkey == "console" and wvalue.partition(",")[0] == device:
                    if not options:
                        return False
                    words[i] = param
                    kernel["cmdline"] = " ".join(words)
                    return True
        elif value:
            for i, w in enumerate(words):
                if w.split("=", 1)[0] == key:
                    param = module_lists.merged(w, param) or param  # one more module kept out, the others too
                    if param == w:
                        return False
                    words[i] = param
                    kernel["cmdline"] = " ".join(words)
                    return True
        words.append(param)
        kernel["cmdline"] = " ".join(words)
        return True

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
        addons = coherence.orphaned_addons(self.removed, installed, self.caps)
        if addons and self.remove_packages(set(addons)):
            self.changes.append(f"also removed add-ons of what left: {', '.join(addons)}")
            installed = [p for p in installed if p not in addons]
        gone = coherence.gone_stems(self.removed, installed, self.caps)
        names = coherence.gone_names(self.removed, installed)
        if not gone and not names:
            return
        system = self.system(create=False)
        if privileged := coherence.sudo_without_sudo(system, gone):
            self.changes.append(f"note: {', '.join(privileged)} still set to use sudo (sudo: true), which is no "
                                "longer installed: the setting does nothing until sudo is added back")
        services = coherence.drop_services(system, gone, names) if system else []
        commands = coherence.drop_commands(system, gone, names) if system else []
        groups = coherence.drop_user_groups(system, gone) if system else []
        keywords = coherence.drop_keywords(self.data, gone)
        disk = self.disk()
        for mount in coherence.mounts_of(disk, gone):
            if disk is not None:
                Layout(self, disk).remove(mount)
        parts = ([f"services {', '.join(services)}"] if services else []) + (
            [f"commands {'; '.join(f'`{c}`' for c in commands)}"] if commands else []) + (
            [f"group memberships {', '.join(groups)}"] if groups else []) + (
            [f"keywords {', '.join(keywords)}"] if keywords else [])
        if parts:
            self.changes.append("also removed what the removed software needed: " + "; ".join(parts))

    # ------------------------------------------------------------ packages and groups

    def remove_groups(self, groups: list[str]) -> None:
        caps = self.caps
        for group in groups:
            installed = template_packages(self.data)
            removed = self.remove_packages(caps.group_package_universe(group) | set(caps.group_members(group, installed)))
            extra: list[str] = []
            if group == "realtime":
                extra += self._reset_kernel_flavour()
            kernel = self.system(create=False).get("kernel")
            where = self.dist or self.family
            off = caps.group_switch_off(group, where) if where else []
            cmdline = str(kernel.get("cmdline") or "") if isinstance(kernel, dict) else ""
            tuned = caps.group_tuning(group, cmdline)
            if off:  # switched off: every value of its own parameters goes (a permissive mode's enforcing=0 too)
                names = caps.group_own_parameters(group)
                tuned += [w for w in cmdline.split() if w.split("=", 1)[0] in names and w not in off and w not in tuned]
            if isinstance(kernel, dict) and tuned:
                kernel["cmdline"] = " ".join(w for w in cmdline.split() if w not in tuned)
                extra.append(f"kernel parameters {short_list(tuned)}")
            already_off = []
            for param in off:
                if self._append_cmdline(param):
                    extra.append(f"kernel parameter {param} (off at boot: the kernel starts it without its packages)")
                else:
                    already_off.append(param)
            for repo in caps.group_repositories(group, self.dist):
                extra += self._remove_repo(repo)
            configs = self.system(create=False).get("configurations")
            wanted = caps.group_configurations(group, self.dist)
            if isinstance(configs, list):
                left = [c for c in configs if c not in wanted
                        and not (isinstance(c, dict) and caps.group_configuration(group, str(c.get("cmd") or "")))]
                if len(left) != len(configs):
                    self.system()["configurations"] = left
                    extra.append("its configuration commands")
            extra += self._remove_group_users(group)
            disk = self.disk()
            if disk is not None:
                mounts = {str(p.get("mountPoint")) for p in disk.get("partitions") or [] if isinstance(p, dict)}
                for mount in (m for m in caps.groups[group].mounts if m in mounts):
                    Layout(self, disk).remove(mount)
            if removed or extra:
                what = ", ".join(removed) if removed else ""
                self.changes.append(f"removed {group}: " + "; ".join(x for x in (what, *extra) if x))
            elif already_off:
                self.changes.append(f"{group} already off: {', '.join(already_off)} on the kernel command line, and "
                                    "none of its packages in the template")
            else:
                self.changes.append(
                    f"nothing to remove for {group}: none of its packages are in the template"
                )

    def _supersede(self, group: str, where: str) -> list[str]:
        """What adding ``group`` takes out of the groups it stands in for (Xfce for the desktop: GNOME's packages
        and login manager), as change notes; its own packages and members stay."""
        caps = self.caps
        own = {n.lower() for n in caps.packages_for(group, where, self.arch)}
        spec = caps.groups[group]
        out: list[str] = []
        for other in spec.supersedes:
            installed = template_packages(self.data)
            theirs = set(caps.group_members(other, installed, where)) | set(caps.packages_for(other, where, self.arch))
            gone = self.remove_packages({n for n in theirs if n.lower() not in own
                                         and not any(m.search(n.lower()) for m in spec.members)})
            if gone:
                out.append(f"in place of the {other} packages {', '.join(gone)}")
            # The other's units the template enables (gdm.service, which ubuntu-desktop-minimal brought): a unit
            # of software that is no longer there fails the build.
            system = self.system(create=False)
            units = {unit for _s, _e, unit in (span for c in system.get("configurations") or [] if isinstance(c, dict)
                                               for span in service_spans(str(c.get("cmd") or "")))
                     if caps.group_members(other, [unit, unit.rstrip("0123456789")], where)
                     and not any(m.search(unit.lower()) for m in spec.members)}
            if units and (dropped := coherence.drop_services(system, set(), frozenset(units))):
                out.append(f"no longer enabled: {', '.join(dropped)}")
        return out

    def _remove_group_users(self, group: str) -> list[str]:
        """The service accounts the group's software ran as: users named for the group ("kiosk", "podman-svc")."""
        users = self.system(create=False).get("users")
        if not isinstance(users, list):
            return []
        gone = [u for u in users if isinstance(u, dict) and self.caps.names_group(str(u.get("name") or ""), [group])]
        if not gone:
            return []
        left = [u for u in users if u not in gone]
        if left:
            self.system()["users"] = left
        else:
            self.system().pop("users")
        return [f"user {', '.join(str(u.get('name')) for u in gone)}"]

    def _reset_kernel_flavour(self) -> list[str]:
        kernel = self.system(create=False).get("kernel")
        if not isinstance(kernel, dict) or not isinstance(kernel.get("packages"), list):
            return []
        if not is_rt([str(p) for p in kernel["packages"]]):
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
            installed = template_packages(self.data)
            if name == DATABASE:
                self._remove_database(installed)
                continue
            wanted = set(self.caps.aliases(name)) | {name}
            if not wanted & set(installed):
                # A short name of an installed package ("timesyncd" for systemd-timesyncd), when only one fits; never
                # the kernel ("amd64" is no name for linux-image-amd64).
                listed = [str(p) for p in self.system(create=False).get("packages") or []]
                fits = [p for p in listed if p.endswith("-" + name) or p.startswith(name + "-")]
                wanted |= set(fits) if len(fits) == 1 else set()
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

    def _remove_database(self, installed: Iterable[str]) -> None:
        """"get rid of the database": the packages of every database the image has (request_words.yaml
        ``data_dirs``), with their own add-ons ("postgresql-contrib")."""
        dirs = load_request_words().data_dirs
        found = {name: [p for p in installed if re.match(d["packages"], p)] for name, d in dirs.items()}
        found = {name: packages for name, packages in found.items() if packages}
        if not found:
            self.changes.append(f"nothing to remove: the image has no database ({', '.join(dirs)})")
            return
        servers = {p for packages in found.values() for p in packages}
        removed = self.remove_packages(servers | {p for p in installed if any(p.startswith(n + "-") for n in found)})
        self.changes.append(f"removed the database ({', '.join(found)}): {', '.join(removed)}")

    def name_groups(self, groups: Iterable[str]) -> None:
        """Groups the request named by their own software ("docker", not "a container host"): their packages
        count as named for the exclusive roles, so "docker and podman" keeps both engines."""
        where = self.dist or self.family
        if where:
            self.named.update(p for g in groups for p in self.caps.packages_for(g, where, self.arch))

    def add_groups(self, groups: list[str], modes: dict[str, str] | None = None, without: Iterable[str] = (),
                   without_groups: Iterable[str] = (), named: Iterable[str] = ()) -> None:
        """``without``: packages the request takes out ("docker, but not docker-compose"), in any family's name:
        a group brings the rest of its packages. ``without_groups``: groups the request takes out ("hardened,
        without selinux"): a group brings none of their packages or kernel parameters, and says so. ``named``: the
        groups and packages the request names by their software, which a role the template fills does not stop
        (see :meth:`_role_filled`)."""
        caps = self.caps
        where = self.dist or self.family
        modes = modes or {}
        # each name taken out, in this family's naming too, to the name as the request said it
        said_as = {n.lower(): name for name in without
                   for n in (name, caps.translate_package(name, where) if where else name) if n}
        excluded = set(said_as)
        taken_out = [g for g in without_groups if g in caps.groups]
        excluded_groups = {n.lower() for g in taken_out for n in caps.group_package_universe(g)}
        excluded_parameters = {name for g in taken_out for name in caps.group_own_parameters(g)}
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
            extra = self._supersede(group, where)
            own = caps.packages_for(group, where, self.arch)
            filled = self._role_filled(group, own, set(named))
            if filled:  # the template's software fills the role: none of the group's, whose companions serve its own
                own = []  # (a podman image asked for "containers" gets no containerd or docker-compose)
            variant = self._variant(group, named, where)
            if variant:  # "a kiosk in firefox": the software named runs in the place of the group's own
                own = [variant[0] if p == variant[1].replaces else p for p in own]
            left_out = [p for p in own if p.lower() in excluded_groups and p.lower() not in excluded]
            # "docker but not compose": a name taken out, or a word that is one part of a member's name, takes that
            # member out
            by_part = {p: said_as[w] for p in own for w in excluded if w == p.lower() or w in p.lower().split("-")}
            added = [p for p in own if p.lower() not in excluded_groups and p not in by_part and self.add_package(p)]
            if by_part:
                self.changes = [c for c in self.changes
                                if c not in {f"nothing to remove: {w} is not in the package list" for w in by_part.values()}]
            self.group_added.update(added)
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
            mode = modes.get(group)
            for param in caps.group_cmdline(group, where, mode):
                if param.split("=", 1)[0] in excluded_parameters:
                    left_out.append(param)
                elif self._append_cmdline(param):
                    extra.append(f"kernel parameter {param}")
            if left_out:
                extra.append(f"without its {', '.join(left_out)} (the request takes {', '.join(taken_out)} out)")
            if by_part:
                extra.append(f"without its {', '.join(by_part)} (the request takes {', '.join(dict.fromkeys(by_part.values()))} "
                             "out)")
            for repo in caps.group_repositories(group, where):
                if self._add_repo(repo):
                    extra.append(f"repository {repo.get('url')}")
            users = self.system().get("users")
            for account in caps.group_users(group, where):
                if not any(isinstance(u, dict) and u.get("name") == account["name"] for u in users or []):
                    users = self.system().setdefault("users", [])
                    users.append(account)
                    extra.append(f"user {account['name']}")
            for config in caps.group_configurations(group, where) if not filled else ():
                if variant:
                    config = {**config, "cmd": variant[1].command(str(config.get("cmd") or ""))}
                configs = self.system().setdefault("configurations", [])
                if config not in configs and not any(nft_ruleset.same_file(config, c) for c in configs):
                    configs.append(config)
                    said = nft_ruleset.describe(str(config.get("cmd") or ""))
                    extra.append(f"configuration: {said}" if said else f"configuration `{config.get('cmd')}`")
            role = [f"the template's {filled[0]} fills its role (kept; name another to switch)"] if filled else []
            role += [f"{variant[0]} in {variant[1].replaces}'s place, as asked"] if variant else []
            if added or extra:
                parts = ([f"packages {', '.join(added)}"] if added else []) + extra + role
                self.changes.append(f"added {group} ({caps.groups[group].description}): " + "; ".join(parts))
            else:
                self.changes.append(": ".join([f"{group} already present", *role]))
            note = caps.group_note(group, where)
            if note:
                self.changes.append(f"note: {note}")
            if mode:
                self._report_mode(group, mode, where)

    def _variant(self, group: str, named: Iterable[str], where: str) -> tuple[str, GroupVariant] | None:
        """The software the request names with ``group`` that runs in the place of one of its packages, by its
        name on this target."""
        variants = self.caps.groups[group].variants
        for name in named:
            local = self.caps.translate_package(name, where) or name
            if local in variants:
                return local, variants[local]
        return None

    def _role_filled(self, group: str, own: list[str], named: set[str]) -> tuple[str, set[str]] | None:
        """A group asked for by its role ("an el10 web server") whose role the template fills already with other
        software (httpd, where the group's own is nginx): that software, and the group's packages for the role,
        which are not added. None when the request names the group's software ("web server with nginx")."""
        if group in named or named & {p.lower() for p in own}:
            return None
        present = {str(p) for p in self.packages()}
        for members in [*self.caps.exclusive.values(), [*own, *self.caps.groups[group].filled_by]]:
            mine = set(own) & set(members)
            there = [m for m in members if m in present and m not in mine]
            if mine and there and not mine & present:
                return there[0], mine
        return None

    def _report_mode(self, group: str, mode: str, where: str) -> None:
        """Say the mode was applied, or why it was not (a mode with nothing to set on this target)."""
        note = self.caps.mode_note(group, mode, where)
        if note:
            self.problems.append(f"{group} {mode}: {note}")
        elif self.caps.group_cmdline(group, where, mode) != self.caps.group_cmdline(group, where):
            self.changes.append(f"{group} runs {mode}")
        else:
            self.problems.append(f"{group} {mode}: this target has no setting for it")

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
            unpackaged = self._unpackaged_here(renamed)
            if unpackaged:
                self.problems.append(f"{renamed} not added: {unpackaged}")
                continue
            self.named.add(renamed)
            build = next((str(p) for p in self.packages() if versioned_build(renamed, str(p))), None)
            if build:
                self.named.add(build)
                self.changes.append(f"{renamed} already present ({build})")
            elif self.add_package(renamed):
                how = f" (the {where} name for {name})" if renamed != name else ""
                self.changes.append(f"added package {renamed}{how}")
            elif renamed not in self.group_added:  # else the group's line above says it was added
                self.changes.append(f"{renamed} already present")

    def _unpackaged_here(self, name: str) -> str | None:
        """Why ``name`` is not this target's to install, when every capability group it belongs to says its
        family does not package it ("k3s" on Ubuntu: the kubernetes group's note); None otherwise, and for a
        package the template already has."""
        where = self.dist or self.family
        if not where or name in {str(p) for p in self.packages()}:
            return None
        owners = self.caps.groups_of_package(name)
        if not owners or any(self.caps.packages_for(g, where) for g in owners):
            return None
        return next((note for g in sorted(owners) if (note := self.caps.group_note(g, where))), None)


def mapping_at(holder: dict, key: str) -> dict[str, Any]:
    """``holder[key]`` when it is a mapping, else an empty one (a template read from anywhere may hold anything)."""
    value = holder.get(key)
    return value if isinstance(value, dict) else {}


def list_at(holder: dict, key: str) -> list[Any]:
    """``holder[key]`` when it is a list, else an empty one."""
    value = holder.get(key)
    return value if isinstance(value, list) else []


def image_section(data: dict) -> dict:
    image = data.get("image")
    if not isinstance(image, dict):
        image = {}
        data["image"] = image
    return image

def template_packages(data: Any) -> list[str]:
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

def is_rt(packages: Iterable[str]) -> bool:
    realtime = load_request_words().realtime_kernel
    return any(realtime.search(p) for p in packages)

def short_list(items: Any, limit: int = 8) -> str:
    items = [str(i) for i in items]
    if len(items) <= limit:
        return ", ".join(items)
    return ", ".join(items[:limit]) + f" and {len(items) - limit} more"

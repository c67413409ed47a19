"""Edits to the system a template installs: kernel version and command line, hostname, users, bootloader."""

from __future__ import annotations

import fnmatch
import re

from ..knowledge import nft_ruleset
from ..knowledge.autologin import load_autologin
from ..knowledge.request_words import load_request_words
from ..knowledge.system_settings import firewall_services, load_settings, user_sshd_configuration
from . import consoles, cpu_lists
from .adherence import lets_in
from .base import asked_groups
from .coherence import store_configurations, written_commands
from .configuration_edits import ConfigurationEdit
from .editing import list_at, mapping_at, template_packages
from .firewall_sources import UFW_ON, firewalld_options, split_source, ufw_rule, without_general
from .layout import Layout
from .parse_keys import key_commands
from .request_spec import NOLOGIN_SHELL, REFERRED_USER, RequestSpec


class SystemEdit(ConfigurationEdit):
    """Kernel, hostname, user and bootloader edits."""

    def kernel_edits(self, spec: RequestSpec) -> None:
        if spec.uki is not None and bool(self.kernel().get("uki")) != spec.uki:
            self.kernel()["uki"] = spec.uki
            self.changes.append(f"kernel uki {'on' if spec.uki else 'off'} (a unified kernel image"
                                f"{'' if spec.uki else ' no more'})")
        if spec.kernel_version:
            kernel = self.kernel()
            old = kernel.get("version")
            if str(old) != spec.kernel_version:
                kernel["version"] = spec.kernel_version
                self.changes.append(f"kernel version {old or 'unset'} -> {spec.kernel_version}")
            else:
                self.changes.append(f"kernel version already {old}")
        if spec.kernel_cmdline is not None:
            kernel = self.kernel()
            old = kernel.get("cmdline")
            kernel["cmdline"] = spec.kernel_cmdline
            self.changes.append(f"kernel cmdline set to {spec.kernel_cmdline!r} (was {old!r})")
        for param in (consoles.resolved(p, self.arch) for p in [*spec.kernel_cmdline_append, *self._isolated_count(spec)]):
            before = str(self.kernel().get("cmdline") or "").split()
            same, param = self._cpu_list_beside(before, param)
            if same:  # "isolcpus=2,3" beside "isolcpus=2-3": the same CPUs, nothing to change
                self.changes.append(f"kernel cmdline already has {same}")
            elif self._append_cmdline(param):
                now = str(self.kernel().get("cmdline") or "").split()
                replaced = [w for w in before if w not in now]
                written = [w for w in now if w not in before]
                self.changes.append(f"kernel cmdline: {replaced[0]} -> {written[0]}" if len(replaced) == 1
                                    else f"kernel cmdline: added {param}")
                self._cpus_follow(before, param)
            else:  # asked for and already there: said so, not reported as an instruction not understood
                self.changes.append(f"kernel cmdline already has {param}")
        for param in spec.kernel_cmdline_remove:
            kernel = self.kernel()
            words = str(kernel.get("cmdline") or "").split()
            key = param.split("=", 1)[0]
            # a pattern ("console=tty[0-9]*": the screen's consoles) takes out what it matches, quietly if nothing
            left = [w for w in words if not fnmatch.fnmatchcase(w, param)] if "*" in param else \
                [w for w in words if w != param and not ("=" not in param and w.split("=", 1)[0] == key)]
            if len(left) != len(words):
                kernel["cmdline"] = " ".join(left)
                self.changes.append(f"kernel cmdline: removed {' '.join(w for w in words if w not in left)}")
            elif "*" not in param:
                self.changes.append(f"kernel cmdline has no {param}")

    def _isolated_count(self, spec: RequestSpec) -> list[str]:
        """"2 isolated cores": the template's isolated CPUs when they are that many, else CPUs 1 to N, CPU 0 left to
        the system and its interrupts (as upstream's real-time templates leave 0-1); said either way."""
        count = spec.isolated_cpu_count
        if not count:
            return []
        words = str(self.kernel().get("cmdline") or "").split()
        there = next((cpu_lists.parse(w.partition("=")[2]) for w in words if w.partition("=")[0] == "isolcpus"), None)
        if there is not None and len(there[1]) == count:
            self.changes.append(f"kernel cmdline already isolates {count} CPUs ({cpu_lists.format_cpus(there[1])})")
            return []
        chosen = cpu_lists.format_cpus(frozenset(range(1, count + 1)))
        self.changes.append(f"note: {count} isolated CPUs written as {chosen}, CPU 0 left to the system; name the "
                            f"CPUs to choose others (e.g. 'isolate cores 2-{count + 1}')")
        return [f"isolcpus={chosen}"]

    @staticmethod
    def _cpu_list_beside(words: list[str], param: str) -> tuple[str | None, str]:
        """(the command line's word that gives ``param``'s key the same CPUs in other words, or None; ``param``
        with the flags of the word it replaces). "isolate cores 1-3" beside "isolcpus=managed_irq,domain,2-3"
        keeps the flags: they say how the CPUs are isolated, the request only which."""
        key, _, value = param.partition("=")
        wanted = cpu_lists.parse(value) if value else None
        if wanted is None:
            return None, param
        for word in words:
            if word == param or word.partition("=")[0] != key:
                continue
            there = cpu_lists.parse(word.partition("=")[2])
            if there is None:
                continue
            if there[1] == wanted[1] and (not wanted[0] or there[0] == wanted[0]):
                return word, param
            if there[0] and not wanted[0]:
                return None, f"{key}={','.join((*there[0], value))}"
        return None, param

    def _cpus_follow(self, before: list[str], param: str) -> None:
        """A CPU list changed ("isolcpus=2,3" -> "isolcpus=1-3"): the parameters that named the old CPUs, or the
        rest of them, follow (system_settings.yaml ``same_cpus`` / ``other_cpus``, see cpu_lists.py)."""
        key, _, value = param.partition("=")
        setting = next((s for s in load_settings().values() if s.same_cpus or s.other_cpus
                        if any(p.partition("=")[0] == key for p in s.cmdline)), None)
        new = cpu_lists.parse(value) if setting is not None else None
        old_word = next((w for w in before if w.partition("=")[0] == key and w != param), None)
        old = cpu_lists.parse(old_word.partition("=")[2]) if old_word else None
        if setting is None or new is None or old is None:
            return
        kernel = self.kernel()
        words, changes = cpu_lists.follow(str(kernel.get("cmdline") or "").split(), old[1], new[1],
                                          value.split(",", len(new[0]))[-1] if new[0] else value,
                                          setting.same_cpus, setting.other_cpus)
        if changes:
            kernel["cmdline"] = " ".join(words)
            self.changes.extend(changes)

    def graphical_apps(self, spec: RequestSpec) -> None:
        """Applications that need a graphical session, named for an image with none ("libreoffice and thunderbird
        for an office pc"): said, with how to ask for a desktop; no desktop is added unasked."""
        patterns = load_request_words().graphical_apps
        if not any(r.search(p.lower()) for p in spec.add_packages for r in patterns):
            return
        installed = template_packages(self.data)
        apps = [p for p in installed if any(r.search(p.lower()) for r in patterns)]
        sessions = [g for g, info in self.caps.groups.items() if g in ("desktop", "kiosk") or "desktop" in info.supersedes]
        if not apps or any(self.caps.group_members(g, installed, self.dist or self.family) for g in sessions):
            return
        self.changes.append(f"note: {', '.join(apps)} {'needs' if len(apps) == 1 else 'need'} a graphical desktop, "
                            "which this image does not have: say 'with a desktop' (or 'a kiosk') to add one")

    def autologin(self, spec: RequestSpec) -> None:
        """Automatic login asked for: said as done where a group in the image logs its user in (a kiosk's
        session, capabilities.yaml ``logs_in``); else written for the user said, or the image's one user, by the
        display manager installed or, with none, the console's getty (resources/autologin.yaml)."""
        if not spec.autologin:
            return
        installed = template_packages(self.data)
        by = [info.logs_in for group, info in self.caps.groups.items()
              if info.logs_in and self.caps.group_members(group, installed, self.dist or self.family)]
        if by:
            self.changes.append(f"note: {spec.autologin}: {by[0]}")
            return
        users = [str(u.get("name")) for u in self.system(create=False).get("users") or []
                 if isinstance(u, dict) and u.get("name") not in (None, "root")]
        user = spec.autologin_user if spec.autologin_user in users else users[0] if len(users) == 1 else None
        if user is None:
            self.changes.append(f"note: {spec.autologin} not applied: which user? " + (
                f"the image has {', '.join(users)}: say e.g. 'autologin as {users[0]}'" if users else
                "the image has no user to log in: say e.g. 'a user kiosk that logs in automatically'"))
            return
        manager, login = load_autologin().file_for({p.lower() for p in installed})
        self.configurations([{"cmd": login.command(user), "replaces": re.escape(login.path),
                              "label": f"automatic login of {user} ({manager})"}])

    def on_hardware(self, spec: RequestSpec) -> None:
        """An image for a machine of its own (RequestSpec.hardware): what its template carries for a hypervisor or
        a cloud leaves unless asked for, and a virtual-machine kernel flavour gives way to the distribution's own
        kernel (capabilities.yaml `hardware`)."""
        if not spec.hardware:
            return
        hardware = self.caps.hardware
        installed = template_packages(self.data)
        asked = asked_groups(spec, self.caps)  # "keep cloud-init": named, so it stays
        leaving = [g for g in hardware.leave_groups if g not in asked and self.caps.group_members(g, installed)]
        before = len(self.changes)
        self.remove_groups(leaving)
        self.changes[before:] = [f"{c} (not for a machine of its own: no hypervisor, no cloud metadata service)"
                                 if c.startswith("removed ") else c for c in self.changes[before:]]
        kernel = self.system(create=False).get("kernel")
        listed = kernel.get("packages") if isinstance(kernel, dict) else None
        if not isinstance(kernel, dict) or not isinstance(listed, list):
            return
        virtual = [str(p) for p in listed if hardware.is_vm_kernel(str(p))]
        own = [k for k in self.caps.kernel_packages(self.dist or self.family, self.arch) if not hardware.is_vm_kernel(k)]
        if not virtual or not own:
            return
        kernel["packages"] = list(dict.fromkeys([*own, *(str(p) for p in listed if str(p) not in virtual)]))
        info, version = self.caps.dists.get(self.dist), ""
        if info and info.kernel_version and str(kernel.get("version")) != info.kernel_version:
            version = f"; kernel version {kernel.get('version')} -> {info.kernel_version}"
            kernel["version"] = info.kernel_version
        self.changes.append(f"kernel {', '.join(virtual)} -> {', '.join(own)}{version} (a virtual-machine kernel "
                            "flavour lacks most hardware drivers)")

    def open_ports(self, opened: list[str], firewall_asked: bool = False) -> None:
        """Ports and services let in by the template's firewall: firewalld's offline command (upstream's EL
        templates configure it so), ufw's rules, which it writes while it is inactive, or the composer's nftables
        ruleset. Another nftables ruleset is the admin's file, and with no firewall nothing blocks a port: both are
        said, nothing written. ``firewall_asked``: the request names the firewall, so a ufw installed off is turned
        on (its rules would otherwise guard nothing)."""
        if not opened:
            return
        installed = set(template_packages(self.data))
        written = written_commands(self.system(create=False))
        already = [p for p in opened if lets_in(written, p)]
        if already:
            self.changes.append(f"firewall already lets in {', '.join(already)}")
        opened = [p for p in opened if p not in already]
        if not opened:
            return
        said = ", ".join(opened)
        if self._nft_let_in(opened, said):
            return
        sourced = [s for s in map(split_source, opened) if s[1]]
        if sourced and installed & {"firewalld", "ufw"}:
            self._restrict(list(dict.fromkeys(what for what, _ in sourced)))
        if "firewalld" in installed:
            options = [f"--add-service={p}" if p in firewall_services() else f"--add-port={p}" for p in opened
                       if not split_source(p)[1]]
            options += [o for what, source in sourced for o in firewalld_options(what, source or "")]
            cmd = "firewall-offline-cmd " + " ".join(dict.fromkeys(options))
        elif "ufw" in installed:
            rules = []
            for what, source in map(split_source, opened):  # ufw writes ranges a:b
                rules.append(ufw_rule(what, source) if source else
                             f"ufw allow {firewall_services().get(what, what).replace('-', ':')}")
            cmd = " && ".join(rules)
            # before the command that turns ufw on: once ufw.conf says ENABLED=yes, `ufw allow` loads the rule
            # into the running kernel, which in the build's chroot is the build host's
            configs = [c for c in self.system().get("configurations") or [] if c is not None]
            on = next((i for i, c in enumerate(configs) if isinstance(c, dict)
                       and UFW_ON.search(str(c.get("cmd") or ""))), None)
            if on is not None:
                store_configurations(self.system(), [*configs[:on], {"cmd": cmd}, *configs[on:]])
                self.changes.append(f"set firewall lets in {', '.join(opened)}: configuration `{cmd}`, before the "
                                    "one that turns ufw on")
                return
            if not firewall_asked:  # else turn_ufw_on follows
                self.changes.append(f"note: ufw is installed off, so nothing blocks {said} yet; the rules below apply "
                                    "once it is on (ask for the firewall to turn it on)")
        else:
            walls = sorted(installed & {"nftables", "iptables", "iptables-services", "iptables-persistent"})
            self.changes.append(
                f"note: {said} not applied: " + (f"the template's firewall is {walls[0]}, whose ruleset is the admin's "
                                                "file; add an accept rule to it with a configuration command" if walls
                                                else "the template has no firewall, so nothing blocks them (ask for "
                                                "a firewall to let in only what you name)"))
            return
        self.configurations([{"cmd": cmd, "label": f"firewall lets in {said}"}])

    def turn_ufw_on(self, firewall_asked: bool) -> None:
        """A firewall asked for where the template's is a ufw installed off (ufw named on Debian, whose firewall
        group is nftables): ufw's own command turning it on at boot, SSH let in first, after the rules written."""
        configs = [c for c in self.system(create=False).get("configurations") or [] if c is not None]
        if not firewall_asked or "ufw" not in template_packages(self.data) or any(
                isinstance(c, dict) and UFW_ON.search(str(c.get("cmd") or "")) for c in configs):
            return
        turn_on = self.caps.group_configurations("firewall", "ubuntu")  # ufw's command, the same on every family
        store_configurations(self.system(), [*configs, *turn_on])
        self.changes.append(f"ufw turned on at boot, SSH let in first (it is installed off): `{turn_on[0]['cmd']}`")

    def _nft_let_in(self, opened: list[str], said: str) -> bool:
        """Let ``opened`` in through the nftables ruleset the composer wrote (the firewall group's on Debian, eLxr and
        Azure Linux), rewriting it in its place; False when the template has none."""
        configs = [c for c in self.system(create=False).get("configurations") or [] if c is not None]
        found = next(((i, c) for i, c in enumerate(configs) if isinstance(c, dict)
                      and nft_ruleset.read(str(c.get("cmd") or "")) is not None), None)
        if found is None:
            return False
        at, config = found
        cmd, dropped = nft_ruleset.with_entries(str(config["cmd"]), opened)
        configs[at] = {**config, "cmd": cmd}
        store_configurations(self.system(), configs)
        rules = "; ".join(nft_ruleset.rule_said(p) for p in opened)
        self.changes.append(f"set firewall lets in {said}: the nftables ruleset's rules `{rules}`"
                            + (f" (the rule letting {', '.join(dropped)} in from anywhere taken out)" if dropped else ""))
        return True

    def _restrict(self, whats: list[str]) -> None:
        """Take out the rules that let each of ``whats`` in from anywhere, before it is let in from some sources
        alone: a restriction the template's own "allow ssh" would undo is no restriction."""
        configs = [c for c in self.system().get("configurations") or [] if c is not None]
        kept = []
        for config in configs:
            cmd = str(config.get("cmd") or "") if isinstance(config, dict) else ""
            new = cmd
            for what in whats:
                new = without_general(new, what)
            if new == cmd:
                kept.append(config)
                continue
            self.changes.append(f"firewall: the rule letting {', '.join(whats)} in from anywhere taken out (`{cmd}`"
                                + (f" -> `{new}`)" if new else " dropped)"))
            if new:
                kept.append({**config, "cmd": new})
        store_configurations(self.system(), kept)

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
            if request.get("name") == REFERRED_USER and not self._resolve_referred(request, list_at(sc, "users")):
                continue
            name = request.get("name")
            existing = list_at(sc, "users")
            if request.get("action") == "remove":
                left = [u for u in existing if not (isinstance(u, dict) and u.get("name") == name)]
                if len(left) != len(existing):
                    if left:
                        sc["users"] = left
                    else:
                        sc.pop("users", None)
                    self.changes.append(f"removed user {name}")
                    self._drop_passwordless_sudo(str(name))
                    # what the template wrote for the user alone goes with it: its key file, its sshd Match block
                    self.configurations([{"cmd": "", "replaces": rf"/etc/ssh/authorized_keys/{re.escape(str(name))}(?![\w.-])",
                                          "label": f"ssh key for {name}", "remove": True, "implied": True},
                                         {**user_sshd_configuration("sshd settings", str(name)), "cmd": "",
                                          "label": f"sshd settings for {name}", "remove": True, "implied": True}])
                else:
                    self.changes.append(f"nothing to remove: no user {name}")
                continue
            entry = next((u for u in existing if isinstance(u, dict) and u.get("name") == name), None)
            if request.get("action") == "rename":
                if entry is None and request.get("or_host") and sc.get("hostname") == name:
                    sc["hostname"] = request["to"]
                    self.changes.append(f"hostname {name} -> {request['to']}")
                elif entry is None and request.get("or_host"):
                    self.changes.append(f"nothing to rename: no user or host name {name}")
                else:
                    self._rename_user(entry, str(name), str(request["to"]))
                continue
            if entry is None and request.get("existing_only"):
                self.changes.append(f"nothing to change: no user {name}")
                continue
            created = entry is None
            if entry is None:
                entry = {"name": name}
                existing.append(entry)
                sc["users"] = existing
            details = []
            if request.get("sudo") is not None:
                entry["sudo"] = bool(request["sudo"])
                details.append("sudo" if request["sudo"] else "no sudo")
                if not request["sudo"]:
                    self._drop_passwordless_sudo(str(name))
                    # the administrators' group gives sudo as well (sudoers' %sudo / %wheel): it goes too
                    admin = self._admin_groups()
                    kept = [g for g in entry.get("groups") or [] if g not in admin]
                    if kept != list(entry.get("groups") or []):
                        details.append("left group " + ", ".join(g for g in entry["groups"] if g in admin))
                        if kept:
                            entry["groups"] = kept
                        else:
                            entry.pop("groups")
            for gone in request.get("leave_groups") or []:
                if gone in (entry.get("groups") or []):
                    entry["groups"] = [g for g in entry["groups"] if g != gone]
                    if not entry["groups"]:
                        entry.pop("groups")
                    details.append(f"left group {gone}")
                else:
                    self.changes.append(f"nothing to change: user {name} is not in group {gone}")
            if request.get("groups"):
                said = [self._admin_group(str(g)) for g in request["groups"]]
                groups = list(dict.fromkeys([*(entry.get("groups") or []), *said]))
                entry["groups"] = [g for g in groups if not str(g).startswith("<")]
                details.append("groups " + ", ".join(entry["groups"]))
                details += [f"{g} is {a} on this distribution" for g, a in zip(request["groups"], said, strict=True)
                            if g != a]
            for key in ("shell", "home"):
                if request.get(key):
                    entry[key] = request[key]
                    details.append(f"{key} {request[key]}")
            if request.get("locked"):  # no password kept: useradd leaves the account's password locked
                taken = [k for k in ("password", "hash_algo") if entry.pop(k, None) is not None]
                details.append("password locked" + (" (its password taken out)" if taken else ": none is set"))
            if created or details:  # a user only named ("bob cannot log in with a password") is not changed
                verb = "added user" if created else "updated user"
                self.changes.append(f"{verb} {name}" + (f" ({'; '.join(details)})" if details else ""))
            else:
                self.changes.append(f"user {name} already present")
            if request.get("nopasswd"):
                self._passwordless_sudo(str(name))
            if created and request.get("key") and request.get("sudo") and not request.get("nopasswd"):
                self.changes.append(f"note: user {name} logs in with its ssh key and has no password, so sudo will ask "
                                    f"for one it does not have: ask for passwordless sudo for {name}, or set a hashed "
                                    "password (password + hash_algo)")
            # a service account logs in never, a locked one not with a password
            if created and not request.get("key") and not request.get("locked") and request.get("shell") != NOLOGIN_SHELL:
                self.changes.append(
                    f"note: user {name} has no password; set a hashed one (password + hash_algo) or log in with SSH keys"
                )

    def _resolve_referred(self, request: dict, existing: list) -> bool:
        """A user said by a pronoun alone ("make her an admin"): the template's only user, or the last one it lists
        (an edit appends the users it adds), said as such; False, and said, when the template has no user."""
        names = [str(u["name"]) for u in existing if isinstance(u, dict) and u.get("name") and u["name"] != "root"]
        if not names:
            self.changes.append("nothing to change: a pronoun names no user, and the template has none (name the user)")
            return False
        request["name"] = names[-1]
        if len(names) > 1:
            self.changes.append(f"note: read the pronoun as user {names[-1]}, the last one the template lists; name "
                                f"the user to change another ({', '.join(names[:-1])})")
        return True

    def _admin_group(self, group: str) -> str:
        """A family's administrators' group said by another family's name ("wheel" on Ubuntu, "sudo" on the Red
        Hat family): this family's, since the other does not exist here and the build's useradd would fail."""
        family = self.caps.families.get(self.family)
        return family.admin_group if family is not None and group in self._admin_groups() else group

    def _admin_groups(self) -> set[str]:
        """Every family's administrators' group (`sudo`, `wheel`): membership gives sudo (sudoers' %group)."""
        return {f.admin_group for f in self.caps.families.values()}

    def _rename_user(self, entry: dict | None, old: str, new: str) -> None:
        if entry is None:
            self.changes.append(f"nothing to rename: no user {old}")
            return
        if any(isinstance(u, dict) and u.get("name") == new for u in list_at(self.system(), "users")):
            self.problems.append(f"cannot rename user {old} to {new}: a user {new} exists already")
            return
        entry["name"] = new
        self.changes.append(f"renamed user {old} -> {new}")
        named = [c for c in list_at(self.system(), "configurations")
                 if isinstance(c, dict) and re.search(rf"(?<![\w-]){re.escape(old)}(?![\w-])", str(c.get("cmd") or ""))]
        if named:
            self.changes.append(f"note: {len(named)} configuration command(s) still name {old}; say what they should do")

    def ssh_keys(self, keys: list[dict]) -> None:
        """Each user's SSH public key, written by configuration commands (server/composer/parse_keys.py); a user the
        template lacks is created for its key (root is always there)."""
        for entry in keys:
            key = str(entry["key"])
            users = list_at(self.system(), "users")
            named = [str(u.get("name")) for u in users if isinstance(u, dict) and u.get("name")]
            if entry.get("user") is None and len(named) != 1:
                self.problems.append(f"ssh key {key.split()[1][:12]}…: say which user it is for (e.g. 'ssh key … for "
                                     f"{named[0] if named else 'admin'}'); the template has "
                                     f"{'users ' + ', '.join(named) if named else 'no users'}")
                continue
            name = str(entry.get("user") or named[0])
            if name != "root" and not any(isinstance(u, dict) and u.get("name") == name for u in users):
                self.system()["users"] = [*users, {"name": name}]
                self.changes.append(f"added user {name} (to log in with its ssh key; it has no password)")
            self.configurations(key_commands(name, key))
            if self.add_package("openssh-server"):
                self.changes.append("added package openssh-server (ssh keys need it)")

    def _passwordless_sudo(self, name: str) -> None:
        """sudo without a password for ``name``: a sudoers.d file written by configuration commands, as the
        upstream templates do (the schema's ``sudo: true`` grants sudo that asks for the user's password)."""
        self.configurations([{"cmd": cmd, "replaces": replaces, "label": f"passwordless sudo for {name}"}
                             for cmd, replaces in _sudoers_commands(name)])
        if self.add_package("sudo"):
            self.changes.append("added package sudo (passwordless sudo needs it)")

    def _drop_passwordless_sudo(self, name: str) -> None:
        """A user removed, or no longer allowed sudo: the sudoers.d file the template wrote for it goes too. Implied
        by the edit, not asked for: nothing is said when there is none."""
        self.configurations([{"cmd": "", "replaces": replaces, "label": f"passwordless sudo for {name}", "remove": True,
                              "implied": True} for _cmd, replaces in _sudoers_commands(name)])

    def bootloader(self, spec: RequestSpec) -> None:
        if not spec.bootloader and not spec.boot_type:
            return
        sc = self.system()
        boot = mapping_at(sc, "bootloader")
        old = dict(boot)
        provider = (
            spec.bootloader
            or boot.get("provider")
            or ("grub" if spec.boot_type == "legacy" else "systemd-boot")
        )
        boot_type = spec.boot_type or boot.get("bootType") or "efi"
        if provider == "systemd-boot" and boot_type == "legacy":
            if spec.bootloader:  # systemd-boot asked for by name, with legacy boot: one of them cannot be
                self.problems.append("systemd-boot only boots in EFI mode; use grub for legacy BIOS boot")
                return
            provider = "grub"  # legacy boot asked for: GRUB, the bootloader that can
            self.changes.append("note: grub in place of systemd-boot, which boots in EFI mode only")
        boot["bootType"], boot["provider"] = boot_type, provider
        sc["bootloader"] = boot
        if old != boot:
            self.changes.append(
                f"bootloader {old.get('provider', 'default')}/{old.get('bootType', 'default')} -> {provider}/{boot_type}"
            )
        if boot_type == "legacy" and old.get("bootType") != "legacy":
            self._bios_boot()
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


    def _bios_boot(self) -> None:
        """Legacy boot on x86_64: GRUB's BIOS core installed (the family's bios_boot_packages) and, on a GPT disk,
        a BIOS boot partition for it; the ESP and the EFI packages stay, so the disk boots either way."""
        if self.arch != "x86_64":
            return
        family = self.caps.families.get(self.family or "")
        added = [p for p in (family.bios_boot_packages if family else ()) if self.add_package(p)]
        if added:
            self.changes.append(f"added {', '.join(added)} (GRUB's BIOS core, for legacy boot)")
        disk = self.disk()
        if disk is not None and (done := Layout(self, disk).bios_boot_partition()):
            self.changes.append(done)


def _sudoers_commands(name: str) -> list[tuple[str, str]]:
    """The commands that give ``name`` sudo without a password, each with the pattern of the command it replaces."""
    path = f"/etc/sudoers.d/{name}"
    at = re.escape(path)
    return [(f"echo '{name} ALL=(ALL) NOPASSWD: ALL' > {path}", rf"^echo .*>\s*{at}$"),
            (f"chmod 440 {path}", rf"^chmod \d+ {at}$")]

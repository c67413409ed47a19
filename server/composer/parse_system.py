"""Reading the system facets of a request: kernel command line and version, hostname, image name, users,
bootloader and boot mode, immutability, secure boot."""

from __future__ import annotations

import functools
import re

from ..knowledge.request_words import load_request_words
from ..knowledge.system_settings import cpu_governors, load_settings
from .consoles import SERIAL_CONSOLE
from .parse_settings import is_setting_key
from .phrasing import NA, NB, STOPWORDS, ParserState, alternatives

# A switch named off after it: "secure boot turned off", "... disabled", "... is not needed".
_OFF_AFTER = re.compile(r"\s+(?:(?:is|be|being)\s+)?(?:turned\s+off|switched\s+off|disabled|off|not\s+(?:needed|required|wanted))\b",
                        re.I)
_CMDLINE_WORDS = (
    r"(?:kernel\s+)?(?:cmdline|cmd\s*line|command[\s-]*line|boot\s+(?:args|arguments|parameters|params|options)"
    r"|kernel\s+(?:args|arguments|parameters|params|options))"
)

_PLAIN_KERNEL = load_request_words().plain_kernel_words
# A bootloader word with its parts spelt "systemd-boot" or "systemd boot" -> the provider it names.
_BOOTLOADERS = {w: provider for provider, words in load_request_words().bootloaders.items() for w in words}
_BOOTLOADER_WORDS = alternatives(_BOOTLOADERS, between=r"[\s-]")




# A verb taking what follows off ("remove the kernel parameter quiet", "drop boot flags splash and quiet")
# ("remove docker and the kernel parameter quiet": a list the verb leads, with no verb of adding between)
_TAKEN_OFF_BEFORE = re.compile(r"\b(?:remove|drop|delete|strip|take\s+out|get\s+rid\s+of|without|no)\s+"
                               r"(?:(?:(?!\b(?:add|append|include|set|with|enable|install)\b)[^.;:])*?(?:,|\band\b)\s*)?"
                               r"(?:the\s+|a\s+)?$", re.I)
# The kernel consoles on the screen, which "a serial console only" takes off the command line
_SCREEN_CONSOLES = ("console=tty[0-9]*",)


# One-word names of settings whose parameter takes a number (system_settings.yaml "count" or "cpus": hugepages,
# isolcpus): said bare in a list of kernel parameters, they are the setting, not a parameter.
_COUNTED_SETTINGS = frozenset(w for setting in load_settings().values() if setting.value in ("count", "cpus")
                              for w in setting.words if " " not in w)


@functools.lru_cache(maxsize=1)
def _setting_phrases() -> re.Pattern[str]:
    """A setting said in words of its own after a list of parameters ("mitigations=off and transparent hugepages
    disabled"): its first word ends the list. Built on first use, not at import."""
    return re.compile(r"(?:" + alternatives(w for setting in load_settings().values() for w in setting.words
                                            if " " in w) + r")\b", re.I)


# Things an image runs that a request may name ("a container called telemetry"): the name is theirs, not the host's.
class SystemPhrases(ParserState):
    """The kernel, host, user and boot phrases of a request."""

    def _cmdline(self) -> None:
        for m in self._each(
            rf"\b(?:set|change|replace|make|update)\s+(?:the\s+)?{_CMDLINE_WORDS}\s*(?:to|=|:|as|with)\s*(.+?)\s*(?=;|$)"
        ):
            self.spec.kernel_cmdline = _unquote(m.group(1))
            self._mask(m.start(), m.end())
        for m in self._each(
            rf"\b(?:remove|drop|delete|strip)\s+((?:(?!,\s|\b(?:remove|drop|delete|strip)\b)[^;])+?)\s+from\s+(?:the\s+)?{_CMDLINE_WORDS}"
        ):
            self.spec.kernel_cmdline_remove += _params(m.group(1))
            self._mask(m.start(), m.end())
        for m in self._each(
            rf"\b(?:add|append|include|put|pass)\s+((?:(?!,\s|\b(?:add|append|include|put|pass)\b)[^;])+?)\s+(?:to|in|into|on)\s+(?:the\s+)?{_CMDLINE_WORDS}"
        ):
            self.spec.kernel_cmdline_append += _params(m.group(1))
            self._mask(m.start(), m.end())
        # "quiet and splash on the kernel command line": flags named before where they go, without a verb
        flag = r"[a-z][a-z0-9_.-]*(?:=(?:[^\s,;'\"]|,(?=[^\s,;]))+)?"
        for m in self._each(rf"(?<![\w=.-])({flag}(?:\s*(?:,|\band\b)\s*{flag})*)\s+(?:on|in|into|to)\s+(?:the\s+)?"
                            rf"{_CMDLINE_WORDS}"):
            # Only the flags by their shape that end the list are the command line's: "with curl and htop,
            # quiet on the cmdline" leaves curl and htop to the packages.
            items = list(re.finditer(rf"(?:^|\s*(?:,|\band\b)\s*)({flag})", m.group(1)))
            first = len(items)
            while first and ("=" in items[first - 1].group(1) or items[first - 1].group(1).lower() in _BARE_FLAGS):
                first -= 1
            if first < len(items):
                self.spec.kernel_cmdline_append += [i.group(1) for i in items[first:]]
                self._mask(m.start(1) + items[first].start(1), m.end())
        # "without splash", "no quiet boot", "with nomodeset": kernel flags that are no package, by name
        flags = "|".join(_BARE_FLAGS)
        for m in self._each(rf"\b(?:without|no|remove|drop|disable)\s+(?:the\s+)?({flags})\b"
                            r"(?:\s+(?:boot|flag|option|parameter|screen))?"):
            self.spec.kernel_cmdline_remove.append(m.group(1).lower())
            self._mask(m.start(), m.end())
        # "quiet boot", "a splash boot": the flag, named by what it does to the boot, needs no verb
        for m in self._each(rf"\b(?:(?:with|add|enable)\s+(?:the\s+|an?\s+)?({flags})\b(?:\s+(?:boot|flag|option|parameter))?"
                            rf"|(?:an?\s+)?({flags})\s+boot(?:ing)?\b)"):
            self.spec.kernel_cmdline_append.append((m.group(1) or m.group(2)).lower())
            self._mask(m.start(), m.end())
        # "the kernel command line should include console=ttyS0,115200 and quiet": flags after a verb of having.
        # A value keeps its own commas ("console=ttyS0,115200"); ", " separates flags.
        flag = r"[a-z][a-z0-9_.-]*(?:=(?:[^\s,;'\"]|,(?=[^\s,;]))+)?"
        flags = rf"({flag}(?:\s*(?:,|\band\b)\s*{flag})*)"
        for m in self._each(rf"{_CMDLINE_WORDS}\s+(?:(?:should|must|shall|to|will|needs?\s+to)\s+)?"
                            rf"(?:include|contain|have|get|carry|list)s?\s+(?:the\s+)?(?:flags?\s+|parameters?\s+)?{flags}"):
            params = [p for p in _params(m.group(1)) if p.lower() not in STOPWORDS]
            if params:
                self.spec.kernel_cmdline_append += params
                self._mask(m.start(), m.end())
        # "kernel parameters ip=dhcp and rd.debug": more flags joined to a key=value one, each a flag by its shape
        # (a value, a module's dotted parameter, an underscore, or a bare flag)
        shaped = rf"(?:[a-z][a-z0-9_-]*[._][a-z0-9_.-]*(?:=\S+)?|[a-z][a-z0-9_.-]*=\S+|(?:{'|'.join(_BARE_FLAGS)})\b)"
        more = rf"(?:(?:\s*(?:,|\band\b)\s*|\s+){shaped})*"
        # "kernel cmdline: add intel_iommu=on", "kernel params: remove iommu=pt": the verb after the colon is no flag
        verb = r"(?:(add|append|include|set|remove|drop|delete|strip)\s+)?"
        for m in self._each(
            rf"{_CMDLINE_WORDS}\s*(?:(?::|=|of)\s*{verb}(\"[^\"]*\"|'[^']*'|\S+{more})|(\"[^\"]*\"|'[^']*'|\S+=\S+{more}))"
        ):
            value = m.group(2) or m.group(3)
            removing = (m.group(1) or "").lower() in ("remove", "drop", "delete", "strip")
            (self.spec.kernel_cmdline_remove if removing else self.spec.kernel_cmdline_append).extend(_params(value))
            self._mask(m.start(), m.end())
        # "kernel option nomodeset", "boot flags quiet and splash", "kernel parameter quiet splash": flags named
        # after the word for them; a space separates flags as on a command line when each is one by its shape
        bare = "|".join(_BARE_FLAGS)
        spaced = rf"(?:\s*(?:,|\band\b)\s*|\s+(?=[a-z][a-z0-9_.-]*=|(?:{bare})\b)){flag}"
        for m in self._each(rf"\b(?:kernel|boot)\s+(?:option|parameter|param|flag|arg|argument)s?\s+({flag}(?:{spaced})*)"):
            # a setting that takes a number ("... and hugepages enabled") is the settings reader's, which asks for
            # it: the list ends before it, as a bare "hugepages" is no parameter the kernel reads
            # and so does a later bare word that names software or a capability ("audit=1 and selinux enforcing":
            # SELinux is the mac group's, and "selinux" alone no parameter)
            cut = next((w for i, w in enumerate(re.finditer(r"[a-z][a-z0-9_.-]*", m.group(1)))
                        if m.group(1)[w.end():w.end() + 1] != "=" and (
                            w.group(0) in _COUNTED_SETTINGS or (i > 0 and _setting_phrases().match(self.work, m.start(1) + w.start()))
                            or (i > 0 and not re.search(r"[._]", w.group(0))
                                                                and w.group(0) not in _BARE_FLAGS
                                                                and self._known_word(w.group(0).lower())))), None)
            listed = m.group(1)[:cut.start()] if cut else m.group(1)
            params = [p for p in _params(listed) if p.lower() not in STOPWORDS]
            off = _TAKEN_OFF_BEFORE.search(self.work[:m.start()]) if params else None
            if off is not None:  # "remove the kernel parameter loglevel": off the command line (it had been added)
                self.spec.kernel_cmdline_remove += params
                self._mask(m.start(), m.start(1) + len(listed))
            elif params:
                self.spec.kernel_cmdline_append += params
                self._mask(m.start(), m.start(1) + len(listed) if cut else m.end())
        # "serial console on ttyS0 at 115200": the kernel's console= parameter, said in words
        # ("serial console ttyAMA0": the word between may be left out)
        for m in self._each(r"(?:\b(?:(?:an?|the)\s+)?(?:serial\s+)?console\s+(?:(?:on|at|via|over|to|is|=|:)\s*)?(?:/dev/)?"
                            r"(?P<tty>tty[a-z]*\d+)|(?:/dev/)?\b(?P<before>tty[a-z]*\d+)\s+(?:serial\s+)?console)"
                            r"(?:\s*(?:at|@|,|with)\s*(?P<baud>\d{4,7})(?:\s*(?:baud|bps))?)?\b"):
            said = m.group("tty") or m.group("before")
            tty = said[:3].lower() + said[3:]
            self.spec.kernel_cmdline_append.append(f"console={tty}" + (f",{m.group('baud')}" if m.group("baud") else ""))
            self._mask(m.start(), m.end())
        # "a serial console", "only serial console": the machine's first serial port, which the template's
        # architecture names (consoles.py)
        # ("a serial console only", "only a serial console": the screen's consoles leave the command line)
        for m in self._each(r"\b(?P<only>only\s+(?:an?\s+|the\s+)?)?(?:(?:an?|the|with)\s+)?serial\s+console\b(?!\s*=)"
                            r"(?P<after>\s+only\b)?"):
            self.spec.kernel_cmdline_append.append(SERIAL_CONSOLE)
            if m.group("only") or m.group("after"):
                self.spec.kernel_cmdline_remove += [c for c in _SCREEN_CONSOLES if c not in self.spec.kernel_cmdline_remove]
            self._mask(m.start(), m.end())
        # Bare key=value tokens only ever mean kernel parameters in a template request, but a package with a
        # version ("nginx=1.24.0", apt's way of pinning): the package, and why no version is pinned; and the
        # locale's variables (LANG=de_DE.UTF-8), the locale setting's.
        for m in self._each(r"(?<![\w/.-])([a-z][a-z0-9_.-]*=[^\s,;'\"]+(?:,[^\s,;'\"]+)*)", re.I):
            key, value = m.group(1).split("=", 1)
            key = key.lower()
            if key in ("hostname", "name", "user", "size", "disk", "lang", "lc_all") or is_setting_key(key):
                continue
            if key in self.known and re.fullmatch(r"v?\d+(?:[.:~+-][\w.~+-]*)?", value):
                self.spec.add_packages.append(key)
                self.spec.notes.append(f"{key} {value}: version not pinned; a template names packages without "
                                       "versions (os-image-composer refuses version pins), so the release's own "
                                       "version is installed")
                said = re.match(r"\s+(?:pinned|pin)\b", self.work[m.end():], re.I)  # the note says why not
                self._mask(m.start(), m.end() + (said.end() if said else 0))
                continue
            self.spec.kernel_cmdline_append.append(m.group(1))
            self._mask(m.start(), m.end())
        # "a getty on the serial port", "a login prompt on serial": systemd starts a getty on the kernel's console, so
        # it is the serial console (the one said, or the first serial port)
        for m in self._each(r"\b(?:(?:an?|the)\s+)?(?:getty|login(?:\s+prompt)?|terminal|shell\s+access)\s+(?:on|over|via)\s+"
                            r"(?:the\s+)?serial(?:\s+(?:port|line|console|interface))?\b|\bserial\s+(?:getty|login)\b"):
            if not any(re.match(r"console=(?:ttyS|ttyAMA|@serial)", p) for p in self.spec.kernel_cmdline_append):
                self.spec.kernel_cmdline_append.append(SERIAL_CONSOLE)
            self._mask(m.start(), m.end())
        # "cpu governor set to performance", "the powersave governor": the governor the CPUs start with
        names = alternatives(cpu_governors())
        for m in self._each(rf"\b(?:cpu\s+)?(?:(?:frequency|freq|cpufreq|scaling)\s+)?governor\s+(?:(?:set|changed)\s+)?"
                            rf"(?:to\s+|=\s*|:\s*|is\s+|of\s+|should\s+be\s+)?({names})\b|\b({names})\s+(?:cpu\s+)?"
                            r"(?:(?:frequency|freq|cpufreq|scaling)\s+)?governor\b"):
            self.spec.kernel_cmdline_append.append(f"cpufreq.default_governor={(m.group(1) or m.group(2)).lower()}")
            self._mask(m.start(), m.end())
        if self.spec.kernel_cmdline_append:  # "nohz_full=1-3 on the kernel command line": where the flags go
            for m in self._each(rf"\b(?:on|in|into|to)\s+(?:the\s+)?{_CMDLINE_WORDS}\b"):
                self._mask(m.start(), m.end())
            # 'the kernel parameter "console=ttyS0"': the noun of a parameter read inside its quotes
            for m in self._each(r"\bkernel\s+(?:boot\s+)?(?:parameters?|params?|args?|arguments?|options?|flags?)\b(?=\s*[\"'`])"):
                self._mask(m.start(), m.end())

    def _urls(self) -> None:
        """"a kiosk showing https://example.com": the page a kiosk opens. Read before anything else reads the
        address's words ("https" is no typo of httpd)."""
        shown = (r"(?:(?:showing|shows?|displaying|displays?|opening|opens?|loading|loads?|pointing\s+(?:at|to)"
                 r"|pointed\s+(?:at|to)|with\s+the\s+(?:url|page|address))\s+)?")  # what a kiosk does with it
        # "a proxy at http://proxy.corp:3128": a proxy's address, which no template setting here writes
        # ("nginx as a reverse proxy for http://10.0.0.5:8080": the upstream, the web server's own configuration)
        for m in self._each(r"\b(?P<kind>(?:(?:http|https|web|apt|dnf|yum|package|corporate|company|outbound|forward"
                            r"|reverse)\s+)?proxy)(?:\s+server)?\s*(?:(?:at|is|of|on|via|for|to|=|:|set\s+to"
                            r"|pointing\s+(?:at|to))\s*)?(?P<url>https?://[^\s'\"`<>]+)"
                            r"(?:\s+for\s+(?:apt|dnf|yum|tdnf|the\s+package\s+manager))?"):
            why = ("a reverse proxy's upstream is the web server's own configuration, not the template's: add its "
                   "file with a configuration command" if m.group("kind").lower().startswith("reverse") else
                   "an HTTP proxy is not written by the composer: add a configuration command, e.g. "
                   "Acquire::http::Proxy in /etc/apt/apt.conf.d/ or proxy= in /etc/dnf/dnf.conf, and http_proxy in "
                   "/etc/environment")
            self.spec.unparsed.append(f"{' '.join(m.group(0).split())} ({why})")
            self._mask(m.start("url") if m.group("kind").lower().startswith("reverse") else m.start(), m.end())
        # "certbot for example.com", "a TLS certificate for shop.example.org": issued where the domain reaches
        for m in self._each(r"\b(?:certbot|let'?s\s*encrypt|tls|ssl|https|certificates?|certs?)\b[^.;,]{0,30}?"
                            r"\b(?:for\s+the\s+domain\s+|(?P<said>for\s+))(?P<domain>(?:[a-z0-9-]+\.)+[a-z]{2,})(?![\w.-])"):
            domain = m.group("domain")
            self.spec.notes.append(f"certificate for {domain} not applied: it is issued on the running machine, where "
                                   f"the domain reaches it (e.g. certbot --nginx -d {domain}), not in the image")
            self._mask(m.start("said") if m.group("said") else m.start("domain"), m.end())
        for m in self._each(rf"\b{shown}(?P<url>https?://[^\s'\"`<>]+)"):
            url = m.group("url").rstrip(".,;:)")
            self.spec.configurations.append({
                "cmd": f"mkdir -p /etc/kiosk && echo '{url}' > /etc/kiosk/url",
                "replaces": r"echo '[^']*' > /etc/kiosk/url", "label": f"kiosk page {url}", "setting": "kiosk page",
                "edits_only": "the image has no kiosk to show it (ask for a kiosk, on Debian)"})
            self._mask(m.start(), m.start("url") + len(url))

    def _boot_services(self) -> None:
        """"nginx started at boot", "enable chrony on boot", "node exporter enabled as a service": the software is
        read as asked for; starting it is reported, not written. A unit's name is not the package's on every
        family (openssh-server runs ssh.service or sshd.service), and a wrong one fails the build."""
        name = r"([a-z0-9][\w.+-]*)(?:\s+(?:service|daemon))?"
        boot = r"(?:at|on|during|after)\s+(?:boot(?:\s*time)?|start-?up)"
        for pattern, tail in (
                (rf"\b(?:enable|start|run|launch)\s+(?:the\s+)?{name}\s+({boot})\b", 2),
                # "docker should start on boot", "nginx must run at startup"
                (rf"\b{name}\s+((?:(?:should|must|will|shall|needs?\s+to|has\s+to)\s+(?:be\s+)?)?"
                 rf"(?:started|enabled|running|starting|starts|runs|launched|start|run|launch)\s+{boot})\b", 2),
                (rf"\b{name}\s+((?:enabled|running|started)\s+as\s+an?\s+(?:service|daemon))\b", 2)):
            for m in self._each(pattern):
                self.spec.notes.append(
                    f"starting {m.group(1)} at boot not applied: the composer writes no service units; add "
                    "`systemctl enable <unit>` as a configuration command (Debian and Ubuntu packages enable "
                    "their services when installed)")
                # "enabled" stays to end the item ("nginx enabled at boot and apache disabled" disables apache only)
                self.work = self.work[:m.start(tail)] + "enabled".ljust(m.end(tail) - m.start(tail)) + self.work[m.end(tail):]
                if m.group(0).lower().split()[0] in ("enable", "start", "run", "launch"):
                    self._mask(m.start(), m.start(1))

    def _name(self) -> None:
        patterns = [
            r"\b(?:rename|re-name)\s+(?:the\s+|this\s+|it\s+)?(?:image|template)?\s*(?:to|as)\s+[\"'`]?([A-Za-z0-9][\w.-]*)",
            r"\b(?:name|call)\s+(?:it|the\s+image|this\s+image|the\s+template|this\s+template)\s+(?:to\s+|as\s+)?[\"'`]?([A-Za-z0-9][\w.-]*)",
            r"\bimage\s+name\s*(?:to|=|:|as|of|is|should\s+be)?\s*[\"'`]?([A-Za-z0-9][\w.-]*)",
            # "the image should be called edge-gw": the image's name, said of the image (the machine's is the host's)
            r"\b(?:image|template)\s+(?:should|must|will|shall|is\s+to)\s+be\s+(?:called|named)\s+[\"'`]?([A-Za-z0-9][\w.-]*)",
        ]
        for pattern in patterns:
            for m in self._each(pattern):
                slug = re.sub(r"[^A-Za-z0-9_-]+", "-", m.group(1)).strip("-_")
                if slug:
                    self.spec.name = slug
                self._mask(m.start(), m.end())
        # The image's own version: named as the image's or the template's, set by a verb, or a three-part
        # version after "version" (a kernel's is read later, by _kernel_version, and a release's by its name)
        number = r"v?(\d+(?:\.\d+){0,3}(?:[-+][\w.]+)?)(?![\w.])"
        for m in self._each(rf"\b(?:image|template)(?:'s)?\s+version\s*(?:to|=|:|as|of|is|should\s+be)?\s*{number}"
                            rf"|\bversion\s+of\s+(?:the\s+|this\s+)?(?:image|template)\s*(?:to|=|:|as|is|should\s+be)?\s*{number}"
                            rf"|\b(?:set|change|bump|make)\s+(?:the\s+|its\s+)?version\s+(?:to\s+)?{number}"
                            rf"|(?<!kernel\s)\bversion\s*(?:to|=|:|is|should\s+be)?\s*v?(\d+\.\d+\.\d+(?:[-+][\w.]+)?)(?![\w.])"):
            self.spec.image_version = next(g for g in m.groups() if g)
            self._mask(m.start(), m.end())

    def _kernel_version(self) -> None:
        patterns = [
            # "pin the kernel to 6.8", "hold the kernel at 6.12": a verb of keeping is part of the wish
            r"(?:\b(?:pin|lock|hold|fix|freeze|keep|stick)\s+(?:(?:the|its)\s+)?)?"
            r"\bkernel\s*(?:version)?\s*(?:to|=|:|of|is|at|v|on|from|series)?\s*v?(\d+\.\d+(?:\.\d+)?)\b"
            # "the kernel from 6.6 pinned", "kernel 6.12 held": the verb of keeping may follow
            r"(?:\s+(?:pinned|locked|held|fixed|frozen|kept))?",
            r"\b(?:linux\s+)?v?(\d+\.\d+(?:\.\d+)?)\s+(?:kernel|lts\s+kernel)\b",
        ]
        for pattern in patterns:
            for m in self._each(pattern):
                version = m.group(1)
                major, minor = (int(x) for x in version.split(".")[:2])
                if 3 <= major <= 9 and minor <= 40:
                    self.spec.kernel_version = version
                    self._mask(m.start(), m.end())
        # "the lowlatency kernel": a flavour no group knows is reported, not read past as prose.
        known = {w for t in self.caps.triggers() for w in (t.lower(), *re.split(r"[\s_-]+", t.lower()))}
        for m in self._each(r"\b([a-z][a-z0-9-]{1,30})\s+kernel\b(?![\w-])(?!\s*(?:parameters?|params?|options?|args?|arguments?"
                            r"|cmdline|command[\s-]*line|modules?|headers?|version|packages?|flags?|settings?|images?))"):
            word = m.group(1).lower()
            if word in known or word in _PLAIN_KERNEL or all(part in known for part in word.split("-")):
                continue
            self.spec.unparsed.append(f"{word} kernel")
            self._mask(m.start(), m.end())

    def _bootloader(self) -> None:
        for m in self._each(
            rf"{NB}({_BOOTLOADER_WORDS}){NA}(?:\s+(?:bootloader|boot\s+loader))?"
        ):
            value = m.group(1).lower()
            if re.search(
                r"(?:remove|drop|without|no|not)\s+(?:the\s+)?$",
                self.work[max(0, m.start() - 20) : m.start()],
                re.I,
            ):
                continue
            self.spec.bootloader = _BOOTLOADERS[" ".join(re.split(r"[\s-]", value))]
            self._mask(m.start(), m.end())
        # The kind named last wins, unless it is what is being replaced ("legacy bios instead of uefi").
        kinds = [(m, "legacy") for m in self._each(
            r"\b(?:legacy|bios)(?:\s+(?:bios|boot|mode))+\b|\bboot\s+(?:in\s+)?(?:legacy|bios)\s+mode\b"
            r"|\b(?:legacy|csm)\s+boot\b|(?<![\w-])bios(?![\w-])(?!\s+(?:partition|grub))")]
        kinds += [(m, "efi") for m in self._each(r"\b(?:uefi|efi)(?:\s+(?:boot|mode))?\b(?![\w-])")]
        for m, kind in sorted(kinds, key=lambda k: k[0].start()):
            before = self.work[max(0, m.start() - 25):m.start()].lower()
            if not re.search(r"\b(?:instead\s+of|rather\s+than|not|no|without|from|replace|than)\s+(?:the\s+)?$", before):
                self.spec.boot_type = kind
            self._mask(m.start(), m.end())
        for m in self._each(r"\b(?:boot\s*loader|bootloader)\b"):
            self._mask(m.start(), m.end())
        self._uki()

    def _uki(self) -> None:
        """"a uki image", "no unified kernel image": the kernel built into one signed EFI binary (kernel.uki), which
        os-image-composer boots with systemd-boot (the upstream defaults pair them)."""
        for m in self._each(r"(?<![\w-])(?:ukis?|unified\s+kernel\s+images?)(?![\w-])"):
            before = self.work[max(0, m.start() - 25):m.start()].lower()
            wanted = not re.search(r"\b(?:no|not|without|disable|drop|remove|turn\s+off)\s+(?:the\s+|an?\s+)?$", before)
            self._mask(m.start(), m.end())
            if wanted and self.spec.bootloader not in (None, "systemd-boot"):
                self.spec.notes.append(f"{m.group(0)}: not set; os-image-composer boots a unified kernel image with "
                                       f"systemd-boot, and {self.spec.bootloader} was asked for")
                continue
            self.spec.uki = wanted
            if wanted:
                self.spec.bootloader = "systemd-boot"

    def _immutability(self) -> None:
        pattern = (
            # "an immutable root (filesystem)": the noun after the adjective is part of the phrase
            # "immutable audit rules", "immutable backups": a thing of its own made immutable, never the image
            r"(?<![\w-])(non-?\s*)?(immutab(?:le|ility)(?!\s+(?:audit\w*|rules?|config\w*|settings?|logs?|files?|flags?"
            r"|attributes?|bits?|backups?|snapshots?|tags?|objects?|data|buckets?|storage|infrastructure|variables?)\b)"
            r"(?:\s+(?:root\s*(?:fs|file\s*system|partition)?|rootfs|system|os))?"
            r"|read[\s-]only\s+(?:root\s*(?:fs|file\s*system)?|rootfs|system|os)"
            r"|(?:root\s*(?:fs|file\s*system|partition)?|rootfs|system|os|image"
            # "keep it writable", "leave it read-only": the image said by a pronoun, after a verb of keeping
            r"|(?<=keep\s)it|(?<=leave\s)it|(?<=make\s)it)\s+"
            r"(?:(?:should|must|will|shall|needs?\s+to|has\s+to)\s+)?(?:is\s+|be\s+|stay\s+|to\s+be\s+|as\s+)?"
            r"(?:read[\s-]only|writ(?:e)?able|read[\s-]write)"  # "make the root writable": the other way
            r"|dm-verity|verity|mutable|writ(?:e)?able\s+(?:root\s*(?:fs|file\s*system)?|rootfs|system))(?![\w-])"
        )
        for m in self._each(pattern):
            word = m.group(2).lower()
            before = self.work[max(0, m.start() - 30) : m.start()].lower()
            negated = bool(m.group(1)) or bool(
                re.search(
                    r"\b(?:disable|disabled|without|no|not|turn\s+off|switch\s+off|remove|drop|stop\s+being)\s+(?:the\s+|an?\s+)?$",
                    before,
                )
            )
            after = _OFF_AFTER.match(self.work, m.end())  # "turn immutability off", "immutability disabled"
            negated = negated or bool(after)
            writable = word.startswith("mutable") or re.search(r"writ(?:e)?able|read[\s-]write", word) is not None
            value = writable if negated else not writable
            self.spec.immutability = value
            start = m.start()
            verb = re.search(
                r"\b(?:enable|disable|turn(?:\s+(?:on|off))?|switch(?:\s+(?:on|off))?|make\s+(?:it|the\s+\w+)?|without|with"
                r"|no|not)\s+(?:the\s+|an?\s+)?$",
                before,
            )
            if verb:
                start = m.start() - (len(before) - verb.start())
            self._mask(start, after.end() if after else m.end())

    def _secure_boot(self) -> None:
        for m in self._each(r"(?<![\w-])secure[\s-]?boot(?![\w-])"):
            before = self.work[max(0, m.start() - 45) : m.start()].lower()
            negated = bool(
                re.search(
                    r"\b(?:disable|disabled|without|no|not|turn\s+off|switch\s+off|remove|drop)\s+(?:the\s+|uefi\s+)?$",
                    before,
                )
                or re.search(
                    r"\b(?:disable|turn\s+off|switch\s+off|without|remove|drop)\s+[\w\s-]{0,30}?\band\s+(?:the\s+|uefi\s+)?$",
                    before,
                )
            )
            after = _OFF_AFTER.match(self.work, m.end())  # "secure boot turned off"
            self.spec.secure_boot = not (negated or after)
            self._mask(m.start(), after.end() if after else m.end())

    def _logins(self) -> None:
        """"logs in automatically", "autologin": logging in is no request for system logs. Automatic login is
        the display manager's or getty's set-up, which the composer writes only as a group's (a kiosk's session):
        kept in the spec, and said by the edit (system_edits.autologin)."""
        for m in self._each(r"\bauto[\s-]?log(?:s|ged)?[\s-]?(?:in|on)\b|\bautomatic(?:ally)?\s+log(?:s|ged)?[\s-]?(?:in|on)\b"
                            r"|\blog(?:s|ged)?[\s-]?(?:in|on)\s+automatically\b|\blog(?:s|ged)?\s+(?:in|on)(?:to)?\b"):
            if "auto" in m.group(0).lower():  # understood; said with what writes it, in the request's own words
                self.spec.autologin = self.spec.autologin or " ".join(m.group(0).lower().split())
            self._mask(m.start(), m.end())

    def _group_modes(self) -> None:
        """"SELinux in permissive mode", "apparmor complain mode", "permissive": a group asked for in one of its
        modes (capabilities.yaml ``modes``), with the group's own words beside the mode's taken along."""
        for gid, group in self.caps.groups.items():
            if not group.modes:
                continue
            own = alternatives(group.triggers, between=r"[\s-]")
            for mode, way in group.modes.items():
                words = alternatives(way.words, between=r"[\s-]")
                for m in self._each(
                    rf"\b(?:(?:{own})\s+(?:(?:is\s+|runs?\s+)?(?:in|set\s+to|to|=|on|at)\s+)?)?(?:{words})"
                    rf"(?:\s+mode)?(?:\s+(?:for\s+)?(?:{own}))?\b"
                ):
                    self.spec.group_modes[gid] = mode
                    if gid not in self.spec.add_groups:
                        self.spec.add_groups.append(gid)
                    self._mask(m.start(), m.end())

    def _group_releases(self) -> None:
        """"ROS 2 Humble", "humble ros": a release of a group's software that it does not install
        (capabilities.yaml ``other_releases``). The group is asked for, and the answer says which release is not
        written and why; a release word away from the group's own words is left alone ("a humble server")."""
        for gid, group in self.caps.groups.items():
            if not group.other_releases:
                continue
            own = alternatives(group.triggers, between=r"[\s-]")
            named = alternatives(group.other_releases, between=r"[\s-]")
            for m in self._each(rf"\b(?:(?:{own})\s+(?P<after>{named})|(?P<before>{named})\s+(?:{own}))\b"):
                release = " ".join((m.group("after") or m.group("before")).lower().split())
                self.spec.notes.append(f"{release.title()}: not written, {group.other_releases[release]}; "
                                       f"the image gets {group.description}")
                if gid not in self.spec.add_groups:
                    self.spec.add_groups.append(gid)
                self._mask(m.start(), m.end())


# Kernel flags without a value people name by themselves (the kernel's admin-guide/kernel-parameters; splash is
# read by Plymouth from the command line)
_BARE_FLAGS = ("quiet", "splash", "nomodeset", "nosplash")


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'`":
        return value[1:-1].strip()
    return value.strip("\"'` ")


def _params(text: str) -> list[str]:
    """Kernel parameters from a phrase: quoted text, or words split on spaces, ', ' and ' and '."""
    text = _unquote(text)
    parts = re.split(r"\s*,\s+|\s+and\s+|\s+", text)
    return [
        p.strip("\"'`,")
        for p in parts
        if p.strip("\"'`,")
        and p.lower()
        not in ("the", "a", "an", "parameter", "parameters", "option", "options", "flag", "flags")
    ]

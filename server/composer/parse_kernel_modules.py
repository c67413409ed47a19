"""Reading the kernel modules a request keeps from loading ("disable nouveau", "blacklist the foo module") or
loads at boot ("load the vfio-pci module")."""

from __future__ import annotations

import re

from ..knowledge.system_settings import kernel_modules, module_key
from .parse_schedules import SchedulePhrases
from .phrasing import STOPWORDS, alternatives
from .switch_words import ARTICLE, OFF, OFF_AFTER

# Languages whose modules are packages of their own ("python3 with the requests module"), not the kernel's.
_LANGUAGES = re.compile(r"\b(?:python[23]?|pip3?|perl|cpan|ruby|gems?|node(?:js)?|npm|php|lua|rust|cargo|go(?:lang)?)\b", re.I)


class KernelModulePhrases(SchedulePhrases):
    """The kernel module phrases of a request."""

    def _kernel_modules(self) -> None:
        """Kernel modules kept from loading: "disable nouveau", "no pc speaker", "firewire blacklisted" by the
        words known for them (system_settings.yaml ``kernel_modules``), "blacklist the foo and bar modules" by
        any module name's shape. All of them go in one module_blacklist= parameter."""
        known = kernel_modules()
        name = alternatives(list(known), between=r"[\s_-]*")
        names = rf"(?:{name})(?:\s*(?:,|\band\b|\bor\b)\s*(?:the\s+)?(?:{name}))*"
        noun = r"(?:\s+(?:kernel\s+)?(?:modules?|drivers?))?"
        off = rf"(?:{OFF}|blacklist(?:ed|ing)?|block(?:list)?)"
        modules: list[str] = []
        for m in self._each(rf"\b{off}\s+{ARTICLE}(?:(?:kernel\s+)?(?:modules?|drivers?)\s+)?({names}){noun}\b"
                            rf"|\b({names}){noun}\s+(?:{OFF_AFTER}|blacklisted|blocklisted)\b"):
            listed = re.split(r"\s*(?:,|\band\b|\bor\b|\bthe\b)\s*", m.group(1) or m.group(2))
            modules += [known[module_key(w)] for w in listed if w.strip()]
            self._mask(m.start(), m.end())
        shape = r"[a-z][a-z0-9_-]*[a-z0-9]"
        for m in self._each(rf"\bblacklist(?:ed|ing)?\s+(?:the\s+)?(?:kernel\s+)?(?:modules?\s+)?"
                            rf"({shape}(?:\s*(?:,|\band\b)\s*{shape})*)(?:\s+(?:kernel\s+)?modules?)?\b"):
            shaped = [w for w in re.split(r"\s*(?:,|\band\b)\s*", m.group(1).lower()) if w and w not in STOPWORDS]
            modules += [n.replace("-", "_") for n in shaped]
            self._mask(m.start(), m.end())
        if modules:
            self.spec.kernel_cmdline_append.append(f"module_blacklist={','.join(dict.fromkeys(modules))}")

    def _modules_loaded(self) -> None:
        """Kernel modules loaded at boot: "load the vfio-pci module", "br_netfilter and overlay modules loaded",
        "with the vfio modules": a modules-load.d file each (systemd-modules-load reads them at boot). Read before
        the kernel command line, whose list would take "vfio" for a parameter. A name that is software or a word
        we know ("python modules", "nvidia modules") is left to the other readers."""
        shape = r"[a-z0-9][a-z0-9_-]*[a-z0-9]"
        names = rf"{shape}(?:\s*(?:,|\band\b)\s*{shape})*"
        noun = r"(?:kernel\s+)?modules?"
        boot = r"(?:\s+(?:at|on|during)\s+boot(?:\s*time)?)?"
        kept_out = rf"(?!\s+(?:{OFF_AFTER}|blacklisted|blocklisted)\b)"  # "the usb-storage module disabled"
        vendors = {w for stack in self.caps.vendor_stacks.values() for w in stack.words}
        for m in self._each(rf"\b(?:load|autoload|preload)\s+(?:the\s+)?{noun}\s+(?P<a>{names}){boot}"
                            rf"|\b(?:load|autoload|preload)\s+(?:the\s+)?(?P<b>{names})\s+{noun}{boot}"
                            rf"|\b(?P<c>{names})\s+{noun}\s+(?:loaded|autoloaded|preloaded)(?:\s+(?:at|on)\s+boot)?"
                            rf"|\b(?:with|and|plus)\s+(?:the\s+)?(?P<d>{names})\s+{noun}\b{kept_out}"):
            said = m.group("a") or m.group("b") or m.group("c") or m.group("d")
            sentence = re.split(r"[.;!?\n]", self.said[:m.start()])[-1] + m.group(0)
            if m.group("d") and "kernel" not in m.group(0).lower() and _LANGUAGES.search(sentence):
                continue  # "python3 and the requests and flask modules": a language's modules are its packages
            listed = [w for w in re.split(r"\s*(?:,|\band\b)\s*", said.lower()) if w and w not in STOPWORDS]
            if not listed or any(self._known_word(w) or w in vendors for w in listed):
                continue  # software ("python modules") or a vendor's drivers the archives lack ("nvidia modules")
            for module in listed:
                file = f"/etc/modules-load.d/{module}.conf"
                self._configure(f"kernel module {module} loaded",
                                {"cmd": f"mkdir -p /etc/modules-load.d && echo {module} > {file}",
                                 "replaces": re.escape(file), "setting": f"kernel module {module}"})
            self._mask(m.start(), m.end())

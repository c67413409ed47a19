"""Software a default-deny firewall keeps out: a web server installed beside a firewall that lets in SSH alone
serves no one, and nothing in the template says so (only software that listens on the network as installed:
system_settings.yaml ``listening_as_installed``). An edit that leaves such a pair behind says which services are
not let in and how to let them in; it opens nothing itself, since what reaches an image is the admin's choice."""

from __future__ import annotations

from typing import Any

from ..knowledge import nft_ruleset
from ..knowledge.system_settings import firewall_software, listening_as_installed
from .adherence import lets_in
from .coherence import written_commands
from .editing import template_packages
from .firewall_sources import UFW_ON

# What each firewall lets in before any rule of ours: ufw's and our ruleset's nothing (their SSH rule is written),
# firewalld's default zone (public) its services.
_OWN_DEFAULTS = {"firewalld": ("ssh", "dhcpv6-client", "cockpit")}


def _denying(packages: set[str], written: str) -> str | None:
    """The default-deny firewall the template turns on, or None."""
    if nft_ruleset.read(written) is not None:
        return "nftables"
    if "ufw" in packages and UFW_ON.search(written):
        return "ufw"
    if "firewalld" in packages:
        return "firewalld"  # enabled by the firewall group, or by the distribution's preset
    return None


def kept_out(data: Any) -> dict[str, list[str]]:
    """Each installed package's services (firewall_software) that its default-deny firewall does not let in."""
    packages = set(template_packages(data))
    written = written_commands(data.get("systemConfig") if isinstance(data, dict) else None)
    firewall = _denying(packages, written)
    if firewall is None:
        return {}
    served = firewall_software()
    out = {}
    for package in sorted(packages & listening_as_installed()):
        missing = [s for s in served.get(package, ()) if s not in _OWN_DEFAULTS.get(firewall, ())
                   and not lets_in(written, s)]
        if missing:
            out[package] = missing
    return out


def newly_kept_out(before: dict[str, list[str]], data: Any) -> list[str]:
    """The notes for what an edit left kept out that was not before it."""
    notes = []
    for package, services in kept_out(data).items():
        new = [s for s in services if s not in before.get(package, ())]
        if new:
            said = " and ".join(new)
            notes.append(f"note: the firewall does not let in {package}'s {', '.join(new)}; say 'open {said} in the "
                         f"firewall' to let {'them' if len(new) > 1 else 'it'} in")
    return notes

"""Static network addresses (system_settings.yaml ``static_network``): the configuration command that gives an
interface its address and gateway, for the network manager the image runs (a systemd-networkd .network file, or a
NetworkManager keyfile), and the reading back of such commands, which an edit keeps a part of ("change the
gateway to 10.0.0.254" keeps the address) and the adherence check compares."""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from .system_settings import section

NETWORKD, NETWORKMANAGER = "systemd-networkd", "NetworkManager"
_NETWORKD_FILE = "/etc/systemd/network/10-static-{name}.network"
_KEYFILE = "/etc/NetworkManager/system-connections/static-{name}.nmconnection"
# Both files by their names' pattern, ``name`` a regular expression
_FILES = r"/10-static-{name}\.network\b|/static-{name}\.nmconnection\b"
WIRED = "wired"  # the file name's part for an address on every wired interface (none named)


@dataclass(frozen=True)
class StaticAddress:
    interface: str  # "" when none is named: every wired interface
    address: str = ""  # "192.168.1.50/24"; "" when an edit said only the gateway
    gateway: str = ""

    @property
    def name(self) -> str:
        return self.interface or WIRED

    @property
    def whole(self) -> bool:
        """An address with its host; else an edit's part alone ("/16", a prefix length, or a gateway), which the
        address the image has takes."""
        return self.address[:1] not in ("", "/")

    def describe(self) -> str:
        if not self.whole:
            return f"prefix length {self.address}" if self.address else f"gateway {self.gateway}"
        where = f" on {self.interface}" if self.interface else " on every wired interface"
        return f"static address {self.address}{where}" + (f", gateway {self.gateway}" if self.gateway else "")


@functools.lru_cache(maxsize=1)
def facts() -> Mapping[str, Any]:
    return section("static_network")


def wired_match() -> str:
    return str(facts().get("wired") or "en* eth*")


def default_prefix() -> int:
    return int(facts().get("default_prefix") or 24)


def manager_for(family: str | None, packages: Iterable[str]) -> str:
    """The network manager an image of ``family`` with ``packages`` runs."""
    nm_packages = {str(p) for p in facts().get("networkmanager_packages") or ()}
    if family in (facts().get("networkmanager_families") or ()) or nm_packages & set(packages):
        return NETWORKMANAGER
    return NETWORKD


def packages_for(family: str | None, manager: str) -> list[str]:
    if manager != NETWORKD:
        return []
    return [str(p) for p in (facts().get("networkd_packages") or {}).get(family or "", ())]


def command(static: StaticAddress, manager: str) -> str:
    """The configuration command writing ``static`` for ``manager``, in printf's escapes as the template keeps it."""
    if manager == NETWORKMANAGER:
        path = _KEYFILE.format(name=static.name)
        address = static.address + (f",{static.gateway}" if static.gateway else "")
        text = (f"[connection]\\nid=static-{static.name}\\ntype=ethernet\\n"
                + (f"interface-name={static.interface}\\n" if static.interface else "")
                + "autoconnect=true\\nautoconnect-priority=100\\n\\n"
                f"[ipv4]\\nmethod=manual\\naddress1={address}\\n\\n[ipv6]\\nmethod=auto\\n")
        return (f"mkdir -p /etc/NetworkManager/system-connections && printf '{text}' > {path} && chmod 600 {path}")
    path = _NETWORKD_FILE.format(name=static.name)
    text = (f"[Match]\\nName={static.interface or wired_match()}\\n\\n[Network]\\nAddress={static.address}\\n"
            + (f"Gateway={static.gateway}\\n" if static.gateway else ""))
    return f"mkdir -p /etc/systemd/network && printf '{text}' > {path} && systemctl enable systemd-networkd"


def static_hint(static: StaticAddress, family: str | None) -> str:
    """The checklist line a model gets for ``static``: the command for the family's network manager, or, for a
    gateway or prefix length alone, the change to the static address the template has."""
    if not static.whole:
        return (f"in the systemConfig.configurations command matching /{replaces(static.interface or None)}/, set the "
                f"{static.describe()} and keep the rest")
    return f"add to systemConfig.configurations: - cmd: {command(static, manager_for(family, ()))!r}"


def replaces(interface: str | None) -> str:
    """The pattern of the commands that gave ``interface`` a static address (any interface's when None)."""
    return _FILES.format(name=r"[\w.:-]+" if interface is None else re.escape(interface or WIRED))


_FILE = re.compile(_FILES.format(name=r"([\w.:-]+)"))
# Each line follows printf's "\n" escape in the command
_ADDRESS = re.compile(r"\\n(?:Address|address1)=([\d.]+/\d+)(?:,([\d.]+))?")
_GATEWAY = re.compile(r"\\nGateway=([\d.]+)")


def read(cmd: str) -> StaticAddress | None:
    """The static address a configuration command written by :func:`command` gives, or None."""
    file = _FILE.search(cmd)
    address = _ADDRESS.search(cmd)
    if file is None or address is None:
        return None
    name = file.group(1) or file.group(2)
    gateway = address.group(2) or (g.group(1) if (g := _GATEWAY.search(cmd)) else "")
    return StaticAddress("" if name == WIRED else name, address.group(1), gateway)


def read_all(commands: Iterable[str]) -> list[StaticAddress]:
    return [s for c in commands if (s := read(c)) is not None]


def merged(said: StaticAddress, earlier: StaticAddress | None) -> StaticAddress:
    """What an edit said, with the parts it did not say kept from the address written before (an address said as
    its prefix length alone, "/16", keeps the earlier one's host)."""
    if earlier is None:
        return said
    address = said.address or earlier.address
    if address.startswith("/"):  # a prefix length alone ("change the netmask to 255.255.0.0")
        address = earlier.address.split("/")[0] + address
    return replace(said, address=address, gateway=said.gateway or earlier.gateway,
                   interface=said.interface or earlier.interface)


def problem(address: str, gateway: str = "") -> str | None:
    """Why ``address`` (with a prefix) and ``gateway`` cannot be written, or None when they can."""
    try:
        iface = ipaddress.IPv4Interface(address)
    except ValueError:
        return f"{address} is not an IPv4 address with a prefix length (e.g. 192.168.1.50/24)"
    if iface.network.prefixlen < 31 and iface.ip in (iface.network.network_address, iface.network.broadcast_address):
        return f"{address} is the {'network' if iface.ip == iface.network.network_address else 'broadcast'} " \
               f"address of {iface.network}, not a machine's"
    if gateway:
        try:
            gw = ipaddress.IPv4Address(gateway)
        except ValueError:
            return f"gateway {gateway} is not an IPv4 address"
        if gw not in iface.network:
            return f"gateway {gateway} is not in {iface.network}, the network of {address}"
    return None


__all__ = ["NETWORKD", "NETWORKMANAGER", "StaticAddress", "command", "default_prefix", "manager_for", "merged",
           "packages_for", "problem", "read", "read_all", "replaces", "static_hint", "wired_match"]

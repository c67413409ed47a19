"""Reading static network addresses: "a static ip of 192.168.1.50/24, gateway 192.168.1.1", "eth0 at 10.0.0.5/16",
"10.0.0.5/24 on eth1", "netmask 255.255.255.0", "change the gateway to 10.0.0.254", "use dhcp instead". Each address
is one configuration entry with its interface and gateway (``network``), written for the image's network manager
when the edit is applied (system_edits, server/knowledge/static_network.py). DNS servers are a setting of their own
(system_settings.yaml ``dns servers``), read after this."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import asdict

from ..knowledge.static_network import (
    NETWORKD,
    StaticAddress,
    command,
    default_prefix,
    problem,
    replaces,
    wired_match,
)
from ..knowledge.system_settings import load_settings
from .parse_schedules import UNDO
from .phrasing import ParserState

_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4 = rf"{_OCTET}(?:\.{_OCTET}){{3}}"
# An address, with its prefix length; never a host's port ("10.0.0.5:514") or a share ("10.0.0.5:/export").
_ADDRESS = rf"(?<![\w.:/-])({_IPV4})(?:/(\d{{1,2}}))?(?![\w:/-]|\.\d)"
# Linux's interface names: the kernel's (eth0, wlan0, usb0) and systemd's predictable ones (eno1, ens3, enp3s0, end0).
_INTERFACE = r"\b(eth\d+|wlan\d+|usb\d+|en(?:o\d+|s\d+|d\d+|p\d+s\d+(?:f\d+)?|x[\da-f]{12}))\b"
# Words between an address's role and the address: "a static ip OF", "the gateway IS", "eth0 GETS", "ip: ".
_LINKS = (r"(?:\s*[:=(]|\s+(?:of|is|to|at|as|set|should|be|will|must|gets?|has|have|with|uses?|using|on|a|an|the|its"
          r"|their|address|addr|ip|ipv4))*\s*$")
# A verb that gives an interface its address, said before the role's words ("configure enp0s3 with …", "assign …").
_VERB = re.compile(r"\b(?:configure|configured|assign|assigned|give|set|put)\s+(?:it\s+)?$", re.I)
_ADDRESS_ROLE = re.compile(rf"(?:\b(?:static|fixed|manual)\b|\bip(?:v4)?\b|\baddress\b|\baddr\b|{_INTERFACE}){_LINKS}",
                           re.I)
_GATEWAY_ROLE = re.compile(rf"\b(?:(?:default\s+)?(?:gateway|gw|router)|(?:default\s+)?route\s+via){_LINKS}", re.I)
_MASK_ROLE = re.compile(rf"\b(?:net\s*mask|subnet\s+mask|mask){_LINKS}", re.I)
# A prefix length said apart from the address: "with a /24 mask", "prefix length 16", "a /16 subnet".
_PREFIX = (r"(?:(?:\b(?:with\s+)?(?:an?\s+)?)?(?<![\w.])/(\d{1,2})\s+(?:net\s*mask|mask|prefix|subnet|network)\b"
           r"|\bprefix(?:\s+length)?(?:\s+of|\s+is|\s*[:=])?\s+/?(\d{1,2})\b)")
# An IPv6 address with its prefix length ("2001:db8::5/64"), which is not written.
_IPV6 = r"(?<![\w:])(?:[\da-f]{0,4}:){2,7}[\da-f]{0,4}/\d{1,3}(?![\w:])"
# Words that make an address someone else's: a name server, a time or log server, a source let in ("from").
_OTHERS = re.compile(r"\b(?:dns|name\s*servers?|resolvers?|ntp|time\s+servers?|syslog|logs?|relay|proxy|from|mqtt"
                     r"|broker)\b", re.I)
_AS_ADDRESS = re.compile(r"^\s+as\s+(?:(?:its|the|a|an|our|my)\s+)?(?:(?:static|fixed)\s+)?(?:ip|ipv4|address)\b", re.I)
_ON_INTERFACE = re.compile(rf"^\s+(?:on|for|to)\s+(?:(?:the\s+)?interface\s+)?{_INTERFACE}", re.I)
_STATIC_WORDS = (r"\b(?:static|fixed)\s+(?:ipv4\s+)?(?:ip\s+address(?:es|ing)?|ips?|address(?:es|ing)?|networking"
                 r"|(?:network\s+|ip\s+)?(?:config(?:uration)?|setup|settings?))\b")
# The noun of an interface said before its name: "a second interface eth1", "the nic enp3s0".
_INTERFACE_NOUN = re.compile(r"(?:\b(?:a|an|the)\s+)?(?:\b(?:second|new|another|other|first|extra|wired)\s+)?"
                             r"(?:\bnetwork\s+)?\b(?:interface|nic|port|link)\s+$", re.I)
_DHCP = (r"(?:\b(?:use|uses|using|via|over|by|from|with|through|on|to|back\s+to)\s+dhcp(?:v4)?\b"
         r"|\bdhcp(?:v4)?\s+(?:instead|client|addressing|for\s+(?:the\s+|its\s+)?(?:address|ip)|on\s+" + _INTERFACE + r")"
         # "eth0 dhcp and eth1 static …", "enp3s0 gets dhcp": an interface said with DHCP
         r"|" + _INTERFACE.replace("(", "(?:", 1) + r"\s+(?:(?:on|via|uses?|using|with|gets?|by|is|does|over)\s+)?dhcp(?:v4)?\b)"
         r"(?!\s*(?:server|service|daemon|range|pool|relay))")
_EXAMPLE = "e.g. 'static ip 192.168.1.50/24 on eth0, gateway 192.168.1.1'"
# An address said: its IPv4 address, its prefix length if said, where it was said (start, end), its interface.
_Said = tuple[str, str | None, int, int, str]


class NetworkPhrases(ParserState):
    """Static addresses, gateways and a return to DHCP, written as configuration commands."""

    def _network(self) -> None:
        self._interfaces_not_written()
        self._back_to_dhcp()
        for m in self._each(rf"(?:\b(?:static\s+)?ipv6\s+(?:address\s+)?(?:of\s+|is\s+|[:=]\s*)?)?{_IPV6}"
                            rf"(?:\s+(?:on|for)\s+{_INTERFACE})?"):
            self.spec.unparsed.append(f"{' '.join(m.group(0).split())} (a static IPv6 address is not written by the "
                                      f"composer, only IPv4 ones: {_EXAMPLE})")
            self._mask(m.start(), m.end())
        addresses: list[_Said] = []
        gateways: list[str] = []
        masks: list[tuple[int, int]] = []  # (where a netmask was said, its prefix length)
        last_end = 0
        for m in self._each(_PREFIX):
            masks.append((m.start(), int(m.group(1) or m.group(2))))
            self._mask(m.start(), m.end())
        self._hosts_of_network(addresses, gateways)
        for m in self._each(_ADDRESS):
            clauses = re.split(r"[,;.!?]\s", self.work[last_end:m.start()])
            # "a static ip, 192.168.1.40, and ssh": an address right after a comma is the clause's before it
            clause = clauses[-2] if len(clauses) > 1 and not clauses[-1].strip() else clauses[-1]
            after = self.work[m.end():]
            # "a static ip of 10.0.7.7/24 via 10.0.7.1": via right after an address names its gateway, as ip-route says
            if _GATEWAY_ROLE.search(clause) or (addresses and re.fullmatch(r"\s*(?:and\s+)?via\s*", clause, re.I)):
                gateways.append(m.group(1))
            elif _MASK_ROLE.search(clause):
                masks.append((m.start(), self._prefix_of_mask(m.group(1))))
            elif _OTHERS.search(clause) and not _ON_INTERFACE.match(after):
                continue
            elif (_ADDRESS_ROLE.search(clause) or _AS_ADDRESS.match(after) or _ON_INTERFACE.match(after)
                  or _a_host(m)):  # "a nas on 192.168.1.5/24": a machine's address with its network's length
                on = _ON_INTERFACE.match(after)
                named = re.findall(_INTERFACE, clause, re.I)
                addresses.append((m.group(1), m.group(2), m.start(), m.end(),
                                  (on.group(1) if on else named[-1] if named else "").lower()))
                if on:
                    self._mask(m.end(), m.end() + on.end())
            else:
                continue
            self._mask(m.start(), m.end())
            self._mask(*self._role_span(m.start()))
            # "eth1 static 10.0.0.5/24": the interface named before the address is the address's, read
            name = addresses[-1][4] if addresses and addresses[-1][2] == m.start() else ""
            if name and (at := self.work.lower().rfind(name, last_end, m.start())) >= 0:
                self._mask(at, at + len(name))
            last_end = m.end()
        written = self._addresses(addresses, masks, gateways)
        if re.search(_INTERFACE, self.said, re.I):  # "two network interfaces, eth0 … and eth1 …": each said by name
            for m in self._each(r"\b(?:two|three|four|2|3|4|several|multiple)\s+(?:network\s+)?(?:interfaces|nics)\b"):
                self._mask(m.start(), m.end())
        for m in self._each(_STATIC_WORDS):
            if not written:
                self.spec.unparsed.append(f"{' '.join(m.group(0).split())}: no address said ({_EXAMPLE})")
            self._mask(m.start(), m.end())

    def _interfaces_not_written(self) -> None:
        """"br0 bridge on eth0", "mtu 9000 on eth0", "jumbo frames": an interface's make and settings, which the
        composer does not write, reported whole with system_settings.yaml's reason (the interface names had been
        read as packages)."""
        on = rf"(?:\s+(?:on|over|for|to|with|using|across)\s+(?:the\s+)?(?:interface\s+|nic\s+)?{_INTERFACE})?"
        bridge = r"(?:br|virbr|bridge)\d+"
        said = {"network interfaces": rf"(?:\b{bridge}\s+)?(?:\bnetwork\s+)?\bbridge[ds]?\s+"
                                      rf"(?:on|over|with|to|using|of|for|across)\s+(?:the\s+)?(?:interface\s+|nic\s+)?"
                                      rf"{_INTERFACE}|\b{bridge}\s+(?:network\s+)?bridge\b{on}"
                                      rf"|(?:\bnetwork\s+)?\bbridge\s+{bridge}\b{on}",
                "interface mtu": rf"\b(?:mtu|jumbo\s+frames?)(?:\s+(?:of|to|at|is)|\s*[=:])?(?:\s*\d{{3,5}})?(?:\s+bytes)?{on}"}
        for setting, pattern in said.items():
            for m in self._each(pattern):
                self.spec.unparsed.append(f"{' '.join(m.group(0).split())} ({load_settings()[setting].reason})")
                self._mask(m.start(), m.end())
        # "wg0 10.8.0.1/24": a virtual interface's address is what makes the interface's (WireGuard's wg0.conf, a
        # bridge's .netdev), never the wired interfaces' it had been written for
        for m in self._each(rf"\b((?:wg|tun|tap|br|virbr|bond|vlan|docker|veth)\d+)\s+(?:(?:at|with|gets?|has|is|on|=|:)\s+)?"
                            rf"(?:(?:the\s+)?(?:address|ip)\s+)?{_IPV4}(?:/\d{{1,2}})?(?![\w.:/-])"):
            self.spec.unparsed.append(f"{' '.join(m.group(0).split())} (an address of {m.group(1)} is not written: the "
                                      f"software that makes {m.group(1)} gives it, in its own configuration, e.g. "
                                      f"/etc/wireguard/{m.group(1)}.conf for WireGuard; add a configuration command)")
            self._mask(m.start(), m.end())

    def _hosts_of_network(self, addresses: list[_Said], gateways: list[str]) -> None:
        """"put it on the 10.20.30.0/24 network as .15 with the router at .1": a host said by its last part, in
        the network said (its prefix length the network's)."""
        network = re.search(rf"\b(?:on|in|into|joins?|to)\s+(?:the\s+)?({_IPV4})/(\d{{1,2}})\s+"
                            r"(?:network|subnet|lan|segment|range)\b", self.work, re.I)
        if network is None:
            return
        try:
            net = ipaddress.IPv4Network(f"{network.group(1)}/{network.group(2)}")
        except ValueError:
            return  # no network's own address ("10.20.30.5/24"): the addresses' reading has it
        self._mask(network.start(), network.end())
        for m in self._each(r"(?<![\w.])\.(\d{1,3})(?![\w.]|\.\d)"):
            host = net.network_address + int(m.group(1))
            if host not in net or host in (net.network_address, net.broadcast_address):
                continue
            clause = re.split(r"[,;.!?]\s", self.work[:m.start()])[-1]
            if _GATEWAY_ROLE.search(clause):
                gateways.append(str(host))
            else:
                named = re.findall(_INTERFACE, clause, re.I)
                addresses.append((str(host), str(net.prefixlen), m.start(), m.end(), named[-1].lower() if named else ""))
            self._mask(m.start(), m.end())
            self._mask(*self._role_span(m.start()))

    def _role_span(self, start: int) -> tuple[int, int]:
        """The role words said before an address ("a static ip of", "gateway"), back to the clause's start."""
        before = self.work[:start]
        clause_start = max(before.rfind(c) for c in ",;.!?") + 1
        for role in (_GATEWAY_ROLE, _MASK_ROLE, _ADDRESS_ROLE):
            found = role.search(before, clause_start)
            if found:
                noun = _INTERFACE_NOUN.search(before, clause_start, found.start())
                first = noun.start() if noun else found.start()
                verb = _VERB.search(before, clause_start, first)
                return (verb.start() if verb else first), start
        verb = _VERB.search(before, clause_start)  # "assign 10.0.0.5/24 to eth0"
        return (verb.start() if verb else start), start

    def _prefix_of_mask(self, mask: str) -> int:
        try:
            return ipaddress.IPv4Network(f"0.0.0.0/{mask}").prefixlen
        except ValueError:
            self.spec.unparsed.append(f"netmask {mask} (not a netmask: its ones must come first, e.g. 255.255.255.0)")
            return 0

    def _addresses(self, said: list[_Said], masks: list[tuple[int, int]], gateways: list[str]) -> bool:
        """The entries of the addresses said, each with the netmask said after it and the gateway of its network;
        True when one was written."""
        statics: list[StaticAddress] = []
        said = sorted(said, key=lambda a: a[2])
        for i, (ip, prefix, _start, end, interface) in enumerate(said):
            if prefix is None:
                upto = said[i + 1][2] if i + 1 < len(said) else len(self.work)
                mask = next((p for at, p in masks if end <= at < upto), None)
                if mask == 0:
                    continue  # a netmask said that is none: reported
                prefix = str(mask or default_prefix())
                if mask is None:
                    self.spec.notes.append(f"static address {ip}: no prefix length or netmask said, /{prefix} "
                                           f"taken (say e.g. {ip}/16 for another)")
            statics.append(StaticAddress(interface, f"{ip}/{prefix}"))
        valid = [p for _at, p in masks if p]
        if not statics and valid:  # "change the netmask to 255.255.0.0": the address the image has takes it
            statics.append(StaticAddress("", f"/{valid[0]}"))
        for gateway in gateways:
            within = [s for s in statics if s.whole
                      and ipaddress.IPv4Address(gateway) in ipaddress.IPv4Interface(s.address).network]
            if not statics:
                statics.append(StaticAddress("", "", gateway))  # an edit's: the address the image has keeps it
            elif within or len(statics) == 1:  # a prefix alone and a gateway: both the image's address's
                target = (within or statics)[0]
                statics[statics.index(target)] = StaticAddress(target.interface, target.address, gateway)
            else:
                self.spec.unparsed.append(f"gateway {gateway}: in none of the networks of "
                                          f"{', '.join(s.address for s in statics)}")
        written = False
        for static in statics:
            why = problem(static.address, static.gateway) if static.whole else None
            if why:
                self.spec.unparsed.append(f"static address: {why}")
                continue
            self.spec.configurations.append(_entry(static))
            written = written or static.whole
            if static.whole and not static.interface:
                self.spec.notes.append(f"static address {static.address}: on every wired interface ({wired_match()}), "
                                       "as none was named; name one on a machine with several (e.g. 'on eth0')")
        return written

    def _back_to_dhcp(self) -> None:
        """"use dhcp instead", "switch eth0 back to dhcp", "remove the static ip": the static address taken out, the
        template's own DHCP left."""
        for m in self._each(rf"(?:\b{UNDO}\s+(?:the\s+|its\s+|that\s+)?{_STATIC_WORDS}"
                            rf"(?:\s+(?:on|for|of)\s+(?:the\s+)?{_INTERFACE})?|{_DHCP})"):
            on = re.match(rf"\s+(?:on|for)\s+(?:the\s+)?(?:interface\s+)?{_INTERFACE}", self.work[m.end():], re.I)
            clause = re.split(r"[,;.!?]\s", self.work[:m.end()])[-1]
            named = [on.group(1)] if on else re.findall(_INTERFACE, clause, re.I)  # "from dhcp on eth0": that one
            interface = named[-1].lower() if named else None
            where = f" on {interface}" if interface else ""
            self.spec.configurations.append({"remove": True, "cmd": "", "replaces": replaces(interface),
                                             "label": f"static address{where} (DHCP, the template's own, stays)"})
            self._mask(m.start(), m.end() + (on.end() if on else 0))


def _a_host(m: re.Match[str]) -> bool:
    """An address said with its prefix length that is a machine's (not its network's or broadcast address)."""
    return m.group(2) is not None and problem(f"{m.group(1)}/{m.group(2)}") is None


def _entry(static: StaticAddress) -> dict:
    """The configuration entry of ``static``: written for systemd-networkd until the edit knows the image's network
    manager (system_edits); a gateway alone takes the address the image has."""
    entry: dict = {"network": asdict(static), "cmd": command(static, NETWORKD) if static.whole else "",
                   "setting": "static address" + (f" on {static.interface}" if static.interface else ""),
                   "label": static.describe(), "replaces": replaces(static.interface), "packages": []}
    if not static.whole:
        entry["edits_only"] = f"the image has no static address to give it: say the address too ({_EXAMPLE})"
    return entry


__all__ = ["NetworkPhrases"]

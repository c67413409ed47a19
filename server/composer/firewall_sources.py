"""A service or port let in from some sources only ("ssh only from 10.0.0.0/8"): an opened entry "ssh from
10.0.0.0/8" (RequestSpec.open_ports), written as firewalld's rich rule or ufw's rule from that source, with the
rules that let it in from anywhere taken out, or the restriction would not hold."""

from __future__ import annotations

import re

from ..knowledge.system_settings import FROM, firewall_services, port_of

# A command turning ufw on at boot (ufw.conf's ENABLED=yes, or `ufw enable`)
UFW_ON = re.compile(r"ENABLED=yes|\bufw\s+(?:--force\s+)?enable\b")
# An IPv4 address or network as a source is said: "10.0.0.0/8", "192.168.1.10".
SOURCE = r"\d{1,3}(?:\.\d{1,3}){3}(?:/\d{1,2})?"


def split_source(opened: str) -> tuple[str, str | None]:
    """("ssh", "10.0.0.0/8") for "ssh from 10.0.0.0/8"; (opened, None) for an entry open to everyone."""
    what, _, source = opened.partition(FROM)
    return what, source or None


def service_names(what: str) -> list[str]:
    """The service names a rule may say for ``what`` (a service's name or a port): those on its port."""
    port = firewall_services().get(what, what)
    return [n for n, p in firewall_services().items() if p == port]


def firewalld_options(what: str, source: str) -> list[str]:
    """firewall-offline-cmd options that let ``what`` in from ``source`` alone. The default zone's own services
    (public: ssh, among others) are taken out, or everyone would still get in."""
    if what in firewall_services():
        return [f"--add-rich-rule='rule family=\"ipv4\" source address=\"{source}\" service name=\"{what}\" accept'",
                f"--remove-service={what}"]
    number, proto = port_of(what)
    return [f"--add-rich-rule='rule family=\"ipv4\" source address=\"{source}\" port port=\"{number}\" "
            f"protocol=\"{proto}\" accept'"]


def ufw_rule(what: str, source: str) -> str:
    number, proto = port_of(what)
    return f"ufw allow from {source} to any port {number.replace('-', ':')} proto {proto}"


def without_general(cmd: str, what: str) -> str:
    """``cmd`` with the rules that let ``what`` in from anywhere taken out: firewalld's --add-service/--add-port
    options, ufw's "allow" rules by port, service or OpenSSH's profile. A command left with nothing to do is
    dropped ("")."""
    number, proto = port_of(what)
    names = "|".join(re.escape(n) for n in service_names(what))
    port = re.escape(number)
    cmd = re.sub(rf"\s+--add-(?:service=(?:{names})|port={port}/{proto})(?![\w/.-])" if names else
                 rf"\s+--add-port={port}/{proto}(?![\w/.-])", "", cmd)
    profiles = f"{names}|OpenSSH" if "ssh" in service_names(what) else names
    allow = rf"ufw\s+allow\s+(?:(?:in\s+)?(?:{port}(?:/{proto})?|{profiles})|'(?:{profiles})')(?=\s*(?:&&|;|$))" \
        if profiles else rf"ufw\s+allow\s+{port}(?:/{proto})?(?=\s*(?:&&|;|$))"
    cmd = re.sub(rf"{allow}\s*(?:&&|;)\s*|\s*(?:&&|;)\s*{allow}|^\s*{allow}\s*$", "", cmd)
    # a firewall-offline-cmd left with no option does nothing
    cmd = re.sub(r"\s*&&\s*firewall-offline-cmd(?:\s+--zone=\S+)?(?=\s*(?:&&|;|$))|^\s*firewall-offline-cmd(?:\s+--zone=\S+)?\s*(?:&&|;)\s*"
                 r"|^\s*firewall-offline-cmd(?:\s+--zone=\S+)?\s*$", "", cmd)
    return cmd.strip()


def lets_in_from(written: str, what: str, source: str) -> bool:
    """Whether commands ``written`` let ``what`` in from ``source``, by firewalld's rich rule or ufw's rule."""
    number, proto = port_of(what)
    src = re.escape(source)
    names = "|".join(re.escape(n) for n in service_names(what))
    target = rf'(?:service\s+name="(?:{names})"|port\s+port="{re.escape(number)}"\s+protocol="{proto}")' if names \
        else rf'port\s+port="{re.escape(number)}"\s+protocol="{proto}"'
    rich = rf'source\s+address="{src}"\s+{target}\s+accept'
    ufw = rf"\bufw\s+allow\s+from\s+{src}\s+to\s+any\s+port\s+{re.escape(number.replace('-', ':'))}(?:\s+proto\s+{proto})?\b"
    return re.search(rich, written) is not None or re.search(ufw, written) is not None


def sourced_let_in(written: str) -> list[str]:
    """Every service or port ``written`` lets in from a source alone, as "ssh from 10.0.0.0/8"."""
    found = []
    for m in re.finditer(rf'source\s+address="({SOURCE})"\s+(?:service\s+name="([\w-]+)"|port\s+port="([\d-]+)"\s+'
                         rf'protocol="(\w+)")|\bufw\s+allow\s+from\s+({SOURCE})\s+to\s+any\s+port\s+([\d:]+)'
                         r"(?:\s+proto\s+(\w+))?", written):
        if m.group(1):
            what = m.group(2) or f"{m.group(3)}/{m.group(4)}"
            found.append(f"{what}{FROM}{m.group(1)}")
        else:
            found.append(f"{m.group(6).replace(':', '-')}/{m.group(7) or 'tcp'}{FROM}{m.group(5)}")
    return found

"""The nftables ruleset the composer writes for a firewall on the families whose firewall is nftables (Debian,
eLxr, Azure Linux), and its reading back. Their packages install nftables with a ruleset that lets everything in,
so a firewall asked for there is this file: incoming traffic dropped but for replies, loopback, ICMP, DHCPv6's
answers and what it names (SSH from the start, as ufw's and firewalld's defaults let it in, so a firewall does
not lock the admin out). Forwarded traffic is left alone: containers' and VMs' networks route through it.

Entries are the request reading's ("443/tcp", "8000-8010/tcp", "https", "ssh from 10.0.0.0/8"); each is one
rule line, which is what an edit adds to and the adherence check reads."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from .system_settings import FROM, port_of

SSH = "22/tcp"
_HEAD = ("#!/usr/sbin/nft -f\\nflush ruleset\\n\\ntable inet filter {\\n\\tchain input {\\n"
         "\\t\\ttype filter hook input priority filter; policy drop;\\n"
         "\\t\\tct state established,related accept\\n\\t\\tiif lo accept\\n"
         "\\t\\tmeta l4proto { icmp, ipv6-icmp } accept\\n\\t\\tmeta nfproto ipv6 udp dport 546 accept\\n")
_TAIL = "\\t}\\n}\\n"
_COMMAND = re.compile(r"printf '#!/usr/sbin/nft -f\\nflush ruleset\\n.*?' > (\S+) && systemctl enable nftables\.service")
_RULE = re.compile(r"\\t\\t(?:ip saddr (\S+) )?(tcp|udp) dport (\d{1,5}(?:-\d{1,5})?) accept\\n")


def rule_said(entry: str) -> str:
    """The rule letting ``entry`` in, as nft reads it: "ip saddr 10.0.0.0/8 tcp dport 22 accept"."""
    what, _, source = entry.partition(FROM)
    number, proto = port_of(what)
    return f"{'ip saddr ' + source + ' ' if source else ''}{proto} dport {number} accept"


def rule(entry: str) -> str:
    """The rule line letting ``entry`` in, as the command keeps it (printf's escapes)."""
    return f"\\t\\t{rule_said(entry)}\\n"


def command(path: str, entries: Iterable[str]) -> str:
    """The configuration command writing the ruleset to ``path`` (the family's nftables.service reads it) and
    enabling the service. Entries on one port and protocol are one rule."""
    rules = list(dict.fromkeys(rule(e) for e in entries))
    return f"printf '{_HEAD}{''.join(rules)}{_TAIL}' > {path} && systemctl enable nftables.service"


def read(cmd: str) -> tuple[str, list[str]] | None:
    """The path and entries of a ruleset command written by :func:`command` ("22/tcp", "443/tcp from 10.0.0.0/8"),
    or None for any other command."""
    m = _COMMAND.search(cmd)
    if m is None:
        return None
    return m.group(1), [f"{port}/{proto}" + (FROM + source if source else "")
                        for source, proto, port in _RULE.findall(m.group(0))]


def with_entries(cmd: str, added: list[str]) -> tuple[str, list[str]]:
    """A ruleset command ``cmd`` with ``added`` let in, and the entries it no longer lets in: an entry let in from
    some addresses alone takes out the rule letting its port in from anywhere (a restriction the general rule would
    undo is none)."""
    found = read(cmd)
    assert found is not None, "with_entries takes a command written by command()"
    path, entries = found
    restricted = {port_of(e.partition(FROM)[0]) for e in added if FROM in e}
    kept = [e for e in entries if FROM in e or port_of(e) not in restricted]
    return command(path, [*kept, *added]), [e for e in entries if e not in kept]


def lets_in(written: str, what: str, source: str | None = None) -> bool:
    """Whether a ruleset in commands ``written`` lets ``what`` (a service's name or a port entry) in, from anywhere
    or, with ``source``, from those addresses."""
    found = read(written)
    if found is None:
        return False
    port = port_of(what)
    return any(port_of(entry) == port and (origin or None) == source
               for entry, _, origin in (e.partition(FROM) for e in found[1]))


def same_file(config: Mapping[str, Any], other: Any) -> bool:
    """Whether two configuration entries are rulesets written to one path: a firewall added again keeps the one
    an edit let more in through."""
    mine = read(str(config.get("cmd") or ""))
    theirs = read(str(other.get("cmd") or "")) if isinstance(other, Mapping) else None
    return mine is not None and theirs is not None and mine[0] == theirs[0]


def describe(cmd: str) -> str | None:
    """What a ruleset command does, in words, or None for any other command."""
    found = read(cmd)
    if found is None:
        return None
    path, entries = found
    return (f"an nftables ruleset in {path} dropping incoming traffic but replies, loopback, ICMP and "
            f"{', '.join(entries) or 'nothing else'}, nftables.service enabled")

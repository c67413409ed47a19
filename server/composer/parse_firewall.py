"""Reading what a request lets through the image's firewall: ports and services by name, written for the
template's firewall when it is applied (system_edits.open_ports)."""

from __future__ import annotations

import re

from ..knowledge.system_settings import firewall_services, firewall_software, firewall_traffic, module_key
from .firewall_sources import FROM, SOURCE
from .phrasing import FUNCTION_WORDS, STOPWORDS, ParserState, alternatives

_FIREWALL_RULES = ("(firewall rules are not written by the composer: add a configuration command, e.g. "
                   "firewall-offline-cmd, ufw or an nftables rule)")


# A firewall said by name, which a rule's words leave for the group reading: the firewall is wanted too
_FIREWALL_WORD = re.compile(r"\b(?:firewall|firewalld|ufw)\b", re.I)


def _port_item(item: str) -> bool:
    """A port as a firewall rule names it: "22", "port 8080", "443/tcp", "tcp port 53"."""
    return bool(re.fullmatch(r"(?:(?:tcp|udp)\s+)?(?:ports?\s+)?\d{1,5}(?:/(?:tcp|udp))?", item.strip(), re.I))


def _served_items(ports: bool = False) -> str:
    """A list of software, services (firewall_software) and, with ``ports``, ports ("22/tcp", "port 5432"), as the
    pattern's first group: what a firewall is said to let in."""
    served = alternatives(firewall_software(), between=r"[\s_-]+")
    port = r"|(?:(?:tcp|udp)\s+)?port\s+\d{1,5}(?:/(?:tcp|udp))?|\d{1,5}/(?:tcp|udp)" if ports else ""
    item = rf"(?:the\s+)?(?:{served}{port})(?![\w/-])"
    return rf"({item}(?:\s*(?:,|\band\b|&)\s*{item})*)"


# A protocol said right after a port, as its own ("port 1194 udp", "53 over udp"), unless ports of its own follow
_OWN_PROTOCOL = r"\s+(?:(?:over|via)\s+)?(?:tcp|udp)\b(?!\s+ports?\b)"


class FirewallPhrases(ParserState):
    """The firewall phrases of a request."""

    def _ports(self) -> None:
        """Ports and services the firewall lets in ("open port 443", "allow 80 and 443/tcp", "open https in the
        firewall", "firewalld allowing ssh and https"): RequestSpec.open_ports, written for the template's firewall
        when it is applied (system_edits.open_ports). "only" is said not enforced; forwarding is not written."""
        self._blocked_but()
        self._from_sources()
        self._reachable()
        self._port_by_pronoun()
        self._software_by_pronoun()
        services = alternatives(firewall_services())
        named = rf"(?:{services})(?:\s*(?:,|/|\band\b)\s*(?:{services}))*"  # "http/https" is a list
        # the services that name a protocol, not software a request may ask for (postgresql, redis, cockpit)
        protocols = alternatives([s for s in firewall_services() if s != "ssh" and not self.caps.group_for_word(s)
                                  and s not in self.known])
        # each port of a list may say its own protocol ("tcp port 53, udp port 53"), and services may follow
        # each port may say its protocol after it as well ("ports 53 udp and 22")
        ports = (rf"(?:tcp\s+|udp\s+)?ports?\s*[\d/]+(?:{_OWN_PROTOCOL})?(?:\s*(?:,|and|to|-)\s*"
                 rf"(?:(?:tcp|udp)\s+)?(?:ports?\s+)?[\d/]+(?:{_OWN_PROTOCOL})?)*"
                 rf"(?:\s*(?:tcp|udp))?(?:\s*(?:,|\band\b)\s*{named}(?![\w-]))?")
        # "firewalld allowing only ssh and https": what a firewall lets through are services, not packages to
        # install (https is no typo of httpd here); the firewall itself is still asked for. Read before the verbs
        # alone, which would take the list's first items and leave the rest ("allowing 53/udp and 22").
        # The list ends at the first item that is neither a port nor a service ("ufw allowing only 22 and 443,
        # automatic updates": the updates are another wish); a rule that starts with such an item is reported.
        port = rf"(?:(?:tcp|udp)\s+)?(?:ports?\s+)?\d{{1,5}}(?:/(?:tcp|udp)|{_OWN_PROTOCOL})?"
        let_in = (r"\b(?:firewall|firewalld|ufw|nftables|iptables)\b(?:\s+[a-z]+){0,3}?\s+(?P<rule>"
                  r"(?:allowing|allows?|permitting|permits?|opening|open\s+(?:for|to)|opens?|letting\s+(?:through|in)"
                  r"|lets?\s+(?:through|in)"
                  r"|that\s+allows?)"
                  r"\s+(?:only\s+)?(?:inbound\s+|incoming\s+)?")
        # a service, or a kind of traffic ("web traffic"); "/" may join services. Software named after a firewall's
        # list is a wish of its own ("firewall allowing port 22 and nginx installed")
        traffic = alternatives(firewall_traffic(), between=r"[\s_-]+")
        known = (rf"(?:{port}|(?:{traffic})(?:\s+(?:traffic|access|connections))?)(?![\w-])"
                 rf"(?!/(?!(?:{services})(?![\w-])))")
        # "a firewall with http and https": with, only before services and ports ("a firewall with fail2ban" is none)
        with_known = let_in.replace(r"|that\s+allows?)", r"|that\s+allows?|with)")
        for m in self._each(rf"{with_known}{known}(?:\s*(?:,|/|\band\b|\bor\b)\s*{known})*)"):
            self._open(" ".join(m.group("rule").split()))
            self._mask(m.start("rule"), m.end("rule"))
        item = r"(?:(?:tcp\s+|udp\s+)?ports?\s+)?[a-z0-9][\w/-]*"
        for m in self._each(rf"{let_in}{item}(?:\s*(?:,|\band\b|\bor\b)\s*{item})*)"):
            rule = " ".join(m.group("rule").split())
            listed = re.sub(r"^\S+(?:\s+(?:through|in|allows?))?\s+(?:only\s+)?(?:inbound\s+|incoming\s+)?", "", rule)
            items = re.split(r"\s*(?:,|\band\b|\bor\b|(?<=[a-z])/(?=[a-z])(?!(?:tcp|udp)\b))\s*", listed)
            if all(i.lower() in firewall_services() or _port_item(i) for i in items if i):
                self._open(rule)
            else:
                self.spec.unparsed.append(f"{rule} {_FIREWALL_RULES}")
            self._mask(m.start("rule"), m.end("rule"))
        through = r"(?:\s+(?:in|on|through|thru)\s+(?:the\s+)?(?:firewall|firewalld|ufw))?"
        verb = r"\b(?:open|opening|allow|allowing|allows|expose|forward|unblock)\s+(?:only\s+)?(?:inbound\s+|incoming\s+)?"
        # numbers alone are ports with a protocol or the firewall said: "allow 80 and 443/tcp"
        bare = r"\d{1,5}(?:-\d{1,5})?(?:/(?:tcp|udp))?(?:\s*(?:,|\band\b)\s*\d{1,5}(?:-\d{1,5})?(?:/(?:tcp|udp))?)*"
        firewall = r"\s+(?:in|on|through|thru)\s+(?:the\s+)?(?:firewall|firewalld|ufw)\b"
        for m in self._each(rf"{verb}(?:the\s+)?{ports}{through}"
                            rf"|{verb}(?:{bare}{firewall}|{bare}/(?:tcp|udp)\b{through}|(?:the\s+)?(?:tcp|udp)\s+{bare}\b{through})"
                            # opened, numbers are ports whatever follows but a noun ("open 80 and 443", "expose 8080")
                            rf"|\b(?:open|opening|expose|exposing|unblock)\s+(?:up\s+)?(?:only\s+)?{bare}(?![\w/.-])"
                            rf"(?=\s*(?:$|[,.;!?)]|\b(?:and|in|on|to|for|from|through|thru|too|also|please|as\s+well|instead)\b)){through}"
                            # a service by name only with the firewall said: "allow ssh" alone may mean the server
                            rf"|{verb}(?:the\s+)?{named}(?:\s+(?:traffic|access|ports?))?{firewall}"
                            # opened, a service is the firewall's whatever follows ("open http and https"); "open ssh"
                            # alone may be OpenSSH misspelt
                            rf"|\b(?:open|opening|expose|unblock)\s+(?:only\s+)?(?:inbound\s+|incoming\s+)?(?:the\s+)?"
                            rf"(?!ssh\b){named}(?:\s+(?:traffic|access|ports?))?\b"
                            # allowed, a protocol no software is named for ("allow http", "permit https and dns")
                            rf"|\b(?:allow|allowing|permit|permitting)\s+(?:only\s+)?(?:inbound\s+|incoming\s+)?(?:the\s+)?"
                            rf"(?:{protocols})(?:\s*(?:,|/|\band\b)\s*(?:{protocols}))*(?:\s+(?:traffic|access|ports?))?\b"
                            rf"|\b(?:only\s+)?{ports}\s+(?:open|opened|allowed|exposed|reachable|forwarded)\b{through}"
                            # numbers with "open" or "allowed" after them are ports: "80 and 443 open", "only udp
                            # 51820 allowed in", "51820/udp allowed"
                            rf"|\b(?:only\s+)?(?:(?:tcp|udp)\s+)?{bare}\s+(?:open|opened|allowed|exposed)\b"
                            rf"(?:\s+in\b(?!\s+the\b))?{through}"
                            # "let https in", "let ports 80 and 443 through", "let in ssh": a firewall's verb
                            rf"|\blet\s+(?:the\s+)?(?:{ports}|{named}(?:\s+traffic)?)\s+(?:in|through|thru)\b{through}"
                            rf"|\blet\s+(?:in|through)\s+(?:the\s+)?(?:{ports}|{named}(?:\s+traffic)?)(?![\w-]){through}"):
            if re.match(r"forward", m.group(0).strip(), re.I):
                self.spec.unparsed.append(f"{m.group(0).strip()} (port forwarding is not written by the composer: "
                                          "add a configuration command with the firewall's forwarding rule)")
            else:
                self._open(m.group(0))
            self._mask_but_firewall(m)  # "open port 8080 in the firewall" on an image with none wants one
        # "open 8080 instead of 80": the port left is one to close, which the composer does not write
        for m in self._each(r"\binstead\s+of\s+(?:the\s+)?(?:(?:tcp|udp)\s+)?(?:ports?\s+)?\d{1,5}(?:/(?:tcp|udp))?\b"):
            if self.spec.open_ports:
                self.spec.unparsed.append(f"{' '.join(m.group(0).split())} (a port is not closed by the composer: the "
                                          "firewall lets in what the template names; take its rule out by hand)")
                self._mask(m.start(), m.end())
        # "a java service on port 8080": where software listens is its own configuration's, not the template's
        for m in self._each(r"\b(?:(?:on|at)\s+(?:tcp\s+|udp\s+)?port|(?:listening|listens|serving|bound)\s+(?:on|to)\s+"
                            r"(?:tcp\s+|udp\s+)?(?:port\s+)?)\s*(\d{1,5})\b(?![.:/\d])"):
            # "the app runs on port 3000, open it": the port is let in as said
            opened = re.match(r"\s*,?\s*(?:and\s+|so\s+)?(?:please\s+)?(?:open|expose|unblock)\s+(?:it|that|this)(?:\s+up)?\b",
                              self.work[m.end():], re.I)
            if opened:
                self._open(m.group(1))
                self._mask(m.end(), m.end() + opened.end())
            let_in = ("the firewall lets it in" if f"{m.group(1)}/tcp" in self.spec.open_ports else
                      f"to let it in, say 'open port {m.group(1)} in the firewall' (written for firewalld and ufw)")
            self.spec.notes.append(f"port {m.group(1)} not applied: the port a service listens on is set in its own "
                                   f"configuration; {let_in}")
            self._mask(m.start(), m.end())

    def _blocked_but(self) -> None:
        """"the firewall should block everything except ssh and 8443", "deny all incoming but 22 and 443": what is
        excepted from blocking is let in, only it (ssh had been removed, read as "except ssh")."""
        item = r"(?:(?:tcp\s+|udp\s+)?ports?\s+)?[a-z0-9][\w/-]*"
        for m in self._each(r"\b(?:block|blocks|blocking|blocked|deny|denies|denying|denied|drop|drops|dropping|reject|rejects"
                            r"|rejecting|refuse|refuses|refusing)\s+(?:all|everything|anything)(?:\s+(?:incoming|inbound))?"
                            r"(?:\s+(?:traffic|ports|connections))?\s+(?:except|but|other\s+than|apart\s+from|save)\s+"
                            rf"(?:for\s+)?(?P<items>{item}(?:\s*(?:,|\band\b|\bor\b)\s*{item})*)"):
            items = [i for i in re.split(r"\s*(?:,|\band\b|\bor\b)\s*", m.group("items")) if i]
            if not all(i.lower() in firewall_services() or _port_item(i) for i in items):
                continue
            self._open("only " + m.group("items"))
            self._mask(m.start(), m.end())

    def _open(self, said: str) -> None:
        """The ports and services ``said`` lets in, into RequestSpec.open_ports ("443/tcp", "8000-8010/tcp",
        "https"). A protocol said before ports holds for them until another is said ("udp ports 53 and 123, tcp
        port 22"); one written after a port ("53/udp") is that port's; TCP otherwise."""
        proto = "tcp"
        for m in re.finditer(r"\b(tcp|udp)\b|(?<![\w.])(\d{1,5})(?:\s*(?:-|to)\s*(\d{1,5}))?"
                             rf"(?:/(tcp|udp)|({_OWN_PROTOCOL}))?(?![\w.])", said, re.I):
            if m.group(1):
                proto = m.group(1).lower()
                continue
            low, high, own = m.group(2), m.group(3), m.group(4) or (m.group(5).split()[-1] if m.group(5) else None)
            if 0 < int(low) < 65536 and (not high or int(low) < int(high) < 65536):
                self.spec.open_ports.append(f"{low}{'-' + high if high else ''}/{(own or proto).lower()}")
        # services by name, and the services of a kind of traffic said ("web traffic")
        traffic = alternatives(firewall_traffic(), between=r"[\s_-]+")
        for m in re.finditer(rf"(?<![\w-])(?:{traffic})(?![\w-])", said, re.I):
            self.spec.open_ports += [p for p in firewall_traffic()[module_key(m.group(0))] if p not in self.spec.open_ports]
        if re.search(r"\bonly\b", said, re.I):
            # "only udp 51820 allowed in": the rest is blocked by a firewall, wanted when none is named
            if "firewall" in self.caps.groups and not re.search(r"\b(?:firewall|firewalld|ufw|nftables|iptables)\b",
                                                                 self.said, re.I):
                self.spec.add_groups.append("firewall")
            self.spec.notes.append("only the ports named: not enforced, the firewall's own default stays as it is "
                                   "(what its default zone or policy already lets in)")

    def _reachable(self) -> None:
        """Software or services said reachable through the firewall ("cockpit reachable through the firewall",
        "nginx and grafana accessible from outside", "allow mosquitto through the firewall"): what each serves is
        let in (system_settings.yaml firewall_software). The software's word stays, to be installed; a word of
        no software known is reported with how to say its port."""
        items = _served_items()
        firewall = r"(?:through|thru|in|on|past|via|by)\s+(?:the\s+)?(?:firewall|firewalld|ufw)\b"
        outside = r"(?:from|to)\s+(?:the\s+)?(?:outside(?:\s+world)?|internet|network|lan|anywhere|other\s+(?:machines|hosts))"
        where = rf"(?:{firewall}|{outside})"
        state = (r"(?:(?:is|are|be|being|should\s+be|must\s+be|needs?\s+to\s+be|to\s+be)\s+)?"
                 r"(?:reachable|accessible|open|opened|allowed|exposed|available|let\s+(?:in|through))")
        verb = r"\b(?:allow|allowing|permit|permitting|expose|exposing|open|opening|unblock)\s+"
        noun = r"(?:\s+(?:server|service|daemon|instance|broker|ui|web\s+ui|dashboard|console))?"  # "a samba server"
        for pattern in (rf"(?<![\w/.-]){items}{noun}\s+{state}\s+{where}", rf"{verb}{items}{noun}\s+{where}"):
            for m in self._each(pattern):
                self._serve(m)
        # "grafana reachable on 3000", "the web ui accessible on port 8443": the port said is what is let in
        for m in self._each(rf"(?<![\w/.-])([a-z][\w.+-]*){noun}\s+{state}\s+(?:on|at|via|through)\s+(?:(?:tcp|udp)\s+)?"
                            r"(?:port\s+)?(\d{1,5})(?:/(tcp|udp))?\b"):
            if m.group(1).lower() in STOPWORDS | FUNCTION_WORDS:
                continue
            self.spec.open_ports.append(f"{m.group(2)}/{(m.group(3) or 'tcp').lower()}")
            self._mask(m.end(1), m.end())
        for m in self._each(rf"(?<![\w/.'’-])([a-z][\w.+-]*)\s+{state}\s+{where}"):
            if m.group(1).lower() in STOPWORDS | FUNCTION_WORDS | {"what", "which", "everything", "anything", "nothing"}:
                continue  # "what's open in the firewall?", "is it reachable from outside": no software named
            self.spec.unparsed.append(f"{m.group(0).strip()} (the port {m.group(1)} serves is not known here: say "
                                      f"'open port N in the firewall')")
            self._mask(m.start(1) + len(m.group(1)), m.end())

    def _serve(self, m: re.Match[str]) -> None:
        """Let in what the software or services of ``m``'s first group serve; mask all but the software's words."""
        start, end = m.span(1)
        self.spec.open_ports += [p for p in self._served(m.group(1), start) if p not in self.spec.open_ports]
        self._mask(m.start(), start)
        # the firewall named is wanted too ("allow mosquitto through the firewall" on an image with none)
        named = _FIREWALL_WORD.search(m.group(0)[end - m.start():])
        self._mask(end, end + named.start() if named else m.end())

    def _from_sources(self) -> None:
        """A service, software or port let in from some addresses alone ("ssh only allowed from 10.0.0.0/8",
        "allow ssh from 10.0.0.0/8 only", "restrict postgres to 192.168.1.0/24"): an opened entry "ssh from
        10.0.0.0/8" for each (firewall_sources.py), and the firewall it needs. The software's word stays, to be
        installed."""
        items = _served_items(ports=True)
        sources = rf"(?:the\s+)?({SOURCE}(?:\s*(?:,|\band\b|\bor\b)\s*{SOURCE})*)(?:\s+(?:network|subnet|range|lan|block))?"
        only = r"(?:\s+only)?"
        state = (r"(?:\s+(?:access|traffic|connections?|logins?))?\s+(?:(?:is|are|be|should\s+be|must\s+be)\s+)?(?:only\s+)?"
                 r"(?:(?:allowed|reachable|accessible|open|opened|permitted|let\s+in)\s+)?(?:only\s+)?")
        verb = (r"\b(?:allow|allowing|permit|permitting|open|opening|restrict|restricting|limit|limiting)\s+(?:only\s+)?")
        # "open 3306 for 10.0.0.0/24 only": "for" before an address is a source too, and numbers alone after the
        # verb are ports (the source says it is a firewall's rule)
        numbers = r"(\d{1,5}(?:/(?:tcp|udp))?(?:\s*(?:,|\band\b|&)\s*\d{1,5}(?:/(?:tcp|udp))?)*)"
        for pattern in (rf"{verb}(?:{items}|{numbers})(?:\s+(?:access|traffic|connections?|logins?))?\s+(?:only\s+)?"
                        rf"(?:from|to|for)\s+{sources}{only}",
                        rf"(?<![\w/.-]){items},?{state}from\s+{sources}{only}"):  # "postgres, only reachable from"
            for m in self._each(pattern):
                said = 1 if m.group(1) is not None else 2  # the items, or the numbers
                whats = self._served(m.group(said), m.start(said))
                for source in re.findall(SOURCE, m.group(m.lastindex or 0)):
                    self.spec.open_ports += [f"{what}{FROM}{source}" for what in whats]
                if whats:
                    self.spec.add_groups.append("firewall")  # a restriction needs something to enforce it
                start, end = m.span(said)
                self._mask(m.start(), start)
                self._mask(end, m.end())

    def _served(self, said: str, start: int) -> list[str]:
        """What the software, services and ports ``said`` (at ``start``) are let in as: services by name, ports as
        "22/tcp". The words of ports and protocols (no software) are masked; the software's stay."""
        out: list[str] = []
        for word in re.finditer(r"[^,&]+?(?=\s*(?:,|\band\b|&|$))", said):
            name = re.sub(r"^(?:and\s+)?(?:the\s+)?", "", word.group(0).strip(), flags=re.I)
            number = re.search(r"(\d{1,5})(?:/(tcp|udp))?", name)
            if number and _port_item(name):
                proto = number.group(2) or (re.match(r"(tcp|udp)", name, re.I) or [None, "tcp"])[1]
                out.append(f"{number.group(1)}/{str(proto).lower()}")
                self._mask(start + word.start(), start + word.end())
                continue
            key = module_key(name)
            out += [p for p in firewall_software().get(key, ()) if p not in out]
            if key in firewall_services() and name.lower() not in self.known and not self.caps.group_for_word(name.lower()):
                self._mask(start + word.start(), start + word.end())
        return out

    def _port_by_pronoun(self) -> None:
        """"nginx serving on port 8080 and the firewall open for it", "ssh on port 2222 and the firewall allowing
        it": the port a pronoun stands for is the last one said before it; with none, it is reported."""
        it = r"(?:it|that(?:\s+port)?|this(?:\s+port)?|them)\b"
        wall = r"\b(?:firewall|firewalld|ufw)"
        for m in self._each(rf"{wall}\s+(?:(?:is|should\s+be|must\s+be|that\s+is)\s+)?(?:open(?:ed)?\s+(?:for|to)|allowing|allows?"
                            rf"|letting\s+(?:in|through)|lets?\s+(?:in|through)|that\s+(?:allows|lets\s+in))\s+{it}"
                            rf"|\b(?:open|allow|expose|unblock)\s+{it}\s+(?:in|on|through)\s+(?:the\s+)?(?:firewall|firewalld|ufw)\b"):
            said = re.findall(r"\bport\s+(\d{1,5})\b|(?<![\d.]):(\d{1,5})\b", self.said[:m.start()], re.I)
            if said:
                port = next(p for p in said[-1] if p)
                self.spec.open_ports.append(f"{port}/tcp")
            else:
                self.spec.unparsed.append(f"{' '.join(m.group(0).split())} (no port said before it: say 'open port N "
                                          "in the firewall')")
            self._mask_but_firewall(m)

    def _software_by_pronoun(self) -> None:
        """"add memcached and open its port", "install nginx and let it through the firewall", "make them reachable":
        the software a pronoun stands for is the last said before it, let in by what it serves (firewall_software);
        with none said, or one whose port is not known here, it is reported."""
        wall = r"(?:the\s+)?(?:firewall|firewalld|ufw)\b"
        for m in self._each(rf"\b(?:open|expose|unblock|allow)\s+(?:its|their)\s+ports?\b(?:\s+(?:in|on|through)\s+{wall})?"
                            rf"|\blet\s+(?:it|them)\s+(?:in\s+)?(?:through|thru|past)\s+{wall}"
                            rf"|\bmake\s+(?:it|them)\s+(?:reachable|accessible)(?:\s+(?:from\s+(?:the\s+)?outside|through\s+{wall}))?"
                            rf"|\bopen\s+(?:up\s+)?(?:{wall}|(?:the\s+)?ports?)\s+for\s+(?:it|them)\b"):
            named = list(re.finditer(_served_items(), self.said[:m.start()], re.I))
            said = " ".join(m.group(0).split())
            if named:
                whats = self._served(named[-1].group(1), named[-1].start(1))
                self.spec.open_ports += [p for p in whats if p not in self.spec.open_ports]
            else:
                self.spec.unparsed.append(f"{said} (no software whose port is known said before it: say 'open port N "
                                          "in the firewall')")
            self._mask_but_firewall(m)

    def _mask_but_firewall(self, m: re.Match[str]) -> None:
        """Mask ``m`` but a firewall it names, which is wanted too: its word is left for the group's reading."""
        named = _FIREWALL_WORD.search(m.group(0))
        self._mask(m.start(), m.start() + named.start() if named else m.end())
        if named:
            self._mask(m.start() + named.end(), m.end())

"""Reading the machine's host name: said with "hostname" or a machine's noun ("call the box gw-1"), as a .local
name avahi publishes, or left to DHCP (which a template cannot do); and names given to things that are not the
machine (a container, a site, a pool, a share), which had become the host name."""

from __future__ import annotations

import re

from .phrasing import STOPWORDS, ParserState

_HOST = re.compile(
    r"^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$", re.I
)
# What a request calls the machine an image boots ("rename the box to nuc-07"), for its host name
_MACHINE = r"(?:host|machine|device|system|box|server|computer|node|appliance|gateway|pc)"
# Words after "hostname" that say how it is chosen, not what it is ("make the hostname match the role: web-01")
_NOT_A_NAME = r"(?:match|matches|matching|reflect|reflects|follow|follows|mirror|mirrors|equal|equals|same|like|after|" \
              r"describe|describes|based|say|says|show|shows|include|includes|contain|contains|" \
              r"the|its|their|his|her|my|our|your|this|that|whatever|some|something|" \
              r"from|by|per|via|using|dynamically|automatically|derived|generated|assigned|computed|taken|obtained|" \
              r"determined|set|changed|configured|for|with|in|on|at)"  # "set to the serial number", "derived from …"
# A name said set ("hostname set to", "the hostname is set to", "machine name should be changed to")
_SET = r"(?:(?:is|was|gets|get|will\s+be|should\s+be|must\s+be)\s+)?(?:set|changed|configured)\s+"
# Things a machine runs that a request may name ("a container called telemetry")
_RUN_THINGS = r"container|pod|service|daemon|job|timer"
# Other things a request names that are no machine, each with what a template does not hold of it ("a site called
# blog", "a zfs pool named tank" had named the host); several words before the thing say its kind
_STORAGE_MADE_LATER = ("a template's disk is plain partitions, each with its own filesystem; storage of this kind is "
                      "made after the first boot")
_NAMED_KINDS = {
    r"database|db|schema": "a template installs the database server but creates no databases; add a configuration "
                           "command with a oneshot unit that creates it at first boot",
    r"site|website|web\s+site|vhost|virtual\s+host|server\s+block|web\s*app": "a template installs the web server "
                           "but writes no sites; add a configuration command that writes its configuration",
    r"pool|zpool|dataset|volume\s+group|vg|logical\s+volume|lv|volume": _STORAGE_MADE_LATER,
    r"bucket|queue|topic|index|repository|repo|project|cluster|realm|tenant|namespace|network|bridge|vlan|zone": "a "
                           "template installs software but defines none of these; add a configuration command",
    r"group": "a template's users join groups that exist; add a configuration command that runs groupadd",
}


class HostNamePhrases(ParserState):
    """The host-name phrases of a request."""

    def _hostname_from_dhcp(self) -> None:
        """"the hostname set from dhcp": a name the network gives, which a template cannot leave to it. Read before
        the network, which reads "from dhcp" as addressing."""
        for m in self._each(r"\bhost\s*-?\s*name\s+(?:(?:set|assigned|given|provided|taken|coming)\s+)?(?:from|by|via|through)"
                            r"\s+(?:the\s+)?dhcp\b|\bdhcp[\s-]+(?:assigned\s+|provided\s+)?host\s*-?\s*names?\b"):
            self.spec.unparsed.append(f"{' '.join(m.group(0).split())} (not written: os-image-composer gives every image "
                                      "a static host name, the template's or its distribution default's, and a static "
                                      "name is kept over the one DHCP offers; a configuration command emptying "
                                      "/etc/hostname leaves it to DHCP)")
            self._mask(m.start(), m.end())

    def _hostname(self) -> None:
        patterns = [
            # "a static hostname": a set name is static in the systemd sense (/etc/hostname), which is what this writes
            rf"(?:\b(?:static|fixed|permanent|custom)\s+)?"
            # ("the hostname for the kiosk should be k-1": what it is for, then the name)
            rf"\bhost\s*-?\s*name\s*(?:for\s+(?:the\s+|this\s+|that\s+)?[a-z][\w-]*\s+(?=(?:is|should|will|must|=|:)))?"
            rf"(?:{_SET})?(?:(?:to|as|of|is|should\s+be|will\s+be|must\s+be"
            rf"|shall\s+be|needs\s+to\s+be|has\s+to\s+be|be)\b|=|:)?\s*"
            # a connector is a whole word ("assigned by dhcp" is no "as"), and a modal starts a clause, not a name
            rf"(?!{_NOT_A_NAME}(?![\w-])|(?:package|packages|utility|command|set|changed|configured|to|of|is|as|be"
            rf"|should|must|will|shall|would|could|can|may|needs|has|have)\b)"
            # a name's characters and those people mistake for them ("bad_host" is said invalid, never cut short)
            r"[\"'`]?([A-Za-z0-9][\w.-]*)[\"'`]?",
            # "swap the hostname for gw-17", "replace the host name with gw-2", "change the hostname from debian13 to
            # files": the new name
            r"\b(?:swap|change|replace|switch|exchange|rename)\s+(?:the\s+|its\s+)?host\s*-?\s*name\s+"
            r"(?:from\s+[\"'`]?[A-Za-z0-9][\w.-]*[\"'`]?\s+)?(?:for|with|to)\s+[\"'`]?([A-Za-z0-9][\w.-]*)[\"'`]?",
            # "make the hostname match the role: web-01": the name comes after the colon
            r"\bhost\s*-?\s*name\b[^.;,:=]{0,40}[:=]\s*[\"'`]?([A-Za-z0-9][\w.-]*)[\"'`]?",
            # "call the machine gw-1", "rename the box to nuc-07", "a server named web01": a machine's name
            rf"\b(?:call|name|rename|re-name)\s+(?:(?:the|this|my|our)\s+)?{_MACHINE}\s+(?:to\s+|as\s+)?"
            r"[\"'`]?([A-Za-z0-9][A-Za-z0-9.-]*)[\"'`]?",
            # "give the machine a static name db-01", "give the box the host name gw-2"
            rf"\bgive\s+(?:the|this|my|our)\s+{_MACHINE}\s+(?:a|the)\s+(?:(?:static|fixed|new|proper|host)\s+)?"
            r"(?:host\s*-?\s*)?name\s+(?:of\s+)?[\"'`]?([A-Za-z0-9][A-Za-z0-9.-]*)[\"'`]?",
            rf"\b{_MACHINE}(?:'s)?\s+(?:(?:should|must|will)\s+be\s+|is\s+)?(?:called|named)\s+"
            r"(?!(?:after|for|by|in|on|with|from|like|the|a|an)\b)[\"'`]?([A-Za-z0-9][A-Za-z0-9.-]*)[\"'`]?",
            # "the host should be azl-node-3": a name by its shape (a digit or a dash), not "the box should be fast"
            # nor a kind ("x86-64", "debian-based")
            rf"\b(?:the|this|my|our)\s+{_MACHINE}\s+(?:should|must|will|shall)\s+be\s+[\"'`]?"
            r"(?![\w.-]*-(?:based|like|ish|style|ready|only|friendly|bit)\b|x86|amd64|arm64|aarch64)"
            r"((?=[A-Za-z0-9.-]*[0-9-])[A-Za-z0-9][A-Za-z0-9.-]*)[\"'`]?(?=\s*(?:$|[,;.!?)]|\band\b))",
            # "the machine name is webserver", "computer name: kiosk3", "name of the machine is db01", "set the
            # device name to sensor-7": a machine's name, said with "name" as a noun
            rf"(?:\b{_MACHINE}(?:'s)?\s*-?\s*name|\bname\s+of\s+(?:the\s+|this\s+|my\s+|our\s+)?{_MACHINE})\s*"
            rf"(?:{_SET})?(?:(?:to|is|as|should\s+be|will\s+be|must\s+be|shall\s+be)\b|=|:)\s*"
            rf"(?!{_NOT_A_NAME}(?![\w-]))[\"'`]?([A-Za-z0-9][A-Za-z0-9.-]*)[\"'`]?",
        ]
        for pattern in patterns:
            for m in self._each(pattern):
                value = m.group(1).rstrip(".-")
                if _HOST.match(value) and value.lower() not in ("to", "of", "is", "as", "be"):
                    self.spec.hostname = value
                else:
                    self.spec.unparsed.append(f"hostname {value!r} is not a valid host name")
                self._mask(m.start(), m.end())
        # "hostname matching the role", "hostname set to the serial number", "set the hostname to": no name
        for m in self._each(rf"\bhost\s*-?\s*name\s+(?:(?:set|changed|configured)\s+)?"
                            rf"(?:(?:should|must|will|shall|needs\s+to|has\s+to)\s+(?:be\s+)?)?(?:(?:to|as|is)\b\s*|=\s*)?"
                            rf"{_NOT_A_NAME}(?![\w-])[^.;,]*"
                            r"|\bhost\s*-?\s*name(?:\s+(?:set|changed|configured))?(?:\s+(?:to|as|is)|\s*=)?\s*(?=$|[.;,])"):
            self.spec.unparsed.append(f"{' '.join(m.group(0).split())} (no name given: say e.g. 'hostname web-01')")
            self._mask(m.start(), m.end())

    def _mdns_name(self) -> None:
        """"avahi so it shows up as edge-cam.local", "hostname cam-2.local": a name in mDNS's .local domain is the
        host name avahi publishes with it appended, so the host name is the label before .local; publishing needs
        avahi, added when the request does not name it. A domain said so ("the search domain corp.local"), a path
        (/usr/local) and an address (user@host.local) are none."""
        label = r"([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)\.local(?![\w.-])"
        if self.spec.hostname and self.spec.hostname.lower().endswith(".local"):
            self.spec.hostname = self.spec.hostname[: -len(".local")]
        else:
            seen = (r"(?:\b(?:shows?\s+up|appears?|(?:is\s+)?(?:reachable|discoverable|visible|findable|found|known|"
                    r"advertised|published|announced|resolvable))(?:\s+on\s+the\s+(?:network|lan))?\s+(?:as|at)\s+)?")
            for m in self._each(rf"{seen}(?<![\w./@-]){label}"):
                if re.search(r"\b(?:domain|realm|zone|search|suffix)\s+(?:of\s+|is\s+|=\s*|:\s*)?$",
                             self.work[:m.start()], re.I):
                    continue
                if self.spec.hostname and self.spec.hostname.lower() != m.group(1).lower():
                    self.spec.unparsed.append(f"{m.group(1)}.local (avahi publishes the host name, {self.spec.hostname}, as "
                                              f"{self.spec.hostname}.local: a second .local name is not written)")
                else:
                    self.spec.hostname = m.group(1)
                self._mask(m.start(), m.end())
                break
            else:
                return
        if not re.search(r"\b(?:avahi|mdns|zeroconf|bonjour)\b", self.said, re.I):
            self.spec.add_packages.append("avahi")
            self.spec.notes.append("avahi added: it publishes the host name as a .local name (mDNS)")

    def _named_things(self) -> None:
        """"a container called telemetry", "a service named sensor-sync": a name given to something the image runs,
        not to the machine (it had become the host name) nor a software word (telemetry had added monitoring). The
        composer writes no containers or services of a name: said, with what to add instead."""
        for m in self._each(rf"\b(?:a|an|the|one|my|our)\s+(?:(?:docker|podman)\s+)?({_RUN_THINGS})\s+(?:called|named)\s+"
                            r"[\"'`]?([a-z0-9][a-z0-9_.-]*)[\"'`]?"):
            thing, name = m.group(1).lower(), m.group(2)
            self.spec.unparsed.append(
                f"{thing} {name!r} (not written: a template installs software but defines no {thing}s of its own; add "
                f"a configuration command that creates its systemd unit{' or quadlet' if thing in ('container', 'pod') else ''})")
            if thing in ("container", "pod") and not re.search(r"\b(?:docker|podman)\s+$", self.work[:m.start(1)]):
                self.spec.add_groups.append("containers")  # running one needs a runtime; a named one is read as it is
            self._mask(m.start(1), m.end())  # "a docker container called x": docker stays for the package reading
        for kinds, reason in _NAMED_KINDS.items():
            for m in self._each(rf"\b(?:a|an|the|one|my|our)\s+(?:[a-z0-9][\w-]*\s+){{0,2}}?({kinds})\s+"
                                r"(?:called|named)\s+[\"'`]?([a-z0-9][a-z0-9_.-]*)[\"'`]?"):
                kind = " ".join(m.group(1).lower().split())
                if kind == "group" and re.search(r"\bvolume\s+$", self.said[:m.start(1)], re.I):
                    kind, reason = "volume group", _STORAGE_MADE_LATER
                self.spec.unparsed.append(f"{kind} {m.group(2)!r} (not written: {reason})")
                self._mask(m.start(1), m.end())

    def _called(self) -> None:
        """"a vpn gateway running openvpn and wireguard called vpn-gw", "el10 box with cockpit, named mon-02": what a
        request calls what it describes is the machine's name, once the users and the image have taken theirs
        (read after them) and when nothing else named the host."""
        if self.spec.hostname:
            return
        for m in self._each(r"(?:^|,|\s)(?:(?:and|which|that)\s+)?(?:is\s+|should\s+be\s+)?(?:called|named)\s+"
                            r"[\"'`]?([a-z0-9][a-z0-9-]*[a-z0-9])[\"'`]?(?=\s*(?:$|[,;.!?)]|\band\b|\bwith\b))"):
            if m.group(1).lower() in STOPWORDS or not _HOST.match(m.group(1)):
                continue
            self.spec.hostname = m.group(1)
            self._mask(m.start(), m.end())
            return


__all__ = ["HostNamePhrases"]

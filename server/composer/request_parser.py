"""Turn a plain-words request or edit instruction into a :class:`RequestSpec`.

Deterministic and offline: regular expressions for the facets that have a shape
(sizes, partitions, hostnames, kernel command lines, users), the capability knowledge
for distributions, architectures and capability groups, and a small mode scanner for
"add ... / without ..." package lists. Whatever it cannot place lands in ``unparsed``
so the caller can tell the user (or hand the request to an LLM). The parts: parse_system,
parse_disk, parse_target, parse_packages; their shared words: phrasing.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

from ..knowledge.loader import load_capabilities
from .parse_artifacts import ArtifactPhrases
from .parse_disk import DiskPhrases
from .parse_firewall import FirewallPhrases
from .parse_hostname import HostNamePhrases
from .parse_keys import KeyPhrases
from .parse_logging import LoggingPhrases
from .parse_network import NetworkPhrases
from .parse_network_mounts import NetworkMountPhrases
from .parse_packages import PackagePhrases
from .parse_settings import SettingPhrases
from .parse_shares import SharePhrases
from .parse_sizes import SizePhrases
from .parse_system import SystemPhrases
from .parse_target import TargetPhrases
from .parse_texts import TextPhrases
from .parse_unread import PLAIN_ADJECTIVES
from .parse_user_ids import UserIdPhrases
from .parse_users import UserPhrases
from .phrasing import EDIT_VERBS, STOPWORDS
from .request_spec import RequestSpec

_QUESTION_START = re.compile(
    # "have it run at 4" is no question: "have" before a pronoun and a verb that is no participle has it done
    r"^\s*(?:what|what's|whats|which|how|why|where|who|when|does|do(?!\s+not\b)|did|is|are|was|were|can\s+i|"
    r"(?:has|have)(?!\s+(?:it|them|that|this)\s+(?!been\b|got\b)[a-z]+(?<!ed)(?<!en)\b)|"
    r"explain|summari[sz]e|describe|show|list|tell\s+me|give\s+me\s+(?:an?\s+)?(?:overview|summary|rundown)|"
    r"overview|summary)\b",
    re.I,
)
# Verbs that ask for a change, beyond the edit verbs: "throw in", "whip up", "bake in", "build".
_ASKING = rf"(?:{EDIT_VERBS}|get|have|throw|toss|stick|whip|bake|build|generate|produce|prepare|configure|ditch|nuke|double|halve)"
# Their -ing forms: "would you mind adding nginx?", "what about switching to arm64?" (not "telling me ...").
_ASKING_ING = (r"(?:add|remov|install|uninstall|includ|exclud|dropp|delet|switch|chang|mak|sett|putt|throw|bump|replac|"
               r"renam|resiz|increas|decreas|enabl|disabl|creat|convert|port|mov|grow|shrink|swapp|stripp|purg|updat|"
               r"upgrad|downgrad|append|extend|expand|giv|turn|mount|build|ditch|doubl|halv)ing")
_POLITE_EDIT = re.compile(
    rf"^\s*(?:please\s+)?(?:can|could|would|will)\s+(?:you|we)\s+(?:please\s+)?(?:also\s+)?{_ASKING}\b"
    # "can I get nginx in there?", "could I have a 10G disk?": asking to be given something is an edit
    r"|^\s*(?:please\s+)?(?:can|could|may)\s+i\s+(?:please\s+)?(?:also\s+)?(?:get|have)\b"
    # a change asked as a question: "would you mind adding nginx?", "is it possible to add docker?", "what about
    # adding vim?", "how about 16 GB instead?", "maybe add git too?", "please also include curl?"
    rf"|\b(?:would|do)\s+you\s+mind\s+(?:also\s+)?{_ASKING_ING}\b"
    rf"|\b(?:is|would)\s+it\s+(?:be\s+)?possible\s+to\s+(?:please\s+)?(?:also\s+)?{_ASKING}\b"
    rf"|^\s*(?:and\s+)?(?:what|how)\s+about\s+(?:also\s+)?(?:{_ASKING_ING}\b|an?\s+\d|\d)"
    rf"|^\s*(?:(?:please|maybe|perhaps|also|and)\s+)+{_ASKING}\b",
    re.I,
)


def is_question(text: str) -> bool:
    """An explanation question ("what packages are included?") rather than an edit."""
    stripped = text.strip()
    if not stripped:
        return False
    if _POLITE_EDIT.match(stripped) or re.match(r"\s*(?:please\s+)?(?:show|display|open)\s+https?://", stripped, re.I):
        return False  # "show https://… on the kiosk" sets a page; "show me …" asks
    if _QUESTION_START.match(stripped):
        # "show me ... and add docker" style mixes are rare; an explicit imperative later wins.
        return not re.search(
            rf"[,;.]\s*(?:and\s+)?(?:then\s+)?(?:please\s+)?(?:{EDIT_VERBS})\b", stripped, re.I
        )
    if stripped.endswith("?"):
        return not re.match(rf"^\s*(?:please\s+)?(?:{EDIT_VERBS})\b", stripped, re.I)
    return False


def parse_request(text: str, *, known_packages: Iterable[str] = (), english: Collection[str] = ()) -> RequestSpec:
    """Parse a request ("ubuntu edge image with docker, 8GiB disk") or an edit instruction. ``english``: common
    English words (the caller's vocabulary), which are never read as misspellings of a known name ("photo" is
    no "photon")."""
    caps = load_capabilities()
    spec = RequestSpec()
    original = " ".join((text or "").split())
    if not original:
        return spec
    spec.is_question = is_question(original)
    parser = _Parser(caps, spec, original, known_packages, english)
    parser.run()
    return spec


class _Parser(LoggingPhrases, SharePhrases, NetworkMountPhrases, NetworkPhrases, FirewallPhrases, SystemPhrases, HostNamePhrases, UserPhrases, SettingPhrases, SizePhrases,
              DiskPhrases, ArtifactPhrases, TargetPhrases, TextPhrases, PackagePhrases, KeyPhrases, UserIdPhrases):
    def run(self) -> None:
        # Order matters: shaped facets first (they contain words that would otherwise read
        # as packages), then distributions and the free package/group scan.
        self._reminders()
        self._taken_back()
        self._hedged()
        self._reasons_given()
        self._other_repositories()
        self._ssh_keys()  # first: a key's base64 reads as a kernel parameter, its clause as a user's
        self._texts()  # a motd's or banner's words are a person's text, read by nothing else
        self._user_ids()  # "uid=2001" is no kernel parameter, and its number no word of a user's clause
        self._urls()
        self._shares()  # before the mounts, which would read "remove the nfs share" as one of theirs
        self._network_mounts()  # before the paths, host names and addresses its shares hold
        self._hostname_from_dhcp()  # before the network, which reads "from dhcp" as addressing
        self._network()  # before the settings, which read a name server's address, and the firewall's sources
        self._modules_loaded()  # before the command line, whose list would take a module for a parameter
        self._cmdline()
        self._ssh_hardened()  # before the scan, which would read "hardened" as the security group
        self._password_login_of_named()  # before the settings, which would switch it off for everyone
        self._machine_resources()  # before the settings, which would read a count of cores as a CPU list
        self._settings()
        self._syslog_transport()  # after the settings, which write where the logs go
        self._ports()
        self._remote_software()  # after the settings, whose "logs to a remote syslog at …" is where logs go
        self._boot_services()
        self._named_things()  # before the host name, which a thing's name is not
        self._hostname()
        self._mdns_name()  # after the host name, which may be said with .local
        self._name()
        self._adverbs_of_triggers()
        self._spaced_names()
        self._compounds()  # after the names, which may hold a hyphen and a suffix word ("hostname gw-ready")
        self._groups_left()  # before the users: "remove the user named ann from the wheel group" is no removal
        self._docker_without_sudo()  # before the users and the scan, which would read "without sudo" as a removal
        self._users()
        self._locked_passwords()
        self._users_by_pronoun()
        self._users_able_to_use_docker()
        self._called()  # after the users and the image, which "called" may name as well
        self._passwordless_sudo()
        self._sudo_taken_away()
        self._sudo_given()
        self._plain_user_by_is()
        self._shells_by_pronoun()  # after every reading that adds a user: the pronoun names the last
        self._size_changes()  # before the partitions and the disk size, which would take its size for the disk's
        self._partitions()
        self._partition_sized_by_pronoun()  # before the disk size, which would take "give it 20G" for the disk's
        self._disk_size()
        self._even_split()  # after the disk size, which it halves
        self._data_shares_a_sized_disk()
        self._partition_table()
        self._kernel_version()
        self._artifacts()
        self._bootloader()
        self._secure_boot()  # before immutability: "turn off immutability and secure boot"
        self._logins()  # before the scan, which would read "logs" in "logs in" as system logging
        self._group_modes()  # before the scan, which would read "selinux" alone as the enforcing group
        self._group_releases()  # before the scan, which would read "ros 2" and leave "humble" unread
        self._immutability()
        self._hardware()  # before the scan, which would read "bare" of "bare metal" as minimal
        self._typos()
        self._replacements()
        self._from_to()
        self._unsupported()
        self._vendor_stacks()
        self._distribution()
        self._architecture()
        self._image_type()
        self._role_fillers()
        self._signed_items()
        self._degree_idioms()
        self._scan()
        self._paths_unread()
        self._purposes_of_named()
        self._roles_filled()
        self._purpose_unserved()
        self._part_of_group_removed()
        self._dedupe()

    def _asked(self, at: int, with_joint: bool) -> tuple[int, str]:
        """Where the wish asked about before the question mark at ``at`` starts, and its words: the last one joined
        to the sentence ("ubuntu with docker? no, podman"), with its joining word or without it."""
        sentence = re.split(r"[.;!?](?=\s)", self.work[:at])[-1]
        joined = list(re.finditer(r"\b(?:with|and|plus|also)\b|,", sentence))
        start = at - len(sentence) + ((joined[-1].start() if with_joint else joined[-1].end()) if joined else 0)
        return start, " ".join(self.work[start:at].split())

    def _taken_back(self) -> None:
        """"… with 4 cores isolated for workloads? no, just k3s": a wish the writer asks about and answers no to
        in the same breath is taken back, said in a note, and never applied."""
        for m in self._each(r"\?\s*(?:no|nope|nah|actually\s+no|scratch\s+that|never\s*mind)\b\s*[,.;:!-]?"):
            start, asked = self._asked(m.start(), with_joint=True)
            if asked:
                self.spec.notes.append(f"taken back, so not applied: '{asked}?'")
            self._mask(start, m.end())
            # "make the hostname gw-{site}? no, just gw-berlin": the answer is the host name asked about
            answer = re.match(r"\s*(?:just|only|simply|rather|use|make\s+it)?\s*[\"'`]?([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)"
                              r"[\"'`]?(?=\s*(?:$|[,.;!]))", self.work[m.end():], re.I)
            if answer and re.search(r"\bhost\s*-?\s*name\b", asked, re.I) and answer.group(1).lower() not in self.known:
                self.spec.hostname = answer.group(1)
                self._mask(m.end(), m.end() + answer.end())

    def _hedged(self) -> None:
        """"with codesys? not sure", "not sure about php": a wish the writer doubts is not applied (php had been
        removed, read as "not … php"), and said, so that it can be asked for plainly."""
        unsure = r"(?:i'?m\s+|i\s+am\s+|we'?re\s+|we\s+are\s+)?(?:not\s+(?:so\s+|too\s+|really\s+)?sure|unsure)"
        for m in self._each(rf"\?\s*(?:{unsure}|maybe|dunno|idk)\b\s*[,.;:!-]?"):
            start, asked = self._asked(m.start(), with_joint=False)
            if asked:
                self.spec.notes.append(f"not applied, as it was said unsure: '{asked}?' (say 'add {asked}' to have it)")
            self._mask(start, m.end())
        for m in self._each(rf"\b{unsure}\s+(?:about|if|whether|of)\s+(?:(?:we|i|you|it)\s+(?:really\s+)?"
                            r"(?:need|want|should\s+have|needs?)\s+)?(?:the\s+)?([^,.;!?]+)"):
            asked = " ".join(m.group(1).split())
            self.spec.notes.append(f"not applied, as it was said unsure: '{asked}' (say 'add {asked}' to have it)")
            self._mask(m.start(), m.end())

    def _reasons_given(self) -> None:
        """"remove sudo, nobody needs it": a reason given for an edit is no wish ("no nobody" had been reported)."""
        for m in self._each(r"(?:,|\b(?:since|as|because|cause|cuz))\s*(?:really\s+)?(?:nobody|no\s+one|none\s+of\s+us|we\s+don'?t"
                            r"|i\s+don'?t)\s+(?:really\s+|ever\s+)?(?:needs?|uses?|wants?)\s+(?:it|that|this|them|those)"
                            r"(?:\s+(?:anymore|any\s+more))?\b"):
            self._mask(m.start(), m.end())

    def _other_repositories(self) -> None:
        """"docker-ce from docker's repo", "nginx from the official nginx repository": a repository other than the
        distribution's is not added (a group whose software comes from one, ROS, adds its own), so the
        distribution's package is installed and the answer says so; it had been dropped in silence."""
        for m in self._each(r"\b(?:from|via|using|out\s+of|off)\s+(?:the\s+|an?\s+)?((?:[a-z][\w.-]*(?:'s)?\s+){0,2}?)"
                            r"(?:own\s+)?(?:official\s+)?(?:apt\s+|yum\s+|dnf\s+|rpm\s+|deb\s+|package\s+)?"
                            r"(?:repo|repos|repository|repositories|ppa)\b"):
            vendor = re.sub(r"'s$", "", m.group(1).split()[-1].lower()) if m.group(1).strip() else ""
            group = self.caps.group_for_word(vendor) if vendor else None
            if not (group and self.caps.groups[group].repositories):
                self.spec.notes.append(f"'{' '.join(m.group(0).split())}' not applied: a template installs from the "
                                       "distribution's repositories unless one is added to it (packageRepositories, "
                                       "with its URL and signing key), which the composer does not do for this; the "
                                       "distribution's own package is installed")
            self._mask(m.start(), m.end())

    def _remote_software(self) -> None:
        """"reports metrics to prometheus at 10.0.0.9:9090", "sends to the graylog server on logs.example.com":
        software said at another machine's address runs there, not in the image (prometheus had been installed)."""
        address = r"(?:\d{1,3}(?:\.\d{1,3}){3}|[a-z0-9][\w-]*(?:\.[\w-]+)+)(?::\d{1,5})?"
        for m in self._each(rf"\b(?:to|into)\s+(?:the\s+|a\s+|an\s+|our\s+|my\s+)?(?:remote\s+|central\s+|external\s+)?"
                            rf"([a-z][\w.+-]*)(?:\s+(?:server|instance|host|cluster|endpoint))?\s+(?:at|on)\s+({address})(?![\w.:/-])"):
            word = m.group(1).lower()
            if word not in self.known and not self.caps.group_for_word(word):
                continue
            self.spec.notes.append(f"{word} at {m.group(2)}: another machine's, so not installed here; what the image "
                                   f"runs to reach it is not read from this (name its agent or exporter to have one)")
            self._mask(m.start(), m.end())

    def _reminders(self) -> None:
        """"don't forget curl", "do not forget to add htop": a reminder asks for what follows, where "forget" alone
        takes it back. Rewritten in place, at the same length, as the verb of adding."""
        for m in self._each(r"\b(?:do\s+not|don'?t|never|remember\s+not\s+to)\s+forget(?:\s+about)?"
                            r"(?:\s+to\s+(?:add|install|include))?\b"):
            self.work = self.work[:m.start()] + "add".ljust(m.end() - m.start()) + self.work[m.end():]

    def _paths_unread(self) -> None:
        """A file or directory path nothing read ("run /opt/setup.sh at first boot", "a venv in /opt/app/venv") is a
        constraint, never prose: reported with the two words before it, as numbers and addresses are."""
        for m in re.finditer(r"(?<![\w.:/~-])/[a-z_][\w.+-]*(?:/[\w.+-]+)*/?(?![\w/])", self.work, re.I):
            # from the working text: a correction read before ("postgres" -> "postgresql") moved its positions
            before = re.findall(r"[\w'-]+", re.split(r"[,;:()]", self.work[:m.start()])[-1])[-2:]
            phrase = " ".join([*before, m.group(0)])
            # a word before the path, or the path's own name, already reported alone ("rules", "srv") is said once,
            # in the phrase
            alone = {w.lower() for w in before} | {m.group(0).strip("/").lower()}
            self.spec.unparsed = [u for u in self.spec.unparsed if u.lower() not in alone]
            if phrase not in self.spec.unparsed:
                self.spec.unparsed.append(phrase)
            self._mask(m.start(), m.end())

    def _purpose_unserved(self) -> None:
        """A request that names no software and says what the image is for in words nothing read ("for a digital
        photo frame, slideshow of pictures from a USB stick"): said, so an image with nothing for it is never
        passed off as the answer. Two words at least, none of them a plain adjective ("for production"), or one
        that is no common English word (a machine or a product this server does not know: "for a cubieboard")."""
        spec = self.spec
        if (spec.add_groups or spec.add_packages or spec.use_cases or spec.configurations or spec.remove_groups
                or spec.unparsed):  # words reported already (software the vocabulary lacks: "frr") say enough
            return
        m = re.search(r"\b(?:for|as\s+(?:an?|the|our|my)|to\s+(?:run|show|display|play|power|drive|be\s+used\s+as))\s+(?=\S)",
                      self.work, re.I)  # "debian 13 as a tor relay"
        if m is None:
            return
        end = re.search(r"[.;!?\n]|$", self.work[m.end():])
        start, stop = m.end(), m.end() + (end.start() if end else 0)
        words = [w for w in re.findall(r"[a-z][\w'-]*", self.work[start:stop].lower())
                 if w not in STOPWORDS and w not in PLAIN_ADJECTIVES]
        if len(words) < 2 and not (words and self.english and words[0] not in self.english):
            return
        said = " ".join(self.said[start:stop].split()).strip(" ,")
        spec.notes.append(f"nothing was added for '{said}': no software this server knows was read in it; name the "
                          "packages it needs")
        self._mask(start, stop)

    def _purposes_of_named(self) -> None:
        """A purpose said after packages it explains ("tcpdump, strace and htop for debugging", "htop for
        monitoring") asks for no more than them: the group its words name is left out when one of the packages
        said before it is that group's. Named otherwise ("with debugging tools"), the group is added. A group said
        before a purpose whose group brings its software ("firmware for wifi cards": the Wi-Fi group has the
        firmware) is that purpose's share of it."""
        spec = self.spec
        text = self.said.lower()
        triggers = self.caps.triggers()
        for phrase, group in triggers.items():
            if group not in spec.add_groups:
                continue
            pattern = r"[\s-]+".join(map(re.escape, phrase.split()))
            for m in re.finditer(rf"\bfor\s+(?:the\s+|some\s+|basic\s+|simple\s+)?{pattern}\b", text):
                sentence = re.split(r"[.;!?\n]", text[:m.start()])[-1]
                said_before = {g for p, g in triggers.items() if g != group and g in spec.add_groups
                               and re.search(rf"\b{re.escape(p)}\s*$", sentence)}
                universe = self.caps.group_package_universe(group)
                for other in said_before:
                    if self.caps.group_members(other, universe):
                        spec.add_groups.remove(other)
                named = [p for p in spec.add_packages if re.search(rf"(?<![\w-]){re.escape(p.lower())}(?![\w-])", sentence)]
                if self.caps.group_members(group, named) and not re.search(
                        rf"\b{pattern}\b", text[:m.start()] + " " + text[m.end():]):
                    spec.add_groups.remove(group)
                    spec.notes.append(f"'for {phrase}' read as what {', '.join(named)} "
                                      f"{'is' if len(named) == 1 else 'are'} for; say '{phrase} tools' for the "
                                      f"{group} group's whole set")
                    break

    def _part_of_group_removed(self) -> None:
        """"remove qemu but keep libvirt": a removed group named by the word of only some of its packages (qemu of
        qemu-system-x86 and qemu-utils, beside libvirt's), while another of its parts is kept or added, loses that
        part alone. Without such a part kept, the word stands for the whole group ("remove docker"); so it does
        beside software that fills the group's role instead ("swap docker for podman": docker's whole stack goes)."""
        spec = self.spec
        for group, word in self.removed_by_word.items():
            instead = set(self.caps.groups[group].filled_by)
            kept = self.caps.group_members(group, [p for p in spec.add_packages if p.lower() not in instead])
            if group not in spec.remove_groups or not kept:
                continue
            universe = self.caps.group_package_universe(group)
            part = [n for n in universe if re.match(rf"{re.escape(word)}(?:[-.]|$)", n.lower())]
            if part and len(part) < len(universe):
                spec.remove_groups.remove(group)
                spec.remove_packages.append(f"{word}[-.]*")  # the part's packages in any family, as the image has them

    def _dedupe(self) -> None:
        spec = self.spec
        for name in ("add_packages", "remove_packages", "add_groups", "remove_groups", "kernel_cmdline_append",
                     "kernel_cmdline_remove", "artifacts", "remove_artifacts", "use_cases", "unparsed", "notes",
                     "open_ports"):  # fmt: skip
            setattr(spec, name, list(dict.fromkeys(getattr(spec, name))))
        spec.configurations = list({c["cmd"] or c["replaces"]: c for c in spec.configurations}.values())
        # Asking to add and remove the same thing: the removal is the later, more specific wish.
        spec.add_groups = [g for g in spec.add_groups if g not in spec.remove_groups and g not in self.vendor_instead_of]
        # "a desktop with xfce": the kind named stands in for the group it is a kind of
        kinds = {s for g in spec.add_groups if g in self.caps.groups for s in self.caps.groups[g].supersedes}
        spec.add_groups = [g for g in spec.add_groups if g not in kinds]
        spec.add_packages = [p for p in spec.add_packages if p not in spec.remove_packages]
        spec.artifacts = [a for a in spec.artifacts if a not in spec.remove_artifacts]
        if not spec.os and not spec.dist and self.unsupported_target:
            spec.dist = self.unsupported_target  # the closest supported choice, named in spec.unsupported
        if self.unsupported_arch and not spec.arch:
            spec.arch = "x86_64"
        if spec.dist and not spec.os:
            spec.os = self.caps.family_of(spec.dist)
        keyed = {k["user"] for k in spec.ssh_keys}  # a user given a key logs in with it: no password note
        for user in spec.users:
            if user.get("name") in keyed and user.get("action") == "add":
                user["key"] = True
        spec.minimal = spec.minimal or "minimal" in spec.use_cases
        spec.unsupported = list(dict.fromkeys(spec.unsupported))


__all__ = ["is_question", "parse_request"]

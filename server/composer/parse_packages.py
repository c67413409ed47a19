"""Reading the package words of a request: a scan of the words left once the shaped facets are read, with
a mode (add / remove / neutral), capability group triggers, use cases, and package names known or shaped
like one."""

from __future__ import annotations

import re

from ..knowledge.glossary import load_glossary
from ..knowledge.loader import normalize_phrase
from ..knowledge.request_words import load_request_words
from .index_names import HOST_NAME
from .parse_replacements import ReplacementPhrases
from .parse_unread import KIND_WORDS, VALUE, UnreadWords, no_wish, says_how
from .phrasing import (
    ADD_WORDS,
    DEGREE_WORDS,
    PACKAGE_SHAPE,
    REMOVE_WORDS,
    STOPWORDS,
    alternatives,
    looks_like_package,
)
from .removal_phrases import CHANGED_MIND, negations_first
from .request_spec import DATABASE

# Words of size that make an image minimal only when they qualify it ("a small image", "tiny azure linux", "a
# lightweight server"), not another noun ("a small bakery", "a tiny office").
_SIZE_ADJECTIVES = {"small", "tiny", "little", "lightweight", "slim", "lean"}
_IMAGE_KIND_NOUNS = {"image", "images", "os", "system", "systems", "distro", "distribution", "install", "installation",
                "footprint", "build", "base", "vm", "vms", "server", "servers", "host", "hosts", "machine", "box",
                "appliance", "device", "node", "nodes", "gateway", "setup", "container", "one", "linux", "rootfs",
                "root", "disk", "template", "variant", "version", "flavour", "flavor"}
_WEAK_ADD = {"need", "needs", "want", "wants", "use", "using", "have", "has"}
_PACKAGE_NOUNS = {"package", "packages", "pkg", "pkgs"}  # "install the package X": X is named as a package
# What a removed thing is called after its name ("disable the bluetooth service", "the avahi daemon")
_SERVICE_NOUNS = {"service", "services", "daemon", "daemons", "unit", "units"}
# What a set of software is called after its name ("the development tools group", "the kde desktop bundle")
_SET_NOUNS = {"group", "groups", "bundle", "bundles", "pattern", "patterns", "collection", "suite", "stack"}
_STRONG_ADD = {
    "add",
    "adds",
    "adding",
    "install",
    "installing",
    "include",
    "includes",
    "including",
    "preinstall",
}
# Verbs that only software follows: one unknown word after them is a package name whatever its shape ("install
# frr"); after "add" or "include" it must look like one, since those take English too ("add logs", "add separate").
_INSTALL_VERBS = {"install", "installing", "preinstall"}
_NEUTRAL_WORDS = {
    "set",
    "turn",
    "change",
    "make",
    "switch",
    "convert",
    "port",
    "move",
    "for",
    "on",
    "to",
    "keep",
    "is",
}


# The nouns a role ends in ("the web server", "a reverse proxy", "the container engine"): what software is for.
_ROLE_NOUNS = {"server", "webserver", "proxy", "engine", "runtime", "firewall", "broker", "manager", "client",
               "daemon", "desktop", "agent", "backend", "frontend", "balancer"}
# Words that name the machine itself, never software: "use it as a web server", "the box as a firewall".
_NOT_SOFTWARE = {"it", "this", "that", "one", "image", "machine", "box", "vm", "node", "host", "system", "device",
                 "server", "computer", "instance", "appliance", "workstation", "laptop", "pc", "gateway", "them"}

_PLATFORM_WORDS = {"for", "on", "under", "inside", "in"}  # "an image for qemu": where it runs
_HOST_WORDS = {"host", "server", "hypervisor", "node", "machine"}  # "for kvm hosts": what it is
_GUEST_WORDS = {"agent", "guest", "tool", "addition", "integration"}  # "the qemu agent": the guest's software


# A library said as one, in a request that names Python ("python3 with the requests library").
_LIBRARY_WORDS = {"library", "libraries", "lib", "module", "modules", "package"}
_PYTHON = re.compile(r"\b(?:python3?|pip3?)\b", re.I)
# Verbs of returning to something had before ("go back to nginx", "switch back to apache", "revert to chrony").
_BACK_TO = re.compile(r"(?:(?:go|going|goes|went|switch|switching|change|changing|move|moving)\s+back\s+to"
                      r"|(?:revert|reverting|return|returning)\s+to)\b")


class PackagePhrases(ReplacementPhrases, UnreadWords):
    """The package and capability group words of a request."""

    def _roles_filled(self) -> None:
        """A group asked for by words naming its role only ("a container host"), beside software the request names
        that fills the role ("... with podman", "... with containerd"): the software is the answer, so the group's
        own (Docker) is not added. A word naming the group's own software ("docker") keeps it."""
        said = self.said.lower()
        for gid in list(dict.fromkeys(self.spec.add_groups)):
            group = self.caps.groups.get(gid)
            if group is None or not group.role_words:
                continue
            own = [t for t in group.triggers if t not in group.role_words and t not in group.filled_by]
            if any(re.search(rf"(?<![\w-]){re.escape(t)}(?![\w-])", said) for t in own):
                self.spec.groups_named.append(gid)  # "docker and podman": both engines asked for
                continue
            names = [*self.spec.add_packages, *self.spec.add_groups]
            fillers = [n for n in names if n in group.filled_by
                       or {a.lower() for a in self.caps.aliases(n)} & set(group.filled_by)]
            if fillers:
                self.spec.add_groups = [g for g in self.spec.add_groups if g != gid]
                self.spec.notes.append(f"{gid} group not added: the request names {', '.join(dict.fromkeys(fillers))} "
                                       "for that role")

    def _role_fillers(self) -> None:
        """"podman as the container engine", "haproxy as a reverse proxy", "apache web server": software given a
        role fills it, so the capability group the role's words name (with its own docker, nginx) is not added.
        After "as" any name counts (one not known here is reported); before a role noun, a known package only
        ("a small web server" names no web server)."""
        triggers = self.caps.triggers()
        roles = alternatives(triggers, between=r"[\s-]+")
        tail = rf"(?:\s+(?:{alternatives(_ROLE_NOUNS)}))?"
        name = r"([a-z0-9][a-z0-9+_.-]*)"
        the = r"(?:the|a|an|my|our|its|their)\s+"
        for m in self._each(rf"\b{name}\s+as\s+(?:{the})?(?:(?:main|default|only|primary|preferred)\s+)?({roles}){tail}\b"):
            self._fill_role(m, strong=True)
        # one space between, as the request has them: a run of spaces is words read already ("samba reachable
        # through the firewall" is no samba firewall)
        for m in self._each(rf"\b{name} ({roles}){tail}\b"):
            if m.group(0).split()[-1].lower() in _ROLE_NOUNS:
                self._fill_role(m, strong=False)

    def _fill_role(self, m: re.Match[str], *, strong: bool) -> None:
        word, phrase = m.group(1).lower(), normalize_phrase(m.group(2))
        triggers = self.caps.triggers()
        group = triggers.get(phrase)
        if not group or word in STOPWORDS or word in _NOT_SOFTWARE:
            return
        own = triggers.get(normalize_phrase(word)) or self.caps.group_for_word(word)
        if own == group and word not in self.real:
            return  # "nginx web server", "docker container host": the group's own word
        if own == group:  # "chrony as the ntp client": one of the group's packages, not all of them
            own = None
        if own and strong:
            self.spec.add_groups.append(own)
        elif own:
            return
        elif package := word if word in self.known else self.resolve(word):
            self.spec.add_packages.append(package)
        elif strong and PACKAGE_SHAPE.match(word):
            self.spec.unparsed.append(word)
            self.spec.notes.append(f"{word} as the {phrase}: not known here, so no {phrase} was added in its place "
                                   f"(the {group} group would have brought its own)")
        else:
            return
        self._mask(m.start(), m.end())

    @staticmethod
    def _named(words: str) -> list[str]:
        """The words of "the ssh server", "the nano editor" that name software: a kind noun after a name says
        what it is ("server" is no package, though openssh-server ends with it)."""
        kinds = {*load_request_words().kind_nouns, "server", "client", "daemon"}
        parts = words.split()
        return [p for i, p in enumerate(parts) if not (i and p.lower() in kinds)]

    def _degree_idioms(self) -> None:
        """"as small as possible", "as lean as it gets": the adjective is the wish ("small" is minimal); the idiom
        around it says how much, and is no word to report."""
        for m in self._each(r"\b(as)\s+[a-z][\w-]*\s+(as\s+(?:possible|can\s+be|it\s+gets|you\s+can(?:\s+make\s+it)?))\b"):
            self._mask(*m.span(1))
            self._mask(*m.span(2))

    def _scan(self) -> None:
        """Walk the remaining words with a mode (add / remove / neutral) and classify them.

        Strength of an add: "strong" after add/install/include (unknown package-like words are
        taken as package names), "with" after with/plus/also (unknown words are reported),
        "quiet" after need/want/use/have (unknown words are ignored: they are usually prose).
        """
        text = negations_first(self.work.lower())
        triggers = self.caps.triggers()
        max_words = max((len(t.split()) for t in triggers), default=1)
        request_words = load_request_words()
        use_case_words = {
            normalize_phrase(w): uid for uid, uc in self.caps.use_cases.items() for w in uc.words
        }
        # A comma before a subject of its own starts a new clause ("get rid of ssh, we use the console"): the
        # verb before it does not govern what that clause names.
        # "... so I can manage it from a browser": what the wish is for starts a clause of its own, whose words
        # no earlier "with" governs (prose, unless they name software: "so we can run docker").
        purpose = (r"\bso\s+(?:that\s+)?(?=(?:we|i|they|you|admins?|users?|people|operators?|staff|someone|anyone)"
                   r"\s+(?:can|could|will|may|might|are\s+able\s+to)\b)")
        for clause in re.split(rf"[;.!?\n]+(?:\s|$)|\bthen\b|,\s*(?=(?:we|i|they|you|we're|i'm|they're)\s)|{purpose}",
                               text):
            mode: str | None = None
            self._by_name = False  # "add package pgbackrest": the words after it are package names, known or not
            self._verb = ""  # the last verb that began adding (_INSTALL_VERBS)
            strength = ""
            negate = False  # "don't", "do not", "never": the next add verb means remove
            found = [
                (m.group(0).rstrip(".,:'"), m.start(), m.end())
                for m in re.finditer(r"[a-z0-9][a-z0-9+_.:~/'-]*", clause)
            ]
            tokens = [t for t, _, _ in found]
            removals = self._removed()  # what this clause's removals are counted from
            run: list[str] = []  # adjacent unknown words after a strong add ("the nvidia driver")
            said_alone: tuple[int, int] | None = None  # the word reported last, and where its report is
            ignored: set[int] = set()  # tokens nothing read (prose, or a wish not understood)
            values: set[int] = set()  # numbers and addresses nothing read ("port 2222", "1.1.1.1")
            last_end = -1

            i = 0
            added = self._added()
            named_again = -2  # the token last read as what was just added, said again
            # "no" takes one item, up to a comma ("no root, fail2ban and auditd"), where "without" takes a list:
            # the mode before it then comes back. A list joined by "or" stays negated ("no docker, podman or lxc").
            after_no: tuple[str | None, str] | None = None
            while i < len(tokens):
                token = tokens[i]
                if after_no is not None and i and "," in clause[found[i - 1][2]:found[i][1]]:
                    joint = re.search(r"\b(or|and)\b", clause[found[i][1]:])
                    if not (joint and joint.group(1) == "or"):
                        (mode, strength), after_no = after_no, None
                # "postgresql 15", "python 3.12": a version right after what was just added
                adjacent = i and last_end == found[i - 1][2] and not clause[last_end:found[i][1]].strip()
                just_added, added = adjacent and self._added() != added, self._added()
                if (just_added or (adjacent and named_again == i - 1)) and (
                        token in request_words.package_name_suffixes or (
                            token in request_words.kind_nouns and token not in self.known
                            and not self.caps.group_for_word(token))):
                    # "openvpn client", "chromium browser", "wireguard vpn client": what was just added, said again
                    named_again, last_end = i, found[i][2]
                    i += 1
                    continue
                if just_added and re.fullmatch(r"v?\d+(?:\.\d+)*", token) and tokens[i - 1] + token in self.real:
                    i += 1  # "python 3": the major version is part of the name (python3), no pin
                    continue
                if just_added and re.fullmatch(r"v?\d+(?:\.\d+)*", token):
                    self.spec.notes.append(
                        f"{tokens[i - 1]} {token}: version not pinned; a template names packages without versions "
                        "(os-image-composer refuses version pins), so the release's own version is installed")
                    i += 1
                    continue
                if run and (clause[last_end : found[i][1]].strip() or token in self.known):
                    self._flush_run(run)
                absent = next((size for size in (2, 1) if i + size <= len(tokens)
                               and normalize_phrase(" ".join(tokens[i:i + size])) in self.caps.absence_words), 0)
                if absent:  # "headless": what the word says is not there
                    phrase = normalize_phrase(" ".join(tokens[i:i + absent]))
                    self.spec.remove_groups += self.caps.absence_words[phrase]
                    if phrase in use_case_words:
                        self.spec.use_cases.append(use_case_words[phrase])
                    last_end = found[i + absent - 1][2]
                    i += absent
                    continue
                mind = CHANGED_MIND.match(" ".join(tokens[i : i + 4]))
                if mind:  # "I changed my mind about docker": a wish taken back
                    mode, strength, negate = "remove", "strong", False
                    i += len(mind.group(0).split())
                    continue
                two = " ".join(tokens[i : i + 2])
                if token in ("don't", "dont", "never", "without") or two in ("do not", "no need", "not want"):
                    negate = True
                    mode, strength = "remove", "strong"
                    i += 2 if two in ("do not", "no need", "not want") else 1
                    continue
                three = " ".join(tokens[i : i + 3])
                if three in ("get rid of", "leave out of") or two in ("get rid", "leave out", "take out", "turn off",
                                                                     "switch off", "shut off"):
                    mode, strength = "remove", "strong"
                    i += 3 if three in ("get rid of", "leave out of") else 2
                    continue
                if two in ("turn on", "switch on", "put in", "bring in", "throw in", "add in"):
                    mode, strength, negate = "add", "strong", False
                    self._verb = two
                    i += 2
                    continue
                # "I changed my mind about apache, go back to nginx": what one returns to is wanted again
                back = _BACK_TO.match(" ".join(tokens[i:i + 3]))
                if back:
                    mode, strength, negate = "add", "strong", False
                    i += len(back.group(0).split())
                    continue
                if token in REMOVE_WORDS:
                    after_no = (mode, strength) if token == "no" and mode != "remove" else None
                    mode, strength, negate = "remove", "strong", False
                    i += 1
                    continue
                if token in ADD_WORDS:
                    if negate or (token in _WEAK_ADD and mode == "remove" and self._removed() == removals):
                        # "don't want", "do not include", "no need", "(without) I want telnet (removed)": stays a
                        # removal; after the items of one ("remove docker, use podman") a verb of using asks again
                        negate = False
                    elif token in _WEAK_ADD:
                        mode, strength = "add", "quiet"
                    else:
                        mode, strength = "add", "strong" if token in _STRONG_ADD else "with"
                        self._verb = token
                    i += 1
                    continue
                negate = False
                if token in _PACKAGE_NOUNS and mode in ("add", "remove"):
                    self._by_name = True
                    i += 1
                    continue
                if token in _NEUTRAL_WORDS and not (mode in ("add", None) and self._list_item(clause, found, i)):
                    if token not in ("for", "on", "to", "is") or mode is None or (
                            token == "for" and mode == "remove" and i and tokens[i - 1] not in REMOVE_WORDS
                            and tokens[i - 1] not in ("need", "needs", "needed", "off", "out", "of")):
                        # "disable swap for kubernetes": after its object, "for" says what a removal serves, not
                        # one more item; right after the verb it leads to the item ("no need for docker")
                        mode, strength = None, ""
                    elif token == "for" and strength in ("with", "strong"):
                        # "flask and gunicorn for a small web app", "add keepalived for failover": what follows
                        # says what it is for (prose), and only names this reading knows are taken
                        strength = "quiet"
                    i += 1
                    continue
                # Longest capability trigger starting here (exact package names win over one-word triggers).
                matched = False
                for size in range(min(max_words, len(tokens) - i), 0, -1):
                    phrase = normalize_phrase(" ".join(tokens[i : i + size]))
                    group = triggers.get(phrase)
                    if not group:
                        continue
                    if size == 1 and tokens[i] in self.real and not (
                            tokens[i] == group and self.caps.groups[group].whole_by_name and not self._by_name
                            and not (i + 1 < len(tokens) and tokens[i + 1] in _PACKAGE_NOUNS)):
                        break  # "the kubernetes package": the package, though its name asks for the whole group
                    platform = self._as_platform(group, tokens, i, size)
                    if mode == "remove":
                        self.spec.remove_groups.append(platform)
                        self.removed_by_word.setdefault(platform, phrase)
                    else:
                        self.spec.add_groups.append(platform)
                        if phrase in use_case_words and platform == group:  # where it runs is no use of it
                            self.spec.use_cases.append(use_case_words[phrase])
                    i += size
                    if i < len(tokens) and tokens[i] in _SET_NOUNS:
                        i += 1  # "the development tools group": the group's noun, no package
                    matched = True
                    break
                if not matched:
                    for size in (3, 2, 1):
                        if i + size > len(tokens):
                            continue  # a shorter phrase would match under a longer size and overrun
                        phrase = normalize_phrase(" ".join(tokens[i : i + size]))
                        if phrase in use_case_words and (size > 1 or tokens[i] not in self.known):
                            if size == 1 and tokens[i] in _SIZE_ADJECTIVES and i + 1 < len(tokens) and not (
                                    tokens[i + 1] in _IMAGE_KIND_NOUNS or self._known_word(tokens[i + 1])
                                    or tokens[i + 1] in use_case_words or tokens[i + 1] in STOPWORDS
                                    or not tokens[i + 1].isalpha()):
                                break  # "a small bakery": the size of something else, not of the image
                            if mode != "remove":
                                self.spec.use_cases.append(use_case_words[phrase])
                            i += size
                            matched = True
                            break
                if matched:
                    last_end = found[i - 1][2]
                    continue
                if token in request_words.everyday_names and not self._named_as_package(clause, found, i):
                    ignored.add(i)  # "a digital signage screen": the word, not the package
                    last_end = found[i][2]
                    i += 1
                    continue
                if (token in request_words.kind_nouns and token not in self.known and i + 2 < len(tokens)
                        and tokens[i + 1] in ("for", "of") and self._software_at(tokens, i + 2, triggers)):
                    last_end = found[i][2]  # "firmware for wifi cards", "drivers for the gpu": the kind of what follows
                    i += 1
                    continue
                if (i + 1 < len(tokens) and tokens[i + 1] in _LIBRARY_WORDS and mode != "remove"
                        and re.fullmatch(r"[a-z][a-z0-9_.-]*", token) and token not in self.known
                        and _PYTHON.search(self.said) and not self.caps.group_for_word(token)):
                    # "python3, pip and the requests library": a library of the Python asked for, as every family
                    # packages it (python3-requests)
                    self.spec.add_packages.append(f"python3-{token.replace('_', '-')}")
                    last_end = found[i + 1][2]
                    i += 2
                    continue
                if token not in self.known and (no_wish(tokens, i) or (says_how(token) and token in self.english)):
                    # "an ubuntu vm", "postgresql and its data on ...", "no GUI obviously": no wish
                    last_end = found[i][2]
                    i += 1
                    continue
                unread = len(self.spec.unparsed)
                verdict = self._classify(token, mode=mode, strength=strength)
                if (len(self.spec.unparsed) == unread + 1 and said_alone == (i - 1, unread - 1)
                        and self.spec.unparsed[-2:] == [tokens[i - 1], token]
                        and tokens[i - 1] in self.english and token in self.english
                        and not clause[found[i - 1][2]:found[i][1]].strip()):
                    # "with postgres, nightly vacuum": adjacent English words of one item, reported as one wish (a
                    # name no English has keeps its own report, which the index check completes)
                    self.spec.unparsed[-2:] = [" ".join(self.spec.unparsed[-2:])]
                said_alone = (i, len(self.spec.unparsed) - 1) if len(self.spec.unparsed) > unread else None
                if verdict == "unknown-strong":
                    run.append(token)
                elif run:
                    self._flush_run(run)
                if verdict == "ignored":
                    ignored.add(i)
                if verdict in ("skip", "ignored") and (VALUE.fullmatch(token) or HOST_NAME.fullmatch(token)) and not (
                        found[i][1] and clause[found[i][1] - 1] in ".-"):
                    # (after "." or "-" it is the tail of a name another reader took: "azure linux 3.0")
                    values.add(i)
                last_end = found[i][2]
                i += 1
            self._flush_run(run)
            self._report_bare_items(clause, found, ignored)
            self._report_values(found, ignored, values)

    def _signed_items(self) -> None:
        """"-curl", "+htop": items written as a diff writes lines, a removal and an addition (read before the scan,
        whose words never carry a sign)."""
        for m in self._each(r"(?:^|(?<=[\s,;(]))([+-])([a-z][a-z0-9+_.-]*[a-z0-9+])(?=$|[\s,;)])"):
            mode = "remove" if m.group(1) == "-" else "add"
            if self._classify(m.group(2), mode=mode, strength="strong") == "unknown-strong":
                self._flush_run([m.group(2).lower()])
            self._mask(m.start(), m.end())

    def _software_at(self, tokens: list[str], j: int, triggers: dict[str, str]) -> bool:
        """Whether the words from ``j`` on (past an article) name a capability or a known package."""
        j += tokens[j] in ("the", "a", "an", "my", "our", "its")
        return j < len(tokens) and (tokens[j] in self.known or any(
            normalize_phrase(" ".join(tokens[j:j + size])) in triggers for size in (3, 2, 1)))

    def _short_name(self, word: str) -> bool:
        """A word that is one dash-part short of a known package ("timesyncd" for systemd-timesyncd)."""
        return any(r.endswith("-" + word) or r.startswith(word + "-") for r in self.real)

    def _software(self, word: str) -> bool:
        """A word that names a package or a capability group."""
        return word in self.known or bool(self.caps.group_for_word(word))

    def _list_item(self, clause: str, found: list[tuple[str, int, int]], i: int) -> bool:
        """A known package that stands alone as an item of a list ("gcc, make, git"), though the word is a verb."""
        before = clause[found[i - 1][2]:found[i][1]] if i else ""
        after = clause[found[i][2]:found[i + 1][1]] if i + 1 < len(found) else ""
        alone = i + 1 == len(found) or "," in after or (i + 1 < len(found) and found[i + 1][0] == "and")
        listed = "," in before or (i > 0 and found[i - 1][0] == "and")
        return found[i][0] in self.real and listed and alone

    def _as_platform(self, group: str, tokens: list[str], i: int, size: int) -> str:
        """A group named right after "for"/"on"/"under" as where the image runs ("an image for qemu") means its
        platform group (the guest agent), unless a host word follows ("for kvm hosts")."""
        spec = self.caps.groups.get(group)
        after = tokens[i + size] if i + size < len(tokens) else ""
        if spec is not None and spec.as_platform and after.rstrip("s") in _GUEST_WORDS:
            return spec.as_platform  # "the qemu agent", "kvm guest tools": the guest side wherever it is said
        if spec is None or not spec.as_platform or not i or not (tokens[i - 1] in _PLATFORM_WORDS
                                                                 or self._listed_after_platform(tokens, i)):
            return group
        return group if after.rstrip("s") in _HOST_WORDS else spec.as_platform

    def _listed_after_platform(self, tokens: list[str], i: int) -> bool:
        """"for hyper-v and kvm": an item joined by "and"/"or" to a platform named after "for" is one too."""
        if i < 3 or tokens[i - 1] not in ("and", "or"):
            return False
        triggers = self.caps.triggers()
        for size in (1, 2):
            start = i - 1 - size
            if start >= 1 and tokens[start - 1] in _PLATFORM_WORDS and normalize_phrase(
                    " ".join(tokens[start:i - 1])) in triggers:
                return True
        return False

    def _named_as_package(self, clause: str, found: list[tuple[str, int, int]], i: int) -> bool:
        """A package name that is an everyday word names the package right after a verb that adds or removes
        ("install screen", "with screen", "without screen") or standing alone in a list ("tmux, screen")."""
        before = found[i - 1][0] if i else ""
        return before in ADD_WORDS or before in REMOVE_WORDS or before in ("no", "without") or self._list_item(
            clause, found, i)

    def _removed(self) -> int:
        """How many packages and groups are taken out so far."""
        return len(self.spec.remove_packages) + len(self.spec.remove_groups)

    def _added(self) -> tuple[int, int]:
        """How many packages and groups are asked for so far (a change: the last word added one)."""
        return len(self.spec.add_packages), len(self.spec.add_groups)

    def _flush_run(self, run: list[str]) -> None:
        """One unknown word after "add" is a package name only when it is shaped like one ("libfoo-dev",
        "python3", "mod_ssl"), or after "install" (_INSTALL_VERBS); a plain word ("separate", "logs") is English
        until the repository index says otherwise, so it is reported as not placed. Several in a row are prose
        ("the nvidia driver")."""
        if len(run) == 1 and (looks_like_package(run[0]) or (
                getattr(self, "_verb", "") in _INSTALL_VERBS and run[0] not in load_request_words().kind_nouns)):
            self.spec.add_packages.append(run[0])
        elif run:
            self.spec.unparsed.append(" ".join(run))
        run.clear()

    def resolve(self, token: str) -> str | None:
        """The real package a word names: itself, or the one package spelt ``<word>-tools`` / ``-utils`` ...
        ("wireguard" -> wireguard-tools). None when no real package fits."""
        if token in self.real:
            return token
        if token in load_glossary().generic_package_parts:  # "base" of "a base image" is no base-files
            return None
        # One more word after a dash ("qemu-kvm"), not a versioned build ("intel-dlstreamer_2025.2.0").
        family = [r for r in self.real if r.startswith(token + "-") and r.count("-") == token.count("-") + 1
                  and r[len(token) + 1:].isalpha()]
        for suffix in load_request_words().package_name_suffixes:
            if token + "-" + suffix in family:
                return token + "-" + suffix
        return family[0] if len(family) == 1 else None

    def _classify(self, token: str, *, mode: str | None, strength: str) -> str:
        token = token.strip().strip("'\"`").lower()
        if not token:
            return "skip"
        group = self.caps.group_for_word(token)
        is_known = token in self.known
        # Taken out, software the kernel switches on by itself is its group ("without apparmor": off at boot too).
        if group and (token not in self.real or mode == "remove" and self.caps.groups[group].switch_off):
            (self.spec.remove_groups if mode == "remove" else self.spec.add_groups).append(group)
            if mode == "remove":
                self.removed_by_word.setdefault(group, token)  # request_parser._part_of_group_removed
            return "group"
        if (
            token in STOPWORDS
            or token in DEGREE_WORDS
            or token in ADD_WORDS
            or token in REMOVE_WORDS
            or token in KIND_WORDS
            or re.fullmatch(r"[\d.]+[a-z]{0,3}", token)
        ):
            return "skip"
        looks_like = bool(PACKAGE_SHAPE.match(token)) and len(token) > 1 and "/" not in token
        if not looks_like:
            return "skip"
        resolved = self.resolve(token) if not is_known else None
        if resolved:
            token, is_known = resolved, True
        if getattr(self, "_by_name", False) and mode in ("add", "remove") and not is_known and not (
                self.caps.group_for_word(token)):
            (self.spec.add_packages if mode == "add" else self.spec.remove_packages).append(token)
            return "done"
        # A word no English word list has, after a verb of removing ("drop ccache"), names software: the removal
        # is reported as done or as nothing to remove
        named = strength == "strong" and bool(self.english) and token.isalpha() and token not in self.english
        if mode == "remove" and load_request_words().mount_words.get(token) == DATABASE:
            self.spec.remove_packages.append(DATABASE)  # "get rid of the database": whichever the image has
        elif mode == "remove" and token in _SERVICE_NOUNS and (self.spec.remove_packages or self.spec.remove_groups):
            pass  # "disable the bluetooth service": the noun of what was named ("remove the service" alone is not)
        elif mode == "remove" and not (is_known or looks_like_package(token) or self._short_name(token) or named):
            # "no password login", "the root user disabled": a word that names no package we know, in the template
            # or elsewhere, is no removal to report as done ("nothing to remove"): the wish was not understood.
            self.spec.unparsed.append(f"no {token}")
        elif mode == "remove":
            self.spec.remove_packages.append(token)
        elif mode == "add" and is_known:
            self.spec.add_packages.append(token)
        elif mode == "add" and strength == "strong":
            return "unknown-strong"
        elif mode == "add" and strength == "with":
            self.spec.unparsed.append(token)
        elif mode is None and is_known:
            self.spec.add_packages.append(token)
        else:
            return "ignored"
        return "done"

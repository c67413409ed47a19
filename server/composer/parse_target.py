"""Reading the target of a request: distribution and release, architecture, image type, the targets that
cannot be built (with the closest supported choice), and misspelt distribution or package words."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from ..knowledge.entries import Dist
from ..knowledge.loader import Capabilities, load_capabilities
from ..knowledge.request_words import load_request_words
from ..knowledge.system_settings import firewall_services
from ..knowledge.typos import misspelling_of
from .phrasing import ADD_WORDS, NA, NB, REMOVE_WORDS, STOPWORDS, ParserState, alternatives

# (pattern, imageType) in reading order: when a request names several kinds, the last one named wins.
_IMAGE_TYPES = [(rf"\b(?:{alternatives(words)})\b", kind) for kind, words in load_request_words().image_types.items()]


def _code_letters(dist: str) -> str:
    """The letters of a distribution code, before its release number ("el" of el10, "ubuntu" of ubuntu24)."""
    return re.sub(r"\d+$", "", dist)


def _release_number(text: str) -> float | None:
    m = re.match(r"\D*(\d+(?:\.\d+)?)", text)
    return float(m.group(1)) if m else None


def _by_nearness(dists: Iterable[Dist], release: str) -> list[str]:
    """Supported releases of a family, nearest by release number to one that cannot be built first (Ubuntu 22.04:
    24.04 before 26.04), the newer first on a tie."""
    wanted = _release_number(release)
    known = [(d.id, _release_number(d.release or d.id)) for d in dists]
    return [d for d, _n in sorted(known, key=lambda k: (abs((k[1] or 0.0) - (wanted or 0.0)), -(k[1] or 0.0)))]


# The particle of a phrasal verb ("turned off", "locked down", "set up") after a word; not "on", which
# mostly says where ("dokcer on ubuntu" is still a slip).
_PARTICLE = re.compile(r"\s+(?:off|up|down|out)\b", re.I)


# Words before an operating system the image talks to rather than is ("a session to a Windows server", "join the
# Windows domain", "files from macOS laptops").
_PEER_BEFORE = re.compile(r"\b(?:to|with|from|against|into|join(?:s|ing)?|via|over)\s+(?:an?\s+|the\s+|our\s+|my\s+|"
                          r"their\s+|its\s+)?(?:existing\s+|remote\s+|legacy\s+|other\s+)?$", re.I)


@functools.lru_cache(maxsize=2)
def target_names(caps: Capabilities) -> str:
    """An alternation of every supported family's and release's words ("rhel", "ubuntu 24.04"), built once."""
    return alternatives({w for f in caps.families.values()
                         for w in (*f.words, *(x for d in f.dists.values() for x in d.words))})



# A removal said right before software ("we don't need node-red", "drop the tailscale", "no nvidia drivers").
_TAKEN_BACK = re.compile(r"\b(?:remove|drop|delete|uninstall|without|no|skip|ditch|forget(?:\s+about)?|never\s+mind"
                         r"|(?:don'?t|do\s+not|no\s+longer|not)\s+(?:need|want)|get\s+rid\s+of)\s+(?:the\s+|any\s+)?$", re.I)

@functools.cache
def _alias_names() -> frozenset[str]:
    """The names software goes by (capabilities.yaml equivalents' aliases among them) a misspelling may be of."""
    return frozenset(n for n in load_capabilities().equivalent_names() if re.fullmatch(r"[a-z][a-z0-9]{4,}", n))


class TargetPhrases(ParserState):
    """The distribution, architecture and image type phrases of a request."""

    def _typos(self) -> None:
        """Correct misspelt distribution, capability and package words ("ubunut", "dokcer"): the rule is
        server/knowledge/typos.py's. Ordinary words stay as they are because they are far from every known name.
        """
        vocabulary, parts, phrases = self._vocabulary()
        # Right to left, so that a correction of another length leaves earlier offsets valid.
        for m in reversed(self._each(r"(?<![\w./-])([a-z][a-z0-9]{4,})(?![\w/-])")):
            word = m.group(1).lower()
            if (word in vocabulary or word in parts or word in STOPWORDS or word in ADD_WORDS
                    or word in REMOVE_WORDS or word in self.english or self._release_code(word)
                    or word in firewall_services()):  # a protocol's name ("https") is no slip of a package's (httpd)
                continue
            if _PARTICLE.match(self.work, m.end()):  # "turned off", "locked down": a phrasal verb, English
                continue
            # else a name software goes by ("postgre" for postgres), which the package reading resolves
            fixed = misspelling_of(word, vocabulary) or misspelling_of(word, _alias_names())
            if fixed is None:  # a part of a longer name, where its neighbour completes the name ("centos strem")
                part = misspelling_of(word, parts)
                before = self.work[:m.start()].split()[-1:]
                after = self.work[m.end():].split()[:1]
                if part and ({f"{w.lower()} {part}" for w in before} | {f"{part} {w.lower()}" for w in after}) & phrases:
                    fixed = part
            if fixed is None:
                continue
            if word not in (fixed + "s", fixed + "es"):  # a plural ("servers") is no misspelling to report
                self.spec.corrected.insert(0, f"{m.group(1)} -> {fixed}")
            self.work = self.work[: m.start()] + fixed + self.work[m.end():]

    def _compounds(self) -> None:
        """A word the knowledge names joined by a hyphen to a suffix that qualifies ("RHEL-like", "docker-ready",
        "arm-based", "security-hardened") is read as the word alone, and one joined to a suffix of absence
        ("docker-free", "GUI-less") as "no <word>" (request_words.yaml ``compound_suffixes``,
        ``negating_suffixes``). Otherwise a hyphen keeps a compound apart from its parts ("non-root")."""
        words = load_request_words()
        negating = set(words.negating_suffixes)
        suffixes = alternatives((*words.compound_suffixes, *negating))
        for m in reversed(self._each(rf"(?<![\w.+/-])((?:[a-z][\w.]*\s+)?([a-z0-9][\w.+]*))-({suffixes})(?![\w+/-])")):
            head, last, suffix = m.group(1).lower(), m.group(2).lower(), m.group(3).lower()
            if not (self._known_word(last) or (head != last and self._known_word(head))):
                continue
            if suffix in negating:  # same length: offsets after it stay valid
                said = "no " + self.work[m.start(2):m.end(2)]
                self.work = self.work[:m.start(2)] + said.ljust(m.end() - m.start(2)) + self.work[m.end():]
            elif self._known_word(suffix):  # "security-hardened": both words say something
                self.work = self.work[:m.end(1)] + " " + self.work[m.end(1) + 1:]
            else:
                self._mask(m.end(1), m.end())
        # "a RHEL 10 clone", "centos stream compatible": a distribution (and its release) then a word of likeness
        names = target_names(self.caps)
        for m in self._each(rf"(?<![\w-])(?:{names})(?:\s+\d+(?:\.\d+)?)?\s+({alternatives(words.likeness_words)})(?![\w-])"):
            self._mask(m.start(1), m.end(1))

    def _spaced_names(self) -> None:
        """A package name said with spaces for its dashes or underscores ("mod security", "build essential",
        "qemu guest agent") is that name, joined in place (same length) for the package reading. Not when each
        word is known by itself ("ubuntu server" is a release and a use, never the package), one names an
        operating system or an architecture, or the first names a capability group ("docker compose")."""
        tokens = [(m.group(0).lower(), m.start(), m.end()) for m in re.finditer(r"[a-z0-9][\w.+]*", self.work, re.I)]
        i = 0
        while i < len(tokens):
            for size in (3, 2):
                run = tokens[i:i + size]
                if len(run) < size or any(self.work[a[2]:b[1]] != " " for a, b in zip(run, run[1:], strict=False)):
                    continue
                words = [t for t, _s, _e in run]
                joined = next((j.join(words) for j in ("-", "_") if j.join(words) in self.known), None)
                if (joined is None or all(self._known_word(w) for w in words) or self.caps.group_for_word(words[0])
                        or any(self._is_os_or_arch(w) for w in words)):  # "docker compose": the docker group's
                    continue
                self.work = self.work[:run[0][1]] + joined + self.work[run[-1][2]:]
                i += size - 1
                break
            i += 1

    def _adverbs_of_triggers(self) -> None:
        """"installs updates automatically", "security patches applied automatically": a trigger of an adjective in
        -ic and a noun ("automatic updates") said as the noun with the adverb after it, at most two words apart,
        is that trigger, rewritten in place for the package reading. (-al adjectives are left: "time ... really"
        is no real time.)"""
        if "ically" not in self.work.lower():
            return
        for phrase in sorted(self.caps.triggers(), key=len, reverse=True):  # "security updates" before "updates"
            first, _, rest = phrase.partition(" ")
            if not rest or not first.endswith("ic"):
                continue
            noun = r"[\s-]+".join(map(re.escape, rest.split()))
            for m in reversed(self._each(rf"(?<![\w-]){noun}\s+(?:[a-z]+\s+){{0,2}}?{first}ally\b")):
                self.work = self.work[:m.start()] + phrase.ljust(m.end() - m.start()) + self.work[m.end():]

    def _vocabulary(self) -> tuple[set[str], set[str], set[str]]:
        """The words a misspelling is corrected to; the words that are only part of a longer name ("stream" of
        "centos stream"), known, so never corrected, and corrected to only beside the rest of their name, since
        alone they name nothing ("steam" is no misspelt "stream"); and each two words in a row of such names."""
        # Whole package names and their first word ("wireguard" of wireguard-tools), which resolve() completes.
        words = {w for name in self.real for w in (name, re.split(r"[-.+_]", name)[0])
                 if re.fullmatch(r"[a-z][a-z0-9]{4,}", w)}
        # Machines named instead of an architecture ("raspberry pi", "jetson"). Not the hardware words, whose
        # plurals ("rack servers") would keep "servers" from being read as "server".
        machines = [str(m) for info in self.caps.arch_info.values() for m in (info.get("hardware") or {})]
        phrases = [*self.caps.triggers(), *(w for f in self.caps.families.values() for w in f.words),
                   *(p for uc in self.caps.use_cases.values() for p in uc.words), *machines,
                   *(p for f in self.caps.families.values() for d in f.dists.values() for p in d.words)]
        parts: set[str] = set()
        pairs: set[str] = set()  # each two words in a row of a longer name
        for phrase in phrases:
            split = [w for w in re.split(r"[\s_-]+", phrase.lower()) if w]
            (words if len(split) == 1 else parts).update(split)
            pairs.update(f"{a} {b}" for a, b in zip(split, split[1:], strict=False))
        for family in self.caps.families.values():  # release codenames, supported or not
            words |= set(family.other_releases)
        words |= set(self.caps.unsupported_os) | {"image", "images", "minimal", "server", "install", "instead",
                                                    "remove", "partition", "hostname", "kernel", "gateway"}
        return words, parts - words, pairs

    def _release_code(self, word: str) -> bool:
        """A distribution code with a release number ("ubuntu24", "el9"): read as a release, never as a typo."""
        prefixes = {_code_letters(d) for d in self.caps.dists} - {""}
        return any(re.fullmatch(re.escape(p) + r"\d+", word) for p in prefixes)

    def _from_to(self) -> None:
        """In 'switch from ubuntu to debian' only the destination counts."""
        for m in self._each(r"\bfrom\s+(?:an?\s+|the\s+)?([\w.-]+(?:\s+[\w.-]+){0,2}?)\s+(?=to\b|into\b)"):
            if self._is_os_or_arch(m.group(1)) or self.caps.dist_of(m.group(1)):
                self._mask(m.start(), m.end())
        for m in self._each(r"\b(?:instead\s+of|rather\s+than)\s+([\w.-]+(?:\s+[\w.-]+){0,2})"):
            if self._is_os_or_arch(m.group(1)):
                self._mask(m.start(), m.end())

    def _unsupported(self) -> None:
        """Operating systems and architectures the composer cannot build: named, with the closest choices."""
        caps = self.caps
        target_named = re.search(rf"(?<![\w-])(?:{target_names(caps)})(?![\w-])", self.work, re.I) is not None
        for phrase in sorted(caps.unsupported_os, key=len, reverse=True):
            for m in self._each(caps.unsupported_os_pattern(phrase)):
                if target_named and _PEER_BEFORE.search(self.work[max(0, m.start() - 40):m.start()]):
                    # "a debian thin client with RDP to a Windows server": what the image talks to, not its target
                    self._mask(m.start(), m.end())
                    continue
                info = caps.unsupported_os[phrase]
                closest = [str(c) for c in info.get("closest") or ()]
                named = info.get("label", phrase) + (f" {m.group(1)}" if m.group(1) else "")
                self.spec.unsupported.append(
                    f"{named}: operating system not supported; closest supported: {', '.join(closest)}")
                if closest and not self.unsupported_target:
                    self.unsupported_target = closest[0]
                self._mask(m.start(), m.end())
        for word in sorted(caps.unsupported_arch, key=len, reverse=True):
            for m in self._each(NB + re.escape(word) + NA):
                label = caps.unsupported_arch[word].get("label", word)
                self.spec.unsupported.append(
                    f"architecture {label}: not supported; closest supported: x86_64, aarch64 (using x86_64)")
                self.unsupported_arch = True
                self._mask(m.start(), m.end())

    def _distribution(self) -> None:
        caps = self.caps
        phrases: list[tuple[str, str, str]] = []  # (phrase, family, dist or "")
        for known_dist in caps.dists.values():
            phrases += [(w, known_dist.family, known_dist.id) for w in known_dist.words]
            phrases.append((known_dist.id, known_dist.family, known_dist.id))
        for known_family in caps.families.values():
            phrases += [(w, known_family.id, "") for w in known_family.words]
            phrases.append((known_family.id, known_family.id, ""))
        phrases.sort(key=lambda p: -len(p[0]))
        found = self._other_releases()
        for known_family in caps.families.values():  # "microsoft's linux": named by its maker
            for m in (m for maker in known_family.makers for m in self._each(caps.maker_pattern(maker))):
                found.append((m.start(), known_family.id, ""))
                self._mask(m.start(), m.end())
        for phrase, family, dist in phrases:
            words = [re.escape(w) for w in re.split(r"[\s_-]+", phrase.lower()) if w]
            pattern = NB + r"[\s_-]*".join(words) + NA
            for m in self._each(pattern):
                found.append((m.start(), family, dist))
                self._mask(m.start(), m.end())
        if not found:
            return
        for n, (pos, fam_id, dist_id) in enumerate(found):
            # "ubuntu lts 24", "debian release 13": a word for a release may stand before its number
            after = re.match(r"(?:(?:lts|release|version|v)\s*)?(\d+(?:\.\d+)?)\b", self._after(pos))
            if dist_id or not after:
                continue
            info = caps.families[fam_id]
            number = after.group(1)
            at = pos + len(self.work[pos:]) - len(self.work[pos:].lstrip(" "))
            self._mask(at, at + after.end())  # read: the release, supported or not
            same = [d.id for d in info.dists.values()
                    if number in (str(getattr(d, "release", "") or ""), re.sub(r"^\D+", "", d.id))]
            if same:
                found[n] = (pos, fam_id, same[0])  # "rocky 10", "azure linux 3": the release is supported
            else:
                nearest = _by_nearness(info.dists.values(), number)
                found[n] = (pos, fam_id, nearest[0])
                if any(u.startswith(f"{_bare(info.label)} {number} ") for u in self.spec.unsupported):
                    continue  # "debian 12 bookworm": said once, by its codename
                self.spec.unsupported.append(
                    f"{_bare(info.label)} {number}: release not supported; closest supported: {', '.join(nearest)} "
                    f"(using {nearest[0]})")
        preferred = [
            f
            for f in found
            if re.search(
                r"\b(?:to|into|for|on|with)\s+(?:an?\s+|the\s+)?$", self.work[max(0, f[0] - 12) : f[0]], re.I
            )
        ]
        chosen_pos, family, dist = (preferred or sorted(found))[-1]
        # A dist mention next to the chosen family mention ("ubuntu 24.04") refines it.
        same_family = [f for f in found if f[1] == family and f[2]]
        self.spec.os = family
        self.spec.dist = dist or (same_family[-1][2] if same_family else None)
        others = {f[1] for f in found} - {family}
        if others:
            self.spec.notes.append(f"several distributions mentioned; using {family}")

    def _other_releases(self) -> list[tuple[int, str, str]]:
        """Releases of a known family that cannot be built, named by codename ("bookworm", ``other_releases``) or
        by a distribution code of another number ("el9", "ubuntu22"): each is reported with the closest supported
        releases, and names its family (position, family, no dist)."""
        found: list[tuple[int, str, str]] = []
        for family in self.caps.families.values():
            named = [(m, release) for codename, release in family.other_releases.items()
                     for m in self._each(NB + re.escape(codename) + NA)]
            for prefix in {_code_letters(d) for d in family.dists} - {""}:
                named += [(m, m.group(1)) for m in self._each(NB + re.escape(prefix) + r"(\d+)" + NA)
                          if m.group(0).lower() not in family.dists]
            for m, release in named:
                nearest = _by_nearness(family.dists.values(), release)
                self.spec.unsupported.append(f"{_bare(family.label)} {release} ({m.group(0)}): release not supported; "
                                             f"closest supported: {', '.join(nearest)} (using {nearest[0]})")
                found.append((m.start(), family.id, nearest[0]))
                self._mask(m.start(), m.end())
        return found

    def _after(self, start: int) -> str:
        """The text right after a masked span that begins at ``start``."""
        rest = self.work[start:]
        stripped = rest.lstrip(" ")
        return stripped[:20]

    def _vendor_stacks(self) -> None:
        """A vendor whose drivers the archives do not carry ("nvidia gpu", "cuda"): said, not replaced."""
        for stack in self.caps.vendor_stacks.values():
            # The vendor's word with the hardware word it qualifies ("nvidia gpu", "nvidia driver"), and what is
            # asked for it ("drivers for the nvidia gpu").
            hits = [m for w in stack.words for m in self._each(
                NB + r"(?:(?:drivers?|support|firmware|software|stack|toolkit|runtime)\s+(?:for|of)\s+"
                r"(?:the\s+|an?\s+|my\s+|our\s+|its\s+)?)?"
                + re.escape(w) + r"(?:\s+(?:gpus?|graphics|drivers?|cards?|toolkit|runtime)){0,2}" + NA)]
            if hits:  # nothing is added for them: said as not applied, in the request's words
                named = ", ".join(dict.fromkeys(" ".join(m.group(0).lower().split()) for m in hits))
                if all(_TAKEN_BACK.search(self.work[:m.start()]) for m in hits):
                    # "we don't need node-red after all": it was never added, so there is nothing to take out
                    self.spec.notes.append(f"nothing to remove: {named} is not in the image (the composer never adds "
                                           "it: it comes from its vendor's own source)")
                else:
                    self.spec.notes.append(f"{named} not applied: {stack.note}")
                    self.vendor_instead_of.update(stack.instead_of)
                for m in hits:
                    self._mask(m.start(), m.end())

    def _architecture(self) -> None:
        found: list[tuple[int, str]] = []
        for arch, info in self.caps.arch_info.items():
            not_after = {str(w) for w in info.get("not_after") or ()}
            for alias in sorted({arch, *(str(a) for a in info.get("aliases") or ())}, key=len, reverse=True):
                for m in self._each(NB + re.escape(alias) + NA):
                    before = self.work[:m.start()].split()
                    if before and before[-1].lower() in not_after:
                        continue  # "a robot arm": the word, not the architecture
                    found.append((m.start(), arch))
                    self._mask(m.start(), m.end())
        if found:
            preferred = [
                f
                for f in found
                if re.search(
                    r"\b(?:to|into|for|on)\s+(?:an?\s+|the\s+)?$", self.work[max(0, f[0] - 12) : f[0]], re.I
                )
            ]
            self.spec.arch = (preferred or sorted(found))[-1][1]
            if len({a for _pos, a in found}) > 1:  # "an aarch64 image for an x86 server": say which one was taken
                self.spec.notes.append(f"several architectures mentioned; using {self.spec.arch}")
        # A machine named instead or as well ("a raspberry pi 5", "aws graviton"): its architecture, and what it
        # needs. An architecture named outright wins, and a machine of another one is said to be.
        named = self.spec.arch
        for arch, info in self.caps.arch_info.items():
            for machine, note in (info.get("hardware") or {}).items():
                # with its model, if one follows ("pi 5", "graviton 3", "altra max")
                hits = self._each(NB + r"[\s-]*".join(map(re.escape, str(machine).split()))
                                  + r"(?:\s+(?:\d+[a-z]?|max|pro|plus)(?![\w-]|\.\w))?" + NA)
                if hits:
                    m = hits[0]
                    if machine in (info.get("boards") or ()):  # a board is a machine of its own, not a VM
                        self.spec.hardware = True
                    if named and named != arch:
                        self.spec.unparsed.append(f"{m.group(0)} is an {arch} machine; built for {named} as named")
                    else:
                        self.spec.arch = arch
                        if note:
                            self.spec.notes.append(f"{m.group(0)}: {note}")
                    self._mask(m.start(), m.end())

    def _hardware(self) -> None:
        """"bare metal", "an intel NUC", "Dell PowerEdge servers": the image runs on a machine of its own
        (capabilities.yaml `hardware`), read before "bare" can read as minimal."""
        words = alternatives({w for p in self.caps.hardware.words for w in (p, p.replace("-", " "))},
                             between=r"[\s-]+")
        uses = {" ".join(w.lower().split()): uid for uid, uc in self.caps.use_cases.items() for w in uc.words}
        for m in self._each(rf"{NB}(?:{words}){NA}"):
            if use := uses.get(" ".join(re.split(r"[\s-]+", m.group(0).lower()))):
                self.spec.use_cases.append(use)  # "a thin client" says what it is for too
            if not re.search(r"\b(?:not|no|never|instead\s+of|rather\s+than)\s+(?:on\s+)?(?:an?\s+|the\s+)?$",
                             self.work[max(0, m.start() - 20):m.start()], re.I):
                self.spec.hardware = True
            if not self._in_trigger(m):  # "a self-checkout", "an HMI touch panel": the kiosk's machine; the scan reads it
                self._mask(m.start(), m.end())
        virtual = alternatives(self.caps.hardware.virtual_words, between=r"[\s-]+")
        for m in self._each(rf"\b(?:not|no|never|isn't|instead\s+of|rather\s+than)\s+(?:on\s+|in\s+)?(?:an?\s+|the\s+)?"
                            rf"(?:{virtual})\b(?!\s*(?:tools|agent|additions|utils|images?|formats?|disks?)\b|[-/.]\w)"):
            self.spec.hardware = True
            self._mask(m.start(), m.end())

    def _in_trigger(self, m: re.Match[str]) -> bool:
        """Whether a group's trigger phrase in the text holds the words ``m`` matched, or lies inside them."""
        said = " ".join(re.split(r"[\s-]+", m.group(0).lower()))
        for phrase in self.caps.triggers():
            # either holds the other: "a self-checkout" in "self checkout", "point of sale" in "point of sale terminal"
            if f" {said} " in f" {phrase} " or f" {phrase} " in f" {said} ":
                pattern = NB + r"[\s-]+".join(map(re.escape, phrase.split())) + NA
                if any(t.start() <= m.start() and m.end() <= t.end() or m.start() <= t.start() and t.end() <= m.end()
                       for t in self._each(pattern)):
                    return True
        return False

    def _image_type(self) -> None:
        found: list[tuple[int, str]] = []
        for pattern, kind in _IMAGE_TYPES:
            for m in self._each(pattern):
                found.append((m.start(), kind))
                self._mask(m.start(), m.end())
        if found:
            preferred = [
                f
                for f in found
                if re.search(
                    r"\b(?:to|into|as)\s+(?:an?\s+|the\s+)?$", self.work[max(0, f[0] - 12) : f[0]], re.I
                )
            ]
            self.spec.image_type = (preferred or sorted(found))[-1][1]


def _bare(label: str) -> str:
    """A family's label without the release it names ("Red Hat compatible distribution (EL10)"), to put another
    release's number after it."""
    return re.sub(r"\s*\([^)]*\)$", "", label)

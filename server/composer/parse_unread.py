"""What a request's package reading reports as not understood: list items nothing read, words a run verb names,
words a list joins to software, and values nothing read. Never dropped: a wish unread is said."""

from __future__ import annotations

import re

from ..knowledge.system_settings import firewall_services
from .phrasing import ADD_WORDS, DEGREE_WORDS, STOPWORDS, ParserState, looks_like_package
from .schedules import CALENDAR_ADJECTIVES

# Words an item may carry besides its wish ("touchscreen support", "autologin enabled").
_ITEM_FILLER = {"a", "an", "the", "some", "also", "please", "and", "or", "just", "only", "too", "support",
                "supported", "enabled", "installed", "included", "preinstalled", "pre-installed", "preloaded",
                "pre-loaded", "built-in", "builtin", "baked-in", *DEGREE_WORDS}
# What kind of software a name is ("the google-authenticator PAM module"), no software itself (PAM is in every image).
KIND_WORDS = frozenset({"pam", "module", "modules", "plugin", "plugins"})
_ITEM_FILLER |= KIND_WORDS
# An item that starts with one of these says what the image is for or where it runs, not what it holds.
_PURPOSE_WORDS = {"for", "on", "in", "to", "at", "as", "like", "from", "by", "of", "so", "that", "which", "where",
                  "when", "running", "used", "meant", "intended", "i", "we", "it", "this"}
# Words that open a list item of prose, not an instruction ("keep it simple", "nothing fancy", "thanks a lot").
_PROSE_OPENERS = {"keep", "nothing", "thanks", "thank", "cheers", "ideally", "preferably", "maybe", "perhaps",
                  "if", "whatever", "anything", "something", "ideal", "ok", "okay", "cool", "great", "just", "not"}
# Nouns of what an image is or holds: the unread words before one name it ("a Pi-hole box image").
_WHAT_IT_IS = {"box", "appliance", "app", "apps", "application", "applications"}
_APP_NOUNS = {"app", "apps", "application", "applications"}
# An image named by words before "image" is often its role ("a router image"): only a name by its shape counts there.
_IMAGE_NOUNS = {"image", "images"}
_DETERMINERS = {"a", "an", "the", "our", "my", "their", "your", "this", "that", "for", "of", "with", "as"}
# What an image is said to be without naming software: no wish to report ("a custom image", "the golden image").
PLAIN_ADJECTIVES = {"custom", "golden", "gold", "production", "prod", "staging", "test", "testing", "dev", "simple",
                     "clean", "fresh", "generic", "final", "plain", "stock", "vanilla", "reference", "sample", "demo",
                     "example", "proper", "decent", "working", "bootable", "small", "new", "own", "first", "second",
                     "latest", "updated", "nice", "good", "single", "complete", "full", "whole", "base", "master",
                     "template", "starter", "initial", "disk", "system", "os", "vm", "virtual", "physical", "little",
                     "tiny", "mini", "big", "spare", "old", "lab", "office", "edge", "router", "linux", "automotive",
                     "preferred"}
# "its data", "their files": the data of software already named (where it goes is read elsewhere), no wish.
_DATA_NOUNS = {"data", "files", "storage"}
_POSSESSIVES = {"its", "their", "his", "her"}


# Daemons of systemd itself, in every image: named with a setting of theirs ("journald with persistent logs"), they
# are no software to add.
_BUILT_IN = {"journald", "systemd-journald", "udevd", "systemd-udevd", "logind", "systemd-logind"}


# Verbs that say what software does for what follows ("fail2ban protecting ssh", "auditd watching /etc"): what
# follows is read (or reported) on its own, the verb asks for nothing.
_GUARDING = {"protecting", "protects", "protect", "guarding", "guards", "securing", "secures", "watching", "watches",
             "shielding", "shields"}


def no_wish(tokens: list[str], i: int) -> bool:
    """Whether word ``i`` (no software's name) says nothing to apply or report: what the image is
    (PLAIN_ADJECTIVES), a daemon every image has (_BUILT_IN), the data of software named before it ("and its
    data on a 50G volume"), a protocol said as what something is for ("dnsmasq for dhcp and dns"), or what software
    does for what follows it (_GUARDING)."""
    return (tokens[i] in PLAIN_ADJECTIVES or tokens[i] in _BUILT_IN or owned_data(tokens, i)
            or (tokens[i] in firewall_services() and "for" in tokens[max(0, i - 4):i])
            or (tokens[i] in _GUARDING and 0 < i < len(tokens) - 1))


def owned_data(tokens: list[str], i: int) -> bool:
    return tokens[i] in _DATA_NOUNS and i > 0 and tokens[i - 1] in _POSSESSIVES


# Who wishes, before a verb of wanting ("I also need numpy", "we want pandas"): no part of the item.
_WISHERS = {"i", "we", "you", "they", "i'd", "we'd", "i'll", "we'll", "really", "would", "also", "still", "do"}
_WANTING = {"need", "needs", "want", "wants", "require", "requires"}  # not "use": "we use the console" says how


# Verbs after which one or two unread words name software the image is to run ("running home assistant", "to host
# a minecraft server").
_RUN_VERBS = {"running", "runs", "run", "host", "hosts", "hosting", "serve", "serves", "serving",
              "using"}  # "tuned using the throughput-performance profile"
# Nouns after a software's name that say what kind it is ("a minecraft server", "the nextcloud instance").
_SERVICE_NOUNS = {"server", "servers", "service", "services", "instance", "daemon"}
# Words after a run verb that say how it runs ("runs fast", "running unattended"), not what.
_MANNER = {"fast", "faster", "offline", "online", "unattended", "headless", "everywhere", "anywhere", "forever",
           "well", "smooth", "stable", "hot", "cool", "cold", "warm", "free", "alone", "standalone"}


def says_how(word: str) -> bool:
    """An adverb of manner ("runs fast", "no GUI obviously"); not one of when ("a nightly vacuum" is a job)."""
    return word in _MANNER or (word.endswith("ly") and len(word) > 4 and word not in CALENDAR_ADJECTIVES)


# A token that is a value: a number, with a unit, dots or a range ("2222", "2g", "1.1.1.1", "10.0.0.0/24", "4-7").
# A value: a number with its unit or mask ("2222", "30d", "10.0.0.0/24"), or a host with its port
# ("loki.internal:3100"), which no package name has.
VALUE = re.compile(r"\d[\d.:]*(?:-\d[\d.]*)?(?:[a-z]{0,3}|/\d+)|[a-z0-9-]+(?:\.[a-z0-9-]+)+:\d{1,5}")
# Words that place one piece of software by another ("gunicorn behind nginx", "loki next to grafana").
_PLACED = (r"behind|beside|besides|alongside|along\s+with|next\s+to|in\s+front\s+of|on\s+top\s+of|fronted\s+by"
           r"|proxied\s+by|under|via|through|plus|(?:as\s+well\s+as)")
# Words that join a value to what it is for ("changed to 2222", "logs for 30 days").
_LINKERS = {"to", "at", "of", "for", "on", "is", "be", "as", "every", "per", "="}


class UnreadWords(ParserState):
    """The reports of unread words, for the package reading's scan."""

    def _software(self, word: str) -> bool:
        """A word that names a package or a capability group (the package reading says)."""
        raise NotImplementedError

    def _report_bare_items(self, clause: str, found: list[tuple[str, int, int]], ignored: set[int]) -> None:
        """An item of a list ("chromium kiosk, autologin, no ssh") that is one or two words nothing read is a
        wish that was not understood: it is reported, not dropped. Longer items and purpose phrases ("for a
        point-of-sale terminal") are prose, but for their last word when a list joins it to software."""
        reported: set[int] = set()
        cuts = [0, *(m.end() for m in re.finditer(r"[,:;()]|\band\b|\bor\b|\s\+\s", clause)), len(clause) + 1]
        for start, end in zip(cuts, cuts[1:], strict=False):
            inside = [i for i, (_t, s, _e) in enumerate(found) if start <= s < end]
            # "I also need numpy": who wants it and the verb of wanting are no part of the wish
            wished = bool(inside) and found[inside[0]][0] in _WISHERS and any(found[i][0] in _WANTING for i in inside)
            # the verb of an item ("use caddy") is no part of the wish
            words = [i for i in inside if found[i][0] not in _ITEM_FILLER and found[i][0] not in ADD_WORDS
                     and not no_wish([t for t, _s, _e in found], i) and not (wished and found[i][0] in _WISHERS)]
            if (words and len(words) <= 2 and set(words) <= ignored
                    and (wished or found[inside[0]][0] not in _PURPOSE_WORDS)):
                self.spec.unparsed.append(" ".join(found[i][0] for i in words))
                reported.update(words)
            elif self._unread_instruction(clause, found, inside, words, ignored, start, end):
                # "debian kiosk, wipe home on logout": a list item that tells the image to do something, whole
                self.spec.unparsed.append(" ".join(found[i][0] for i in inside if found[i][0] not in ("a", "an", "the")))
                reported.update(inside)
        self._report_what_runs(clause, found, ignored, reported)
        self._report_what_it_is(found, ignored, reported)
        self._report_whom_for(clause, found, ignored, reported)
        for i in sorted(ignored - reported):
            # "runs modbus and mosquitto", "pip and numpy on emt": a word joined to software in a list is a wish
            # of the same kind, however long the phrase it ends or starts ("a gateway that runs modbus"); so is a
            # word no English has placed by software ("gunicorn behind nginx", "grafana alongside prometheus")
            word = found[i][0]
            placed = _PLACED if self.english and word not in self.english and word not in _ITEM_FILLER else None
            if word not in _ITEM_FILLER and (self._joined_to_software(clause, found, i, i + 1, placed)
                                             or self._joined_to_software(clause, found, i, i - 1, placed)):
                self.spec.unparsed.append(word)

    def _unread_instruction(self, clause: str, found: list[tuple[str, int, int]], inside: list[int], words: list[int],
                            ignored: set[int], start: int, end: int) -> bool:
        """A list item of three to six words nothing read, that opens with a word nothing read either (a verb:
        "wipe home on logout", "clear tmp at boot"), set apart by commas or semicolons: an instruction, not prose."""
        if not 3 <= len(inside) <= 6 or inside[0] not in ignored or inside[0] not in words:
            return False
        first = found[inside[0]][0]
        if first in _PURPOSE_WORDS or first in _WISHERS or first in _PROSE_OPENERS or first in PLAIN_ADJECTIVES:
            return False
        if not all(i in ignored or found[i][0] in STOPWORDS or found[i][0] in _ITEM_FILLER
                   or found[i][0] in _PURPOSE_WORDS for i in inside):
            return False
        opened = re.search(r"[,;:]\s*$", clause[:found[inside[0]][1]]) is not None
        closed = end > len(clause) or re.match(r"\s*[,;]", clause[found[inside[-1]][2]:]) is not None
        return opened and closed

    def _report_what_it_is(self, found: list[tuple[str, int, int]], ignored: set[int], reported: set[int]) -> None:
        """"a Pi-hole box image", "a GitLab Runner image", "our Java app": one or two unread words that name what
        the image or app is, right after its article or at the start, are the software it is for."""
        for k, (noun, _s, _e) in enumerate(found):
            if noun not in _WHAT_IT_IS and noun not in _IMAGE_NOUNS:
                continue
            j = k
            while j > 0 and k - j < 2 and j - 1 in ignored and j - 1 not in reported and found[j - 1][0] not in (
                    _ITEM_FILLER | PLAIN_ADJECTIVES) and not says_how(found[j - 1][0]):
                j -= 1
            opened = j == 0 or found[j - 1][0] in _DETERMINERS
            named = noun in _WHAT_IT_IS or (k - j == 1 and looks_like_package(found[j][0]))
            if j < k and opened and named:  # an app said with its noun ("web app": "web" alone says nothing)
                self.spec.unparsed.append(" ".join(found[w][0] for w in range(j, k + (noun in _APP_NOUNS))))
                reported.update(range(j, k))

    def _report_whom_for(self, clause: str, found: list[tuple[str, int, int]], ignored: set[int],
                         reported: set[int]) -> None:
        """"an image for alice and bob": the one or two words nothing read after "for", joined by "and", "or" or a
        comma to an item reported as not understood, are one more such item (the list names one kind of thing).
        Alone, they say what the image is for ("for my homelab"), prose with nothing to report."""
        for k, (word, _s, _e) in enumerate(found):
            if word != "for":
                continue
            j = k + 1
            while j < len(found) and found[j][0] in _DETERMINERS:
                j += 1
            first = j
            while (j < len(found) and j in ignored and j not in reported and found[j][0] not in _ITEM_FILLER
                   and found[j][0] not in PLAIN_ADJECTIVES and re.fullmatch(r"[a-z][a-z0-9+._-]*", found[j][0])):
                j += 1
            after = j + 1 if j < len(found) and found[j][0] in ("and", "or") else j
            joined = first < j and after in reported and re.fullmatch(r"\s*(?:,|,?\s*(?:and|or))\s*",
                                                                      clause[found[j - 1][2]:found[after][1]])
            if j - first <= 2 and joined:
                unread, then = self.spec.unparsed, found[after][0]
                unread.insert(unread.index(then) if then in unread else len(unread),  # in the order said
                              " ".join(found[w][0] for w in range(first, j)))
                reported.update(range(first, j))

    def _report_what_runs(self, clause: str, found: list[tuple[str, int, int]], ignored: set[int],
                          reported: set[int]) -> None:
        """"a mini pc running home assistant": one or two unread words that end what a run verb says are the
        software it names, not prose ("running in a mall" starts with a word that is read; "runs fast" says how)."""
        for k, (verb, _s, _e) in enumerate(found):
            if verb not in _RUN_VERBS or k + 1 in reported:
                continue
            j = k + 1
            while j < len(found) and found[j][0] in ("a", "an", "the", "my", "our", "their", "its", "own"):
                j += 1  # "to host a minecraft server": the article is no part of what runs
            first = j
            while (j < len(found) and j in ignored and found[j][0] not in _ITEM_FILLER
                   and found[j][0] not in _WHAT_IT_IS  # "runs our Java app": what it is says the name (below)
                   and re.fullmatch(r"[a-z][a-z0-9+._-]*", found[j][0]) and not says_how(found[j][0])
                   and not re.search(r"[,:;()]", clause[found[j - 1][2]:found[j][1]])):
                j += 1
            if first < j < len(found) and found[j][0] in _SERVICE_NOUNS:
                j += 1  # "a minecraft server": the noun says what kind of software the name is
            closed = j == len(found) or re.match(r"\s*(?:[,;:()]|\band\b|\bor\b)", clause[found[j - 1][2]:])
            if 1 <= j - first <= 3 and closed:
                self.spec.unparsed.append(" ".join(found[w][0] for w in range(first, j)))
                reported.update(range(first, j))

    def _joined_to_software(self, clause: str, found: list[tuple[str, int, int]], i: int, toward: int,
                            placed: str | None = None) -> bool:
        """Whether word ``i`` is joined by a comma, "&", "and" or "or" (or the words of ``placed``) to the software
        word on its side of ``toward`` (``i + 1``: after it, ``i - 1``: before it)."""
        step = toward - i
        joins = r"[,&+]|,?\s*(?:and|or|plus)" + (f"|{placed}" if placed else "")  # "modbus + mqtt"
        for j in range(toward, toward + step * 4, step):  # the joining words between are at most three
            if not 0 <= j < len(found):
                return False
            first, second = (i, j) if step > 0 else (j, i)
            if re.fullmatch(rf"\s*(?:{joins})\s*", clause[found[first][2]:found[second][1]]):
                return self._software(found[j][0])
        return False

    def _report_values(self, found: list[tuple[str, int, int]], ignored: set[int], values: set[int]) -> None:
        """A number or address nothing read is a constraint, never prose: it is reported with the unread words
        around it ("port changed to 2222", "30 days", "1.1.1.1"), not dropped. Values the other readers took
        (sizes, releases, versions, kernel parameters) are no longer in the text."""
        unread = ignored | values
        done: set[int] = set()
        for i in sorted(values):
            if i in done:
                continue
            start, end = i, i
            while start > 0 and (start - 1 in unread or found[start - 1][0] in _LINKERS):
                start -= 1
            while end + 1 < len(found) and (end + 1 in unread):
                end += 1
            while start < i and (found[start][0] in _LINKERS or found[start][0] in _ITEM_FILLER):
                start += 1
            done.update(range(start, end + 1))
            phrase = " ".join(found[j][0] for j in range(start, end + 1))
            if phrase not in self.spec.unparsed:
                self.spec.unparsed.append(phrase)

"""Reading system settings named in words with a value (server/knowledge/system_settings.py): "isolated cpus
2-3", "1024 huge pages", "ipv4 forwarding on", "no ipv6", "Europe/Berlin timezone", and sysctl keys written
out ("net.core.somaxconn=1024").

A setting's words with a value it takes are written as the setting says. Its words with no value that can be
read are reported with the shape the value takes, never dropped; a switch named in the direction that is the
kernel's default takes the setting out where a template has it ("turn ip forwarding off" on a router), and
writes nothing."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from ..knowledge.sizes import CASUAL_SIZE, fmt_size, parse_casual
from ..knowledge.system_settings import (
    Setting,
    keyboard_layout_named,
    load_settings,
    locale_named,
    sysctl_configuration,
    tuned_profile_configuration,
    tuned_profiles,
    zone_named,
)
from .durations import DURATION, time_span
from .parse_kernel_modules import KernelModulePhrases
from .parse_schedules import UNDO
from .phrasing import STOPWORDS, alternatives
from .ssh_words import KEY_AUTH, KEYS_ONLY, NO, PASSWORDS, SSH, WAYS_IN
from .switch_words import ARTICLE, MODAL, OFF, OFF_AFTER, ON, ON_AFTER

# Rights given to someone right before a setting's words ("give alice root access", "grant ops full root access").
_GIVEN_TO = re.compile(r"\b(?:give|grant)\s+(?:the\s+)?(?:user\s+|account\s+)?[a-z_][\w-]*\s+(?:full\s+)?$", re.I)
# A CPU list; a number with a unit after it is a size, not one more CPU ("cores 2,3, 8 GB disk").
_CPUS = r"\d+(?:\s*-\s*\d+)?(?:\s*(?:,|\band\b|&)\s*\d+(?:\s*-\s*\d+)?(?!\s*(?:[kmgtp]i?b?\b|%)))*"
_CPU_NOUN = r"(?:cpus?|cores?|processors?)"
# Keyboard layouts whose XKB name is an English word (Norwegian "no", Icelandic "is", Italian "it", Belgian "be"):
# before "keyboard" they are that word; "us keyboard" stays American.
_ENGLISH_LAYOUT_NAMES = frozenset({"no", "is", "it", "be"})
# One language said for the keyboard and the locale together: "a german keyboard and locale", "french locale and
# keyboard", "swiss german keyboard & language".
_KEYBOARD = r"keyboard(?:\s+layout)?"
_LOCALE = r"(?:system\s+)?(?:locale|language)"
_BOTH = (rf"(?<![\w-])([a-z][a-z-]*(?:\s+[a-z][a-z-]*)?)\s+(?:{_KEYBOARD}\s+(?:and|&)\s+(?:the\s+)?{_LOCALE}|{_LOCALE}\s+(?:and|&)\s+(?:the\s+)?{_KEYBOARD})\b"
         r"(?!\s*(?:[:=]|(?:is|are|set|to|be|should|must)\b|[a-z]{2,3}_[a-z]{2}))")  # its own value after it
# What may stand between a setting's words and its value: "swappiness = 10", "time zone set to UTC".
_LINK = r"\s*(?:(?:[:=]|\b(?:is|are|be|set|configured|fixed|to|at|of|as|on|equal|equals|for|back|after|within)\b)\s*){0,3}"
_SIZE_TEXT = re.sub(r"\((?!\?)", "(?:", CASUAL_SIZE)  # a size, as one piece of text ("2G", "half a gig")
# key=value whose key is a sysctl path: procfs roots no kernel parameter starts with ("net.ifnames" is one,
# so net. needs its subsystem).
_SYSCTL_KEY = r"(?:net\.(?:ipv4|ipv6|core|bridge|netfilter|unix)|vm|kernel|fs)\.[a-z0-9_.]*[a-z0-9_]"
# A server's address: IPv4 or a dotted host name, with an optional port.
_ADDRESS = (r"(?:\d{1,3}(?:\.\d{1,3}){3}|[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*\.[a-z]{2,})"
            r"(?::\d{1,5})?(?![\w:-]|\.\w)")  # a period after it ends the sentence, not the address
_NUMBER_WORDS = ("one", "two", "three", "four", "five", "six", "seven", "eight")
# Words before a setting's that make it a destination ("to the central syslog server", "a remote log server").
_DESTINATION_BEFORE = re.compile(r"\b(?:to|towards|remote)\s+(?:(?:the|a|an|our|my|their|remote|central)\s+)*$", re.I)
# An address after a setting's words, as "send logs to the server 10.0.0.5" gives it.
_TO_ADDRESS = (r"(?:(?:(?:syncing|synced|syncs|sync|synchroni[sz]ing|getting\s+(?:its\s+)?time|taking\s+(?:its\s+)?time)"
               r"\s+)?(?:with|from|against|using|via|pointing\s+at|pointed\s+at|pointing\s+to|pointed\s+to)\s+)?"
               rf"(?:(?:the|a|an|our|my)\s+)?(?:(?:remote\s+|central\s+)?(?:syslog\s+|log\s+|ntp\s+|time\s+)?(?:server|host)\s+)?"
               rf"(?:(?:at|on)\s+)?{_ADDRESS}")
_SYSCTL = rf"(?<![\w./-])(?:sysctl\s+)?({_SYSCTL_KEY})(?:\s*=\s*|\s+(?:to|at|of)\s+)([\w.:-]+)(?![\w/])"


@functools.lru_cache(maxsize=1)
def _reading_order() -> tuple[Setting, ...]:
    """The settings in the order they are read: counts and zones before CPU lists ("cores 2 and 3, 512 huge pages":
    512 counts pages), addresses before the switches that name them with one ("send logs to the syslog server
    10.0.0.5" is read whole), longest words first ("ipv6 forwarding" is not "ipv6"), and a setting whose words
    hold an earlier one's before it ("transparent huge pages" is no count of pages)."""
    order = {"count": 0, "size": 0, "zone": 0, "cpus": 1, "address": 1}
    first = [w for s in load_settings().values() if order.get(s.value, 2) == 0 for w in s.words]

    def holds_first(setting: Setting) -> bool:
        return any(f != w and re.search(rf"\b{re.escape(f)}\b", w) for w in setting.words for f in first)

    return tuple(sorted(load_settings().values(), key=lambda s: (
        -1 if order.get(s.value, 2) and holds_first(s) else order.get(s.value, 2), -max(map(len, s.words)))))


def is_setting_key(key: str) -> bool:
    """A ``key=value`` that is a setting written by a command, not a kernel parameter: a sysctl path
    (``vm.swappiness=10``) or a setting's words (``timezone=UTC``)."""
    if re.fullmatch(_SYSCTL_KEY, key, re.I):
        return True
    return any(not s.cmdline and key.lower().replace("_", " ") in s.words for s in load_settings().values())


# What "root" means beside lock when it is no account: "lock the root partition", "lock down root login".
_NOT_LOCKED = r"partitions?|filesystem|file\s+system|fs|volume|disk|login|logins|ssh|access|shell|directory"


class SettingPhrases(KernelModulePhrases):
    """The system settings of a request."""

    def _settings(self) -> None:
        self._rescheduled()
        self._scheduled_commands()
        self._kernel_modules()
        for m in self._each(rf"\b{UNDO}\s+(?:the\s+)?(?:sysctl\s+)?({_SYSCTL_KEY})(?:\s+(?:setting|sysctl|parameter|value))?"):
            key = m.group(1).lower()  # "drop the vm.max_map_count setting": the file that sets it goes
            self.spec.configurations.append({"remove": True, "replaces": sysctl_configuration(f"{key} = 0", "", key)[
                "replaces"], "cmd": "", "label": f"sysctl {key}"})
            self._mask(m.start(), m.end())
        for m in self._each(_SYSCTL):
            key, value = m.group(1).lower(), m.group(2)
            self._configure(f"sysctl {key}", sysctl_configuration(f"{key} = {value}", key.replace(".", "-"), key))
            self._mask(m.start(), m.end())
        self._keys_only()
        self._no_root()
        self._locale_lists()
        self._tuned_profile()
        self._logs_collected_to_ship()
        self._one_language_for_both()
        self._listed_off = self._switched_in_lists()
        self._coordinated_switches()
        for setting in _reading_order():
            words = alternatives(setting.words, between=r"[\s_-]*")
            if setting.value == "text":
                continue  # read first, before anything reads the text's words (parse_texts.py)
            if setting.value == "none":
                self._not_written(setting, words)
            elif setting.value in ("on", "off"):
                self._switch(setting, words)
            else:
                self._valued(setting, words)
        setting = load_settings()["key-only ssh"]
        written = any(c.get("setting") == setting.writes_as and not c.get("remove") for c in self.spec.configurations)
        # "keys only, no passwords" said twice; "sshd hardened: no root login, no passwords", "ssh with passwords
        # disabled": the way in, in a sentence about ssh (a singular "no password" is rather a user's)
        ways = PASSWORDS if written else WAYS_IN
        for m in self._each(rf"\b{NO}\s+(?:an?\s+)?{ways}\b|\b{ways}\s+{OFF_AFTER}\b"):
            if self._about_ssh(m):
                if not written:
                    self._write(setting, setting.value)
                    written = True
                self._mask(m.start(), m.end())

    def _about_ssh(self, m: re.Match[str]) -> bool:
        """The sentence ``m`` stands in talks about ssh or logging in."""
        sentence = re.split(r"[.;!?\n]", self.said[:m.start()])[-1] + re.split(r"[.;!?\n]", self.said[m.start():])[0]
        return re.search(rf"\b(?:{SSH}|log(?:-|\s+)?ins?|logins?|remote\s+access)\b", sentence, re.I) is not None

    def _about_root(self, m: re.Match[str]) -> bool:
        """The sentence ``m`` stands in is about root's own login ("let root log in with a key only")."""
        sentence = re.split(r"[.;!?\n,]", self.said[:m.start()])[-1] + m.group(0)
        return re.search(r"\broot\b", sentence, re.I) is not None

    def _keys_only(self) -> None:
        """sshd taking keys alone (KEYS_ONLY). A form without an ssh word of its own ("keys only", "only with
        a key") counts only in a sentence about ssh or logging in: "only a key" of a disk encryption is none."""
        setting = load_settings()["key-only ssh"]
        for m in self._each(KEYS_ONLY):
            if not self._about_ssh(m):
                continue
            self._mask(m.start(), m.end())
            if self._about_root(m):  # "let root log in over ssh with a key only": root's way in, sshd's default
                root = load_settings()["root login"]
                self.spec.notes.append(f"root logging in over ssh with a key only is {root.default}: nothing is "
                                       "written for it")
                continue
            self._write(setting, setting.value)
            if re.search(rf"\b{SSH}\b", m.group(0), re.I) and "ssh" in self.caps.groups:
                self.spec.add_groups.append("ssh")  # named: asked for, as "ssh" alone would be
        for m in self._each(KEY_AUTH):
            sentence = re.split(r"[.;!?\n]", self.said[:m.start()])[-1] + re.split(r"[.;!?\n]", self.said[m.start():])[0]
            self._mask(m.start(), m.end())
            if re.search(r"\bpass(?:word|wd)s?\b", sentence, re.I) and not re.search(rf"\b{NO}\s+(?:an?\s+)?{PASSWORDS}",
                                                                                  sentence, re.I):
                self.spec.notes.append("key authentication beside passwords is sshd's default: nothing is written for it")
            else:
                self._write(setting, setting.value)

    def _no_root(self) -> None:
        """"ssh keys only, no root, auditd": "no root" as an item of a list about ssh is root login off."""
        # never before a noun it shares ("no root and password login": both logins, read together)
        for m in self._each(r"\b(?:no|without)\s+root\b(?=\s*(?:[,;.]|$|\band\s+(?:no|without)\b))"):
            if self._about_ssh(m):
                setting = load_settings()["root login"]
                self._write(setting, setting.value)
                self._mask(m.start(), m.end())

    def _not_written(self, setting: Setting, words: str) -> None:
        """A setting the composer does not write, reported with the words next to it that say which ("bonded
        nics", "grub timeout set to 0"), never dropped."""
        word = r"[\w.@-]+"
        # the value's unit comes with it ("rotate display 90 degrees", "grub timeout 5 seconds")
        unit = r"(?:\s+(?:degrees?|deg|seconds?|secs?|minutes?|mins?|percent))?"
        pattern = rf"(?:({word})\s+)?\b((?:{words}))\b(?:\s*(?:[:=]|\b(?:to|is|set\s+to)\b)?\s*({word}{unit}))?"
        # a secret said with it ("ssid homenet and password hunter22") is the setting's too, never a package, never echoed
        secret = re.compile(r"\s*,?\s+(?:and\s+|with\s+)?(?:(?:its|the|a)\s+)?(?:password|passphrase|psk|key)\s*(?:[:=]|\bis\b)?"
                            r"\s*\S+") if any("pass" in w for w in setting.words) else None
        for m in self._each(pattern):
            before, after = (x if x and x.lower() not in STOPWORDS else "" for x in (m.group(1), m.group(3)))
            start = m.start(1) if before else m.start(2)
            end = m.end(3) if after else m.end(2)
            kept = secret.match(self.work, end) if secret else None
            self._mask(start, kept.end() if kept else end)
            phrase = " ".join(x for x in (before, " ".join(m.group(2).split()), after, "and a passphrase" if kept else "")
                              if x)
            self.spec.unparsed.append(f"{phrase} ({setting.reason})")

    def _switched_in_lists(self) -> set[int]:
        """Where the words of a switch stand as a later item of a list after an off word ("disable root login
        and password authentication"): the off word governs every item, not only the first."""
        between = r"[\s_-]*"
        switches = alternatives([w for s in load_settings().values() if s.value in ("on", "off") for w in s.words],
                                between=between)
        item = rf"{ARTICLE}(?:{switches})\b"
        joint = r"\s*(?:,\s*(?:and\s+|or\s+)?|\band\s+|\bor\s+)"
        starts: set[int] = set()
        for m in self._each(rf"\b{OFF}\s+{item}(?:{joint}{item})+"):
            words = [w.start() for w in re.finditer(rf"\b(?:{switches})\b", m.group(0), re.I)]
            starts.update(m.start() + at for at in words[1:])
        return starts

    def _switch(self, setting: Setting, words: str) -> None:
        # "no swap partition" is the disk's; "a non-root user" is no root user
        # "no root login over ssh": for sshd's settings, the way in said after them is part of their words
        over_ssh = r"(?:\s+(?:over|via|through)\s+ssh\b)?" if "openssh-server" in setting.packages else ""
        # a plural is the same setting ("no ssh password logins"); the end of another setting's longer words is not
        # this one ("root password login" is the root account's, not "password login")
        inside = "".join(rf"(?<!{re.escape(p)}[\s_-])" for p in _prefixes_of(setting))
        w = rf"{inside}(?<![\w-])(?:{words})s?\b{over_ssh}(?!\s+partitions?\b)"
        if setting.with_address:  # "syslog server 10.0.0.5": where this image's logs go, not what it is
            self._valued(load_settings()[setting.with_address], words, own=False)
            w += rf"(?!{_LINK}{_TO_ADDRESS})"
        # A switch after the words wins over a word before them: "with ipv6 disabled" is off.
        # Off first: "must not allow root login", "root login must not be allowed" are no allowing.
        forms: list[tuple[bool, str]] = [(False, rf"{w}\s+{OFF_AFTER}\b"), (True, rf"{w}\s+{ON_AFTER}\b"),
                                         (False, rf"\b{OFF}\s+{ARTICLE}{w}"), (True, rf"\b{ON}\s+{ARTICLE}{w}")]
        if not setting.switched_only:
            forms.append((True, w))  # named with no switch: wanted, as a feature named is
        if setting.locked_words:
            locked = rf"(?:{alternatives(setting.locked_words)})(?![\w-])(?!\s+(?:{_NOT_LOCKED})\b)"
            forms += [(False, rf"\block(?:ing)?\s+(?:the\s+)?{locked}"),
                      (False, rf"(?<![\w-]){locked}\s+{MODAL}(?:(?:is|are|be|stays?|remains?|gets?)\s+)?locked\b(?!\s+down)")]
        for on, form in forms:
            for m in self._each(form):
                if _GIVEN_TO.search(self.work[:m.start()]):
                    continue  # "give alice root access": a user's rights (the users' reading), no sshd switch
                self._mask(m.start(), m.end())
                if setting.with_address and _DESTINATION_BEFORE.search(self.work[:m.start()]):
                    continue  # "send its logs to a syslog server": where logs go, which the sending words report
                if form == w and m.start() in self._listed_off:
                    on = False  # a later item of a list an off word governs
                if on == (setting.value == "on"):
                    self._write(setting, setting.value)
                else:
                    self._take_out(setting, "on" if on else "off")

    def _coordinated_switches(self) -> None:
        """"both ipv4 and ipv6 forwarding enabled", "disable ipv4 and ipv6 forwarding", "no root and password login
        over ssh": two switches whose words share their last word, said once after their first words. The switch
        said before or after the phrase holds for both; with none, both are wanted, as a switch named is."""
        switches = [s for s in load_settings().values() if s.value in ("on", "off")]
        heads: dict[str, dict[str, Setting]] = {}
        for setting in switches:
            for word in setting.words:
                *modifier, head = word.split()
                if modifier:
                    heads.setdefault(head, {})[" ".join(modifier)] = setting
        for head, by_modifier in heads.items():
            names = alternatives(by_modifier)
            for m in self._each(rf"(?:\b(?P<off>{OFF})\s+{ARTICLE}|\b(?P<on>{ON})\s+{ARTICLE})?(?<![\w-])({names})"
                                rf"\s*(?:,|\band\b|&|\bor\b)\s*({names})\s+{re.escape(head)}s?\b"
                                rf"(?:\s+(?:over|via|through)\s+ssh\b)?"
                                rf"(?:\s+(?P<off_after>{OFF_AFTER})\b|\s+(?P<on_after>{ON_AFTER})\b)?"):
                pair = [by_modifier[m.group(3).lower()], by_modifier[m.group(4).lower()]]
                if pair[0] is pair[1]:
                    continue
                on = not (m.group("off_after") or (m.group("off") and not m.group("on_after")))
                for setting in pair:
                    if on == (setting.value == "on"):
                        self._write(setting, setting.value)
                    else:
                        self._take_out(setting, "on" if on else "off")
                self._mask(m.start(), m.end())

    def _locale_lists(self) -> None:
        """"english and german locales", "locales en_US.UTF-8, de_DE.UTF-8 and fr_FR.UTF-8": the first is the
        system's locale (LANG), the others are compiled beside it (system_settings.yaml extra locale)."""
        name = r"[a-z][\w.@-]*"
        sep = r"\s*(?:,\s*(?:and\s+)?|\band\s+|&\s*)"
        items = rf"{name}(?:{sep}{name})+"
        for m in self._each(rf"(?<![\w.@-])({items})\s+(?:locales|languages)\b"
                            rf"|\b(?:locales|languages)\s*[:=]?\s*({items})(?![\w.@-])"):
            parts = [p for p in re.split(sep, m.group(1) or m.group(2)) if p.strip()]
            found = [locale_named(p) for p in parts]
            if not all(found):
                continue
            settings = [load_settings()["locale"], *[load_settings()["extra locale"]] * (len(parts) - 1)]
            for setting, part, value in zip(settings, parts, found, strict=True):
                self._write(setting, str(value))
                if not locale_named(part, by_code_only=True):
                    self._read_as(setting, part, str(value))
            self._mask(m.start(), m.end())

    def _tuned_profile(self) -> None:
        """"tuned set to the throughput-performance profile", "the latency-performance tuned profile", "tuned-adm
        profile virtual-guest": tuned's active profile (system_settings.yaml tuned_profile), tuned with it."""
        names = alternatives(tuned_profiles())
        tuned = r"(?:tuned(?:-adm)?|tuning)"
        for m in self._each(rf"\b{tuned}(?:\s+profile)?{_LINK}(?:the\s+)?({names})(?![\w-])(?:\s+profile\b)?"
                            rf"|(?<![\w-])({names})\s+(?:{tuned}\s+)?profile\b(?:\s+(?:for|of|in)\s+tuned\b)?"):
            profile = (m.group(1) or m.group(2)).lower()
            self._configure(f"tuned profile {profile}", tuned_profile_configuration(profile))
            self._mask(m.start(), m.end())
        for m in self._each(rf"\b{tuned}\s+profile{_LINK}(?:the\s+)?([a-z][\w-]*)"):
            self.spec.unparsed.append(f"tuned profile {m.group(1)} (no tuned profile by that name; tuned's own: "
                                      f"{', '.join(tuned_profiles())})")
            self._mask(m.start() + len(m.group(0).split()[0]), m.end())  # tuned itself is still wanted

    def _logs_collected_to_ship(self) -> None:
        """"collects logs with fluent-bit and ships them to logs.example.com": logs collected to be sent on are this
        image's own, forwarded (remote logging), never a log server's receiving; the server is read after "them"."""
        remote = load_settings()["remote logging"]
        for m in self._each(r"(?P<collect>\b(?:collects?|collecting|gathers?|gathering)\s+(?:its\s+|the\s+|all\s+"
                            r"|their\s+)?logs\b)[^.;]*?(?P<ship>\b(?:ships?|shipping|sends?|sending|forwards?|forwarding"
                            r"|pushe?s?|pushing|streams?"
                            rf"|streaming)\s+(?:them|those|it\s+all)(?:\s+to\s+(?:[\w-]+\s+){{0,4}}?(?:at\s+|on\s+)?"
                            rf"(?P<address>{_ADDRESS}))?)"):
            if m.group("address"):
                self._write(remote, m.group("address").lower())
            else:
                self.spec.unparsed.append(f"{remote.name}: no server address named with it "
                                          f"(e.g. '{self._example(remote)}')")
            self._mask(*m.span("collect"))  # what stands between ("with fluent-bit") is read as it would be
            self._mask(*m.span("ship"))

    def _one_language_for_both(self) -> None:
        """"a german keyboard and locale": the language is the keyboard's layout and the locale's, from the most words
        before them that name both."""
        settings = load_settings()
        for m in self._each(_BOTH):
            layout = _most_words(m.group(1), False, keyboard_layout_named)
            locale = _most_words(m.group(1), False, locale_named)
            if layout is None or locale is None:
                continue
            self._write(settings["keyboard layout"], layout[0])
            self._write(settings["locale"], locale[0])
            self._read_as(settings["locale"], m.group(1)[len(m.group(1)) - locale[1]:], locale[0])
            self._mask(m.end(1) - max(layout[1], locale[1]), m.end())

    def _read_as(self, setting: Setting, said: str, value: str) -> None:
        self.spec.notes.append(f"{setting.name}: '{said}' read as {value}; name the locale to choose another place's "
                               f"(e.g. '{self._example(setting)}')")

    def _take_out(self, setting: Setting, direction: str) -> None:
        """The default asked for (the kernel's, sshd's): what the setting writes the other way goes, if the
        template has it."""
        self.spec.kernel_cmdline_remove += setting.parameters(setting.value)
        entry = setting.configuration(setting.value)
        if entry is not None:
            self.spec.configurations.append({"remove": True, "replaces": entry["replaces"], "cmd": "",
                                             "label": f"{setting.name} {setting.value}"})
        self.spec.notes.append(f"{setting.name} {direction} is {setting.default}: nothing is written for it")

    def _valued(self, setting: Setting, words: str, own: bool = True) -> None:
        """``setting``'s value read beside ``words``: its own, or (not ``own``) a switch's that name it with an
        address, which are neither taken out nor reported when no value follows."""
        w = rf"\b(?:{words})\b"
        # Each form: the pattern, and whether the value's words are read from their start (after the
        # setting's words) or from their end (before them).
        forms: list[tuple[str, bool]] = []
        if setting.value == "schedule":
            self._scheduled(setting, w)
        elif setting.value == "cpus":
            self._cpu_count(setting)
            forms = [(rf"{w}{_LINK}(?:{_CPU_NOUN}\s+)?({_CPUS})(?![\w.-])", True)]
            # The name turned round with the list inside: "cores 4-7 isolated" for "isolated cores".
            firsts = {x.split()[0] for x in setting.words if len(x.split()) == 2
                      and re.fullmatch(_CPU_NOUN, x.split()[1])}
            if firsts:
                forms.append((rf"\b{_CPU_NOUN}\s+({_CPUS})\s+(?:(?:are|is|kept|to\s+be)\s+)?"
                              rf"(?:{alternatives(firsts)})\b", True))
        elif setting.value == "count":
            if setting.size_each_mib:
                self._counted_by_size(setting, w)
            # "max 3 auth tries", "up to 5 login attempts": a bound said before the number is part of it
            forms = [(rf"{w}{_LINK}(\d+)(?![\w.-])", True),
                     (rf"(?:\b(?:max(?:imum)?|at\s+most|up\s+to)\s+)?(?<![\w.-])(\d+)\s+{w}", False)]
        elif setting.value == "size":
            forms = [(rf"{w}{_LINK}({_SIZE_TEXT})", True), (rf"({_SIZE_TEXT})\s+(?:of\s+)?{w}", False)]
        elif setting.value == "duration":  # "keep logs for 30 days", "2 weeks of log retention"
            forms = [(rf"{w}{_LINK}(?:(?:at\s+most|up\s+to|only)\s+)?({DURATION})", True),
                     (rf"({DURATION})\s+(?:of\s+)?{w}", False)]
        elif setting.value == "address":  # "send logs to the server 10.0.0.5": "the server" may stand between
            # "ntp servers 0.pool.ntp.org and 1.pool.ntp.org": a setting that takes several reads them all
            several = rf"(?:\s*(?:,|\band\b|&)\s*{_ADDRESS})*" if setting.several else ""
            forms = [(rf"{w}{_LINK}{_TO_ADDRESS.replace(_ADDRESS, f'({_ADDRESS}{several})')}", True),
                     # "time1.example.org as the time server", "10.0.0.5 for the logs"
                     (rf"(?<![\w.-])({_ADDRESS}{several})\s+(?:as|for)\s+(?:(?:the|a|an|our|its|my)\s+)?{w}", False)]
        elif setting.value == "layout":  # "keyboard layout de", "a german keyboard", "swiss german keyboard"
            name = r"[a-z][a-z-]*(?:\s+[a-z][a-z-]*)?"
            forms = [(rf"(?:{w}|\bkeyboard)(?:\s+{MODAL})?{_LINK}({name})", True),
                     (rf"(?<![\w-])({name})\s+(?:{w}|keyboard\b)", False)]
        elif setting.value == "locale":  # "locale de_DE.UTF-8", "the German locale", "system language set to french"
            # "language" and "lang" alone name a locale only beside one: "the go language" is no setting
            locale_words = rf"(?:{w}|\b(?:language|lang|lc_all)\b)"
            name = r"[a-z][\w.@-]*(?:\s+[a-z][a-z-]*)?"
            forms = [(rf"{locale_words}(?:\s+{MODAL})?{_LINK}({name})", True),
                     (rf"(?<![\w.@-])({name})\s+{locale_words}", False)]
        else:  # a zone: one name, or a place of up to three words
            zone = r"[a-z][\w+-]*(?:/[\w+-]+){0,2}(?:\s+[a-z][\w+-]*(?:/[\w+-]+){0,2}){0,2}"
            forms = [(rf"{w}(?:\s+{MODAL})?{_LINK}({zone})", True), (rf"(?<![\w/+-])({zone})\s+{w}", False),
                     # a place's own time is its zone ("berlin time", "japan time"); only a place the tz database
                     # names is one, so "boot time" or "real time" read nothing here
                     (rf"(?<![\w/+-])({zone})\s+time\b(?!\s*(?:zones?|servers?|sources?|sync|synchroni[sz]))",
                      False)]
        locale_ends: list[int] = []  # where each locale read ends (one LANG: a second in a list is reported)
        for pattern, forward in forms:
            for m in self._each(pattern):
                found = self._value(setting, m.group(1), forward)
                if found is None:
                    self._not_a_zone(setting, m, forward)
                    continue
                value, length = found
                self._write(setting, value)
                locale_ends.append(m.start(1) + length if forward else m.end(1))
                said = m.group(0).lower()
                self.spec.add_packages += [p for p in setting.packages_named
                                           if re.search(rf"\b{re.escape(p)}\b", said) and p not in self.spec.add_packages]
                if forward:  # the whole match once the whole value is read ("cores 2-5 isolated": its words after)
                    self._mask(m.start(), m.end() if length == len(m.group(1)) else m.start(1) + length)
                else:
                    self._mask(m.end(1) - length, m.end())
        if setting.value == "locale":  # a locale's name names its setting by its shape ("ubuntu with de_DE.UTF-8")
            # with the setting's words before it, if said ("locale de_DE.ISO-8859-1" is reported once)
            for m in self._each(rf"(?:{locale_words}(?:\s+{MODAL})?{_LINK})?(?<![\w.@/-])"
                                r"([a-z]{2,3}_[a-z]{2}(?:\.[\w-]+)?(?:@[a-z]+)?)(?![\w.@/-])"):
                code = locale_named(m.group(1), by_code_only=True)
                if code and locale_ends and re.fullmatch(r"[\s,]*(?:(?:and|&|plus|as\s+well\s+as)\s*)?",
                                                         self.work[locale_ends[-1]:m.start(1)], re.I):
                    self._write(load_settings()["extra locale"], code)  # the first named is LANG
                elif code:
                    self._write(setting, code)
                    locale_ends.append(m.end())
                elif "." in m.group(1) and locale_named(m.group(1).split(".")[0], by_code_only=True):
                    self.spec.unparsed.append(f"{setting.name} {m.group(1)} (only UTF-8 locales are written: "
                                              f"{locale_named(m.group(1).split('.')[0])})")
                else:
                    continue
                self._mask(m.start(), m.end())
        if setting.value == "zone":  # a tz name names its setting by its shape ("set the clock to Asia/Kolkata")
            for m in self._each(r"(?<![\w/.-])([a-z]+(?:/[\w+-]+){1,2})(?![\w/-]|\.\w)"):  # a period ends a sentence
                named = zone_named(m.group(1))
                if named and "/" in named:
                    self._write(setting, named)
                    self._mask(m.start(), m.end())
        if not own:
            return
        # "remove isolcpus", "drop the hugepages parameter": the setting taken out, whatever its value
        for m in self._each(rf"\b{UNDO}\s+(?:the\s+)?{w}(?:\s+(?:parameters?|settings?|options?|flags?))?"):
            self._undo(setting)
            self._mask(m.start(), m.end())
        valued = any(c.get("setting") == setting.name and not c.get("remove") for c in self.spec.configurations)
        if setting.valued_only:
            return  # its words alone are someone else's ("a dns server" is one the image runs)
        for m in self._each(w):  # the words are left, with no value they take
            if self._known_word(m.group(0).lower()) or m.group(0).lower() in setting.packages_named:
                continue  # a package named alone is that package ("an image with chrony")
            self._mask(m.start(), m.end())
            if valued:
                continue  # said again beside its value ("chrony using time1.example.org as the time server")
            self.spec.unparsed.append(f"{setting.name}: no {self._shape(setting)} named with it "
                                      f"(e.g. '{self._example(setting)}')")

    def _counted_by_size(self, setting: Setting, w: str) -> None:
        """"2 GB of huge pages", "hugepages totalling 512M": the memory said, as a count of units of
        ``size_each_mib`` (said in a note), never the disk's size."""
        each = setting.size_each_mib or 1
        for m in self._each(rf"(?<![\w.-])({_SIZE_TEXT})\s+(?:of|in|for|worth\s+of)\s+(?:the\s+)?{w}"
                            rf"|{w}\s+(?:of|totalling|totaling|worth|adding\s+up\s+to)\s+({_SIZE_TEXT})"):
            said = m.group(1) or m.group(2)
            mib = parse_casual(said)
            if not mib or mib < each:
                continue
            count = int(mib // each)
            self._write(setting, str(count))
            self.spec.notes.append(f"{setting.name}: {said.strip()} read as {count} of {each} MiB each "
                                   "(the default size); name a count to choose another")
            self._mask(m.start(), m.end())

    def _undo(self, setting: Setting) -> None:
        """The setting taken out, whatever its value: its kernel parameters and its configuration entry."""
        self.spec.kernel_cmdline_remove += [p.split("=", 1)[0] for p in setting.cmdline]
        entry = setting.configuration("")
        if entry is not None:
            self.spec.configurations.append({"remove": True, "replaces": entry["replaces"], "cmd": "",
                                             "label": setting.name})

    def _not_a_zone(self, setting: Setting, m: re.Match[str], forward: bool) -> None:
        """A name shaped like a zone ("Mars/Olympus") next to the words that is none: reported with them."""
        words = m.group(1).split()
        shaped = words[0] if forward else words[-1]
        if setting.value == "zone" and "/" in shaped:
            at = m.start(1) if forward else m.end(1) - len(shaped)
            self._mask(m.start() if forward else at, at + len(shaped) if forward else m.end())
            self.spec.unparsed.append(f"{setting.name} {shaped} (not a time zone of the tz database, e.g. "
                                      f"'{self._example(setting)}')")

    def _cpu_count(self, setting: Setting) -> None:
        """"2 isolated cores", "isolate four cpus": a number before the noun counts CPUs (after it, "cores 2 and
        3", it names them). Which ones the template decides (system_edits.isolated_count)."""
        first = alternatives({x.split()[0] for x in setting.words if len(x.split()) == 2
                              and re.fullmatch(_CPU_NOUN, x.split()[1])} | {"dedicated", "reserved"})
        number = rf"(\d+|{'|'.join(_NUMBER_WORDS)})"
        after = r"(?:isolated|reserved|dedicated)"  # "2 cpus isolated for realtime"
        for m in self._each(rf"\b{number}\s+(?:{first})\s+{_CPU_NOUN}\b|\b(?:{first})\s+{number}\s+{_CPU_NOUN}\b"
                            rf"|\b{number}\s+{_CPU_NOUN}\s+(?:(?:are|to\s+be|kept)\s+)?{after}\b"):
            said = next(g for g in m.groups() if g).lower()
            count = int(said) if said.isdigit() else _NUMBER_WORDS.index(said) + 1
            if count >= 1:
                self.spec.isolated_cpu_count = count
            self._mask(m.start(), m.end())

    def _value(self, setting: Setting, text: str, forward: bool) -> tuple[str, int] | None:
        """The value ``text`` gives ``setting``, normalised, with the length of ``text`` it takes; None when it
        gives none. A zone is read from the most words next to the setting's that name one ("berlin and
        docker" -> Europe/Berlin, "the new york" -> America/New_York). An out-of-range count is reported and
        gives the value ""."""
        if setting.value == "cpus":
            parts = re.split(r"\s*(?:,|\band\b|&)\s*", text.strip())
            return ",".join(re.sub(r"\s*-\s*", "-", p) for p in parts if p), len(text)
        if setting.value == "address":
            addresses = re.split(r"\s*(?:,|\band\b|&)\s*", text.strip().lower())
            named = [a for a in addresses if not re.fullmatch(r"[\d.]+(?::\d+)?", a)]
            if setting.addresses_only and named:
                self.spec.unparsed.append(f"{setting.name}: {', '.join(named)} is a host name, and only addresses "
                                          f"are taken (e.g. '{self._example(setting)}')")
                return "", len(text)
            return " ".join(addresses), len(text)
        if setting.value == "size":
            mib = parse_casual(text)
            return (fmt_size(mib) if mib else ""), len(text)
        if setting.value == "duration":
            return time_span(text), len(text)
        if setting.value == "layout":
            # before "keyboard", a layout's name that is an English word says no layout ("no keyboard")
            return _most_words(text, forward, lambda said: None if not forward and said.lower() in _ENGLISH_LAYOUT_NAMES
                               else keyboard_layout_named(said))
        if setting.value == "locale":
            found = _most_words(text, forward, locale_named)
            if found is not None:
                said = text[:found[1]] if forward else text[len(text) - found[1]:]
                if not locale_named(said, by_code_only=True):  # read from a language's words: say which locale
                    self._read_as(setting, said, found[0])
            return found
        if setting.value == "count":
            number, low, high = int(text), setting.low, setting.high
            if (low is not None and number < low) or (high is not None and number > high):
                self.spec.unparsed.append(f"{setting.name} {number} (it takes {low} to {high})")
                return "", len(text)
            return str(number), len(text)
        return _most_words(text, forward, zone_named)

    def _write(self, setting: Setting, value: str) -> None:
        if not value:
            return  # reported by _value
        self.spec.kernel_cmdline_append += setting.parameters(value)
        entry = setting.configuration(value)
        if entry is not None:
            self._configure(f"{setting.name} {value}", {**entry, "packages": list(setting.packages)})

    @staticmethod
    def _shape(setting: Setting) -> str:
        return {"cpus": "CPU list", "count": "number", "size": "size", "zone": "time zone", "schedule": "schedule",
                "address": "server address", "layout": "keyboard layout", "duration": "duration",
                "locale": "locale"}[setting.value]

    @staticmethod
    def _example(setting: Setting) -> str:
        word = setting.words[0]
        return setting.example or {"cpus": f"{word} 2-3", "count": f"{word} 10", "size": f"{word} of 2G",
                "zone": f"{word} Europe/Berlin", "address": f"{word} logs.example.com:514"}[setting.value]


def _most_words(text: str, forward: bool, named: Callable[[str], str | None]) -> tuple[str, int] | None:
    """What the most words of ``text`` next to a setting's words name (from its start when ``forward``, else from its
    end), with the length of text they take: "berlin and docker" -> Europe/Berlin, "swiss german" -> ch."""
    spans = [m.span() for m in re.finditer(r"\S+", text)]
    for n in range(len(spans), 0, -1):
        start, end = (spans[0][0], spans[n - 1][1]) if forward else (spans[-n][0], spans[-1][1])
        value = named(text[start:end])
        if value:
            return value, end if forward else len(text) - start
    return None


@functools.cache
def _prefixes_of(setting: Setting) -> frozenset[str]:
    """The words before this setting's words in another setting's longer ones ("root" of "root password login"
    for "password login"); once per setting."""
    return frozenset(other[: -len(word)].strip() for s in load_settings().values() if s is not setting
                     for other in s.words for word in setting.words if other.endswith(" " + word))

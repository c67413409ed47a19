"""Reading replacements: "replace X with Y", "Y instead of X", "switch from X to Y", "lose nginx, caddy instead",
and a name taken back as soon as said ("apache, no wait, nginx"): a removal of what goes and an addition of what
takes its place, read before the package scan."""

from __future__ import annotations

import re

from .phrasing import CORRECTION, STOPWORDS, ParserState, looks_like_package


class ReplacementPhrases(ParserState):
    """The replacements of a request; the package reading classifies the names (PackagePhrases)."""

    def _classify(self, token: str, *, mode: str | None, strength: str) -> str:
        raise NotImplementedError

    def _software(self, word: str) -> bool:
        raise NotImplementedError

    @staticmethod
    def _named(words: str) -> list[str]:
        raise NotImplementedError

    def _replacements(self) -> None:
        """'replace X with Y' and 'Y instead of X' become a removal plus an addition."""
        word = r"([a-z0-9][\w.+:~-]*(?:\s+[a-z0-9][\w.+:~-]*)?)"
        the = r"(?:the\s+|a\s+|an\s+|my\s+)?"
        patterns = [
            (rf"\b(?:replace|swap|substitute|trade|exchange)\s+{the}{word}\s+(?:with|by|for|in\s+favou?r\s+of)\s+{the}{word}",
             1, 2),
            # "ditch docker in favour of podman": a removal that says what takes the place
            (rf"\b(?:ditch|drop|dump|remove|lose|scrap|get\s+rid\s+of)\s+{the}{word}\s+in\s+favou?r\s+of\s+{the}{word}", 1, 2),
            (rf"\b{the}{word}\s+(?:replaced|swapped|substituted|exchanged)\s+(?:with|by|for)\s+{the}{word}", 1, 2),
            (rf"\b(?:prefer|favou?r|choose|pick)\s+{the}{word}\s+(?:over|to)\s+{the}{word}", 2, 1),
            # "I'd rather have podman than docker", "rather use caddy than nginx"
            (rf"\brather\s+(?:have|use|run|install|take|go\s+with|get)\s+{the}{word}\s+than\s+{the}{word}", 2, 1),
            (rf"\b(?:use\s+)?{the}{word}\s+(?:instead\s+of|rather\s+than|in\s+place\s+of)\s+{the}{word}", 2, 1),
            # "lose nginx, caddy instead", "drop vim and use nano instead", "take out nginx and put haproxy in its
            # place": a removal, then what takes its place
            (rf"\b(?:ditch|drop|dump|remove|lose|scrap|delete|get\s+rid\s+of|take\s+out)\s+{the}{word}\s*(?:[,;]\s*|\s+)"
             rf"(?:and\s+)?(?:(?:use|add|install|take|get|put(?:\s+in)?|go\s+with)\s+)?{the}{word}"
             rf"\s+(?:instead\b(?!\s+of)|in\s+(?:its|their|his|her)\s+place\b)", 1, 2),
        ]
        # "switch from postfix to exim4", "move nginx over to caddy": a verb of changing, said of software by its
        # name only ("change the disk to 20G" is a size's, "switch the desktop to xfce" the desktop reading's)
        changing = (rf"\b(?:switch|change|move|migrate|go|convert)\s+(?:from\s+)?{the}([a-z0-9][\w.+:~-]*)\s+"
                    rf"(?:(?:over\s+)?to|for)\s+{the}{word}")
        patterns.append((changing, 1, 2))
        # "apache, no wait, nginx": a name taken back as soon as said is no wish, and nothing to remove
        for m in self._each(rf"\b([a-z0-9][\w.+:~-]*)\s*[,.;:-]?\s*{CORRECTION}\s*[,.;:-]?\s*(?!(?:also|too|and|more)\b){the}{word}"
                            r"(?=\s*(?:$|[,.;]|\band\b|\bwith\b))"):
            old, new = m.group(1), m.group(2)
            if (self._is_os_or_arch(old) or self._is_os_or_arch(new) or not self._software(old.lower())
                    or re.match(r"\d", new)):
                continue  # a size or a release said again is their readers' ("20G, sorry, 40G")
            self._taking_the_place(new)
            self._mask(m.start(), m.end())
        for pattern, old_i, new_i in patterns:
            for m in self._each(pattern):
                old, new = m.group(old_i), m.group(new_i)
                if self._is_os_or_arch(old) or self._is_os_or_arch(new):
                    continue  # "ubuntu instead of debian" is a distribution switch, handled below
                if pattern == changing and (old.lower() not in self.known or self._kind_of(new, old)):
                    continue
                for part in self._named(old):
                    self._classify(part, mode="remove", strength="strong")
                self._taking_the_place(new)
                self._mask(m.start(), m.end())

    def _kind_of(self, new: str, old: str) -> bool:
        """Whether ``new`` names a kind of what ``old`` names ("xfce" of "the desktop"): a choice of kind, which
        the group reading makes, not a replacement."""
        kind, of = self.caps.group_for_word(new.lower()), self.caps.group_for_word(old.lower())
        return bool(kind and of and of in self.caps.groups[kind].supersedes)

    def _taking_the_place(self, new: str) -> None:
        """What a replacement or a correction asks for instead ("… instead of docker", "apache, no wait, nginx")."""
        # "and plex instead of jellyfin": a joining word before the name is no first word of it
        for k, part in enumerate(p for p in self._named(new) if p.lower() not in STOPWORDS):
            stack = next((v for v in self.caps.vendor_stacks.values() if part.lower() in v.words), None)
            if stack is not None:  # "plex instead of jellyfin": its vendor's, said as the stack reading says
                self.spec.notes.append(f"{part.lower()} not applied: {stack.note}")
                continue
            # an unknown second word is prose ("podman since ..."), unless shaped like a package name, and so is
            # an English word ("it is rootless instead of docker")
            if self._classify(part, mode="add", strength="strong") == "unknown-strong" and (
                    looks_like_package(part.lower()) or (k == 0 and part.lower() not in self.english)):
                self.spec.add_packages.append(part.lower())


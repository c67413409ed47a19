"""The words of a partition's place and size, shared by the disk's readings (parse_disk, parse_partition_lists,
parse_sizes): a mount point as people say it ("/srv/", "home", "postgres data") and a size as upstream takes it."""

from __future__ import annotations

import re

from ..knowledge.request_words import load_request_words
from ..knowledge.sizes import casual_mib, fmt_size
from .phrasing import alternatives

_WORDS = load_request_words()
# "postgres data", "docker storage": software's data is its mount word's place (mount_point drops the noun)
DATA_NOUNS = r"(?:data|files|storage)"
MOUNT = (rf"(/[\w./-]*|(?:{alternatives(_WORDS.software_mounts | {'database', 'db'})})(?:'s)?\s+{DATA_NOUNS}\b"
         rf"|{alternatives(_WORDS.mount_words)})")


def mount_point(word: str | None) -> str:  # "/srv/" is /srv, "home" /home, "postgres data" postgres's directory
    word = (word or "").strip().lower()
    if word.startswith("/"):  # "/srv..." or "/srv." ends a sentence, not the path
        return re.sub(r"(?<=.)\.+$", "", word).rstrip("/") or "/"
    word = re.sub(rf"(?:'s)?\s+{DATA_NOUNS}$", "", word)  # "docker's data": docker's place
    return _WORDS.mount_words.get(word, f"/{word}")


def size_said(number: str, unit: str) -> str:
    """A request's size normalised to what upstream accepts (server.sizes decides the units)."""
    mib = casual_mib(number, unit)
    return fmt_size(mib) if mib else f"{number}{unit}"

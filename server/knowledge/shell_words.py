"""The words of a shell command in ``systemConfig.configurations``: the programs it runs and the paths it names.

Pure text functions, shared by the knowledge (a group's configuration commands), the composer (what removed
software leaves behind, server/composer/coherence.py) and the validator (server/validation/consistency.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from collections.abc import Set as AbstractSet

_SEGMENT = re.compile(r"&&|\|\||[;|]")
_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")
_PATH = re.compile(r"(?<![\w.])/(?:[\w.@+-]+/?)+")


def program_words(cmd: str) -> list[str]:
    """The program each segment of a shell command runs (``firewall-offline-cmd`` in ``a && b``), lower-cased;
    ``sudo``, ``env`` and leading ``VAR=value`` assignments are skipped."""
    out: list[str] = []
    for segment in _SEGMENT.split(cmd):
        words = segment.split()
        while words and (words[0] in ("sudo", "env", "exec", "!") or _ASSIGNMENT.match(words[0])):
            words = words[1:]
        if words:
            out.append(words[0].rsplit("/", 1)[-1].lower())
    return out


# Words every path has: they name no software.
_FILESYSTEM_WORDS = frozenset({"etc", "var", "lib", "usr", "opt", "srv", "run", "tmp", "bin", "sbin", "share",
                               "local", "home", "root", "conf", "cfg", "d", "service", "timer", "socket"})


def path_words(cmd: str) -> set[str]:
    """The words of the paths a command names, lower-cased, without the filesystem's own
    (``/etc/sysctl.d/90-realtime.conf`` gives sysctl, 90 and realtime)."""
    return {w for m in _PATH.finditer(cmd) for w in re.split(r"[/.\-_]", m.group(0).lower())
            if w and w not in _FILESYSTEM_WORDS}


def daemon_names(packages: Iterable[str]) -> set[str]:
    """Package names with their daemon spelling, both ways (chrony and chronyd, firewalld and firewall)."""
    out: set[str] = set()
    for name in packages:
        low = str(name).lower()
        out |= {low, low + "d"} | ({low[:-1]} if low.endswith("d") and len(low) > 4 else set())
    return out


def runs_any(cmd: str, names: AbstractSet[str], stems_: AbstractSet[str]) -> list[str]:
    """The programs of ``cmd`` that belong to ``names`` (package names with their daemon spellings) or whose
    first word is one of ``stems_`` (``firewall-offline-cmd`` is firewalld's, ``ufw`` ufw's)."""
    hits: list[str] = []
    for word in program_words(cmd):
        if word == "systemctl":
            continue
        head = re.split(r"[-_.]", word, maxsplit=1)[0]
        if word in names or head in names or head in stems_:
            hits.append(word)
    return hits

"""Stems: the words a package answers to in service units, group names and directories.

A package's stems are the first word of every name in its equivalence class (docker.io, moby-engine and
docker-ce give ``docker`` and ``moby``). The composer uses them to take away what removed software brought
(server/composer/coherence.py); the validator uses them to find leftovers (server/validation/consistency.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .loader import Capabilities


def stems(names: Iterable[str], caps: Capabilities) -> set[str]:
    """Service, group and directory words a set of packages answers to (see the module docstring)."""
    out: set[str] = set()
    for name in names:
        for alias in {name, *caps.aliases(name)}:
            word = re.split(r"[-.+_]", str(alias).lower(), maxsplit=1)[0]
            if len(word) >= 3 and not word.isdigit():
                out.add(word)
    return out


def service_spans(cmd: str) -> list[tuple[int, int, str]]:
    """Spans of unit names in ``systemctl enable a.service b`` commands: (start, end, stem of the unit)."""
    spans: list[tuple[int, int, str]] = []
    for m in re.finditer(r"systemctl\s+(?:--\S+\s+)*enable\s+((?:--\S+\s+)*[\w@.:-]+(?:[ \t]+[\w@.:-]+)*)", cmd):
        for w in re.finditer(r"[\w@.:-]+", m.group(1)):
            if not w.group(0).startswith("-"):
                unit = re.sub(r"\.(service|socket|timer|path)$", "", w.group(0))
                spans.append((m.start(1) + w.start(), m.start(1) + w.end(), unit))
    return spans


def unit_stem(unit: str) -> str:
    return re.split(r"[-.@_]", unit.lower(), maxsplit=1)[0]

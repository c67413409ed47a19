"""Targets a search names that no template can have: an operating system or an architecture OS Image Composer
does not build (capabilities.yaml ``unsupported``). Such a query gets no results and is told so, instead of
templates that happen to share its other words ("Windows 11 IoT Enterprise" had returned an IoT edge image)."""

from __future__ import annotations

import re

from ..knowledge.loader import load_capabilities
from .query_analysis import QueryAnalysis


def outside_targets(query: str, analysis: QueryAnalysis) -> list[str]:
    """The unbuildable targets ``query`` asks for, as labelled ("Windows 11", "RISC-V"); none named in a negation
    ("rather than Windows") or beside a supported target ("debian like raspbian")."""
    if analysis.wants.get("dist") or analysis.wants.get("os"):
        return []
    caps = load_capabilities()
    excluded = set(analysis.excluded)
    found: list[str] = []
    taken: list[tuple[int, int]] = []  # a longer name's span ("fedora coreos" holds "fedora")
    for phrase, pattern in caps.unsupported_os_regexes:
        for m in pattern.finditer(query):
            if any(m.start() < end and start < m.end() for start, end in taken):
                continue
            taken.append(m.span())
            if not set(m.group(0).lower().split()) & excluded:
                label = str(caps.unsupported_os[phrase].get("label", phrase))
                found.append(f"{label} {m.group(1)}" if m.group(1) else label)
    for word, info in caps.unsupported_arch.items():
        if word not in excluded and re.search(rf"(?<![\w.+/-]){re.escape(word)}(?![\w+/-])", query, re.I):
            found.append(str(info.get("label", word)))
    return list(dict.fromkeys(found))


def outside_message(targets: list[str]) -> str:
    caps = load_capabilities()
    families = ", ".join(f.label for f in caps.families.values())
    return (f"no templates for {', '.join(targets)}: OS Image Composer builds {families} images for x86_64 and "
            "aarch64. Search for one of those, or ask generate_template, which names the closest supported target")


__all__ = ["outside_message", "outside_targets"]

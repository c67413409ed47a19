"""Package names a request's words may stand for in a repository index, by the distributions' naming conventions.

Words the rules could not place may still be packages: as written ("debian 13 with valkey"), as a Python library
named beside Python, which every family packages as ``python3-<name>`` ("python with numpy" -> python3-numpy),
or as a name with its version right after it, which a release may package under both ("postgresql 16" ->
postgresql-16, "python 3.12" -> python3.12, "gcc 13" -> gcc-13), or under a name of its own
(``versioned_names`` in request_words.yaml: "openjdk 17" -> openjdk-17-jdk-headless). :func:`readings` lists the candidates; the agent
asks the target's index which exist (``Agent._place_by_index``) and :func:`place` uses only those.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..knowledge.request_words import load_request_words
from ..knowledge.system_settings import firewall_services
from .phrasing import looks_like_package
from .request_spec import RequestSpec

NAME = re.compile(r"[a-z][a-z0-9+._-]{1,60}")
PYTHON = re.compile(r"\b(?:python3?|pip3?)\b")  # the request talks about Python: a library word is its package
# A machine's name on the network ("ntp.example.com", "pool.ntp.org", "nas.local"): no package name.
HOST_NAME = re.compile(r"[a-z0-9-]+(?:\.[a-z0-9-]+){2,}|[a-z0-9-]+\.(?:com|org|net|local|lan|internal|home|corp|example)")
# A name and its version ("java 21", "python 3.12"); four dotted numbers are an address ("dns 1.1.1.1"), no version.
VERSIONED = re.compile(r"\b([a-z][a-z0-9+._-]*[a-z])\s+v?(\d+(?:\.\d+){0,2})(?![\d.]*\d)\b")


@dataclass(frozen=True)
class Reading:
    """What a candidate package name stands for: ``said`` as the request put it, the not-understood ``tokens`` it
    places, and the package it ``replaces`` (a version of one already added)."""
    said: str
    tokens: tuple[str, ...]
    replaces: str | None = None


def readings(spec: RequestSpec, request: str) -> dict[str, Reading]:
    """Candidate package name -> its reading, the words as written first."""
    words = [u for u in spec.unparsed if NAME.fullmatch(u)]
    out: dict[str, Reading] = {w: Reading(w, (w,)) for w in words}
    text = request.lower()
    if PYTHON.search(text):
        for w in words:
            if not w.startswith("python"):
                out.setdefault(f"python3-{w}", Reading(w, (w,)))
    added = {p.lower(): p for p in spec.add_packages}
    unparsed = set(spec.unparsed)
    for match in VERSIONED.finditer(text):
        word, version = match.group(1), match.group(2)
        if word in added:
            reading = Reading(f"{word} {version}", (), added[word])
        elif word in unparsed and version in unparsed:
            reading = Reading(f"{word} {version}", (word, version))
        elif f"{word} {version}" in unparsed:  # one item of a list left unread whole ("4 cores, java 21")
            reading = Reading(f"{word} {version}", (f"{word} {version}",))
        else:
            continue
        conventions = load_request_words().versioned_names.get(word, ())
        for name in (*(c.replace("{v}", version) for c in conventions), f"{word}-{version}", f"{word}{version}"):
            out.setdefault(name, reading)
    return out


def place(spec: RequestSpec, found: set[str], candidates: dict[str, Reading]) -> None:
    """The candidates the index has, into ``spec``: each reading once, a name other than the words said reported
    as read ("numpy -> python3-numpy"), a version's package instead of the package and its 'not pinned' note."""
    done: set[Reading] = set()
    for name, reading in candidates.items():
        if name not in found or reading in done or any(t not in spec.unparsed for t in reading.tokens):
            continue
        if reading.replaces is not None:
            if reading.replaces not in spec.add_packages:
                continue
            spec.add_packages = [name if p == reading.replaces else p for p in spec.add_packages]
            pinned = f"{reading.said}: version not pinned"
            spec.notes = [n for n in spec.notes if not n.lower().startswith(pinned)]
        elif name not in spec.add_packages:
            spec.add_packages.append(name)
        done.add(reading)
        spec.unparsed = [u for u in spec.unparsed if u not in reading.tokens]
        if name != reading.said:
            spec.corrected.append(f"{reading.said} -> {name}")


def unchecked(spec: RequestSpec, candidates: dict[str, Reading], why: str, english: frozenset[str],
              request: str = "") -> None:
    """Words still not placed that may be packages, each said with why no index could tell and how to add it
    anyway: "frr" reads "frr (no package this server knows, and the elxr12 repository index could not be read
    to check it: 'add the package frr' adds it unchecked)". A word of ``english`` ("routing") is left as it is;
    with no such list, only a word shaped like a package name gets the advice. One listed beside packages
    ("htop, iotop and tmux") is a package by its company: added unchecked, and said so."""
    def prose(word: str) -> bool:  # "half-terabyte", "well-known": English words joined; "admins": a plural
        parts = word.split("-")
        return bool(english) and (len(parts) > 1 and all(p in english for p in parts)
                                  or (word.endswith("s") and word[:-1] in english))

    def name(word: str) -> str:  # the reading a convention gives it ("numpy" beside Python: python3-numpy)
        return next((n for n, reading in candidates.items() if reading.tokens == (word,) and n != word), word)

    # A name with its version ("openjdk 17", "java 21"): one wish, with the names the families package it under
    versioned: dict[Reading, list[str]] = {}
    for candidate, reading in candidates.items():
        if (len(reading.tokens) > 1 or " " in "".join(reading.tokens)) and all(t in spec.unparsed for t in reading.tokens):
            versioned.setdefault(reading, []).append(candidate)
    for reading, names in versioned.items():
        at = min(spec.unparsed.index(t) for t in reading.tokens)
        spec.unparsed = [u for u in spec.unparsed if u not in reading.tokens]
        spec.unparsed.insert(at, f"{reading.said} (no package this server knows, and {why} to check which of "
                                 f"{', '.join(names)} it has: 'add the package <name>' adds one unchecked)")
    protocols = set(firewall_services())  # "dnsmasq for dhcp and dns": what software serves, never a package
    said = {w for w, reading in candidates.items() if reading.tokens == (w,) and not HOST_NAME.fullmatch(w)
            and not prose(w) and w not in protocols and (looks_like_package(w) or (english and w not in english))}
    for word in sorted(said & set(spec.unparsed)):
        # the packages as said: "ninja" of "cmake, ninja, ccache" was read as ninja-build
        named = [*spec.add_packages, *(c.split(" -> ")[0] for c in spec.corrected),
                 *(p.split("-")[0] for p in spec.add_packages if "-" in p)]
        if english and word not in english and _listed_with_packages(word, named, request):
            spec.add_packages.append(word)
            spec.unparsed.remove(word)
            spec.notes.append(f"{word}: added as named among packages, unchecked ({why}); say 'remove {word}' if "
                              "it is no package")
    spec.unparsed = [f"{u} (no package this server knows, and {why} to check it: 'add the package {name(u)}' adds "
                     "it unchecked)" if u in said else u for u in spec.unparsed]


def _listed_with_packages(word: str, packages: list[str], request: str) -> bool:
    """``word`` is an item of a list in ``request`` next to one of ``packages`` ("htop, iotop and tmux")."""
    if not packages:
        return False
    known = "|".join(re.escape(p.lower()) for p in sorted(packages, key=len, reverse=True))
    joint = r"\s*(?:,\s*(?:and\s+|&\s*)?|\band\s+|&\s*)"
    # The word is a whole item: "two nics, nftables" lists two NICs, no package "nics"
    starts = r"(?:^|[,:;(]|\b(?:and|with|plus|add|install|also)\b)\s*"
    ends = r"(?=\s*(?:$|[,.;:)&]|\band\b|\bfor\b|\bon\b|\bplus\b))"
    w = re.escape(word)
    return re.search(rf"(?<![\w.+-])(?:{known}){joint}{w}{ends}|{starts}{w}{joint}(?:{known})(?![\w.+-])",
                     request.lower()) is not None


__all__ = ["Reading", "place", "readings", "unchecked"]

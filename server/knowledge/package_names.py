"""Cross-distribution package names: distributions and architectures as indexes spell them, and the
names worth trying when a name is missing from an index.

Package managers disagree on names for the same software (``docker.io`` on Debian,
``moby-engine`` on Azure Linux, ``docker-ce`` from Docker's own repository). The facts
live in ``resources/capabilities.yaml`` (``equivalents`` and ``package_names``); this
module is the API over them. Callers keep only the names that really exist in the
consulted index, so an entry there can never make a package look present.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from ..core.paths import resource_text
from ..core.yamlsafe import load_mapping
from .entries import NOT_TARGET_KEYS
from .loader import Capabilities, load_capabilities


@dataclass(frozen=True)
class _Rules:
    arch_canon: dict[str, str]  # any spelling -> canonical template (or index-only) architecture
    arch_by_family: dict[str, dict[str, str]]  # package type -> canonical arch -> the indexes' spelling
    arch_independent: dict[str, str]
    groups_by_name: dict[str, list[tuple[str, ...]]]
    all_names: frozenset[str]
    prefixes: dict[str, tuple[str, ...]]
    patterns: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...]
    suffix_swaps: tuple[tuple[str, str], ...]
    prefix_swaps: tuple[tuple[str, str], ...]


def _entry_group(entry: dict[str, Any]) -> tuple[str, ...]:
    """An equivalence entry's names in suggestion order: ``suggest``, then the distributions' names, then aliases."""
    names: list[str] = [str(n) for n in entry.get("suggest") or ()]
    for key, value in entry.items():
        if key not in NOT_TARGET_KEYS and value:
            names.append(str(value))
    names.extend(str(n) for n in entry.get("aliases") or ())
    return tuple(dict.fromkeys(names))


@functools.cache
def _rules() -> _Rules:
    caps: Capabilities = load_capabilities()
    raw = caps.package_name_rules
    arch_info = {**caps.arch_info, **(raw.get("index_architectures") or {})}
    arch_canon = {str(a).lower(): canon for canon, info in arch_info.items()
                  for a in [canon, *(info.get("aliases") or ())]}
    pkg_types = {f.pkg_type for f in caps.families.values()}
    arch_by_family = {t: {canon: str(info.get(t, canon)) for canon, info in arch_info.items()} for t in pkg_types}
    groups_by_name: dict[str, list[tuple[str, ...]]] = {}
    for entry in caps.equivalent_entries():
        group = _entry_group(entry)
        for name in group:
            groups_by_name.setdefault(name, []).append(group)
    return _Rules(
        arch_canon=arch_canon,
        arch_by_family=arch_by_family,
        arch_independent={str(k): str(v) for k, v in (raw.get("arch_independent") or {}).items()},
        groups_by_name=groups_by_name,
        all_names=frozenset(groups_by_name),
        prefixes={str(k): tuple(str(p) for p in v) for k, v in (raw.get("prefixes") or {}).items()},
        patterns=tuple((re.compile(str(p["pattern"])), tuple(str(n) for n in p["names"]))
                       for p in raw.get("patterns") or ()),
        suffix_swaps=tuple((str(a), str(b)) for a, b in raw.get("suffix_swaps") or ()),
        prefix_swaps=tuple((str(a), str(b)) for a, b in raw.get("prefix_swaps") or ()),
    )


# ------------------------------------------------------------------ distributions and architectures


def canonical_dist(os: str | None, dist: str | None) -> str | None:
    """Known distribution id for (os, dist), or the lower-cased dist as given, or None.

    Other spellings (config.yml says "rcd10" and "aria" where templates say "el10" and "elxr12") and
    codenames come from the dists' `words`; the default dist of an OS is used only when a caller names
    the OS but not the distribution.
    """
    caps = load_capabilities()
    if dist:
        d = dist.strip().lower()
        return caps.dist_of(d) or d
    if os:
        return caps.dist_of(os) if caps.family_of(os) else None
    return None


def package_type(os_or_dist: str | None) -> str | None:
    """``deb`` or ``rpm`` for a known distribution or OS: decides the index format and the architecture names."""
    return load_capabilities().pkg_type(os_or_dist)


def canonical_arch(arch: str) -> str:
    a = arch.strip().lower()
    return _rules().arch_canon.get(a, a)


def family_arch(family: str, arch: str) -> str:
    """Architecture name as the family's indexes spell it (amd64 for deb, x86_64 for rpm)."""
    canon = canonical_arch(arch)
    return _rules().arch_by_family.get(family, {}).get(canon, canon)


def arch_independent(family: str) -> str:
    """How ``family``'s indexes mark packages that install on every architecture (``all``, ``noarch``)."""
    return _rules().arch_independent[family]


# ------------------------------------------------------------------ equivalent names


def known_names() -> frozenset[str]:
    """Every name the equivalences mention."""
    return _rules().all_names


def equivalent_prefixes(name: str) -> tuple[str, ...]:
    """Name prefixes whose packages may stand in for ``name`` on another family."""
    return _rules().prefixes.get(name, ())


def equivalents(name: str) -> list[str]:
    """Names that stand for the same software elsewhere, most common first, without ``name``."""
    rules = _rules()
    out: list[str] = []
    for group in rules.groups_by_name.get(name, []):
        out.extend(n for n in group if n != name and n not in out)
    for pattern, names in rules.patterns:
        if pattern.match(name):
            out.extend(n for n in names if n != name and n not in out)
    return out


def spelling_variants(name: str) -> list[str]:
    """Rule-based cross-family spellings: ``-dev`` <-> ``-devel``, ``libfoo-dev`` <-> ``foo-devel``."""
    rules = _rules()
    out: list[str] = []

    def add(n: str) -> None:
        if n and n != name and n not in out:
            out.append(n)

    for a, b in rules.suffix_swaps:
        for old, new in ((a, b), (b, a)):
            if name.endswith(old):
                stem = name[: -len(old)]
                add(stem + new)
                # Debian puts "lib" in front of library dev packages, rpm usually does not.
                if stem.startswith("lib") and new == "-devel":
                    add(stem[3:] + new)
                if not stem.startswith("lib") and new == "-dev":
                    add("lib" + stem + new)
    for a, b in rules.prefix_swaps:
        for old, new in ((a, b), (b, a)):
            if name.startswith(old):
                add(new + name[len(old) :])
    if name.lower() != name:
        add(name.lower())
    return out


_VERSIONED = re.compile(r"[-_]v?\d+(?:\.\d+)+$")


def versioned_build(name: str, package: str) -> bool:
    """Whether ``package`` is a versioned build of ``name``: a vendor's ``openvino-2025.3.0`` or
    ``intel-dlstreamer_2025.2.0`` for "openvino", "intel-dlstreamer" (its version is part of the package name)."""
    return len(package) > len(name) and package.lower().startswith(name.lower()) \
        and _VERSIONED.fullmatch(package[len(name):]) is not None


@functools.cache
def default_sources() -> dict[str, list[str]]:
    """The repositories the verifier reads per distribution (resources/package_sources.yaml)."""
    raw = load_mapping(resource_text("package_sources.yaml")).data.get("sources") or {}
    return {str(dist): [str(spec) for spec in specs] for dist, specs in raw.items()}


@functools.cache
def index_arch_suffixes() -> frozenset[str]:
    """Every architecture word a package file name or index may end in (``foo.x86_64``, ``foo_amd64``)."""
    caps = load_capabilities()
    rules = caps.package_name_rules
    index_only = rules.get("index_architectures") or {}
    words: set[str] = {*caps.arch_info, *index_only} | {str(v) for v in (rules.get("arch_independent") or {}).values()}
    words |= {str(spec["deb"]) for spec in [*caps.arch_info.values(), *index_only.values()] if spec.get("deb")}
    words |= {str(a) for spec in index_only.values() for a in spec.get("aliases", [])}
    words |= {str(a) for a in rules.get("other_index_architectures") or []}
    return frozenset(words)


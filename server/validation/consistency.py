"""Consistency warnings: parts of a template that belong to software it does not install.

A service enabled in ``systemConfig.configurations`` (``systemctl enable docker.service``), a user group
(``docker``) or a data partition (``/var/lib/docker``) named after a package the knowledge knows, while no
installed package answers to that name, is most likely left over from a removed capability. Only names
that the knowledge ties to a package are judged (stems, see server/knowledge/stems.py), so units and
groups of the base system never warn. Called from server/validation/validator.py as one more rule family.
"""

from __future__ import annotations

import functools
from typing import Any

from ..knowledge.loader import load_capabilities
from ..knowledge.shell_words import daemon_names, runs_any
from ..knowledge.stems import service_spans, stems, unit_stem
from .context import Context


@functools.lru_cache(maxsize=1)
def _known_stems() -> frozenset[str]:
    caps = load_capabilities()
    return frozenset(stems(caps.known_packages() | caps.alias_names(), caps))


@functools.lru_cache(maxsize=1)
def _optional_names() -> frozenset[str]:
    """Names of the software a capability adds (never the base system's tar or coreutils), with their daemon
    spellings: a program or unit named so is that software's."""
    caps = load_capabilities()
    base = {n.lower() for fam in caps.families for n in caps.base_system(fam)}
    return frozenset(daemon_names(n for g in caps.groups for n in caps.group_package_universe(g)) - base)


def _installed_names(names: list[str]) -> set[str]:
    caps = load_capabilities()
    return daemon_names({a for n in names for a in caps.aliases(n)})


def _list(value: Any) -> list[Any]:
    """A list field, or nothing when the template has the wrong shape there (the schema reports that)."""
    return value if isinstance(value, list) else []


def _provided(word: str, installed: set[str]) -> bool:
    return any(word.startswith(s) or s.startswith(word) for s in installed)


def findings(data: dict[str, Any]) -> list[tuple[tuple[str | int, ...], str, str, str]]:
    """(path, message, code, hint) for every leftover; empty when the template has no package list."""
    system = data.get("systemConfig")
    if not isinstance(system, dict) or not isinstance(system.get("packages"), list):
        return []
    caps = load_capabilities()
    names = [str(p) for p in system["packages"]]
    kernel = system.get("kernel")
    if isinstance(kernel, dict) and isinstance(kernel.get("packages"), list):
        names += [str(p) for p in kernel["packages"]]
    installed = stems(names, caps) | {n.lower() for n in names}
    known = _known_stems()
    have = _installed_names(names)
    missing = _optional_names() - have  # software whose programs a command may not run
    out: list[tuple[tuple[str | int, ...], str, str, str]] = []
    for i, entry in enumerate(_list(system.get("configurations"))):
        cmd = entry.get("cmd") if isinstance(entry, dict) else None
        if not isinstance(cmd, str):
            continue
        for _start, _end, unit in service_spans(cmd):
            stem = unit_stem(unit)
            if (stem in known and not _provided(stem, installed)) or (
                    unit.lower() in _optional_names() and not any(h.startswith(unit.lower()) for h in have)):
                out.append((("systemConfig", "configurations", i, "cmd"),
                            f"enables {unit}, but no installed package provides it",
                            "consistency.service_without_package",
                            f"install the package that ships {unit}, or drop it from the command"))
        for program in runs_any(cmd, missing, frozenset()):
            out.append((("systemConfig", "configurations", i, "cmd"),
                        f"runs {program}, but no installed package provides it: the build's command would fail",
                        "consistency.program_without_package",
                        f"install the package that ships {program}, or drop the command"))
    for i, user in enumerate(_list(system.get("users"))):
        if not isinstance(user, dict):
            continue
        for group in _list(user.get("groups")):
            g = str(group).lower()
            if g in known and g not in caps.system_groups and not _provided(g, installed):
                out.append((("systemConfig", "users", i, "groups"),
                            f"user {user.get('name')!r} is in group {g!r}, but no installed package creates it",
                            "consistency.group_without_package",
                            f"install the package that creates the {g} group, or remove the membership"))
    disk = data.get("disk")
    for i, part in enumerate(_list(disk.get("partitions")) if isinstance(disk, dict) else []):
        mount = str(part.get("mountPoint") or "") if isinstance(part, dict) else ""
        if not mount.startswith("/var/lib/") and not mount.startswith("/opt/"):
            continue
        word = mount.strip("/").split("/")[2 if mount.startswith("/var/lib/") else 1] if mount.count("/") >= 2 else ""
        if word in known and not _provided(word, installed):
            out.append((("disk", "partitions", i, "mountPoint"),
                        f"partition {mount} holds data of {word}, which is not installed",
                        "consistency.mount_without_package",
                        f"remove the {mount} partition, or install {word}"))
    return out


def check(ctx: Context) -> None:
    """The validator's rule family entry point."""
    if isinstance(ctx.data, dict):
        for path, message, code, hint in findings(ctx.data):
            ctx.warn(path, message, code, hint=hint)


__all__ = ["check", "findings"]

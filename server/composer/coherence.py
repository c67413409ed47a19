"""Keeping a template coherent after packages leave it, and one package per exclusive role.

When software is removed, everything it brought goes with it: partitions for its data (``/var/lib/docker``),
``systemctl enable`` of its services, user memberships in its group, and keywords naming it. What belongs to
a package is found by its *stems*: the first word of every name in its equivalence class (docker.io, moby-engine
and docker-ce give ``docker`` and ``moby``). A stem still carried by an installed package is kept.

The same stem rule finds leftovers for the validator's consistency warnings (server/validation/consistency.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ..knowledge.loader import Capabilities
from ..knowledge.shell_words import daemon_names, path_words, runs_any
from ..knowledge.stems import service_spans, stems, unit_stem


def _commands(system: dict[str, Any]) -> list[tuple[Any, str | None]]:
    """Each configuration entry with its command (None for an entry that has none); [] without a list."""
    configs = system.get("configurations")
    if not isinstance(configs, list):
        return []
    return [(entry, entry["cmd"] if isinstance(entry, dict) and isinstance(entry.get("cmd"), str) else None)
            for entry in configs]


def drop_services(system: dict[str, Any], gone: set[str], names: frozenset[str] = frozenset()) -> list[str]:
    """Take units whose stem is in ``gone``, or that are named as a removed package is (``names``:
    dnf-automatic.timer), out of ``systemctl enable`` lines; a line left empty goes."""
    if not isinstance(system.get("configurations"), list):
        return []
    dropped: list[str] = []
    keep: list[Any] = []
    for entry, cmd in _commands(system):
        if cmd is None:
            keep.append(entry)
            continue
        spans = [s for s in service_spans(cmd) if unit_stem(s[2]) in gone or s[2].lower() in names]
        if not spans:
            keep.append(entry)
            continue
        new = cmd
        for start, end, unit in reversed(spans):
            new = new[:start] + new[end:]
            dropped.append(unit)
        new = re.sub(r"[ \t]{2,}", " ", new).strip()
        if re.search(r"systemctl\s+(?:--\S+\s+)*enable\s*(?:$|&&|;|\|)", new):
            new = re.sub(r"systemctl\s+(?:--\S+\s+)*enable\s*(?:&&|;)?\s*", "", new).strip(" ;&")
        if new:
            keep.append({**entry, "cmd": new})
    store_configurations(system, keep)
    return dropped


def drop_commands(system: dict[str, Any], gone: set[str], names: frozenset[str]) -> list[str]:
    """Configuration commands that run a removed package's program (``firewall-offline-cmd`` once firewalld has
    gone, ``ufw``) or write into its directories (``/etc/docker/daemon.json``): they would fail the build or
    configure nothing, so each goes whole."""
    dropped: list[str] = []
    keep: list[Any] = []
    for entry, cmd in _commands(system):
        if cmd is not None and (runs_any(cmd, names, gone) or path_words(cmd) & gone):
            dropped.append(cmd if len(cmd) <= 60 else cmd[:57] + "...")
        else:
            keep.append(entry)
    if dropped:
        store_configurations(system, keep)
    return dropped


def written_commands(system: Any) -> str:
    """Every configuration command of ``system`` (a template's systemConfig), joined: the text the firewall's, the
    users' and the settings' readings search."""
    configs = system.get("configurations") if isinstance(system, dict) else None
    return " ".join(str(c.get("cmd") or "") for c in configs or [] if isinstance(c, dict))


def store_configurations(system: dict[str, Any], keep: list[Any]) -> None:
    """The commands left, or no ``configurations`` key when none is (an empty list is no command)."""
    if keep:
        system["configurations"] = keep
    else:
        system.pop("configurations", None)


def drop_user_groups(system: dict[str, Any], gone: set[str]) -> list[str]:
    """Remove memberships in groups named by a removed package ("docker")."""
    dropped: list[str] = []
    users = system.get("users")
    for user in users if isinstance(users, list) else []:
        if isinstance(user, dict) and isinstance(user.get("groups"), list):
            left = [g for g in user["groups"] if str(g).lower() not in gone]
            if len(left) != len(user["groups"]):
                dropped += [f"{user.get('name')}: {g}" for g in user["groups"] if str(g).lower() in gone]
                user["groups"] = left
    return dropped


def sudo_without_sudo(system: dict[str, Any], gone: set[str]) -> list[str]:
    """Users a template still lets use sudo (the users' ``sudo: true``) once the sudo package has left."""
    users = system.get("users") if "sudo" in gone else None
    return [f"user {u['name']}" for u in users or [] if isinstance(u, dict) and u.get("sudo") is True
            and isinstance(u.get("name"), str)]


def mounts_of(disk: dict[str, Any] | None, gone: set[str]) -> list[str]:
    """Mount points that hold a removed package's data: a path component equal to one of its stems."""
    out: list[str] = []
    parts = (disk or {}).get("partitions")
    for part in parts if isinstance(parts, list) else []:
        mount = str(part.get("mountPoint") or "") if isinstance(part, dict) else ""
        if mount.startswith("/") and set(mount.lower().strip("/").split("/")) & gone:
            out.append(mount)
    return out


def drop_keywords(data: dict[str, Any], gone: set[str]) -> list[str]:
    """Metadata keywords that name removed software."""
    meta = data.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("keywords"), list):
        return []
    left = [k for k in meta["keywords"] if not (set(re.split(r"[\s_-]+", str(k).lower())) & gone)]
    dropped = [str(k) for k in meta["keywords"] if k not in left]
    if dropped:
        meta["keywords"] = left
    return dropped


def gone_stems(removed: Iterable[str], installed: Iterable[str], caps: Capabilities) -> set[str]:
    """Stems of removed packages that no installed package still answers to."""
    return stems(removed, caps) - stems(installed, caps)


def gone_names(removed: Iterable[str], installed: Iterable[str]) -> frozenset[str]:
    """Removed packages' names, with their daemon spellings, that no installed package carries."""
    return frozenset(daemon_names(removed) - daemon_names(installed))


def orphaned_addons(removed: Iterable[str], installed: Iterable[str], caps: Capabilities) -> list[str]:
    """Installed add-ons (mod_ssl) of removed packages (httpd) when no package they extend is left."""
    left = set(installed)
    owners = [o for o in dict.fromkeys(removed) if o in caps.addons and o not in left]
    still = [o for o in caps.addons if o in left]
    return [p for p in installed
            if any(rx.search(p) for o in owners for rx in caps.addons[o])
            and not any(rx.search(p) for o in still for rx in caps.addons[o])]


def exclusive_drops(present: Iterable[str], asked: Iterable[str], caps: Capabilities) -> dict[str, list[str]]:
    """Per exclusive role (one web server, ...): members present that nobody asked for, when another was asked."""
    present_set, asked_set = set(present), set(asked)
    out: dict[str, list[str]] = {}
    for role, members in caps.exclusive.items():
        wanted = [m for m in members if m in asked_set]
        if wanted:
            extra = [m for m in members if m in present_set and m not in asked_set]
            if extra:
                out[role] = extra
    return out


__all__ = ["drop_commands", "drop_keywords", "drop_services", "drop_user_groups", "exclusive_drops", "gone_names",
           "gone_stems", "mounts_of", "orphaned_addons"]

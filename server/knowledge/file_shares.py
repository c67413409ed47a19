"""Folders the image serves (system_settings.yaml ``file_shares``): the configuration entry of a Samba share or an
NFS export, with the server's package, the pattern of an earlier share of the same folder (which it replaces) and
what the template cannot hold, said in a note."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .system_settings import section


@dataclass(frozen=True)
class Share:
    protocol: str  # "samba" | "nfs"
    path: str
    name: str = ""  # a Samba share's name (its folder's by default)
    read_only: bool = False
    guest: bool = False  # Samba: no password asked
    clients: str = ""  # NFS: who may mount it ("" is every host)


def _facts(protocol: str) -> dict[str, str]:
    return {str(k): " ".join(str(v).split()) if k != "command" else str(v).strip()
            for k, v in (section("file_shares").get(protocol) or {}).items()}


def replaces(protocol: str, path: str) -> str:
    """The pattern of the commands that shared ``path`` by ``protocol`` before."""
    return re.escape(_facts(protocol)["replaces"].replace("{path}", path))


def share_configuration(share: Share) -> dict:
    """The configuration entry that serves ``share`` at every boot."""
    facts = _facts(share.protocol)
    name = share.name or share.path.rstrip("/").rsplit("/", 1)[-1] or "share"
    cmd = " ".join(facts["command"].split()).format(
        path=share.path, name=name, read_only="yes" if share.read_only else "no",
        guest="yes" if share.guest else "no", clients=share.clients or "*", mode="ro" if share.read_only else "rw")
    how = ", read-only" if share.read_only else ""
    how += ", guest access" if share.guest else ""
    how += f", for {share.clients}" if share.clients else ""
    label = (f"samba share [{name}] of {share.path}" if share.protocol == "samba" else f"nfs export of {share.path}") + how
    return {"cmd": cmd, "replaces": replaces(share.protocol, share.path), "packages": [facts["package"]],
            "label": label, "setting": f"{share.protocol} share of {share.path}"}


def share_note(share: Share) -> str | None:
    """What the template cannot hold for ``share``, said beside it."""
    facts = _facts(share.protocol)
    if share.protocol == "samba" and not share.guest:
        return f"samba share of {share.path}: {facts['note']}"
    if share.protocol == "nfs" and not share.clients:
        return f"nfs export of {share.path}: {facts['everyone']}"
    return None


_SAMBA_SHARE = re.compile(r"\\n\[([^\]\\]+)\]\\npath = (\S+?)\\nread only = (\w+)\\nguest ok = (\w+)")
_NFS_EXPORT = re.compile(r"echo '(\S+) (\S+)\((\w+),[^']*' >> /etc/exports")


def described(commands: list[str]) -> list[str]:
    """The shares configuration commands written by :func:`share_configuration` serve, in words."""
    out: list[str] = []
    for cmd in commands:
        for name, path, read_only, guest in _SAMBA_SHARE.findall(cmd):
            out.append(f"samba [{name}] {path}" + (" read-only" if read_only == "yes" else "")
                       + (" with guest access" if guest == "yes" else ""))
        for path, clients, mode in _NFS_EXPORT.findall(cmd):
            out.append(f"nfs {path} to {'every host' if clients == '*' else clients}" + (" read-only" if mode == "ro" else ""))
    return out


__all__ = ["Share", "described", "replaces", "share_configuration", "share_note"]

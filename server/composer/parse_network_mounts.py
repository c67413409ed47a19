"""Reading network shares the image mounts ("mounts an nfs share from 10.0.0.5:/exports/home at /home", "the smb
share //files/public on /mnt/public", "/mnt/media from nas.lan:/media"): a systemd mount unit for each, with its
protocol's client (server/knowledge/system_settings.py network_mount_configuration). An NFS share is written
host:/path, an SMB one //host/share (or \\\\host\\share). "remove the nfs mount" takes one out."""

from __future__ import annotations

import re

from ..knowledge.system_settings import mount_unit_name, network_mount_configuration, network_mount_kinds
from .parse_schedules import UNDO
from .phrasing import ParserState

_HOST = r"(?:\d{1,3}(?:\.\d{1,3}){3}|[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*)"
_NFS = rf"(?<![\w/.:@-]){_HOST}:/(?!/)[\w.+/-]*"  # never a URL's "https://"
_SMB = rf"(?:(?<![\w:/])//{_HOST}/[\w.$+-]+(?:/[\w.$+-]+)*|\\\\{_HOST}\\[\w.$+-]+(?:\\[\w.$+-]+)*)"
_PROTOCOL = r"(?:nfs(?:v?[34](?:\.\d)?)?|smb|cifs|samba|windows|network)"
_SHARE = r"(?:shares?|exports?|mounts?|drives?|folders?|volumes?|directory|dir)"
# What comes before a share: "mounts an nfs share from", "mount the export", "an smb share of".
_LEAD = (rf"(?:\b(?:mounts?|mounting|mounted)\s+)?(?:(?:a|an|the|my|our|its)\s+)?(?:{_PROTOCOL}\s+)?(?:{_SHARE}\s+)?"
         r"(?:(?:from|of|at)\s+)?")
_PLACE = r"(/[\w.+/-]*)"
# After it: "over nfs", then where ("at /home", "mounted on /mnt/media").
_TAIL = (rf"(?:\s+(?:over|via|using|with)\s+{_PROTOCOL})?(?:\s*,?\s+(?:(?:and\s+)?mounted\s+|mount(?:ed)?\s+it\s+)?"
         rf"(?:at|on|to|under|into|as|in)\s+(?:the\s+)?{_PLACE}(?:\s+(?:over|via|using|with)\s+{_PROTOCOL})?)?")
# A share mounted with no credentials ("guest access", "as guest", "anonymously").
_GUEST = r"\b(?:(?:with|as|for)\s+)?(?:a\s+)?(?:guest|anonymous)(?:\s+(?:access|login|user|mount))?\b|\banonymously\b"
# Never mounted over: the root and the boot files the machine starts from.
_SYSTEM_PLACES = re.compile(r"/|/boot(?:/.*)?|/usr|/etc|/var|/proc|/sys|/dev|/run")


class NetworkMountPhrases(ParserState):
    """The network shares of a request, written as configuration commands."""

    def _network_mounts(self) -> None:
        kinds = network_mount_kinds()
        for m in self._each(rf"(?:\b{UNDO}\s+(?:the\s+|that\s+|any\s+)?(?P<said>{_PROTOCOL}\s+)?(?:share|mount|export)s?"
                            rf"(?:\s+(?:at|on|from)\s+(?:the\s+)?{_PLACE})?"
                            rf"|\bunmount\s+(?:the\s+)?(?P<named>{_PROTOCOL}\s+)?(?:{_SHARE}\s+)?(?:at\s+|on\s+)?{_PLACE})"):
            where, said = m.group(2) or m.group(4), (m.group("said") or m.group("named") or "").strip().lower()
            mount_type = "cifs" if said in ("smb", "cifs", "samba", "windows") else "nfs" if said.startswith("nfs") else ""
            if where:  # the one at that place
                replaces = rf"/etc/systemd/system/{re.escape(mount_unit_name(where.rstrip('/') or '/'))}'"
            else:  # every one of the protocol said, or every one
                replaces = rf"\[Mount\]\\nWhat=[^']*\\nType={mount_type or '(?:nfs|cifs)'}\\n"
            self.spec.configurations.append({"remove": True, "cmd": "", "replaces": replaces,
                                             "label": "network share" + (f" at {where}" if where else "s")})
            self._mask(m.start(), m.end())
        # "mounts an nfs share at /mnt/data": from no server said
        for m in self._each(rf"\bmount(?:s|ed|ing)?\s+(?:a|an|the|my|our)\s+{_PROTOCOL}\s+{_SHARE}\s+(?:at|on|to|under|into)\s+"
                            rf"(?:the\s+)?{_PLACE}"):
            self.spec.notes.append(f"network share at {m.group(1)} not mounted: no server said; say which, e.g. "
                                   f"'mount nas.lan:/export at {m.group(1)}' (NFS) or '//nas.lan/share' (SMB)")
            self._mask(m.start(), m.end())
        # "/mnt/media from nas.lan:/media", "mount /srv/share from //files/public": the place said first
        first = rf"(?:\bmount\s+)?{_PLACE}\s+(?:(?:is|should\s+be|gets)\s+)?(?:mounted\s+)?from\s+{_LEAD}"
        for placed_first in (True, False):
            pattern = (rf"{first}(?P<source>{_NFS}|{_SMB})(?:\s+(?:over|via|using)\s+{_PROTOCOL})?" if placed_first
                       else rf"{_LEAD}(?P<source>{_NFS}|{_SMB}){_TAIL}")
            for m in self._each(pattern):
                source = m.group("source").replace("\\", "/")
                where = m.group(1) if placed_first else m.group(2)
                kind = kinds["cifs" if source.startswith("//") else "nfs"]
                self._mask(m.start(), m.end())
                said_guest = self._each(_GUEST) if kind.guest_options else []
                guest = bool(said_guest)
                for g in said_guest:
                    self._mask(g.start(), g.end())
                if where is None:
                    self.spec.notes.append(f"network share {source} not mounted: no mount point said; say where, "
                                           f"e.g. 'mount {source} at /mnt/share'")
                    continue
                where = where.rstrip("/") or "/"
                if _SYSTEM_PLACES.fullmatch(where):
                    self.spec.unsupported.append(f"network share {source} at {where}: the system's own files are "
                                                 "never mounted from the network; mount it under /mnt or /srv")
                    continue
                self.spec.configurations.append(network_mount_configuration(kind, source, where, guest))
                if kind.secret and not guest:
                    self.spec.notes.append(f"network share {source}: {kind.secret}")


__all__ = ["NetworkMountPhrases"]

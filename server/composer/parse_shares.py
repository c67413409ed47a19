"""Reading the folders the image serves to other machines: "share /srv/media over samba", "/srv/public shared via
smb with guest access", "a samba share named media at /srv/media", "export /srv/data over nfs to 10.0.0.0/24,
read-only", "stop sharing /srv/media". Each is a configuration entry (server/knowledge/file_shares.py) with its
server's package; the mounts of other machines' shares are parse_network_mounts.py's."""

from __future__ import annotations

import re

from ..knowledge.file_shares import Share, replaces, share_configuration, share_note
from .parse_schedules import UNDO
from .phrasing import ParserState

_SAMBA = r"(?:samba|smb|cifs|windows\s+shar(?:e|ing))"
_NFS = r"nfs(?:v?[34](?:\.\d)?)?"
_PROTOCOL = rf"(?:(?P<smb>{_SAMBA})|(?P<nfs>{_NFS}))"
_ANY_PROTOCOL = rf"(?:{_SAMBA}|{_NFS})"  # said again in the same pattern, where a group name can stand only once
_PATH = r"(?P<path>/[\w.+-]+(?:/[\w.+-]+)*)/?"
_OVER = r"(?:over|via|with|using|by|through|as\s+an?)"
_SHARING = r"(?:share|shares|sharing|shared|export|exports|exporting|exported|serve|serves|serving|served|publish(?:es|ing|ed)?)"
_FOLDER = r"(?:(?:the\s+)?(?:folder|directory|dir)\s+)?"
_NAMED = r"(?:\s+(?:named|called)\s+[\"'`]?(?P<name>[\w-]+)[\"'`]?)?"
# After a share: who may mount it, read-only, no password.
_CLIENTS = r"(?P<clients>\d{1,3}(?:\.\d{1,3}){3}(?:/\d{1,2})?|[a-z0-9][\w-]*(?:\.[\w-]+)+)"
_TAIL = (rf"(?:\s*,?\s*(?:(?:to|for)\s+(?:the\s+)?(?:hosts?\s+|clients?\s+|network\s+)?{_CLIENTS}"
         r"(?:\s+(?:network|subnet|lan))?|(?P<ro>read[\s-]?only|readonly)|(?P<guest>(?:with\s+)?(?:guest|anonymous|public)"
         r"(?:\s+(?:access|login|read))?|without\s+(?:a\s+)?passwords?)))*")
# The system's own places, never served
_SYSTEM = re.compile(r"/|/boot(?:/.*)?|/usr|/etc|/proc|/sys|/dev|/run|/var")


class SharePhrases(ParserState):
    """The folders a request serves over Samba or NFS, written as configuration commands."""

    def _shares(self) -> None:
        for m in self._each(rf"\b(?:stop\s+(?:sharing|exporting)|unshare|no\s+longer\s+(?:share|export)"
                            # "of": a share this image serves; "at" is where a share of another machine is mounted
                            rf"|{UNDO}\s+(?:the\s+)?{_PROTOCOL}?\s*(?:share|export)\s+(?:of\s+|for\s+)?)\s*{_FOLDER}"
                            rf"{_PATH}(?:\s+{_OVER}\s+{_ANY_PROTOCOL})?"):
            path = m.group("path")
            protocols = ["samba"] if m.group("smb") else ["nfs"] if m.group("nfs") else ["samba", "nfs"]
            for protocol in protocols:  # a protocol not said: whichever the image has (the other goes unsaid)
                self.spec.configurations.append({"remove": True, "cmd": "", "replaces": replaces(protocol, path),
                                                 "implied": len(protocols) > 1,
                                                 "label": f"{'samba share' if protocol == 'samba' else 'nfs export'} "
                                                          f"of {path}"})
            self._mask(m.start(), m.end())
        for pattern in (
                # "share /srv/media over samba", "export the folder /srv/data via nfs"
                rf"\b{_SHARING}\s+{_FOLDER}{_PATH}\s+{_OVER}\s+(?:an?\s+)?{_PROTOCOL}(?:\s+(?:share|export))?{_NAMED}",
                # "/srv/public shared via smb", "/srv/data is exported over nfs"
                rf"(?<![\w/.-]){_PATH}\s+(?:(?:is|should\s+be|gets?)\s+)?{_SHARING}\s+{_OVER}\s+{_PROTOCOL}{_NAMED}",
                # "a samba share named media at /srv/media", "an nfs export of /srv/data", "smb share for /srv/scans"
                rf"\b{_PROTOCOL}\s+(?:share|export)d?{_NAMED}\s+(?:of|for|at|on|from)\s+{_FOLDER}{_PATH}"):
            for m in self._each(pattern + _TAIL):
                self._share(m)
        # "samba with a share called public": a share named without its folder is served from /srv/<name>, said
        # (it had been read as the machine's name)
        for m in self._each(rf"\b{_PROTOCOL}\s+(?:with\s+)?(?:an?\s+|one\s+)?(?:share|export)d?\s+(?:named|called)\s+"
                            rf"[\"'`]?(?P<name>[a-z0-9][\w-]*)[\"'`]?(?!\s*(?:of|for|at|on|from)\s+(?:the\s+)?"
                            rf"(?:(?:folder|directory|dir)\s+)?/)" + _TAIL):
            self._share(m)

    def _share(self, m: re.Match[str]) -> None:
        if re.search(rf"(?:\b{UNDO}|\bmount(?:s|ed|ing)?)\s+(?:the\s+|that\s+|any\s+|an?\s+|my\s+|our\s+)?$",
                     self.work[:m.start()], re.I):
            return  # "remove the nfs share at /home", "mounts an nfs share at /mnt": another machine's (the mounts')
        said = m.groupdict().get("path")
        path = said or f"/srv/{m.group('name')}"
        if not said:
            self.spec.notes.append(f"share {m.group('name')!r} served from {path}, as no folder was named (say "
                                   "'a samba share named media at /srv/media' for another)")
        self._mask(m.start(), m.end())
        if _SYSTEM.fullmatch(path):
            self.spec.unsupported.append(f"sharing {path}: the system's own files are never served to other machines; "
                                         "share a folder under /srv or /home")
            return
        protocol = "samba" if m.group("smb") else "nfs"
        share = Share(protocol, path, name=m.group("name") or "", read_only=bool(m.group("ro")),
                      guest=protocol == "samba" and bool(m.group("guest")), clients=m.group("clients") or "")
        if protocol == "samba" and m.group("clients"):
            self.spec.notes.append(f"samba share of {path}: 'to {m.group('clients')}' not written (Samba's "
                                   "'hosts allow' is left to its own configuration)")
            share = Share(protocol, path, share.name, share.read_only, share.guest)
        self.spec.configurations.append(share_configuration(share))
        note = share_note(share)
        if note:
            self.spec.notes.append(note)


__all__ = ["SharePhrases"]

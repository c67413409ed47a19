"""Reading SSH public keys given for a user ("user admin with ssh key ssh-ed25519 AAAA… admin@laptop", "add my key
ssh-rsa AAAA… to bob").

The template format has no field for a user's keys, so a key is written by configuration commands: the key into
/etc/ssh/authorized_keys/<user>, owned by root (so it does not depend on the user's home existing when the
build's configuration commands run), and an sshd drop-in that reads keys from there as well as from
~/.ssh/authorized_keys. A key whose user is not said goes to the template's only user, else is reported: never to
a guessed account."""

from __future__ import annotations

import re

from ..knowledge.system_settings import sshd_configuration
from .phrasing import NAMED_WHO, NOT_A_USER, ParserState

# An OpenSSH public key line: its type, its base64 body, and an optional comment of the user@host kind.
_KEY = re.compile(
    r"(?<![\w-])((?:ssh-(?:ed25519|rsa|dss)|ecdsa-sha2-nistp(?:256|384|521)|sk-(?:ssh-ed25519|ecdsa-sha2-nistp256)"
    r"@openssh\.com)\s+[A-Za-z0-9+/]{16,}={0,3})(?![\w+/=])(?:\s+([\w.+-]+@[\w.-]*\w))?")
# The words that introduce a key ("with the ssh public key:", "authorized key") and must not read as wishes.
_INTRO = re.compile(r"(?:\b(?:with|and|using|add|install|put)\s+)?(?:\b(?:an?|the|my|our|his|her|their|this)\s+)?"
                    r"(?:\bssh\s+)?(?:\b(?:public|authori[sz]ed)\s+)?\b(?:keys?|pub\s*keys?|pubkeys?)\s*[:=]?\s*$", re.I)
# "ssh key for root: ssh-ed25519 …": the key's words and its user, before it.
_INTRO_FOR = re.compile(r"(?:\b(?:an?|the|my|our)\s+)?(?:\bssh\s+)?(?:\b(?:public|authori[sz]ed)\s+)?\bkeys?\s+(?:for|of)\s+"
                        rf"(?:(?:the\s+)?(?:user|account)\s+)?{NAMED_WHO}\s*[:=]?\s*$", re.I)
_USER_BEFORE = re.compile(rf"\b(?:user|account|login|for|to)\s+{NAMED_WHO}"
                          r"(?:\s+(?:can|may|will|should|must|to|who|which|that|logs?|with|has|gets?)\b[^,;]*)?\s*$", re.I)
_USER_AFTER = re.compile(rf"^\s*(?:for|to)\s+(?:the\s+)?(?:user\s+|account\s+)?{NAMED_WHO}", re.I)
_USER_NAMED = re.compile(rf"\b(?:user|account)\s+{NAMED_WHO}", re.I)
# Words in a user's place that name nobody ("for the image", "to it"); not the stop words, which hold verbs that
# are fine account names ("deploy").
_NOT_A_NAME = NOT_A_USER | {"ssh", "me", "my", "login", "log", "key", "keys", "the", "a", "an", "this", "that",
                            "them", "us", "each", "every", "any", "and", "or", "with", "can"}
# Read from there as well as from each user's own file (sshd's default).
_KEYS_FILE = "AuthorizedKeysFile .ssh/authorized_keys /etc/ssh/authorized_keys/%u"


def key_commands(user: str, key: str) -> list[dict[str, str]]:
    """The configuration entries that let ``user`` log in with ``key``: the key's file, then sshd's drop-in."""
    path = f"/etc/ssh/authorized_keys/{user}"
    body = key.split()[1]
    return [
        {"cmd": f"mkdir -p /etc/ssh/authorized_keys && echo '{key}' >> {path} && chmod 644 {path}",
         "label": f"ssh key for {user}", "replaces": re.escape(body)},
        {**sshd_configuration((_KEYS_FILE,), "authorized-keys", "ssh keys"), "label": "sshd reads the keys"},
    ]


class KeyPhrases(ParserState):
    """SSH public keys and the user each is for."""

    def _ssh_keys(self) -> None:
        for m in reversed(list(_KEY.finditer(self.work))):  # right to left: masking keeps earlier offsets
            key = " ".join([*m.group(1).split(), *([m.group(2)] if m.group(2) else [])])
            start, user = m.start(), None
            named = _INTRO_FOR.search(self.work[:start])
            if named and _is_name(named.group(1)):
                start, user = named.start(), named.group(1)
            elif intro := _INTRO.search(self.work[:start]):
                start = intro.start()
            user = user or self._key_user(start, m.end())
            self._mask(start, m.end())
            self.spec.ssh_keys.append({"user": user, "key": key})  # no user: the template's only one, if it has one

    def _key_user(self, start: int, end: int) -> str | None:
        """The user a key is for: named after it ("… for bob"), else the nearest one named before it in its
        clause ("user admin can log in with ssh key …"), else the one user the request names before it; None if
        none is said (server/composer/system_edits.py then takes the template's only user, or reports it)."""
        after = _USER_AFTER.match(self.work[end:])
        if after and _is_name(after.group(1)):
            self._mask(end + after.start(), end + after.end())
            return after.group(1)
        clause = re.split(r"[;.]\s|,\s*(?=\w+\s+\w)", self.work[:start])[-1]
        before = _USER_BEFORE.search(clause)
        if before and _is_name(before.group(1)):
            return before.group(1)
        # "debian, user ops, ssh key: …": the one user the request names before it
        named = {u.group(1) for u in _USER_NAMED.finditer(self.work[:start]) if _is_name(u.group(1))}
        return named.pop() if len(named) == 1 else None

    def _ssh_hardened(self) -> None:
        """"sshd hardened", "hardened ssh", "ssh hardening": the SSH server's own settings, not the security group
        of the whole image; the settings said with it are read as such, and which others exist is said."""
        for m in self._each(r"\b(?:ssh|sshd|openssh)(?:\s+(?:server|config(?:uration)?))?\s+(?:(?:is|should\s+be|must\s+be)\s+)?"
                            r"(?:hardened|hardening)\b|\bharden(?:ed)?\s+(?:the\s+)?(?:ssh|sshd|openssh)(?:\s+server)?\b"):
            self.spec.notes.append("ssh hardening: only the settings said are written; others that can be said: "
                                   "'no root login', 'keys only', 'max 3 auth tries', 'ssh on port 2222', "
                                   "'only user ops can log in', 'ssh only from 10.0.0.0/8'")
            if "ssh" in self.caps.groups:
                self.spec.add_groups.append("ssh")
            self._mask(m.start(), m.end())


def _is_name(word: str) -> bool:
    return word.lower() not in _NOT_A_NAME


__all__ = ["KeyPhrases", "key_commands"]

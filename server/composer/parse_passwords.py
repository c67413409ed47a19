"""A user's password said absent or locked ("a user bob with no password", "lock bob's password", "its password
should be locked"): the account keeps no password (useradd leaves it locked), so a password the template sets for
it is taken out (system_edits.users); it is no plain-text password to refuse."""

from __future__ import annotations

import re
from typing import Any

from .phrasing import WHO, ParserState

# Said in a user's own clause ("with no password", "whose password is locked"); "no password login" and
# "passwordless sudo" say something else (their own readings).
# A password said absent, never of a way in ("no password login", "no password auth") nor of sudo's
_ABSENT = r"(?:no|without(?:\s+an?|\s+any)?)\s+password\b(?!\s*(?:-\s*)?(?:log|auth|sudo|ssh))"
NO_PASSWORD = re.compile(
    rf"\b{_ABSENT}"
    r"|\bpassword\s+(?:is\s+|should\s+be\s+|must\s+be\s+|stays\s+|to\s+be\s+)?(?:locked|disabled|empty|unset)\b"
    r"|\blocked\s+password\b", re.I)
_LOCKED = r"(?:should|must|will|needs?\s+to)?\s*(?:be|stay|is|are)?\s*(?:locked|disabled)"
_POSSESSIVE = r"(?:its|his|her|their)"


class PasswordPhrases(ParserState):
    """Locked passwords said of a user outside the user's own clause."""

    def _user_referred(self, word: str) -> dict[str, Any] | None:
        raise NotImplementedError

    def _pronoun_user(self) -> dict[str, Any]:
        raise NotImplementedError

    def _password_not_stored(self, name: str) -> None:
        self.spec.notes.append(f"password for user {name} not stored: plain-text passwords do not belong in a "
                               "template; set a hashed password (password + hash_algo) or use SSH keys")

    def _locked_passwords(self) -> None:
        """"lock bob's password", "bob's password should be locked", "its password should be locked": said after
        the users' reading, of a user this request adds or, not one of them, of the template's."""
        for m in self._each(rf"\block\s+(?:the\s+)?(?:password\s+(?:of|for)\s+(?:user\s+)?{WHO}|{WHO}(?:['’]s)?\s+password)\b"
                            rf"|\b(?:the\s+)?(?:user\s+)?{WHO}(?:['’]s)\s+password\s+{_LOCKED}\b"
                            rf"|\b({_POSSESSIVE})\s+password\s+{_LOCKED}\b"
                            # "users alice and bob, alice without a password": said right after a user's name
                            rf"|\b(?:with\s+(?=no\b)|(?=without\b)){_ABSENT}"):
            if not any(m.groups()):
                named = re.search(r"([a-z_][\w-]*)\s*$", self.said[:m.start()], re.I)
                user = self._user_referred(named.group(1).lower()) if named else None
                if user is None:
                    continue  # "nginx without a password": no user of this request named before it
                user["locked"] = True
                self._mask(m.start(), m.end())
                continue
            name = next(g for g in m.groups() if g).lower()
            user = self._pronoun_user() if re.fullmatch(_POSSESSIVE, name) else self._user_referred(name)
            if user is None:  # a user of the template's, changed, never created
                user = {"action": "add", "name": name, "existing_only": True}
                self.spec.users.append(user)
            user["locked"] = True
            self._mask(m.start(), m.end())


__all__ = ["NO_PASSWORD", "PasswordPhrases"]

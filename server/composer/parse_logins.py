"""Who may log in over ssh: "only user ops can log in via ssh key", "allow only alice and bob to ssh in" (sshd's
AllowUsers), each user added unless the image has them."""

from __future__ import annotations

import re
from typing import Any

from ..knowledge.system_settings import load_settings, sshd_configuration
from .parse_sudo import SudoPhrases
from .phrasing import NOT_A_USER, STOPWORDS


class LoginPhrases(SudoPhrases):
    """The users a request lets log in, and no one else."""

    def _user_referred(self, word: str) -> dict[str, Any] | None:
        """The user of the request or the template a word names (parse_users.py)."""
        raise NotImplementedError

    def _only_users_log_in(self) -> None:
        """"only user ops can log in via ssh key", "allow only alice and bob to ssh in": sshd lets those users in
        and no one else (AllowUsers, sshd_config(5)); each is added unless the image has them, and a key said as
        the way in leaves passwords out (the key-only setting)."""
        who = r"[a-z_][a-z0-9_-]*"
        names = rf"(?:the\s+)?(?:users?\s+|accounts?\s+)?(?P<names>{who}(?:\s*(?:,\s*(?:and\s+|or\s+)?|\band\b|\bor\b)\s*{who})*)"
        log_in = r"(?:log\s*-?\s*in|login|ssh(?:\s+in(?:to\s+it)?)?|connect)"
        how = r"(?P<how>(?:\s+(?:remotely|(?:via|over|through|with|by|using)\s+(?:an?\s+)?(?:ssh(?:\s+keys?)?|(?:public\s+)?keys?)))*)"
        for m in [*self._each(rf"\bonly\s+{names}\s+(?:can|may|should\s+be\s+able\s+to|(?:is|are)\s+allowed\s+to|gets?\s+to)"
                              rf"\s+{log_in}{how}"),
                  *self._each(rf"\b(?:allow|let)\s+only\s+{names}\s+(?:to\s+)?{log_in}{how}")]:
            people = [n.lower() for n in re.split(r"\s*(?:,|\band\b|\bor\b)\s*", m.group("names")) if n]
            if not people or any(n in NOT_A_USER or n in STOPWORDS or n in self.known for n in people):
                continue
            for name in people:
                if name != "root" and self._user_referred(name) is None:  # root is in every image
                    self.spec.users.append({"action": "add", "name": name})
            self.spec.configurations.append({**sshd_configuration((f"AllowUsers {' '.join(people)}",), "allow-users",
                                                                  "ssh users"), "packages": ["openssh-server"],
                                             "label": f"ssh logins only for {', '.join(people)}"})
            if re.search(r"\bkeys?\b", m.group("how") or ""):
                keys_only = load_settings()["key-only ssh"]
                entry = keys_only.configuration(keys_only.value)
                if entry:
                    self.spec.configurations.append({**entry, "label": "password login off"})
            self._mask(m.start(), m.end())


__all__ = ["LoginPhrases"]

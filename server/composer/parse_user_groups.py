"""Reading a user's groups said apart from the user's own clause: "add bob to the docker group", "put alice in
the wheel and video groups" (into them), "drop the video group from operator", "take ops out of docker" (out of
them)."""

from __future__ import annotations

import re
from typing import Any

from .parse_sudo import PRONOUNS
from .phrasing import NAMED_WHO, NOT_A_USER, STOPWORDS, ParserState

# Groups listed for a user ("docker, video and audio"), lazily, so "groups"/"group" after them stays outside.
GROUP_LIST = r"([a-z_][\w-]*(?:\s*(?:,|and)\s*(?!and\b)[a-z_][\w-]*)*?)"


def group_names(listed: str) -> list[str]:
    """The groups of a list said for a user ("docker, video and audio")."""
    return [g for g in re.split(r"\s*(?:,|\band\b)\s*", listed) if g and g.lower() not in STOPWORDS]


class UserGroupPhrases(ParserState):
    """A user's groups, said into or out of."""

    def _user_referred(self, word: str) -> dict[str, Any] | None:
        raise NotImplementedError

    def _user_into_groups(self) -> None:
        """"add bob to the docker group", "put alice in the wheel and video groups": a user named into groups; one
        the request or the template does not have is added with them. A package's or a group's name is no
        user's ("add nginx to the www-data group" is software)."""
        who = r"[\"'`]?[a-z_][a-z0-9_-]*[\"'`]?"
        for m in self._each(rf"\b(?:add|put|place|make)\s+(?:the\s+)?(?:users?\s+|accounts?\s+)?(?:(?:named|called)\s+)?+"
                            rf"({who}(?:\s*(?:,\s*(?:and\s+)?|\band\b)\s*{who})*)\s+"
                            rf"(?:a\s+member\s+of|in(?:to)?|to)\s+(?:the\s+)?(?:groups?\s+)?{GROUP_LIST}\s+groups?\b"):
            people = [n.strip("\"'`").lower() for n in re.split(r"\s*(?:,|\band\b)\s*", m.group(1)) if n]
            if any(n in NOT_A_USER or n in STOPWORDS or n in self.known or self.caps.group_for_word(n) for n in people):
                continue  # "add nginx to the www-data group" is software
            names = group_names(m.group(2))
            for name in people:
                user = self._user_referred(name)
                if user is None:
                    user = {"action": "add", "name": name}
                    self.spec.users.append(user)
                user["groups"] = list(dict.fromkeys([*(user.get("groups") or []), *names]))
            self._mask(m.start(), m.end())

    def _groups_left(self) -> None:
        """"drop the video group from operator", "remove operator from the video group", "take ops out of docker": a
        user leaves groups; a user the template lacks is said, not created."""
        group = r"(?:the\s+)?([a-z_][a-z0-9_-]*)(?:\s+group)?"
        for m in self._each(rf"\b(?:remove|drop|take)\s+(?:the\s+)?([a-z_][a-z0-9_-]*)\s+group\s+(?:away\s+)?from\s+"
                            rf"(?:the\s+)?(?:user\s+|account\s+)?{NAMED_WHO}"
                            rf"|\b(?:remove|drop|take)\s+(?:the\s+)?(?:user\s+|account\s+)?{NAMED_WHO}\s+(?:out\s+of|from)\s+{group}"):
            g = m.groups()
            gname, user = (g[0], g[1]) if g[0] else (g[3], g[2])
            said_group = bool(g[0]) or m.group(0).rstrip().endswith("group")
            # "remove docker from the image": software from the image, no user from a group
            pronoun = re.fullmatch(PRONOUNS, user.lower())
            if (user.lower() in NOT_A_USER and not pronoun) or self._known_word(user) or not (said_group or self._known_group(gname)):
                continue
            named = self._user_referred(user.lower())
            if named is not None and named.get("existing_only"):  # "remove her from the video group": the template's
                named["leave_groups"] = [*named.get("leave_groups", []), gname]
            elif named is not None:
                named["groups"] = [x for x in named.get("groups") or [] if x != gname]
            else:
                self.spec.users.append({"action": "add", "name": user, "existing_only": True, "leave_groups": [gname]})
            self._mask(m.start(), m.end())

    def _known_group(self, name: str) -> bool:
        return name in self.caps.system_groups


__all__ = ["GROUP_LIST", "UserGroupPhrases", "group_names"]

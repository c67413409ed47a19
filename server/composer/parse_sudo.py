"""Reading who may use sudo: sudo given to a user by name ("give ops sudo", "alice is an admin"), taken away ("carol
is no longer an admin"), without a password ("passwordless sudo for deploy"), and Docker used without sudo (the
docker group)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .phrasing import FUNCTION_WORDS, NOT_A_USER, WHO, ParserState

# Sudo that asks no password ("passwordless sudo", "sudo without a password", "NOPASSWD"): upstream templates
# write it as a sudoers.d file from a configuration command (the schema's ``sudo: true`` alone asks for one).
NOPASSWD = re.compile(r"\b(?:password[\s-]?less|password[\s-]?free|no[\s-]password|nopasswd)\s+sudo\b"
                      r"|\bsudo\s+(?:without|with\s+no|w/o)\s+(?:a\s+|any\s+)?password\b|\bnopasswd\b", re.I)

# A role as people give it to a user: "admin", "administrator", "sudo rights", "root access".
ROLE = r"(?:sudo(?:er)?|admin(?:istrator)?|root|superuser)s?(?:\s+(?:rights|access|privileges|permissions))?\b"
# A pronoun standing for the user just named ("a user lisa, she should not be an admin").
PRONOUNS = r"(?:she|he|they|him|her|them)"
# Verbs of being allowed, before what a user may do ("alice can sudo", "bob may use sudo").
_ABLE = r"(?:can|may|should\s+be\s+able\s+to|is\s+allowed\s+to|gets?\s+to|must\s+be\s+able\s+to)"
# Words before "user" that say which, never who ("the new user has sudo"), and determiners ("give the root partition").
_NOT_A_NAME = {"new", "normal", "regular", "standard", "default", "local", "main", "first", "second", "other", "extra",
               "additional", "single", "only", "same", "primary", "last", "existing", "current", "one", "every", "each",
               "the", "a", "an", "its", "their", "this", "my", "our", "your"}


def _join_docker(user: dict[str, Any]) -> None:
    """``user`` in the docker group, which lets a user reach Docker's socket."""
    if "docker" not in (user.get("groups") or []):
        user["groups"] = [*(user.get("groups") or []), "docker"]


class SudoPhrases(ParserState):
    """The sudo phrases of a request, over the users the user reading keeps (UserPhrases)."""

    def _user_referred(self, word: str) -> dict[str, Any] | None:
        raise NotImplementedError

    def _pronoun_user(self) -> dict[str, Any]:
        raise NotImplementedError

    def _docker_without_sudo(self) -> None:
        """"let the user admin use docker without sudo", "ops can run it without root", "let user dev use it" (it:
        Docker named in the request): membership of the docker group, which lets a user reach Docker's socket; not
        sudo taken out. Said without sudo, "let" asks the same: using Docker is reaching its socket."""
        docker = re.search(r"\bdocker\b", self.said, re.I) is not None
        podman = re.search(r"\bpodman\b", self.said, re.I) is not None
        what = r"(?:docker|podman|it|containers)" if docker or podman else r"(?:docker|podman)"
        for m in self._each(rf"\b(?:let|allow)\s+(?:the\s+)?(?:user\s+|account\s+)?{WHO}\s+(?:to\s+)?(?:use|run)\s+({what})"
                            rf"|\b(?:the\s+)?(?:user\s+|account\s+)?{WHO}\s+{_ABLE}\s+(?:use|run)\s+({what})"):
            name = (m.group(1) or m.group(3)).lower()
            runtime = (m.group(2) or m.group(4)).lower()
            tail = re.match(r"\s+without\s+(?:sudo|root|being\s+root)\b", self.work[m.end():], re.I)
            if (tail is None and not re.match(r"\s*(?:let|allow)\b", m.group(0), re.I)) or name in NOT_A_USER or (
                    name in _NOT_A_NAME):
                continue
            if runtime == "podman" or runtime != "docker" and not docker:
                self.spec.notes.append(f"podman without sudo for {name}: nothing to write, Podman runs rootless "
                                       "for any user")
            else:
                self.spec.users.append({"action": "add", "name": name, "groups": ["docker"]})
            group = self.caps.group_for_word(runtime)
            if group:  # the runtime named here is asked for too
                self.spec.add_groups.append(group)
                self.spec.groups_named.append(group)
            self._mask(m.start(), m.end() + (tail.end() if tail else 0))

    def _users_able_to_use_docker(self) -> None:
        """"a user called ci that can use it" (it: Docker named in the request), "a user bob who can run docker",
        "user ops with docker access": a user this request adds, said able to use Docker, is in the docker group,
        which lets a user reach Docker's socket. Read after the users, from the words as said (a user's clause has
        taken them)."""
        if re.search(r"\bdocker\b", self.said, re.I) is None:
            return
        added = {str(u.get("name")).lower(): u for u in self.spec.users if u.get("action") == "add"}
        what = r"(?:docker|it|containers)"
        for m in re.finditer(rf"\b{WHO}\s*,?\s+(?:(?:who|that)\s+)?{_ABLE}\s+(?:use|run|access|manage)\s+"
                             rf"(?:the\s+)?{what}\b|\b{WHO}\s+with\s+docker\s+(?:access|rights|permissions|privileges)\b",
                             self.said, re.I):
            user = added.get((m.group(1) or m.group(2)).lower())
            if user is not None:
                _join_docker(user)
        # "give user azureuser access to docker", "grant ops docker rights": a user given Docker is in its group,
        # as "add azureuser to the docker group" says (an edit's user may be the template's)
        for m in re.finditer(rf"\b(?:give|grant)\s+(?:the\s+)?(?:user\s+|account\s+)?{WHO}\s+(?:(?:the\s+)?access\s+to\s+"
                             rf"(?:the\s+)?docker|docker\s+(?:access|rights|permissions|privileges))\b", self.said, re.I):
            name = m.group(1).lower()
            if name in NOT_A_USER or name in ("it", "them", "him", "her"):
                continue
            user = added.get(name)
            if user is None:
                user = {"action": "add", "name": name}
                self.spec.users.append(user)
                added[name] = user
            _join_docker(user)

    def _passwordless_sudo(self) -> None:
        """Passwordless sudo said outside a user's own clause: "give ops passwordless sudo", "passwordless sudo
        for deploy", or alone when the request adds exactly one user ("user bob, passwordless sudo")."""
        who = WHO
        for m in self._each(rf"\b(?:give|grant|allow|let)\s+(?:the\s+)?(?:user\s+)?{who}\s+(?:use\s+)?"
                            rf"(?:{NOPASSWD.pattern})"
                            rf"|(?:{NOPASSWD.pattern})\s+(?:for|to)\s+(?:the\s+)?(?:user\s+|account\s+)?{who}"
                            # "user alice can sudo without a password"
                            rf"|\b(?:the\s+)?(?:user\s+|account\s+)?{who}\s+{_ABLE}\s+(?:use\s+|run\s+)?(?:{NOPASSWD.pattern})"):
            name = next(g for g in m.groups() if g).lower()
            if name in FUNCTION_WORDS or name in NOT_A_USER:  # "deploy", a verb too, may be an account
                continue
            self._grant_nopasswd(name)
            self._mask(m.start(), m.end())
        for m in self._each(NOPASSWD.pattern):
            added = [u for u in self.spec.users if u.get("action") == "add"]
            if len({u["name"] for u in added}) == 1:
                self._grant_nopasswd(added[0]["name"])
            else:
                self.spec.unparsed.append("passwordless sudo: for which user? (say e.g. 'passwordless sudo for ops')")
            self._mask(m.start(), m.end())

    def _sudo_taken_away(self) -> None:
        """Sudo taken from a user the template has: "ops should not have sudo", "revoke sudo from ops", "no sudo
        for dev". The user keeps its account; a name the template does not have is said, not created."""
        who = WHO
        rights = r"sudo(?:\s+(?:rights|access|privileges|permissions))?"
        denied = (r"(?:should\s+not|shouldn't|must\s+not|mustn't|may\s+not|can\s*not|can't|won't|will\s+not|does\s+not"
                  r"|doesn't|need\s+not|needn't)\s+(?:have|get|need|use|be\s+given)")
        not_be = (r"(?:should\s+not|shouldn't|must\s+not|mustn't|may\s+not|can\s*not|can't|won't|will\s+not|is\s+not"
                  r"|isn't|need\s+not|needn't)\s+be")
        # "the user doesn't need sudo", "that user isn't an admin": the user said by the noun, as a pronoun says it
        for m in self._each(rf"(?:\b(?:the|that|this)\s+|^\s*)(?:user|account)\s+(?:{denied}\s+(?:any\s+)?{rights}"
                            rf"|{not_be}\s+(?:an?\s+)?{ROLE}|(?:is\s+not|isn't|is\s+no\s+longer)\s+(?:an?\s+)?{ROLE})"):
            self._pronoun_user()["sudo"] = False
            self._mask(m.start(), m.end())
        for m in self._each(rf"\b(?:revoke|remove|take\s+away|drop|withdraw|strip)\s+(?:the\s+)?{rights}\s+(?:from|of|for)"
                            rf"\s+(?:the\s+)?(?:user\s+|account\s+)?{who}"
                            # a verb split round the rights: "take sudo away from ops"
                            rf"|\b(?:take|get)\s+(?:the\s+)?{rights}\s+(?:away\s+)?from\s+(?:the\s+)?(?:user\s+|account\s+)?{who}"
                            rf"|\bno\s+(?:more\s+)?{rights}\s+for\s+(?:the\s+)?(?:user\s+|account\s+)?{who}"
                            rf"|\b(?:the\s+)?(?:user\s+|account\s+)?{who}\s+{denied}\s+(?:any\s+)?{rights}"
                            rf"|\b(?:the\s+)?(?:user\s+|account\s+)?{who}\s+{not_be}\s+(?:an?\s+)?{ROLE}"
                            # "carol is no longer an admin", "ops isn't an admin", "dev loses sudo"
                            rf"|\b(?:the\s+)?(?:user\s+|account\s+)?{who}\s+(?:(?:is|was)\s+(?:not|no\s+longer)|isn't|wasn't)\s+"
                            rf"(?:an?\s+)?{ROLE}"
                            rf"|\b(?:the\s+)?(?:user\s+|account\s+)?{who}\s+(?:loses|lost|gives\s+up|no\s+longer\s+(?:has|gets|needs))"
                            rf"\s+(?:its\s+|his\s+|her\s+|their\s+)?{rights}"
                            # "remove bob's sudo": the rights said as the user's own
                            rf"|\b(?:revoke|remove|take\s+away|drop|withdraw|strip|disable)\s+(?:the\s+user\s+)?{who}'s\s+{rights}"):
            # a user the template lacks is said, not created, for losing sudo
            self._sudo_for(m, False, refuse=lambda name: name in FUNCTION_WORDS)

    def _sudo_for(self, m: re.Match[str], sudo: bool, refuse: Callable[[str], bool]) -> None:
        """Sudo given or taken from the user a match names (its first group that matched): a user this request adds
        has it set; another is added with it, or, for sudo taken away, changed only where the template has it.
        Pronouns name only a user of this request, and ``refuse`` says which other words name no one."""
        name = next(g for g in m.groups() if g).lower()
        named = self._user_referred(name)
        if name == "user" and (re.match(r"the\s+user\b", m.group(0), re.I)
                               or re.search(r"\bthe\s+$", self.work[:m.start()], re.I)):
            self._pronoun_user()["sudo"] = sudo  # "the user needs sudo": the one added, else the image's
        elif named is not None:
            named["sudo"] = sudo
        elif name in NOT_A_USER or re.fullmatch(PRONOUNS, name) or refuse(name):
            return
        else:
            self.spec.users.append({"action": "add", "name": name, "sudo": sudo, **({} if sudo else {"existing_only": True})})
        self._mask(m.start(), m.end())

    def _sudo_given(self) -> None:
        """Sudo given to a user by name, apart from the user's own clause: "alice is an admin", "carol should be an
        administrator", "give ops sudo", "grant sudo to ops", "make bob an admin". A user this request adds gets it
        there; another is added with it (or updated, in an edit)."""
        who = WHO
        rights = r"(?:full\s+)?(?:sudo|admin(?:istrator)?|root|superuser)(?:\s+(?:rights|access|privileges|permissions))?"
        admin = r"(?:an?\s+|the\s+)?(?:admin|administrator|sudoer|superuser)s?\b"
        # "give the web root its own partition", "give the root partition 10G": a place, no user given rights
        room = (r"\s+(?:(?:its|their|a|an)\s+(?:[\w.-]+\s+){0,3}?)?(?:partition|volume|filesystem|file\s+system|fs|disk"
                r"|directory|dir|folder)\b")
        for m in self._each(rf"\b(?:give|grant)\s+(?:the\s+)?(?:user\s+|account\s+)?{who}\s+{rights}(?!\s+(?:to|for)\b|{room})"
                            rf"|\b(?:the\s+)?(?:user\s+|account\s+)?{who}\s+{_ABLE}\s+(?:use\s+|run\s+)?sudo\b"
                            # "let operator use sudo", "allow ops to run sudo"
                            rf"|\b(?:let|allow)\s+(?:the\s+)?(?:user\s+|account\s+)?{who}\s+(?:to\s+)?(?:use|run|have|get)\s+{rights}"
                            # "the ops user has sudo", "an ops account with admin rights", "ops gets sudo"
                            rf"|\b(?:the|an?)\s+{who}\s+(?:user|account)\s+(?:has|gets|with|should\s+have|must\s+have|needs)"
                            rf"\s+{rights}"
                            rf"|\b{who}\s+(?:has|gets|needs)\s+{rights}"
                            rf"|\b(?:give|grant)\s+{rights}\s+(?:to|for)\s+(?:the\s+)?(?:user\s+|account\s+)?{who}"
                            rf"|\bmake\s+(?:the\s+)?(?:user\s+|account\s+)?{who}\s+{admin}"
                            rf"|\b(?:the\s+)?(?:user\s+|account\s+)?{who}\s+(?:is|should\s+be|must\s+be|will\s+be|shall\s+be"
                            rf"|becomes|needs\s+to\s+be)\s+{admin}"
                            rf"|\b(?:the\s+)?(?:user\s+|account\s+)?{who}\s+(?:should|must|will|shall)\s+(?:have|get)\s+{rights}"):
            # a stop word may be a name here ("deploy"); an adjective before "user" is none ("the new user")
            self._sudo_for(m, True, refuse=lambda name: self._known_word(name) or name in _NOT_A_NAME)

    def _grant_nopasswd(self, name: str) -> None:
        user = next((u for u in self.spec.users if u.get("action") == "add" and u.get("name") == name), None)
        if user is None:
            user = {"action": "add", "name": name}
            self.spec.users.append(user)
        user["sudo"] = user["nopasswd"] = True

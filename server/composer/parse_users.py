"""Reading the users of a request: users added and removed, lists of users, their roles as their clauses say them
(sudo given and taken apart from them: parse_sudo.py), groups, login shells and home directories."""

from __future__ import annotations

import re
from typing import Any

from ..knowledge.system_settings import user_sshd_configuration
from .parse_logins import LoginPhrases
from .parse_passwords import NO_PASSWORD, PasswordPhrases
from .parse_sudo import NOPASSWD, PRONOUNS, ROLE
from .parse_target import target_names
from .parse_user_groups import GROUP_LIST, UserGroupPhrases, group_names
from .phrasing import EDIT_VERBS, FUNCTION_WORDS, NAMED_WHO, NOT_A_USER, STOPWORDS, WHO
from .request_spec import NOLOGIN_SHELL, REFERRED_USER

_BE = r"(?:(?:should|must|will|shall)\s+be\s+|is\s+)"  # "the admin user should be called alice"
# A role said right after a user's clause, past its comma: ", no sudo", ", with admin rights", ", as an admin".
_ROLE_AFTER = re.compile(rf"\s*,\s*(?:and\s+)?(?:(?:(?:with|having|as)\s+(?:an?\s+)?|(?:no|without|not\s+an?)\s+)?{ROLE}"
                         # "add user svc-backup, no shell": a shell said after the comma is the user's too
                         r"|(?:no|without(?:\s+an?)?)\s+(?:login\s+)?shell"
                         # "user bob, shell zsh", "user bob, with fish as his shell"
                         r"|(?:with\s+)?(?:an?\s+|the\s+)?(?:login\s+|default\s+)?shell\s*(?:=|:|of|is)?\s*[\w/.-]+"
                         r"|(?:with|using)\s+(?:bash|zsh|fish|ksh|tcsh|mksh)\b(?:\s+as\s+\w+\s+shell)?)"
                         r"(?=\s*(?:[,;.]|$|\band\b))", re.I)
# A login shell as people name it: its name or its path.
_SHELLS = r"(bash|zsh|fish|sh|ksh|tcsh|/[\w/.-]+)"
# A shell said as what a user works in, by its name alone: "a user bob with zsh", "using fish".
_USING_SHELL = (r"\b(?:with|using|uses|running|on)\s+(?:an?\s+|the\s+)?(bash|zsh|fish|ksh|tcsh|mksh)\b"
                r"(?!\s+(?:plugins?|packages?|completions?|config\w*|installed|scripts?))")
# After a shell given to a user: "a zsh shell", "zsh as her shell", "fish as the login shell".
_AS_SHELL = r"(?:as\s+(?:the\s+|a\s+|his\s+|her\s+|their\s+)?(?:login\s+|default\s+)?|(?:login\s+)?)shell\b"
# What a shell is said to be: "should be zsh", "is fish", "= /bin/bash".
_BECOMES = r"(?:should\s+be|must\s+be|needs\s+to\s+be|will\s+be|becomes|is|=|:)"
# Login shells that are packages of their own name on every family (bash and sh are in every base system).
_SHELL_PACKAGES = {"zsh", "fish", "ksh", "tcsh", "mksh"}


# A relative clause that says a listed user's role, or its absence ("alice who is an admin and bob who is not").
_WHO_CLAUSE = (r"(?:\s+who\s+(?:(?:is|should\s+be|will\s+be|has|gets|needs|can|may)(?:\s+not)?|isn't|doesn't|won't|"
               r"does\s+not|can't|cannot|should\s+not|shouldn't)(?:\s+(?:get|have|use|be))?(?:\s+(?:an?|no|any))?"
               r"(?:\s+(?:sudo\w*|admin\w*|root|superuser))?(?:\s+(?:rights|access|privileges))?(?![\w-]))?")


# A user that never logs in: a service account, given the shell that refuses a login (NOLOGIN_SHELL).
_NO_LOGIN = re.compile(r"\b(?:(?:cannot|can't|can\s+not|must\s+not|mustn't|should\s+not|shouldn't|won't|will\s+not"
                       r"|may\s+not|never)\s+log\s*-?\s*in|(?:no|without(?:\s+an?)?)\s+(?:interactive\s+)?(?:login|log-in)"
                       r"(?:\s+shell)?|nologin|non-?interactive|no\s+shell)\b", re.I)


# Password login said off in words: "no password login", "cannot log in with a password", "key login only".
# Logging in with a password, as a way in that may be said off: "password login", "ssh password auth".
_PASSWORD_LOGIN = r"(?:ssh\s+)?password\s+(?:log\s*-?\s*ins?|logins?|auth(?:entication)?)"
_CANNOT_LOG_IN = (r"(?:(?:cannot|can't|can\s+not|must\s+not|mustn't|should\s+not|shouldn't|may\s+not|never|won't|will\s+not)"
                  r"(?:\s+be\s+(?:able|allowed)\s+to)?|\b(?:(?:is|are)\s+)?(?:unable|not\s+(?:be\s+)?(?:able|allowed))\s+to)"
                  r"\s+log\s*-?\s*in")
_WITH_PASSWORD = r"\s+(?:with|using|by|via)\s+(?:an?\s+)?password"
_NO_PASSWORD_LOGIN = re.compile(
    rf"\b(?:no|without)\s+{_PASSWORD_LOGIN}\b"
    rf"|\b{_CANNOT_LOG_IN}{_WITH_PASSWORD}"
    r"|\b(?:ssh\s+)?keys?(?:\s+(?:login|auth(?:entication)?|based\s+login))?\s+only\b|\bonly\s+(?:with\s+)?(?:ssh\s+)?keys?\b",
    re.I)


def _said_role(group: str) -> str:
    """A role said before a list of users ("two admin users, anna and ben"), captured as ``group``."""
    return rf"(?:(?P<{group}>admin(?:istrator)?|sudo(?:er)?|privileged|superuser)\s+)?"


class UserPhrases(LoginPhrases, PasswordPhrases, UserGroupPhrases):
    """The user phrases of a request."""

    def _users_by_pronoun(self) -> None:
        """"add a user named tom, put him in the docker group, give him sudo": a pronoun after a user is added
        names that user (the last one added by this request); with none, the template's (see _pronoun_user)."""
        pronoun = r"(?:him|her|them|that\s+user|this\s+user|the\s+user)"
        for m in self._each(rf"\b(?:put|add|place|make)\s+{pronoun}\s+(?:a\s+member\s+of|in(?:to)?|to)\s+(?:the\s+)?"
                            rf"(?:groups?\s+)?{GROUP_LIST}(?:\s+groups?\b|(?=\s*(?:,|$|\.|;)))"):
            names = group_names(m.group(1))
            if names:
                user = self._pronoun_user()
                user["groups"] = list(dict.fromkeys([*(user.get("groups") or []), *names]))
                self._mask(m.start(), m.end())
        for m in self._each(rf"\b(?:give|grant)\s+{pronoun}\s+(?:(password[\s-]?less|no[\s-]password)\s+)?sudo"
                            r"(?:\s+(?:rights|access|privileges))?\b"):
            user = self._pronoun_user()
            user["sudo"] = True
            if m.group(1):
                user["nopasswd"] = True
            self._mask(m.start(), m.end())

    def _shells_by_pronoun(self) -> None:
        """"make the user dev an admin and set their shell to zsh", "give him a fish shell": that user's login shell.
        Read after every reading that adds a user, so the pronoun names the last one this request adds."""
        for m in self._each(rf"\b(?:change|set|switch|make)\s+(?:his|her|their)\s+(?:login\s+|default\s+)?shell\s+"
                            rf"(?:to|=|:|into)\s*{_SHELLS}|\bgive\s+(?:him|her|them)\s+(?:an?\s+|the\s+)?{_SHELLS}\s+{_AS_SHELL}"):
            self._pronoun_user()["shell"] = self._login_shell(m.group(1) or m.group(2))
            self._mask(m.start(), m.end())

    def _users(self) -> None:
        self._root_password()
        leaves_group = r"(?![\w-])(?!\s+(?:out\s+of|from)\s+(?:the\s+)?[\w-]+\s+groups?\b)"  # only a membership goes
        remove = [
            rf"\b(?:remove|delete|drop)\s+(?:the\s+)?(?:user|account|login)\s+{NAMED_WHO}{leaves_group}",
            rf"\b(?:remove|delete|drop)\s+(?:the\s+)?+{WHO}\s+(?:user|account)\b{leaves_group}",
            # "the default user ubuntu removed", "with user bob deleted": the verb after the user (he had been added)
            rf"\b(?:the\s+)?(?:(?:default|existing|stock|built-?in|old)\s+)?(?:user|account)\s+{NAMED_WHO}\s+"
            rf"(?:(?:is|should\s+be|must\s+be|gets?)\s+)?(?:removed|deleted|dropped|gone|taken\s+out)\b",
        ]
        for pattern in remove:
            for m in self._each(pattern):
                self.spec.users.append({"action": "remove", "name": m.group(1)})
                self._mask(m.start(), m.end())
        # "rename user alice to alicia", "change the username alice to alicia", "user alice should be called alicia"
        for m in self._each(rf"\b(?:rename|change)\s+(?:the\s+)?(?:user(?:name)?|account)\s+{WHO}\s+(?:to|as|into)\s+{WHO}"
                            rf"|\b(?:the\s+)?user\s+{WHO}\s+(?:should\s+be|is\s+to\s+be|will\s+be)\s+(?:called|named|renamed)"
                            rf"\s+(?:to\s+)?{WHO}"):
            old, new = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
            if {old.lower(), new.lower()} & NOT_A_USER:
                continue
            self.spec.users.append({"action": "rename", "name": old, "to": new})
            self._mask(m.start(), m.end())
        # "rename edgeadmin to ops": a name with no noun is a user's or the host's, whichever the template has
        for m in self._each(rf"\brename\s+{WHO}\s+(?:to|as|into)\s+{WHO}(?![\w.-])"):
            old, new = m.group(1), m.group(2)
            if ({old.lower(), new.lower()} & NOT_A_USER or old.lower() in STOPWORDS or old.lower() in self.known
                    or self.caps.group_for_word(old.lower())):
                continue
            self.spec.users.append({"action": "rename", "name": old, "to": new, "or_host": True})
            self._mask(m.start(), m.end())
        self._user_shells()
        self._user_into_groups()
        self._users_named_otherwise()
        self._only_users_log_in()
        self._user_lists()
        self._people_it_is_for()
        self._user_named_by_is()
        qualifiers = "admin|administrator|sudo|sudoer|privileged|non-root|regular|normal|service|system|default|login"
        # "an extra user named ci", "a new local admin user"
        more = (r"(?:(?:new|extra|another|additional|second|third|separate|further|local|dedicated|unprivileged"
                r"|limited|restricted|personal)\s+){0,2}")
        self._name_before_account(qualifiers)
        add = (
            r"(?:\b(?P<verb>add|create|with|include|needs?|wants?|requires?|plus|and|set\s+up|configure|have|has|having|gets?"
            r"|there\s+(?:is|are|should\s+be|must\s+be))\s+|(?:^|(?<=[,;:]))\s*"
            # or anywhere, when a name is given to it ("there is a user called ops")
            # ("the admin user should be called alice": the name said of the user, not of the machine)
            rf"|\b(?=(?:a|an|the|one)\s+{more}(?:{qualifiers}\s+)?(?:user|account)\s+{_BE}?(?:named|called)\b)"
            # or anywhere, when a role follows the name ("ubuntu 24.04 user marco as administrator")
            rf"|\b(?=(?:user|account)\s+{WHO}\s+(?:with|as|having)\s+(?:an?\s+)?{ROLE}))"
            rf"(?:a\s+|an\s+|the\s+|one\s+|my\s+|our\s+|their\s+)?{more}"
            rf"(?:(?P<qual>{qualifiers})\s+)?"
            # "user data", "user namespaces", "user session": compound nouns, not a user's name
            r"(?:user(?:\s+account)?|account|login)(?!\w|\s+(?:data|space|namespaces?|sessions?|mode|interface|manager|management)\b|\s*partition)"
            # the name may stand between commas after the noun ("add a second user, svc-backup, no shell")
            # ... or after a colon or an equals sign, as a list of settings says it ("user: ops", "user = ops")
            rf"(?:(?:\s*[:=]\s*|\s+|\s*,\s*(?=[\"'`]?[a-z_][a-z0-9_-]*[\"'`]?\s*(?:[,;]|$)))"
            rf"(?:(?:{_BE}?(?:named|called)|with\s+(?:the\s+)?name|name)\b\s*[:=]?\s*)?[\"'`]?(?P<name>[a-z_][a-z0-9_-]*)[\"'`]?)?"
        )
        # a clause ends at punctuation, at "and" before an edit verb, or at the next user ("... and user bob")
        # ... or at what the user uses ("a user bob who can run docker": docker is a wish of its own)
        boundary = re.compile(rf"[;.,]|\s+and\s+(?:then\s+)?(?:{EDIT_VERBS})\b|\s+and\s+(?:a\s+|an\s+|the\s+)?"
                              r"(?:(?:new|second|another)\s+)?(?:user|account)\b|\s+(?:who|that)\s+(?:(?:can|could|may"
                              r"|will|should|must)\s+|is\s+allowed\s+to\s+|needs?\s+to\s+|gets?\s+to\s+)?(?:use|uses|run"
                              r"|runs|manage|manages|access|accesses)\b"
                              rf"(?!\s+(?:the\s+|an?\s+)?(?:(?:sudo|root|admin|su)\b|{_SHELLS}))"  # ... or at the image's target
                              rf"|\s+(?:on|for|with|as|in)\s+(?:an?\s+|the\s+)?(?:{target_names(self.caps)})(?![\w-])", re.I)
        group_list_tail = re.compile(
            r"\b(?:groups?|in|into|member\s+of)\s+(?:the\s+)?[a-z_][\w-]*(?:\s*,\s*[a-z_][\w-]*)*$", re.I
        )
        for m in self._each(add):
            qualifier, name = (m.group("qual") or "").lower(), m.group("name")
            if name and (name.lower() in ("with", "that", "who", "for", "and", "in", "to", "as", "having")
                         or name.lower() in NOT_A_USER):  # "the user has sudo": a verb, no name
                name = None
            if name and "," in self.work[m.start():m.start("name")] and (
                    name.lower() in self.known or name.lower() in STOPWORDS or self.caps.group_for_word(name.lower())):
                name = None  # "with a user, docker and nginx": software listed after the noun, no name
            if not name and not m.group("verb"):
                continue  # a clause opening with "user" is about a user only when it names one ("…, user deploy")
            rest_start = m.end() if name else m.end("name") if m.group("name") else m.end()
            tail = self.work[rest_start:]
            stop = boundary.search(tail)
            end = stop.start() if stop else len(tail)
            # A comma inside "in groups docker, video" continues the user's clause.
            while stop and tail[end] == "," and group_list_tail.search(tail[:end]):
                follow = re.match(
                    r",\s*(?:and\s+)?([a-z_][\w-]*)(?=\s*(?:,|and\b|groups?\b|$|with\b))", tail[end:], re.I
                )
                if not follow or follow.group(1).lower() in EDIT_VERBS.split("|"):
                    break
                stop = boundary.search(tail, end + 1)
                end = stop.start() if stop else len(tail)
            end = self._software_joined(tail, end)
            clause_end = rest_start + end
            role_after = _ROLE_AFTER.match(self.work, clause_end)  # "add user webadmin, no sudo"
            if role_after:
                clause_end = role_after.end()
            clause = self.work[rest_start:clause_end]
            user: dict[str, Any] = {"action": "add"}
            if not name:
                if qualifier in ("admin", "administrator"):
                    name = "admin"
                else:
                    self.spec.unparsed.append("a user without a name (say e.g. 'add user ops with sudo')")
                    self._mask(m.start(), clause_end)
                    continue
            user["name"] = name
            # "a user named John Smith": a person's full name, of which a user name takes one word; said, not dropped
            surname = re.match(r"\s+([A-Z][a-z]+)\b", self.work[m.end("name"):]) if m.group("name") and name[:1].isupper() \
                else None
            if surname and surname.group(1).lower() not in {*self.known, *FUNCTION_WORDS, *STOPWORDS}:
                self.spec.notes.append(f"user {name}: a user name is one word, so '{name} {surname.group(1)}' gives "
                                       f"{name}; a full name is not written (a template has no field for it)")
            if qualifier in ("admin", "administrator", "sudo", "sudoer", "privileged") or re.search(
                r"\b(?:sudo|admin(?:istrator)?\s+(?:rights|privileges|access)|root\s+(?:rights|privileges|access)|wheel|sudoer"
                r"|superuser|as\s+(?:an?\s+)?admin(?:istrator)?)\b",
                clause,
                re.I,
            ):
                user["sudo"] = True
            if re.search(r"(?:\bno|\bwithout|\bw/o|\bnot\s+an?)\s+(?:sudo|admin(?:istrator)?|root|superuser)s?\b", clause, re.I):
                user["sudo"] = False
            if NOPASSWD.search(clause):
                user["sudo"] = user["nopasswd"] = True
            groups = re.search(
                # "that logs in automatically": a verb's particle, no group ("in automatically")
                r"\b(?:(?<!\blog\s)(?<!\blogs\s)(?<!logged\s)(?<!signs\s)(?<!\bsign\s)(?:in|to|into|member\s+of)\s+"
                r"(?:the\s+)?(?:groups?\s+)?|(?:with|and|plus|having)\s+(?:the\s+)?"
                r"(?:(?:supplementary|secondary|extra|additional)\s+)?groups?\s*:?\s*)"
                r"([a-z_][\w-]*(?:\s*(?:,|and)\s*[a-z_][\w-]*)*)\s*(?:groups?)?",
                clause,
                re.I,
            )
            if groups and not re.match(r"(?:the\s+)?(?:home|shell)\b", groups.group(1), re.I):
                names = group_names(groups.group(1))
                if names:
                    user["groups"] = names
            shell = re.search(rf"\bshell\s*(?:=|:|of|is)?\s*{_SHELLS}|\b{_SHELLS}\s+{_AS_SHELL}|{_USING_SHELL}", clause,
                              re.I)
            if shell:  # "shell zsh", "zsh as the default shell", "a bash shell", "with zsh"
                user["shell"] = self._login_shell(shell.group(1) or shell.group(2) or shell.group(3))
            elif _NO_LOGIN.search(clause) and not _NO_PASSWORD_LOGIN.search(clause):
                user["shell"] = NOLOGIN_SHELL  # a service account ("svc-backup that cannot log in")
            elif qualifier in ("service", "system") and not re.search(r"\b(?:sudo|admin\w*|log\s*-?\s*in|ssh)\b", clause, re.I):
                user["shell"] = NOLOGIN_SHELL  # "a service user tomcat": software runs as it, nobody logs in
                self.spec.notes.append(f"{qualifier} user {name}: no login shell ({NOLOGIN_SHELL}), as a {qualifier} "
                                       "account runs software and nobody logs in as it; say 'with a shell' to give one")
            self._own_password_login(name, self.said[rest_start:clause_end])
            auto = re.search(r"\blog(?:s|ged)?[\s-]?(?:in|on)\s+automatically\b|\bauto[\s-]?log(?:s|ged)?[\s-]?(?:in|on)\b",
                             clause, re.I)
            if auto:  # "a user named scanner that logs in automatically": written as every automatic login is
                self.spec.autologin = self.spec.autologin or " ".join(auto.group(0).lower().split())
                self.spec.autologin_user = self.spec.autologin_user or name
            home = re.search(r"\bhome(?:\s+dir(?:ectory)?)?\s*(?:=|:|at|in|is)?\s*(/[\w/.-]+)", clause, re.I)
            if home:
                user["home"] = home.group(1)
            said_of_password = _NO_PASSWORD_LOGIN.sub(" ", NOPASSWD.sub(" ", clause))  # neither sudo's nor ssh's
            if NO_PASSWORD.search(said_of_password):  # "with no password", "whose password is locked": kept locked
                user["locked"] = True
            elif re.search(r"\bpassword\b", said_of_password, re.I):
                self._password_not_stored(name)
            self.spec.users.append(user)
            self._mask(m.start(), clause_end)
        self._user_attributes()
        added = [u for u in self.spec.users if u.get("action") == "add" and not u.get("existing_only")]
        if len(added) > 1:  # "a user alice and a user bob, both in the smb group": each clause's user
            for m in self._each(r"\b(?=(?:both|all|each)\b)"):
                self._said_of_all(added, m.start())

    def _own_password_login(self, name: str, said: str) -> None:
        """"a user deploy with no password login", "deploy who cannot log in with a password", "user ci with key
        login only": said in the user's own clause, password login is off for that user alone (a Match block), and
        the global setting the settings' reading took it for is taken back when the request says it nowhere else."""
        if not _NO_PASSWORD_LOGIN.search(said):
            return
        self.spec.configurations.append({**user_sshd_configuration("password login", name),
                                         "label": f"password login off for {name}"})
        if len(_NO_PASSWORD_LOGIN.findall(self.said)) == 1:
            self.spec.configurations = [c for c in self.spec.configurations if c.get("remove")
                                        or c.get("setting") != "password login"]

    def _password_login_of_named(self) -> None:
        """"bob cannot log in with a password", "no password login for bob", "password login off for ci": said of a
        user by name outside a clause that adds one (an edit's, of a user the template has), password login is off
        for that user alone, as _own_password_login writes it. Before the settings' reading, which would take it
        for everyone; root's is the root login setting's."""
        off = (rf"(?:no|disable|disabled|turn\s+off|switch\s+off|without)\s+{_PASSWORD_LOGIN}(?:\s+(?:over|via)\s+ssh)?"
               rf"|{_PASSWORD_LOGIN}\s+(?:off|disabled|turned\s+off)")
        cannot = rf"{_CANNOT_LOG_IN}(?:\s+over\s+ssh)?{_WITH_PASSWORD}"
        for m in self._each(rf"\b(?:{off})\s+for\s+(?:(?:the\s+)?user\s+)?{NAMED_WHO}(?![\w-])"
                            rf"|(?<![\w-])(?:(?:the\s+)?user\s+)?{NAMED_WHO}\s+{cannot}\b"):
            name = (m.group(1) or m.group(2)).lower()
            if name in NOT_A_USER or name in STOPWORDS or name in ("root", "ssh", "sshd"):
                continue
            self.spec.configurations.append({**user_sshd_configuration("password login", name),
                                             "label": f"password login off for {name}"})
            if not any(u.get("name") == name for u in self.spec.users):
                self.spec.users.append({"action": "add", "name": name, "existing_only": True})
            self._mask(m.start(), m.end())

    def _user_referred(self, word: str) -> dict[str, Any] | None:
        """The user this request adds that ``word`` names: by its name, or by a pronoun (see _pronoun_user)."""
        if re.fullmatch(PRONOUNS, word):
            return self._pronoun_user()
        return next((u for u in self.spec.users if u.get("action") == "add" and not u.get("existing_only")
                     and u.get("name") == word), None)

    def _pronoun_user(self) -> dict[str, Any]:
        """The user a pronoun names: the last one this request adds; with none named before it ("make her an admin"
        in an edit), the template's, as an entry named REFERRED_USER that changes a user the template has and never
        creates one."""
        added = [u for u in self.spec.users if u.get("action") == "add" and not u.get("existing_only")]
        if added:
            return added[-1]
        referred = next((u for u in self.spec.users if u.get("name") == REFERRED_USER), None)
        if referred is None:
            referred = {"action": "add", "name": REFERRED_USER, "existing_only": True}
            self.spec.users.append(referred)
        return referred

    def _plain_user_by_is(self) -> None:
        """"bob is a normal user", "carol should be a regular user": a user without sudo, added (or, in an edit, its
        sudo taken away where the template has it)."""
        plain = r"(?:normal|regular|standard|ordinary|plain|unprivileged|non-?admin|limited|basic|non-?root)"
        for m in self._each(rf"\b(?:the\s+)?(?:user\s+|account\s+)?{NAMED_WHO}\s+(?:is|should\s+be|must\s+be|will\s+be|stays)"
                            rf"\s+(?:just\s+|only\s+)?(?:an?\s+)?{plain}\s+(?:user|account)\b"):
            name = m.group(1).lower()
            named = self._user_referred(name)
            if named is not None:
                named["sudo"] = False
            elif name in NOT_A_USER or re.fullmatch(PRONOUNS, name) or self._known_word(name):
                continue
            else:
                self.spec.users.append({"action": "add", "name": name})
            self._mask(m.start(), m.end())

    def _user_shells(self) -> None:
        """A user's login shell said on its own: "zsh as the default shell for user dev", "change deploy's shell
        to bash", "give the admin user a zsh shell"; a shell with no user is reported."""
        # "zsh as the default shell for user dev": the shell named before the user it is for
        for m in self._each(r"\b(bash|zsh|fish|sh|/[\w/.-]+)\s+as\s+(?:the\s+|a\s+|his\s+|her\s+|their\s+)?"
                            r"(?:default\s+|login\s+)?shell\s+(?:for|of)\s+(?:the\s+)?(?:user|account)\s+"
                            r"[\"'`]?([a-z_][a-z0-9_-]*)"):
            self.spec.users.append({"action": "add", "name": m.group(2), "shell": self._login_shell(m.group(1))})
            self._mask(m.start(), m.end())
        # "change deploy's shell to bash", "give the admin user a zsh shell": a user's shell, set
        shells = _SHELLS
        # each form with whether any word may stand where the name is ("the image should use zsh" names no user)
        for pattern, prose_first in (
                (rf"\b(?:change|set|switch|make)\s+(?:the\s+)?(?:user\s+)?([a-z_][a-z0-9_-]*?)(?:'s|s')?\s+(?:user\s+)?"
                 rf"(?:login\s+|default\s+)?shell\s+(?:(?:to|=|:|into)\s*)?{shells}", False),
                (rf"\bgive\s+(?:the\s+)?(?:user\s+)?([a-z_][a-z0-9_-]*)(?:\s+user)?\s+(?:an?\s+|the\s+)?{shells}\s+{_AS_SHELL}",
                 False),
                # "the login shell for user ops is fish" ("dev's shell should be zsh": _user_attributes)
                (rf"\b(?:the\s+)?(?:login\s+|default\s+)?shell\s+(?:for|of)\s+(?:the\s+)?(?:user\s+|account\s+)?"
                 rf"([a-z_][a-z0-9_-]*)\s+{_BECOMES}\s*{shells}", False),
                # "viewer should use fish", "ops uses zsh as the login shell": a user's shell by a verb of using
                (rf"(?<![\w-])(?:(?:the\s+)?user\s+)?([a-z_][a-z0-9_-]*)(?:\s+(?:should|must|will|shall|can))?"
                 rf"\s+(?:use|uses|gets?)\s+(?:the\s+)?{shells}(?:\s+{_AS_SHELL})?(?![\w-])"
                 rf"(?!\s+(?:plugins?|packages?|config\w*))", True)):
            for m in self._each(pattern):
                name = m.group(1).lower()
                if name in ("user", "users") and re.search(r"\buser'", m.group(0), re.I):  # "the user's shell"
                    self._pronoun_user()["shell"] = self._login_shell(m.group(2))
                elif name in ("the", "user", "login", "default", "my", "his", "her", "their", "its", "a", "an", "him", "them") \
                        or (prose_first and (name in NOT_A_USER or name in STOPWORDS or self._known_word(name))):
                    continue  # "change the login shell": no user named
                else:
                    self.spec.users.append({"action": "add", "name": name, "shell": self._login_shell(m.group(2))})
                self._mask(m.start(), m.end())
        for m in self._each(rf"\b(?:change|set|switch|make)\s+(?:the\s+)?(?:login\s+|default\s+|user\s+)?shell\s+"
                            rf"(?:to|=|:|into)\s*{shells}"):
            self.spec.unparsed.append(f"shell {m.group(1)}: no user named (say e.g. 'change ops's shell to {m.group(1)}')")
            self._mask(m.start(), m.end())

    def _name_before_account(self, qualifiers: str) -> None:
        """"a student account", "a guest account": a plain word before "account" is the account's name. The two
        words are swapped in the working text ("account student", the same length), so the user reading that
        follows reads the name and what the clause says of it ("... account without sudo": no sudo)."""
        for m in self._each(r"(?:\b(?:a|an|the|one)\s+|^\s*|(?<=[,;:]\s))(?:(?:shared|common|local|new|separate|single"
                            r"|dedicated)\s+)?([a-z][a-z0-9_-]{1,30})\s+account\b"):  # or opening a clause
            name = m.group(1).lower()
            if (name in NOT_A_USER or name in STOPWORDS or re.fullmatch(qualifiers, name)
                    or name in self.known or self.caps.group_for_word(name)):
                continue  # "an admin account" (a role), "a docker account", "a user account"
            start, end = m.start(1), m.end()
            self.work = self.work[:start] + f"account {name}".ljust(end - start) + self.work[end:]

    def _users_named_otherwise(self) -> None:
        """"a 'student' user", "a shared 'lab' account" (a quoted name before the noun), "auto-login user 'pos'",
        "logs in automatically as kiosk" (the automatic login itself is said by _logins), "bob's shell is zsh" (an
        attribute of a user named in the request)."""
        quoted = r"[\"'`]([a-z_][a-z0-9_-]*)[\"'`]"
        for m in self._each(rf"(?:\b(?:a|an|the|one)\s+(?:(?:shared|common|local|new|separate|single)\s+)?)?{quoted}"
                            r"\s+(?:user|account|login)\b"
                            rf"|(?<=auto-login\s)(?:for\s+)?(?:the\s+)?(?:user|account)\s+{WHO}"
                            rf"|(?<=autologin\s)(?:for\s+|as\s+)?(?:the\s+)?(?:user|account)?\s*{WHO}"
                            rf"|(?<=automatically\s)as\s+(?:the\s+)?(?:user\s+)?{WHO}"
                            rf"|(?<=in\s|on\s)as\s+(?:the\s+)?(?:user\s+)?{WHO}"):
            if m.group(0).startswith("as") and not re.search(r"(?:log(?:s|ged)?[\s-]?(?:in|on)|automatically)\s+$",
                                                             self.work[:m.start()], re.I):
                continue  # "runs on as root" is no login
            name = next(g for g in m.groups() if g)
            if name.lower() in NOT_A_USER or (name.lower() in STOPWORDS and not m.group(1)):  # quoted: a name
                continue
            if not m.group(1):  # the user an automatic login is said of ("autologin as guest")
                self.spec.autologin_user = self.spec.autologin_user or name
            if self._user_referred(name.lower()) is None:
                self.spec.users.append({"action": "add", "name": name})
            self._mask(m.start(), m.end())

    def _user_attributes(self) -> None:
        """Said of the users this request adds, after they are read: "bob's shell is zsh", "both sudoers"."""
        # "bob's shell is zsh", "dev's login shell should be fish": a user the request does not add is the image's
        for m in self._each(rf"\b{WHO}(?:'s|’s)\s+(?:login\s+|default\s+)?shell\s+{_BECOMES}\s*{_SHELLS}(?![\w/.-])"):
            name = m.group(1).lower()
            if name != "user" and (name in NOT_A_USER or name in STOPWORDS):
                continue
            user = self._pronoun_user() if name == "user" else self._user_referred(name)  # "the user's shell"
            if user is None:
                user = {"action": "add", "name": name}
                self.spec.users.append(user)
            user["shell"] = self._login_shell(m.group(2))
            self._mask(m.start(), m.end())
        # "users alice and bob, both sudoers", "all of them admins": a role said of every user this request adds
        for m in self._each(rf"\b(?:both|all(?:\s+of\s+them)?|each)\s+(?:are\s+|with\s+|as\s+|having\s+)?(?:an?\s+)?{ROLE}"):
            for user in (u for u in self.spec.users if u.get("action") == "add" and not u.get("existing_only")):
                user["sudo"] = True
            self._mask(m.start(), m.end())

    def _user_named_by_is(self) -> None:
        """"the default user is pi, with password …": a user named by "is", where the name ends the phrase (so
        "the user is created later" names no one)."""
        for m in self._each(r"\b(?:the|a|an)\s+(?:(default|main|first|admin|administrator|sudo|only)\s+)?(?:user|account)"
                            r"\s+is\s+[\"'`]?([a-z_][a-z0-9_-]*)[\"'`]?"
                            rf"(?:\s*,?\s*(?:(with|having|as)\s+(?:an?\s+)?|(without|no)\s+){ROLE})?"
                            r"(?=\s*(?:$|[,;.]|\band\b|\bwith\b|\bhaving\b|\bin\b))"):
            named: dict[str, Any] = {"action": "add", "name": m.group(2)}
            if (m.group(1) or "").lower() in ("admin", "administrator", "sudo") or m.group(3):
                named["sudo"] = True
            elif m.group(4):
                named["sudo"] = False
            self.spec.users.append(named)
            self._mask(m.start(), m.end())
            password = re.match(r"\s*,?\s*(?:with|having)\s+(?:the\s+|a\s+)?password\s+\S+", self.work[m.end():], re.I)
            if password:
                self._password_not_stored(m.group(2))
                self._mask(m.end(), m.end() + password.end())

    def _root_password(self) -> None:
        """"the root password is set", "set root's password to hunter2", "a root password": root gets no password
        from a template (the build leaves the account without one), and a plain-text one would not be stored:
        said, never dropped."""
        for m in self._each(r"\b(?:set\s+(?:the\s+|a\s+)?)?root(?:'s)?\s+(?:user\s+|account\s+)?password\b(?!\s+log)"
                            r"(?:\s+(?:is\s+set|set|should\s+be|must\s+be|is|=|:|of|to)\b(?:\s+(?:to\s+)?\S+)?)?"):
            self.spec.notes.append("root password not applied: a template sets none for root and plain-text passwords "
                                   "do not belong in one; add a user with sudo and a hashed password (password + "
                                   "hash_algo), or log in with SSH keys")
            self._mask(m.start(), m.end())

    def _user_lists(self) -> None:
        """"two users: alice with sudo and bob without", "users alice, bob", "two users, admin and ops": several
        names after "users" (after a comma only when counted, where the names must follow)."""
        # A role said before the noun is said of every name listed ("two admin users, anna and ben").
        head = (rf"\b(?:(?:two|three|four|five|six|a\s+couple\s+of|\d+)\s+(?:more\s+|new\s+|other\s+)?"
                rf"{_said_role('role')}(?:users|accounts)\s*[,:(]?"
                rf"|{_said_role('role2')}(?:users|accounts)\s*(?::|=|-|named|called)?)\s*")
        # A role after the name, in words or in brackets: "bob without sudo", "alice (admin)", "carol (no sudo)"
        role = r"(?:sudo\w*|admin\w*|root|rights|access|privileges|privileged|regular|normal|standard|unprivileged|user)"
        # A name that a verb follows begins a clause of its own ("users alice and bob, alice is an admin").
        item = (r"(?!(?:both|all|each|everyone|shell)\b)[a-z_][a-z0-9_-]*(?![\w-])"
                r"(?!\s+(?:is|should|must|will|shall|has|gets|becomes|needs)\b)"
                r"(?:\s*\((?:an?\s+)?(?:(?:no|without)\s+)?" + role + r"(?:\s+" + role + r")*\))?"
                r"(?:\s+(?:with|without|no|having|as)\b(?!\s+(?:an?\s+|any\s+)?passwords?\b)(?:\s+(?:sudo|admin\w*|root|rights|access))*)?"
                # or in a clause of its own: "alice who is an admin", "bob who is not", "carol who has no sudo"
                + _WHO_CLAUSE)
        item = rf"(?:(?:with\s+)?(?:{NOPASSWD.pattern})|{item})"
        for m in self._each(rf"{head}(?P<names>{item}(?:\s*(?:,\s*(?:and\s+)?|\band\b)\s*{item})+)\)?"):
            users: list[dict[str, Any]] = []
            nopasswd = False  # "users alice and bob, passwordless sudo": said of the whole list
            listed_as_admins = bool(m.group("role") or m.group("role2"))
            for part in re.split(r"\s*(?:,|\band\b)\s*", m.group("names")):
                if NOPASSWD.search(part):
                    nopasswd = True
                    continue
                words = part.lower().split()
                if not words or words[0] in STOPWORDS or words[0] in ("with", "without", "no"):
                    continue
                # a name said again in the list says more of the same user ("tom and jerry, jerry without sudo")
                user = next((u for u in users if u["name"] == words[0]), None) or {"action": "add", "name": words[0]}
                rest = " ".join(words[1:])
                if re.search(r"\b(?:without|no|not|never)\b|n't\b", rest):
                    user["sudo"] = False
                elif re.search(r"\b(?:sudo|admin\w*|root)\b", rest) or listed_as_admins:
                    user["sudo"] = True
                if all(u is not user for u in users):
                    users.append(user)
            if len(users) >= 2:
                for user in users if nopasswd else ():
                    user["sudo"] = user["nopasswd"] = True
                self.spec.users += users
                self._mask(m.start(), m.end())
                self._said_of_all(users, m.end())

    def _people_it_is_for(self) -> None:
        """"a dev box for alice and bob, both with zsh": names the image is for, said of all of them right after
        ("both", "all", "each"), are its users; what is said of them follows (_said_of_all)."""
        who = r"[a-z_][a-z0-9_-]*"
        for m in self._each(rf"\bfor\s+(?P<names>{who}(?:\s*,\s*{who})*\s*,?\s*\band\s+{who})(?=\s*,?\s*(?:both|all|each)\b)"):
            people = [n.lower() for n in re.split(r"\s*(?:,|\band\b)\s*", m.group("names")) if n]
            if any(n in NOT_A_USER or n in STOPWORDS or n in self.known or self._known_word(n) for n in people):
                continue
            users = [{"action": "add", "name": name} for name in people]
            self.spec.users += users
            self._mask(m.start(), m.end())
            self._said_of_all(users, m.end())

    def _said_of_all(self, users: list[dict[str, Any]], end: int) -> None:
        """"users alice, bob and carol, all in the sudo group", "alice and bob in the docker group": groups said
        after a list of users are each one's (a role said so, "both sudoers", is _user_attributes')."""
        every = r"\s*,?\s*(?:(?:all|both|each)\s+(?:of\s+them\s+)?|(?:and\s+)?(?:they\s+)?(?:are|being|should\s+be)\s+)?"
        groups = re.match(rf"{every}(?:(?:are|being)\s+)?(?:in(?:to)?|(?:a\s+)?members?\s+of)\s+(?:the\s+)?(?:groups?\s+)?"
                          rf"{GROUP_LIST}\s+groups?\b", self.work[end:], re.I)
        if groups:
            names = group_names(groups.group(1))
            for user in users:
                user["groups"] = list(dict.fromkeys([*(user.get("groups") or []), *names]))
            self._mask(end, end + groups.end())
            end += groups.end()
        # "users alice and bob, both with zsh", "…with zsh as their shell", "…, shell fish": each one's login shell
        shell = re.match(rf"{every}(?:(?:(?:with|using|on)\s+)?(?:an?\s+|the\s+)?{_SHELLS}\s+{_AS_SHELL}"
                         rf"|(?:with\s+)?(?:(?:their|a|the)\s+)?(?:login\s+|default\s+)?shell\s*(?:=|:|of|is)?\s*{_SHELLS}"
                         rf"|{_USING_SHELL.removeprefix(chr(92) + 'b')})", self.work[end:], re.I)
        if shell:
            for user in users:
                user["shell"] = self._login_shell(next(g for g in shell.groups() if g))
            self._mask(end, end + shell.end())

    def _software_joined(self, tail: str, end: int) -> int:
        """Where a user's clause ends before software joined to it ("a user named bob and nginx": nginx is the
        image's, not bob's), unless the clause lists groups ("in the docker and video groups")."""
        if re.search(r"\bgroups?\b", tail[:end], re.I):
            return end
        for joined in re.finditer(r"\s+and\s+(?:the\s+|a\s+|an\s+)?([a-z0-9][\w.+-]*)", tail[:end], re.I):
            word = joined.group(1).lower()
            if re.match(r"\s*groups?\b|\s+as\s+(?:the\s+|a\s+|an\s+|his\s+|her\s+|their\s+)?(?:default\s+|login\s+)?"
                        r"shell\b", tail[joined.end():], re.I):
                return end
            if (word in self.known or self.caps.group_for_word(word)) and not re.fullmatch(ROLE, word):
                return joined.start()  # "… and sudo" is the user's role, not the sudo package
        return end

    def _login_shell(self, shell: str) -> str:
        """The path of a user's login shell; a shell the base system lacks (zsh, fish) is installed with it."""
        if shell.rsplit("/", 1)[-1] in _SHELL_PACKAGES:
            self.spec.add_packages.append(shell.rsplit("/", 1)[-1])
        return shell if shell.startswith("/") else f"/bin/{shell}"

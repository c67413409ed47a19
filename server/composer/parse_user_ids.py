"""A user's numeric ids ("the admin user has uid 1500", "gid 2000 for deploy"): os-image-composer's users have no
such field, so the id is said not applied, with the command that sets it, and never read as a package."""

from __future__ import annotations

from .phrasing import ParserState


class UserIdPhrases(ParserState):
    """The uid and gid phrases of a request."""

    def _user_ids(self) -> None:
        for m in self._each(r"\b(uid|gid|user\s+id|group\s+id)\s*(?:of|=|:|is|set\s+to)?\s*(\d{1,10})\b"):
            kind = "gid" if m.group(1).lower().startswith("g") else "uid"
            change = f"usermod -u {m.group(2)} <user>" if kind == "uid" else f"groupmod -g {m.group(2)} <group>"
            self.spec.notes.append(f"{kind} {m.group(2)} not applied: a template's users have no {kind} field "
                                   f"(os-image-composer's schema); a configuration command sets it ({change})")
            self._mask(m.start(), m.end())


__all__ = ["UserIdPhrases"]

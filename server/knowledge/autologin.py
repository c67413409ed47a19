"""How a user is logged in at boot (``resources/autologin.yaml``): the display manager's file, or the getty's."""

from __future__ import annotations

import functools
import shlex
from dataclasses import dataclass

from ..core.paths import resource_text
from ..core.yamlsafe import load_mapping

RESOURCE = "autologin.yaml"


@dataclass(frozen=True)
class LoginFile:
    path: str
    text: str

    def command(self, user: str) -> str:
        """The configuration command writing this file for ``user`` (its directory made first)."""
        # printf's format: a literal % doubled, each line's end written as the \n escape printf reads
        body = self.text.format(user=user).replace("%", "%%").replace("\n", "\\n")
        directory = self.path.rsplit("/", 1)[0]
        return f"mkdir -p {directory} && printf {shlex.quote(body)} > {self.path}"


@dataclass(frozen=True)
class Autologin:
    display_managers: dict[str, LoginFile]
    getty: LoginFile

    def file_for(self, installed: set[str]) -> tuple[str, LoginFile]:
        """The display manager installed that logs a user in, and its file; else the console's getty."""
        for name, login in self.display_managers.items():
            if name in installed:
                return name, login
        return "getty", self.getty


@functools.cache
def load_autologin() -> Autologin:
    raw = load_mapping(resource_text(RESOURCE)).data or {}
    managers = {str(k): LoginFile(str(v["path"]), str(v["text"])) for k, v in (raw.get("display_managers") or {}).items()}
    getty = raw["getty"]
    return Autologin(managers, LoginFile(str(getty["path"]), str(getty["text"])))


__all__ = ["Autologin", "LoginFile", "load_autologin"]

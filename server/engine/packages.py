"""Package checks on the engine's one package verifier: do the packages exist, and will the template build.

The verifier (its repository index cache, its download pool) is made on first use: most calls never need it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..packages.build_check import BuildCheck
    from ..packages.closure import ClosureResult
    from ..packages.verifier import PackageVerifier, VerifyResult

# The template text from exactly one of yaml or an indexed name: (text, its directory, its name).
TemplateText = Callable[[str | None, str | None], tuple[str, Path | None, str | None]]


class PackageChecks:
    def __init__(self, make_verifier: Callable[[], PackageVerifier], template_text: TemplateText):
        self._make_verifier = make_verifier
        self._template_text = template_text
        self._verifier: PackageVerifier | None = None
        self._lock = threading.Lock()

    @property
    def verifier(self) -> PackageVerifier:
        with self._lock:
            if self._verifier is None:
                self._verifier = self._make_verifier()
            return self._verifier

    def verify(self, packages: list[str] | None = None, yaml: str | None = None, name: str | None = None,
               os: str | None = None, dist: str | None = None, arch: str | None = None) -> VerifyResult:
        """The named packages, and a template's, looked up in the target distribution's repositories."""
        from ..core.yamlsafe import YamlError, load_mapping
        from ..packages.sources import packages_from_template, repositories_from_template

        names = [p for p in (packages or []) if isinstance(p, str) and p.strip()]
        repositories: list[dict[str, Any]] = []
        if yaml is not None or name is not None:
            text, _base, _resolved = self._template_text(yaml, name)
            try:
                data = load_mapping(text).data
            except YamlError as exc:
                raise ValueError(f"the template is not valid YAML: {exc}") from None
            target = data.get("target") if isinstance(data.get("target"), dict) else {}
            os = os or target.get("os")
            dist = dist or target.get("dist")
            arch = arch or target.get("arch")
            names += [p for p in packages_from_template(data) if p not in names]
            repositories = repositories_from_template(data)
        if not names:
            raise ValueError("no packages to verify: pass packages=[...] or a template (yaml or name)")
        if not dist and not os:
            raise ValueError(
                "say which distribution to check against: dist (e.g. ubuntu24, azl3, elxr12) or a "
                "template whose target names it"
            )
        return self.verifier.verify(names, os=os, dist=dist, arch=arch, repositories=repositories or None)

    def check_build(self, yaml: str | None = None, name: str | None = None) -> BuildCheck:
        """Will it build? Install closure, conflicts and disk fit from the real repository indexes
        (server/packages/build_check.py). Slow on first use (index download); opt-in for callers."""
        from ..packages.build_check import check_build

        text, _base, _resolved = self._template_text(yaml, name)
        return check_build(self.verifier, text)

    def check_closure(self, packages: list[str], *, os: str | None = None, dist: str | None = None,
                      arch: str | None = None) -> ClosureResult:
        """The install closure of a bare package list (no template, so no disk fit)."""
        from ..packages.closure import checker_for

        return checker_for(self.verifier).check(packages, os=os, dist=dist, arch=arch)

    def close(self) -> None:
        if self._verifier is not None:
            self._verifier.close()

"""The source catalogue: which repositories serve which distribution, and which indexes to read from them.

A source is a configured repository (``DEFAULT_SOURCES``, the ``packages.sources`` config, or a template's
``packageRepositories``); a :class:`Unit` is one index file or directory the store reads for a target.

Source specs (strings, as in ``DEFAULT_SOURCES`` and the ``packages.sources`` config):

* ``deb+<base-url>?codename=noble,noble-updates&component=main,universe[&arch=x86_64]``
  a Debian-style archive; one index per codename x component:
  ``{base}/dists/{codename}/{component}/binary-{arch}/Packages{.xz,.gz,}``.
  ``suite``/``suites``/``codenames`` and ``components`` are accepted as key aliases;
  lists are comma- or space-separated. The query string belongs to the spec and is
  never sent to the server.
* ``rpm+<base-url>[?arch=x86_64]``: an RPM repository; ``{base}/repodata/repomd.xml``
  and the ``primary`` file it names.
* a URL or local path of an index file (``.../Packages.gz``, ``...-primary.xml.zst``,
  ``.../repodata/repomd.xml``); a plain URL or path of anything else is taken as an
  RPM repository base for rpm distributions.
* ``{arch}`` anywhere expands to the family's architecture name (amd64/arm64 for
  deb, x86_64/aarch64 for rpm); ``arch=`` limits a source to some target
  architectures (either spelling), for archives that differ per architecture.
* ``file://`` URLs and absolute paths read local mirrors or index files in place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit, urlunsplit

from ..knowledge.package_names import canonical_arch, default_sources, family_arch

# The per-distribution catalogue is data (resources/package_sources.yaml), read through the knowledge layer.
DEFAULT_SOURCES: dict[str, list[str]] = default_sources()


@dataclass
class SourceStatus:
    source: str
    ok: bool
    packages: int
    age_seconds: float | None
    error: str | None
    from_cache: bool



def split_list(values: list[str]) -> tuple[str, ...]:
    out: list[str] = []
    for v in values:
        out.extend(x for x in re.split(r"[,\s]+", v) if x)
    return tuple(dict.fromkeys(out))


def is_local(location: str) -> bool:
    return location.startswith("/") or location.startswith("file://")


def local_path(location: str) -> Path:
    return Path(unquote(urlsplit(location).path)) if location.startswith("file://") else Path(location)


@dataclass(frozen=True)
class RepoSource:
    """One configured repository (see the module docstring for the string form)."""

    kind: str  # "deb", "rpm", or "index" (an index file), or "auto" (rpm base for rpm dists)
    base: str
    codenames: tuple[str, ...] = ()
    components: tuple[str, ...] = ()
    arches: tuple[str, ...] = ()  # canonical target arches this source serves; empty: all
    allow: tuple[str, ...] = ()
    trusted: bool = True  # False for template repositories: guarded against private hosts
    label: str = ""

    @classmethod
    def parse(cls, spec: str) -> RepoSource:
        spec = spec.strip()
        if not spec:
            raise ValueError("empty source spec")
        kind = ""
        rest = spec
        for prefix in ("deb+", "rpm+"):
            if spec.startswith(prefix):
                kind, rest = prefix[:-1], spec[len(prefix) :]
        if kind:
            parts = urlsplit(rest)
            query = parse_qs(parts.query)
            base = urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")).rstrip("/")

            def get(*keys: str) -> tuple[str, ...]:
                return split_list([v for k in keys for v in query.get(k, [])])

            codenames = get("codename", "codenames", "suite", "suites")
            components = get("component", "components") or ("main",)
            arches = tuple(canonical_arch(a) for a in get("arch", "arches"))
            unknown = set(query) - {
                "codename",
                "codenames",
                "suite",
                "suites",
                "component",
                "components",
                "arch",
                "arches",
            }
            if unknown:
                raise ValueError(f"unknown source option(s) {sorted(unknown)} in {spec!r}")
            if kind == "deb" and not codenames:
                raise ValueError(f"deb source {spec!r} needs ?codename=...")
            _check_location(base, spec)
            return cls(kind, base, codenames, components if kind == "deb" else (), arches, label=spec)
        _check_location(rest, spec)
        leaf = urlsplit(rest).path.rstrip("/").rsplit("/", 1)[-1]
        if leaf == "repomd.xml":
            base = rest.rstrip("/")[: -len("repomd.xml")].rstrip("/")
            if base.endswith("/repodata"):
                base = base[: -len("/repodata")]
            return cls("rpm", base, label=spec)
        if "Packages" in leaf or "primary.xml" in leaf:  # also apt's lists/*_Packages names
            return cls("index", rest, label=spec)
        return cls("auto", rest.rstrip("/"), label=spec)

    def units(self, family: str, arch: str) -> list[Unit]:
        """Indexes to read for canonical target ``arch`` on a ``family`` distribution."""
        if self.arches and arch not in self.arches:
            return []
        kind = self.kind
        if kind == "auto":
            if family != "rpm":
                raise ValueError(f"{self.label!r}: a deb repository needs the deb+URL?codename=... form")
            kind = "rpm"
        fam = family if kind == "index" else kind
        base = self.base.replace("{arch}", family_arch(fam, arch))
        if kind == "deb":
            farch = family_arch("deb", arch)
            return [
                Unit("deb", f"{base}/dists/{c}/{comp}/binary-{farch}", arch, self.allow, self.trusted)
                for c in self.codenames
                for comp in self.components
            ]
        if kind == "rpm":
            return [Unit("rpm", base, arch, self.allow, self.trusted)]
        leaf = urlsplit(base).path.rsplit("/", 1)[-1]
        return [Unit("rpm-index" if "primary.xml" in leaf else "deb-index", base, arch, self.allow, self.trusted)]


def _check_location(location: str, spec: str) -> None:
    if location.startswith("/"):
        return
    scheme = urlsplit(location).scheme
    if scheme not in ("http", "https", "file"):
        raise ValueError(f"source {spec!r}: only http, https, file URLs or absolute paths are allowed")


@dataclass(frozen=True)
class Unit:
    """One index to read: a deb ``binary-<arch>`` directory, an rpm repository, or one index file."""

    kind: str  # "deb" | "rpm" | "deb-index" | "rpm-index"
    location: str
    arch: str  # canonical
    allow: tuple[str, ...] = ()
    trusted: bool = True

    @property
    def key(self) -> str:
        return f"{self.kind}|{self.location}|{self.arch}"

    @property
    def parser_family(self) -> str:
        return "deb" if self.kind.startswith("deb") else "rpm"


# --------------------------------------------------------------------------- templates and plans


def packages_from_template(data: dict[str, Any]) -> list[str]:
    """Package names a template installs: ``systemConfig.packages`` and ``systemConfig.kernel.packages``."""
    out: list[str] = []
    sc = data.get("systemConfig") if isinstance(data, dict) else None
    if not isinstance(sc, dict):
        return out
    kernel = found if isinstance(found := sc.get("kernel"), dict) else {}
    for lst in (sc.get("packages"), kernel.get("packages")):
        if isinstance(lst, list):
            out.extend(p.strip() for p in lst if isinstance(p, str) and p.strip())
    return list(dict.fromkeys(out))


def repositories_from_template(data: dict[str, Any]) -> list[dict[str, Any]]:
    repos = data.get("packageRepositories") if isinstance(data, dict) else None
    return [r for r in repos if isinstance(r, dict)] if isinstance(repos, list) else []


def is_placeholder(value: str) -> bool:
    return "<" in value or ">" in value or not value.strip()


def _dedup_key(location: str) -> str:
    parts = urlsplit(location)
    return f"{parts.netloc}{parts.path}".rstrip("/") if parts.netloc else location.rstrip("/")


def template_source(repo: dict[str, Any], url: str, family: str) -> RepoSource:
    """A template's ``packageRepositories`` entry as an untrusted source (fetched behind the public-host guard)."""
    if urlsplit(url).scheme not in ("http", "https"):
        raise ValueError("only http(s) template repositories are consulted")
    allow = tuple(p for p in repo.get("allowPackages") or [] if isinstance(p, str))
    base = url.rstrip("/")
    if family == "deb":
        codename = str(repo.get("codename") or "").strip()
        if not codename:
            raise ValueError("deb repository without codename")
        comps = split_list([str(repo.get("component") or "main")])
        return RepoSource("deb", base, (codename,), comps, allow=allow, trusted=False, label=url)
    return RepoSource("rpm", base, allow=allow, trusted=False, label=url)


@dataclass
class Plan:
    units: list[Unit] = field(default_factory=list)
    failed: list[SourceStatus] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def plan_units(
    specs: list[str],
    family: str,
    arch: str,
    repositories: list[dict[str, Any]] | None,
    *,
    allow_template_repositories: bool,
) -> Plan:
    """The indexes to read for a target: the configured ``specs``, then the template's own repositories."""
    plan = Plan()
    seen: set[str] = set()
    for spec in specs:
        try:
            units = RepoSource.parse(spec).units(family, arch)
        except ValueError as e:
            plan.failed.append(SourceStatus(spec, False, 0, None, f"invalid source: {e}", False))
            continue
        for u in units:
            if u.key not in seen:
                seen.add(u.key)
                plan.units.append(u)
    default_keys = {_dedup_key(u.location) for u in plan.units}
    placeholders = 0
    for repo in repositories or []:
        label = str(repo.get("codename") or repo.get("url") or repo.get("path") or "repository")
        url = repo.get("url")
        if not isinstance(url, str) or not url.strip():
            if isinstance(repo.get("path"), str):
                plan.failed.append(
                    SourceStatus(
                        f"template:{label} (path {repo['path']})",
                        False,
                        0,
                        None,
                        "local path repositories from templates are not consulted",
                        False,
                    )
                )
            continue
        if is_placeholder(url):
            placeholders += 1
            continue
        try:
            src = template_source(repo, url.strip(), family)
            units = src.units(family, arch)
        except ValueError as e:
            plan.failed.append(SourceStatus(f"template:{label} ({url})", False, 0, None, str(e), False))
            continue
        if not allow_template_repositories:
            # Not consulting it is fine; calling its packages missing would not be.
            if not all(_dedup_key(u.location) in default_keys for u in units):
                plan.failed.append(
                    SourceStatus(
                        f"template:{label} ({url})",
                        False,
                        0,
                        None,
                        "template repositories are disabled by configuration",
                        False,
                    )
                )
            continue
        for u in units:
            if _dedup_key(u.location) in default_keys and not u.allow:
                continue  # same archive as a configured one (often only http vs https)
            if u.key not in seen:
                seen.add(u.key)
                plan.units.append(u)
    if placeholders:
        plan.notes.append(f"Skipped {placeholders} placeholder repositor{'y' if placeholders == 1 else 'ies'}.")
    return plan

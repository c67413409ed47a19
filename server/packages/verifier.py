"""Package verification against real repository indexes.

Answers "does package X exist for distribution D on architecture A" by reading the
same indexes the package managers read: Debian ``Packages`` files and RPM
``repodata/repomd.xml`` -> ``primary.xml`` (see sources.py for which repositories,
index_store.py for loading and caching, matching.py for what counts as found).

The one rule everything here bends to: never report a package missing on an
incomplete view. When any repository could not be consulted, names not found in
the ones that could are reported ``unchecked``, not ``missing``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..knowledge.package_names import canonical_arch, canonical_dist, package_type
from .http_cache import DEFAULT_MAX_STALE
from .index_store import LOAD_ERRORS, IndexStore, load_error_text
from .sources import (
    DEFAULT_SOURCES,
    Plan,
    SourceStatus,
    Unit,
    is_placeholder,
    packages_from_template,
    plan_units,
    repositories_from_template,
    template_source,
)

MAX_SUGGESTED = 50  # missing names per call that get suggestions


@dataclass
class VerifyResult:
    """``verified`` is True only when every repository was consulted and every package found.

    ``complete`` says whether every repository was consulted; when it is False nothing
    is in ``missing`` and the names not found so far are in ``unchecked``.
    ``notes`` explains non-exact matches (provides, globs, version pins).
    """

    verified: bool
    dist: str | None
    arch: str | None
    found: list[str]
    missing: list[str]
    unchecked: list[str]
    suggestions: dict[str, list[str]]
    sources: list[SourceStatus]
    message: str
    complete: bool = False
    notes: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class IndexFile:
    """One consulted index file on local disk (for the closure check, which reads the full metadata)."""

    family: str  # "deb" | "rpm"
    path: Path  # a Packages file or primary.xml, possibly compressed (see open_index)
    fingerprint: str
    source: str
    priority: int = 0  # the template repository's priority (apt pinning semantics); 0 for defaults
    allow: tuple[str, ...] = ()


@dataclass
class IndexFiles:
    dist: str | None
    arch: str | None
    family: str | None
    files: list[IndexFile]
    sources: list[SourceStatus]
    notes: list[str]
    error: str | None = None  # no target could be determined

    @property
    def complete(self) -> bool:
        return self.error is None and all(s.ok for s in self.sources)


class PackageVerifier:
    """Checks package names against the repository indexes of a distribution.

    ``sources`` maps a dist id to source specs and replaces the defaults for the dists
    it names. Only those, the defaults, and (when ``allow_template_repositories``) a
    template's own ``packageRepositories`` URLs are ever fetched; template URLs must
    resolve to public addresses unless ``allow_private_template_hosts``.

    Downloads live under ``cache_dir/packages``; within ``ttl_seconds`` no request is
    made, after it a conditional one. If a refresh fails, a cached copy younger than
    ``max_stale_seconds`` still counts as consulted (reported in the source's error);
    a repository that failed is not retried for ``retry_after_seconds``. ``offline``
    never touches the network and answers from whatever is cached.
    """

    def __init__(
        self,
        cache_dir: Path,
        sources: dict[str, list[str]] | None = None,
        ttl_seconds: float = 86400,
        timeout: float = 20.0,
        offline: bool = False,
        allow_template_repositories: bool = True,
        *,
        max_stale_seconds: float = DEFAULT_MAX_STALE,
        allow_private_template_hosts: bool = False,
        retry_after_seconds: float = 120.0,
        max_workers: int = 4,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.cache_dir = Path(cache_dir) / "packages"
        self.ttl = float(ttl_seconds)
        self.offline = offline
        self.allow_template_repositories = allow_template_repositories
        self.allow_private_template_hosts = allow_private_template_hosts
        self.max_workers = max(1, max_workers)
        self.retry_after = max(0.0, retry_after_seconds)
        self.clock = clock or time.time
        self.sources: dict[str, list[str]] = {k: list(v) for k, v in DEFAULT_SOURCES.items()}
        for dist, specs in (sources or {}).items():
            self.sources[canonical_dist(None, dist) or dist] = list(specs)
        self._store = IndexStore(
            self.cache_dir,
            ttl=self.ttl,
            timeout=timeout,
            offline=offline,
            max_stale=max_stale_seconds,
            retry_after=self.retry_after,
            allow_private_template_hosts=allow_private_template_hosts,
            max_workers=self.max_workers,
            clock=self.clock,
        )

    def close(self) -> None:
        self._store.close()

    # ------------------------------------------------------------------ public API

    def verify(
        self,
        packages: list[str],
        *,
        os: str | None,
        dist: str | None,
        arch: str | None,
        repositories: list[dict[str, Any]] | None = None,
    ) -> VerifyResult:
        names = list(dict.fromkeys(p.strip() for p in packages if isinstance(p, str) and p.strip()))
        target = self._target(os, dist, arch)
        if isinstance(target, str):
            return VerifyResult(False, canonical_dist(os, dist), arch, [], [], names, {}, [], target)
        d, family, a, notes = target
        if not names:
            return VerifyResult(True, d, a, [], [], [], {}, [], "No packages to verify.", complete=True)
        plan = self._plan(d, family, a, repositories)
        plan.notes[:0] = notes
        if not plan.units and not plan.failed:
            msg = f"No package repository is configured for {d}/{a}; nothing could be checked."
            return VerifyResult(False, d, a, [], [], names, {}, [], self._join(msg, plan.notes))
        view, statuses = self._store.consult(plan.units)
        statuses = statuses + plan.failed
        complete = all(s.ok for s in statuses)
        found: list[str] = []
        missing: list[str] = []
        unchecked: list[str] = []
        match_notes: dict[str, str] = {}
        for name in names:
            m = view.match(name)
            if m.found:
                found.append(name)
                if m.note:
                    match_notes[name] = m.note
            elif complete:
                missing.append(name)
            else:
                unchecked.append(name)
        # Suggestions cost milliseconds each; a list of thousands of typos should not stall the call.
        suggestions = {n: view.suggest(n, 5) for n in missing[:MAX_SUGGESTED]}
        suggestions = {k: v for k, v in suggestions.items() if v}
        verified = complete and not missing and not unchecked
        msg = self._message(d, a, names, found, missing, unchecked, statuses, match_notes)
        return VerifyResult(
            verified,
            d,
            a,
            found,
            missing,
            unchecked,
            suggestions,
            statuses,
            self._join(msg, plan.notes),
            complete=complete,
            notes=match_notes,
        )

    def verify_template(self, data: dict[str, Any]) -> VerifyResult:
        """Verify a parsed template's packages for its own target and repositories."""
        target = found if isinstance(found := data.get("target"), dict) else {}
        return self.verify(
            packages_from_template(data),
            os=target.get("os"),
            dist=target.get("dist"),
            arch=target.get("arch"),
            repositories=repositories_from_template(data),
        )

    def suggest(
        self,
        name: str,
        *,
        dist: str | None,
        arch: str | None,
        limit: int = 5,
        os: str | None = None,
        repositories: list[dict[str, Any]] | None = None,
    ) -> list[str]:
        """Existing names close to ``name`` for the target (the name itself excluded)."""
        target = self._target(os, dist, arch)
        if isinstance(target, str) or not name.strip():
            return []
        d, family, a, _ = target
        plan = self._plan(d, family, a, repositories)
        view, _ = self._store.consult(plan.units)
        return view.suggest(name.strip(), max(1, limit))

    def index_files(
        self,
        *,
        os: str | None,
        dist: str | None,
        arch: str | None,
        repositories: list[dict[str, Any]] | None = None,
    ) -> IndexFiles:
        """The index files ``verify`` would consult for this target, fetched or revalidated as it would.

        The closure check (server/packages/closure.py) hands these to libsolv, which needs every field, not
        just names. A repository that cannot be read is reported in ``sources``, never hidden.
        """
        target = self._target(os, dist, arch)
        if isinstance(target, str):
            return IndexFiles(canonical_dist(os, dist), arch, None, [], [], [], error=target)
        d, family, a, notes = target
        plan = self._plan(d, family, a, repositories)
        notes = notes + plan.notes
        priorities: dict[str, int] = {}
        for repo in repositories or []:
            url, prio = repo.get("url"), repo.get("priority")
            if not isinstance(url, str) or is_placeholder(url) or not isinstance(prio, int):
                continue
            with contextlib.suppress(ValueError):
                for u in template_source(repo, url.strip(), family).units(family, a):
                    priorities[u.key] = prio

        def locate(unit: Unit) -> tuple[Path, str] | str:
            try:
                return self._store.locate(unit)
            except LOAD_ERRORS as e:
                return load_error_text(e)

        if len(plan.units) > 1:
            with ThreadPoolExecutor(max_workers=min(self.max_workers, len(plan.units))) as pool:
                located = list(pool.map(locate, plan.units))
        else:
            located = [locate(u) for u in plan.units]
        files: list[IndexFile] = []
        statuses: list[SourceStatus] = []
        for unit, got in zip(plan.units, located, strict=True):
            if isinstance(got, str):
                statuses.append(SourceStatus(unit.location, False, 0, None, got, False))
                continue
            path, fingerprint = got
            files.append(
                IndexFile(unit.parser_family, path, fingerprint, unit.location, priorities.get(unit.key, 0),
                          unit.allow)
            )
            statuses.append(SourceStatus(unit.location, True, 0, None, None, True))
        return IndexFiles(d, a, family, files, statuses + plan.failed, notes)

    def stats(self) -> dict[str, Any]:
        now = self.clock()
        loaded, views = self._store.loaded()
        return {
            "cache_dir": str(self.cache_dir),
            "ttl_seconds": self.ttl,
            "offline": self.offline,
            "indexes": [
                {
                    "source": ld.source,
                    "packages": len(ld.index),
                    "provides": len(ld.index.provides),
                    "age_seconds": round(now - ld.checked_at, 1),
                    "from_cache": ld.from_cache,
                    "parse_seconds": round(ld.parse_seconds, 3),
                    "warning": ld.warning,
                }
                for ld in loaded
            ],
            "total_packages": sum(len(ld.index) for ld in loaded),
            "views": views,
            "http": dict(self._store.http.counts),
            "dists": sorted(self.sources),
        }

    # ------------------------------------------------------------------ planning

    def _family(self, dist: str, os: str | None) -> str | None:
        family = package_type(dist) or package_type(os)
        if family:
            return family
        for spec in self.sources.get(dist, []):
            if spec.startswith(("deb+", "rpm+")):
                return spec[:3]
        return None

    def _target(
        self, os: str | None, dist: str | None, arch: str | None
    ) -> tuple[str, str, str, list[str]] | str:
        notes: list[str] = []
        d = canonical_dist(os, dist)
        if d is None:
            return f"No distribution given; pass dist (one of {', '.join(sorted(self.sources))})."
        if not dist:
            notes.append(f"dist not given; assumed {d} for os {os}.")
        if d not in self.sources:
            return f"Unknown distribution {dist or d!r}; known: {', '.join(sorted(self.sources))}."
        family = self._family(d, os)
        if family is None:
            return f"Cannot tell whether {d} uses deb or rpm packages; use deb+/rpm+ source specs."
        if arch:
            a = canonical_arch(arch)
        else:
            a = "x86_64"
            notes.append("arch not given; assumed x86_64.")
        return d, family, a, notes

    def _plan(self, dist: str, family: str, arch: str, repositories: list[dict[str, Any]] | None) -> Plan:
        return plan_units(
            self.sources.get(dist, []),
            family,
            arch,
            repositories,
            allow_template_repositories=self.allow_template_repositories,
        )

    # ------------------------------------------------------------------ messages

    @staticmethod
    def _join(msg: str, notes: list[str]) -> str:
        return " ".join([msg, *notes]) if notes else msg

    @staticmethod
    def _message(
        dist: str,
        arch: str,
        names: list[str],
        found: list[str],
        missing: list[str],
        unchecked: list[str],
        statuses: list[SourceStatus],
        notes: dict[str, str],
    ) -> str:
        target = f"{dist}/{arch}"
        ok = sum(1 for s in statuses if s.ok)
        failed = [s for s in statuses if not s.ok]
        parts: list[str] = []
        if failed:
            first = failed[0]
            parts.append(
                f"Could not consult {len(failed)} of {len(statuses)} repository indexes for {target} "
                f"(e.g. {first.source}: {first.error})."
            )
            parts.append(
                f"{len(found)} of {len(names)} packages found in the indexes that were consulted"
                + (
                    f"; {len(unchecked)} unchecked: {', '.join(unchecked[:10])}"
                    f"{', ...' if len(unchecked) > 10 else ''}."
                    if unchecked
                    else "."
                )
            )
            if unchecked:
                parts.append("Nothing is reported missing from an incomplete view.")
        elif missing:
            parts.append(
                f"{len(missing)} of {len(names)} packages not found for {target} in {ok} repository "
                f"indexes: {', '.join(missing[:10])}{', ...' if len(missing) > 10 else ''}."
            )
        else:
            parts.append(f"All {len(names)} packages found for {target} in {ok} repository indexes.")
        pinned = [n for n, note in notes.items() if "is not in the index" in note]
        if pinned:
            parts.append(f"Pinned versions not in the index: {', '.join(pinned)}.")
        stale = [s for s in statuses if s.ok and s.error]
        if stale:
            parts.append(f"{len(stale)} index(es) served from cache: {stale[0].error}.")
        return " ".join(parts)

"""The parsed indexes a verifier consults: loaded from the HTTP cache or a local mirror, parsed once, kept
in memory until their TTL runs out and on disk as JSON (keyed by the content's fingerprint) across restarts.

A repository that fails is not retried for ``retry_after`` seconds, so one that times out does not stall
every call.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os as _os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urljoin

from ..knowledge.package_names import family_arch
from .http_cache import Fetched, FetchError, HttpCache, NotFound, age_text, public_host_guard
from .index_parsers import (
    IndexFormatError,
    RepoIndex,
    open_index,
    parse_deb_packages,
    parse_repomd,
    parse_rpm_primary,
)
from .matching import AllowFilter, IndexView
from .sources import SourceStatus, Unit, is_local, local_path

logger = logging.getLogger(__name__)

# What reading one index may raise; every one of them means "not consulted", never "missing".
LOAD_ERRORS = (FetchError, NotFound, IndexFormatError, OSError, ValueError)


def load_error_text(e: Exception) -> str:
    return f"not found: {e}" if isinstance(e, NotFound) else (str(e) or type(e).__name__)


@dataclass
class Loaded:
    index: RepoIndex
    checked_at: float  # when the repository last confirmed this content: the age we report
    expires_at: float  # when to ask again (sooner than TTL when serving a stale copy)
    fingerprint: str
    from_cache: bool
    warning: str | None
    parse_seconds: float
    source: str


class IndexStore:
    """Loads :class:`Unit` indexes (see the module docstring); ``consult`` is what the verifier calls."""

    def __init__(
        self,
        cache_dir: Path,
        *,
        ttl: float,
        timeout: float,
        offline: bool,
        max_stale: float,
        retry_after: float,
        allow_private_template_hosts: bool,
        max_workers: int,
        clock: Callable[[], float],
    ) -> None:
        self.cache_dir = cache_dir
        self.ttl = ttl
        self.retry_after = retry_after
        self.allow_private_template_hosts = allow_private_template_hosts
        self.max_workers = max_workers
        self.clock = clock
        self.http = HttpCache(
            cache_dir / "raw", ttl=ttl, timeout=timeout, offline=offline, max_stale=max_stale, clock=clock
        )
        self._lock = threading.Lock()
        self._unit_locks: dict[str, threading.Lock] = {}
        self._loaded: dict[str, Loaded] = {}
        self._failed: dict[str, tuple[float, str]] = {}  # unit key -> (retry after, reason)
        self._views: OrderedDict[tuple[Any, ...], IndexView] = OrderedDict()

    def close(self) -> None:
        self.http.close()

    def loaded(self) -> tuple[list[Loaded], int]:
        """The indexes in memory and the number of cached views, for ``stats``."""
        with self._lock:
            return list(self._loaded.values()), len(self._views)

    def consult(self, units: list[Unit]) -> tuple[IndexView, list[SourceStatus]]:
        results: list[tuple[Loaded | None, str | None]] = [(None, None)] * len(units)
        now = self.clock()
        todo: list[int] = []
        in_memory: set[int] = set()
        for i, u in enumerate(units):
            cur = self._loaded.get(u.key)
            failed = self._failed.get(u.key)
            if cur is not None and now < cur.expires_at:
                results[i] = (cur, None)
                in_memory.add(i)
            elif failed is not None and now < failed[0]:
                results[i] = (None, f"{failed[1]} (not retried for {age_text(failed[0] - now)})")
            else:
                todo.append(i)
        if len(todo) == 1:
            results[todo[0]] = self._load_safe(units[todo[0]])
        elif todo:
            with ThreadPoolExecutor(max_workers=min(self.max_workers, len(todo))) as pool:
                for i, res in zip(todo, pool.map(lambda j: self._load_safe(units[j]), todo), strict=True):
                    results[i] = res
        statuses: list[SourceStatus] = []
        parts: list[tuple[Unit, Loaded]] = []
        for i, (u, (ld, err)) in enumerate(zip(units, results, strict=True)):
            if ld is None:
                statuses.append(SourceStatus(u.location, False, 0, None, err, False))
            else:
                parts.append((u, ld))
                statuses.append(
                    SourceStatus(
                        u.location,
                        True,
                        len(ld.index),
                        round(now - ld.checked_at, 1),
                        ld.warning,
                        ld.from_cache or i in in_memory,
                    )
                )
        return self._view(parts), statuses

    def locate(self, unit: Unit) -> tuple[Path, str]:
        """The index file on local disk and its fingerprint, fetched or revalidated as ``consult`` would."""
        if is_local(unit.location):
            return self._locate_local(unit)
        got = self._fetch_unit(unit)
        return got.path, got.sha256

    def _view(self, parts: list[tuple[Unit, Loaded]]) -> IndexView:
        key = tuple((u.key, id(ld.index), u.allow) for u, ld in parts)
        with self._lock:
            view = self._views.get(key)
            if view is not None:
                self._views.move_to_end(key)
                return view
        view = IndexView([(ld.index, AllowFilter(u.allow) if u.allow else None) for u, ld in parts])
        with self._lock:
            self._views[key] = view
            while len(self._views) > 16:
                self._views.popitem(last=False)
        return view

    def _load_safe(self, unit: Unit) -> tuple[Loaded | None, str | None]:
        try:
            loaded = self._load(unit)
        except LOAD_ERRORS as e:
            reason = load_error_text(e)
            # One line per index would flood the log when offline; the verify result carries the summary.
            logger.info("package index %s could not be consulted: %s", unit.location, reason)
            with self._lock:
                self._failed[unit.key] = (self.clock() + self.retry_after, reason)
            return None, reason
        with self._lock:
            self._failed.pop(unit.key, None)
        return loaded, None

    def _unit_lock(self, key: str) -> threading.Lock:
        with self._lock:
            return self._unit_locks.setdefault(key, threading.Lock())

    def _load(self, unit: Unit) -> Loaded:
        with self._unit_lock(unit.key):
            cur = self._loaded.get(unit.key)
            now = self.clock()
            if cur is not None and now < cur.expires_at:
                return cur
            if is_local(unit.location):
                path, fingerprint = self._locate_local(unit)
                checked_at, from_cache, warning = now, False, None
            else:
                fetched = self._fetch_unit(unit)
                path, fingerprint = fetched.path, fetched.sha256
                checked_at, from_cache, warning = fetched.checked_at, fetched.from_cache, fetched.warning
            expires_at = checked_at + self.ttl if warning is None else now + min(self.ttl, self.retry_after)
            if cur is not None and cur.fingerprint == fingerprint:
                cur.checked_at, cur.expires_at, cur.from_cache, cur.warning = (
                    checked_at,
                    expires_at,
                    True,
                    warning,
                )
                return cur
            t0 = time.perf_counter()
            index = self._read_parsed(unit, fingerprint)
            if index is None:
                farch = family_arch(unit.parser_family, unit.arch)
                with open_index(path) as stream:
                    if unit.parser_family == "deb":
                        index = parse_deb_packages(stream, farch)
                    else:
                        index = parse_rpm_primary(stream, farch)
                self._write_parsed(unit, fingerprint, index)
            elapsed = time.perf_counter() - t0
            logger.info(
                "package index %s: %d packages, %d provides (%.2fs)",
                unit.location,
                len(index),
                len(index.provides),
                elapsed,
            )
            loaded = Loaded(index, checked_at, expires_at, fingerprint, from_cache, warning, elapsed, unit.location)
            with self._lock:
                self._loaded[unit.key] = loaded
            return loaded

    def _fetch_unit(self, unit: Unit) -> Fetched:
        guard = None if unit.trusted or self.allow_private_template_hosts else public_host_guard
        if unit.kind == "deb":
            for suffix in (".xz", ".gz", ""):
                try:
                    return self.http.get(f"{unit.location}/Packages{suffix}", guard=guard)
                except NotFound:
                    continue
            raise FetchError(f"no Packages index under {unit.location} (tried .xz, .gz, plain)")
        if unit.kind == "rpm":
            repomd = self.http.get(f"{unit.location}/repodata/repomd.xml", guard=guard)
            primary = parse_repomd(repomd.path.read_bytes())
            base = primary.base or unit.location + "/"
            url = urljoin(base if base.endswith("/") else base + "/", primary.href)
            expect = primary.checksum if (primary.checksum_type or "").lower() == "sha256" else None
            got = self.http.get(url, guard=guard, expect_sha256=expect)
            if expect and got.sha256 != expect:
                raise IndexFormatError(f"{url}: checksum does not match repomd.xml")
            # The index is as current as the repomd.xml that named it.
            got.checked_at = repomd.checked_at
            got.from_cache = got.from_cache and repomd.from_cache
            got.warning = repomd.warning or got.warning
            return got
        return self.http.get(unit.location, guard=guard)

    @staticmethod
    def _locate_local(unit: Unit) -> tuple[Path, str]:
        root = local_path(unit.location)
        if unit.kind == "deb":
            for name in ("Packages.xz", "Packages.gz", "Packages"):
                if (root / name).is_file():
                    path = root / name
                    break
            else:
                raise FetchError(f"no Packages index under {root}")
        elif unit.kind == "rpm":
            primary = parse_repomd((root / "repodata" / "repomd.xml").read_bytes())
            path = root / unquote(primary.href)
        else:
            path = root
        st = path.stat()
        return path, f"{path}:{st.st_size}:{st.st_mtime_ns}"

    def _parsed_path(self, unit: Unit) -> Path:
        return self.cache_dir / "parsed" / f"{hashlib.sha256(unit.key.encode()).hexdigest()[:32]}.json"

    def _read_parsed(self, unit: Unit, fingerprint: str) -> RepoIndex | None:
        try:
            data = json.loads(self._parsed_path(unit).read_text())
            if data.get("fingerprint") != fingerprint:
                return None
            return RepoIndex.from_json(data)
        except (OSError, ValueError, KeyError, IndexFormatError, AttributeError):
            return None

    def _write_parsed(self, unit: Unit, fingerprint: str, index: RepoIndex) -> None:
        path = self._parsed_path(unit)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + f".{_os.getpid()}.{threading.get_ident()}.tmp")
            data = index.to_json()
            data["fingerprint"] = fingerprint
            data["source"] = unit.key
            tmp.write_text(json.dumps(data, separators=(",", ":")))
            _os.replace(tmp, path)
        except OSError as e:  # a read-only cache only costs a re-parse next start
            logger.warning("cannot persist parsed index %s: %s", path, e)

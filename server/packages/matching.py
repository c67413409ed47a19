"""Name matching over the indexes consulted for one target: exact names, provides, globs, version pins,
and suggestions for names that match nothing.
"""

from __future__ import annotations

import bisect
import difflib
import fnmatch
import re
import threading
from collections import Counter, defaultdict
from dataclasses import dataclass

from ..knowledge.package_names import equivalent_prefixes, equivalents, index_arch_suffixes, spelling_variants
from .index_parsers import RepoIndex

_GLOB_CHARS = frozenset("*?[")
# A version after "-": digits with at least one dot, at most one "-" (version-release).
# The dot keeps real names such as kernel-64k or foo-2 from reading as kernel/foo pinned.
_VERSION_RE = re.compile(r"^\d+(?:\.[0-9A-Za-z+~]+)+(?:-[0-9A-Za-z.+~]+)?$")


def is_glob(name: str) -> bool:
    return any(c in _GLOB_CHARS for c in name)


def version_pin_candidates(req: str) -> list[tuple[str, str]]:
    """Possible (name, version) readings of a version-pinned request, longest name first.

    Handles ``pkg=1.2``, ``pkg_1.2``, ``pkg-1.2.3``, ``pkg-1.2-3.el10`` and rpm/deb
    file names. Only a candidate whose name exists may be used (the caller checks):
    many real names end in digits (``python3.13``, ``libglib2.0-0t64``).
    """
    out: list[tuple[str, str]] = []
    s = req
    if s.endswith((".rpm", ".deb")):
        s = s[:-4]
        head, _, tail = s.rpartition(".")
        if head and tail in index_arch_suffixes():
            s = head
        if req.endswith(".deb"):
            parts = s.split("_")
            if len(parts) >= 2 and parts[0]:
                out.append((parts[0], parts[1]))
    if "=" in s:
        name, _, ver = s.partition("=")
        if name and ver:
            out.append((name, ver))
        return out
    if "_" in s:
        name, _, ver = s.partition("_")
        if name and ver[:1].isdigit():
            out.append((name, ver))
    for i in range(len(s) - 1, 0, -1):
        if s[i] == "-" and s[i + 1 : i + 2].isdigit():
            ver = s[i + 1 :]
            if _VERSION_RE.match(ver):
                out.append((s[:i], ver))
    if s != req and not out:
        out.append((s, ""))
    return out


def _strip_epoch(v: str) -> str:
    head, sep, tail = v.partition(":")
    return tail if sep and head.isdigit() else v


def _version_matches(available: str, wanted: str) -> bool:
    a, w = _strip_epoch(available), _strip_epoch(wanted)
    return a == w or (a.startswith(w) and a[len(w)] in ".-+~_")


def _grams(s: str) -> set[str]:
    t = f"\x02{s.lower()}\x03"
    return {t[i : i + 3] for i in range(len(t) - 2)}


class AllowFilter:
    """A template repository's ``allowPackages``: only these names may come from it."""

    def __init__(self, patterns: tuple[str, ...]) -> None:
        self.exact: set[str] = set()
        self.globs: list[re.Pattern[str]] = []
        for p in patterns:
            if is_glob(p):
                self.globs.append(re.compile(fnmatch.translate(p)))
            else:
                self.exact.add(p)
                self.exact.update(name for name, _ in version_pin_candidates(p))

    def __call__(self, name: str) -> bool:
        return name in self.exact or any(g.match(name) for g in self.globs)


@dataclass
class Match:
    found: bool
    note: str | None = None


class IndexView:
    """Lookups across the indexes consulted for one (dist, arch, sources) combination."""

    def __init__(self, parts: list[tuple[RepoIndex, AllowFilter | None]]) -> None:
        self.parts = parts
        self._lock = threading.Lock()
        self._sorted: list[str] | None = None
        self._pool: list[str] | None = None
        self._grams: dict[str, list[int]] | None = None
        self._lower: dict[str, list[str]] | None = None
        self._suggested: dict[tuple[str, int], list[str]] = {}

    def has(self, name: str) -> bool:
        return any(name in idx.names and (flt is None or flt(name)) for idx, flt in self.parts)

    def providers(self, name: str) -> list[str]:
        out: list[str] = []
        for idx, flt in self.parts:
            for p in idx.provides.get(name, ()):
                if (flt is None or flt(p)) and p not in out:
                    out.append(p)
        return out

    def versions(self, name: str) -> list[str]:
        out: list[str] = []
        for idx, flt in self.parts:
            if flt is None or flt(name):
                out.extend(v for v in idx.names.get(name, ()) if v not in out)
        return out

    def exists(self, name: str) -> bool:
        return self.has(name) or bool(self.providers(name))

    # Lazily built structures: only globs and suggestions need them.
    def sorted_names(self) -> list[str]:
        with self._lock:
            if self._sorted is None:
                merged: set[str] = set()
                for idx, flt in self.parts:
                    merged.update(idx.names if flt is None else filter(flt, idx.names))
                self._sorted = sorted(merged)
            return self._sorted

    def _suggest_structures(self) -> tuple[list[str], dict[str, list[int]], dict[str, list[str]]]:
        names = self.sorted_names()
        with self._lock:
            if self._pool is None or self._grams is None or self._lower is None:
                virtual = {v for idx, _ in self.parts for v in idx.provides}
                pool = sorted(set(names) | virtual)
                grams: defaultdict[str, list[int]] = defaultdict(list)
                lower: defaultdict[str, list[str]] = defaultdict(list)
                for i, n in enumerate(pool):
                    low = n.lower()
                    t = f"\x02{low}\x03"
                    for g in {t[j : j + 3] for j in range(len(t) - 2)}:
                        grams[g].append(i)
                    lower[low].append(n)
                self._pool, self._grams, self._lower = pool, dict(grams), dict(lower)
            return self._pool, self._grams, self._lower

    def glob(self, pattern: str, limit: int = 0) -> list[str]:
        names = self.sorted_names()
        rx = re.compile(fnmatch.translate(pattern))
        prefix = re.split(r"[*?\[]", pattern, maxsplit=1)[0]
        out: list[str] = []
        for i in range(bisect.bisect_left(names, prefix), len(names)):
            n = names[i]
            if not n.startswith(prefix):
                break
            if rx.match(n):
                out.append(n)
                if limit and len(out) >= limit:
                    break
        return out

    def match(self, req: str) -> Match:
        if is_glob(req):
            hits = self.glob(req, limit=6)
            if hits:
                more = ", ..." if len(hits) > 5 else ""
                return Match(True, f"pattern matches {', '.join(hits[:5])}{more}")
            return Match(False)
        if self.has(req):
            return Match(True)
        provs = self.providers(req)
        if provs:
            return Match(True, f"virtual package provided by {', '.join(provs[:5])}")
        for name, ver in version_pin_candidates(req):
            if not self.exists(name):
                continue
            note = f"version-pinned; package {name}"
            avail = self.versions(name)
            if ver and avail and not any(_version_matches(v, ver) for v in avail):
                shown = ", ".join(avail[:5]) + (", ..." if len(avail) > 5 else "")
                note += f" exists but version {ver} is not in the index (available: {shown})"
            elif ver and avail:
                note += f" has version {ver}"
            elif not self.has(name):
                note += f" is provided by {', '.join(self.providers(name)[:5])}"
            return Match(True, note)
        return Match(False)

    def close_names(self, name: str, limit: int) -> list[str]:
        pool, grams, _ = self._suggest_structures()
        q = _grams(name)
        counts: Counter[int] = Counter()
        for g in q:
            posting = grams.get(g)
            if posting:
                counts.update(posting)
        need = max(1, len(q) // 3)
        scored: list[tuple[float, int, str]] = []
        # Trigram overlap is the cheap prefilter; difflib (pure Python) only ranks the best few.
        for i, shared in counts.most_common(80):
            if shared < need:
                break
            cand = pool[i]
            if cand == name:
                continue
            sm = difflib.SequenceMatcher(None, name, cand)
            if sm.real_quick_ratio() < 0.6 or sm.quick_ratio() < 0.6:
                continue
            r = sm.ratio()
            if r >= 0.6:
                scored.append((-r, len(cand), cand))
        scored.sort()
        return [c for _, _, c in scored[:limit]]

    def extensions(self, name: str, limit: int, prefix: str | None = None) -> list[str]:
        """Names that extend ``name`` (docker -> docker.io, nginx -> nginx-full), shortest first."""
        names = self.sorted_names()
        prefix = prefix or name
        out: list[str] = []
        for i in range(bisect.bisect_left(names, prefix), len(names)):
            n = names[i]
            if not n.startswith(prefix):
                break
            if n != name and n[len(name)] in "-._+":
                out.append(n)
        out.sort(key=lambda n: (len(n), n))
        return out[:limit]

    def suggest(self, name: str, limit: int) -> list[str]:
        key = (name, limit)
        with self._lock:
            hit = self._suggested.get(key)
        if hit is not None:
            return list(hit)
        out = self._suggest(name, limit)
        with self._lock:
            if len(self._suggested) >= 4096:
                self._suggested.clear()
            self._suggested[key] = out
        return list(out)

    def _suggest(self, name: str, limit: int) -> list[str]:
        out: list[str] = []

        def add(n: str) -> None:
            if n == name or n in out:
                return
            if self.has(n):
                out.append(n)
                return
            for p in self.providers(n)[:3]:
                if p != name and p not in out:
                    out.append(p)

        base = name
        for cand, _ in version_pin_candidates(name):
            base = cand
            break
        for key in dict.fromkeys((name, base)):
            for n in equivalents(key):
                add(n)
            for prefix in equivalent_prefixes(key):
                for n in self.extensions(prefix.rstrip("-"), 2, prefix):
                    add(n)
        _, _, lower = self._suggest_structures()
        for n in lower.get(name.lower(), []):
            add(n)
        for n in spelling_variants(name):
            add(n)
        if len(out) < limit:
            for n in self.close_names(name, limit * 2):
                add(n)
        if len(out) < limit:
            for n in self.extensions(base, limit):
                add(n)
        return out[:limit]

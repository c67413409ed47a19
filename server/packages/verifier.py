"""Package verification against real repository indexes.

Answers "does package X exist for distribution D on architecture A" by reading the
same indexes the package managers read: Debian ``Packages`` files and RPM
``repodata/repomd.xml`` -> ``primary.xml``. Downloads are cached on disk with
conditional revalidation; parsed indexes stay in memory (and on disk as JSON) so a
repeat check is a handful of dict lookups.

The one rule everything here bends to: never report a package missing on an
incomplete view. When any repository could not be consulted, names not found in
the ones that could are reported ``unchecked``, not ``missing``.

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

import bisect
import bz2
import contextlib
import difflib
import fnmatch
import gzip
import hashlib
import ipaddress
import json
import logging
import lzma
import os as _os
import re
import socket
import threading
import time
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import parse_qs, unquote, urljoin, urlsplit, urlunsplit
from xml.parsers import expat

import httpcore
import httpx
import zstandard

from ..knowledge.package_names import (
    ARCH_INDEPENDENT,
    DISTS,
    OS_FAMILY,
    canonical_arch,
    canonical_dist,
    equivalent_prefixes,
    equivalents,
    family_arch,
    spelling_variants,
)

logger = logging.getLogger(__name__)

PARSER_VERSION = 1
MAX_DOWNLOAD_BYTES = 512 * 1024 * 1024
MAX_INDEX_BYTES = 2 * 1024 * 1024 * 1024  # decompressed; guards against compression bombs
DEFAULT_MAX_STALE = 7 * 86400.0
MAX_SUGGESTED = 50  # missing names per call that get suggestions
_USER_AGENT = "mcp-server-image-composer (package verification)"

_UBUNTU_COMPONENTS = "main,restricted,universe,multiverse"
_DEBIAN_COMPONENTS = "main,contrib,non-free,non-free-firmware"


def _ubuntu(release: str) -> list[str]:
    suites = f"{release},{release}-updates"
    return [
        # amd64 lives on archive/security, every other architecture on ports
        # (osv/ubuntu/*/providerconfigs/{amd64,arm64}_repo.yml).
        f"deb+http://archive.ubuntu.com/ubuntu?codename={suites}&component={_UBUNTU_COMPONENTS}&arch=x86_64",
        f"deb+http://security.ubuntu.com/ubuntu?codename={release}-security"
        f"&component={_UBUNTU_COMPONENTS}&arch=x86_64",
        f"deb+http://ports.ubuntu.com/ubuntu-ports?codename={suites},{release}-security"
        f"&component={_UBUNTU_COMPONENTS}&arch=aarch64",
    ]


# From the upstream osv/*/*/providerconfigs and default image configs.
DEFAULT_SOURCES: dict[str, list[str]] = {
    "azl3": ["rpm+https://packages.microsoft.com/azurelinux/3.0/prod/base/{arch}"],
    # Only an x86_64 repository exists upstream and its URL has no {arch}: limiting it
    # keeps aarch64 checks from reading x86_64 metadata and calling everything missing.
    "emt3": [
        "rpm+https://files-rs.edgeorchestration.intel.com/files-edge-orch/microvisor/rpms/3.0/base"
        "?arch=x86_64"
    ],
    # BaseOS from the providerconfig plus AppStream, which the el10 default image config adds.
    "el10": [
        "rpm+https://mirror.stream.centos.org/10-stream/BaseOS/{arch}/os",
        "rpm+https://mirror.stream.centos.org/10-stream/AppStream/{arch}/os",
    ],
    "elxr12": ["deb+https://mirror.elxr.dev/elxr?codename=aria&component=main,non-free-firmware"],
    "ubuntu24": _ubuntu("noble"),
    "ubuntu26": _ubuntu("resolute"),
    # Upstream ships no providerconfig for Debian 13; these are Debian's own trixie archives.
    "debian13": [
        f"deb+https://deb.debian.org/debian?codename=trixie,trixie-updates&component={_DEBIAN_COMPONENTS}",
        f"deb+https://security.debian.org/debian-security?codename=trixie-security"
        f"&component={_DEBIAN_COMPONENTS}",
    ],
}

_GLOB_CHARS = frozenset("*?[")
_KNOWN_ARCH_SUFFIXES = frozenset(
    {"x86_64", "aarch64", "noarch", "i686", "i386", "amd64", "arm64", "all", "armhf", "armv7hl", "src"}
)
# A version after "-": digits with at least one dot, at most one "-" (version-release).
# The dot keeps real names such as kernel-64k or foo-2 from reading as kernel/foo pinned.
_VERSION_RE = re.compile(r"^\d+(?:\.[0-9A-Za-z+~]+)+(?:-[0-9A-Za-z.+~]+)?$")
# Provides worth keeping: names a template could list (drops sonames, paths, pkgconfig(...)).
_PROVIDE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9+_.:~-]*$")
_DEB_FIELD = re.compile(rb"^(Package|Version|Architecture|Provides):[ \t]*([^\r\n]*)", re.M)


# --------------------------------------------------------------------------- results


@dataclass
class SourceStatus:
    source: str
    ok: bool
    packages: int
    age_seconds: float | None
    error: str | None
    from_cache: bool


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


# --------------------------------------------------------------------------- errors


class IndexFormatError(Exception):
    """An index file could not be parsed."""


class _NotFound(Exception):
    pass


class _FetchError(Exception):
    pass


class _GuardError(_FetchError):
    pass


# --------------------------------------------------------------------------- parsed index


class RepoIndex:
    """Names (with versions) and provides of one index, already filtered to one architecture."""

    __slots__ = ("names", "provides")

    def __init__(self, names: dict[str, list[str]], provides: dict[str, list[str]]) -> None:
        self.names = names
        self.provides = provides

    def __len__(self) -> int:
        return len(self.names)

    def to_json(self) -> dict[str, Any]:
        return {"v": PARSER_VERSION, "names": self.names, "provides": self.provides}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RepoIndex:
        if data.get("v") != PARSER_VERSION:
            raise IndexFormatError("parsed index of another format version")
        return cls(data["names"], data["provides"])


def _add_version(names: dict[str, list[str]], name: str, version: str) -> None:
    lst = names.get(name)
    if lst is None:
        names[name] = [version] if version else []
    elif version and version not in lst:
        lst.append(version)


def _dedup_provides(provides: dict[str, list[str]]) -> dict[str, list[str]]:
    return {k: list(dict.fromkeys(v)) for k, v in provides.items()}


@contextlib.contextmanager
def open_index(path: Path) -> Iterator[IO[bytes]]:
    """Open an index file, decompressing by magic bytes (gzip, xz, zstd, bzip2, or plain)."""
    with open(path, "rb") as raw:
        head = raw.read(6)
        raw.seek(0)
        stream: IO[bytes]
        if head[:2] == b"\x1f\x8b":
            stream = gzip.GzipFile(fileobj=raw)
        elif head[:6] == b"\xfd7zXZ\x00":
            stream = lzma.LZMAFile(raw)  # noqa: SIM115 - closed in the finally below
        elif head[:4] == b"\x28\xb5\x2f\xfd":
            stream = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True, closefd=False)
        elif head[:3] == b"BZh":
            stream = bz2.BZ2File(raw)
        elif head[:4] == b"\x04\x22\x4d\x18":
            # apt's own downloaded lists (/var/lib/apt/lists/*_Packages.lz4) are lz4 frames.
            import lz4.frame

            stream = lz4.frame.LZ4FrameFile(raw)  # noqa: SIM115 - closed in the finally below
        else:
            stream = raw
        try:
            yield stream
        finally:
            if stream is not raw:
                stream.close()


def _chunks(stream: IO[bytes], size: int = 1 << 22) -> Iterator[bytes]:
    total = 0
    while True:
        try:
            chunk = stream.read(size)
        except (OSError, EOFError, RuntimeError, lzma.LZMAError, zstandard.ZstdError) as e:  # lz4: RuntimeError
            raise IndexFormatError(f"corrupt compressed index: {e}") from e
        if not chunk:
            return
        total += len(chunk)
        if total > MAX_INDEX_BYTES:
            raise IndexFormatError("index larger than the decompressed size limit")
        yield chunk


def parse_deb_packages(stream: IO[bytes], arch: str) -> RepoIndex:
    """Parse a Debian ``Packages`` stream, keeping entries for ``arch`` and ``all``."""
    wanted = {arch.encode(), ARCH_INDEPENDENT["deb"].encode()}
    names: dict[str, list[str]] = {}
    provides: dict[str, list[str]] = {}
    cur: list[bytes | None] = [None, None, None, None]  # name, version, arch, provides

    def flush() -> None:
        name, ver, parch, prov = cur
        if name is None or (parch is not None and parch not in wanted):
            return
        n = name.decode("utf-8", "replace")
        _add_version(names, n, ver.decode("utf-8", "replace") if ver else "")
        if prov:
            for item in prov.split(b","):
                p = item.split(b"(", 1)[0].split(b":", 1)[0].strip().decode("utf-8", "replace")
                if p:
                    provides.setdefault(p, []).append(n)

    seen_any = False

    def feed(text: bytes) -> None:
        nonlocal cur, seen_any
        for key, value in _DEB_FIELD.findall(text):
            seen_any = True
            if key == b"Package":
                flush()
                cur = [value.strip(), None, None, None]
            elif key == b"Version":
                cur[1] = value.strip()
            elif key == b"Architecture":
                cur[2] = value.strip()
            else:
                cur[3] = value

    pending = b""
    had_content = False
    for chunk in _chunks(stream):
        had_content = had_content or bool(chunk.strip())
        buf = pending + chunk
        # Regex only complete stanzas; the tail waits for the next chunk.
        cut = buf.rfind(b"\n\n")
        if cut < 0:
            pending = buf
            continue
        pending = buf[cut + 2 :]
        feed(buf[: cut + 1])
    feed(pending)
    flush()
    # An empty file is a legitimately empty component; text without fields is an error
    # page or the wrong file, and reading it as "no packages" would make everything missing.
    if had_content and not seen_any:
        raise IndexFormatError("not a Debian Packages index")
    return RepoIndex(names, _dedup_provides(provides))


def _reject_entities(*_args: object) -> None:
    raise IndexFormatError("XML entity declarations are not allowed in repository metadata")


def _new_xml_parser() -> expat.XMLParserType:
    p = expat.ParserCreate(namespace_separator="}")
    p.buffer_text = True
    p.EntityDeclHandler = _reject_entities
    return p


def parse_rpm_primary(stream: IO[bytes], arch: str) -> RepoIndex:
    """Parse an RPM ``primary.xml`` stream, keeping entries for ``arch`` and ``noarch``."""
    wanted = {arch, ARCH_INDEPENDENT["rpm"]}
    names: dict[str, list[str]] = {}
    provides: dict[str, list[str]] = {}
    st: dict[str, Any] = {
        "pkg": False,
        "cap": None,
        "text": [],
        "name": "",
        "arch": "",
        "ver": "",
        "prov": False,
        "provs": [],
        "root": None,
    }

    def start(tag: str, attrs: dict[str, str]) -> None:
        local = tag[tag.rfind("}") + 1 :]
        if st["root"] is None:
            st["root"] = local
        if local == "package":
            st.update(pkg=True, name="", arch="", ver="", provs=[])
        elif not st["pkg"]:
            return
        elif local in ("name", "arch") and st["cap"] is None and not st["prov"]:
            st["cap"] = local
            st["text"] = []
        elif local == "version" and not st["prov"]:
            ver, rel, epoch = attrs.get("ver", ""), attrs.get("rel", ""), attrs.get("epoch", "0")
            v = f"{ver}-{rel}" if rel else ver
            st["ver"] = f"{epoch}:{v}" if epoch not in ("", "0") else v
        elif local == "provides":
            st["prov"] = True
        elif local == "entry" and st["prov"]:
            n = attrs.get("name", "")
            if _PROVIDE_RE.match(n):
                st["provs"].append(n)

    def end(tag: str) -> None:
        local = tag[tag.rfind("}") + 1 :]
        if local == st["cap"]:
            st[local] = "".join(st["text"]).strip()
            st["cap"] = None
        elif local == "provides":
            st["prov"] = False
        elif local == "package" and st["pkg"]:
            st["pkg"] = False
            n = st["name"]
            if n and (not st["arch"] or st["arch"] in wanted):
                _add_version(names, n, st["ver"])
                for p in st["provs"]:
                    if p != n:
                        provides.setdefault(p, []).append(n)

    def text(data: str) -> None:
        if st["cap"] is not None:
            st["text"].append(data)

    p = _new_xml_parser()
    p.StartElementHandler = start
    p.EndElementHandler = end
    p.CharacterDataHandler = text
    try:
        for chunk in _chunks(stream, 1 << 20):
            p.Parse(chunk, False)
        p.Parse(b"", True)
    except expat.ExpatError as e:
        raise IndexFormatError(f"invalid primary.xml: {e}") from e
    if st["root"] != "metadata":
        raise IndexFormatError("not an RPM primary.xml (root element is not <metadata>)")
    return RepoIndex(names, _dedup_provides(provides))


@dataclass(frozen=True)
class RepomdPrimary:
    href: str
    checksum: str | None
    checksum_type: str | None
    base: str | None  # xml:base of the location, rarely set


def parse_repomd(data: bytes) -> RepomdPrimary:
    """Find the ``primary`` metadata location in a ``repomd.xml`` document."""
    found: dict[str, Any] = {
        "in": False,
        "cap": False,
        "text": [],
        "href": None,
        "sum": None,
        "type": None,
        "base": None,
    }

    def start(tag: str, attrs: dict[str, str]) -> None:
        local = tag[tag.rfind("}") + 1 :]
        if local == "data":
            found["in"] = attrs.get("type") == "primary" and found["href"] is None
        elif found["in"] and local == "location":
            found["href"] = attrs.get("href")
            found["base"] = attrs.get("http://www.w3.org/XML/1998/namespace}base") or attrs.get("xml:base")
        elif found["in"] and local == "checksum":
            found["cap"] = True
            found["type"] = attrs.get("type")
            found["text"] = []

    def end(tag: str) -> None:
        local = tag[tag.rfind("}") + 1 :]
        if local == "checksum" and found["cap"]:
            found["sum"] = "".join(found["text"]).strip()
            found["cap"] = False
        elif local == "data":
            found["in"] = False

    def text(s: str) -> None:
        if found["cap"]:
            found["text"].append(s)

    p = _new_xml_parser()
    p.StartElementHandler = start
    p.EndElementHandler = end
    p.CharacterDataHandler = text
    try:
        p.Parse(data, True)
    except expat.ExpatError as e:
        raise IndexFormatError(f"invalid repomd.xml: {e}") from e
    if not found["href"]:
        raise IndexFormatError("repomd.xml names no primary metadata")
    return RepomdPrimary(found["href"], found["sum"], found["type"], found["base"])


# --------------------------------------------------------------------------- name matching


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
        if head and tail in _KNOWN_ARCH_SUFFIXES:
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


class _AllowFilter:
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
class _Match:
    found: bool
    note: str | None = None


class _View:
    """Lookups across the indexes consulted for one (dist, arch, sources) combination."""

    def __init__(self, parts: list[tuple[RepoIndex, _AllowFilter | None]]) -> None:
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

    def match(self, req: str) -> _Match:
        if is_glob(req):
            hits = self.glob(req, limit=6)
            if hits:
                more = ", ..." if len(hits) > 5 else ""
                return _Match(True, f"pattern matches {', '.join(hits[:5])}{more}")
            return _Match(False)
        if self.has(req):
            return _Match(True)
        provs = self.providers(req)
        if provs:
            return _Match(True, f"virtual package provided by {', '.join(provs[:5])}")
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
            return _Match(True, note)
        return _Match(False)

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


# --------------------------------------------------------------------------- sources


def _split_list(values: list[str]) -> tuple[str, ...]:
    out: list[str] = []
    for v in values:
        out.extend(x for x in re.split(r"[,\s]+", v) if x)
    return tuple(dict.fromkeys(out))


def _is_local(location: str) -> bool:
    return location.startswith("/") or location.startswith("file://")


def _local_path(location: str) -> Path:
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
                return _split_list([v for k in keys for v in query.get(k, [])])

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

    def units(self, family: str, arch: str) -> list[_Unit]:
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
        common = {"arch": arch, "allow": self.allow, "trusted": self.trusted}
        if kind == "deb":
            farch = family_arch("deb", arch)
            return [
                _Unit("deb", f"{base}/dists/{c}/{comp}/binary-{farch}", **common)
                for c in self.codenames
                for comp in self.components
            ]
        if kind == "rpm":
            return [_Unit("rpm", base, **common)]
        leaf = urlsplit(base).path.rsplit("/", 1)[-1]
        return [_Unit("rpm-index" if "primary.xml" in leaf else "deb-index", base, **common)]


def _check_location(location: str, spec: str) -> None:
    if location.startswith("/"):
        return
    scheme = urlsplit(location).scheme
    if scheme not in ("http", "https", "file"):
        raise ValueError(f"source {spec!r}: only http, https, file URLs or absolute paths are allowed")


@dataclass(frozen=True)
class _Unit:
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


# --------------------------------------------------------------------------- HTTP cache


@dataclass
class _Fetched:
    path: Path
    sha256: str
    checked_at: float  # when the server last confirmed (200 or 304) this content
    from_cache: bool  # nothing was downloaded this time
    status: int  # 200, 304, or 0 when no request was made
    warning: str | None = None


def _public_host_guard(url: str) -> None:
    """Refuse URLs that point at this machine or a private network (template repos only)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise _GuardError(f"scheme {parts.scheme!r} not allowed for template repositories")
    if parts.username or parts.password:
        raise _GuardError("credentials in repository URLs are not allowed")
    _public_addresses(parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80))


def _public_addresses(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to, if all of them are public; else _GuardError."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as e:
        raise _GuardError(f"cannot resolve {host}: {e}") from e
    addresses: list[str] = []
    for info in infos:
        ip = ipaddress.ip_address(info[4][0])
        if not ip.is_global:
            raise _GuardError(f"{host} resolves to non-public address {ip}")
        addresses.append(str(ip))
    return addresses


class _PublicAddressBackend(httpcore.SyncBackend):
    """Resolves, checks and connects in one step, for template repositories.

    The URL guard resolves a name to check it; if httpx then resolved it again, a name whose DNS answer changes
    between the two lookups (DNS rebinding) could pass the check with a public address and connect to a
    private one. Here the connection goes to an address from the very answer that was checked. TLS still
    verifies the certificate against the host name (httpcore passes it as SNI/server_hostname separately).
    """

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:
        error: Exception | None = None
        for address in _public_addresses(host, port):
            try:
                return super().connect_tcp(address, port, timeout=timeout, local_address=local_address,
                                           socket_options=socket_options)
            except httpcore.ConnectError as exc:
                error = exc
        raise error or httpcore.ConnectError(f"cannot connect to {host}:{port}")


def _pinned_transport() -> httpx.HTTPTransport:
    """An httpx transport whose connections use :class:`_PublicAddressBackend` (direct, never via a proxy)."""
    transport = httpx.HTTPTransport(trust_env=False)
    pool = transport._pool  # httpx has no public hook for the network backend; keep its SSL and limits
    transport._pool = httpcore.ConnectionPool(
        ssl_context=pool._ssl_context, max_connections=pool._max_connections,
        max_keepalive_connections=pool._max_keepalive_connections, keepalive_expiry=pool._keepalive_expiry,
        http1=pool._http1, http2=pool._http2, network_backend=_PublicAddressBackend())
    return transport


class _HttpCache:
    """Raw downloads on disk with ETag/Last-Modified revalidation after a TTL."""

    def __init__(
        self,
        root: Path,
        *,
        ttl: float,
        timeout: float,
        offline: bool,
        max_stale: float,
        clock: Callable[[], float],
    ) -> None:
        self.root = root
        self.ttl = ttl
        self.timeout = timeout
        self.offline = offline
        self.max_stale = max_stale
        self.clock = clock
        self.counts: Counter[str] = Counter()
        self._client: httpx.Client | None = None
        self._guarded_client: httpx.Client | None = None  # template repositories: pinned, public addresses only
        self._lock = threading.Lock()
        self._url_locks: dict[str, threading.Lock] = {}

    def close(self) -> None:
        with self._lock:
            for client in (self._client, self._guarded_client):
                if client is not None:
                    client.close()
            self._client = self._guarded_client = None

    def _http(self, guarded: bool = False) -> httpx.Client:
        with self._lock:
            if guarded:
                if self._guarded_client is None:
                    self._guarded_client = httpx.Client(
                        timeout=httpx.Timeout(self.timeout), follow_redirects=False,
                        headers={"User-Agent": _USER_AGENT}, transport=_pinned_transport(), trust_env=False)
                return self._guarded_client
            if self._client is None:
                self._client = httpx.Client(
                    timeout=httpx.Timeout(self.timeout),
                    follow_redirects=False,
                    headers={"User-Agent": _USER_AGENT},
                )
            return self._client

    def _paths(self, url: str) -> tuple[Path, Path]:
        h = hashlib.sha256(url.encode()).hexdigest()[:32]
        return self.root / f"{h}.body", self.root / f"{h}.meta.json"

    def _url_lock(self, url: str) -> threading.Lock:
        with self._lock:
            return self._url_locks.setdefault(url, threading.Lock())

    @staticmethod
    def _read_meta(path: Path) -> dict[str, Any] | None:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    @staticmethod
    def _write_json(path: Path, data: dict[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".{_os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(data))
        _os.replace(tmp, path)

    def get(
        self, url: str, *, guard: Callable[[str], None] | None = None, expect_sha256: str | None = None
    ) -> _Fetched:
        with self._url_lock(url):
            return self._get(url, guard, expect_sha256)

    def _get(self, url: str, guard: Callable[[str], None] | None, expect_sha256: str | None) -> _Fetched:
        body, meta_path = self._paths(url)
        meta = self._read_meta(meta_path)
        now = self.clock()
        have = bool(meta and meta.get("status") == 200 and meta.get("sha256") and body.exists())
        fresh = bool(meta and now - float(meta.get("checked_at", 0)) < self.ttl)

        def cached(status: int, warning: str | None = None) -> _Fetched:
            assert meta is not None
            return _Fetched(body, meta["sha256"], float(meta["checked_at"]), True, status, warning)

        if meta and meta.get("status") == 404 and fresh and not self.offline:
            raise _NotFound(url)
        if have and expect_sha256 and meta and meta.get("sha256") == expect_sha256:
            return cached(0)  # content-addressed by the repomd checksum: cannot be stale
        if have and fresh:
            return cached(0)
        if self.offline:
            if have and meta:
                return cached(0, f"offline: cached copy is {_age_text(now - float(meta['checked_at']))} old")
            raise _FetchError("offline and not cached")
        headers: dict[str, str] = {}
        if have and meta:
            if meta.get("etag"):
                headers["If-None-Match"] = meta["etag"]
            if meta.get("last_modified"):
                headers["If-Modified-Since"] = meta["last_modified"]
        try:
            status, resp_headers, tmp, sha = self._download(url, headers, guard, body)
        except (httpx.HTTPError, OSError, _FetchError) as e:
            self.counts["error"] += 1
            reason = str(e) or type(e).__name__
            if (
                have
                and meta
                and not isinstance(e, _GuardError)
                and now - float(meta["checked_at"]) < self.max_stale
            ):
                logger.warning("refresh of %s failed (%s); using cached copy", url, reason)
                return cached(
                    0,
                    f"refresh failed ({reason}); using cached copy "
                    f"{_age_text(now - float(meta['checked_at']))} old",
                )
            raise _FetchError(reason) from e
        self.counts[str(status)] += 1
        if status == 304 and have and meta:
            meta["checked_at"] = now
            self._write_json(meta_path, meta)
            return cached(304)
        if status in (404, 410):
            self._write_json(meta_path, {"url": url, "status": 404, "checked_at": now})
            with contextlib.suppress(OSError):
                body.unlink()
            raise _NotFound(url)
        if status != 200 or tmp is None:
            if have and meta and now - float(meta["checked_at"]) < self.max_stale:
                return cached(0, f"HTTP {status}; using cached copy")
            raise _FetchError(f"HTTP {status}")
        _os.replace(tmp, body)
        meta = {
            "url": url,
            "status": 200,
            "checked_at": now,
            "fetched_at": now,
            "sha256": sha,
            "etag": resp_headers.get("etag"),
            "last_modified": resp_headers.get("last-modified"),
            "size": body.stat().st_size,
        }
        self._write_json(meta_path, meta)
        return _Fetched(body, sha, now, False, 200)

    def _download(
        self, url: str, headers: dict[str, str], guard: Callable[[str], None] | None, body: Path
    ) -> tuple[int, httpx.Headers, Path | None, str]:
        client = self._http(guarded=guard is not None)
        for _ in range(6):
            if guard is not None:
                guard(url)
            with client.stream("GET", url, headers=headers) as r:
                if r.is_redirect and r.headers.get("location"):
                    url = urljoin(url, r.headers["location"])
                    if urlsplit(url).scheme not in ("http", "https"):
                        raise _FetchError(f"redirect to unsupported URL {url}")
                    continue
                if r.status_code != 200:
                    return r.status_code, r.headers, None, ""
                body.parent.mkdir(parents=True, exist_ok=True)
                tmp = body.with_name(body.name + f".{_os.getpid()}.{threading.get_ident()}.part")
                h = hashlib.sha256()
                size = 0
                try:
                    with open(tmp, "wb") as f:
                        for chunk in r.iter_bytes(1 << 20):
                            size += len(chunk)
                            if size > MAX_DOWNLOAD_BYTES:
                                raise _FetchError("download larger than the size limit")
                            h.update(chunk)
                            f.write(chunk)
                except BaseException:
                    with contextlib.suppress(OSError):
                        tmp.unlink()
                    raise
                return 200, r.headers, tmp, h.hexdigest()
        raise _FetchError("too many redirects")


def _age_text(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"


# --------------------------------------------------------------------------- verifier


@dataclass
class _Loaded:
    index: RepoIndex
    checked_at: float  # when the repository last confirmed this content: the age we report
    expires_at: float  # when to ask again (sooner than TTL when serving a stale copy)
    fingerprint: str
    from_cache: bool
    warning: str | None
    parse_seconds: float
    source: str


@dataclass
class _Plan:
    units: list[_Unit] = field(default_factory=list)
    failed: list[SourceStatus] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def packages_from_template(data: dict[str, Any]) -> list[str]:
    """Package names a template installs: ``systemConfig.packages`` and ``systemConfig.kernel.packages``."""
    out: list[str] = []
    sc = data.get("systemConfig") if isinstance(data, dict) else None
    if not isinstance(sc, dict):
        return out
    kernel = sc.get("kernel") if isinstance(sc.get("kernel"), dict) else {}
    for lst in (sc.get("packages"), kernel.get("packages")):
        if isinstance(lst, list):
            out.extend(p.strip() for p in lst if isinstance(p, str) and p.strip())
    return list(dict.fromkeys(out))


def repositories_from_template(data: dict[str, Any]) -> list[dict[str, Any]]:
    repos = data.get("packageRepositories") if isinstance(data, dict) else None
    return [r for r in repos if isinstance(r, dict)] if isinstance(repos, list) else []


def _is_placeholder(value: str) -> bool:
    return "<" in value or ">" in value or not value.strip()


def _dedup_key(location: str) -> str:
    parts = urlsplit(location)
    return f"{parts.netloc}{parts.path}".rstrip("/") if parts.netloc else location.rstrip("/")


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
        self._http = _HttpCache(
            self.cache_dir / "raw",
            ttl=self.ttl,
            timeout=timeout,
            offline=offline,
            max_stale=max_stale_seconds,
            clock=self.clock,
        )
        self._lock = threading.Lock()
        self._unit_locks: dict[str, threading.Lock] = {}
        self._loaded: dict[str, _Loaded] = {}
        self._failed: dict[str, tuple[float, str]] = {}  # unit key -> (retry after, reason)
        self._views: OrderedDict[tuple[Any, ...], _View] = OrderedDict()

    def close(self) -> None:
        self._http.close()

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
        view, statuses = self._consult(plan.units)
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
        target = data.get("target") if isinstance(data.get("target"), dict) else {}
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
        view, _ = self._consult(plan.units)
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
            if not isinstance(url, str) or _is_placeholder(url) or not isinstance(prio, int):
                continue
            with contextlib.suppress(ValueError):
                for u in self._template_source(repo, url.strip(), family).units(family, a):
                    priorities[u.key] = prio

        def locate(unit: _Unit) -> tuple[Path, str] | str:
            try:
                if _is_local(unit.location):
                    return self._locate_local(unit)
                got = self._fetch_unit(unit)
                return got.path, got.sha256
            except (_FetchError, _NotFound, IndexFormatError, OSError, ValueError) as e:
                return f"not found: {e}" if isinstance(e, _NotFound) else (str(e) or type(e).__name__)

        if len(plan.units) > 1:
            with ThreadPoolExecutor(max_workers=min(self.max_workers, len(plan.units))) as pool:
                located = list(pool.map(locate, plan.units))
        else:
            located = [locate(u) for u in plan.units]
        files: list[IndexFile] = []
        statuses: list[SourceStatus] = []
        for unit, got in zip(plan.units, located, strict=True):
            if isinstance(got, str):
                statuses.append(SourceStatus(_display(unit), False, 0, None, got, False))
                continue
            path, fingerprint = got
            files.append(
                IndexFile(unit.parser_family, path, fingerprint, _display(unit), priorities.get(unit.key, 0),
                          unit.allow)
            )
            statuses.append(SourceStatus(_display(unit), True, 0, None, None, True))
        return IndexFiles(d, a, family, files, statuses + plan.failed, notes)

    def stats(self) -> dict[str, Any]:
        now = self.clock()
        with self._lock:
            loaded = list(self._loaded.values())
            views = len(self._views)
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
            "http": dict(self._http.counts),
            "dists": sorted(self.sources),
        }

    # ------------------------------------------------------------------ planning

    def _family(self, dist: str, os: str | None) -> str | None:
        if dist in DISTS:
            return DISTS[dist].family
        if os and os.strip().lower() in OS_FAMILY:
            return OS_FAMILY[os.strip().lower()]
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

    def _plan(self, dist: str, family: str, arch: str, repositories: list[dict[str, Any]] | None) -> _Plan:
        plan = _Plan()
        seen: set[str] = set()
        for spec in self.sources.get(dist, []):
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
            if _is_placeholder(url):
                placeholders += 1
                continue
            try:
                src = self._template_source(repo, url.strip(), family)
                units = src.units(family, arch)
            except ValueError as e:
                plan.failed.append(SourceStatus(f"template:{label} ({url})", False, 0, None, str(e), False))
                continue
            if not self.allow_template_repositories:
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
            plan.notes.append(
                f"Skipped {placeholders} placeholder repositor{'y' if placeholders == 1 else 'ies'}."
            )
        return plan

    @staticmethod
    def _template_source(repo: dict[str, Any], url: str, family: str) -> RepoSource:
        if urlsplit(url).scheme not in ("http", "https"):
            raise ValueError("only http(s) template repositories are consulted")
        allow = tuple(p for p in repo.get("allowPackages") or [] if isinstance(p, str))
        base = url.rstrip("/")
        if family == "deb":
            codename = str(repo.get("codename") or "").strip()
            if not codename:
                raise ValueError("deb repository without codename")
            comps = _split_list([str(repo.get("component") or "main")])
            return RepoSource("deb", base, (codename,), comps, allow=allow, trusted=False, label=url)
        return RepoSource("rpm", base, allow=allow, trusted=False, label=url)

    # ------------------------------------------------------------------ loading

    def _consult(self, units: list[_Unit]) -> tuple[_View, list[SourceStatus]]:
        results: list[tuple[_Loaded | None, str | None]] = [(None, None)] * len(units)
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
                # Do not stall every call on a repository that just timed out.
                results[i] = (None, f"{failed[1]} (not retried for {_age_text(failed[0] - now)})")
            else:
                todo.append(i)
        if len(todo) == 1:
            results[todo[0]] = self._load_safe(units[todo[0]])
        elif todo:
            with ThreadPoolExecutor(max_workers=min(self.max_workers, len(todo))) as pool:
                for i, res in zip(todo, pool.map(lambda j: self._load_safe(units[j]), todo), strict=True):
                    results[i] = res
        statuses: list[SourceStatus] = []
        parts: list[tuple[_Unit, _Loaded]] = []
        for i, (u, (ld, err)) in enumerate(zip(units, results, strict=True)):
            if ld is None:
                statuses.append(SourceStatus(_display(u), False, 0, None, err, False))
            else:
                parts.append((u, ld))
                statuses.append(
                    SourceStatus(
                        _display(u),
                        True,
                        len(ld.index),
                        round(now - ld.checked_at, 1),
                        ld.warning,
                        ld.from_cache or i in in_memory,
                    )
                )
        return self._view(parts), statuses

    def _view(self, parts: list[tuple[_Unit, _Loaded]]) -> _View:
        key = tuple((u.key, id(ld.index), u.allow) for u, ld in parts)
        with self._lock:
            view = self._views.get(key)
            if view is not None:
                self._views.move_to_end(key)
                return view
        view = _View([(ld.index, _AllowFilter(u.allow) if u.allow else None) for u, ld in parts])
        with self._lock:
            self._views[key] = view
            while len(self._views) > 16:
                self._views.popitem(last=False)
        return view

    def _load_safe(self, unit: _Unit) -> tuple[_Loaded | None, str | None]:
        try:
            loaded = self._load(unit)
        except (_FetchError, _NotFound, IndexFormatError, OSError, ValueError) as e:
            reason = f"not found: {e}" if isinstance(e, _NotFound) else (str(e) or type(e).__name__)
            # One line per index would flood the log when offline; the verify result carries the summary.
            logger.info("package index %s could not be consulted: %s", _display(unit), reason)
            with self._lock:
                self._failed[unit.key] = (self.clock() + self.retry_after, reason)
            return None, reason
        with self._lock:
            self._failed.pop(unit.key, None)
        return loaded, None

    def _unit_lock(self, key: str) -> threading.Lock:
        with self._lock:
            return self._unit_locks.setdefault(key, threading.Lock())

    def _load(self, unit: _Unit) -> _Loaded:
        with self._unit_lock(unit.key):
            cur = self._loaded.get(unit.key)
            now = self.clock()
            if cur is not None and now < cur.expires_at:
                return cur
            if _is_local(unit.location):
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
                _display(unit),
                len(index),
                len(index.provides),
                elapsed,
            )
            loaded = _Loaded(
                index, checked_at, expires_at, fingerprint, from_cache, warning, elapsed, _display(unit)
            )
            with self._lock:
                self._loaded[unit.key] = loaded
            return loaded

    def _fetch_unit(self, unit: _Unit) -> _Fetched:
        guard = None if unit.trusted or self.allow_private_template_hosts else _public_host_guard
        if unit.kind == "deb":
            for suffix in (".xz", ".gz", ""):
                try:
                    return self._http.get(f"{unit.location}/Packages{suffix}", guard=guard)
                except _NotFound:
                    continue
            raise _FetchError(f"no Packages index under {unit.location} (tried .xz, .gz, plain)")
        if unit.kind == "rpm":
            repomd = self._http.get(f"{unit.location}/repodata/repomd.xml", guard=guard)
            primary = parse_repomd(repomd.path.read_bytes())
            base = primary.base or unit.location + "/"
            url = urljoin(base if base.endswith("/") else base + "/", primary.href)
            expect = primary.checksum if (primary.checksum_type or "").lower() == "sha256" else None
            got = self._http.get(url, guard=guard, expect_sha256=expect)
            if expect and got.sha256 != expect:
                raise IndexFormatError(f"{url}: checksum does not match repomd.xml")
            # The index is as current as the repomd.xml that named it.
            got.checked_at = repomd.checked_at
            got.from_cache = got.from_cache and repomd.from_cache
            got.warning = repomd.warning or got.warning
            return got
        return self._http.get(unit.location, guard=guard)

    @staticmethod
    def _locate_local(unit: _Unit) -> tuple[Path, str]:
        root = _local_path(unit.location)
        if unit.kind == "deb":
            for name in ("Packages.xz", "Packages.gz", "Packages"):
                if (root / name).is_file():
                    path = root / name
                    break
            else:
                raise _FetchError(f"no Packages index under {root}")
        elif unit.kind == "rpm":
            primary = parse_repomd((root / "repodata" / "repomd.xml").read_bytes())
            path = root / unquote(primary.href)
        else:
            path = root
        st = path.stat()
        return path, f"{path}:{st.st_size}:{st.st_mtime_ns}"

    def _parsed_path(self, unit: _Unit) -> Path:
        return self.cache_dir / "parsed" / f"{hashlib.sha256(unit.key.encode()).hexdigest()[:32]}.json"

    def _read_parsed(self, unit: _Unit, fingerprint: str) -> RepoIndex | None:
        try:
            data = json.loads(self._parsed_path(unit).read_text())
            if data.get("fingerprint") != fingerprint:
                return None
            return RepoIndex.from_json(data)
        except (OSError, ValueError, KeyError, IndexFormatError, AttributeError):
            return None

    def _write_parsed(self, unit: _Unit, fingerprint: str, index: RepoIndex) -> None:
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


def _display(unit: _Unit) -> str:
    return unit.location

"""Repository index parsers: Debian ``Packages``, RPM ``repomd.xml`` and ``primary.xml``.

Each parser streams its input (decompressed by :func:`open_index`) and keeps only the names, versions and
provides of one architecture plus the architecture-independent packages; that is all the verifier needs.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import lzma
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from xml.parsers import expat

import zstandard

from ..knowledge.package_names import arch_independent

PARSER_VERSION = 1
MAX_INDEX_BYTES = 2 * 1024 * 1024 * 1024  # decompressed; guards against compression bombs
# Provides worth keeping: names a template could list (drops sonames, paths, pkgconfig(...)).
_PROVIDE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9+_.:~-]*$")
_DEB_FIELD = re.compile(rb"^(Package|Version|Architecture|Provides):[ \t]*([^\r\n]*)", re.M)


class ByteReader(Protocol):
    """What the parsers need of a (decompressing) index stream; every decompressor here provides it."""

    def read(self, size: int = -1, /) -> bytes: ...

    def close(self) -> None: ...


class IndexFormatError(Exception):
    """An index file could not be parsed."""



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
def open_index(path: Path) -> Iterator[ByteReader]:
    """Open an index file, decompressing by magic bytes (gzip, xz, zstd, bzip2, or plain)."""
    with open(path, "rb") as raw:
        head = raw.read(6)
        raw.seek(0)
        stream: ByteReader
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


def _chunks(stream: ByteReader, size: int = 1 << 22) -> Iterator[bytes]:
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


def parse_deb_packages(stream: ByteReader, arch: str) -> RepoIndex:
    """Parse a Debian ``Packages`` stream, keeping entries for ``arch`` and ``all``."""
    wanted = {arch.encode(), arch_independent("deb").encode()}
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


def parse_rpm_primary(stream: ByteReader, arch: str) -> RepoIndex:
    """Parse an RPM ``primary.xml`` stream, keeping entries for ``arch`` and ``noarch``."""
    wanted = {arch, arch_independent("rpm")}
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

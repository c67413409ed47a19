"""Loading templates from disk: metadata, inferred keywords, searchable text, hashes.

A template without a metadata block must still be findable, so keywords are
inferred from its file name, packages, distribution, image type, kernel and
immutability settings (SPEC §1).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import stat as stat_mod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.yamlsafe import YamlError, load_mapping
from . import vocabulary as vocab

log = logging.getLogger(__name__)

TEMPLATE_SUFFIXES = (".yml", ".yaml")
TEMPLATE_KEYS = frozenset({"image", "target", "systemConfig", "disk"})
MAX_TEMPLATE_BYTES = 1024 * 1024
MAX_PACKAGES_IN_TEXT = 40
# Bump when build_text or keyword inference changes: cached rows embed the old text and must be redone.
TEXT_VERSION = 5


def content_hash(data: bytes) -> str:
    """SHA-256 of the whole file, first 16 hex characters (the ADR's cache key)."""
    return hashlib.sha256(data).hexdigest()[:16]


@dataclass(frozen=True)
class Fingerprint:
    size: int
    mtime_ns: int


@dataclass(slots=True)
class TemplateRecord:
    """One template as the index and the tools see it."""

    id: str  # path relative to its templates root, posix style
    root: str
    name: str  # the resource name: id without suffix
    image_name: str
    content_hash: str
    size: int
    mtime_ns: int
    os: str = ""
    dist: str = ""
    arch: str = ""
    image_type: str = ""
    description: str = ""
    use_case: str = ""
    use_cases: list[str] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)  # explicit and inferred, deduplicated
    explicit_keywords: list[str] = field(default_factory=list)
    capabilities: list[str] = field(default_factory=list)
    recommended_for: list[str] = field(default_factory=list)
    packages: list[str] = field(default_factory=list)
    kernel: str = ""
    has_metadata: bool = False
    text: str = ""
    terms_strong: list[str] = field(default_factory=list)
    terms_weak: list[str] = field(default_factory=list)

    @property
    def path(self) -> Path:
        return Path(self.root) / self.id

    @property
    def uri(self) -> str:
        return f"template://{self.name}"

    def read_text(self, follow_external: bool = False) -> str:
        """The file's text now, read as safely as at index time (it may have been swapped for a FIFO or a
        symlink since); ValueError or OSError says why not."""
        raw, _ = read_template_file(self.path, self.root, follow_external=follow_external)
        return raw.decode("utf-8")


@dataclass
class LoadProblem:
    path: str
    message: str


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list | tuple):
        return [str(v) for v in value if v is not None and str(v).strip()]
    return [str(value)]


def _dedupe(items: Iterable[str]) -> list[str]:
    """Case-insensitive de-duplication that keeps the first spelling and the order."""
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        key = item.strip()
        if key and key.lower() not in seen:
            seen.add(key.lower())
            out.append(key)
    return out


_SPLIT = re.compile(r"[-.]")


def words(texts: Iterable[str]) -> set[str]:
    """Matchable words of some texts: tokens, their dash/dot parts ("real-time" -> real, time), plural stems."""
    parts: list[str] = []
    for text in texts:
        toks = vocab.tokenize(text)
        parts.extend(toks)
        parts.extend(p for tok in toks for p in _SPLIT.split(tok) if p)
    terms = {p for p in parts if p and p not in vocab.STOPWORDS}
    return terms | {vocab.stem(t) for t in terms}


def term_sets(rec: TemplateRecord) -> tuple[list[str], list[str]]:
    """(strong, weak) words: what the author wrote vs what we inferred from the content. Computed once at
    index time and stored with the row, so a warm start does no text processing at all."""
    strong = words([" ".join(vocab.split_parts(rec.id)), " ".join(vocab.split_parts(rec.image_name)),
                    rec.description, rec.use_case, *rec.use_cases, *rec.explicit_keywords, *rec.capabilities,
                    *rec.recommended_for, rec.os, rec.dist, rec.arch, rec.image_type,
                    *vocab.DIST_WORDS.get(rec.dist, []), *vocab.ARCH_WORDS.get(rec.arch, [])[:2]])
    weak = words(rec.keywords) - strong
    return sorted(strong), sorted(weak)


def authored_words(rec: TemplateRecord) -> list[str]:
    """The words a template's author wrote, lower-cased: its explicit keywords and its file name's parts. A
    term a query excludes counts as present only among these (or the packages), not among the words we infer:
    a "web" file name does not mean nginx is installed."""
    return [w.lower() for w in rec.explicit_keywords] + vocab.split_parts(rec.id)


def _section(data: dict[str, Any], key: str) -> dict[str, Any]:
    """A mapping inside a template, or an empty one when it is missing or not a mapping (hand-written YAML)."""
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def template_packages(data: dict[str, Any]) -> list[str]:
    system = _section(data, "systemConfig")
    kernel = _section(system, "kernel")
    pkgs = _as_list(system.get("packages")) + _as_list(kernel.get("packages"))
    return _dedupe(p.strip() for p in pkgs)


def infer_keywords(file_name: str, data: dict[str, Any], packages: list[str]) -> list[str]:
    """Keywords a person would search with, derived from what the template contains."""
    words: list[str] = []
    for part in vocab.split_parts(file_name):
        words.extend(vocab.FILENAME_HINTS.get(part, []))
    target = _section(data, "target")
    dist = str(target.get("dist", "")).lower()
    words.extend(vocab.DIST_WORDS.get(dist, []))
    if target.get("os"):
        words.append(str(target["os"]).lower())
    arch = str(target.get("arch", "")).lower()
    words.extend(vocab.ARCH_WORDS.get(arch, [])[:2])
    image_type = str(target.get("imageType", "")).lower()
    words.extend(vocab.IMAGE_TYPE_WORDS.get(image_type, []))
    for pkg in packages:
        low = pkg.lower()
        for pattern, hints in vocab.PACKAGE_HINTS:
            if pattern.search(low):
                words.extend(hints)
    system = _section(data, "systemConfig")
    kernel = _section(system, "kernel")
    cmdline = str(kernel.get("cmdline", ""))
    for pattern, hints in vocab.CMDLINE_HINTS:
        if pattern.search(cmdline):
            words.extend(hints)
    immut = system.get("immutability")
    if isinstance(immut, dict) and immut.get("enabled"):
        words.extend(["immutable", "read-only", "dm-verity"])
        if any(k.lower().startswith("securebootdb") for k in immut):
            words.append("secure-boot")
    boot = _section(system, "bootloader")
    if boot.get("provider"):
        words.append(str(boot["provider"]).lower())
    disk = _section(data, "disk")
    for artifact in disk.get("artifacts") or []:
        if isinstance(artifact, dict) and artifact.get("type") in ("qcow2", "vhd", "vhdx", "vmdk", "vdi"):
            words.extend([str(artifact["type"]), "vm", "virtual-machine"])
    return _dedupe(words)


def build_text(rec: TemplateRecord, system_description: str) -> str:
    """Readable lines for embedding and BM25; most distinctive facts first (MiniLM reads 256 tokens)."""
    lines = [f"Template: {rec.name}"]
    if rec.image_name and rec.image_name != rec.name:
        lines.append(f"Image: {rec.image_name}")
    if rec.description:
        lines.append(f"Description: {rec.description}")
    uses = _dedupe([rec.use_case, *rec.use_cases])
    if uses:
        lines.append("Use cases: " + "; ".join(uses))
    if system_description and system_description != rec.description:
        lines.append(f"System: {system_description}")
    dist_words = " ".join(vocab.DIST_WORDS.get(rec.dist, [])[:3])
    lines.append(f"Distribution: {rec.os} {rec.dist} {dist_words} {rec.arch} {rec.image_type}".strip())
    if rec.keywords:
        lines.append("Keywords: " + ", ".join(rec.keywords))
    if rec.capabilities:
        lines.append("Capabilities: " + ", ".join(rec.capabilities))
    if rec.recommended_for:
        lines.append("Recommended for: " + "; ".join(rec.recommended_for))
    if rec.packages:
        lines.append("Packages: " + ", ".join(rec.packages[:MAX_PACKAGES_IN_TEXT]))
    if rec.kernel:
        lines.append(f"Kernel: {rec.kernel}")
    return "\n".join(lines)


def record_from_data(
    data: dict[str, Any], *, rel_id: str, root: str, raw: bytes, fingerprint: Fingerprint
) -> TemplateRecord:
    meta = _section(data, "metadata")
    image = _section(data, "image")
    target = _section(data, "target")
    system = _section(data, "systemConfig")
    kernel = _section(system, "kernel")
    packages = template_packages(data)
    name = rel_id.rsplit(".", 1)[0].replace("/", "__")
    explicit = _as_list(meta.get("keywords"))
    inferred = infer_keywords(Path(rel_id).name, data, packages)
    kernel_bits = [f"version {kernel['version']}" if kernel.get("version") else "",
                   f"cmdline {kernel['cmdline']}" if kernel.get("cmdline") else "",
                   " ".join(_as_list(kernel.get("packages")))]
    system_description = str(system.get("description") or "")
    rec = TemplateRecord(
        id=rel_id,
        root=root,
        name=name,
        image_name=str(image.get("name") or ""),
        content_hash=content_hash(raw),
        size=fingerprint.size,
        mtime_ns=fingerprint.mtime_ns,
        os=str(target.get("os") or ""),
        dist=str(target.get("dist") or ""),
        arch=str(target.get("arch") or ""),
        image_type=str(target.get("imageType") or ""),
        description=str(meta.get("description") or system_description or ""),
        use_case=str(meta.get("useCase") or ""),
        use_cases=_as_list(meta.get("use_cases")) + _as_list(meta.get("useCases")),
        keywords=_dedupe([*explicit, *inferred]),
        explicit_keywords=explicit,
        capabilities=_as_list(meta.get("capabilities")),
        recommended_for=_as_list(meta.get("recommendedFor")) + _as_list(meta.get("recommended_for")),
        packages=packages,
        kernel=" ".join(b for b in kernel_bits if b).strip(),
        has_metadata=bool(meta),
    )
    rec.text = build_text(rec, system_description)
    rec.terms_strong, rec.terms_weak = term_sets(rec)
    return rec


def looks_like_template(data: Any) -> bool:
    return isinstance(data, dict) and bool(TEMPLATE_KEYS & set(data))


# ---- reading files from a templates directory ----------------------------------------------------------------
# Policy: only regular files are read. A symlink is followed when its target is a regular file inside the same
# templates root (a library that links shared templates keeps working); a symlink that leads outside the root is
# refused unless ai.templates_follow_external_symlinks is set, so a planted link cannot publish /etc/shadow-like
# files through search results. FIFOs, devices, sockets and links to them are never opened for reading: a FIFO
# blocks the reader forever and /dev/zero never ends. Every refusal is reported (cache_stats' skipped_files).

_KINDS = ((stat_mod.S_ISFIFO, "a FIFO (named pipe)"), (stat_mod.S_ISCHR, "a character device"),
          (stat_mod.S_ISBLK, "a block device"), (stat_mod.S_ISSOCK, "a socket"), (stat_mod.S_ISDIR, "a directory"))


def file_kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "a regular file" if stat_mod.S_ISREG(mode) else "not a regular file"


def _inside(path: str, root: str) -> bool:
    root = os.path.realpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def regular_file_stat(path: str, root: str, follow_external: bool = False) -> os.stat_result:
    """The stat of ``path`` if the policy above lets us read it; ValueError says why not. Never opens the file."""
    st = os.lstat(path)
    if stat_mod.S_ISLNK(st.st_mode):
        target = os.path.realpath(path)
        if not follow_external and not _inside(target, root):
            raise ValueError(f"symlink to {target}, outside the templates directory {root}; not followed "
                             "(set ai.templates_follow_external_symlinks to allow it)")
        try:
            st = os.stat(path)
        except OSError as exc:
            raise ValueError(f"broken symlink to {target}: {exc.strerror or exc}") from None
        if not stat_mod.S_ISREG(st.st_mode):
            raise ValueError(f"symlink to {target}, which is {file_kind(st.st_mode)}; only regular files are read")
    elif not stat_mod.S_ISREG(st.st_mode):
        raise ValueError(f"{file_kind(st.st_mode)}, not a regular file; only regular files are read")
    return st


def read_template_file(path: str | Path, root: str | Path, *, follow_external: bool = False,
                       limit: int = MAX_TEMPLATE_BYTES) -> tuple[bytes, Fingerprint]:
    """At most ``limit`` bytes of a regular template file, or ValueError/OSError with the reason.

    Checked twice: by path before opening (nothing special is ever opened) and on the open descriptor (a file
    swapped for a FIFO or device in between is still refused). O_NONBLOCK keeps even that open from waiting
    for a FIFO writer; reading stops at limit+1 bytes whatever the size claims.
    """
    path_s, root_s = str(path), str(root)
    st = regular_file_stat(path_s, root_s, follow_external)
    if st.st_size > limit:
        raise ValueError(f"file is {st.st_size:,} bytes, over the {limit:,}-byte template limit")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path_s, flags)
    try:
        st = os.fstat(fd)
        if not stat_mod.S_ISREG(st.st_mode):
            raise ValueError(f"{file_kind(st.st_mode)}, not a regular file (it changed while being opened)")
        opened = f"/proc/self/fd/{fd}"
        if not follow_external and os.path.islink(opened):
            real = os.readlink(opened)
            if not _inside(real, root_s):
                raise ValueError(f"resolves to {real}, outside the templates directory {root_s}; not read")
        chunks: list[bytes] = []
        remaining = limit + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 256 * 1024))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise ValueError(f"file grew past the {limit:,}-byte template limit while being read")
    return data, Fingerprint(st.st_size, st.st_mtime_ns)


def load_record(root: Path, path: Path, raw: bytes | None = None, *, follow_external: bool = False,
                fingerprint: Fingerprint | None = None) -> TemplateRecord:
    """Parse one file into a record; raises :class:`YamlError` or ``ValueError`` with the reason."""
    if raw is None:
        raw, fingerprint = read_template_file(path, root, follow_external=follow_external)
    else:
        if fingerprint is None:
            st = path.stat()
            fingerprint = Fingerprint(st.st_size, st.st_mtime_ns)
        if len(raw) > MAX_TEMPLATE_BYTES:
            raise ValueError(f"file is {len(raw):,} bytes, over the {MAX_TEMPLATE_BYTES:,}-byte template limit")
    parsed = load_mapping(raw, max_bytes=MAX_TEMPLATE_BYTES)
    if not looks_like_template(parsed.data):
        raise ValueError("not an image template (none of image, target, disk, systemConfig at top level)")
    rel = path.relative_to(root).as_posix()
    return record_from_data(parsed.data, rel_id=rel, root=str(root), raw=raw, fingerprint=fingerprint)


def scan_files(roots: Iterable[Path], follow_external: bool = False,
               skipped: list[LoadProblem] | None = None) -> Iterator[tuple[Path, Path, Fingerprint]]:
    """Every readable template file under the roots with a cheap fingerprint (no reads); files the policy
    above refuses go to ``skipped`` when given."""
    for root in roots:
        if not root.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in ("files", "node_modules"))
            for fname in sorted(filenames):
                if not fname.endswith(TEMPLATE_SUFFIXES) or fname.startswith("."):
                    continue
                path = Path(dirpath) / fname
                try:
                    st = regular_file_stat(str(path), str(root), follow_external)
                except ValueError as exc:
                    if skipped is not None:
                        skipped.append(LoadProblem(str(path), str(exc)))
                    continue
                except OSError:
                    continue
                yield root, path, Fingerprint(st.st_size, st.st_mtime_ns)


__all__ = [
    "Fingerprint",
    "LoadProblem",
    "TemplateRecord",
    "YamlError",
    "build_text",
    "file_kind",
    "content_hash",
    "infer_keywords",
    "load_record",
    "looks_like_template",
    "read_template_file",
    "record_from_data",
    "regular_file_stat",
    "scan_files",
    "template_packages",
    "term_sets",
    "words",
]

"""Facts about os-image-composer's template format and build beyond its schema (``resources/template_format.yaml``).

The validator's rule families read them here; partition type GUIDs, architectures and distributions are
in ``capabilities.yaml`` (:mod:`.loader`), and :class:`TemplateFormat` answers the questions that need both.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.paths import resource_text
from ..core.yamlsafe import load_mapping
from .loader import Capabilities, load_capabilities

RESOURCE = "template_format.yaml"


@dataclass(frozen=True)
class PartitionTable:
    header_bytes: int  # at the start of the disk, before the first partition may begin
    backup_bytes: int  # at the end of the disk (GPT's backup table)


@dataclass(frozen=True)
class TemplateFormat:
    default_configs: Mapping[str, tuple[str, ...]]  # imageType -> arches with a shipped default config
    partition_tables: Mapping[str, PartitionTable]  # gpt | mbr
    filesystems: tuple[str, ...]
    fat_filesystems: tuple[str, ...]
    build_bootloaders: tuple[str, ...]
    build_compressions: tuple[str, ...]
    compression_fixes: Mapping[str, str]
    arch_only: Mapping[str, re.Pattern[str]]  # arch -> names of packages built for that arch only
    value_spellings: Mapping[str, str]
    caps: Capabilities

    def table(self, kind: str) -> PartitionTable:
        """The partition table ``kind`` (anything but mbr is gpt, upstream's default)."""
        return self.partition_tables["mbr" if kind == "mbr" else "gpt"]

    def partition_guid(self, name: str) -> str | None:
        """The GPT type GUID of upstream's partition type name (esp, bios, linux-root-amd64, ...)."""
        return self.caps.partition_types.get(name)

    def root_guid(self, arch: str) -> str | None:
        """GUID of the root partition type for an architecture (x86_64 / aarch64), None for others."""
        return self.caps.partition_types.get(self.caps.root_type(arch)) if arch in self.caps.arch_info else None

    def arch_of_root_guid(self, guid: str) -> str | None:
        return next((arch for arch in self.caps.arch_info if self.root_guid(arch) == guid), None)

    def spelled(self, word: str) -> str | None:
        """Upstream's enum value for a common spelling (amd64 -> x86_64, qcow2 -> raw, bios -> legacy)."""
        key = word.lower()
        return self.value_spellings.get(key) or self.caps.arch_of(key)

    def arch_name_swaps(self) -> tuple[tuple[str, str], ...]:
        """(x86_64 spelling, aarch64 spelling) pairs inside package names: amd64/arm64, x86_64/aarch64, x64/aa64."""
        x86, arm = self.caps.arch_info.get("x86_64", {}), self.caps.arch_info.get("aarch64", {})
        pairs = [(str(x86[k]), str(arm[k])) for k in ("deb", "efi") if k in x86 and k in arm]
        return tuple(pairs[:1] + [("x86_64", "aarch64")] + pairs[1:])


def _strings(values: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in values or ())


@functools.lru_cache(maxsize=1)
def load_template_format() -> TemplateFormat:
    """The bundled facts, parsed once (read-only data shipped with the package)."""
    raw = load_mapping(resource_text(RESOURCE)).data
    build = raw.get("build") or {}
    return TemplateFormat(
        default_configs={str(k): _strings(v) for k, v in (raw.get("default_configs") or {}).items()},
        partition_tables={
            str(k): PartitionTable(int(v["header_bytes"]), int(v.get("backup_bytes", 0)))
            for k, v in (raw.get("partition_tables") or {}).items()
        },
        filesystems=_strings(raw.get("filesystems")),
        fat_filesystems=_strings(raw.get("fat_filesystems")),
        build_bootloaders=_strings(build.get("bootloaders")),
        build_compressions=_strings(build.get("compressions")),
        compression_fixes={str(k): str(v) for k, v in (build.get("compression_fixes") or {}).items()},
        arch_only={
            str(arch): re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)
            for arch, patterns in (raw.get("arch_only_packages") or {}).items()
        },
        value_spellings={str(k).lower(): str(v) for k, v in (raw.get("value_spellings") or {}).items()},
        caps=load_capabilities(),
    )


__all__ = ["PartitionTable", "TemplateFormat", "load_template_format"]

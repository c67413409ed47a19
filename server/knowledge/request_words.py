"""The domain words of requests (resources/request_words.yaml): image types, disk formats, compressions,
filesystems, mount words, bootloaders, package-name suffixes, kernel package shapes, image-name slugs and the
placeholders a model writes for "not given".

The request parser and the composer read them here, so a new word is a data change, never a code change.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.paths import resource_text
from ..core.yamlsafe import load_mapping

RESOURCE = "request_words.yaml"


@dataclass(frozen=True)
class RequestWords:
    image_types: Mapping[str, tuple[str, ...]]  # imageType -> words, in reading order
    artifacts: tuple[str, ...]
    compressions: Mapping[str, str]  # word -> upstream name
    filesystems: Mapping[str, str]  # word -> upstream fsType
    mount_words: Mapping[str, str]  # word -> mount point
    software_mounts: frozenset[str]  # mount words that name software (asked for with their partition)
    hierarchy_mounts: tuple[str, ...]  # mount words that need no "partition" after a size
    plain_kernel_words: frozenset[str]  # words before "kernel" that name no flavour ("latest")
    bootloaders: Mapping[str, tuple[str, ...]]  # provider -> words
    package_name_suffixes: tuple[str, ...]
    kind_nouns: frozenset[str]  # "chromium browser": the kind of what was just named
    everyday_names: frozenset[str]  # package names that are everyday words: packages only where one is named
    asides: tuple[str, ...]  # discourse phrases that carry no wish ("after all", "for now")
    kernel_package: re.Pattern[str]
    realtime_kernel: re.Pattern[str]
    name_slugs: Mapping[str, Mapping[str, str]]  # group -> family or "default" -> slug
    placeholders: frozenset[str] = frozenset()  # lower case: what a model writes for "not given"
    versioned_names: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # word -> patterns with {v}
    compound_suffixes: tuple[str, ...] = ()  # "RHEL-like", "docker-ready": the known word read alone
    negating_suffixes: tuple[str, ...] = ()  # "docker-free": read as "no docker"
    likeness_words: tuple[str, ...] = ()  # "a RHEL 10 clone": the distribution named, nothing more
    data_dirs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # database -> packages|deb|rpm -> value
    filesystem_tools: Mapping[str, str] = field(default_factory=dict)  # filesystem word -> its tools' package
    graphical_apps: tuple[re.Pattern[str], ...] = ()  # applications that need a desktop

    def data_dir(self, mount: str, pkg_type: str) -> tuple[str, str] | None:
        """(database, its directory on ``pkg_type``) when ``mount`` is a database's data directory on the other
        package format ("/var/lib/postgresql" on rpm -> postgresql, /var/lib/pgsql); None otherwise."""
        for name, dirs in self.data_dirs.items():
            own = dirs.get(pkg_type)
            if own and mount != own and mount in (dirs.get("deb"), dirs.get("rpm")):
                return name, own
        return None

    def name_slug(self, group: str, family: str | None) -> str | None:
        """The word an image name uses for ``group`` on ``family``."""
        slugs = self.name_slugs.get(group) or {}
        return slugs.get(family or "") or slugs.get("default")


def _words(values: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in values or ())


def _slugs(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {"default": str(value)}


@functools.lru_cache(maxsize=1)
def load_request_words() -> RequestWords:
    """The bundled request words, parsed once (read-only data shipped with the package)."""
    raw: Mapping[str, Any] = load_mapping(resource_text(RESOURCE)).data
    return RequestWords(
        image_types={str(k): _words(v) for k, v in (raw.get("image_types") or {}).items()},
        artifacts=_words(raw.get("artifacts")),
        compressions={str(k): str(v) for k, v in (raw.get("compressions") or {}).items()},
        filesystems={str(k): str(v) for k, v in (raw.get("filesystems") or {}).items()},
        mount_words={str(k): str(v) for k, v in (raw.get("mount_words") or {}).items()},
        software_mounts=frozenset(str(w).lower() for w in raw.get("software_mounts") or ()),
        hierarchy_mounts=_words(raw.get("hierarchy_mounts")),
        plain_kernel_words=frozenset(_words(raw.get("plain_kernel_words"))),
        bootloaders={str(k): _words(v) for k, v in (raw.get("bootloaders") or {}).items()},
        package_name_suffixes=_words(raw.get("package_name_suffixes")),
        kind_nouns=frozenset(_words(raw.get("kind_nouns"))),
        everyday_names=frozenset(_words(raw.get("everyday_names"))),
        asides=_words(raw.get("asides")),
        kernel_package=re.compile(str(raw.get("kernel_package_pattern") or r"^$")),
        realtime_kernel=re.compile(str(raw.get("realtime_kernel_pattern") or r"^$")),
        name_slugs={str(k): _slugs(v) for k, v in (raw.get("name_slugs") or {}).items()},
        placeholders=frozenset(w.lower() for w in _words(raw.get("placeholders"))),
        likeness_words=_words(raw.get("likeness_words")),
        data_dirs={str(k): {str(a): str(b) for a, b in v.items()} for k, v in (raw.get("data_dirs") or {}).items()},
        filesystem_tools={str(k): str(v) for k, v in (raw.get("filesystem_tools") or {}).items()},
        graphical_apps=tuple(re.compile(str(p)) for p in raw.get("graphical_apps") or ()),
        versioned_names={str(k): _words(v) for k, v in (raw.get("versioned_names") or {}).items()},
        compound_suffixes=_words(raw.get("compound_suffixes")),
        negating_suffixes=_words(raw.get("negating_suffixes")),
    )

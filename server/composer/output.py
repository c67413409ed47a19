"""YAML output: templates written in upstream's key order, strings quoted only where needed.

Every template the server returns goes through :func:`dump_yaml`, so generated, refined and conformed
templates read alike. :func:`conform_text` re-writes an LLM's text only when upstream would refuse its metadata.
"""

from __future__ import annotations

from typing import Any

import yaml

from ..core.yamlsafe import YamlError, load_mapping
from ..validation.upstream import conform

_ORDER = {
    (): ["metadata", "image", "target", "packageRepositories", "disk", "systemConfig"],
    ("metadata",): ["description", "use_cases", "keywords"],
    ("image",): ["name", "version"],
    ("target",): ["os", "dist", "arch", "imageType"],
    ("disk",): ["name", "path", "artifacts", "size", "partitionTableType", "partitions"],
    ("disk", "partitions", "*"): [
        "id", "index", "name", "type", "typeUUID", "flags", "start", "end", "fsType", "fsLabel", "mountPoint",
        "mountOptions",
    ],
    ("disk", "artifacts", "*"): ["type", "compression"],
    ("systemConfig",): [
        "name", "description", "hostname", "initramfs", "bootloader", "immutability", "users", "packages",
        "additionalFiles", "kernel", "configurations",
    ],
    ("systemConfig", "bootloader"): ["bootType", "provider"],
    ("systemConfig", "immutability"): ["enabled", "secureBootDBKey", "secureBootDBCrt", "secureBootDBCer"],
    ("systemConfig", "users", "*"): [
        "name", "password", "hash_algo", "passwordMaxAge", "groups", "sudo", "home", "shell", "startupScript",
    ],
    ("systemConfig", "kernel"): ["name", "version", "cmdline", "enableExtraModules", "uki", "packages"],
    ("systemConfig", "additionalFiles", "*"): ["local", "final"],
    ("packageRepositories", "*"): [
        "codename", "url", "path", "pkey", "pkeys", "component", "priority", "allowPackages",
    ],
}  # fmt: skip


def _ordered(value: Any, path: tuple[str, ...] = ()) -> Any:
    if isinstance(value, dict):
        order = _ORDER.get(path, [])
        keys = [k for k in order if k in value] + [k for k in value if k not in order]
        return {k: _ordered(value[k], (*path, str(k))) for k in keys}
    if isinstance(value, list):
        return [_ordered(v, (*path, "*")) for v in value]
    return value


class _Dumper(yaml.SafeDumper):
    """Block style with indented sequences, as the upstream templates are written."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    node = dumper.represent_scalar("tag:yaml.org,2002:str", value)
    # Quote (double, upstream style) only what would not read back as this string.
    implicit = dumper.resolve(yaml.ScalarNode, value, (True, False))
    analysis = dumper.analyze_scalar(value) if value else None
    plain_ok = bool(value) and analysis is not None and analysis.allow_block_plain and not analysis.multiline
    if implicit != "tag:yaml.org,2002:str" or not plain_ok or value != value.strip():
        node.style = '"'
    return node


_Dumper.add_representer(str, _represent_str)


def dump_yaml(data: dict) -> str:
    """Stable, readable YAML in the upstream key order; strings quoted only where needed."""
    return yaml.dump(
        _ordered(data),
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=4096,
        indent=2,
    )


def conform_text(text: str) -> tuple[str, list[str]]:
    """:func:`~..validation.upstream.conform` on YAML text: unchanged text (and no notes) when nothing moves or
    the text does not parse (the validator reports that)."""
    if not isinstance(text, str) or "metadata" not in text:
        return text, []
    try:
        data = load_mapping(text).data
    except YamlError:
        return text, []
    fixed, changes = conform(data)
    if not changes:
        return text, []
    return dump_yaml(fixed), changes

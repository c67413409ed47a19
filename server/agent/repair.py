"""Deterministic repair of an invalid generated template.

LLMs (small ones especially) return templates that are mostly right with a few
broken sections. Instead of throwing the whole answer away, start from the
grounding template (known valid) and take each section of the generated one
that does not add errors; then re-apply the request's stated constraints with
the offline composer. What could not be kept is reported.
"""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..core.yamlsafe import YamlError, parse_yaml
from ..knowledge.loader import load_capabilities
from ..validation.validator import validate_data

log = logging.getLogger(__name__)

SECTIONS = ("target", "image", "systemConfig", "disk", "packageRepositories", "metadata")
REQUIRED = ("image", "target", "disk", "systemConfig")
_HOIST = {"target": ("os", "dist", "arch", "imageType"),
          "systemConfig": ("packages", "hostname", "kernel", "bootloader", "users", "immutability"),
          "disk": ("partitions", "partitionTableType", "size")}
# A package list this much shorter than the base's, sharing little with it, is the model naming what it
# adds, not the whole list: replacing would silently drop the boot chain and the kernel.
_FRAGMENT_SHARE = 0.5
SUBSECTIONS = {"systemConfig": ("packages", "kernel", "hostname", "users", "bootloader", "immutability",
                                "description", "name")}


@dataclass
class RepairResult:
    data: dict[str, Any]
    kept: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


def _error_count(data: dict[str, Any]) -> int:
    return len(validate_data(data).errors)


def _quick_fixes(data: dict[str, Any]) -> dict[str, Any]:
    """Mechanical slips: keys at the wrong level, unquoted end: 0, numeric versions, arch aliases, os from dist."""
    data = copy.deepcopy(data)
    # Small models often drop a section header and write its keys at the top level.
    for section, keys in _HOIST.items():
        stray = {k: data.pop(k) for k in keys if k in data and k not in SECTIONS}
        if stray:
            node = data.get(section)
            if not isinstance(node, dict):
                node = {}
                data[section] = node
            for k, v in stray.items():
                node.setdefault(k, v)
    target = data.get("target")
    if isinstance(target, dict):
        caps = load_capabilities()
        target["arch"] = caps.arch_of(str(target.get("arch", ""))) or target.get("arch")
        dist = target.get("dist")
        family = caps.family_of(dist) if isinstance(dist, str) and caps.dist_of(dist) == dist else None
        if family and target.get("os") != family:
            target["os"] = family
    image = data.get("image")
    if isinstance(image, dict) and isinstance(image.get("version"), int | float):
        image["version"] = str(image["version"])
    disk = data.get("disk")
    if isinstance(disk, dict):
        for part in disk.get("partitions") or []:
            if isinstance(part, dict):
                for key in ("start", "end"):
                    if isinstance(part.get(key), int):
                        part[key] = str(part[key]) if part[key] == 0 else f"{part[key]}MiB"
    return data


def _merge_packages(base: list[Any], new: list[Any]) -> list[Any]:
    if not base or not all(isinstance(p, str) for p in new):
        return copy.deepcopy(new)
    shared = len(set(base) & set(new))
    if len(new) < len(base) and shared < _FRAGMENT_SHARE * len(base):
        return [*base, *[p for p in new if p not in base]]
    return copy.deepcopy(new)


def deep_merge(base: Any, new: Any, key: str = "") -> Any:
    """``new`` on top of ``base``: mappings merge key by key, lists and scalars replace (package lists
    that are clearly fragments extend the base's instead). A null in ``new`` keeps the base's value."""
    if new is None:
        return copy.deepcopy(base)
    if isinstance(base, dict) and isinstance(new, dict):
        out = copy.deepcopy(base)
        for k, v in new.items():
            out[k] = deep_merge(base.get(k), v, str(k)) if k in base else copy.deepcopy(v)
        return out
    if key == "packages" and isinstance(base, list) and isinstance(new, list):
        return _merge_packages(base, new)
    return copy.deepcopy(new)


def missing_sections(data: dict[str, Any]) -> list[str]:
    return [k for k in REQUIRED if k not in data]


def complete_from_base(fragment: dict[str, Any], base: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A partial answer ("only the sections you change") made whole: every section the model left out,
    and every key it left out inside a section, comes from ``base``. Returns the data and what was filled."""
    filled = [k for k in base if k not in fragment]
    merged = deep_merge(base, _quick_fixes(fragment))
    # The model's sections first, in the base's order otherwise (keeps diffs against the base readable).
    ordered = {k: merged[k] for k in base if k in merged}
    ordered.update({k: v for k, v in merged.items() if k not in ordered})
    return ordered, filled


_SCALAR_KEY = re.compile(r"^(\s*(?:-\s+)?[\w.-]+:)\s+\S.*$")
MAX_SALVAGE_EDITS = 25


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def salvage_yaml(text: str) -> tuple[dict[str, Any] | None, list[int]]:
    """Parse what can be parsed of a reply with YAML syntax errors.

    Small models write ``image: my-name`` and then indent ``name:`` under it, or leave a stray line at the
    wrong depth. At each error: a ``key: value`` line that is followed by deeper lines loses its value
    (it becomes the opener it was meant to be); otherwise the offending line goes. Returns the mapping
    (or None) and the 1-based numbers of the lines that were dropped or changed.
    """
    lines = text.split("\n")
    touched: list[int] = []
    for _ in range(MAX_SALVAGE_EDITS):
        try:
            data = parse_yaml("\n".join(lines)).data
        except YamlError as exc:
            if not exc.line or exc.line > len(lines):
                return None, touched
            bad = exc.line - 1
            opener = next((i for i in range(bad - 1, -1, -1) if lines[i].strip()), None)
            fixable = (opener is not None and _SCALAR_KEY.match(lines[opener])
                       and _indent(lines[bad]) > _indent(lines[opener]))
            if fixable and opener is not None:
                match = _SCALAR_KEY.match(lines[opener])
                assert match is not None
                lines[opener] = match.group(1)
                touched.append(opener + 1)
            else:
                del lines[bad]
                touched.append(bad + 1)
            continue
        return (data if isinstance(data, dict) else None), touched
    return None, touched


_PATH_PART = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")


def prune_unknown(data: dict[str, Any], issues: Iterable[Any]) -> tuple[dict[str, Any], list[str]]:
    """``data`` without the keys the validator calls unknown (``schema.additionalProperties``): a model that
    invents ``image.description`` should not cost the whole image section."""
    data = copy.deepcopy(data)
    removed: list[str] = []
    for issue in issues:
        if getattr(issue, "code", "") != "schema.additionalProperties":
            continue
        steps: list[str | int] = [int(i) if i else k for k, i in _PATH_PART.findall(issue.path.removeprefix("$"))]
        node: Any = data
        for step in steps[:-1]:
            try:
                node = node[step]
            except (KeyError, IndexError, TypeError):
                node = None
                break
        if isinstance(node, dict) and steps and steps[-1] in node:
            del node[steps[-1]]
            removed.append(issue.path)
    return data, removed


def merge_onto_base(generated: dict[str, Any], base: dict[str, Any]) -> RepairResult:
    """Keep every generated section (and systemConfig field) that does not make the base invalid."""
    generated = _quick_fixes(generated)
    result = RepairResult(copy.deepcopy(base))
    errors = _error_count(result.data)
    for key in SECTIONS:
        if key not in generated:
            continue
        # The section merged into the base's (keeps what the model left out), then the model's as it is.
        kept = False
        for value in (deep_merge(result.data.get(key), generated[key], key), copy.deepcopy(generated[key])):
            trial = copy.deepcopy(result.data)
            trial[key] = value
            trial_errors = _error_count(trial)
            if trial_errors <= errors:
                result.data, errors = trial, trial_errors
                result.kept.append(key)
                kept = True
                break
        if kept:
            continue
        parts = SUBSECTIONS.get(key)
        if not parts or not isinstance(generated[key], dict):
            result.dropped.append(key)
            continue
        for sub in parts:
            if sub not in generated[key]:
                continue
            trial = copy.deepcopy(result.data)
            trial.setdefault(key, {})[sub] = copy.deepcopy(generated[key][sub])
            trial_errors = _error_count(trial)
            if trial_errors <= errors:
                result.data, errors = trial, trial_errors
                result.kept.append(f"{key}.{sub}")
            else:
                result.dropped.append(f"{key}.{sub}")
    log.info("repair kept %s, dropped %s", result.kept, result.dropped)
    return result

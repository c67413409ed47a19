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
from dataclasses import dataclass, field
from typing import Any

from server.validation import validate_data

log = logging.getLogger(__name__)

SECTIONS = ("target", "image", "systemConfig", "disk", "packageRepositories", "metadata")
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
    """Mechanical slips: unquoted end: 0, numeric versions, arch aliases, os inferred from dist."""
    data = copy.deepcopy(data)
    target = data.get("target")
    if isinstance(target, dict):
        arch = str(target.get("arch", "")).lower()
        target["arch"] = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}.get(arch, target.get("arch"))
        from server.vocabulary import OS_FOR_DIST

        if target.get("dist") in OS_FOR_DIST and target.get("os") != OS_FOR_DIST[target["dist"]]:
            target["os"] = OS_FOR_DIST[target["dist"]]
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


def merge_onto_base(generated: dict[str, Any], base: dict[str, Any]) -> RepairResult:
    """Keep every generated section (and systemConfig field) that does not make the base invalid."""
    generated = _quick_fixes(generated)
    result = RepairResult(copy.deepcopy(base))
    errors = _error_count(result.data)
    for key in SECTIONS:
        if key not in generated:
            continue
        trial = copy.deepcopy(result.data)
        trial[key] = copy.deepcopy(generated[key])
        trial_errors = _error_count(trial)
        if trial_errors <= errors:
            result.data, errors = trial, trial_errors
            result.kept.append(key)
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

"""Upstream's JSON Schema errors as messages for people: one message per error with a hint how to fix it;
for anyOf/oneOf the most relevant branch instead of all of them; the ADR's metadata fields (and look-alikes)
pointed to where upstream wants the words; a common spelling of an enum value (amd64, qcow2, bios) named.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from jsonschema.exceptions import ValidationError, best_match

from ..knowledge.template_format import load_template_format
from . import upstream as upstream_compat
from .context import MAX_ISSUES, Context, PathT, closest, kind_of, show, where


def schema_issues(ctx: Context) -> None:
    """Every error of upstream's $defs/UserTemplate schema, as issues in ``ctx``."""
    errors = sorted(
        upstream_compat.user_template_validator().iter_errors(ctx.data),
        key=lambda e: ([str(p) for p in e.absolute_path], str(e.validator)),
    )
    for err in errors:
        _map_error(err, ctx)


def _map_error(err: ValidationError, ctx: Context) -> None:
    path: PathT = tuple(err.absolute_path)
    handler = _HANDLERS.get(str(err.validator), _on_generic)
    handler(err, path, ctx)


def _on_required(err: ValidationError, path: PathT, ctx: Context) -> None:
    instance = err.instance if isinstance(err.instance, dict) else {}
    props = err.schema.get("properties", {}) if isinstance(err.schema, dict) else {}
    for missing in err.validator_value:
        if missing in instance:
            continue
        if path[-1:] == ("immutability",) and "allOf" in list(err.schema_path):
            given = [k for k in ("secureBootDBKey", "secureBootDBCrt", "secureBootDBCer") if k in instance]
            ctx.add(
                (*path, missing),
                f"secure boot needs all three of secureBootDBKey, secureBootDBCrt and secureBootDBCer; "
                f"'{missing}' is missing (given: {', '.join(given)})",
                "immutability.secure_boot_incomplete",
                hint="Add the missing file path, or remove the secureBootDB* keys to build without secure boot.",
                at_key=True,
            )
            continue
        hint = f"Add '{missing}:' under {where(path)}." if path else f"Add a top-level '{missing}:' section."
        sub = props.get(missing)
        if isinstance(sub, dict) and "enum" in sub:
            hint += f" Allowed values: {', '.join(map(str, sub['enum']))}."
        ctx.add(
            (*path, missing),
            f"{where(path)} is missing the required key '{missing}'",
            "schema.required",
            hint=hint,
            at_key=True,
        )


def _on_additional(err: ValidationError, path: PathT, ctx: Context) -> None:
    instance = err.instance if isinstance(err.instance, dict) else {}
    allowed = list(err.schema.get("properties", {})) if isinstance(err.schema, dict) else []
    for key in instance:
        if key in allowed:
            continue
        if len(ctx.errors) >= MAX_ISSUES:
            ctx.dropped["error"] += 1
            continue
        move = upstream_compat.metadata_move(key) if path == ("metadata",) else None
        if move:
            # The ADR's metadata fields (and look-alikes models copy): say where the words belong.
            ctx.add(
                (*path, key),
                f"metadata.{key} is not accepted by os-image-composer: {move}",
                "schema.additionalProperties",
                hint=f"{move[0].upper()}{move[1:]}; os-image-composer's metadata has only "
                f"{', '.join(upstream_compat.UPSTREAM_METADATA_FIELDS)}, and search reads those too.",
                at_key=True,
            )
            continue
        guess = closest(key, allowed)
        hint = f"Did you mean '{guess}'? " if guess else ""
        hint += f"Allowed keys in {where(path)}: {', '.join(allowed)}."
        ctx.add(
            (*path, key),
            f"unknown key '{key}' in {where(path)}; os-image-composer refuses it",
            "schema.additionalProperties",
            hint=hint,
            at_key=True,
        )


def _on_enum(err: ValidationError, path: PathT, ctx: Context) -> None:
    allowed = [str(a) for a in err.validator_value]
    value = err.instance
    msg = f"{where(path)} is {show(value)}; allowed: {', '.join(allowed)}"
    if path == ("target", "dist") and "then" in list(err.schema_path):
        os_name = ctx.str_at("target", "os")
        msg = (
            f"target.dist is {show(value)}, which is not a {os_name} release; allowed for {os_name}: "
            + ", ".join(allowed)
        )
    hint = None
    if isinstance(value, str):
        alias = load_template_format().spelled(value)
        guess = alias if alias in allowed else closest(value, allowed)
        if guess:
            hint = f"Use '{guess}'."
            if path == ("target", "imageType") and value.lower() in ("qcow2", "vhd", "vhdx"):
                hint = f"Use imageType 'raw' and add disk.artifacts: [{{type: {value.lower()}}}]."
    ctx.add(path, msg, "schema.enum", hint=hint)


def _on_const(err: ValidationError, path: PathT, ctx: Context) -> None:
    if path[-2:] == ("immutability", "enabled"):
        ctx.add(
            path,
            f"secureBootDB* keys are set, so immutability.enabled must be true (it is {show(err.instance)})",
            "immutability.secure_boot_disabled",
            hint="Secure boot signing is part of immutability: set enabled: true, or remove the "
            "secureBootDB* keys.",
        )
        return
    ctx.add(
        path,
        f"{where(path)} must be {show(err.validator_value)} (it is {show(err.instance)})",
        "schema.const",
    )


def _on_type(err: ValidationError, path: PathT, ctx: Context) -> None:
    expected = err.validator_value
    names = {
        "object": "a mapping",
        "array": "a list",
        "string": "a string",
        "integer": "an integer",
        "boolean": "a boolean (true/false)",
        "number": "a number",
    }
    exp = " or ".join(names.get(str(t), str(t)) for t in (expected if isinstance(expected, list) else [expected]))
    value = err.instance
    msg = f"{where(path)} is {kind_of(value)}"
    if value is not None and not isinstance(value, dict | list):
        msg += f" ({show(value)})"
    msg += f"; expected {exp}"
    hint = None
    if expected == "string" and value is not None and not isinstance(value, dict | list):
        raw = ctx.source(path) or (json.dumps(value) if not isinstance(value, str) else value)
        hint = f'Quote it: "{raw}".'
    elif expected == "boolean" and isinstance(value, str) and value.lower() in ("yes", "no", "on", "off", "y", "n"):
        hint = "os-image-composer reads YAML 1.2, where only true and false are booleans: write true or false."
    elif expected == "boolean" and isinstance(value, str):
        hint = "Write true or false without quotes."
    elif expected == "integer" and isinstance(value, str) and value.strip().lstrip("-").isdigit():
        hint = f"Write {value.strip()} without quotes."
    elif expected == "array" and isinstance(value, str):
        hint = f"Make it a list: [{value}] or one '- item' per line."
    elif value is None:
        hint = f"Give {where(path)} a value or remove the key."
    ctx.add(path, msg, "schema.type", hint=hint)


_PATTERN_HINTS: list[tuple[Callable[[PathT], bool], str, str]] = [
    (
        lambda p: len(p) >= 2 and p[-2] in ("packages", "allowPackages"),
        "is not a valid package name",
        "Use a bare package name, optionally with the wildcards *, ? or [0-9]; no spaces, versions or "
        "operators such as >= (pin versions in the name only where the distro does, e.g. pkg-1.2.3).",
    ),
    (
        lambda p: p == ("image", "name"),
        "is not a valid image name",
        "Use letters, digits, '-' and '_', starting and ending with a letter or digit (e.g. edge-minimal).",
    ),
    (
        lambda p: p == ("image", "version"),
        "is not a valid version",
        'Use a version such as "1.0.0", "2.1" or "1.0.0-rc1" (quoted).',
    ),
    (
        lambda p: p[-1:] == ("path",) and "packageRepositories" in p,
        "is not an absolute path",
        "A local repository path must start with '/'.",
    ),
    (
        lambda p: len(p) >= 1 and str(p[-1]).startswith("secureBootDB"),
        "is not a valid key/certificate path",
        "Use a relative or absolute file path (or ${VAR}) ending in .key/.pem (key), .crt/.pem (PEM "
        "certificate) or .cer (DER certificate), without '..'.",
    ),
]


def _on_pattern(err: ValidationError, path: PathT, ctx: Context) -> None:
    for matches, what, hint in _PATTERN_HINTS:
        if matches(path):
            ctx.add(path, f"{where(path)} {show(err.instance)} {what}", "schema.pattern", hint=hint)
            return
    ctx.add(
        path,
        f"{where(path)} {show(err.instance)} does not match the required pattern {err.validator_value}",
        "schema.pattern",
    )


def _on_not(err: ValidationError, path: PathT, ctx: Context) -> None:
    if path and str(path[-1]).startswith("secureBootDB"):
        ctx.add(
            path,
            f"{where(path)} must not contain '..'",
            "schema.not",
            hint="Give the key/certificate path without parent-directory segments.",
        )
        return
    ctx.add(path, f"{where(path)} {show(err.instance)} is not allowed here", "schema.not")


def _on_unique(err: ValidationError, path: PathT, ctx: Context) -> None:
    items = err.instance if isinstance(err.instance, list) else []
    first: dict[str, int] = {}
    for i, item in enumerate(items):
        key = json.dumps(item, sort_keys=True, default=str)
        if key in first:
            ctx.add(
                (*path, i),
                f"{where(path)} lists {show(item)} more than once (first at index {first[key]})",
                "schema.uniqueItems",
                hint="Remove the duplicate entry; upstream rejects repeated items here.",
            )
        else:
            first[key] = i


def _on_alternatives(err: ValidationError, path: PathT, ctx: Context) -> None:
    """anyOf/oneOf: say what the alternatives are instead of dumping every branch."""
    branches = err.validator_value if isinstance(err.validator_value, list) else []
    instance = err.instance
    if branches and all(isinstance(b, dict) and set(b) == {"required"} for b in branches):
        alts = [" + ".join(b["required"]) for b in branches]
        name = instance.get("codename") if isinstance(instance, dict) else None
        who = (
            f"repository '{name}'"
            if isinstance(name, str) and "packageRepositories" in path
            else where(path)
        )
        if not err.context:  # oneOf matched more than one branch
            ctx.add(
                path,
                f"{who} sets both {' and '.join(_distinct_keys(branches))}; use only one",
                f"schema.{err.validator}",
                hint=f"Keep exactly one of: {' | '.join(alts)}.",
                at_key=True,
            )
        else:
            missing = _distinct_keys(branches)
            ctx.add(
                path,
                f"{who} needs {' or '.join(repr(k) for k in missing)}",
                f"schema.{err.validator}",
                hint=f"Provide one of: {' | '.join(alts)}.",
                at_key=True,
            )
        return
    if path[-1:] == ("pkey",) or (len(path) >= 2 and path[-2] == "pkeys"):
        ctx.add(
            path,
            f"{where(path)} {show(instance)} is not a usable GPG key reference",
            "schema.pkey",
            hint='Use an http(s):// or file:// URL, an absolute path, or "[trusted=yes]" (skips verification).',
        )
        return
    if err.context:
        _map_error(best_match(err.context), ctx)
        return
    ctx.add(
        path, f"{where(path)} matches more than one alternative of the schema", f"schema.{err.validator}"
    )


def _distinct_keys(branches: list[dict]) -> list[str]:
    common = set.intersection(*(set(b["required"]) for b in branches))
    out: list[str] = []
    for b in branches:
        out += [k for k in b["required"] if k not in common and k not in out]
    return out


def _on_bounds(err: ValidationError, path: PathT, ctx: Context) -> None:
    v = err.validator
    value = err.instance
    limits = {
        "minLength": "must not be empty"
        if err.validator_value == 1
        else f"needs at least {err.validator_value} characters",
        "minItems": f"needs at least {err.validator_value} item(s)",
        "minimum": f"is {value}; the minimum is {err.validator_value}",
        "maximum": f"is {value}; the maximum is {err.validator_value}",
    }
    ctx.add(path, f"{where(path)} {limits.get(str(v), err.message)}", f"schema.{v}")


def _on_generic(err: ValidationError, path: PathT, ctx: Context) -> None:
    ctx.add(path, f"{where(path)}: {err.message}", f"schema.{err.validator}")


_HANDLERS: dict[str, Callable[[ValidationError, PathT, Context], None]] = {
    "required": _on_required,
    "additionalProperties": _on_additional,
    "enum": _on_enum,
    "const": _on_const,
    "type": _on_type,
    "pattern": _on_pattern,
    "not": _on_not,
    "uniqueItems": _on_unique,
    "anyOf": _on_alternatives,
    "oneOf": _on_alternatives,
    "minLength": _on_bounds,
    "minItems": _on_bounds,
    "minimum": _on_bounds,
    "maximum": _on_bounds,
}


__all__ = ["schema_issues"]

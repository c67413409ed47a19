"""Validate OS Image Composer templates: safe YAML, upstream's own JSON Schema, then semantic checks.

Every issue carries a JSON-path-like location and, when the template came as YAML text,
the 1-based line and column so a person (or the fix loop of the agent) can go straight to it.

``valid`` means what os-image-composer itself would say at load time, plus our own checks. Layers:

1. YAML (``server.yamlsafe``): size limit (``MAX_BYTES`` = 1 MiB), NUL bytes, encoding,
   alias bombs, deep nesting, syntax, empty input, non-mapping documents. Duplicate keys
   are errors (upstream's yaml.v3 refuses them). Plain scalars that YAML 1.1
   reads differently from upstream's YAML 1.2 parser (``yes``/``on`` booleans, ``1:30``
   sexagesimals, timestamps) are validated as the text upstream sees.
2. Strings: upstream's ``internal/utils/security/inputcheck.go`` limits (at most 4096 runes,
   valid UTF-8, no NUL, only printable characters plus newline and tab).
3. Schema: upstream's ``os-image-template.schema.json`` ``$defs/UserTemplate``, the exact file
   (``server.upstream_compat``), never widened. jsonschema's messages are rewritten for humans;
   for anyOf/oneOf the most relevant branch is reported instead of all of them; fields upstream
   refuses get a hint (e.g. the ADR's ``metadata.capabilities`` -> ``metadata.keywords``).
4. Semantics: facts the schema cannot express, learnt from upstream's code and data
   (os-image-composer ``internal/config``, ``internal/image/imagedisc`` and ``osv/*``):
   size syntax, partition geometry, partition types per architecture, ESP for EFI,
   packages built for the other architecture, secure boot vs boot mode, placeholders,
   plain-text passwords, missing additional files, and a few cheaper ones. These only add
   errors and warnings; nothing here accepts what upstream's schema refuses.

The public functions never raise on bad input: everything becomes an :class:`Issue`.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from jsonschema.exceptions import ValidationError, best_match
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ..core.yamlsafe import MAX_BYTES as _YAML_MAX_BYTES
from ..core.yamlsafe import YamlError, load_mapping
from . import upstream as upstream_compat

logger = logging.getLogger(__name__)

MAX_BYTES = _YAML_MAX_BYTES  # 1 MiB; real templates are a few KiB (the largest reference one ~20 KiB)
MAX_ISSUES = 100  # per severity; the rest is summarised in one "issues.truncated" entry

SCHEMA_RESOURCE = upstream_compat.SCHEMA_FILE
MAX_STRING_RUNES = 4096  # upstream security.DefaultLimits().MaxString

PathT = tuple[str | int, ...]

__all__ = [
    "MAX_BYTES",
    "MAX_ISSUES",
    "Issue",
    "ValidationReport",
    "load_schema",
    "parse_size",
    "validate_data",
    "validate_text",
]


# --------------------------------------------------------------------------- API types


@dataclass
class Issue:
    path: str  # JSON-path-like: "$.disk.partitions[2].end"
    message: str  # a person understands it
    line: int | None  # 1-based, in the YAML source
    column: int | None
    hint: str | None = None
    code: str = ""  # short stable id, e.g. "schema.required", "partition.overlap", "yaml.syntax"
    severity: str = "error"  # or "warning"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        where = f"line {self.line}, column {self.column}: " if self.line else ""
        hint = f" Hint: {self.hint}" if self.hint else ""
        return f"{where}{self.path}: {self.message}{hint}"


@dataclass
class ValidationReport:
    valid: bool  # no errors (warnings allowed)
    errors: list[Issue]
    warnings: list[Issue]
    data: dict | None  # the parsed template when it parsed (JSON-compatible)

    def to_dict(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "error_count": len(self.errors),
            "warning_count": len(self.warnings),
            "errors": [i.to_dict() for i in self.errors],
            "warnings": [i.to_dict() for i in self.warnings],
            "data": self.data,
        }

    def summary(self) -> str:
        """Plain-text list of the issues, one per line (for logs and LLM fix prompts)."""
        if not self.errors and not self.warnings:
            return "valid: no issues"
        head = "valid" if self.valid else "invalid"
        lines = [f"{head}: {len(self.errors)} error(s), {len(self.warnings)} warning(s)"]
        lines += [f"error: {i}" for i in self.errors]
        lines += [f"warning: {i}" for i in self.warnings]
        return "\n".join(lines)


# --------------------------------------------------------------------------- schema


def load_schema() -> dict:
    """Upstream's template schema document, unchanged (``$defs/UserTemplate`` is what we check). A fresh copy."""
    return upstream_compat.schema()


# --------------------------------------------------------------------------- public entry points


def validate_text(
    text: str | bytes, *, base_dir: Path | None = None, max_bytes: int = MAX_BYTES
) -> ValidationReport:
    """Validate template YAML text. Never raises; hostile input gives ``valid=False``."""
    try:
        return _validate_text(text, base_dir=base_dir, max_bytes=max_bytes)
    except Exception as exc:  # a bug here must not take the server down
        return _internal_error(exc)


def validate_data(data: dict, *, base_dir: Path | None = None) -> ValidationReport:
    """Validate an already-parsed template (e.g. a generated dict). Issues carry no line numbers."""
    try:
        if not isinstance(data, dict):
            kind = _kind(data)
            issue = Issue(
                "$",
                f"the template is {kind}, not a mapping",
                None,
                None,
                "A template is a mapping with keys such as image, target, disk, systemConfig.",
                "schema.type",
            )
            return ValidationReport(False, [issue], [], None)
        try:
            plain = _jsonable(data)
        except (ValueError, RecursionError):
            issue = Issue(
                "$",
                "the template is nested too deeply (or contains itself)",
                None,
                None,
                "Templates are shallow mappings.",
                "schema.too_deep",
            )
            return ValidationReport(False, [issue], [], None)
        return _validate_mapping(plain, _NoPositions(), base_dir, [])
    except Exception as exc:
        return _internal_error(exc)


def _internal_error(exc: Exception) -> ValidationReport:
    logger.exception("validation crashed")
    issue = Issue(
        "$",
        f"internal validation error: {exc.__class__.__name__}",
        None,
        None,
        "This is a bug in the validator; the template may still be fine.",
        "internal.error",
    )
    return ValidationReport(False, [issue], [], None)


def _validate_text(text: str | bytes, *, base_dir: Path | None, max_bytes: int) -> ValidationReport:
    if not isinstance(text, str | bytes):
        issue = Issue("$", f"expected YAML text, got {type(text).__name__}", None, None, None, "yaml.invalid")
        return ValidationReport(False, [issue], [], None)
    size = len(text.encode("utf-8", "surrogatepass")) if isinstance(text, str) else len(text)
    if size <= max_bytes and not text.strip():
        # Checked here because libyaml calls a lone tab "a character that cannot start any token".
        issue = Issue(
            "$",
            "the document is empty",
            1,
            1,
            "Send a template: a mapping with image, target, ...",
            "yaml.empty",
        )
        return ValidationReport(False, [issue], [], None)
    try:
        parsed = load_mapping(text, max_bytes=max_bytes)
    except YamlError as exc:
        issue = Issue("$", exc.message, exc.line, exc.column, exc.hint or None, _yaml_code(exc.message))
        logger.info("template rejected at YAML level: %s", issue.code)
        return ValidationReport(False, [issue], [], None)
    early: list[Issue] = []
    for dup_path, line, col in parsed.duplicate_keys:
        # gopkg.in/yaml.v3 (upstream's parser) refuses a mapping key written twice: "mapping key ...
        # already defined at line N", so the template never loads there.
        early.append(
            Issue(
                _fmt_path(dup_path),
                f"duplicate key '{dup_path[-1]}' in {_where(dup_path[:-1])}; os-image-composer refuses a key "
                "written twice",
                line,
                col,
                "Keep one of the two entries.",
                "yaml.duplicate_key",
            )
        )
    data = _jsonable(parsed.data)
    if parsed.root is not None:
        _read_as_upstream(parsed.root, data)
    return _validate_mapping(data, parsed, base_dir, early)


# PyYAML reads YAML 1.1; upstream's gopkg.in/yaml.v3 reads (mostly) YAML 1.2 into interface{}. Where the
# two disagree on a plain scalar, upstream sees the text, and its schema judges the text.
_YAML12_BOOLS = frozenset({"true", "True", "TRUE", "false", "False", "FALSE"})
_TAG = "tag:yaml.org,2002:"


def _upstream_text(node: ScalarNode) -> str | None:
    """The source text of a plain scalar upstream reads as a string while PyYAML does not, else None."""
    if node.style:  # quoted or block scalars are text for both parsers (plain is None or "" by loader)
        return None
    tag = node.tag
    if tag == _TAG + "bool" and node.value not in _YAML12_BOOLS:  # yes/no/on/off/y/n
        return node.value
    if tag in (_TAG + "int", _TAG + "float") and ":" in node.value:  # 1:30 sexagesimal
        return node.value
    if tag == _TAG + "timestamp":  # yaml.v3 keeps timestamps as text when decoding into interface{}
        return node.value
    return None


def _read_as_upstream(node: Node, value: Any, depth: int = 0) -> None:
    """Rewrite, in place, the values of ``value`` (built from ``node``) that upstream reads as text."""
    if depth > 100:
        return
    if isinstance(node, MappingNode) and isinstance(value, dict):
        last: dict[str, Node] = {}  # duplicate keys: the last one wins, as in the data
        for key_node, value_node in node.value:
            if isinstance(key_node, ScalarNode) and key_node.tag == _TAG + "str":
                last[key_node.value] = value_node
        for key, child in last.items():
            if key not in value:
                continue
            text = _upstream_text(child) if isinstance(child, ScalarNode) else None
            if text is not None:
                value[key] = text
            else:
                _read_as_upstream(child, value[key], depth + 1)
    elif isinstance(node, SequenceNode) and isinstance(value, list) and len(node.value) == len(value):
        for i, child in enumerate(node.value):
            text = _upstream_text(child) if isinstance(child, ScalarNode) else None
            if text is not None:
                value[i] = text
            else:
                _read_as_upstream(child, value[i], depth + 1)


def _yaml_code(message: str) -> str:
    table = (
        ("-byte limit", "yaml.too_large"),
        ("not UTF-8", "yaml.encoding"),
        ("NUL bytes", "yaml.binary"),
        ("nested more than", "yaml.too_deep"),
        ("expands to more than", "yaml.alias_bomb"),
        ("recursive alias", "yaml.recursive_alias"),
        ("document is empty", "yaml.empty"),
        ("not a mapping", "yaml.not_mapping"),
        ("syntax error", "yaml.syntax"),
        ("constructor for the tag", "yaml.tag"),
    )
    for needle, code in table:
        if needle in message:
            return code
    return "yaml.invalid"


def _validate_mapping(
    data: dict, locator: _Locator, base_dir: Path | None, early: list[Issue]
) -> ValidationReport:
    ctx = _Ctx(data, locator, base_dir)
    for issue in early:  # found while parsing
        (ctx.errors if issue.severity == "error" else ctx.warnings).append(issue)
    _schema_issues(ctx)
    for check in _CHECKS:
        try:
            check(ctx)
        except Exception:  # one broken rule must not hide the others' findings
            logger.exception("semantic check %s crashed", check.__name__)
    errors = sorted(ctx.errors, key=_issue_order)
    warns = sorted(ctx.warnings, key=_issue_order)
    for severity, pool in (("error", errors), ("warning", warns)):
        if ctx.dropped[severity]:
            pool.append(
                Issue(
                    "$",
                    f"{ctx.dropped[severity]:,} more {severity}s not shown",
                    None,
                    None,
                    f"Only the first {MAX_ISSUES} {severity}s are reported; fix those and validate again.",
                    "issues.truncated",
                    severity,
                )
            )
    logger.info("template validated: %d error(s), %d warning(s)", len(errors), len(warns))
    return ValidationReport(not errors, errors, warns, data)


def _issue_order(issue: Issue) -> tuple[int, int, str]:
    big = 1 << 30
    return (
        issue.line if issue.line is not None else big,
        issue.column if issue.column is not None else big,
        issue.path,
    )


# --------------------------------------------------------------------------- plumbing


class _Locator(Protocol):
    def position(self, path: PathT) -> tuple[int | None, int | None]: ...

    def key_position(self, path: PathT) -> tuple[int | None, int | None]: ...


class _NoPositions:
    def position(self, path: PathT) -> tuple[int | None, int | None]:
        return None, None

    def key_position(self, path: PathT) -> tuple[int | None, int | None]:
        return None, None


class _Ctx:
    def __init__(self, data: dict, locator: _Locator, base_dir: Path | None):
        self.data = data
        self.loc = locator
        self.base_dir = base_dir
        self.errors: list[Issue] = []
        self.warnings: list[Issue] = []
        self.dropped = {"error": 0, "warning": 0}
        self._seen: set[tuple[str, str, str]] = set()

    def add(
        self,
        path: PathT,
        message: str,
        code: str,
        *,
        hint: str | None = None,
        severity: str = "error",
        at_key: bool = False,
    ) -> None:
        target = self.errors if severity == "error" else self.warnings
        if len(target) >= MAX_ISSUES:  # hostile input can produce thousands; positions cost a lookup each
            self.dropped[severity] += 1
            return
        shown = _fmt_path(path)
        key = (shown, code, message)
        if key in self._seen:
            return
        self._seen.add(key)
        line, col = self.loc.key_position(path) if at_key else self.loc.position(path)
        target.append(Issue(shown, message, line, col, hint, code, severity))

    def warn(
        self, path: PathT, message: str, code: str, *, hint: str | None = None, at_key: bool = False
    ) -> None:
        self.add(path, message, code, hint=hint, severity="warning", at_key=at_key)

    def source(self, path: PathT) -> str | None:
        """The scalar as written in the YAML (``1.10`` stays ``1.10``), when known."""
        node_at = getattr(self.loc, "node_at", None)
        if node_at is None:
            return None
        node = node_at(path)
        value = getattr(node, "value", None)
        return value if isinstance(value, str) else None

    # typed getters: semantic checks run even when the schema failed, so trust nothing
    def get(self, *keys: str | int) -> Any:
        cur: Any = self.data
        for k in keys:
            if isinstance(k, int):
                if not isinstance(cur, list) or not 0 <= k < len(cur):
                    return None
            elif not isinstance(cur, dict):
                return None
            cur = cur[k] if isinstance(k, int) else cur.get(k)
        return cur

    def dict_at(self, *keys: str | int) -> dict:
        value = self.get(*keys)
        return value if isinstance(value, dict) else {}

    def list_at(self, *keys: str | int) -> list:
        value = self.get(*keys)
        return value if isinstance(value, list) else []

    def str_at(self, *keys: str | int) -> str | None:
        value = self.get(*keys)
        return value if isinstance(value, str) else None


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def _fmt_path(path: Iterable[str | int]) -> str:
    out = "$"
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENT.match(part):
            out += f".{part}"
        else:
            out += f"[{json.dumps(part)}]"
    return out


def _where(path: PathT) -> str:
    """Human name of a location: 'disk.partitions[1]', or 'the template' for the root."""
    shown = _fmt_path(path)
    return "the template" if shown == "$" else shown[2:] if shown.startswith("$.") else shown[1:]


def _kind(value: Any) -> str:
    if value is None:
        return "empty (null)"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"a {type(value).__name__}"


def _show(value: Any, limit: int = 60) -> str:
    text = repr(value) if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _jsonable(obj: Any, depth: int = 0) -> Any:
    """YAML can produce dates, bytes, sets and non-string keys; JSON Schema wants JSON types.

    Dates become ISO strings and bytes text, roughly what upstream's yaml.v3 -> JSON does.
    """
    if depth > 200:  # validate_data may receive arbitrary (even cyclic) Python objects
        raise ValueError("structure nested too deeply")
    if isinstance(obj, dict):
        return {_key_text(k): _jsonable(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set | frozenset):
        return [_jsonable(v, depth + 1) for v in obj]
    if isinstance(obj, _dt.date | _dt.datetime | _dt.time):
        return obj.isoformat()
    if isinstance(obj, bytes | bytearray):
        return bytes(obj).decode("utf-8", "replace")
    if obj is None or isinstance(obj, str | int | float | bool):
        return obj
    return str(obj)


def _key_text(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, _dt.date | _dt.datetime):
        return key.isoformat()
    return str(key)


def _levenshtein(a: str, b: str) -> int:
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def _closest(word: str, options: Iterable[str]) -> str | None:
    """The option a typo most likely meant, or None when nothing is close enough."""
    if not isinstance(word, str) or len(word) > 100:
        return None
    low = word.lower()
    limit = max(2, len(word) // 3)
    best: tuple[int, str] | None = None
    for opt in options:
        if abs(len(opt) - len(word)) > limit:  # cannot be within the limit; skip the O(n*m) work
            continue
        dist = _levenshtein(low, opt.lower())
        if best is None or dist < best[0]:
            best = (dist, opt)
    if best is None:
        return None
    return best[1] if best[0] <= limit else None


# --------------------------------------------------------------------------- schema errors


def _schema_issues(ctx: _Ctx) -> None:
    errors = sorted(
        upstream_compat.user_template_validator().iter_errors(ctx.data),
        key=lambda e: ([str(p) for p in e.absolute_path], str(e.validator)),
    )
    for err in errors:
        _map_error(err, ctx)



def _map_error(err: ValidationError, ctx: _Ctx) -> None:
    path: PathT = tuple(err.absolute_path)
    handler = _HANDLERS.get(str(err.validator), _on_generic)
    handler(err, path, ctx)


def _on_required(err: ValidationError, path: PathT, ctx: _Ctx) -> None:
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
        hint = f"Add '{missing}:' under {_where(path)}." if path else f"Add a top-level '{missing}:' section."
        sub = props.get(missing)
        if isinstance(sub, dict) and "enum" in sub:
            hint += f" Allowed values: {', '.join(map(str, sub['enum']))}."
        ctx.add(
            (*path, missing),
            f"{_where(path)} is missing the required key '{missing}'",
            "schema.required",
            hint=hint,
            at_key=True,
        )


def _on_additional(err: ValidationError, path: PathT, ctx: _Ctx) -> None:
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
        guess = _closest(key, allowed)
        hint = f"Did you mean '{guess}'? " if guess else ""
        hint += f"Allowed keys in {_where(path)}: {', '.join(allowed)}."
        ctx.add(
            (*path, key),
            f"unknown key '{key}' in {_where(path)}; os-image-composer refuses it",
            "schema.additionalProperties",
            hint=hint,
            at_key=True,
        )


_ENUM_ALIASES = {
    "amd64": "x86_64",
    "x64": "x86_64",
    "x86-64": "x86_64",
    "intel64": "x86_64",
    "arm64": "aarch64",
    "armv8": "aarch64",
    "arm": "armv7hl",
    "armhf": "armv7hl",
    "initrd": "img",
    "pxe": "img",
    "disk": "raw",
    "qcow2": "raw",
    "vhd": "raw",
    "vhdx": "raw",
    "emt": "edge-microvisor-toolkit",
    "azl": "azure-linux",
    "azurelinux": "azure-linux",
    "elxr": "wind-river-elxr",
    "rhel": "redhat-compatible-distro",
    "rcd": "redhat-compatible-distro",
    "grub-efi": "grub",
    "systemd": "systemd-boot",
    "uefi": "efi",
    "bios": "legacy",
}


def _on_enum(err: ValidationError, path: PathT, ctx: _Ctx) -> None:
    allowed = [str(a) for a in err.validator_value]
    value = err.instance
    msg = f"{_where(path)} is {_show(value)}; allowed: {', '.join(allowed)}"
    if path == ("target", "dist") and "then" in list(err.schema_path):
        os_name = ctx.str_at("target", "os")
        msg = (
            f"target.dist is {_show(value)}, which is not a {os_name} release; allowed for {os_name}: "
            + ", ".join(allowed)
        )
    hint = None
    if isinstance(value, str):
        alias = _ENUM_ALIASES.get(value.lower())
        guess = alias if alias in allowed else _closest(value, allowed)
        if guess:
            hint = f"Use '{guess}'."
            if path == ("target", "imageType") and value.lower() in ("qcow2", "vhd", "vhdx"):
                hint = f"Use imageType 'raw' and add disk.artifacts: [{{type: {value.lower()}}}]."
    ctx.add(path, msg, "schema.enum", hint=hint)


def _on_const(err: ValidationError, path: PathT, ctx: _Ctx) -> None:
    if path[-2:] == ("immutability", "enabled"):
        ctx.add(
            path,
            f"secureBootDB* keys are set, so immutability.enabled must be true (it is {_show(err.instance)})",
            "immutability.secure_boot_disabled",
            hint="Secure boot signing is part of immutability: set enabled: true, or remove the "
            "secureBootDB* keys.",
        )
        return
    ctx.add(
        path,
        f"{_where(path)} must be {_show(err.validator_value)} (it is {_show(err.instance)})",
        "schema.const",
    )


def _on_type(err: ValidationError, path: PathT, ctx: _Ctx) -> None:
    expected = err.validator_value
    names = {
        "object": "a mapping",
        "array": "a list",
        "string": "a string",
        "integer": "an integer",
        "boolean": "a boolean (true/false)",
        "number": "a number",
    }
    exp = " or ".join(names.get(t, t) for t in (expected if isinstance(expected, list) else [expected]))
    value = err.instance
    msg = f"{_where(path)} is {_kind(value)}"
    if value is not None and not isinstance(value, dict | list):
        msg += f" ({_show(value)})"
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
        hint = f"Give {_where(path)} a value or remove the key."
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


def _on_pattern(err: ValidationError, path: PathT, ctx: _Ctx) -> None:
    for matches, what, hint in _PATTERN_HINTS:
        if matches(path):
            ctx.add(path, f"{_where(path)} {_show(err.instance)} {what}", "schema.pattern", hint=hint)
            return
    ctx.add(
        path,
        f"{_where(path)} {_show(err.instance)} does not match the required pattern {err.validator_value}",
        "schema.pattern",
    )


def _on_not(err: ValidationError, path: PathT, ctx: _Ctx) -> None:
    if path and str(path[-1]).startswith("secureBootDB"):
        ctx.add(
            path,
            f"{_where(path)} must not contain '..'",
            "schema.not",
            hint="Give the key/certificate path without parent-directory segments.",
        )
        return
    ctx.add(path, f"{_where(path)} {_show(err.instance)} is not allowed here", "schema.not")


def _on_unique(err: ValidationError, path: PathT, ctx: _Ctx) -> None:
    items = err.instance if isinstance(err.instance, list) else []
    first: dict[str, int] = {}
    for i, item in enumerate(items):
        key = json.dumps(item, sort_keys=True, default=str)
        if key in first:
            ctx.add(
                (*path, i),
                f"{_where(path)} lists {_show(item)} more than once (first at index {first[key]})",
                "schema.uniqueItems",
                hint="Remove the duplicate entry; upstream rejects repeated items here.",
            )
        else:
            first[key] = i


def _on_alternatives(err: ValidationError, path: PathT, ctx: _Ctx) -> None:
    """anyOf/oneOf: say what the alternatives are instead of dumping every branch."""
    branches = err.validator_value if isinstance(err.validator_value, list) else []
    instance = err.instance
    if branches and all(isinstance(b, dict) and set(b) == {"required"} for b in branches):
        alts = [" + ".join(b["required"]) for b in branches]
        name = instance.get("codename") if isinstance(instance, dict) else None
        who = (
            f"repository '{name}'"
            if isinstance(name, str) and "packageRepositories" in path
            else _where(path)
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
            f"{_where(path)} {_show(instance)} is not a usable GPG key reference",
            "schema.pkey",
            hint='Use an http(s):// or file:// URL, an absolute path, or "[trusted=yes]" (skips verification).',
        )
        return
    if err.context:
        _map_error(best_match(err.context), ctx)
        return
    ctx.add(
        path, f"{_where(path)} matches more than one alternative of the schema", f"schema.{err.validator}"
    )


def _distinct_keys(branches: list[dict]) -> list[str]:
    common = set.intersection(*(set(b["required"]) for b in branches))
    out: list[str] = []
    for b in branches:
        out += [k for k in b["required"] if k not in common and k not in out]
    return out


def _on_bounds(err: ValidationError, path: PathT, ctx: _Ctx) -> None:
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
    ctx.add(path, f"{_where(path)} {limits.get(str(v), err.message)}", f"schema.{v}")


def _on_generic(err: ValidationError, path: PathT, ctx: _Ctx) -> None:
    ctx.add(path, f"{_where(path)}: {err.message}", f"schema.{err.validator}")


_HANDLERS: dict[str, Callable[[ValidationError, PathT, _Ctx], None]] = {
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


# --------------------------------------------------------------------------- domain facts
# Learnt from upstream os-image-composer (internal/image/imagedisc, internal/config, osv/*).

# osv/<os>/<dist> directories: upstream resolves its defaults from this path, so other pairs fail.
OS_DISTS: dict[str, tuple[str, ...]] = {
    "azure-linux": ("azl3",),
    "edge-microvisor-toolkit": ("emt3",),
    "wind-river-elxr": ("elxr12",),
    "ubuntu": ("ubuntu24", "ubuntu26"),
    "debian": ("debian13",),
    "redhat-compatible-distro": ("el10",),
}
# Every distro ships default-raw-{x86_64,aarch64}, but ISO and initrd (img) defaults only for x86_64.
DEFAULTS_AVAILABLE: dict[str, tuple[str, ...]] = {
    "raw": ("x86_64", "aarch64"),
    "iso": ("x86_64",),
    "img": ("x86_64",),
}

SIZE_UNITS: dict[str, int] = {
    "KiB": 1024,
    "MiB": 1024**2,
    "GiB": 1024**3,
    "K": 1024,
    "M": 1024**2,
    "G": 1024**3,
    "KB": 1000,
    "MB": 1000**2,
    "GB": 1000**3,
}
_SIZE_RE = re.compile(r"^(\d+)(KiB|MiB|GiB|K|M|G|KB|MB|GB)$")

GUID_ESP = "c12a7328-f81f-11d2-ba4b-00a0c93ec93b"
GUID_BIOS = "21686148-6449-6e6f-744e-656564454649"
GUID_ROOT_AMD64 = "4f68bce3-e8cd-4db1-96e7-fbcaf984b709"
GUID_ROOT_ARM64 = "b921b045-1df0-41c3-af44-4c6f280d3fae"
PARTITION_TYPES: dict[str, str] = {  # upstream's name -> GPT type GUID table
    "linux": "0fc63daf-8483-4772-8e79-3d69d8477de4",
    "bios": GUID_BIOS,
    "esp": GUID_ESP,
    "xbootldr": "bc13c2ff-59e6-4262-a352-b275fd6f7172",
    "linux-root-amd64": GUID_ROOT_AMD64,
    "linux-root-arm64": GUID_ROOT_ARM64,
    "linux-swap": "0657fd6d-a4ab-43c4-84e5-0933c84b4f4f",
    "linux-home": "933ac7e1-2eb4-4f13-b844-0e14e2aef915",
    "linux-srv": "3b8f8425-20e0-4f3b-907f-1a25a76f98e8",
    "linux-var": "4d21b016-b534-45c2-a9fb-5c16e091fd2d",
    "linux-tmp": "7ec6f557-3bc5-4aca-b293-16ef5df639d1",
    "linux-lvm": "e6d6d379-f507-44c2-a23c-238f2a3df928",
    "linux-raid": "a19d880f-05fc-4d3b-a006-743f0f84911e",
    "linux-luks": "ca7d7ccb-63ed-4c53-861c-1742536059cc",
    "linux-dm-crypt": "7ffec5c9-2d00-49b7-8941-3ea10a5586b7",
}
ROOT_GUID_FOR_ARCH = {"x86_64": GUID_ROOT_AMD64, "aarch64": GUID_ROOT_ARM64}
ARCH_OF_ROOT_GUID = {GUID_ROOT_AMD64: "x86_64", GUID_ROOT_ARM64: "aarch64"}
FS_TYPES = ("fat32", "fat16", "vfat", "ext2", "ext3", "ext4", "xfs", "linux-swap")  # upstream mkpart list
FAT_TYPES = ("fat32", "fat16", "vfat")
_GUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
GPT_HEADER_BYTES = 34 * 512  # protective MBR + GPT header + 128 entries
GPT_BACKUP_BYTES = 33 * 512
MBR_HEADER_BYTES = 512

# Packages that exist for one architecture only (boot chain and kernel meta packages).
# qemu-system-* are emulators and are legitimately installed on any host architecture.
_X86_ONLY = re.compile(
    r"^(grub-efi-amd64|grub-efi-ia32|grub-pc($|-)|grub2-pc($|-)|grub2-efi-x64|grub2-efi-ia32|shim-x64|shim-ia32|"
    r"grub-cloud-amd64|linux-(image|headers)-amd64$|shim-helpers-amd64|intel-microcode$)"
    r"|([._]x86_64(\.rpm)?$|_amd64\.deb$|:amd64$)",
    re.IGNORECASE,
)
_ARM64_ONLY = re.compile(
    r"^(grub-efi-arm64|grub2-efi-aa64|shim-aa64|grub-cloud-arm64|linux-(image|headers)-arm64$|"
    r"shim-helpers-arm64|kernel-64k)"
    r"|([._]aarch64(\.rpm)?$|_arm64\.deb$|:arm64$)",
    re.IGNORECASE,
)
_ARCH_SWAPS = (("amd64", "arm64"), ("x86_64", "aarch64"), ("x64", "aa64"))

_PLACEHOLDER_TOKEN = re.compile(r"<[A-Z][A-Z0-9_]*>")
_PLACEHOLDER_WHOLE = re.compile(r"^\s*<[^<>\n]{1,80}>\s*$")
_CRYPT_RE = re.compile(r"^\$[0-9a-z]+\$")
_HOSTNAME_RE = re.compile(
    r"^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)


def parse_size(value: Any) -> tuple[int | None, str | None]:
    """Bytes for an upstream size string ("1MiB", "512M", "4GB", "0"), or (None, why-not).

    Upstream accepts digits followed by exactly one of KiB MiB GiB K M G KB MB GB (case-sensitive;
    K/M/G are binary, KB/MB/GB decimal), or the bare "0" meaning "to the end of the disk".
    """
    if isinstance(value, bool) or value is None:
        return None, "a size such as 512MiB or 4GiB"
    if isinstance(value, int):
        return (0, None) if value == 0 else (None, f'add a unit and quote it, e.g. "{value}MiB"')
    if not isinstance(value, str):
        return None, "a size such as 512MiB or 4GiB"
    if value == "0":
        return 0, None
    m = _SIZE_RE.match(value)
    if m:
        return int(m.group(1)) * SIZE_UNITS[m.group(2)], None
    compact = value.replace(" ", "")
    if compact != value and _SIZE_RE.match(compact):
        return None, f"remove the space: {compact}"
    m = re.match(r"^(\d+(?:\.\d+)?)\s*([A-Za-z]*)$", value.strip())
    if not m:
        return None, "use digits followed by a unit, e.g. 512MiB or 4GiB"
    number, unit = m.groups()
    if "." in number:
        return None, "use a whole number with a smaller unit, e.g. 1536MiB instead of 1.5GiB"
    if not unit:
        return None, f'add a unit, e.g. {number}MiB; only "0" may be written without one'
    for known in SIZE_UNITS:
        if unit.lower() == known.lower():
            return None, f"units are case-sensitive: write {number}{known}"
    if unit.lower() in ("t", "tb", "tib"):
        return None, f"TiB/TB are not supported; write {int(number) * 1024}GiB"
    if unit.lower() in ("b", "bytes"):
        return None, "byte counts are not supported; use KiB, MiB or GiB"
    return None, f"unknown unit '{unit}'; use one of {', '.join(SIZE_UNITS)}"


def _fmt_bytes(n: float) -> str:
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= size:
            value = n / size
            return f"{value:g}{unit}" if value == int(value) else f"{value:.2f}{unit}"
    return f"{int(n)} bytes"


# --------------------------------------------------------------------------- semantic checks


def _check_target(ctx: _Ctx) -> None:
    os_name, dist = ctx.str_at("target", "os"), ctx.str_at("target", "dist")
    arch, itype = ctx.str_at("target", "arch"), ctx.str_at("target", "imageType")
    # The schema pins dist for five OSes; redhat-compatible-distro has no such rule upstream.
    if os_name == "redhat-compatible-distro" and dist is not None and dist not in OS_DISTS[os_name]:
        ctx.add(
            ("target", "dist"),
            f"target.dist is {_show(dist)}, which is not a {os_name} release; "
            f"allowed: {', '.join(OS_DISTS[os_name])}",
            "target.dist",
            hint="Use dist: el10 (upstream looks for osv/redhat-compatible-distro/el10).",
        )
    known_arch = arch in ("x86_64", "aarch64", "armv7hl")
    if (
        os_name in OS_DISTS
        and known_arch
        and itype in DEFAULTS_AVAILABLE
        and arch not in DEFAULTS_AVAILABLE[itype]
    ):
        ctx.warn(
            ("target", "arch"),
            f"os-image-composer ships no default configuration for a {arch} {itype} image "
            f"(it has default-{'initrd' if itype == 'img' else itype}-"
            f"{'/'.join(DEFAULTS_AVAILABLE[itype])}.yml only)",
            "target.no_defaults",
            hint="The build will fail unless you add that default config; "
            + (
                "use imageType raw for this architecture."
                if arch in DEFAULTS_AVAILABLE["raw"]
                else "use x86_64 or aarch64."
            ),
        )


def _partitions(ctx: _Ctx) -> list[tuple[int, dict]]:
    return [(i, p) for i, p in enumerate(ctx.list_at("disk", "partitions")) if isinstance(p, dict)]


def _effective_guid(part: dict) -> str | None:
    guid = part.get("typeUUID")
    if isinstance(guid, str) and guid:
        return guid.lower()
    ptype = part.get("type")
    return PARTITION_TYPES.get(ptype) if isinstance(ptype, str) else None


def _is_esp(part: dict) -> bool:
    flags = part.get("flags") if isinstance(part.get("flags"), list) else []
    return part.get("type") == "esp" or _effective_guid(part) == GUID_ESP or "esp" in flags


def _is_bios_boot(part: dict) -> bool:
    flags = part.get("flags") if isinstance(part.get("flags"), list) else []
    return (
        part.get("type") in ("bios", "bios-boot")
        or _effective_guid(part) == GUID_BIOS
        or "bios_grub" in flags
        or "bios-grub" in flags
    )


def _label(i: int, part: dict) -> str:
    for key in ("id", "name"):
        if isinstance(part.get(key), str) and part[key]:
            return f"'{part[key]}'"
    return f"#{i}"


def _check_disk_geometry(ctx: _Ctx) -> None:
    disk = ctx.dict_at("disk")
    if not disk:
        return
    disk_size: int | None = None
    if "size" in disk:
        disk_size, why = parse_size(disk["size"])
        if disk_size is None and isinstance(disk["size"], str):
            ctx.add(
                ("disk", "size"),
                f"disk.size {_show(disk['size'])} is not a size os-image-composer understands",
                "disk.size_format",
                hint=why,
            )
        elif disk_size == 0:
            ctx.add(
                ("disk", "size"),
                "disk.size is 0; the image needs a real size",
                "disk.size_format",
                hint="Give the whole image size, e.g. 4GiB or 8GiB.",
            )
            disk_size = None
    gpt = disk.get("partitionTableType", "gpt") != "mbr"
    header = GPT_HEADER_BYTES if gpt else MBR_HEADER_BYTES
    parts = _partitions(ctx)
    last_index = len(ctx.list_at("disk", "partitions")) - 1
    spans: list[tuple[int, float, int, dict]] = []  # start, end (inf when growing), index, partition
    grow_seen: int | None = None
    for i, part in parts:
        base: PathT = ("disk", "partitions", i)
        start = end = None
        for key in ("start", "end"):
            raw = part.get(key)
            if raw is None:
                ctx.add(
                    (*base, key),
                    f"partition {_label(i, part)} has no {key}",
                    "partition.size_format",
                    hint=f'Add {key}: e.g. "1MiB"'
                    + ('; "0" means "to the end of the disk"' if key == "end" else ""),
                    at_key=True,
                )
                continue
            value, why = parse_size(raw)
            if value is None:
                if isinstance(raw, str):  # non-strings are already schema errors
                    ctx.add(
                        (*base, key),
                        f"partition {_label(i, part)} {key} {_show(raw)} is not a size "
                        "os-image-composer understands",
                        "partition.size_format",
                        hint=why,
                    )
                continue
            if key == "start":
                start = value
            else:
                end = value
        if start is not None and start < header:
            ctx.add(
                (*base, "start"),
                f"partition {_label(i, part)} starts at {_fmt_bytes(start)}, inside the "
                f"{'GPT' if gpt else 'MBR'} partition table",
                "partition.start_in_table",
                hint='Start the first partition at "1MiB" (the usual alignment).',
            )
        grows = end == 0
        if grows:
            if grow_seen is not None:
                ctx.add(
                    (*base, "end"),
                    f'partition {_label(i, part)} also uses end "0" (grow to fill the disk); '
                    f"only one partition can, and it must be the last",
                    "partition.multiple_grow",
                    hint="Give all but the last partition an explicit end.",
                )
            elif i != last_index:
                ctx.add(
                    (*base, "end"),
                    f'partition {_label(i, part)} uses end "0" (grow to fill the disk) but is '
                    "not the last partition; the ones after it would have no space",
                    "partition.grow_not_last",
                    hint="Move this partition to the end of the list or give it an explicit end.",
                )
            grow_seen = i
        if start is not None and end is not None and not grows and start >= end:
            ctx.add(
                (*base, "end"),
                f"partition {_label(i, part)} ends at {_fmt_bytes(end)}, not after its start "
                f"{_fmt_bytes(start)}",
                "partition.start_after_end",
                hint="end is an absolute offset from the start of the disk, not a length.",
            )
            continue
        if disk_size is not None:
            if start is not None and start >= disk_size:
                ctx.add(
                    (*base, "start"),
                    f"partition {_label(i, part)} starts at {_fmt_bytes(start)}, beyond "
                    f"disk.size {_fmt_bytes(disk_size)}",
                    "partition.beyond_disk",
                    hint="Increase disk.size or move/shrink the partitions.",
                )
                continue
            if end is not None and not grows:
                if end > disk_size:
                    ctx.add(
                        (*base, "end"),
                        f"partition {_label(i, part)} ends at {_fmt_bytes(end)}, beyond "
                        f"disk.size {_fmt_bytes(disk_size)}",
                        "partition.beyond_disk",
                        hint="Increase disk.size or end the partition earlier.",
                    )
                elif gpt and end > disk_size - GPT_BACKUP_BYTES:
                    ctx.warn(
                        (*base, "end"),
                        f"partition {_label(i, part)} ends in the last 33 sectors of the "
                        "disk, where GPT keeps its backup table",
                        "partition.beyond_disk",
                        hint='Use end: "0" to fill the disk, or end a little earlier.',
                    )
        if start is not None and (end is not None):
            effective_end: float = (disk_size if disk_size is not None else float("inf")) if grows else end
            if not (grows and i != last_index):  # a misplaced grower is reported once, above
                spans.append((start, effective_end, i, part))
    _check_overlaps(ctx, spans)


def _check_overlaps(ctx: _Ctx, spans: list[tuple[int, float, int, dict]]) -> None:
    spans.sort(key=lambda s: (s[0], s[2]))
    reach: tuple[float, int, dict] | None = None  # furthest end so far and its owner
    for start, end, i, part in spans:
        if reach is not None and start < reach[0]:
            j, other = reach[1], reach[2]
            later, earlier = (i, part), (j, other)
            if i < j:  # report at the partition that comes later in the file
                later, earlier = (j, other), (i, part)
            ctx.add(
                ("disk", "partitions", later[0], "start"),
                f"partition {_label(*later)} overlaps partition {_label(*earlier)}",
                "partition.overlap",
                hint="Each partition must start at or after the end of the previous one.",
            )
        if reach is None or end > reach[0]:
            reach = (end, i, part)


def _check_partition_fields(ctx: _Ctx) -> None:
    arch = ctx.str_at("target", "arch")
    seen_ids: dict[str, int] = {}
    seen_mounts: dict[str, int] = {}
    for i, part in _partitions(ctx):
        base: PathT = ("disk", "partitions", i)
        pid = part.get("id")
        if isinstance(pid, str) and pid:
            if pid in seen_ids:
                ctx.add(
                    (*base, "id"),
                    f"partition id '{pid}' is used twice (also partition #{seen_ids[pid]})",
                    "partition.duplicate_id",
                    hint="Partition ids must be unique; upstream uses them as keys.",
                )
            seen_ids.setdefault(pid, i)
        mount = part.get("mountPoint")
        if isinstance(mount, str) and mount not in ("", "none"):
            normal = mount.rstrip("/") or "/"
            if normal in seen_mounts:
                ctx.add(
                    (*base, "mountPoint"),
                    f"mount point '{mount}' is used twice (also partition #{seen_mounts[normal]})",
                    "partition.duplicate_mount",
                    hint="Mount each path from one partition only.",
                )
            seen_mounts.setdefault(normal, i)
        fs = part.get("fsType")
        if fs is None:
            ctx.add(
                base,
                f"partition {_label(i, part)} has no fsType",
                "partition.fs_type",
                hint=f"Upstream refuses partitions without one; use one of {', '.join(FS_TYPES)}.",
                at_key=True,
            )
        elif isinstance(fs, str) and fs not in FS_TYPES:
            guess = _closest(fs, FS_TYPES)
            ctx.add(
                (*base, "fsType"),
                f"fsType '{fs}' is not supported by os-image-composer",
                "partition.fs_type",
                hint=(f"Did you mean '{guess}'? " if guess else "") + f"Supported: {', '.join(FS_TYPES)}.",
            )
        _check_partition_type(ctx, base, i, part, arch)


def _check_partition_type(ctx: _Ctx, base: PathT, i: int, part: dict, arch: str | None) -> None:
    ptype, guid = part.get("type"), part.get("typeUUID")
    guid_ok = isinstance(guid, str) and bool(_GUID_RE.match(guid))
    if isinstance(guid, str) and guid and not guid_ok:
        ctx.add(
            (*base, "typeUUID"),
            f"typeUUID {_show(guid)} is not a GUID",
            "partition.bad_guid",
            hint="Use the 36-character form, e.g. " + GUID_ROOT_AMD64 + ", or drop typeUUID and use type.",
        )
    if isinstance(ptype, str) and ptype:
        known = PARTITION_TYPES.get(ptype)
        if known is None and not guid_ok:
            guess = _closest(ptype, PARTITION_TYPES)
            ctx.warn(
                (*base, "type"),
                f"partition type '{ptype}' is unknown to os-image-composer and no typeUUID "
                "is given; the partition gets the default Linux type",
                "partition.unknown_type",
                hint=(f"Did you mean '{guess}'? " if guess else "")
                + "Known types: "
                + ", ".join(PARTITION_TYPES)
                + "; or add typeUUID.",
            )
        elif known is not None and guid_ok and ptype != "linux" and known != guid.lower():
            # 'linux' is the generic family name: reference templates pair it with xbootldr.
            named = next((n for n, g in PARTITION_TYPES.items() if g == guid.lower()), None)
            ctx.add(
                (*base, "typeUUID"),
                f"type '{ptype}' and typeUUID {guid} disagree"
                + (f" (that GUID is '{named}')" if named else ""),
                "partition.type_mismatch",
                hint=f"For '{ptype}' the GUID is {known}; upstream uses typeUUID when both are set.",
            )
    effective = guid.lower() if guid_ok else (PARTITION_TYPES.get(ptype) if isinstance(ptype, str) else None)
    root_arch = ARCH_OF_ROOT_GUID.get(effective or "")
    if arch in ROOT_GUID_FOR_ARCH and root_arch and root_arch != arch:
        field_name = "typeUUID" if guid_ok else "type"
        want = ROOT_GUID_FOR_ARCH[arch]
        want_name = next(n for n, g in PARTITION_TYPES.items() if g == want)
        # A warning, not an error: fstab still mounts it, only auto-discovery by GUID breaks, and
        # upstream ships such layouts itself (el10 default-raw-aarch64, ubuntu24-aarch64-server-cloud).
        ctx.warn(
            (*base, field_name),
            f"partition {_label(i, part)} has the {root_arch} root partition type but target.arch is {arch}",
            "partition.arch_mismatch",
            hint=f"Use type: {want_name} (typeUUID {want}).",
        )


def _check_boot(ctx: _Ctx) -> None:
    itype = ctx.str_at("target", "imageType")
    boot = ctx.dict_at("systemConfig", "bootloader")
    boot_type = (
        boot.get("bootType") if isinstance(boot.get("bootType"), str) else "efi"
    )  # every default is efi
    provider = boot.get("provider")
    disk = ctx.get("disk")
    parts = [p for _, p in _partitions(ctx)]
    has_parts = bool(parts)
    gpt = ctx.get("disk", "partitionTableType") != "mbr"
    if boot_type == "legacy" and provider == "systemd-boot":
        ctx.add(
            ("systemConfig", "bootloader", "provider"),
            "systemd-boot cannot boot in legacy (BIOS) mode",
            "bootloader.legacy_systemd_boot",
            hint="Use provider: grub for legacy boot, or bootType: efi.",
        )
    if itype in ("raw", "img") and has_parts and boot_type == "efi" and not any(_is_esp(p) for p in parts):
        ctx.add(
            ("disk", "partitions"),
            "EFI boot needs an EFI System Partition, but no partition is of type esp",
            "disk.esp_missing",
            at_key=True,
            hint='Add e.g. {id: boot, type: esp, flags: [esp, boot], start: "1MiB", end: "513MiB", '
            "fsType: fat32, mountPoint: /boot/efi}, or set systemConfig.bootloader.bootType: legacy.",
        )
    for i, part in _partitions(ctx):
        fs = part.get("fsType")
        if _is_esp(part) and isinstance(fs, str) and fs in FS_TYPES and fs not in FAT_TYPES:
            ctx.add(
                ("disk", "partitions", i, "fsType"),
                f"the EFI System Partition {_label(i, part)} uses {fs}; UEFI firmware reads only FAT",
                "partition.esp_fs",
                hint="Use fsType: fat32 (or vfat).",
            )
    if boot_type == "legacy" and has_parts and gpt and not any(_is_bios_boot(p) for p in parts):
        ctx.warn(
            ("systemConfig", "bootloader", "bootType"),
            "legacy boot from a GPT disk needs a BIOS boot partition for GRUB, and there is none",
            "bootloader.no_bios_boot",
            hint='Add {id: bios, type: bios, start: "1MiB", end: "5MiB", fsType: ext2, flags: [bios_grub]} '
            "or use partitionTableType: mbr.",
        )
    if itype == "raw" and isinstance(disk, dict):
        if "size" not in disk:
            ctx.add(
                ("disk",),
                "a raw image with its own disk section needs disk.size",
                "disk.size_missing",
                at_key=True,
                hint="Add size: e.g. 4GiB (the disk section replaces the default one entirely).",
            )
        if not has_parts:
            ctx.warn(
                ("disk",),
                "the disk section has no partitions; it replaces the default layout entirely",
                "disk.no_partitions",
                at_key=True,
                hint="Add partitions (ESP + root), or remove the disk section to use the distro default.",
            )
        if has_parts and not any(p.get("mountPoint") == "/" for p in parts):
            ctx.add(
                ("disk", "partitions"),
                "no partition is mounted at '/'; the image has no root file system",
                "disk.no_root",
                at_key=True,
                hint="Add a root partition, e.g. {id: rootfs, type: linux-root-amd64, fsType: ext4, mountPoint: /}.",
            )
    if not gpt and len(parts) > 4:
        ctx.warn(
            ("disk", "partitions"),
            f"an MBR disk holds at most 4 primary partitions; {len(parts)} are listed",
            "disk.mbr_limit",
            at_key=True,
            hint="Use partitionTableType: gpt.",
        )


def _check_immutability(ctx: _Ctx) -> None:
    imm = ctx.dict_at("systemConfig", "immutability")
    if not imm:
        return
    base: PathT = ("systemConfig", "immutability")
    keys = [k for k in ("secureBootDBKey", "secureBootDBCrt", "secureBootDBCer") if imm.get(k)]
    if keys and ctx.get("systemConfig", "bootloader", "bootType") == "legacy":
        ctx.add(
            (*base, keys[0]),
            "secure boot keys are given but bootType is legacy; secure boot is UEFI-only",
            "immutability.secure_boot_legacy",
            at_key=True,
            hint="Set systemConfig.bootloader.bootType: efi, or remove the secureBootDB* keys.",
        )
    parts = [p for _, p in _partitions(ctx)]
    if imm.get("enabled") is True and parts and not any(_is_hash_partition(p) for p in parts):
        ctx.warn(
            (*base, "enabled"),
            "immutability is enabled but the disk layout has no dm-verity hash partition; "
            "os-image-composer silently disables immutability then",
            "immutability.no_hash_partition",
            hint="Add a partition with id: roothashmap, type: linux, mountPoint: none (about 500MiB), "
            "or set enabled: false.",
        )


def _is_hash_partition(part: dict) -> bool:
    return part.get("id") in ("roothashmap", "hash") or (
        part.get("mountPoint") == "none" and part.get("type") == "linux"
    )


def _check_packages(ctx: _Ctx) -> None:
    arch = ctx.str_at("target", "arch")
    lists: list[tuple[PathT, list]] = [
        (("systemConfig", "packages"), ctx.list_at("systemConfig", "packages")),
        (("systemConfig", "kernel", "packages"), ctx.list_at("systemConfig", "kernel", "packages")),
    ]
    for base, items in lists:
        for i, name in enumerate(items):
            if isinstance(name, str) and arch:
                _check_package_arch(ctx, (*base, i), name, arch)
    kernel_base, kernel_pkgs = lists[1]
    system = {p for p in lists[0][1] if isinstance(p, str)}
    first: dict[str, int] = {}
    for i, name in enumerate(kernel_pkgs):
        if not isinstance(name, str):
            continue
        if name in first:
            ctx.warn(
                (*kernel_base, i),
                f"package '{name}' is listed twice in systemConfig.kernel.packages",
                "packages.duplicate",
                hint="Remove the repeated entry.",
            )
        elif name in system:
            ctx.warn(
                (*kernel_base, i),
                f"package '{name}' is listed in both systemConfig.packages and systemConfig.kernel.packages",
                "packages.duplicate",
                hint="Keep it in one list only.",
            )
        first.setdefault(name, i)
    for r, repo in enumerate(ctx.list_at("packageRepositories")):
        allowed = repo.get("allowPackages") if isinstance(repo, dict) else None
        seen: set[str] = set()
        for i, name in enumerate(allowed if isinstance(allowed, list) else []):
            if isinstance(name, str) and name in seen:
                ctx.warn(
                    ("packageRepositories", r, "allowPackages", i),
                    f"package '{name}' is listed twice in allowPackages",
                    "packages.duplicate",
                    hint="Remove the repeated entry.",
                )
            if isinstance(name, str):
                seen.add(name)


def _check_package_arch(ctx: _Ctx, path: PathT, name: str, arch: str) -> None:
    built_for = None
    if arch != "x86_64" and _X86_ONLY.search(name):
        built_for = "x86_64"
    elif arch != "aarch64" and _ARM64_ONLY.search(name):
        built_for = "aarch64"
    if built_for is None:
        return
    hint = "Remove it or use the package for the target architecture."
    if name.lower().startswith(("grub-pc", "grub2-pc")):
        hint = "BIOS GRUB exists for x86 only; on aarch64 use grub-efi-arm64 (deb) or grub2-efi-aa64 (rpm)."
    else:
        for x86, arm in _ARCH_SWAPS:
            old, new = (x86, arm) if built_for == "x86_64" else (arm, x86)
            if old in name and arch in ("x86_64", "aarch64"):
                hint = f"Use '{name.replace(old, new)}' for {arch}."
                break
    ctx.add(
        path,
        f"package '{name}' is built for {built_for}, but target.arch is {arch}",
        "packages.wrong_arch",
        hint=hint,
    )


def _walk_strings(obj: Any, path: PathT = (), depth: int = 0) -> Iterator[tuple[PathT, str]]:
    if depth > 100:
        return
    if isinstance(obj, str):
        yield path, obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _walk_strings(v, (*path, k), depth + 1)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _walk_strings(v, (*path, i), depth + 1)


_SURROGATE = re.compile("[\ud800-\udfff]")
_ASCII_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")


def _string_problem(text: str) -> tuple[str, str, str] | None:
    """(code, message, hint) when upstream's security.ValidateString refuses ``text``, else None.

    Same order as upstream: UTF-8, NUL, length in runes, then every rune must satisfy Go's
    unicode.IsPrint (letters, marks, numbers, punctuation, symbols, ASCII space) or be \\n or \\t.
    """
    if not text:
        return None
    ascii_only = text.isascii()
    surrogate = None if ascii_only else _SURROGATE.search(text)
    if surrogate:
        return ("string.encoding", f"is not valid UTF-8 (a lone surrogate at character {surrogate.start() + 1})",
                "Re-encode the text as UTF-8.")
    if "\0" in text:
        return ("string.nul", f"contains a NUL character at character {text.index(chr(0)) + 1}",
                "Remove the NUL (\\0) character.")
    if len(text) > MAX_STRING_RUNES:
        return ("string.too_long",
                f"is {len(text):,} characters long; os-image-composer accepts at most {MAX_STRING_RUNES:,}",
                "Shorten it; a long shell sequence belongs in a script added with additionalFiles "
                "and run by one configurations entry.")
    if ascii_only:  # the common case, without a per-character category lookup
        bad = _ASCII_CONTROL.search(text)
        chars = [(bad.start(), bad.group())] if bad else []
    else:
        chars = enumerate(text)
    for i, ch in chars:
        if ch in "\n\t" or ch == " " or unicodedata.category(ch)[0] in "LMNPS":
            continue
        name = unicodedata.name(ch, "a control character")
        return ("string.control",
                f"contains U+{ord(ch):04X} ({name}) at character {i + 1}; os-image-composer accepts only "
                "printable characters, newline and tab",
                "Remove it, or replace it with a plain space if it is a special space.")
    return None


def _check_strings(ctx: _Ctx) -> None:
    for path, text in _walk_strings(ctx.data):
        problem = _string_problem(text)
        if problem:
            code, message, hint = problem
            ctx.add(path, f"{_where(path)} {message}", code, hint=hint)


_PLACEHOLDER_HINTS = {
    "url": "Replace it with the repository base URL (https://...).",
    "pkey": 'Replace it with the GPG key URL, an absolute key path, or "[trusted=yes]".',
    "pkeys": "Replace it with the GPG key URL or an absolute key path.",
    "groups": "Replace it with a real group such as sudo or wheel, or remove it.",
    "password": "Replace it with a pre-hashed password (starting with '$').",
}


def _check_placeholders(ctx: _Ctx) -> None:
    for path, text in _walk_strings(ctx.data):
        token = None
        m = _PLACEHOLDER_TOKEN.search(text)
        if m:
            token = m.group(0)
        elif _PLACEHOLDER_WHOLE.match(text):
            token = text.strip()
        if token is None:
            continue
        key = next((p for p in reversed(path) if isinstance(p, str)), "")
        ctx.warn(
            path,
            f"{_where(path)} still holds the placeholder {token}",
            "placeholder",
            hint=_PLACEHOLDER_HINTS.get(
                key, "Replace the placeholder with a real value or remove the entry."
            ),
        )


def _check_users(ctx: _Ctx) -> None:
    names: dict[str, int] = {}
    for i, user in enumerate(ctx.list_at("systemConfig", "users")):
        if not isinstance(user, dict):
            continue
        base: PathT = ("systemConfig", "users", i)
        name = user.get("name")
        label = f"'{name}'" if isinstance(name, str) else f"#{i}"
        if isinstance(name, str):
            if name in names:
                ctx.warn(
                    (*base, "name"),
                    f"user '{name}' is defined twice (also users[{names[name]}]); the later entry wins",
                    "users.duplicate",
                    hint="Merge the two entries.",
                )
            names.setdefault(name, i)
        pw = user.get("password")
        if not isinstance(pw, str) or not pw or _PLACEHOLDER_TOKEN.search(pw) or _PLACEHOLDER_WHOLE.match(pw):
            continue
        if pw.startswith("$"):
            if not _CRYPT_RE.match(pw):
                ctx.warn(
                    (*base, "password"),
                    f"user {label}'s password starts with '$', so it is taken as already "
                    "hashed, but it is not a crypt(3) hash; nobody could log in with it",
                    "users.bad_hash",
                    hint="Use a hash such as the output of `openssl passwd -6`, which looks like $6$salt$....",
                )
            continue
        extra = (
            " (hash_algo only hashes it during the build; the clear text stays in the template)"
            if user.get("hash_algo")
            else ""
        )
        ctx.warn(
            (*base, "password"),
            f"user {label} has a plain-text password{extra}",
            "users.plaintext_password",
            hint="Store a pre-hashed password instead, e.g. the output of `openssl passwd -6` "
            "(starts with $6$); upstream treats values starting with '$' as already hashed.",
        )


def _check_files_and_commands(ctx: _Ctx) -> None:
    for i, entry in enumerate(ctx.list_at("systemConfig", "additionalFiles")):
        if not isinstance(entry, dict):
            continue
        base: PathT = ("systemConfig", "additionalFiles", i)
        for key in entry:
            if key not in ("local", "final"):
                guess = _closest(key, ("local", "final"))
                ctx.warn(
                    (*base, key),
                    f"unknown key '{key}' in an additionalFiles entry; upstream ignores it",
                    "additional_files.unknown_key",
                    at_key=True,
                    hint=(f"Did you mean '{guess}'? " if guess else "") + "Entries have 'local' and 'final'.",
                )
        local, final = entry.get("local"), entry.get("final")
        if not (isinstance(local, str) and local and isinstance(final, str) and final):
            ctx.warn(
                base,
                "additionalFiles entry needs both 'local' (file next to the template) and 'final' "
                "(path in the image); upstream skips it otherwise",
                "additional_files.incomplete",
            )
            continue
        if not final.startswith("/"):
            ctx.warn(
                (*base, "final"),
                f"final path '{final}' is not absolute",
                "additional_files.final_relative",
                hint="Give the absolute path inside the image, e.g. /etc/hostname.",
            )
        if (
            ctx.base_dir is not None
            and not Path(local).is_absolute()
            and not _PLACEHOLDER_TOKEN.search(local)
            and not (Path(ctx.base_dir) / local).exists()
        ):
            ctx.warn(
                (*base, "local"),
                f"additional file '{local}' does not exist next to the template",
                "additional_files.missing",
                hint="Upstream also looks relative to the distro's default config directory "
                "(osv/<os>/<dist>/imageconfigs/defaultconfigs/), where ../additionalfiles/ ships; "
                "otherwise the entry is skipped during the build.",
            )
    for i, entry in enumerate(ctx.list_at("systemConfig", "configurations")):
        if not isinstance(entry, dict):
            continue
        base = ("systemConfig", "configurations", i)
        for key in entry:
            if key != "cmd":
                ctx.warn(
                    (*base, key),
                    f"unknown key '{key}' in a configurations entry; upstream reads only 'cmd'",
                    "configurations.unknown_key",
                    at_key=True,
                    hint="Did you mean 'cmd'?" if _closest(key, ("cmd",)) else 'Each entry is {cmd: "..."}.',
                )
        if not isinstance(entry.get("cmd"), str) or not entry.get("cmd", "").strip():
            ctx.warn(
                base,
                "configurations entry has no command",
                "configurations.no_cmd",
                hint='Write it as - cmd: "your shell command".',
            )


def _check_repositories(ctx: _Ctx) -> None:
    # Codenames repeat legitimately (deb suites such as jammy from several URLs), so only a
    # repository listed twice with the same codename, url/path and component is flagged.
    seen: dict[tuple[str, ...], int] = {}
    for i, repo in enumerate(ctx.list_at("packageRepositories")):
        if not isinstance(repo, dict):
            continue
        base: PathT = ("packageRepositories", i)
        name = repo.get("codename")
        ident = tuple(str(repo.get(k, "")) for k in ("codename", "url", "path", "component"))
        if ident in seen:
            ctx.warn(
                base,
                f"repository '{name}' is listed twice (same as packageRepositories[{seen[ident]}])",
                "repo.duplicate",
                hint="Remove the repeated entry.",
            )
        seen.setdefault(ident, i)
        if repo.get("pkey") == "[trusted=yes]":
            ctx.warn(
                (*base, "pkey"),
                f"repository '{name}' skips GPG verification ([trusted=yes])",
                "repo.untrusted",
                hint="Prefer the repository's signing key URL.",
            )
        url = repo.get("url")
        if (
            isinstance(url, str)
            and url
            and not _PLACEHOLDER_TOKEN.search(url)
            and not re.match(r"^(https?|file|ftp)://\S+$", url)
        ):
            ctx.warn(
                (*base, "url"),
                f"repository url {_show(url)} is not an http(s):// or file:// URL",
                "repo.url",
                hint="Give the repository base URL, e.g. https://example.com/repo/.",
            )


def _check_system(ctx: _Ctx) -> None:
    system = ctx.get("systemConfig")
    if isinstance(system, dict) and system and not system.get("name"):
        ctx.warn(
            ("systemConfig",),
            "systemConfig has no name; os-image-composer then ignores the whole "
            "systemConfig and uses the distro defaults",
            "system.name_missing",
            at_key=True,
            hint="Add name: e.g. my-image (any non-empty text).",
        )
    hostname = ctx.get("systemConfig", "hostname")
    if isinstance(hostname, str) and hostname and not _HOSTNAME_RE.match(hostname):
        ctx.warn(
            ("systemConfig", "hostname"),
            f"hostname {_show(hostname)} is not a valid host name",
            "system.hostname",
            hint="Use letters, digits and '-', up to 63 characters per dot-separated label.",
        )


# Values upstream's schema allows but its build code has no branch for (os-image-composer d8ae0f5):
# internal/image/imageboot InstallImageBoot switches on "grub" and "systemd-boot" only, and
# internal/utils/compression CompressFile on gz, xz, zstd (and tar.*) only. The build fails late.
BUILD_BOOTLOADERS = ("grub", "systemd-boot")
BUILD_COMPRESSIONS = ("gz", "xz", "zstd")
_COMPRESSION_FIX = {"gzip": "gz", "bz2": "gz, xz or zstd"}


def _check_build_support(ctx: _Ctx) -> None:
    provider = ctx.get("systemConfig", "bootloader", "provider")
    if isinstance(provider, str) and provider not in BUILD_BOOTLOADERS and ctx.str_at("target", "imageType") != "img":
        ctx.add(
            ("systemConfig", "bootloader", "provider"),
            f"bootloader provider {_show(provider)} passes os-image-composer's schema, but its build stops with "
            f"'unsupported bootloader provider: {provider}' (it installs only {' and '.join(BUILD_BOOTLOADERS)})",
            "build.bootloader",
            hint="Use provider: grub (GRUB 2 is installed under that name).",
        )
    for i, artifact in enumerate(ctx.list_at("disk", "artifacts")):
        comp = artifact.get("compression") if isinstance(artifact, dict) else None
        if isinstance(comp, str) and comp and comp not in BUILD_COMPRESSIONS:
            ctx.add(
                ("disk", "artifacts", i, "compression"),
                f"compression {_show(comp)} passes os-image-composer's schema, but its build stops with "
                f"'unsupported compression type: {comp}' after the image is made",
                "build.compression",
                hint=f"Use {_COMPRESSION_FIX.get(comp, ', '.join(BUILD_COMPRESSIONS))}.",
            )


_CHECKS: tuple[Callable[[_Ctx], None], ...] = (
    _check_strings,
    _check_target,
    _check_disk_geometry,
    _check_partition_fields,
    _check_boot,
    _check_immutability,
    _check_packages,
    _check_placeholders,
    _check_users,
    _check_files_and_commands,
    _check_repositories,
    _check_system,
    _check_build_support,
    __import__("image_composer_mcp.server.validation.consistency", fromlist=["check"]).check,  # leftovers of removed software
)

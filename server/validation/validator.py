"""Validate OS Image Composer templates (the entry point): safe YAML, upstream's own JSON Schema, then the
rule families (semantic checks).

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
   (``upstream.py``), never widened. jsonschema's messages are rewritten for humans (``schema_messages.py``);
   for anyOf/oneOf the most relevant branch is reported instead of all of them; fields upstream
   refuses get a hint (e.g. the ADR's ``metadata.capabilities`` -> ``metadata.keywords``).
4. Semantics: facts the schema cannot express, learnt from upstream's code and data
   (os-image-composer ``internal/config``, ``internal/image/imagedisc`` and ``osv/*``):
   size syntax, partition geometry, partition types per architecture, ESP for EFI,
   packages built for the other architecture, secure boot vs boot mode, placeholders,
   plain-text passwords, missing additional files, and a few cheaper ones. These only add
   errors and warnings; nothing here accepts what upstream's schema refuses. Rule families:
   ``target_rules``, ``disk_rules``, ``package_rules``, ``system_rules`` and ``consistency``; the facts they
   use are in the knowledge layer (server/knowledge: capabilities.yaml, template_format.yaml, sizes).

The public functions never raise on bad input: everything becomes an :class:`Issue`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ..core.yamlsafe import MAX_BYTES as _YAML_MAX_BYTES
from ..core.yamlsafe import YamlError, load_mapping
from . import consistency, disk_rules, package_rules, system_rules, target_rules
from . import upstream as upstream_compat
from .context import MAX_ISSUES, Context, Locator, NoPositions, fmt_path, jsonable, kind_of, where
from .report import Issue, ValidationReport, issue
from .schema_messages import schema_issues

logger = logging.getLogger(__name__)

MAX_BYTES = _YAML_MAX_BYTES  # 1 MiB; real templates are a few KiB (the largest reference one ~20 KiB)


def load_schema() -> dict:
    """Upstream's template schema document, unchanged (``$defs/UserTemplate`` is what we check). A fresh copy."""
    return upstream_compat.schema()


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
            kind = kind_of(data)
            return ValidationReport.refused(issue(
                "$", f"the template is {kind}, not a mapping", "schema.type",
                hint="A template is a mapping with keys such as image, target, disk, systemConfig."))
        try:
            plain = jsonable(data)
        except (ValueError, RecursionError):
            return ValidationReport.refused(issue(
                "$", "the template is nested too deeply (or contains itself)", "schema.too_deep",
                hint="Templates are shallow mappings."))
        return _validate_mapping(plain, NoPositions(), base_dir, [])
    except Exception as exc:
        return _internal_error(exc)


def _internal_error(exc: Exception) -> ValidationReport:
    logger.exception("validation crashed")
    return ValidationReport.refused(issue(
        "$", f"internal validation error: {exc.__class__.__name__}", "internal.error",
        hint="This is a bug in the validator; the template may still be fine."))


def _validate_text(text: str | bytes, *, base_dir: Path | None, max_bytes: int) -> ValidationReport:
    if not isinstance(text, str | bytes):
        return ValidationReport.refused(issue("$", f"expected YAML text, got {type(text).__name__}", "yaml.invalid"))
    size = len(text.encode("utf-8", "surrogatepass")) if isinstance(text, str) else len(text)
    if size <= max_bytes and not text.strip():
        # Checked here because libyaml calls a lone tab "a character that cannot start any token".
        empty = Issue(
            path="$",
            message="the document is empty",
            line=1,
            column=1,
            hint="Send a template: a mapping with image, target, ...",
            code="yaml.empty",
            severity="error",
        )
        return ValidationReport.refused(empty)
    try:
        parsed = load_mapping(text, max_bytes=max_bytes)
    except YamlError as exc:
        refusal = Issue(
            path="$",
            message=exc.message,
            line=exc.line,
            column=exc.column,
            hint=exc.hint or None,
            code=_yaml_code(exc.message),
            severity="error",
        )
        logger.info("template rejected at YAML level: %s", refusal.code)
        return ValidationReport.refused(refusal)
    early: list[Issue] = []
    for dup_path, line, col in parsed.duplicate_keys:
        # gopkg.in/yaml.v3 (upstream's parser) refuses a mapping key written twice: "mapping key ...
        # already defined at line N", so the template never loads there.
        early.append(
            Issue(
                path=fmt_path(dup_path),
                message=f"duplicate key '{dup_path[-1]}' in {where(dup_path[:-1])}; os-image-composer refuses a key "
                "written twice",
                line=line,
                column=col,
                hint="Keep one of the two entries.",
                code="yaml.duplicate_key",
                severity="error",
            )
        )
    data = jsonable(parsed.data)
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
    data: dict, locator: Locator, base_dir: Path | None, early: list[Issue]
) -> ValidationReport:
    ctx = Context(data, locator, base_dir)
    for found in early:  # found while parsing
        (ctx.errors if found.severity == "error" else ctx.warnings).append(found)
    schema_issues(ctx)
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
                    path="$",
                    message=f"{ctx.dropped[severity]:,} more {severity}s not shown",
                    line=None,
                    column=None,
                    hint=f"Only the first {MAX_ISSUES} {severity}s are reported; fix those and validate again.",
                    code="issues.truncated",
                    severity=severity,
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


_CHECKS: tuple[Callable[[Context], None], ...] = (  # in this order: truncation keeps the first issues found
    system_rules.check_strings,
    target_rules.check_target,
    disk_rules.check_disk_geometry,
    disk_rules.check_partition_fields,
    target_rules.check_boot,
    target_rules.check_immutability,
    package_rules.check_packages,
    system_rules.check_placeholders,
    system_rules.check_users,
    system_rules.check_files_and_commands,
    package_rules.check_repositories,
    system_rules.check_system,
    target_rules.check_build_support,
    consistency.check,  # leftovers of removed software
)


__all__ = ["MAX_BYTES", "MAX_ISSUES", "load_schema", "validate_data", "validate_text"]

"""validate_template: schema and semantic checks with positions and fixing hints."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

from ..server.engine import Engine
from ..server.validation.report import Issue
from ._common import MAX_NAME_CHARS, MAX_YAML_CHARS, call_engine, result


class ValidationResult(BaseModel):
    valid: bool = Field(description="no errors (warnings allowed)")
    template: str | None = Field(description="the indexed template checked, when called by name")
    error_count: int
    warning_count: int
    errors: list[Issue]
    warnings: list[Issue]


def issue_line(issue: Issue) -> str:
    where = f"line {issue.line}:{issue.column} " if issue.line else ""
    hint = f" (hint: {issue.hint})" if issue.hint else ""
    return f"- {where}{issue.path}: {issue.message}{hint}"


def to_text(r: ValidationResult) -> str:
    name = f" {r.template}" if r.template else ""
    head = (f"Template{name} is valid" if r.valid else f"Template{name} is INVALID") + (
        f": {r.error_count} error(s), {r.warning_count} warning(s)")
    lines = [head]
    if r.errors:
        lines.append("Errors:")
        lines += [issue_line(i) for i in r.errors]
    if r.warnings:
        lines.append("Warnings:")
        lines += [issue_line(i) for i in r.warnings]
    return "\n".join(lines)


def register(mcp: MCPServer, engine: Engine) -> None:
    @mcp.tool(
        name="validate_template",
        title="Validate an image template",
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False),
    )
    async def validate_template(
        yaml: Annotated[str | None, Field(max_length=MAX_YAML_CHARS, description="the template YAML text")] = None,
        name: Annotated[str | None, Field(max_length=MAX_NAME_CHARS, description="or the name of an indexed template")] = None,
        check_build: Annotated[bool, Field(description="also check that it would build: dependency closure, "
                                                       "conflicts and disk fit against the real repository "
                                                       "indexes (slower; needs the indexes)")] = False,
    ) -> Annotated[CallToolResult, ValidationResult]:
        """Check an OS Image Composer template against the JSON Schema and semantic rules (os/dist pairs,
        partition layout and sizes, partition GUIDs per architecture, EFI/ESP, bootloader packages, secure boot vs
        immutability, duplicates, placeholders, plain-text passwords). Every issue has a path, line, column and a
        hint. Pass either the YAML text or the name of an indexed template."""
        report, resolved = await call_engine(engine, "validate_template", engine.validate, yaml, name)
        if check_build and report.data is not None:
            build = await call_engine(engine, "validate_template", engine.check_build, yaml, name)
            report.errors += build.errors
            report.warnings += build.warnings
            report.valid = report.valid and not build.errors
        model = ValidationResult(valid=report.valid, template=resolved, error_count=len(report.errors),
                                 warning_count=len(report.warnings), errors=report.errors, warnings=report.warnings)
        return result(model, to_text(model))

"""The issue model and the validation report: what every check of a template returns.

:class:`Issue` is the one definition of a finding about a template, used by the validator, the build
check (server/packages/build_check.py), the agent and, as is, by the MCP tools' output schemas
(validate_template, verify_packages, generate_template, refine_template).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field


class Issue(BaseModel):
    # Every field is required (no defaults) so the tools' output schemas list them all as required.
    path: str = Field(description="JSON-path-like location, e.g. $.disk.partitions[1].end")
    message: str  # a person understands it
    line: int | None = Field(description="1-based line in the YAML source")
    column: int | None
    hint: str | None = Field(description="how to fix it")
    code: str  # short stable id, e.g. "schema.required", "partition.overlap", "yaml.syntax"
    severity: str  # "error" or "warning"

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump()

    def __str__(self) -> str:
        where = f"line {self.line}, column {self.column}: " if self.line else ""
        hint = f" Hint: {self.hint}" if self.hint else ""
        return f"{where}{self.path}: {self.message}{hint}"


def issue(
    path: str,
    message: str,
    code: str,
    *,
    hint: str | None = None,
    line: int | None = None,
    column: int | None = None,
    severity: str = "error",
) -> Issue:
    """An :class:`Issue` with the usual defaults (an error without a position or hint)."""
    return Issue(path=path, message=message, line=line, column=column, hint=hint, code=code, severity=severity)


@dataclass
class ValidationReport:
    valid: bool  # no errors (warnings allowed)
    errors: list[Issue]
    warnings: list[Issue]
    data: dict | None  # the parsed template when it parsed (JSON-compatible)

    @classmethod
    def refused(cls, issue: Issue) -> ValidationReport:
        """A report with one error and no parsed data: the template could not be checked further."""
        return cls(False, [issue], [], None)

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


__all__ = ["Issue", "ValidationReport", "issue"]

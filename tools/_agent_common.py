"""What generate_template and refine_template share: the result model and progress (sampling: _sampling.py)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import Context
from pydantic import BaseModel, Field

from ..server.agent.planned_spec import PlannedSpec
from ..server.core.logs import redact, redact_known
from ..server.validation.report import Issue

if TYPE_CHECKING:
    from ..server.agent.results import AgentResult

log = logging.getLogger(__name__)


class PackageCheck(BaseModel):
    verified: bool = Field(description="the repositories could be consulted")
    message: str
    found: list[str]
    missing: list[str]
    unchecked: list[str]
    suggestions: dict[str, list[str]]


class TemplateResult(BaseModel):
    conversation_id: str = Field(description="pass it to refine_template to change this template")
    revision: int
    mode: str = Field(description="generate, refine, question (answered, nothing changed) or revert")
    yaml: str
    valid: bool = Field(description="the validator's verdict on this YAML")
    errors: list[Issue]
    warnings: list[Issue]
    packages: PackageCheck | None
    grounded_on: list[str] = Field(description="templates the result was built from")
    provider: str
    attempts: int = Field(description="generation attempts, including fixes")
    explanation: str
    changes: list[str]
    diff: str = Field(description="unified diff against the previous revision (refine)")
    answer: str | None = Field(description="the answer to an explanation question")
    saved_to: str | None
    skipped_providers: list[str]
    notes: list[str] = Field(default_factory=list, description="what was not understood, not applied or adjusted, "
                             "one line each (also in explanation)")
    unsupported: list[str] = Field(default_factory=list, description="OS, distribution or architecture named in the "
                                   "request that is not supported, with the closest supported choices")
    plan: PlannedSpec | None = Field(default=None, description="plan mode (ai.agent.llm_mode=plan): the model's "
                                     "request spec as it answered, before the rules' facts were merged in")


# Template text stays byte-exact ("password:" is a real template key): only configured secrets leave it.
_EXACT_FIELDS = frozenset({"yaml", "diff"})


def _redacted(value: Any, exact: bool) -> Any:
    if isinstance(value, str):
        return redact_known(value) if exact else redact(value)
    if isinstance(value, list):
        return [_redacted(v, exact) for v in value]
    if isinstance(value, dict):
        return {k: _redacted(v, exact) for k, v in value.items()}
    if isinstance(value, BaseModel):
        return type(value).model_validate(_redacted(value.model_dump(), exact))
    return value


def to_model(r: AgentResult) -> TemplateResult:
    """The tool's result, with secrets an upstream LLM error may have put into explanations removed."""
    model = TemplateResult(**{k: getattr(r, k) for k in TemplateResult.model_fields})
    return TemplateResult.model_validate(
        {k: _redacted(v, k in _EXACT_FIELDS) for k, v in model.model_dump().items()})


def to_text(m: TemplateResult) -> str:
    head = f"[conversation {m.conversation_id}, revision {m.revision}, provider {m.provider}] {m.explanation}"
    if m.mode == "question":
        return f"{head}\n\n(The template is unchanged; revision {m.revision}.)"
    parts = [head]
    if m.errors:
        parts.append("Errors:\n" + "\n".join(f"- {e.path}: {e.message}" for e in m.errors[:20]))
    if m.packages and m.packages.missing:
        parts.append("Missing packages:\n" + "\n".join(
            f"- {p}" + (f" (try: {', '.join(m.packages.suggestions.get(p, []))})"
                        if m.packages.suggestions.get(p) else "") for p in m.packages.missing))
    if m.diff:
        parts.append(f"Diff:\n```diff\n{m.diff}```")
    parts.append(f"```yaml\n{m.yaml}```")
    if m.saved_to:
        parts.append(f"Saved to {m.saved_to}")
    return "\n\n".join(parts)


def progress_reporter(ctx: Context[Any, Any]):  # noqa: ANN201
    async def report(step: float, total: float, message: str) -> None:
        await ctx.report_progress(step, total, message=message)

    return report

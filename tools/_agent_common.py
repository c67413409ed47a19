"""What generate_template and refine_template share: the result model, the sampling bridge, progress."""

from __future__ import annotations

import logging
import warnings
from typing import TYPE_CHECKING, Any

from mcp import MCPDeprecationWarning
from mcp.server.mcpserver import Context
from mcp.types import ClientCapabilities, SamplingCapability, SamplingMessage, TextContent
from pydantic import BaseModel, Field

from server.llm import CallbackProvider, ChatMessage
from server.logs import redact, redact_known

if TYPE_CHECKING:
    from server.agent import AgentResult

log = logging.getLogger(__name__)


class PackageCheck(BaseModel):
    verified: bool = Field(description="the repositories could be consulted")
    message: str
    found: list[str]
    missing: list[str]
    unchecked: list[str]
    suggestions: dict[str, list[str]]


class Issue(BaseModel):
    path: str
    message: str
    line: int | None
    column: int | None
    hint: str | None
    code: str
    severity: str


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


def sampling_provider(ctx: Context[Any, Any], timeout: float) -> CallbackProvider:
    """The client's own LLM. It needs a back-channel: legacy (2025-11-25) stateful connections have one; the
    2026-07-28 protocol has none, so there the provider reports itself unavailable."""
    session = ctx.session
    try:
        capable = bool(session.can_send_request) and session.check_client_capability(
            ClientCapabilities(sampling=SamplingCapability()))
    except Exception:  # noqa: BLE001 - capability probing must never fail the tool call
        capable = False

    async def sample(messages: list[ChatMessage], temperature: float, max_tokens: int, stop: list[str] | None) -> str:
        system = "\n".join(m.content for m in messages if m.role == "system") or None
        convo = [SamplingMessage(role="assistant" if m.role == "assistant" else "user",
                                 content=TextContent(type="text", text=m.content))
                 for m in messages if m.role != "system"]
        with warnings.catch_warnings():
            # Deprecated in the 2026-07-28 protocol, but the only way to reach the client's LLM on older ones.
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            result = await session.create_message(convo, max_tokens=max_tokens, system_prompt=system,
                                                  temperature=temperature, stop_sequences=stop)
        content = result.content
        return content.text if isinstance(content, TextContent) else str(getattr(content, "text", ""))

    reason = ("the MCP client offers sampling" if capable else
              "the MCP client does not offer sampling on this connection (it needs a 2025-11-25 session with "
              "the sampling capability)")
    return CallbackProvider(sample, available=capable, reason=reason, timeout=timeout)


def progress_reporter(ctx: Context[Any, Any]):  # noqa: ANN201
    async def report(step: float, total: float, message: str) -> None:
        await ctx.report_progress(step, total, message=message)

    return report

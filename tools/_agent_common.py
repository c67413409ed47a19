"""What generate_template and refine_template share: the result model, the sampling bridge, progress."""

from __future__ import annotations

import hashlib
import json
import logging
import warnings
from typing import TYPE_CHECKING, Any

from mcp import MCPDeprecationWarning
from mcp.server.mcpserver import Context
from mcp.types import (
    ClientCapabilities,
    CreateMessageRequest,
    CreateMessageRequestParams,
    InputRequiredResult,
    SamplingCapability,
    SamplingMessage,
    TextContent,
)
from mcp_types.version import is_version_at_least
from pydantic import BaseModel, Field

from ..server.agent.spec_plan import PlannedSpec
from ..server.core.logs import redact, redact_known
from ..server.llm.chat import CallbackProvider, ChatMessage, SamplingDeferred
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


_MODERN_PROTOCOL = "2026-07-28"  # first revision where the server asks the client through input-required results
_STATE_VERSION = 1


def _sampling_params(messages: list[ChatMessage], temperature: float, max_tokens: int,
                     stop: list[str] | None) -> CreateMessageRequestParams:
    system = "\n".join(m.content for m in messages if m.role == "system") or None
    convo = [SamplingMessage(role="assistant" if m.role == "assistant" else "user",
                             content=TextContent(type="text", text=m.content))
             for m in messages if m.role != "system"]
    return CreateMessageRequestParams(messages=convo, max_tokens=max_tokens, system_prompt=system,
                                      temperature=temperature, stop_sequences=stop)


def _answer_text(result: Any) -> str:
    content = getattr(result, "content", None)
    if isinstance(content, list):  # CreateMessageResultWithTools carries a list of blocks
        content = next((c for c in content if isinstance(c, TextContent)), None)
    if isinstance(content, TextContent):
        return content.text
    raise RuntimeError(f"the client answered the sampling request with {type(result).__name__}, not text "
                       "(it may have declined)")


class _InputRequiredSampler:
    """Sampling on 2026-07-28 connections, which have no back-channel for a mid-call request.

    This is the protocol's input-required flow (what the SDK's ``Resolve``/``Sample`` use), driven by the
    tool body because the agent composes its prompts from retrieval results inside the call, so no
    resolver could render them up front. Each sampling request gets a key derived from its content. An
    unanswered one raises :class:`SamplingDeferred` carrying an ``InputRequiredResult``; the client asks its
    LLM and retries the call with the answer, and the call runs again from the start, replaying every
    answer it already has (the agent's prompts are deterministic given the same answers). Earlier answers
    ride ``request_state``, which the SDK seals, so a client cannot forge them.
    """

    def __init__(self, ctx: Context[Any, Any]):
        self.answers: dict[str, str] = {}
        self.errors: dict[str, str] = {}
        state = ctx.request_state
        if state:
            try:
                data = json.loads(state)
            except ValueError:
                data = None
            if isinstance(data, dict) and data.get("v") == _STATE_VERSION and isinstance(data.get("answers"), dict):
                self.answers = {str(k): str(v) for k, v in data["answers"].items()}
        for key, response in (ctx.input_responses or {}).items():
            try:
                self.answers[key] = _answer_text(response)
            except RuntimeError as exc:
                self.errors[key] = str(exc)

    async def sample(self, messages: list[ChatMessage], temperature: float, max_tokens: int,
                     stop: list[str] | None) -> str:
        params = _sampling_params(messages, temperature, max_tokens, stop)
        wire = json.dumps(params.model_dump(by_alias=True, mode="json", exclude_none=True), sort_keys=True)
        key = "sample-" + hashlib.sha256(wire.encode()).hexdigest()[:24]
        if key in self.answers:
            return self.answers[key]
        if key in self.errors:
            raise RuntimeError(self.errors[key])
        state = json.dumps({"v": _STATE_VERSION, "answers": self.answers}) if self.answers else None
        raise SamplingDeferred(InputRequiredResult(input_requests={key: CreateMessageRequest(params=params)},
                                                   request_state=state))


def _client_declared_sampling(ctx: Context[Any, Any]) -> bool:
    try:
        return bool(ctx.session.check_client_capability(ClientCapabilities(sampling=SamplingCapability())))
    except Exception:  # noqa: BLE001 - capability probing must never fail the tool call
        return False


def sampling_provider(ctx: Context[Any, Any], timeout: float) -> CallbackProvider:
    """The client's own LLM, in both protocol eras.

    2026-07-28 connections reach it through input-required rounds (:class:`_InputRequiredSampler`); legacy
    (2025-11-25) stateful connections through a ``sampling/createMessage`` request mid-call. Either way the
    client must have declared the sampling capability.
    """
    declared = _client_declared_sampling(ctx)
    version = ctx.protocol_version or ""
    if declared and is_version_at_least(version, _MODERN_PROTOCOL):
        sampler = _InputRequiredSampler(ctx)
        return CallbackProvider(sampler.sample, available=True, timeout=timeout,
                                reason=f"the MCP client offers sampling ({version}: answered in input-required rounds)")
    session = ctx.session
    capable = declared and bool(getattr(session, "can_send_request", False))

    async def sample(messages: list[ChatMessage], temperature: float, max_tokens: int, stop: list[str] | None) -> str:
        params = _sampling_params(messages, temperature, max_tokens, stop)
        with warnings.catch_warnings():
            # Deprecated in the 2026-07-28 protocol, but the way to reach the client's LLM on older ones.
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            result = await session.create_message(params.messages, max_tokens=max_tokens,
                                                  system_prompt=params.system_prompt, temperature=temperature,
                                                  stop_sequences=stop)
        return _answer_text(result)

    if capable:
        reason = "the MCP client offers sampling"
    elif declared:
        reason = ("the MCP client declared sampling, but this connection has no way to ask it (a legacy session "
                  "over stateless or JSON-response HTTP); reconnect over stdio or stateful HTTP")
    else:
        reason = "the MCP client did not declare the sampling capability"
    return CallbackProvider(sample, available=capable, reason=reason, timeout=timeout)


def progress_reporter(ctx: Context[Any, Any]):  # noqa: ANN201
    async def report(step: float, total: float, message: str) -> None:
        await ctx.report_progress(step, total, message=message)

    return report

"""Sampling: the MCP client's own LLM plans the template, asked through the SDK's ``Resolve``/``Sample`` flow.

Plan mode asks a model one structured question per call (the request's or the edit's plan), so the tools ask
it before their body runs, with resolvers, which the SDK carries over either protocol era: on 2026-07-28
connections as input-required rounds (the client answers and retries the call; answers ride the SDK's sealed
``request_state``), on legacy (2025-11-25) stateful connections as ``sampling/createMessage`` mid-call.

The resolvers form a small graph per tool:

* ``plan`` (the tool's own, by argument name): the agent's pure ``client_plan`` — the question the call will
  ask, or None when it will not ask the client (another provider is chosen, the client did not declare
  sampling, llm_mode is not plan, the edit needs no LLM, ...);
* ``plan_question``: that question as a ``Sample``;
* ``plan_retry``: the one retry ``CallbackProvider.complete_json`` makes when the first answer breaks the
  schema, as a ``Sample``, or None.

The body hands the agent a :class:`CallbackProvider` that answers from these prepared answers, matched by
the digest of the exact request; retrieval is deterministic, so the body asks exactly what was prepared.
Anything else (free-form YAML mode, fix rounds) goes to the client mid-call where the connection allows it,
and otherwise fails with an :class:`LLMError` the agent turns into the offline composer and a note.

No ``from __future__ import annotations`` here or in the tool modules: resolvers are closures over the tool's
plan resolver and engine, and the SDK reads their annotations as objects at registration.
"""

import hashlib
import json
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from mcp import MCPDeprecationWarning
from mcp.server.mcpserver import Context, Resolve, Sample
from mcp.types import (
    ClientCapabilities,
    CreateMessageRequestParams,
    CreateMessageResult,
    SamplingCapability,
    SamplingMessage,
    TextContent,
)
from mcp_types.version import is_version_at_least

from ..server.llm.chat import (
    JSON_MAX_TOKENS,
    JSON_TEMPERATURE,
    CallbackProvider,
    ChatMessage,
    LLMError,
    json_messages,
    json_retry,
    sampled_text,
)

if TYPE_CHECKING:  # spec_plan loads the composer and the validation rules: only generation needs them
    from ..server.agent.spec_plan import PlanAsk

_MODERN_PROTOCOL = "2026-07-28"  # first revision without server-to-client requests mid-call


@dataclass(frozen=True)
class ClientPlan:
    """This call's plan question for the client's LLM, rendered as the agent's sampling provider sends it."""

    ask: "PlanAsk"
    asked: list[ChatMessage]  # the question with the schema instructions, as complete_json sends it
    params: CreateMessageRequestParams


def _params(messages: list[ChatMessage], temperature: float, max_tokens: int,
            stop: list[str] | None) -> CreateMessageRequestParams:
    system = "\n".join(m.content for m in messages if m.role == "system") or None
    convo = [SamplingMessage(role="assistant" if m.role == "assistant" else "user",
                             content=TextContent(type="text", text=m.content))
             for m in messages if m.role != "system"]
    return CreateMessageRequestParams(messages=convo, max_tokens=max_tokens, system_prompt=system,
                                      temperature=temperature, stop_sequences=stop)


def _json_params(messages: list[ChatMessage]) -> CreateMessageRequestParams:
    return _params(messages, JSON_TEMPERATURE, JSON_MAX_TOKENS, None)


def _digest(params: CreateMessageRequestParams) -> str:
    wire = json.dumps(params.model_dump(by_alias=True, mode="json", exclude_none=True), sort_keys=True)
    return hashlib.sha256(wire.encode()).hexdigest()


def _sample(params: CreateMessageRequestParams) -> Sample:
    return Sample(params.messages, max_tokens=params.max_tokens, system_prompt=params.system_prompt,
                  temperature=params.temperature, stop_sequences=params.stop_sequences)


def _answer_text(result: Any) -> str:
    content = getattr(result, "content", None)
    if isinstance(content, list):  # CreateMessageResultWithTools carries a list of blocks
        content = next((c for c in content if isinstance(c, TextContent)), None)
    if isinstance(content, TextContent):
        return content.text
    raise RuntimeError(f"the client answered the sampling request with {type(result).__name__}, not text "
                       "(it may have declined)")


def client_plan(ask: "PlanAsk | None") -> ClientPlan | None:
    if ask is None:
        return None
    asked = json_messages(ask.messages, ask.schema, ask.name)
    return ClientPlan(ask, asked, _json_params(asked))


def _retry_params(plan: ClientPlan | None, first: CreateMessageResult | None) -> CreateMessageRequestParams | None:
    """The retry complete_json will send after ``first``, or None (no first answer, a good one, or no text,
    which fails the plan before any retry)."""
    if plan is None or first is None:
        return None
    try:
        text = sampled_text(_answer_text(first))
    except (RuntimeError, LLMError):
        return None
    retry = json_retry(plan.asked, text, plan.ask.schema, plan.ask.name)
    return None if retry is None else _json_params(retry)


PlanResolver = Callable[..., Awaitable[ClientPlan | None]]


def plan_resolvers(plan: PlanResolver) -> tuple[Callable[..., Awaitable[Sample | None]],
                                                Callable[..., Awaitable[Sample | None]]]:
    """The question and retry resolvers over a tool's ``plan`` resolver (see the module docstring)."""

    async def plan_question(ready: Annotated[ClientPlan | None, Resolve(plan)]) -> Sample | None:
        return None if ready is None else _sample(ready.params)

    async def plan_retry(ready: Annotated[ClientPlan | None, Resolve(plan)],
                         first: Annotated[CreateMessageResult | None, Resolve(plan_question)]) -> Sample | None:
        params = _retry_params(ready, first)
        return None if params is None else _sample(params)

    return plan_question, plan_retry


def _reach(ctx: Context[Any, Any]) -> tuple[bool, bool, str]:
    """Whether the client's LLM can be asked on this connection, whether it is 2026-07-28, and why (not)."""
    try:
        declared = bool(ctx.session.check_client_capability(ClientCapabilities(sampling=SamplingCapability())))
    except Exception:  # noqa: BLE001 - capability probing must never fail the tool call
        declared = False
    version = ctx.protocol_version or ""
    modern = bool(version) and is_version_at_least(version, _MODERN_PROTOCOL)
    if not declared:
        return False, modern, "the MCP client did not declare the sampling capability"
    if modern:
        return True, modern, f"the MCP client offers sampling ({version}: asked for the plan before the call)"
    if getattr(ctx.session, "can_send_request", False):
        return True, modern, "the MCP client offers sampling"
    return False, modern, ("the MCP client declared sampling, but this connection has no way to ask it (a legacy "
                           "session over stateless or JSON-response HTTP); reconnect over stdio or stateful HTTP")


async def _never(messages: list[ChatMessage], temperature: float, max_tokens: int, stop: list[str] | None) -> str:
    raise LLMError("sampling: only provider selection may use this provider", provider=CallbackProvider.name)


def sampling_gate(ctx: Context[Any, Any], timeout: float) -> CallbackProvider:
    """The client's LLM as provider selection sees it, for the pure ``client_plan`` (it is never asked)."""
    available, _modern, reason = _reach(ctx)
    return CallbackProvider(_never, available=available, reason=reason, timeout=timeout)


def sampling_provider(ctx: Context[Any, Any], timeout: float, plan: ClientPlan | None = None,
                      first: CreateMessageResult | None = None,
                      retry: CreateMessageResult | None = None) -> CallbackProvider:
    """The client's LLM for the tool body: the prepared answers, then (legacy only) the back-channel."""
    available, modern, reason = _reach(ctx)
    prepared: dict[str, CreateMessageResult] = {}
    if plan is not None and first is not None:
        prepared[_digest(plan.params)] = first
        retry_params = _retry_params(plan, first)
        if retry_params is not None and retry is not None:
            prepared[_digest(retry_params)] = retry
    session = ctx.session

    async def sample(messages: list[ChatMessage], temperature: float, max_tokens: int, stop: list[str] | None) -> str:
        params = _params(messages, temperature, max_tokens, stop)
        answer = prepared.get(_digest(params))
        if answer is not None:
            return _answer_text(answer)
        if modern:
            raise LLMError("sampling: on this connection the client's LLM is asked once, for the plan, before the "
                           "call; this request (free-form YAML or a fix round) cannot reach it. Use "
                           "ai.agent.llm_mode 'plan', or provider 'ollama' or 'openai'.",
                           provider=CallbackProvider.name)
        with warnings.catch_warnings():
            # Deprecated in the 2026-07-28 protocol, but the way to reach the client's LLM on older ones.
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            result = await session.create_message(params.messages, max_tokens=max_tokens,
                                                  system_prompt=params.system_prompt, temperature=temperature,
                                                  stop_sequences=stop)
        return _answer_text(result)

    return CallbackProvider(sample, available=available, reason=reason, timeout=timeout)

"""Chat providers behind one interface, provider selection, and YAML extraction from LLM replies.

Providers: Ollama (``llm_ollama``, the official ``ollama`` SDK), OpenAI or any OpenAI-compatible server
(``llm_openai``, the official ``openai`` SDK), the connected MCP client's own LLM through a callback
(sampling, :class:`CallbackProvider`), and an "offline" marker whose work is done by the deterministic
composer elsewhere. The engine never imports ``mcp``: the MCP layer hands a plain async callback to
:class:`CallbackProvider`.

Every provider offers ``chat`` (free text) and ``complete_json`` (an object that follows a JSON schema;
see ``llm_json.strict_json_schema`` for turning a pydantic model into one).

Every failure becomes :class:`LLMError` (or :class:`LLMUnavailable` when the provider cannot be used at
all) whose message says what failed, where, and how to fix it. API keys never appear in messages or logs.
This module is the import surface: callers keep importing the names below from ``server.llm``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

from .base import (
    PROBE_TIMEOUT_S,
    ROLES,
    ChatMessage,
    ChatProvider,
    ChatReply,
    LLMError,
    LLMUnavailable,
    check_messages,
    normalize_base_url,
    snippet,
)
from .extract import TEMPLATE_KEYS, extract_yaml
from .json_output import (
    checked_json,
    schema_instructions,
    strict_json_schema,
)

if TYPE_CHECKING:
    from .ollama_provider import OllamaProvider
    from .openai_provider import OpenAIProvider


def __getattr__(name: str) -> Any:
    # The SDK-backed providers load on first use: importing ``openai`` and ``ollama`` costs a few hundred
    # milliseconds of every start-up, and a server on the offline composer or sampling never needs them.
    if name == "OllamaProvider":
        from .ollama_provider import OllamaProvider

        return OllamaProvider
    if name == "OpenAIProvider":
        from .openai_provider import OpenAIProvider

        return OpenAIProvider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "PROBE_TIMEOUT_S",
    "PROVIDER_CHOICES",
    "ROLES",
    "TEMPLATE_KEYS",
    "CallbackProvider",
    "ChatMessage",
    "ChatProvider",
    "ChatReply",
    "LLMError",
    "LLMUnavailable",
    "OfflineProvider",
    "OllamaProvider",
    "OpenAIProvider",
    "JSON_MAX_TOKENS",
    "JSON_TEMPERATURE",
    "SamplingFn",
    "checked_json",
    "extract_yaml",
    "json_messages",
    "json_retry",
    "normalize_base_url",
    "sampled_text",
    "select_provider",
    "strict_json_schema",
]

log = logging.getLogger(__name__)


# What CallbackProvider.complete_json sends unless told otherwise; the MCP layer asks the plan question up front
# (the SDK's Resolve/Sample flow) and must render it exactly as the provider would.
JSON_TEMPERATURE = 0.0
JSON_MAX_TOKENS = 1024


def sampled_text(text: object) -> str:
    """The client's answer as text, or the LLMError saying it brought none."""
    if not isinstance(text, str) or not text.strip():
        raise LLMError(
            f"sampling: the MCP client returned no text (got {type(text).__name__}). "
            "The client's model may not return text content; use another provider.",
            provider=CallbackProvider.name,
        )
    return text


def json_messages(messages: list[ChatMessage], schema: dict[str, Any], name: str) -> list[ChatMessage]:
    """A structured request for a model without a schema parameter: the schema goes into the prompt."""
    return [*messages, ChatMessage("system", schema_instructions(schema, name))]


def json_retry(asked: list[ChatMessage], text: str, schema: dict[str, Any], name: str) -> list[ChatMessage] | None:
    """None when ``text`` answers ``asked`` with JSON that follows ``schema``; else the one retry, which shows
    the model its answer and what was wrong with it."""
    try:
        checked_json(text, schema, provider=CallbackProvider.name, name=name)
        return None
    except LLMError as first:
        problem = str(first).removeprefix(f"{CallbackProvider.name}: ")
    log.info("llm sampling: structured answer for %s rejected, retrying once: %s", name, problem)
    return [
        *asked,
        ChatMessage("assistant", text),
        ChatMessage("user", f"That answer was rejected: {problem} Answer again with only the corrected JSON object."),
    ]


SamplingFn = Callable[[list[ChatMessage], float, int, "list[str] | None"], Awaitable[str]]


class CallbackProvider:
    """The MCP client's own LLM, reached through a callback the MCP layer supplies."""

    name = "sampling"

    def __init__(
        self,
        fn: SamplingFn,
        *,
        available: bool = True,
        reason: str = "",
        model: str = "client",
        timeout: float = 120.0,
    ):
        self._fn = fn
        self._available = available
        self._reason = reason or (
            "the MCP client supports sampling" if available else "the MCP client does not support sampling"
        )
        self.model = model
        self.timeout = timeout

    async def chat(
        self,
        messages: list[ChatMessage],
        *,
        temperature: float = 0.2,
        max_tokens: int = 2048,
        stop: list[str] | None = None,
    ) -> ChatReply:
        check_messages(messages, self.name)
        if not self._available:
            raise LLMUnavailable(f"sampling: {self._reason}", provider=self.name)
        started = time.perf_counter()
        try:
            with anyio.fail_after(self.timeout):
                text = await self._fn(messages, temperature, max_tokens, stop)
        except TimeoutError:
            raise LLMError(
                f"sampling: the MCP client's LLM did not answer within {self.timeout:g} s. "
                "Retry, or use provider 'ollama', 'openai' or 'offline'.",
                provider=self.name,
            ) from None
        except LLMError:
            raise
        except Exception as exc:
            raise LLMError(
                f"sampling: the MCP client's LLM request failed ({exc.__class__.__name__}: {snippet(str(exc))}). "
                "The client may have declined; use provider 'ollama', 'openai' or 'offline'.",
                provider=self.name,
            ) from exc
        text = sampled_text(text)
        latency = time.perf_counter() - started
        log.info("llm chat provider=sampling model=%s latency_s=%.2f", self.model, latency)
        return ChatReply(text=text, provider=self.name, model=self.model, latency_s=latency)

    async def complete_json(
        self,
        messages: list[ChatMessage],
        schema: dict[str, Any],
        *,
        name: str,
        temperature: float = JSON_TEMPERATURE,
        max_tokens: int = JSON_MAX_TOKENS,
    ) -> dict[str, Any]:
        """Sampling has no schema parameter: the schema goes into the prompt, the answer is validated,
        and one retry shows the model what was wrong with its first answer."""
        asked = json_messages(messages, schema, name)
        text = (await self.chat(asked, temperature=temperature, max_tokens=max_tokens)).text
        retry = json_retry(asked, text, schema, name)
        if retry is not None:
            text = (await self.chat(retry, temperature=temperature, max_tokens=max_tokens)).text
        return checked_json(text, schema, provider=self.name, name=name)

    async def available(self) -> tuple[bool, str]:
        return self._available, self._reason

    async def aclose(self) -> None:
        return None


class OfflineProvider:
    """Marks the deterministic path: the composer, not an LLM, produces the template."""

    name = "offline"
    model = "deterministic"

    def _no_llm(self) -> LLMUnavailable:
        return LLMUnavailable(
            "offline: there is no LLM in offline mode; the deterministic composer builds the template. "
            "(Internal error if you see this: callers must branch on provider.name == 'offline'.)",
            provider=self.name,
        )

    async def chat(
        self,
        messages: list[ChatMessage],
        *,
        temperature: float = 0.2,
        max_tokens: int = 2048,
        stop: list[str] | None = None,
    ) -> ChatReply:
        raise self._no_llm()

    async def complete_json(
        self, messages: list[ChatMessage], schema: dict[str, Any], *, name: str
    ) -> dict[str, Any]:
        raise self._no_llm()

    async def available(self) -> tuple[bool, str]:
        return True, "deterministic composer"

    async def aclose(self) -> None:
        return None


PROVIDER_CHOICES = ("auto", "ollama", "openai", "sampling", "offline")

_NOT_CONFIGURED = {
    "ollama": "not configured (set ai.ollama.base_url / OLLAMA_HOST)",
    "openai": "not configured (set OPENAI_API_KEY or ai.openai.base_url)",
    "sampling": "not offered: the MCP client did not declare the sampling capability",
}


async def select_provider(
    choice: str,
    *,
    ollama: OllamaProvider | None,
    openai: OpenAIProvider | None,
    sampling: CallbackProvider | None,
) -> tuple[ChatProvider, list[str]]:
    """Pick the provider for ``choice``; returns it and why each earlier candidate was skipped.

    ``auto`` tries ollama → openai → sampling → offline. An explicit choice that
    cannot be used raises :class:`LLMUnavailable`: switching silently would hand
    the user a different model than they asked for.
    """
    wanted = (choice or "auto").strip().lower()
    if wanted not in PROVIDER_CHOICES:
        raise LLMError(f"unknown LLM provider {choice!r}; choose one of {', '.join(PROVIDER_CHOICES)}")
    candidates: dict[str, ChatProvider | None] = {"ollama": ollama, "openai": openai, "sampling": sampling}
    if wanted == "offline":
        return OfflineProvider(), []
    if wanted != "auto":
        provider = candidates[wanted]
        if provider is None:
            reason = _NOT_CONFIGURED[wanted]
        else:
            ok, reason = await provider.available()
            if ok:
                return provider, []
        raise LLMUnavailable(
            f"LLM provider {wanted!r} was requested but cannot be used: {reason}. "
            "Fix that, or choose provider 'auto' (first available) or 'offline' (deterministic, no LLM).",
            provider=wanted,
        )
    skipped: list[str] = []
    for name, provider in candidates.items():
        if provider is None:
            skipped.append(f"{name}: {_NOT_CONFIGURED[name]}")
            continue
        ok, reason = await provider.available()
        if ok:
            log.info("llm provider auto-selected: %s (%s); skipped: %s", name, reason, skipped or "none")
            return provider, skipped
        skipped.append(f"{name}: {reason}")
    log.info("llm provider auto-selected: offline; skipped: %s", skipped)
    return OfflineProvider(), skipped

"""What every chat provider shares: messages, replies, errors, the provider protocol, small helpers.

Imports nothing from the other ``llm_*`` modules, so they can all build on it without a cycle.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import re
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

_log = logging.getLogger(__name__)

ROLES = frozenset({"system", "user", "assistant"})
PROBE_TIMEOUT_S = 2.0
_ERROR_SNIPPET = 300


@dataclass
class ChatMessage:
    role: str  # "system" | "user" | "assistant"
    content: str

    def as_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@dataclass
class ChatReply:
    text: str
    provider: str
    model: str
    latency_s: float
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    @classmethod
    def logged(cls, text: str, *, provider: str, model: str, latency_s: float, prompt_tokens: Any = None,
               completion_tokens: Any = None) -> ChatReply:
        """The reply, with its one log line: every provider reports latency and tokens the same way."""
        reply = cls(text, provider, model, latency_s, int_or_none(prompt_tokens), int_or_none(completion_tokens))
        _log.info("llm chat provider=%s model=%s latency_s=%.2f prompt_tokens=%s completion_tokens=%s",
                  provider, model, latency_s, reply.prompt_tokens, reply.completion_tokens)
        return reply


class LLMError(RuntimeError):
    """A chat call failed; the message says what, where and how to fix it."""

    def __init__(self, message: str, *, provider: str | None = None):
        super().__init__(message)
        self.provider = provider


class LLMUnavailable(LLMError):
    """The provider cannot be used at all (unreachable, no key, model absent)."""


@runtime_checkable
class ChatProvider(Protocol):
    name: str
    model: str

    async def chat(
        self,
        messages: list[ChatMessage],
        *,
        temperature: float = 0.2,
        max_tokens: int = 2048,
        stop: list[str] | None = None,
    ) -> ChatReply: ...

    async def complete_json(
        self, messages: list[ChatMessage], schema: dict[str, Any], *, name: str
    ) -> dict[str, Any]: ...

    async def available(self) -> tuple[bool, str]: ...

    async def aclose(self) -> None: ...


def check_messages(messages: list[ChatMessage], provider: str) -> None:
    if not messages:
        raise LLMError(
            f"{provider}: no messages to send (internal error: build a prompt first)", provider=provider
        )
    for m in messages:
        if m.role not in ROLES:
            raise LLMError(
                f"{provider}: message role {m.role!r} is not one of {sorted(ROLES)}", provider=provider
            )


def snippet(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= _ERROR_SNIPPET else text[:_ERROR_SNIPPET] + "…"


def error_detail(response: Any) -> str:
    """The server's own error text from an httpx/httpx2 response: Ollama and OpenAI put it under "error"."""
    if response is None:
        return "no response body"
    try:
        body = response.json()
    except (ValueError, UnicodeDecodeError):
        return snippet(response.text)
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            return snippet(str(err.get("message") or err))
        if err:
            return snippet(str(err))
        if body.get("detail"):  # FastAPI-based servers (llama-cpp-python) answer {"detail": ...}
            return snippet(str(body["detail"]))
    return snippet(response.text)


def int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def current_loop() -> object | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def normalize_base_url(url: str) -> str:
    """Accept OLLAMA_HOST-style values (``0.0.0.0:11434``, ``host``) as well as full URLs."""
    url = url.strip().rstrip("/")
    if not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", url):
        url = "http://" + url
    # 0.0.0.0 is a listen address; connecting to it fails on some systems.
    return re.sub(r"^(https?://)0\.0\.0\.0(?=[:/]|$)", r"\g<1>127.0.0.1", url)


def is_loopback(url: str) -> bool:
    """Proxy variables meant for the internet must not capture a local Ollama or llama.cpp server."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False

"""Ollama's native chat API through the official ``ollama`` SDK.

The SDK reads ``OLLAMA_HOST`` (and ``OLLAMA_API_KEY`` for hosted Ollama) and takes a JSON schema as
``format`` for structured output. This module bounds every call by ``timeout`` (the SDK's default is none)
and maps its errors onto our advice messages.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

import anyio
import httpx
import ollama
import pydantic

from .base import (
    PROBE_TIMEOUT_S,
    ChatMessage,
    ChatReply,
    LLMError,
    LLMUnavailable,
    check_messages,
    current_loop,
    is_loopback,
    normalize_base_url,
    snippet,
)
from .json_output import checked_json

log = logging.getLogger(__name__)

DEFAULT_OLLAMA_URL = "http://localhost:11434"
DEFAULT_OLLAMA_MODEL = "llama3.1:8b"


def _ollama_tagged(name: str) -> str:
    """``llama3.1`` and ``llama3.1:latest`` name the same model."""
    name = name.strip()
    for prefix in ("registry.ollama.ai/library/", "library/"):
        name = name.removeprefix(prefix)
    return name if ":" in name.rsplit("/", 1)[-1] else name + ":latest"


class OllamaProvider:
    """Ollama's native chat API (non-streaming)."""

    name = "ollama"

    def __init__(
        self,
        base_url: str | None = None,
        model: str = DEFAULT_OLLAMA_MODEL,
        *,
        timeout: float = 120.0,
        num_ctx: int | None = 8192,
    ):
        # The SDK's own convention: OLLAMA_HOST when nothing was configured.
        self.base_url = normalize_base_url(base_url or os.environ.get("OLLAMA_HOST") or DEFAULT_OLLAMA_URL)
        self.model = model
        self.timeout = float(timeout)
        # Ollama's default context (2-4k tokens) silently truncates a prompt that
        # carries three grounding templates; ask for enough room explicitly.
        self.num_ctx = num_ctx
        self._client: ollama.AsyncClient | None = None
        self._loop: object | None = None

    def _sdk(self) -> ollama.AsyncClient:
        # A client is bound to the event loop that opened its connections (see OpenAIProvider._sdk).
        loop = current_loop()
        if self._client is None or self._loop is not loop:
            self._client = ollama.AsyncClient(
                host=self.base_url,
                timeout=httpx.Timeout(self.timeout, connect=min(10.0, self.timeout)),
                trust_env=not is_loopback(self.base_url),
            )
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        if self._client is not None and self._loop is current_loop():
            await self._client.close()
        self._client = None

    @property
    def _fix_unreachable(self) -> str:
        return (
            f"Start Ollama (`ollama serve`) or point OLLAMA_HOST / ai.ollama.base_url at it "
            f"(now {self.base_url}); or use provider 'offline'."
        )

    async def _chat(self, messages: list[ChatMessage], options: dict[str, Any], fmt: Any) -> tuple[Any, float]:
        check_messages(messages, self.name)
        if self.num_ctx:
            options["num_ctx"] = self.num_ctx
        where = f"{self.base_url}/api/chat"
        started = time.perf_counter()
        try:
            with anyio.fail_after(self.timeout + 1):  # the SDK's httpx timeout is per read; bound the call too
                response = await self._sdk().chat(
                    model=self.model,
                    messages=[m.as_dict() for m in messages],
                    stream=False,
                    options=options,
                    format=fmt,
                )
        except (TimeoutError, httpx.TimeoutException):
            raise LLMError(
                f"ollama: timed out after {self.timeout:g} s waiting for a reply from {where} (model {self.model}). "
                "Raise the ollama timeout, use a smaller model, or ask for less output.",
                provider=self.name,
            ) from None
        except (ConnectionError, httpx.TransportError) as exc:
            raise LLMUnavailable(
                f"ollama: cannot reach {where} ({type(exc).__name__}). {self._fix_unreachable}",
                provider=self.name,
            ) from None
        except ollama.ResponseError as exc:
            detail = snippet(str(exc.error))
            if exc.status_code == 404:
                raise LLMUnavailable(
                    f"ollama: model {self.model!r} is not available at {self.base_url} "
                    f"({detail}). Run `ollama pull {self.model}` or set ai.ollama.model.",
                    provider=self.name,
                ) from None
            raise LLMError(
                f"ollama: {where} failed with HTTP {exc.status_code}: {detail}. "
                "Check the Ollama server log; retry, or use another provider.",
                provider=self.name,
            ) from None
        except (ValueError, TypeError, pydantic.ValidationError) as exc:
            raise LLMError(
                f"ollama: the reply from {where} is not an Ollama chat response ({type(exc).__name__}). "
                "Check that the base URL points at Ollama 0.1.14 or later (not a proxy or web page).",
                provider=self.name,
            ) from None
        return response, time.perf_counter() - started

    def _reply(self, response: Any, latency: float) -> ChatReply:
        content = getattr(getattr(response, "message", None), "content", None)
        if not isinstance(content, str):
            raise LLMError(
                f"ollama: reply from {self.base_url}/api/chat has no message.content. "
                "Is this an Ollama server of version 0.1.14 or later?",
                provider=self.name,
            )
        if not content.strip():
            raise LLMError(
                f"ollama: model {self.model} returned an empty reply (done_reason "
                f"{getattr(response, 'done_reason', None)!r}). Retry, or raise max_tokens.",
                provider=self.name,
            )
        return ChatReply.logged(content, provider=self.name, model=str(getattr(response, "model", None) or self.model), latency_s=latency,
                                prompt_tokens=getattr(response, "prompt_eval_count", None),
                                completion_tokens=getattr(response, "eval_count", None))

    async def chat(
        self,
        messages: list[ChatMessage],
        *,
        temperature: float = 0.2,
        max_tokens: int = 2048,
        stop: list[str] | None = None,
    ) -> ChatReply:
        options: dict[str, Any] = {"temperature": temperature, "num_predict": max_tokens}
        if stop:
            options["stop"] = list(stop)
        response, latency = await self._chat(messages, options, None)
        return self._reply(response, latency)

    async def complete_json(
        self,
        messages: list[ChatMessage],
        schema: dict[str, Any],
        *,
        name: str,
        temperature: float = 0.0,
        max_tokens: int = 1024,
    ) -> dict[str, Any]:
        """JSON that follows ``schema``: Ollama constrains decoding to a JSON schema given as ``format``."""
        options: dict[str, Any] = {"temperature": temperature, "num_predict": max_tokens}
        response, latency = await self._chat(messages, options, schema)
        return checked_json(self._reply(response, latency).text, schema, provider=self.name, name=name)

    async def list_models(self) -> list[str]:
        """Model names the server has pulled; raises :class:`LLMUnavailable` when unreachable."""
        try:
            with anyio.fail_after(PROBE_TIMEOUT_S):
                listed = await self._sdk().list()
        except (TimeoutError, ConnectionError, httpx.HTTPError) as exc:
            raise LLMUnavailable(
                f"ollama: not reachable at {self.base_url} ({type(exc).__name__}). {self._fix_unreachable}",
                provider=self.name,
            ) from None
        except ollama.ResponseError as exc:
            raise LLMUnavailable(
                f"ollama: {self.base_url}/api/tags answered HTTP {exc.status_code}; "
                f"is {self.base_url} an Ollama server?",
                provider=self.name,
            ) from None
        except (ValueError, TypeError, pydantic.ValidationError):
            raise LLMUnavailable(
                f"ollama: {self.base_url}/api/tags did not return a model list; is {self.base_url} an Ollama server?",
                provider=self.name,
            ) from None
        names: list[str] = []
        for entry in listed.models:
            # Ollama sends both "name" and "model"; the SDK keeps "model" (and extra keys as attributes).
            names.extend(str(v) for v in (getattr(entry, "name", None), entry.model) if v)
        return list(dict.fromkeys(names))

    async def available(self) -> tuple[bool, str]:
        try:
            names = await self.list_models()
        except LLMUnavailable as exc:
            return False, str(exc).removeprefix("ollama: ")
        wanted = _ollama_tagged(self.model)
        if any(_ollama_tagged(n) == wanted for n in names):
            return True, f"model {self.model} present at {self.base_url}"
        pulled = ", ".join(sorted(set(names))[:10]) or "none"
        return False, (
            f"model {self.model} is not pulled at {self.base_url} (pulled: {pulled}); "
            f"run `ollama pull {self.model}` or set ai.ollama.model"
        )

"""OpenAI chat completions through the official ``openai`` SDK, for OpenAI, Azure OpenAI and compatible servers.

The SDK brings retries that honour ``Retry-After``, typed errors, proxies from the environment and
``OPENAI_BASE_URL``/``OPENAI_ORG_ID``/``OPENAI_PROJECT_ID``. This module maps its errors onto our advice
messages and bounds every call: each attempt by ``timeout``, the whole call (retries included) by
:attr:`OpenAIProvider.deadline_s`. The API key is handed to the SDK and never put into a message.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any
from urllib.parse import urlsplit

import anyio
import openai
from openai.types.chat import ChatCompletion

from .base import (
    PROBE_TIMEOUT_S,
    ChatMessage,
    ChatReply,
    LLMError,
    LLMUnavailable,
    check_messages,
    current_loop,
    error_detail,
    is_loopback,
    normalize_base_url,
    snippet,
)
from .json_output import checked_json, openai_schema_name

log = logging.getLogger(__name__)

DEFAULT_OPENAI_URL = "https://api.openai.com/v1"
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
DEFAULT_AZURE_API_VERSION = "2024-10-21"
# The SDK waits up to two minutes when a server sends Retry-After; this caps the whole call instead.
MAX_RETRY_WAIT_S = 10.0
_AZURE_HOSTS = (".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com")
# A compatible server that does not check keys still gets a syntactically valid bearer token.
_NO_KEY = "unused"


def _is_azure(url: str) -> bool:
    return (urlsplit(url).hostname or "").endswith(_AZURE_HOSTS)


def _refuses_response_format(exc: openai.APIStatusError) -> bool:
    """llama-cpp-python's server answers json_schema with HTTP 500 "Input should be 'text' or 'json_object'"."""
    text = error_detail(exc.response) + " " + (exc.response.text if exc.response is not None else "")
    return "response_format" in text or "json_schema" in text or "'json_object'" in text


class OpenAIProvider:
    """OpenAI chat completions, or any server that speaks that API (vLLM, llama.cpp, LM Studio, Azure…)."""

    name = "openai"

    def __init__(
        self,
        api_key: str | None = None,
        model: str = DEFAULT_OPENAI_MODEL,
        *,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 1,
    ):
        self.api_key = api_key or None
        # The SDK's own convention: OPENAI_BASE_URL when nothing was configured.
        configured = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.custom_base_url = bool(configured)
        self.base_url = normalize_base_url(configured or DEFAULT_OPENAI_URL)
        self.azure = _is_azure(self.base_url)
        self.model = model
        self.timeout = float(timeout)
        self.max_retries = max(0, int(max_retries))
        self.deadline_s = self.timeout * (self.max_retries + 1) + MAX_RETRY_WAIT_S
        # "json_schema" until a server refuses it, then "json_object" + schema (llama-cpp-python).
        self.json_mode = "json_schema"
        self._client: openai.AsyncOpenAI | None = None
        self._loop: object | None = None

    def __repr__(self) -> str:  # keep the key out of reprs and tracebacks
        return f"OpenAIProvider(model={self.model!r}, base_url={self.base_url!r}, key={'set' if self.api_key else 'unset'})"

    # --- the SDK client ---------------------------------------------------------------------------

    def _sdk(self) -> openai.AsyncOpenAI:
        # A client is bound to the event loop that opened its connections; a new loop (tests, CLI runs)
        # needs a new client rather than a broken pool.
        loop = current_loop()
        if self._client is None or self._loop is not loop:
            http = openai.DefaultAsyncHttpxClient(trust_env=not is_loopback(self.base_url))
            common: dict[str, Any] = {
                "api_key": self.api_key or _NO_KEY,
                "timeout": openai.Timeout(self.timeout, connect=min(10.0, self.timeout)),
                "max_retries": self.max_retries,
                "http_client": http,
            }
            if self.azure:
                root = self.base_url.split("/openai", 1)[0]
                self._client = openai.AsyncAzureOpenAI(
                    azure_endpoint=root,
                    api_version=os.environ.get("OPENAI_API_VERSION") or DEFAULT_AZURE_API_VERSION,
                    **common,
                )
            else:
                self._client = openai.AsyncOpenAI(base_url=self.base_url, **common)
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        if self._client is not None and self._loop is current_loop():
            await self._client.close()
        self._client = None

    # --- advice ------------------------------------------------------------------------------------

    @property
    def _fix_unreachable(self) -> str:
        if self.custom_base_url:
            return f"Check that the OpenAI-compatible server at {self.base_url} is running (ai.openai.base_url / OPENAI_BASE_URL)."
        return "Check the network connection or proxy settings (HTTPS_PROXY), or use provider 'ollama' or 'offline'."

    def _no_key(self) -> LLMUnavailable:
        return LLMUnavailable(
            "openai: no API key. Set OPENAI_API_KEY (or ai.openai.api_key), or ai.openai.base_url / "
            "OPENAI_BASE_URL for a local OpenAI-compatible server.",
            provider=self.name,
        )

    def _map_error(self, exc: openai.OpenAIError) -> LLMError:
        """The SDK's typed errors → our messages: what failed, where, how to fix it."""
        where = f"{self.base_url}/chat/completions"
        if isinstance(exc, openai.APITimeoutError):
            return LLMError(
                f"openai: timed out after {self.timeout:g} s waiting for {where} (model {self.model}, "
                f"{self.max_retries + 1} attempt(s)). Raise ai.openai.timeout, use a smaller model, or ask for less output.",
                provider=self.name,
            )
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc
            return LLMUnavailable(
                f"openai: cannot reach {self.base_url} ({type(cause).__name__}). {self._fix_unreachable}",
                provider=self.name,
            )
        if isinstance(exc, openai.APIStatusError):
            status, detail = exc.status_code, error_detail(exc.response)
            if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
                return LLMUnavailable(
                    f"openai: {where} rejected the credentials (HTTP {status}: {detail}). "
                    "Check OPENAI_API_KEY (or ai.openai.api_key) and the key's permissions.",
                    provider=self.name,
                )
            if isinstance(exc, openai.NotFoundError):
                return LLMUnavailable(
                    f"openai: {where} answered HTTP 404 ({detail}). Check ai.openai.model ({self.model}) "
                    "and that ai.openai.base_url ends with the API prefix (e.g. /v1).",
                    provider=self.name,
                )
            if isinstance(exc, openai.RateLimitError):
                wait = exc.response.headers.get("retry-after") if exc.response is not None else None
                after = f" The server asks to wait {wait} s." if wait else ""
                return LLMError(
                    f"openai: rate limited or out of quota at {where} (HTTP 429: {detail}).{after} "
                    "Retry later, check the account's quota, or use another provider.",
                    provider=self.name,
                )
            if status >= 500:
                return LLMError(
                    f"openai: server error at {where} (HTTP {status}: {detail}). This is on the provider's side; "
                    "retry later or use another provider.",
                    provider=self.name,
                )
            return LLMError(
                f"openai: request to {where} failed (HTTP {status}: {detail}). Check ai.openai.model and the request size.",
                provider=self.name,
            )
        return LLMError(
            f"openai: the reply from {where} could not be read ({type(exc).__name__}: {snippet(str(exc))}). "
            f"Is {self.base_url} an OpenAI-compatible API?",
            provider=self.name,
        )

    # --- calls -------------------------------------------------------------------------------------

    async def _create(self, messages: list[ChatMessage], **params: Any) -> tuple[Any, float]:
        check_messages(messages, self.name)
        if not self.api_key and not self.custom_base_url:
            raise self._no_key()
        started = time.perf_counter()
        try:
            with anyio.fail_after(self.deadline_s):
                response = await self._sdk().chat.completions.create(
                    model=self.model, messages=[m.as_dict() for m in messages], **params  # type: ignore[misc]
                )
        except TimeoutError:
            raise LLMError(
                f"openai: no answer from {self.base_url} within {self.deadline_s:g} s, retries included "
                f"(model {self.model}). Retry later, raise ai.openai.timeout, or use another provider.",
                provider=self.name,
            ) from None
        except openai.APIStatusError:
            raise  # complete_json inspects refusals of response_format before mapping
        except openai.OpenAIError as exc:
            raise self._map_error(exc) from None
        return response, time.perf_counter() - started

    def _reply(self, response: Any, latency: float) -> ChatReply:
        where = f"{self.base_url}/chat/completions"
        if not isinstance(response, ChatCompletion):
            raise LLMError(
                f"openai: {where} returned something that is not a chat completion: {snippet(str(response))!r}. "
                f"Check that the base URL points at an OpenAI-compatible API (not a proxy or web page).",
                provider=self.name,
            )
        choices = response.choices if isinstance(response.choices, list) else []
        first = choices[0] if choices else None
        message = getattr(first, "message", None)
        if first is None or message is None:
            raise LLMError(
                f"openai: reply from {where} has no choices[0].message. Is {self.base_url} an OpenAI-compatible API?",
                provider=self.name,
            )
        content = message.content
        if not isinstance(content, str) or not content.strip():
            refusal = getattr(message, "refusal", None)
            why = f"refusal: {snippet(str(refusal))}" if refusal else f"finish_reason {first.finish_reason!r}"
            raise LLMError(
                f"openai: model {self.model} returned no text ({why}). Rephrase the request or retry.",
                provider=self.name,
            )
        usage = response.usage
        return ChatReply.logged(content, provider=self.name, model=str(response.model or self.model), latency_s=latency,
                                prompt_tokens=getattr(usage, "prompt_tokens", None),
                                completion_tokens=getattr(usage, "completion_tokens", None))

    async def chat(
        self,
        messages: list[ChatMessage],
        *,
        temperature: float = 0.2,
        max_tokens: int = 2048,
        stop: list[str] | None = None,
    ) -> ChatReply:
        params: dict[str, Any] = {"temperature": temperature, "max_tokens": max_tokens}
        if stop:
            params["stop"] = list(stop)
        try:
            response, latency = await self._create(messages, **params)
        except openai.APIStatusError as exc:
            raise self._map_error(exc) from None
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
        """JSON that follows ``schema``: strict json_schema, or json_object + schema where that is refused."""
        params: dict[str, Any] = {"temperature": temperature, "max_tokens": max_tokens}
        if self.json_mode == "json_schema":
            strict = {"name": openai_schema_name(name), "schema": schema, "strict": True}
            try:
                response, latency = await self._create(
                    messages, response_format={"type": "json_schema", "json_schema": strict}, **params
                )
                return checked_json(self._reply(response, latency).text, schema, provider=self.name, name=name)
            except openai.APIStatusError as exc:
                if not _refuses_response_format(exc):
                    raise self._map_error(exc) from None
                # Remembered for this provider: the next structured call goes straight to json_object.
                self.json_mode = "json_object"
                log.info(
                    "llm openai: %s refused response_format json_schema (HTTP %s); using json_object + schema",
                    self.base_url,
                    exc.status_code,
                )
        try:
            response, latency = await self._create(
                messages, response_format={"type": "json_object", "schema": schema}, **params
            )
        except openai.APIStatusError as exc:
            raise self._map_error(exc) from None
        return checked_json(self._reply(response, latency).text, schema, provider=self.name, name=name)

    async def available(self) -> tuple[bool, str]:
        if self.api_key:
            # A network probe per call would cost latency and quota; a bad key shows up on first use.
            return True, f"API key set ({self.base_url})"
        if not self.custom_base_url:
            return (
                False,
                "no API key: set OPENAI_API_KEY, or ai.openai.base_url / OPENAI_BASE_URL for a local compatible server",
            )
        try:
            with anyio.fail_after(PROBE_TIMEOUT_S + 1):
                await self._sdk().with_options(timeout=PROBE_TIMEOUT_S, max_retries=0).models.list()
        except (openai.AuthenticationError, openai.PermissionDeniedError):
            return False, f"{self.base_url} requires an API key: set OPENAI_API_KEY"
        except openai.APIStatusError as exc:
            return False, f"{self.base_url}/models answered HTTP {exc.status_code}; check ai.openai.base_url"
        except (openai.OpenAIError, TimeoutError) as exc:
            return False, f"OpenAI-compatible server not reachable at {self.base_url} ({type(exc).__name__})"
        return True, f"OpenAI-compatible server at {self.base_url}"

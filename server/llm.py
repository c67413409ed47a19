"""Chat providers behind one interface, and YAML extraction from LLM replies.

Providers: Ollama (native ``/api/chat``), OpenAI or any OpenAI-compatible
server (``/chat/completions``), the connected MCP client's own LLM through a
callback (sampling), and an "offline" marker whose work is done by the
deterministic composer elsewhere. The engine never imports ``mcp``: the MCP
layer hands a plain async callback to :class:`CallbackProvider`.

Every failure becomes :class:`LLMError` (or :class:`LLMUnavailable` when the
provider cannot be used at all) whose message says what failed, where, and
how to fix it. API keys never appear in messages or logs.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import anyio
import httpx

from server.yamlsafe import YamlError, parse_yaml

log = logging.getLogger(__name__)

ROLES = frozenset({"system", "user", "assistant"})
TEMPLATE_KEYS = ("image", "target", "disk", "systemConfig", "packageRepositories", "metadata")
# Keys that make a mapping "a template" rather than some other YAML the model emitted.
_CORE_KEYS = frozenset({"image", "target", "systemConfig", "disk"})

DEFAULT_OLLAMA_URL = "http://localhost:11434"
DEFAULT_OLLAMA_MODEL = "llama3.1:8b"
DEFAULT_OPENAI_URL = "https://api.openai.com/v1"
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
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

    async def available(self) -> tuple[bool, str]: ...

    async def aclose(self) -> None: ...


def _check_messages(messages: list[ChatMessage], provider: str) -> None:
    if not messages:
        raise LLMError(
            f"{provider}: no messages to send (internal error: build a prompt first)", provider=provider
        )
    for m in messages:
        if m.role not in ROLES:
            raise LLMError(
                f"{provider}: message role {m.role!r} is not one of {sorted(ROLES)}", provider=provider
            )


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _ERROR_SNIPPET else text[:_ERROR_SNIPPET] + "…"


def _error_detail(response: httpx.Response) -> str:
    """The server's own error text: both Ollama and OpenAI put it under "error"."""
    try:
        body = response.json()
    except ValueError:
        return _snippet(response.text)
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            return _snippet(str(err.get("message") or err))
        if err:
            return _snippet(str(err))
    return _snippet(response.text)


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _current_loop() -> object | None:
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


class _HttpProvider:
    """One reusable httpx client per provider (connection reuse matters for Ollama)."""

    name = "http"
    model = ""

    def __init__(self, base_url: str, timeout: float, headers: dict[str, str] | None = None):
        self.base_url = normalize_base_url(base_url)
        self.timeout = float(timeout)
        self._headers = headers or {}
        self._client: httpx.AsyncClient | None = None
        self._loop: object | None = None

    def _http(self) -> httpx.AsyncClient:
        # A client is bound to the event loop that opened its connections; a new
        # loop (tests, CLI runs) needs a new client rather than a broken pool.
        loop = _current_loop()
        if self._client is None or self._client.is_closed or self._loop is not loop:
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout, connect=min(10.0, self.timeout)),
                headers=self._headers,
            )
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        if self._client is not None and not self._client.is_closed and self._loop is _current_loop():
            await self._client.aclose()
        self._client = None

    def _url(self, path: str) -> str:
        return f"{self.base_url}/{path.lstrip('/')}"

    async def _post(self, path: str, body: dict[str, Any], fix_unreachable: str) -> httpx.Response:
        url = self._url(path)
        try:
            return await self._http().post(url, json=body)
        except httpx.TimeoutException as exc:
            kind = "connecting to" if isinstance(exc, httpx.ConnectTimeout) else "waiting for a reply from"
            raise LLMError(
                f"{self.name}: timed out after {self.timeout:g} s {kind} {url} (model {self.model}). "
                f"Raise the {self.name} timeout, use a smaller model, or ask for less output.",
                provider=self.name,
            ) from None
        except httpx.TransportError as exc:
            raise LLMUnavailable(
                f"{self.name}: cannot reach {url} ({exc.__class__.__name__}: {exc}). {fix_unreachable}",
                provider=self.name,
            ) from None

    def _json(self, response: httpx.Response) -> dict[str, Any]:
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise LLMError(
                f"{self.name}: {response.request.url} returned HTTP {response.status_code} with a body that "
                f"is not a JSON object: {_snippet(response.text)!r}. Check that the base URL points at "
                f"the {self.name} API (not a proxy or web page).",
                provider=self.name,
            )
        return body


class OllamaProvider(_HttpProvider):
    """Ollama's native chat API (non-streaming)."""

    name = "ollama"

    def __init__(
        self,
        base_url: str = DEFAULT_OLLAMA_URL,
        model: str = DEFAULT_OLLAMA_MODEL,
        *,
        timeout: float = 120.0,
        num_ctx: int | None = 8192,
    ):
        super().__init__(base_url, timeout)
        self.model = model
        # Ollama's default context (2-4k tokens) silently truncates a prompt that
        # carries three grounding templates; ask for enough room explicitly.
        self.num_ctx = num_ctx

    @property
    def _fix_unreachable(self) -> str:
        return (
            f"Start Ollama (`ollama serve`) or point OLLAMA_HOST / ai.ollama.base_url at it "
            f"(now {self.base_url}); or use provider 'offline'."
        )

    async def chat(
        self,
        messages: list[ChatMessage],
        *,
        temperature: float = 0.2,
        max_tokens: int = 2048,
        stop: list[str] | None = None,
    ) -> ChatReply:
        _check_messages(messages, self.name)
        options: dict[str, Any] = {"temperature": temperature, "num_predict": max_tokens}
        if stop:
            options["stop"] = list(stop)
        if self.num_ctx:
            options["num_ctx"] = self.num_ctx
        body = {
            "model": self.model,
            "messages": [m.as_dict() for m in messages],
            "stream": False,
            "options": options,
        }
        started = time.perf_counter()
        response = await self._post("/api/chat", body, self._fix_unreachable)
        latency = time.perf_counter() - started
        if response.status_code == 404:
            raise LLMUnavailable(
                f"ollama: model {self.model!r} is not available at {self.base_url} "
                f"({_error_detail(response)}). Run `ollama pull {self.model}` or set ai.ollama.model.",
                provider=self.name,
            )
        if response.status_code >= 400:
            raise LLMError(
                f"ollama: {self.base_url}/api/chat failed with HTTP {response.status_code}: "
                f"{_error_detail(response)}. Check the Ollama server log; retry, or use another provider.",
                provider=self.name,
            )
        data = self._json(response)
        message = data.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            raise LLMError(
                f"ollama: reply from {self.base_url}/api/chat has no message.content "
                f"(got keys {sorted(data)}). Is this an Ollama server of version 0.1.14 or later?",
                provider=self.name,
            )
        if not content.strip():
            raise LLMError(
                f"ollama: model {self.model} returned an empty reply (done_reason "
                f"{data.get('done_reason')!r}). Retry, or raise max_tokens.",
                provider=self.name,
            )
        reply = ChatReply(
            text=content,
            provider=self.name,
            model=str(data.get("model") or self.model),
            latency_s=latency,
            prompt_tokens=_int_or_none(data.get("prompt_eval_count")),
            completion_tokens=_int_or_none(data.get("eval_count")),
        )
        log.info(
            "llm chat provider=ollama model=%s latency_s=%.2f prompt_tokens=%s completion_tokens=%s",
            reply.model,
            latency,
            reply.prompt_tokens,
            reply.completion_tokens,
        )
        return reply

    async def list_models(self) -> list[str]:
        """Model names the server has pulled; raises :class:`LLMUnavailable` when unreachable."""
        url = self._url("/api/tags")
        try:
            response = await self._http().get(url, timeout=PROBE_TIMEOUT_S)
        except httpx.HTTPError as exc:
            raise LLMUnavailable(
                f"ollama: not reachable at {self.base_url} ({exc.__class__.__name__}). {self._fix_unreachable}",
                provider=self.name,
            ) from None
        if response.status_code != 200:
            raise LLMUnavailable(
                f"ollama: {url} answered HTTP {response.status_code}; is {self.base_url} an Ollama server?",
                provider=self.name,
            )
        try:
            data = response.json()
        except ValueError:
            data = None
        models = data.get("models") if isinstance(data, dict) else None
        if not isinstance(models, list):
            raise LLMUnavailable(
                f"ollama: {url} did not return a model list; is {self.base_url} an Ollama server?",
                provider=self.name,
            )
        names: list[str] = []
        for entry in models:
            if isinstance(entry, dict):
                names.extend(str(entry[k]) for k in ("name", "model") if entry.get(k))
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


def _ollama_tagged(name: str) -> str:
    """``llama3.1`` and ``llama3.1:latest`` name the same model."""
    name = name.strip()
    for prefix in ("registry.ollama.ai/library/", "library/"):
        name = name.removeprefix(prefix)
    return name if ":" in name.rsplit("/", 1)[-1] else name + ":latest"


class OpenAIProvider(_HttpProvider):
    """OpenAI chat completions, or any server that speaks that API (vLLM, llama.cpp, LM Studio…)."""

    name = "openai"

    def __init__(
        self,
        api_key: str | None = None,
        model: str = DEFAULT_OPENAI_MODEL,
        *,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retry_wait_s: float = 5.0,
    ):
        self.api_key = api_key or None
        self.custom_base_url = bool(base_url)
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        super().__init__(base_url or DEFAULT_OPENAI_URL, timeout, headers)
        self.model = model
        self.max_retry_wait_s = max_retry_wait_s

    def __repr__(self) -> str:  # keep the key out of reprs and tracebacks
        return f"OpenAIProvider(model={self.model!r}, base_url={self.base_url!r}, key={'set' if self.api_key else 'unset'})"

    @property
    def _fix_unreachable(self) -> str:
        if self.custom_base_url:
            return (
                f"Check that the OpenAI-compatible server at {self.base_url} is running (ai.openai.base_url)."
            )
        return "Check the network connection or proxy settings, or use provider 'ollama' or 'offline'."

    async def chat(
        self,
        messages: list[ChatMessage],
        *,
        temperature: float = 0.2,
        max_tokens: int = 2048,
        stop: list[str] | None = None,
    ) -> ChatReply:
        _check_messages(messages, self.name)
        if not self.api_key and not self.custom_base_url:
            raise LLMUnavailable(
                "openai: no API key. Set OPENAI_API_KEY (or ai.openai.api_key), or ai.openai.base_url "
                "for a local OpenAI-compatible server.",
                provider=self.name,
            )
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [m.as_dict() for m in messages],
            "temperature": temperature,
            "max_tokens": max_tokens,
        }
        if stop:
            body["stop"] = list(stop)
        started = time.perf_counter()
        response = await self._post("/chat/completions", body, self._fix_unreachable)
        if response.status_code == 429:
            wait = _retry_after(response)
            if wait is None or wait <= self.max_retry_wait_s:
                wait = 1.0 if wait is None else max(wait, 0.0)
                log.warning("llm openai rate limited (HTTP 429); retrying once in %.1f s", wait)
                await anyio.sleep(wait)
                response = await self._post("/chat/completions", body, self._fix_unreachable)
        latency = time.perf_counter() - started
        self._raise_for_status(response)
        data = self._json(response)
        choices = data.get("choices")
        first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
        message = first.get("message") if first else None
        content = message.get("content") if isinstance(message, dict) else None
        if first is None or not isinstance(message, dict):
            raise LLMError(
                f"openai: reply from {self.base_url}/chat/completions has no choices[0].message "
                f"(got keys {sorted(data)}). Is {self.base_url} an OpenAI-compatible API?",
                provider=self.name,
            )
        if not isinstance(content, str) or not content.strip():
            refusal = message.get("refusal")
            why = (
                f"refusal: {_snippet(str(refusal))}"
                if refusal
                else f"finish_reason {first.get('finish_reason')!r}"
            )
            raise LLMError(
                f"openai: model {self.model} returned no text ({why}). Rephrase the request or retry.",
                provider=self.name,
            )
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        reply = ChatReply(
            text=content,
            provider=self.name,
            model=str(data.get("model") or self.model),
            latency_s=latency,
            prompt_tokens=_int_or_none(usage.get("prompt_tokens")),
            completion_tokens=_int_or_none(usage.get("completion_tokens")),
        )
        log.info(
            "llm chat provider=openai model=%s latency_s=%.2f prompt_tokens=%s completion_tokens=%s",
            reply.model,
            latency,
            reply.prompt_tokens,
            reply.completion_tokens,
        )
        return reply

    def _raise_for_status(self, response: httpx.Response) -> None:
        status = response.status_code
        if status < 400:
            return
        where = f"{self.base_url}/chat/completions"
        detail = _error_detail(response)
        if status == 401 or status == 403:
            raise LLMUnavailable(
                f"openai: {where} rejected the credentials (HTTP {status}: {detail}). "
                "Check OPENAI_API_KEY (or ai.openai.api_key) and the key's permissions.",
                provider=self.name,
            )
        if status == 404:
            raise LLMUnavailable(
                f"openai: {where} answered HTTP 404 ({detail}). Check ai.openai.model ({self.model}) "
                "and that ai.openai.base_url ends with the API prefix (e.g. /v1).",
                provider=self.name,
            )
        if status == 429:
            wait = _retry_after(response)
            after = f" The server asks to wait {wait:g} s." if wait is not None else ""
            raise LLMError(
                f"openai: rate limited or out of quota at {where} (HTTP 429: {detail}).{after} "
                "Retry later, check the account's quota, or use another provider.",
                provider=self.name,
            )
        if status >= 500:
            raise LLMError(
                f"openai: server error at {where} (HTTP {status}: {detail}). This is on the provider's side; "
                "retry later or use another provider.",
                provider=self.name,
            )
        raise LLMError(
            f"openai: request to {where} failed (HTTP {status}: {detail}). Check ai.openai.model and the request size.",
            provider=self.name,
        )

    async def available(self) -> tuple[bool, str]:
        if self.api_key:
            # A network probe per call would cost latency and quota; a bad key shows up on first use.
            return True, f"API key set ({self.base_url})"
        if not self.custom_base_url:
            return (
                False,
                "no API key: set OPENAI_API_KEY, or ai.openai.base_url for a local compatible server",
            )
        url = self._url("/models")
        try:
            response = await self._http().get(url, timeout=PROBE_TIMEOUT_S)
        except httpx.HTTPError as exc:
            return (
                False,
                f"OpenAI-compatible server not reachable at {self.base_url} ({exc.__class__.__name__})",
            )
        if response.status_code in (401, 403):
            return False, f"{self.base_url} requires an API key: set OPENAI_API_KEY"
        if response.status_code != 200:
            return False, f"{url} answered HTTP {response.status_code}; check ai.openai.base_url"
        return True, f"OpenAI-compatible server at {self.base_url}"


def _retry_after(response: httpx.Response) -> float | None:
    """Seconds to wait per ``retry-after-ms`` / ``Retry-After`` (seconds or HTTP date)."""
    ms = response.headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000.0
        except ValueError:
            pass
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


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
        _check_messages(messages, self.name)
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
                f"sampling: the MCP client's LLM request failed ({exc.__class__.__name__}: {_snippet(str(exc))}). "
                "The client may have declined; use provider 'ollama', 'openai' or 'offline'.",
                provider=self.name,
            ) from exc
        if not isinstance(text, str) or not text.strip():
            raise LLMError(
                f"sampling: the MCP client returned no text (got {type(text).__name__}). "
                "The client's model may not return text content; use another provider.",
                provider=self.name,
            )
        latency = time.perf_counter() - started
        log.info("llm chat provider=sampling model=%s latency_s=%.2f", self.model, latency)
        return ChatReply(text=text, provider=self.name, model=self.model, latency_s=latency)

    async def available(self) -> tuple[bool, str]:
        return self._available, self._reason

    async def aclose(self) -> None:
        return None


class OfflineProvider:
    """Marks the deterministic path: the composer, not an LLM, produces the template."""

    name = "offline"
    model = "deterministic"

    async def chat(
        self,
        messages: list[ChatMessage],
        *,
        temperature: float = 0.2,
        max_tokens: int = 2048,
        stop: list[str] | None = None,
    ) -> ChatReply:
        raise LLMUnavailable(
            "offline: there is no LLM in offline mode; the deterministic composer builds the template. "
            "(Internal error if you see this: callers must branch on provider.name == 'offline'.)",
            provider=self.name,
        )

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


# --- YAML extraction -------------------------------------------------------------------------

_FENCE_OPEN = re.compile(
    r"^(?P<indent>[ \t]*)(?:.*?[\s:])?(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w.+-]*)[^`~]*$"
)
_KEY_LINE = re.compile(r"^(?P<indent>[ ]*)(?P<key>" + "|".join(TEMPLATE_KEYS) + r")[ \t]*:(?:[ \t]|$)")
_ANY_KEY_LINE = re.compile(r"^[a-z_][\w.-]*[ \t]*:(?:[ \t]|$)")
_BARE_KEY = re.compile(r"^[\w.-]+[ \t]*:[ \t]*(?:#.*)?$")
_TOP_KEY_LINE = re.compile(r"^(?:" + "|".join(TEMPLATE_KEYS) + r")[ \t]*:(?:[ \t]|$)")
_YAML_LANGS = frozenset({"yaml", "yml"})


@dataclass
class _Candidate:
    text: str
    fenced: bool
    lang: str
    open_end: bool = False  # runs to the end of the reply (an unclosed fence): maybe truncated
    partial_tail: bool = False  # ...and the reply ends mid-line, so the last line is incomplete


def _fenced_blocks(lines: list[str]) -> list[_Candidate]:
    blocks: list[_Candidate] = []
    i = 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m.group("fence"), m.group("lang").lower()
        # Fences in markdown lists are indented; the content shares that indent.
        indent = len(m.group("indent")) if lines[i].lstrip().startswith(fence) else 0
        body: list[str] = []
        j = i + 1
        closed = False
        while j < len(lines):
            stripped = lines[j].strip()
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
                closed = True
                break
            if stripped.endswith(fence) and not stripped.startswith(fence[0]):
                # "  - vim```": the model glued the closing fence to the last line.
                body.append(lines[j].rstrip()[: -len(fence)])
                closed = True
                break
            body.append(lines[j])
            j += 1
        body = [_dedent_line(line, indent) for line in body]
        partial = not closed and bool(body) and bool(body[-1].strip())
        blocks.append(_Candidate("\n".join(body), True, lang, open_end=not closed, partial_tail=partial))
        i = j + 1
    return blocks


def _dedent_line(line: str, indent: int) -> str:
    if indent and line[:indent].strip() == "":
        return line[indent:]
    return line


def _unfenced_runs(lines: list[str]) -> list[_Candidate]:
    """Contiguous YAML blocks that start at a template key, outside any fence logic."""
    runs: list[_Candidate] = []
    i = 0
    while i < len(lines):
        m = _KEY_LINE.match(lines[i])
        if not m:
            i += 1
            continue
        indent = len(m.group("indent"))
        block = [lines[i][indent:]]
        # What the last line at the margin was: a bare "key:" or a "- " item may be followed
        # by "- " items at the margin; anything else followed by one is a prose bullet list.
        last_margin = "opener" if _BARE_KEY.match(block[0]) else "key"
        j = i + 1
        while j < len(lines):
            line = lines[j]
            if not line.strip():
                block.append("")
                j += 1
                continue
            lead = len(line) - len(line.lstrip(" \t"))
            if lead < indent:
                break
            rest = line[indent:]
            if lead > indent or rest.startswith(("\t", "#", "---")):
                block.append(rest)
            elif rest.startswith("- ") or rest == "-":
                if last_margin == "key" or not block[-1].strip():
                    break
                block.append(rest)
                last_margin = "item"
            elif _KEY_LINE.match(rest) or _ANY_KEY_LINE.match(rest):
                # Template keys are lowerCamel; "Note:" or "Explanation:" at the margin starts prose.
                block.append(rest)
                last_margin = "opener" if _BARE_KEY.match(rest) else "key"
            else:
                break
            j += 1
        while block and not block[-1].strip():
            block.pop()
        at_end = j >= len(lines)
        runs.append(_Candidate("\n".join(block), False, "", at_end, at_end and bool(lines[-1].strip())))
        i = j
    return runs


def _parse_mapping(text: str) -> dict[str, Any] | None:
    try:
        data = parse_yaml(text).data
    except YamlError:
        return None
    return data if isinstance(data, dict) else None


def _template_score(data: dict[str, Any] | None) -> int:
    """How template-like a mapping is; sections must be structured ("image: the name…" is prose)."""
    if not data:
        return 0
    sections = [k for k, v in data.items() if k in TEMPLATE_KEYS and isinstance(v, dict | list)]
    return sum(1 for k in sections if k in _CORE_KEYS) * 10 + len(sections)


_EMPTY_OPENER = re.compile(r"^\s*(?:-\s*)?(?:[\w.-]+\s*:)?\s*(?:#.*)?$")


def _repair_truncated(text: str, partial_tail: bool, max_drop: int = 12) -> tuple[str, dict[str, Any]] | None:
    """A reply cut off by max_tokens: drop the incomplete last line, then whatever keeps it from parsing.

    Trailing ``key:`` lines whose content was cut away are dropped too, so a truncated section
    disappears instead of turning into a null that validation would misreport.
    """
    lines = text.rstrip("\n").split("\n")
    if partial_tail and len(lines) > 1:
        lines.pop()
    for _ in range(max_drop + 1):
        while lines and _EMPTY_OPENER.match(lines[-1]):
            lines.pop()
        if not lines:
            return None
        shorter = "\n".join(lines)
        data = _parse_mapping(shorter)
        if data is not None and _template_score(data):
            return shorter, data
        lines.pop()
    return None


def extract_yaml(text: str) -> str | None:
    """The YAML template inside an LLM reply, or None when the reply holds nothing YAML-like.

    Preference, best first:
      1. blocks (fenced or not) that parse to a mapping with template keys: the one with the most
         core keys (image/target/systemConfig/disk), then the longest; a truncated last block is
         repaired by dropping its incomplete tail lines;
      2. blocks that look like a template (a top-level template key) but do not parse: returned
         as-is, so validation can report the syntax error and the fix loop can repair it;
      3. a ```yaml / ```yml fence whose content is some other mapping (a fragment).
    Tabs are left alone (the validator reports them); Windows newlines become ``\\n``.
    """
    if not text or not text.strip():
        return None
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    lines = text.split("\n")
    candidates = _fenced_blocks(lines)
    candidates += _unfenced_runs(lines)
    stripped = text.strip()
    if stripped.startswith("{") and stripped.endswith("}"):
        candidates.append(_Candidate(stripped, False, "json"))

    valid: list[tuple[int, int, str]] = []
    broken: list[str] = []
    fragments: list[str] = []
    for cand in candidates:
        body = cand.text.strip("\n")
        if not body.strip():
            continue
        data = _parse_mapping(body)
        if cand.open_end and (cand.partial_tail or not _template_score(data)):
            repaired = _repair_truncated(body, cand.partial_tail)
            if repaired:
                body, data = repaired
        score = _template_score(data)
        if score:
            valid.append((score, len(body), body))
        elif data is None and any(_TOP_KEY_LINE.match(line) for line in body.split("\n")):
            if cand.fenced and cand.lang and cand.lang not in _YAML_LANGS:
                continue  # e.g. a shell snippet that happens to contain "image:"
            broken.append(body)
        elif data is not None and cand.fenced and cand.lang in _YAML_LANGS:
            fragments.append(body)
    if valid:
        best = max(valid, key=lambda v: (v[0], v[1]))
        return best[2].rstrip() + "\n"
    for group in (broken, fragments):
        if group:
            return max(group, key=len).rstrip() + "\n"
    return None

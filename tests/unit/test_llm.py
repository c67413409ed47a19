"""Chat providers against real HTTP servers on 127.0.0.1, provider selection, YAML extraction."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import yaml
from image_composer_mcp.server.llm.chat import (
    CallbackProvider,
    ChatMessage,
    LLMError,
    LLMUnavailable,
    OfflineProvider,
    OllamaProvider,
    OpenAIProvider,
    extract_yaml,
    normalize_base_url,
    select_provider,
    strict_json_schema,
)

from tests.conftest import UEFI_PARTITIONS


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def track() -> AsyncIterator[Callable[[Any], Any]]:
    """Close every provider a test opens, so no connection outlives its event loop."""
    opened: list[Any] = []

    def add(provider: Any) -> Any:
        opened.append(provider)
        return provider

    yield add
    for provider in opened:
        await provider.aclose()


# --- a scripted HTTP server -------------------------------------------------------------------


@dataclass
class Scripted:
    status: int = 200
    body: Any = None  # dict/list → JSON; str/bytes → sent raw
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    client_port: int


class FakeServer:
    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], list[Scripted]] = {}
        self.requests: list[Seen] = []
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, so client reuse is observable

            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw
                with fake.lock:
                    fake.requests.append(
                        Seen(
                            self.command,
                            self.path,
                            {k.lower(): v for k, v in self.headers.items()},
                            body,
                            self.client_address[1],
                        )
                    )
                    queue = fake.routes.get((self.command, self.path))
                    step = (
                        (queue.pop(0) if len(queue) > 1 else queue[0])
                        if queue
                        else Scripted(404, {"error": "no route"})
                    )
                if step.delay:
                    time.sleep(step.delay)
                if isinstance(step.body, (dict, list)):
                    payload = json.dumps(step.body).encode()
                    ctype = "application/json"
                else:
                    payload = step.body.encode() if isinstance(step.body, str) else (step.body or b"")
                    ctype = "text/html"
                try:
                    self.send_response(step.status)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(payload)))
                    for k, v in step.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = _handle
            do_POST = _handle

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def script(self, method: str, path: str, *steps: Scripted) -> None:
        self.routes[(method, path)] = list(steps)

    def bodies(self, path: str) -> list[Any]:
        return [r.body for r in self.requests if r.path == path]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    server = FakeServer()
    yield server
    server.close()


def _closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


MESSAGES = [
    ChatMessage("system", "You write OS Image Composer templates."),
    ChatMessage("user", "minimal edge"),
]


def _ollama_reply(text: str = "image:\n  name: x\n") -> dict[str, Any]:
    return {
        "model": "llama3.1:8b",
        "message": {"role": "assistant", "content": text},
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": 321,
        "eval_count": 45,
    }


def _openai_reply(text: str = "image:\n  name: x\n") -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }


# --- Ollama ------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_ollama_chat_sends_native_request_and_parses_reply(
    fake: FakeServer, track: Callable[[Any], Any]
) -> None:
    fake.script("POST", "/api/chat", Scripted(body=_ollama_reply("hello")))
    provider = track(OllamaProvider(fake.url + "/", "llama3.1:8b"))
    try:
        reply = await provider.chat(MESSAGES, temperature=0.1, max_tokens=512, stop=["```\n\n"])
        second = await provider.chat(MESSAGES)
    finally:
        await provider.aclose()
    assert (reply.text, reply.provider, reply.model) == ("hello", "ollama", "llama3.1:8b")
    assert (reply.prompt_tokens, reply.completion_tokens) == (321, 45)
    assert second.text == "hello"
    first_body, second_body = fake.bodies("/api/chat")
    assert first_body["model"] == "llama3.1:8b"
    assert first_body["stream"] is False
    assert first_body["messages"] == [
        {"role": "system", "content": "You write OS Image Composer templates."},
        {"role": "user", "content": "minimal edge"},
    ]
    assert first_body["options"]["temperature"] == 0.1
    assert first_body["options"]["num_predict"] == 512
    assert first_body["options"]["stop"] == ["```\n\n"]
    assert first_body["options"]["num_ctx"] == 8192
    assert "stop" not in second_body["options"]
    assert second_body["options"]["temperature"] == 0.2
    # One client per provider: both calls arrive over the same kept-alive connection.
    ports = {r.client_port for r in fake.requests}
    assert len(ports) == 1


@pytest.mark.anyio
async def test_ollama_server_error_is_llm_error_with_detail(
    fake: FakeServer, track: Callable[[Any], Any]
) -> None:
    fake.script("POST", "/api/chat", Scripted(500, {"error": "llama runner process has terminated"}))
    provider = track(OllamaProvider(fake.url))
    with pytest.raises(LLMError) as info:
        await provider.chat(MESSAGES)
    assert not isinstance(info.value, LLMUnavailable)
    assert "HTTP 500" in str(info.value) and "llama runner process has terminated" in str(info.value)


@pytest.mark.anyio
async def test_ollama_missing_model_says_pull(fake: FakeServer, track: Callable[[Any], Any]) -> None:
    fake.script(
        "POST", "/api/chat", Scripted(404, {"error": 'model "llama3.1:8b" not found, try pulling it first'})
    )
    with pytest.raises(LLMUnavailable, match=r"ollama pull llama3\.1:8b"):
        await track(OllamaProvider(fake.url)).chat(MESSAGES)


@pytest.mark.anyio
async def test_ollama_timeout(fake: FakeServer, track: Callable[[Any], Any]) -> None:
    fake.script("POST", "/api/chat", Scripted(body=_ollama_reply(), delay=1.5))
    provider = track(OllamaProvider(fake.url, timeout=0.3))
    with pytest.raises(LLMError, match="timed out after 0.3 s") as info:
        await provider.chat(MESSAGES)
    assert not isinstance(info.value, LLMUnavailable)


@pytest.mark.anyio
async def test_ollama_unreachable(track: Callable[[Any], Any]) -> None:
    url = _closed_port_url()
    with pytest.raises(LLMUnavailable, match="ollama serve") as info:
        await track(OllamaProvider(url)).chat(MESSAGES)
    assert url in str(info.value)
    ok, reason = await track(OllamaProvider(url)).available()
    assert ok is False and "not reachable" in reason


@pytest.mark.anyio
@pytest.mark.parametrize(
    "body", ["<html>502 Bad Gateway</html>", {"message": "no content key"}, {"done": True}, [1, 2]]
)
async def test_ollama_malformed_reply(fake: FakeServer, body: Any, track: Callable[[Any], Any]) -> None:
    fake.script("POST", "/api/chat", Scripted(200, body))
    with pytest.raises(LLMError) as info:
        await track(OllamaProvider(fake.url)).chat(MESSAGES)
    assert "ollama" in str(info.value)


@pytest.mark.anyio
async def test_ollama_available_checks_the_model(fake: FakeServer, track: Callable[[Any], Any]) -> None:
    fake.script(
        "GET",
        "/api/tags",
        Scripted(
            # Ollama lists each model under both keys; the SDK reads "model".
                body={"models": [{"name": "llama3.1:8b", "model": "llama3.1:8b"},
                                 {"name": "mistral:latest", "model": "mistral:latest"}]}
        ),
    )
    assert (await track(OllamaProvider(fake.url, "llama3.1:8b")).available())[0] is True
    assert (await track(OllamaProvider(fake.url, "mistral")).available())[0] is True  # ":latest" implied
    ok, reason = await track(OllamaProvider(fake.url, "qwen2.5:7b")).available()
    assert ok is False
    assert "ollama pull qwen2.5:7b" in reason and "llama3.1:8b" in reason
    ok, _ = await track(
        OllamaProvider(fake.url, "llama3.1")
    ).available()  # llama3.1:latest is not llama3.1:8b
    assert ok is False


@pytest.mark.anyio
async def test_ollama_available_on_a_server_that_is_not_ollama(
    fake: FakeServer, track: Callable[[Any], Any]
) -> None:
    fake.script("GET", "/api/tags", Scripted(200, "<html>hello</html>"))
    ok, reason = await track(OllamaProvider(fake.url)).available()
    assert ok is False and "Ollama server" in reason


# --- OpenAI ------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_openai_chat_sends_request_and_parses_reply(
    fake: FakeServer, track: Callable[[Any], Any]
) -> None:
    fake.script("POST", "/v1/chat/completions", Scripted(body=_openai_reply("done")))
    provider = track(OpenAIProvider("sk-test-secret", "gpt-4o-mini", base_url=fake.url + "/v1"))
    try:
        reply = await provider.chat(MESSAGES, temperature=0.0, max_tokens=300, stop=["END"])
    finally:
        await provider.aclose()
    assert (reply.text, reply.provider, reply.model) == ("done", "openai", "gpt-4o-mini-2024-07-18")
    assert (reply.prompt_tokens, reply.completion_tokens) == (100, 20)
    (seen,) = fake.requests
    assert seen.headers["authorization"] == "Bearer sk-test-secret"
    assert seen.body == {
        "model": "gpt-4o-mini",
        "messages": [m.as_dict() for m in MESSAGES],
        "temperature": 0.0,
        "max_tokens": 300,
        "stop": ["END"],
    }


@pytest.mark.anyio
async def test_openai_401_is_unavailable_and_hides_the_key(
    fake: FakeServer, track: Callable[[Any], Any]
) -> None:
    fake.script(
        "POST",
        "/chat/completions",
        Scripted(401, {"error": {"message": "Incorrect API key provided", "code": "x"}}),
    )
    provider = track(OpenAIProvider("sk-very-secret-key", base_url=fake.url))
    with pytest.raises(LLMUnavailable) as info:
        await provider.chat(MESSAGES)
    text = str(info.value)
    assert "Incorrect API key provided" in text and "OPENAI_API_KEY" in text
    assert "sk-very-secret-key" not in text and "sk-very-secret-key" not in repr(provider)


@pytest.mark.anyio
async def test_openai_429_retries_once_then_succeeds(fake: FakeServer, track: Callable[[Any], Any]) -> None:
    fake.script(
        "POST",
        "/chat/completions",
        Scripted(429, {"error": {"message": "Rate limit reached"}}, {"Retry-After": "0"}),
        Scripted(body=_openai_reply("after retry")),
    )
    reply = await track(OpenAIProvider("k", base_url=fake.url)).chat(MESSAGES)
    assert reply.text == "after retry"
    assert len(fake.bodies("/chat/completions")) == 2


@pytest.mark.anyio
async def test_openai_429_twice_fails_clearly(fake: FakeServer, track: Callable[[Any], Any]) -> None:
    fake.script(
        "POST", "/chat/completions", Scripted(429, {"error": {"message": "quota"}}, {"retry-after-ms": "10"})
    )
    with pytest.raises(LLMError, match="rate limited"):
        await track(OpenAIProvider("k", base_url=fake.url)).chat(MESSAGES)
    assert len(fake.bodies("/chat/completions")) == 2


@pytest.mark.anyio
async def test_openai_429_with_long_retry_after_does_not_wait(
    fake: FakeServer, track: Callable[[Any], Any]
) -> None:
    fake.script(
        "POST",
        "/chat/completions",
        Scripted(429, {"error": {"message": "slow down"}}, {"Retry-After": "3600"}),
    )
    # The SDK honours Retry-After up to two minutes; an hour is reported, not waited for.
    with pytest.raises(LLMError, match="wait 3600 s"):
        await track(OpenAIProvider("k", base_url=fake.url)).chat(MESSAGES)
    assert len(fake.bodies("/chat/completions")) == 1


@pytest.mark.anyio
async def test_openai_server_error(fake: FakeServer, track: Callable[[Any], Any]) -> None:
    fake.script("POST", "/chat/completions", Scripted(503, {"error": {"message": "overloaded"}}))
    with pytest.raises(LLMError, match=r"server error .*HTTP 503: overloaded") as info:
        await track(OpenAIProvider("k", base_url=fake.url)).chat(MESSAGES)
    assert not isinstance(info.value, LLMUnavailable)


@pytest.mark.anyio
@pytest.mark.parametrize(
    "body",
    ["{not json", {"choices": []}, {"choices": [{"message": {"content": None}, "finish_reason": "length"}]}],
)
async def test_openai_malformed_or_empty_reply(
    fake: FakeServer, body: Any, track: Callable[[Any], Any]
) -> None:
    fake.script("POST", "/chat/completions", Scripted(200, body))
    with pytest.raises(LLMError, match="openai"):
        await track(OpenAIProvider("k", base_url=fake.url)).chat(MESSAGES)


@pytest.mark.anyio
async def test_openai_timeout_and_unreachable(fake: FakeServer, track: Callable[[Any], Any]) -> None:
    fake.script("POST", "/chat/completions", Scripted(body=_openai_reply(), delay=1.5))
    with pytest.raises(LLMError, match="timed out"):
        await track(OpenAIProvider("k", base_url=fake.url, timeout=0.3)).chat(MESSAGES)
    with pytest.raises(LLMUnavailable, match="cannot reach"):
        await track(OpenAIProvider("k", base_url=_closed_port_url())).chat(MESSAGES)


@pytest.mark.anyio
async def test_openai_available(fake: FakeServer, track: Callable[[Any], Any]) -> None:
    assert (await track(OpenAIProvider("k")).available())[0] is True  # no network call with a key
    ok, reason = await track(OpenAIProvider(None)).available()
    assert ok is False and "OPENAI_API_KEY" in reason
    with pytest.raises(LLMUnavailable, match="OPENAI_API_KEY"):
        await track(OpenAIProvider(None)).chat(MESSAGES)
    fake.script("GET", "/v1/models", Scripted(body={"data": [{"id": "local-model"}]}))
    assert (await track(OpenAIProvider(None, "local-model", base_url=fake.url + "/v1")).available())[
        0
    ] is True
    ok, reason = await track(OpenAIProvider(None, base_url=_closed_port_url())).available()
    assert ok is False and "not reachable" in reason


# --- sampling, offline, selection ----------------------------------------------------------------


@pytest.mark.anyio
async def test_callback_provider_passes_arguments_and_wraps_errors() -> None:
    calls: list[tuple[Any, ...]] = []

    async def fn(
        messages: list[ChatMessage], temperature: float, max_tokens: int, stop: list[str] | None
    ) -> str:
        calls.append((messages, temperature, max_tokens, stop))
        return "image:\n  name: from-client\n"

    provider = CallbackProvider(fn, model="claude")
    reply = await provider.chat(MESSAGES, temperature=0.3, max_tokens=99, stop=["x"])
    assert (reply.text, reply.provider, reply.model) == (
        "image:\n  name: from-client\n",
        "sampling",
        "claude",
    )
    assert calls == [(MESSAGES, 0.3, 99, ["x"])]

    async def broken(*_: Any) -> str:
        raise RuntimeError("client declined")

    with pytest.raises(LLMError, match="client declined"):
        await CallbackProvider(broken).chat(MESSAGES)
    ok, reason = await CallbackProvider(fn, available=False, reason="client lacks sampling").available()
    assert (ok, reason) == (False, "client lacks sampling")


@pytest.mark.anyio
async def test_offline_provider() -> None:
    provider = OfflineProvider()
    assert await provider.available() == (True, "deterministic composer")
    with pytest.raises(LLMUnavailable):
        await provider.chat(MESSAGES)


async def _echo(*_: Any) -> str:
    return "x"


@pytest.mark.anyio
async def test_select_provider_auto_order(fake: FakeServer, track: Callable[[Any], Any]) -> None:
    tags = {"models": [{"name": "llama3.1:8b", "model": "llama3.1:8b"}]}
    fake.script("GET", "/api/tags", Scripted(body=tags))
    ollama_ok = track(OllamaProvider(fake.url))
    ollama_no_model = track(OllamaProvider(fake.url, "qwen2.5:7b"))
    openai_ok = track(OpenAIProvider("k"))
    openai_no_key = track(OpenAIProvider(None))
    sampling_ok = CallbackProvider(_echo)
    sampling_no = CallbackProvider(_echo, available=False, reason="client has no sampling capability")

    provider, skipped = await select_provider(
        "auto", ollama=ollama_ok, openai=openai_ok, sampling=sampling_ok
    )
    assert provider is ollama_ok and skipped == []

    provider, skipped = await select_provider(
        "auto", ollama=ollama_no_model, openai=openai_ok, sampling=sampling_ok
    )
    assert provider is openai_ok
    assert len(skipped) == 1 and skipped[0].startswith("ollama:") and "qwen2.5:7b" in skipped[0]

    provider, skipped = await select_provider("auto", ollama=None, openai=openai_no_key, sampling=sampling_ok)
    assert provider is sampling_ok and [s.split(":")[0] for s in skipped] == ["ollama", "openai"]

    provider, skipped = await select_provider(
        "AUTO", ollama=ollama_no_model, openai=None, sampling=sampling_no
    )
    assert provider.name == "offline"
    assert [s.split(":")[0] for s in skipped] == ["ollama", "openai", "sampling"]
    assert "client has no sampling capability" in skipped[2]


@pytest.mark.anyio
async def test_select_provider_explicit(fake: FakeServer, track: Callable[[Any], Any]) -> None:
    fake.script("GET", "/api/tags", Scripted(body={"models": []}))
    openai_ok = track(OpenAIProvider("k"))
    provider, skipped = await select_provider(
        "openai", ollama=track(OllamaProvider(fake.url)), openai=openai_ok, sampling=None
    )
    assert provider is openai_ok and skipped == []
    # An explicit choice never falls back silently, even when another provider would work.
    with pytest.raises(LLMUnavailable) as info:
        await select_provider(
            "ollama", ollama=track(OllamaProvider(fake.url)), openai=openai_ok, sampling=None
        )
    text = str(info.value)
    assert "'ollama'" in text and "ollama pull llama3.1:8b" in text and "offline" in text
    with pytest.raises(LLMUnavailable, match="'sampling'.*sampling capability"):
        await select_provider("sampling", ollama=None, openai=openai_ok, sampling=None)
    with pytest.raises(LLMUnavailable, match="OPENAI_API_KEY"):
        await select_provider("openai", ollama=None, openai=track(OpenAIProvider(None)), sampling=None)
    provider, _ = await select_provider("offline", ollama=None, openai=None, sampling=None)
    assert provider.name == "offline"
    with pytest.raises(LLMError, match="unknown LLM provider 'gpt'"):
        await select_provider("gpt", ollama=None, openai=None, sampling=None)


def test_normalize_base_url() -> None:
    assert normalize_base_url("0.0.0.0:11434") == "http://127.0.0.1:11434"
    assert normalize_base_url("http://ollama.internal:11434/") == "http://ollama.internal:11434"
    assert normalize_base_url("https://api.example.com/v1") == "https://api.example.com/v1"


def test_sync_callers_can_use_asyncio_run(fake: FakeServer) -> None:
    # The CLI calls providers from separate asyncio.run() loops; a stale client must not break that.
    import asyncio

    fake.script("POST", "/api/chat", Scripted(body=_ollama_reply("again")))
    provider = OllamaProvider(fake.url)

    async def once() -> str:
        try:
            return (await provider.chat(MESSAGES)).text
        finally:
            await provider.aclose()

    assert asyncio.run(once()) == "again"
    assert asyncio.run(once()) == "again"


# --- extract_yaml ------------------------------------------------------------------------------

TEMPLATE = """\
image:
  name: edge-minimal
  version: "1.0.0"

target:
  os: ubuntu
  dist: ubuntu24
  arch: x86_64
  imageType: raw

disk:
  name: edge
  size: 8GiB
  partitionTableType: gpt
  partitions:
""" + UEFI_PARTITIONS + """
systemConfig:
  name: edge
  description: Minimal edge image with docker
  packages:
    - openssh-server
    - docker.io
  kernel:
    version: "6.8"
    cmdline: "console=ttyS0"
"""


def _same_template(extracted: str | None, expected: str = TEMPLATE) -> bool:
    return extracted is not None and yaml.safe_load(extracted) == yaml.safe_load(expected)


def _indent(text: str, n: int) -> str:
    return "\n".join((" " * n + line) if line else line for line in text.split("\n"))


FRAGMENT = "disk:\n  size: 8GiB\n"
SHAPES: dict[str, str] = {
    "yaml fence with prose around": f"Here is your template:\n\n```yaml\n{TEMPLATE}```\n\nIt uses docker.io.",
    "yml fence": f"```yml\n{TEMPLATE}```",
    "plain fence": f"Sure!\n```\n{TEMPLATE}```\nLet me know if you need changes.",
    "uppercase YAML fence": f"```YAML\n{TEMPLATE}```",
    "tilde fence": f"~~~yaml\n{TEMPLATE}~~~\n",
    "long fence": f"````yaml\n{TEMPLATE}````\n",
    "bash fence then yaml fence": f"First install:\n```bash\nsudo apt install docker.io\n```\nThen:\n```yaml\n{TEMPLATE}```\n",
    "fragment fence then full fence": f"The change:\n```yaml\n{FRAGMENT}```\nFull template:\n```yaml\n{TEMPLATE}```\n",
    "full fence then fragment fence": f"```yaml\n{TEMPLATE}```\nThe part I changed:\n```yaml\n{FRAGMENT}```\n",
    "no fence, prose before and after": f"Here is the template you asked for:\n\n{TEMPLATE}\nThis template includes docker.\nNote: adjust the disk size.",
    "pure yaml with leading comment": f"# Edge template\n{TEMPLATE}",
    "windows newlines": f"Here it is:\r\n```yaml\r\n{TEMPLATE.replace(chr(10), chr(13) + chr(10))}```\r\n",
    "fence indented in a list": f"1. Save this as edge.yml:\n\n   ```yaml\n{_indent(TEMPLATE, 3)}\n   ```\n2. Build it.",
    "closing fence glued to last line": f"```yaml\n{TEMPLATE.rstrip()}```",
    "document start marker": f"```yaml\n---\n{TEMPLATE}```",
    "explanation heading after unfenced yaml": f"{TEMPLATE}\nExplanation:\n- Added docker.io\n",
    "json reply": json.dumps(yaml.safe_load(TEMPLATE)),
    "unfenced yaml then a prose bullet list": f"{TEMPLATE}\n- Added docker.io\n- Set the disk to 8GiB\n",
    "bold changes list after fence": f"Updated:\n\n```yaml\n{TEMPLATE}```\n\n**Changes:**\n- Added `docker.io`\n",
    "margin sequences": "image:\n  name: edge-minimal\n  version: '1.0.0'\ntarget:\n  os: ubuntu\n  dist: ubuntu24\n"
    "  arch: x86_64\n  imageType: raw\ndisk:\n  name: edge\n  size: 8GiB\n  partitionTableType: gpt\n  partitions:\n"
    "  - id: boot\n    type: esp\n    start: 1MiB\n    end: 513MiB\n    fsType: fat32\n    mountPoint: /boot/efi\n"
    "  - id: rootfs\n    type: linux-root-amd64\n    start: 513MiB\n    end: '0'\n    fsType: ext4\n    mountPoint: /\n"
    "systemConfig:\n  name: edge\n  description: Minimal edge image with docker\n  packages:\n  - openssh-server\n"
    "  - docker.io\n  kernel:\n    version: '6.8'\n    cmdline: console=ttyS0\n\nThat's it.",
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_extract_yaml_shapes(shape: str) -> None:
    extracted = extract_yaml(SHAPES[shape])
    assert _same_template(extracted), extracted
    assert "\r" not in extracted  # type: ignore[operator]


def test_extract_yaml_truncated_reply_drops_the_partial_tail() -> None:
    # max_tokens cut the reply inside "docker.io": the half package name must not survive.
    cut = TEMPLATE.index("    - docker.io") + len("    - dock")
    extracted = extract_yaml("Here you go:\n```yaml\n" + TEMPLATE[:cut])
    assert extracted is not None
    data = yaml.safe_load(extracted)
    assert data["image"]["name"] == "edge-minimal"
    assert data["disk"]["size"] == "8GiB"
    assert data["systemConfig"]["packages"] == ["openssh-server"]


def test_extract_yaml_truncated_inside_a_new_section_drops_the_empty_section() -> None:
    cut = TEMPLATE.index('version: "6.8"') + len('version: "6.')
    data = yaml.safe_load(extract_yaml("```yaml\n" + TEMPLATE[:cut]) or "")
    assert data["systemConfig"]["packages"] == ["openssh-server", "docker.io"]
    assert "kernel" not in data["systemConfig"]


def test_extract_yaml_unclosed_fence_ending_at_a_line_keeps_everything() -> None:
    assert _same_template(extract_yaml("```yaml\n" + TEMPLATE))


def test_extract_yaml_prefers_most_complete_of_two_templates() -> None:
    small = "image:\n  name: tiny\ntarget:\n  os: ubuntu\n"
    extracted = extract_yaml(f"Option A:\n```yaml\n{small}```\nOption B:\n```yaml\n{TEMPLATE}```")
    assert _same_template(extracted)


def test_extract_yaml_returns_broken_template_for_the_fix_loop() -> None:
    broken = "image:\n  name: x\n target: bad-indent\n  os: ubuntu\n"
    extracted = extract_yaml(f"```yaml\n{broken}```")
    assert extracted == broken


def test_extract_yaml_leaves_tabs_alone() -> None:
    with_tab = "image:\n\tname: x\ntarget:\n  os: ubuntu\n"
    assert extract_yaml(f"```yaml\n{with_tab}```") == with_tab


def test_extract_yaml_top_level_sequence_at_the_margin() -> None:
    reply = (
        "Here:\nimage:\n  name: x\ntarget:\n  os: ubuntu\npackageRepositories:\n- codename: noble\n"
        "  url: http://a\n- codename: extra\n  url: http://b\nExplanation: two repositories."
    )
    data = yaml.safe_load(extract_yaml(reply) or "")
    assert [r["codename"] for r in data["packageRepositories"]] == ["noble", "extra"]
    assert set(data) == {"image", "target", "packageRepositories"}


def test_extract_yaml_fragment_only() -> None:
    assert extract_yaml(f"Change just this:\n```yaml\n{FRAGMENT}```") == FRAGMENT


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "   \n  ",
        "I'm sorry, but I can't help with that request.",
        "To build the image run:\n```bash\nsudo ./os-image-composer build image.yml\n```\n",
        "The template needs: an image name, a target and a disk layout.",
        "```python\nprint('image: x')\n```",
        "Use this.\n\nimage: the name of the image\n\nThen pick a target.",
    ],
)
def test_extract_yaml_nothing_yaml_like(reply: str) -> None:
    assert extract_yaml(reply) is None


# --- structured output (complete_json) ----------------------------------------------------------

SPEC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"os": {"type": "string"}, "disk_gib": {"type": ["integer", "null"]}},
    "required": ["os", "disk_gib"],
    "additionalProperties": False,
}
SPEC_JSON = '{"os": "ubuntu", "disk_gib": 16}'
# What llama-cpp-python 0.3.x answers for response_format json_schema (checked against the real server).
LLAMA_CPP_REFUSAL = {
    "error": {
        "message": "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
        "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}]",
        "type": "internal_server_error",
    }
}


@pytest.mark.anyio
async def test_openai_complete_json_sends_strict_json_schema(fake: FakeServer, track: Callable[[Any], Any]) -> None:
    fake.script("POST", "/v1/chat/completions", Scripted(body=_openai_reply(SPEC_JSON)))
    provider = track(OpenAIProvider("sk-test", "gpt-4o-mini", base_url=fake.url + "/v1"))
    assert await provider.complete_json(MESSAGES, SPEC_SCHEMA, name="request spec") == {"os": "ubuntu", "disk_gib": 16}
    (seen,) = fake.requests
    assert seen.body == {
        "model": "gpt-4o-mini",
        "messages": [m.as_dict() for m in MESSAGES],
        "temperature": 0.0,
        "max_tokens": 1024,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "request_spec", "schema": SPEC_SCHEMA, "strict": True},
        },
    }


@pytest.mark.anyio
async def test_openai_complete_json_falls_back_to_json_object_and_remembers(
    fake: FakeServer, track: Callable[[Any], Any]
) -> None:
    fake.script(
        "POST",
        "/v1/chat/completions",
        Scripted(500, LLAMA_CPP_REFUSAL),
        Scripted(500, LLAMA_CPP_REFUSAL),  # the SDK retries a 500 once before we see it
        Scripted(body=_openai_reply(SPEC_JSON)),
    )
    provider = track(OpenAIProvider(None, "smollm2", base_url=fake.url + "/v1"))
    assert await provider.complete_json(MESSAGES, SPEC_SCHEMA, name="spec") == {"os": "ubuntu", "disk_gib": 16}
    assert await provider.complete_json(MESSAGES, SPEC_SCHEMA, name="spec") == {"os": "ubuntu", "disk_gib": 16}
    formats = [b["response_format"] for b in fake.bodies("/v1/chat/completions")]
    assert [f["type"] for f in formats] == ["json_schema", "json_schema", "json_object", "json_object"]
    # llama.cpp's grammar-constrained form: the schema rides beside "json_object".
    assert formats[2] == {"type": "json_object", "schema": SPEC_SCHEMA}
    assert provider.json_mode == "json_object"


@pytest.mark.anyio
async def test_openai_complete_json_other_errors_do_not_switch_format(
    fake: FakeServer, track: Callable[[Any], Any]
) -> None:
    fake.script("POST", "/chat/completions", Scripted(503, {"error": {"message": "overloaded"}}))
    provider = track(OpenAIProvider("k", base_url=fake.url))
    with pytest.raises(LLMError, match="HTTP 503: overloaded"):
        await provider.complete_json(MESSAGES, SPEC_SCHEMA, name="spec")
    assert provider.json_mode == "json_schema"
    assert {b["response_format"]["type"] for b in fake.bodies("/chat/completions")} == {"json_schema"}


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("not json at all", "is not a JSON object"),
        ('{"os": "ubuntu"}', "does not follow the schema: \\(top level\\): 'disk_gib' is a required property"),
        ('{"os": 7, "disk_gib": 16}', "os: 7 is not of type 'string'"),
    ],
)
async def test_openai_complete_json_rejects_answers_that_break_the_schema(
    fake: FakeServer, track: Callable[[Any], Any], answer: str, expected: str
) -> None:
    fake.script("POST", "/chat/completions", Scripted(body=_openai_reply(answer)))
    with pytest.raises(LLMError, match=expected):
        await track(OpenAIProvider("k", base_url=fake.url)).complete_json(MESSAGES, SPEC_SCHEMA, name="spec")


@pytest.mark.anyio
async def test_ollama_complete_json_sends_the_schema_as_format(fake: FakeServer, track: Callable[[Any], Any]) -> None:
    fake.script("POST", "/api/chat", Scripted(body=_ollama_reply("```json\n" + SPEC_JSON + "\n```")))
    provider = track(OllamaProvider(fake.url, "llama3.1:8b"))
    assert await provider.complete_json(MESSAGES, SPEC_SCHEMA, name="spec") == {"os": "ubuntu", "disk_gib": 16}
    (seen,) = fake.requests
    assert seen.path == "/api/chat"
    assert seen.body == {
        "model": "llama3.1:8b",
        "messages": [m.as_dict() for m in MESSAGES],
        "stream": False,
        "format": SPEC_SCHEMA,
        "options": {"temperature": 0.0, "num_predict": 1024, "num_ctx": 8192},
        "tools": [],
    }


@pytest.mark.anyio
async def test_sampling_complete_json_puts_the_schema_in_the_prompt_and_retries_once() -> None:
    asked: list[list[ChatMessage]] = []
    answers = ['{"os": "ubuntu", "disk_gib": "sixteen"}', SPEC_JSON]

    async def fn(messages: list[ChatMessage], temperature: float, max_tokens: int, stop: list[str] | None) -> str:
        asked.append(messages)
        return answers.pop(0)

    assert await CallbackProvider(fn).complete_json(MESSAGES, SPEC_SCHEMA, name="spec") == {
        "os": "ubuntu",
        "disk_gib": 16,
    }
    first, retry = asked
    assert first[:2] == MESSAGES and first[2].role == "system"
    assert json.dumps(SPEC_SCHEMA, separators=(",", ":")) in first[2].content
    assert retry[3] == ChatMessage("assistant", '{"os": "ubuntu", "disk_gib": "sixteen"}')
    assert retry[4].role == "user" and "disk_gib: 'sixteen' is not of type 'integer', 'null'" in retry[4].content

    answers[:] = ["nope", "still nope"]
    with pytest.raises(LLMError, match="not a JSON object"):
        await CallbackProvider(fn).complete_json(MESSAGES, SPEC_SCHEMA, name="spec")


@pytest.mark.anyio
async def test_offline_complete_json_is_unavailable() -> None:
    with pytest.raises(LLMUnavailable, match="offline"):
        await OfflineProvider().complete_json(MESSAGES, SPEC_SCHEMA, name="spec")


def test_strict_json_schema_makes_a_pydantic_model_strict_compatible() -> None:
    from jsonschema import Draft202012Validator
    from pydantic import BaseModel, Field

    class Partition(BaseModel):
        mount: str
        size: str | None = None

    class Spec(BaseModel):
        os: str
        arch: str | None = None
        packages: list[str] = Field(default_factory=list)
        extra: Partition | None = None
        parts: list[Partition] = []

    schema = strict_json_schema(Spec)
    assert schema["required"] == ["os", "arch", "packages", "extra", "parts"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["arch"]["type"] == ["string", "null"]
    # Structured optionals keep their schema whole beside null: llama.cpp's grammar drops "items" under a
    # type list, so ["array", "null"] would let a model put objects into a list of strings.
    assert schema["properties"]["packages"]["anyOf"] == [{"type": "array", "items": {"type": "string"}},
                                                         {"type": "null"}]
    assert "default" not in json.dumps(schema)
    part = schema["$defs"]["Partition"]
    assert part["required"] == ["mount", "size"] and part["additionalProperties"] is False
    assert {"type": "null"} in schema["properties"]["extra"]["anyOf"]
    validator = Draft202012Validator(schema)
    # What a strict model answers: every key present, null where it has nothing to say.
    answer = {"os": "ubuntu", "arch": None, "packages": None, "extra": None, "parts": [{"mount": "/", "size": None}]}
    assert list(validator.iter_errors(answer)) == []
    assert list(validator.iter_errors({"os": "ubuntu"}))  # missing keys are errors in strict form
    assert Spec.model_validate({k: v for k, v in answer.items() if v is not None}).parts[0].mount == "/"


# --- the SDKs' conventional environment variables ----------------------------------------------


@pytest.mark.anyio
async def test_sdk_environment_variables_choose_the_server(
    fake: FakeServer, track: Callable[[Any], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", fake.url + "/v1")
    monkeypatch.setenv("OLLAMA_HOST", fake.url.removeprefix("http://"))
    fake.script("POST", "/v1/chat/completions", Scripted(body=_openai_reply("from env")))
    fake.script("POST", "/api/chat", Scripted(body=_ollama_reply("from env too")))
    openai_provider = track(OpenAIProvider(None))
    assert openai_provider.custom_base_url and (await openai_provider.chat(MESSAGES)).text == "from env"
    assert (await track(OllamaProvider(None)).chat(MESSAGES)).text == "from env too"
    assert [r.path for r in fake.requests] == ["/v1/chat/completions", "/api/chat"]


def test_azure_endpoints_use_the_sdks_azure_client(monkeypatch: pytest.MonkeyPatch) -> None:
    import openai

    monkeypatch.setenv("OPENAI_API_VERSION", "2024-10-21")
    azure = OpenAIProvider("az-key", "my-deployment", base_url="https://contoso.openai.azure.com/openai")
    assert isinstance(azure._sdk(), openai.AsyncAzureOpenAI)
    assert "az-key" not in repr(azure)
    plain = OpenAIProvider("k", base_url="https://api.example.com/v1")
    client = plain._sdk()
    assert not isinstance(client, openai.AsyncAzureOpenAI) and str(client.base_url) == "https://api.example.com/v1/"

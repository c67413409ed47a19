"""A scripted LLM server on 127.0.0.1 speaking both the Ollama and the OpenAI chat APIs."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class JsonHandler(BaseHTTPRequestHandler):
    """A quiet handler that answers JSON: the scripted servers' common part."""

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class LoopbackServer:
    """A real HTTP server on 127.0.0.1 (random port) in a thread, for the duration of a ``with`` block."""

    server: ThreadingHTTPServer
    thread: threading.Thread

    def serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


class FakeLLM(LoopbackServer):
    def __init__(self, replies: list[str] | None = None, model: str = "llama3.1:8b", delay: float = 0.0):
        self.replies = list(replies or [])
        self.model = model
        self.delay = delay
        self.requests: list[dict[str, Any]] = []
        self.default = "I cannot help with that."
        outer = self

        class Handler(JsonHandler):
            def do_GET(self) -> None:
                if self.path == "/api/tags":
                    # Real Ollama lists each model under both keys; the ollama SDK reads "model".
                    self._send(200, {"models": [{"name": outer.model, "model": outer.model}]})
                elif self.path.endswith("/models"):
                    self._send(200, {"data": [{"id": outer.model}]})
                else:
                    self._send(404, {"error": "not found"})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                outer.requests.append({"path": self.path, "body": body})
                if outer.delay:
                    time.sleep(outer.delay)
                text = outer.replies.pop(0) if outer.replies else outer.default
                if self.path == "/api/chat":
                    self._send(200, {"model": outer.model, "message": {"role": "assistant", "content": text},
                                     "done": True, "prompt_eval_count": 100, "eval_count": 50})
                elif self.path.endswith("/chat/completions"):
                    self._send(200, {"id": "x", "object": "chat.completion", "model": outer.model,
                                     "choices": [{"index": 0, "finish_reason": "stop",
                                                  "message": {"role": "assistant", "content": text}}],
                                     "usage": {"prompt_tokens": 100, "completion_tokens": 50}})
                else:
                    self._send(404, {"error": "not found"})

        self.serve(Handler)

    @property
    def url(self) -> str:
        return self.base_url

"""Logging to stderr only (stdout is the MCP channel on stdio), as text or JSON lines, with secrets redacted."""

from __future__ import annotations

import json
import logging
import re
import sys
import time

_SECRET = re.compile(
    r"(?i)(sk-[A-Za-z0-9_-]{8,}|bearer\s+[A-Za-z0-9._~+/=-]{8,}|"
    r"(password|passwd|api[_-]?key|token|secret)(\"?\s*[:=]\s*\"?)([^\s\",}]+))"
)


def redact(text: str) -> str:
    def repl(m: re.Match[str]) -> str:
        if m.group(2):
            return f"{m.group(2)}{m.group(3)}[REDACTED]"
        return "[REDACTED]"

    return _SECRET.sub(repl, text)


class RedactingFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload = {
            "ts": round(time.time(), 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": redact(record.getMessage()),
        }
        if record.exc_info:
            payload["exc"] = redact(self.formatException(record.exc_info))
        return json.dumps(payload)


def setup_logging(level: str = "INFO", fmt: str = "text") -> None:
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for noisy in ("httpx", "httpcore", "httpx2", "httpcore2", "mcp.server.lowlevel", "sse_starlette", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))

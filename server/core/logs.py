"""Logging to stderr only (stdout is the MCP channel on stdio), as text or JSON lines, with secrets redacted."""

from __future__ import annotations

import json
import logging
import re
import sys
import threading
import time

# A key starts a word: "sk-" inside a word is a name ("kiosk-raw", "disk-layout"), not a key. sudoers' NOPASSWD:
# tag is a rule, not a password ("ops ALL=(ALL) NOPASSWD: ALL").
_SECRET = re.compile(
    r"(?i)((?<![A-Za-z0-9_.-])sk-[A-Za-z0-9_-]{8,}|bearer\s+[A-Za-z0-9._~+/=-]{8,}|"
    r"(password|(?<!no)passwd|api[_-]?key|token|secret)(\"?\s*[:=]\s*\"?)([^\s\",}]+))"
)
# scheme://user:password@host -> scheme://host (also user@ alone: a token is often passed as the user name).
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@?#]+@")
MIN_SECRET_CHARS = 8  # shorter configured values would blank out ordinary words
_known_secrets: set[str] = set()
_secrets_lock = threading.Lock()


def remember_secret(value: str | None) -> None:
    """A configured secret (API key, bearer token) that must never leave the process, whatever its shape:
    an upstream error body can echo it back in any format, so it is removed literally, not by pattern."""
    if value and len(value.strip()) >= MIN_SECRET_CHARS:
        with _secrets_lock:
            _known_secrets.add(value.strip())


def remember_url_credentials(url: str | None) -> None:
    """The user name and password of ``url`` (``https://user:key@host``) as secrets."""
    if not url:
        return
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        remember_secret(parts.username)
        remember_secret(parts.password)
    except ValueError:
        pass


def strip_userinfo(url: str) -> str:
    """``url`` without credentials in its authority part (``https://key@host/v1`` -> ``https://host/v1``)."""
    return _USERINFO.sub(r"\1", url)


def redact_known(text: str) -> str:
    """Only the configured secrets and URL credentials: for text whose other content must stay byte-exact
    (template YAML, where ``password:`` is a legitimate key)."""
    for secret in sorted(_known_secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, "[REDACTED]")
    return strip_userinfo(text)


def redact(text: str) -> str:
    """Text safe to log, return to a client or store: configured secrets, URL credentials, and anything that
    looks like a key, bearer token or ``password=...`` removed."""
    def repl(m: re.Match[str]) -> str:
        if m.group(2):
            return f"{m.group(2)}{m.group(3)}[REDACTED]"
        return "[REDACTED]"

    return _SECRET.sub(repl, redact_known(text))


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

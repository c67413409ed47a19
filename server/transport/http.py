"""HTTP transports (streamable HTTP and SSE) made safe to expose: bearer-token auth, Host/Origin checks,
a body size limit, /healthz, and a graceful shutdown on SIGTERM/SIGINT.

Endpoints: streamable HTTP at ``/mcp`` or SSE at ``/sse`` (+ ``/messages/``), and ``/healthz`` (GET,
never authenticated, reveals nothing but liveness and readiness).

The SDK does the Host/Origin validation (421/403) and the body limit (413); this module chooses their
settings, adds the token check in front (401 + ``WWW-Authenticate``), and owns the engine's lifetime for
the whole process rather than per connection.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import json
import logging
import os
import signal
import stat
import threading
from collections.abc import Generator
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from ..core.config import ConfigError, ServerSettings
from ..core.logs import remember_secret
from ..engine import Engine

log = logging.getLogger(__name__)

MCP_PATH = "/mcp"
SSE_PATH = "/sse"
MESSAGE_PATH = "/messages/"
HEALTH_PATH = "/healthz"
LIVE_PATH = "/healthz/live"  # the process answers (restart it when this fails)
READY_PATH = "/healthz/ready"  # it can serve: index loaded, conversation store reachable (route to it)
REALM = "mcp-server-image-composer"
MIN_TOKEN_CHARS = 16
_LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]"]
_LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*",
                     "http://127.0.0.1", "http://localhost", "http://[::1]"]


def is_loopback(host: str) -> bool:
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def resolve_token(s: ServerSettings) -> str | None:
    """The bearer token from ``auth_token`` or ``auth_token_file``; None means no auth."""
    if s.auth_token is not None:
        return s.auth_token.get_secret_value()
    if not s.auth_token_file:
        return None
    path = Path(s.auth_token_file).expanduser()
    try:
        token = path.read_text("utf-8").strip()
        mode = path.stat().st_mode
    except OSError as exc:
        raise ConfigError(f"ai.server.auth_token_file: cannot read {path}: {exc.strerror or exc}") from None
    if not token:
        raise ConfigError(f"ai.server.auth_token_file: {path} is empty")
    remember_secret(token)
    if os.name == "posix" and mode & (stat.S_IRGRP | stat.S_IROTH):
        log.warning("token file %s is readable by other users; chmod 600 it", path)
    return token


def check_bind(s: ServerSettings, token: str | None) -> None:
    """Refuse a non-loopback bind unless asked for; warn when it would be unauthenticated."""
    if is_loopback(s.host):
        return
    if not s.allow_remote:
        raise ConfigError(
            f"ai.server.host = {s.host!r} exposes the server beyond this machine; pass --allow-remote "
            "(or set OIC_AI_ALLOW_REMOTE=true / ai.server.allow_remote) to confirm, and set a token with "
            "OIC_AI_AUTH_TOKEN or OIC_AI_AUTH_TOKEN_FILE")
    if token is None:
        log.warning("serving on %s:%d WITHOUT authentication: anyone who can reach this port can use the server; "
                    "set OIC_AI_AUTH_TOKEN or OIC_AI_AUTH_TOKEN_FILE", s.host, s.port)


def _with_bare_names(patterns: list[str]) -> list[str]:
    # "name:*" in the SDK means "name with some port"; behind a proxy on 443 the Host has no port at all.
    out: list[str] = []
    for p in patterns:
        out.append(p)
        if p.endswith(":*") and p[:-2] not in patterns:
            out.append(p[:-2])
    return out


def transport_security(s: ServerSettings) -> TransportSecuritySettings:
    """DNS-rebinding protection: on for loopback binds and whenever allowed hosts are configured."""
    hosts = _with_bare_names(s.allowed_hosts)
    origins = _with_bare_names(s.allowed_origins)
    if is_loopback(s.host) or hosts:
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=[*_LOOPBACK_HOSTS, *hosts],
            allowed_origins=[*_LOOPBACK_ORIGINS, *origins],
        )
    log.info("Host header checks are off for %s; set ai.server.allowed_hosts (OIC_AI_ALLOWED_HOSTS) to the "
             "names clients use, e.g. mcp.example.com:*", s.host)
    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


async def _send_json(send: Send, status: int, body: dict[str, Any], headers: dict[str, str] | None = None,
                     head_only: bool = False) -> None:
    payload = json.dumps(body).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()),
           (b"cache-control", b"no-store")]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": b"" if head_only else payload})


class Gateway:
    """Pure ASGI in front of the MCP app: /healthz, then the bearer token (streams pass through untouched)."""

    def __init__(self, app: ASGIApp, engine: Engine, *, token: str | None, transport: str, version: str) -> None:
        self.app = app
        self.engine = engine
        self._token = token.encode() if token is not None else None
        self.transport = transport
        self.version = version

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["path"] == HEALTH_PATH and scope["method"] in ("GET", "HEAD"):
            health = self.health()
            # 503 while the index cannot load, so a load balancer or orchestrator stops routing here.
            await _send_json(send, 503 if health["status"] == "degraded" else 200, health,
                             head_only=scope["method"] == "HEAD")
            return
        if scope["path"] in (LIVE_PATH, READY_PATH) and scope["method"] in ("GET", "HEAD"):
            body = {"status": "ok", "server": REALM, "version": self.version}
            status = 200
            if scope["path"] == READY_PATH:
                body.update(await anyio.to_thread.run_sync(self.engine.readiness))  # may ask the database
                status = 200 if body["ready"] else 503
                body["status"] = "ready" if body["ready"] else "not ready"
            await _send_json(send, status, body, head_only=scope["method"] == "HEAD")
            return
        # OAuth discovery (/.well-known/...) gets the app's plain 404: there is no authorization server to find,
        # and a 401 there sends some clients into an OAuth flow instead of using their configured header.
        discovery = scope["method"] in ("GET", "HEAD") and scope["path"].startswith("/.well-known/")
        if self._token is not None and not discovery and not self._authorized(scope):
            await self._reject(scope, send)
            return
        await self._call_app(scope, receive, send)

    async def _call_app(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The app, with errors raised after a complete response logged as one line instead of a traceback.

        The SDK's SSE endpoint answers a bad Host/Origin with 421/403 and then raises to end the connection;
        uvicorn would log each of those as a 45-line "Exception in ASGI application". The client already has
        its answer, so one line says what happened. Errors before or during a response propagate as before.
        """
        sent: dict[str, Any] = {"status": None, "done": False}

        async def tracking_send(message: Any) -> None:
            if message["type"] == "http.response.start":
                sent["status"] = message["status"]
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                sent["done"] = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            if not sent["done"]:
                raise
            client = scope.get("client") or ("?", 0)
            log.warning("%s %s from %s: answered %s, then the handler ended with %s: %s", scope["method"],
                        scope["path"], client[0], sent["status"], exc.__class__.__name__, exc)

    def health(self) -> dict[str, Any]:
        state = self.engine.state
        return {"status": "degraded" if state == "error" else "ok", "server": REALM, "version": self.version,
                "transport": self.transport, "index": state}

    def _authorized(self, scope: Scope) -> bool:
        header = Headers(scope=scope).get("authorization", "")
        scheme, _, credentials = header.partition(" ")
        if scheme.lower() != "bearer":
            return False
        assert self._token is not None
        return hmac.compare_digest(credentials.strip().encode(), self._token)

    async def _reject(self, scope: Scope, send: Send) -> None:
        presented = "authorization" in Headers(scope=scope)
        client = scope.get("client") or ("?", 0)
        # Never log the header itself: a wrong token is often the right token for something else.
        log.warning("rejected %s %s from %s: %s", scope["method"], scope["path"], client[0],
                    "invalid bearer token" if presented else "no bearer token")
        challenge = f'Bearer realm="{REALM}"'
        if presented:
            challenge += ', error="invalid_token", error_description="the bearer token is not valid"'
        body = {"error": "invalid_token" if presented else "unauthorized",
                "error_description": "send 'Authorization: Bearer <token>' with the server's token "
                                     "(OIC_AI_AUTH_TOKEN on the server)"}
        await _send_json(send, 401, body, {"www-authenticate": challenge})


def build_http_app(mcp: MCPServer, engine: Engine, s: ServerSettings, token: str | None) -> Gateway:
    """The ASGI app for ``s.transport`` ("sse" or "streamable-http")."""
    security = transport_security(s)
    if s.transport == "sse":
        inner = mcp.sse_app(sse_path=SSE_PATH, message_path=MESSAGE_PATH, max_request_body_size=s.max_body_bytes,
                            transport_security=security, host=s.host)
    elif s.transport == "streamable-http":
        inner = mcp.streamable_http_app(streamable_http_path=MCP_PATH, stateless_http=s.stateless,
                                        json_response=s.json_response, max_request_body_size=s.max_body_bytes,
                                        transport_security=security, host=s.host,
                                        session_idle_timeout=s.session_idle_timeout, max_sessions=s.max_sessions)
    else:
        raise ValueError(f"not an HTTP transport: {s.transport}")
    return Gateway(inner, engine, token=token, transport=s.transport, version=mcp.version)


def guarded_protocol(s: ServerSettings) -> type:
    """uvicorn's h11 protocol with a deadline for reading each request and a hard cap on open connections.

    uvicorn times out idle keep-alive connections only after a first response, and any byte received cancels
    that timer: a client that connects and sends nothing, or sends a header line every few seconds, holds a
    socket (and a file descriptor) forever. Here every connection must deliver a complete request (headers and
    body) within ``request_read_timeout`` of connecting or of its previous response, or it is closed; and
    connections beyond ``max_connections`` are closed as soon as they are accepted, so a flood cannot exhaust
    the process's file descriptors (requests beyond the cap on open connections get uvicorn's 503).
    """
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    deadline = s.request_read_timeout
    cap = s.max_connections
    refused = {"count": 0}

    class GuardedH11Protocol(H11Protocol):
        _read_timer: Any = None

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            if len(self.connections) >= cap:
                refused["count"] += 1
                if refused["count"] in (1, 10, 100) or refused["count"] % 1000 == 0:
                    log.warning("refusing connections: %d already open (ai.server.max_connections); %d refused so "
                                "far", cap, refused["count"])
                transport.close()
                return
            super().connection_made(transport)
            self._arm_read_deadline(None)

        def on_response_complete(self) -> None:
            finished = self.cycle
            super().on_response_complete()  # may start a pipelined request: that one is not `finished`
            self._arm_read_deadline(finished)

        def _arm_read_deadline(self, finished: Any) -> None:
            if self._read_timer is not None:
                self._read_timer.cancel()
            if not self.transport.is_closing():
                self._read_timer = self.loop.call_later(deadline, self._read_deadline_passed, finished)

        def _read_deadline_passed(self, finished: Any) -> None:
            self._read_timer = None
            if self.transport.is_closing():
                return
            waiting_for_request = self.cycle is finished  # nothing (complete) since connecting / the last response
            slow_body = self.cycle is not finished and self.conn.their_state is h11.SEND_BODY
            if waiting_for_request or slow_body:
                log.debug("closing connection from %s: no complete request within %.0fs", self.client, deadline)
                if self.cycle is not None and not self.cycle.response_complete:
                    self.cycle.disconnected = True
                self.transport.close()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._read_timer is not None:
                self._read_timer.cancel()
                self._read_timer = None
            if self.transport is not None:  # None: refused in connection_made, never set up
                super().connection_lost(exc)

    return GuardedH11Protocol


def make_server(app: ASGIApp, s: ServerSettings) -> Any:
    """A uvicorn server for ``app`` that stops gracefully on SIGTERM/SIGINT and then returns normally."""
    import uvicorn

    class Server(uvicorn.Server):
        # uvicorn re-raises a caught SIGTERM/SIGINT after its graceful shutdown, which turns a clean stop
        # into death-by-signal (exit 143) or a KeyboardInterrupt traceback. We stop, then exit 0.
        @contextlib.contextmanager
        def capture_signals(self) -> Generator[None, None, None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            sigs = [signal.SIGINT, signal.SIGTERM]
            original = {sig: signal.signal(sig, self.handle_exit) for sig in sigs}
            try:
                yield
            finally:
                for sig, handler in original.items():
                    signal.signal(sig, handler)

        def handle_exit(self, sig: int, frame: Any) -> None:
            if not self.should_exit:
                log.info("received %s: finishing in-flight requests (up to %.0fs), then stopping",
                         signal.Signals(sig).name, s.shutdown_timeout)
            super().handle_exit(sig, frame)

    config = uvicorn.Config(
        app, host=s.host, port=s.port, log_config=None, access_log=False, server_header=False,
        # uvicorn annotates these two timeouts as int but waits on them as floats (asyncio): fractions work.
        lifespan="on", timeout_graceful_shutdown=max(0.1, s.shutdown_timeout),  # type: ignore[arg-type]
        # uvicorn answers 503 once connections *or* tasks reach limit_concurrency; our protocol already keeps
        # connections at or under max_connections, so +1 leaves every admitted connection usable and the 503
        # for requests in flight beyond the cap.
        limit_concurrency=s.max_connections + 1, proxy_headers=False, http=guarded_protocol(s),
        timeout_keep_alive=s.keep_alive_timeout,  # type: ignore[arg-type]
        h11_max_incomplete_event_size=s.max_header_bytes,
    )
    return Server(config)


async def serve_http(mcp: MCPServer, engine: Engine, s: ServerSettings) -> None:
    """Serve until SIGTERM/SIGINT; the caller's engine is started first and closed last."""
    token = resolve_token(s)
    check_bind(s, token)
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        log.warning("the auth token is shorter than %d characters; use e.g. `openssl rand -hex 32`", MIN_TOKEN_CHARS)
    app = build_http_app(mcp, engine, s, token)
    server = make_server(app, s)
    engine.start()
    path = SSE_PATH if s.transport == "sse" else MCP_PATH
    host = f"[{s.host}]" if ":" in s.host else s.host
    log.info("serving MCP over %s at http://%s:%d%s (%s%s)", s.transport, host, s.port, path,
             "bearer token required" if token else "no auth",
             ", stateless" if s.stateless and s.transport == "streamable-http" else "")
    try:
        await server.serve()
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(engine.close)
        log.info("stopped")

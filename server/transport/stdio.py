"""MCP over stdio: screening each incoming line before the SDK reads it, and a shutdown that lets the answers
in flight finish (``ai.server.shutdown_timeout``)."""

from __future__ import annotations

import json
import logging
import os
import re
from typing import Any, cast

from .stdio_streams import LineSink, LineSource

REJECTED_METHOD = "oic/rejected-message"
_MAX_CHECKED_LINE = 16 * 1024 * 1024  # longer lines pass through unchecked (the SDK reads them either way)
_SURROGATE = re.compile("[\ud800-\udfff]")  # a regular expression: a character loop took ~2 s over 16 MB


def screen_stdio_line(line: bytes) -> bytes:
    """The line to hand the SDK for one line read from stdin.

    The SDK's stdio reader drops a line it cannot validate (a lone UTF-16 surrogate such as ``\\ud800`` in a
    string, or JSON that is not JSON-RPC) without answering, and the client waits until its own time-out. A
    request whose id we can still read is rewritten into a call of ``REJECTED_METHOD`` carrying the reason;
    the middleware installed by ``_run_stdio`` answers it with a JSON-RPC error for that id through the SDK's
    own writer (so stdout keeps one writer). Lines with no recoverable id (not JSON at all, notifications)
    cannot be answered: they are logged and passed on for the SDK to drop.
    """
    import mcp_types

    if len(line) > _MAX_CHECKED_LINE or not line.strip():
        return line
    text = line.decode("utf-8", "replace")  # the SDK decodes the same way
    try:
        mcp_types.jsonrpc_message_adapter.validate_json(text, by_name=False)
        return line
    except Exception as exc:  # noqa: BLE001 - any validation failure is reported the same way
        problem = str(exc).splitlines()
        reason = problem[-1].strip() if problem else exc.__class__.__name__
    try:
        message = json.loads(text)
    except ValueError:
        logging.getLogger(__name__).warning("stdin: dropped a line that is not JSON (%d bytes)", len(line))
        return line
    msg_id = message.get("id") if isinstance(message, dict) else None
    if isinstance(msg_id, bool) or not isinstance(msg_id, int | str) or "method" not in message:
        logging.getLogger(__name__).warning("stdin: dropped an invalid JSON-RPC message without an id: %s", reason)
        return line
    if _has_lone_surrogate(message):
        reason = ("a string contains a lone UTF-16 surrogate (e.g. \\ud800), which is not a Unicode character; "
                  "send valid UTF-8 text")
    else:
        reason = f"not a valid JSON-RPC 2.0 request: {reason}"
    rewritten = {"jsonrpc": "2.0", "id": msg_id, "method": REJECTED_METHOD, "params": {"reason": reason}}
    return json.dumps(rewritten).encode() + b"\n"


def _has_lone_surrogate(value: object) -> bool:
    if isinstance(value, str):
        return _SURROGATE.search(value) is not None
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


def install_rejection_answers(mcp: Any) -> None:
    """Answer the requests :func:`screen_stdio_line` rewrote with an Invalid Request error."""
    from mcp.shared.exceptions import MCPError

    async def rejected_messages(ctx: Any, call_next: Any) -> Any:
        if ctx.method == REJECTED_METHOD:
            params = ctx.params if isinstance(ctx.params, dict) else {}
            raise MCPError(code=-32600, message=str(params.get("reason") or "invalid request"))
        return await call_next(ctx)

    mcp.middleware.insert(0, rejected_messages)


class _PipeInput:
    """fd 0 replaced by a pipe this process writes, for the SDK's own stdio reader (see :func:`run_stdio`)."""

    whole_lines = False  # a line too long to screen is passed on as it comes

    def __init__(self) -> None:
        import threading

        read_fd, write_fd = os.pipe()
        os.dup2(read_fd, 0)
        os.close(read_fd)
        self._sink = os.fdopen(write_fd, "wb", buffering=0)
        self._lock = threading.Lock()

    def send(self, data: bytes) -> bool:
        # Under the lock, so end() can never race a write onto a recycled descriptor.
        with self._lock:
            if self._sink.closed:
                return False
            self._sink.write(data)
            return True

    def end(self) -> None:
        with self._lock:
            if not self._sink.closed:
                self._sink.close()


class _StdinRelay:
    """Reads stdin on a thread of its own and hands each screened line (:func:`screen_stdio_line`) to
    ``target``: a :class:`~.stdio_streams.LineSource` the SDK's transport reads, or a :class:`_PipeInput`.

    Why a thread we own: the SDK reads stdin in a worker thread that no cancellation can interrupt; ending
    the input ourselves is the one way to stop it that runs the normal shutdown path (lifespan exit, engine
    closed). Each line is screened on the way so malformed requests get an answer.
    """

    def __init__(self, source: int, target: Any) -> None:
        import threading

        self._source = source
        self.target = target
        threading.Thread(target=self._pump, name="stdin-relay", daemon=True).start()

    def _pump(self) -> None:
        # A line's pieces are kept apart until its newline comes, and only each new chunk is searched for one:
        # joining and splitting the whole pending line on every read made a long line quadratic.
        pieces: list[bytes] = []
        size = 0
        whole = self.target.whole_lines
        try:
            while chunk := os.read(self._source, 65536):
                start = 0
                while (end := chunk.find(b"\n", start)) != -1:
                    line = b"".join([*pieces, chunk[start:end + 1]])
                    pieces, size, start = [], 0, end + 1
                    if not self.target.send(screen_stdio_line(line)):
                        return
                if start < len(chunk):
                    pieces.append(chunk[start:])
                    size += len(chunk) - start
                if not whole and size > _MAX_CHECKED_LINE:  # too long to screen: pass it on as it comes
                    if not self.target.send(b"".join(pieces)):
                        return
                    pieces, size = [], 0
            if pieces:
                self.target.send(b"".join(pieces))
        except OSError:
            pass
        self.close()

    def close(self) -> None:
        self.target.end()


def _lowlevel_server(mcp: Any) -> Any:
    """The SDK server under ``mcp``, served over :mod:`.stdio_streams`; None (the SDK's own stdio transport)
    if this SDK no longer has it where 2.x keeps it."""
    server = getattr(mcp, "_lowlevel_server", None)
    return server if callable(getattr(server, "run", None)) and \
        callable(getattr(server, "create_initialization_options", None)) else None


def _claim_stdio() -> tuple[tuple[int, int], LineSource]:
    """The wire's descriptors (stdin, stdout) moved to private ones, and the line source the relay fills.

    As the SDK's own transport does: fd 0 then reads the null device and fd 1 writes to stderr, so handlers,
    children and stray prints can neither take the client's input nor corrupt the wire.
    """
    import asyncio

    wire = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return wire, LineSource(asyncio.get_running_loop())


def run_stdio(mcp: Any, grace: float) -> None:
    """Serve stdio until stdin closes or SIGTERM/SIGINT. On a signal, calls in flight get up to ``grace``
    seconds to finish, then input ends and the normal shutdown runs (the lifespan closes the engine)."""
    import logging
    import signal

    import anyio

    log = logging.getLogger(__name__)
    posix = os.name == "posix"
    lowlevel = _lowlevel_server(mcp) if posix else None
    relay: _StdinRelay | None = None
    in_flight = 0

    async def count_calls(ctx: Any, call_next: Any) -> Any:
        nonlocal in_flight
        if ctx.method != "tools/call":
            return await call_next(ctx)
        in_flight += 1
        try:
            return await call_next(ctx)
        finally:
            in_flight -= 1

    mcp.middleware.insert(0, count_calls)
    if posix:
        install_rejection_answers(mcp)

    async def main() -> None:
        nonlocal relay
        async with anyio.create_task_group() as tg:
            async def on_signal() -> None:
                assert relay is not None
                with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                    seen = 0
                    async for signum in signals:
                        seen += 1
                        name = signal.Signals(signum).name
                        if seen > 1:
                            log.warning("second %s: exiting now", name)
                            os._exit(128 + signum)
                        log.info("received %s: finishing %d call(s) in flight (up to %.0fs), then stopping",
                                 name, in_flight, grace)
                        with anyio.move_on_after(grace):
                            while in_flight:
                                await anyio.sleep(0.05)
                        relay.close()

            if lowlevel is not None:
                from mcp.server.stdio import stdio_server

                wire, source = _claim_stdio()
                relay = _StdinRelay(wire[0], source)
                tg.start_soon(on_signal)
                sink = LineSink(wire[1])
                await sink.open()
                try:
                    async with stdio_server(stdin=cast(Any, source), stdout=cast(Any, sink)) as (read, write):
                        await lowlevel.run(read, write, lowlevel.create_initialization_options())
                finally:
                    await sink.aclose()
            else:
                if posix:
                    relay = _StdinRelay(os.dup(0), _PipeInput())
                    tg.start_soon(on_signal)
                await mcp.run_stdio_async()
            tg.cancel_scope.cancel()

    anyio.run(main)

"""The two ends of the stdio wire as the event loop sees them, without a thread hop per message.

The SDK's own stdio transport reads each line and writes and flushes each answer through anyio's worker
threads: three hand-overs between threads per call, ~0.26 ms each on a 2-core VM (measured: an empty
``to_thread`` round trip), beside the search's own. Here the relay thread that already reads stdin
(``stdio._StdinRelay``) hands each screened line straight to the loop, and answers are written from the
loop, through a non-blocking pipe transport when stdout is a pipe or socket (a client that stops reading
pauses the writer, never the loop).
"""

from __future__ import annotations

import asyncio
import os
import stat
import threading
from typing import Any

PENDING_LINES = 64  # lines read ahead of the server; the relay thread waits beyond this


class LineSource:
    """Lines from the relay thread, read by the SDK as ``async for line in source``; ends at :meth:`end`."""

    whole_lines = True  # the SDK parses each item as one message: a long line is never passed on in pieces

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._lines: asyncio.Queue[str | None] = asyncio.Queue()
        self._room = threading.BoundedSemaphore(PENDING_LINES)
        self._ended = threading.Event()

    def send(self, data: bytes) -> bool:
        """Called by the relay thread with one line; False once the input has ended."""
        self._room.acquire()
        return self._post(data.decode("utf-8", "replace"))  # as the SDK's own reader decodes

    def end(self) -> None:
        """End of input (EOF, or a signal ending the session): the SDK's reader stops after the lines before."""
        if not self._ended.is_set():
            self._ended.set()
            self._post(None)

    def _post(self, line: str | None) -> bool:
        if line is not None and self._ended.is_set():
            return False
        try:
            self._loop.call_soon_threadsafe(self._lines.put_nowait, line)
        except RuntimeError:  # the loop has closed: nobody reads any more
            return False
        return True

    def __aiter__(self) -> LineSource:
        return self

    async def __anext__(self) -> str:
        line = await self._lines.get()
        if line is None:
            raise StopAsyncIteration
        self._room.release()
        return line


class _Flow(asyncio.Protocol):
    """Pauses :class:`LineSink` while the pipe's reader lags."""

    def __init__(self) -> None:
        self.writable = asyncio.Event()
        self.writable.set()
        self.closed = asyncio.get_running_loop().create_future()

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.writable.set()
        if not self.closed.done():
            self.closed.set_result(None)


class LineSink:
    """The SDK's answers (``await sink.write(text)``, ``await sink.flush()``) onto the descriptor ``fd``."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._transport: asyncio.WriteTransport | None = None
        self._flow: _Flow | None = None

    async def open(self) -> None:
        mode = os.fstat(self._fd).st_mode
        # A terminal or a file is written directly: a pipe transport would leave a terminal non-blocking.
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            pipe: Any = os.fdopen(self._fd, "wb", buffering=0, closefd=False)
            transport, flow = await asyncio.get_running_loop().connect_write_pipe(_Flow, pipe)
            self._transport, self._flow = transport, flow

    async def write(self, text: str) -> None:
        data = text.encode("utf-8")
        if self._transport is None:
            _write_all(self._fd, data)
        elif not self._transport.is_closing():
            self._transport.write(data)

    async def flush(self) -> None:
        if self._flow is not None:
            await self._flow.writable.wait()

    async def aclose(self) -> None:
        """Everything written reaches the descriptor (or its reader has gone), then the transport closes."""
        if self._transport is not None and self._flow is not None:
            self._transport.close()  # writes what is buffered first
            await self._flow.closed


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]

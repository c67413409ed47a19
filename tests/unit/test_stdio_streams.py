"""The stdio wire's ends as the event loop sees them (server/transport/stdio_streams.py)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import threading

import pytest
from image_composer_mcp.server.transport import stdio, stdio_streams
from image_composer_mcp.server.transport.stdio_streams import LineSink, LineSource

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the stdio relay runs on POSIX only")


def test_lines_from_a_thread_arrive_in_order_and_end_stops_the_reader() -> None:
    async def main() -> list[str]:
        source = LineSource(asyncio.get_running_loop())

        def feed() -> None:
            for i in range(300):  # more than PENDING_LINES: the thread waits for the reader
                assert source.send(f'{{"n": {i}}}\n'.encode())
            source.end()

        threading.Thread(target=feed, daemon=True).start()
        return [line async for line in source]

    lines = asyncio.run(main())
    assert lines == [f'{{"n": {i}}}\n' for i in range(300)]


def test_the_reading_thread_waits_when_the_server_falls_behind() -> None:
    async def main() -> tuple[int, int]:
        source = LineSource(asyncio.get_running_loop())
        sent = 0

        def feed() -> None:
            nonlocal sent
            for _ in range(stdio_streams.PENDING_LINES * 3):
                source.send(b"{}\n")
                sent += 1

        threading.Thread(target=feed, daemon=True).start()
        await asyncio.sleep(0.3)
        held = sent
        source.end()
        async for _ in source:
            pass
        return held, sent

    held, _ = asyncio.run(main())
    assert held == stdio_streams.PENDING_LINES


def test_invalid_utf8_is_replaced_as_the_sdk_reader_does() -> None:
    async def main() -> list[str]:
        source = LineSource(asyncio.get_running_loop())
        source.send(b'{"q": "caf\xe9"}\n')
        source.end()
        return [line async for line in source]

    assert asyncio.run(main()) == ['{"q": "caf\ufffd"}\n']


def test_a_reader_that_stops_reading_pauses_the_writer_not_the_loop() -> None:
    read_fd, write_fd = os.pipe()
    line = "x" * 1023 + "\n"
    count = 2048  # 2 MB: far past the pipe's buffer

    waited: list[bool] = []

    async def main() -> int:
        sink = LineSink(write_fd)
        await sink.open()
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                if ticks == 5:  # the loop kept running while the writer waited on a full pipe: let the reader go
                    waited.append(not writer.done())
                    reader.start()
                await asyncio.sleep(0.005)

        async def write() -> None:
            for _ in range(count):
                await sink.write(line)
                await sink.flush()

        writer = asyncio.create_task(write())
        tick_task = asyncio.create_task(ticker())
        await writer
        await sink.aclose()
        tick_task.cancel()
        return ticks

    received = bytearray()

    def drain() -> None:
        while chunk := os.read(read_fd, 65536):
            received.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    ticks = asyncio.run(asyncio.wait_for(main(), 60))
    os.close(write_fd)
    reader.join(10)
    os.close(read_fd)
    assert ticks >= 5 and waited == [True]
    assert bytes(received) == line.encode() * count


def test_a_file_as_stdout_is_written_directly(tmp_path) -> None:
    path = tmp_path / "out.jsonl"

    async def main() -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT)
        try:
            sink = LineSink(fd)
            await sink.open()
            for i in range(3):
                await sink.write(f"{i}\n")
                await sink.flush()
            await sink.aclose()
        finally:
            os.close(fd)

    asyncio.run(main())
    assert path.read_text() == "0\n1\n2\n"


def test_stray_prints_go_to_stderr_and_only_the_wire_reaches_stdout() -> None:
    program = textwrap.dedent("""
        import asyncio, os, sys
        from image_composer_mcp.server.transport.stdio import _claim_stdio

        async def main():
            (wire_in, wire_out), _source = _claim_stdio()
            print("stray print", flush=True)
            os.write(1, b"stray write\\n")
            assert sys.stdin.read() == ""  # handlers and children read the null device, not the client's input
            os.write(wire_out, b'{"jsonrpc": "2.0"}\\n')

        asyncio.run(main())
    """)
    done = subprocess.run([sys.executable, "-c", program], input="the client's input\n", capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == '{"jsonrpc": "2.0"}\n'
    assert "stray print" in done.stderr and "stray write" in done.stderr


def test_the_sdk_server_is_where_the_stream_transport_expects_it() -> None:
    # If a new SDK moves it, run_stdio falls back to the SDK's own stdio transport; this says so first.
    from mcp.server.mcpserver import MCPServer

    class Absent:
        pass

    assert stdio._lowlevel_server(Absent()) is None
    assert stdio._lowlevel_server(MCPServer("probe")) is not None, "the SDK moved its server: update stdio.py"


def test_the_relay_hands_over_a_long_line_whole_and_the_lines_after_it() -> None:
    long_line = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"yaml": "' + b"a" * 5_000_000 + b'"}}\n'
    short = b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n'
    read_fd, write_fd = os.pipe()

    def client() -> None:
        with os.fdopen(write_fd, "wb") as pipe:
            pipe.write(long_line + short + short[:-1])  # the last line ends without a newline at EOF

    async def main() -> list[str]:
        source = LineSource(asyncio.get_running_loop())
        stdio._StdinRelay(read_fd, source)
        threading.Thread(target=client, daemon=True).start()
        return [line async for line in source]

    lines = asyncio.run(asyncio.wait_for(main(), 120))
    os.close(read_fd)
    assert [len(line) for line in lines] == [len(long_line), len(short), len(short) - 1]
    assert lines[0] == long_line.decode() and lines[1] == short.decode()

"""Malformed messages over a real stdio subprocess get an answer (or, with no id to answer, a log line),
and the session survives them."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading

import pytest

from tests.conftest import RAW_INITIALIZE, REPO, write_template

BOUND = 120.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    tmp_path = tmp_path_factory.mktemp("hostile-stdio")
    templates = tmp_path / "t"
    templates.mkdir()
    write_template(templates, "web-nginx", "web server with nginx", "web", "nginx")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OIC_AI_")}
    env.update(OIC_AI_TEMPLATES_DIR=str(templates), OIC_AI_CACHE_DIR=str(tmp_path / "cache"), PYTHONUNBUFFERED="1",
               PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "image_composer_mcp"], cwd=str(REPO), env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines: queue.Queue[bytes] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()

    def send(raw: bytes) -> None:
        proc.stdin.write(raw + b"\n")
        proc.stdin.flush()

    def answer(msg_id: object) -> dict:
        while True:
            msg = json.loads(lines.get(timeout=BOUND))
            if msg.get("id") == msg_id:
                return msg

    send(json.dumps(RAW_INITIALIZE).encode())
    assert "result" in answer(1)
    send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    yield send, answer, proc
    if not proc.stdin.closed:
        proc.stdin.close()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def test_lone_surrogate_gets_an_error_answer(server) -> None:
    send, answer, _proc = server
    send(b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search_templates",'
         b'"arguments":{"query":"nginx \\ud800"}}}')
    reply = answer(7)
    assert reply["error"]["code"] == -32600
    assert "surrogate" in reply["error"]["message"]
    send(b'{"jsonrpc":"2.0","id":8,"method":"ping"}')
    assert answer(8)["result"] == {}  # the session is still alive


def test_malformed_json_rpc_gets_an_error_answer(server) -> None:
    send, answer, _proc = server
    send(b'{"jsonrpc":"2.0","id":"abc","method":42}')
    reply = answer("abc")
    assert reply["error"]["code"] == -32600 and "JSON-RPC" in reply["error"]["message"]
    send(b'{"jsonrpc":"1.0","id":9,"method":"ping"}')
    assert answer(9)["error"]["code"] == -32600


def test_unanswerable_lines_are_logged_and_the_session_survives(server) -> None:
    """Runs last in this module: it ends the shared session to read the log."""
    send, answer, proc = server
    send(b"this is not json")
    send(b'{"jsonrpc":"2.0","method":42}')
    send(b'{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"search_templates",'
         b'"arguments":{"query":"nginx"}}}')
    reply = answer(10)
    assert "result" in reply and not reply["result"].get("isError")
    proc.stdin.close()
    proc.wait(timeout=30)
    stderr = proc.stderr.read().decode()
    assert "dropped a line that is not JSON" in stderr
    assert "dropped an invalid JSON-RPC message without an id" in stderr

"""SSRF guard against DNS rebinding: template-repository downloads connect to the address that was checked."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from image_composer_mcp.server.packages.http_cache import FetchError, HttpCache, public_host_guard

PUBLIC = "93.184.215.14"  # a global address (never contacted: the test only resolves to it)


class _Local(BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        _Local.hits.append(self.path)
        body = b"internal secret"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def local_server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Local)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    _Local.hits = []
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def _rebinding_dns(monkeypatch: pytest.MonkeyPatch, name: str) -> list[str]:
    """``name`` answers a public address at the first lookup and 127.0.0.1 from then on."""
    real = socket.getaddrinfo
    answers: list[str] = []

    def fake(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != name:
            return real(host, port, *args, **kwargs)
        ip = PUBLIC if not answers else "127.0.0.1"
        answers.append(ip)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port))]

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    return answers


def test_rebinding_name_cannot_reach_a_private_address(tmp_path: Path, local_server: int,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    name = "rebind.test.example"
    answers = _rebinding_dns(monkeypatch, name)
    cache = HttpCache(tmp_path, ttl=0, timeout=5, offline=False, max_stale=0, clock=lambda: 0.0)
    try:
        with pytest.raises(FetchError, match="non-public address 127.0.0.1"):
            cache.get(f"http://{name}:{local_server}/dists/noble/Release", guard=public_host_guard)
    finally:
        cache.close()
    assert answers[0] == PUBLIC  # the first check passed, as a rebinding attacker intends
    assert _Local.hits == []  # and yet nothing reached the private server


def test_unguarded_sources_still_reach_local_mirrors(tmp_path: Path, local_server: int) -> None:
    """Configured (trusted) sources are not guarded: a local mirror keeps working."""
    cache = HttpCache(tmp_path, ttl=0, timeout=5, offline=False, max_stale=0, clock=lambda: 0.0)
    try:
        fetched = cache.get(f"http://127.0.0.1:{local_server}/Release")
    finally:
        cache.close()
    assert fetched.path.read_bytes() == b"internal secret" and _Local.hits == ["/Release"]

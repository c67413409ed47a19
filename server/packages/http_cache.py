"""The HTTP cache for repository indexes: downloads kept on disk, revalidated with conditional requests
(ETag / Last-Modified) after a TTL, served stale within a limit when a refresh fails. Template
repositories are fetched through the pinned-address guard: only public addresses, resolved once.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import json
import logging
import os as _os
import socket
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpcore
import httpx

logger = logging.getLogger(__name__)

MAX_DOWNLOAD_BYTES = 512 * 1024 * 1024
DEFAULT_MAX_STALE = 7 * 86400.0
_USER_AGENT = "mcp-server-image-composer (package verification)"


class NotFound(Exception):
    pass


class FetchError(Exception):
    pass


class GuardError(FetchError):
    pass


@dataclass
class Fetched:
    path: Path
    sha256: str
    checked_at: float  # when the server last confirmed (200 or 304) this content
    from_cache: bool  # nothing was downloaded this time
    status: int  # 200, 304, or 0 when no request was made
    warning: str | None = None


def public_host_guard(url: str) -> None:
    """Refuse URLs that point at this machine or a private network (template repos only)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise GuardError(f"scheme {parts.scheme!r} not allowed for template repositories")
    if parts.username or parts.password:
        raise GuardError("credentials in repository URLs are not allowed")
    _public_addresses(parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80))


def _public_addresses(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to, if all of them are public; else GuardError."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as e:
        raise GuardError(f"cannot resolve {host}: {e}") from e
    addresses: list[str] = []
    for info in infos:
        ip = ipaddress.ip_address(info[4][0])
        if not ip.is_global:
            raise GuardError(f"{host} resolves to non-public address {ip}")
        addresses.append(str(ip))
    return addresses


class _PublicAddressBackend(httpcore.SyncBackend):
    """Resolves, checks and connects in one step, for template repositories.

    The URL guard resolves a name to check it; if httpx then resolved it again, a name whose DNS answer changes
    between the two lookups (DNS rebinding) could pass the check with a public address and connect to a
    private one. Here the connection goes to an address from the very answer that was checked. TLS still
    verifies the certificate against the host name (httpcore passes it as SNI/server_hostname separately).
    """

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:
        error: Exception | None = None
        for address in _public_addresses(host, port):
            try:
                return super().connect_tcp(address, port, timeout=timeout, local_address=local_address,
                                           socket_options=socket_options)
            except httpcore.ConnectError as exc:
                error = exc
        raise error or httpcore.ConnectError(f"cannot connect to {host}:{port}")


def _pinned_transport() -> httpx.HTTPTransport:
    """An httpx transport whose connections use :class:`_PublicAddressBackend` (direct, never via a proxy)."""
    transport = httpx.HTTPTransport(trust_env=False)
    pool = transport._pool  # httpx has no public hook for the network backend; keep its SSL and limits
    transport._pool = httpcore.ConnectionPool(
        ssl_context=pool._ssl_context, max_connections=pool._max_connections,
        max_keepalive_connections=pool._max_keepalive_connections, keepalive_expiry=pool._keepalive_expiry,
        http1=pool._http1, http2=pool._http2, network_backend=_PublicAddressBackend())
    return transport


class HttpCache:
    """Raw downloads on disk with ETag/Last-Modified revalidation after a TTL."""

    def __init__(
        self,
        root: Path,
        *,
        ttl: float,
        timeout: float,
        offline: bool,
        max_stale: float,
        clock: Callable[[], float],
    ) -> None:
        self.root = root
        self.ttl = ttl
        self.timeout = timeout
        self.offline = offline
        self.max_stale = max_stale
        self.clock = clock
        self.counts: Counter[str] = Counter()
        self._client: httpx.Client | None = None
        self._guarded_client: httpx.Client | None = None  # template repositories: pinned, public addresses only
        self._lock = threading.Lock()
        self._url_locks: dict[str, threading.Lock] = {}

    def close(self) -> None:
        with self._lock:
            for client in (self._client, self._guarded_client):
                if client is not None:
                    client.close()
            self._client = self._guarded_client = None

    def _http(self, guarded: bool = False) -> httpx.Client:
        with self._lock:
            if guarded:
                if self._guarded_client is None:
                    self._guarded_client = httpx.Client(
                        timeout=httpx.Timeout(self.timeout), follow_redirects=False,
                        headers={"User-Agent": _USER_AGENT}, transport=_pinned_transport(), trust_env=False)
                return self._guarded_client
            if self._client is None:
                self._client = httpx.Client(
                    timeout=httpx.Timeout(self.timeout),
                    follow_redirects=False,
                    headers={"User-Agent": _USER_AGENT},
                )
            return self._client

    def _paths(self, url: str) -> tuple[Path, Path]:
        h = hashlib.sha256(url.encode()).hexdigest()[:32]
        return self.root / f"{h}.body", self.root / f"{h}.meta.json"

    def _url_lock(self, url: str) -> threading.Lock:
        with self._lock:
            return self._url_locks.setdefault(url, threading.Lock())

    @staticmethod
    def _read_meta(path: Path) -> dict[str, Any] | None:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    @staticmethod
    def _write_json(path: Path, data: dict[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".{_os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(data))
        _os.replace(tmp, path)

    def get(
        self, url: str, *, guard: Callable[[str], None] | None = None, expect_sha256: str | None = None
    ) -> Fetched:
        with self._url_lock(url):
            return self._get(url, guard, expect_sha256)

    def _get(self, url: str, guard: Callable[[str], None] | None, expect_sha256: str | None) -> Fetched:
        body, meta_path = self._paths(url)
        meta = self._read_meta(meta_path)
        now = self.clock()
        have = bool(meta and meta.get("status") == 200 and meta.get("sha256") and body.exists())
        fresh = bool(meta and now - float(meta.get("checked_at", 0)) < self.ttl)

        def cached(status: int, warning: str | None = None) -> Fetched:
            assert meta is not None
            return Fetched(body, meta["sha256"], float(meta["checked_at"]), True, status, warning)

        if meta and meta.get("status") == 404 and fresh and not self.offline:
            raise NotFound(url)
        if have and expect_sha256 and meta and meta.get("sha256") == expect_sha256:
            return cached(0)  # content-addressed by the repomd checksum: cannot be stale
        if have and fresh:
            return cached(0)
        if self.offline:
            if have and meta:
                return cached(0, f"offline: cached copy is {age_text(now - float(meta['checked_at']))} old")
            raise FetchError("offline and not cached")
        headers: dict[str, str] = {}
        if have and meta:
            if meta.get("etag"):
                headers["If-None-Match"] = meta["etag"]
            if meta.get("last_modified"):
                headers["If-Modified-Since"] = meta["last_modified"]
        try:
            status, resp_headers, tmp, sha = self._download(url, headers, guard, body)
        except (httpx.HTTPError, OSError, FetchError) as e:
            self.counts["error"] += 1
            reason = str(e) or type(e).__name__
            if (
                have
                and meta
                and not isinstance(e, GuardError)
                and now - float(meta["checked_at"]) < self.max_stale
            ):
                logger.warning("refresh of %s failed (%s); using cached copy", url, reason)
                return cached(
                    0,
                    f"refresh failed ({reason}); using cached copy "
                    f"{age_text(now - float(meta['checked_at']))} old",
                )
            raise FetchError(reason) from e
        self.counts[str(status)] += 1
        if status == 304 and have and meta:
            meta["checked_at"] = now
            self._write_json(meta_path, meta)
            return cached(304)
        if status in (404, 410):
            self._write_json(meta_path, {"url": url, "status": 404, "checked_at": now})
            with contextlib.suppress(OSError):
                body.unlink()
            raise NotFound(url)
        if status != 200 or tmp is None:
            if have and meta and now - float(meta["checked_at"]) < self.max_stale:
                return cached(0, f"HTTP {status}; using cached copy")
            raise FetchError(f"HTTP {status}")
        _os.replace(tmp, body)
        meta = {
            "url": url,
            "status": 200,
            "checked_at": now,
            "fetched_at": now,
            "sha256": sha,
            "etag": resp_headers.get("etag"),
            "last_modified": resp_headers.get("last-modified"),
            "size": body.stat().st_size,
        }
        self._write_json(meta_path, meta)
        return Fetched(body, sha, now, False, 200)

    def _download(
        self, url: str, headers: dict[str, str], guard: Callable[[str], None] | None, body: Path
    ) -> tuple[int, httpx.Headers, Path | None, str]:
        client = self._http(guarded=guard is not None)
        for _ in range(6):
            if guard is not None:
                guard(url)
            with client.stream("GET", url, headers=headers) as r:
                if r.is_redirect and r.headers.get("location"):
                    url = urljoin(url, r.headers["location"])
                    if urlsplit(url).scheme not in ("http", "https"):
                        raise FetchError(f"redirect to unsupported URL {url}")
                    continue
                if r.status_code != 200:
                    return r.status_code, r.headers, None, ""
                body.parent.mkdir(parents=True, exist_ok=True)
                tmp = body.with_name(body.name + f".{_os.getpid()}.{threading.get_ident()}.part")
                h = hashlib.sha256()
                size = 0
                try:
                    with open(tmp, "wb") as f:
                        for chunk in r.iter_bytes(1 << 20):
                            size += len(chunk)
                            if size > MAX_DOWNLOAD_BYTES:
                                raise FetchError("download larger than the size limit")
                            h.update(chunk)
                            f.write(chunk)
                except BaseException:
                    with contextlib.suppress(OSError):
                        tmp.unlink()
                    raise
                return 200, r.headers, tmp, h.hexdigest()
        raise FetchError("too many redirects")


def age_text(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"

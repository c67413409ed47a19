"""Template directories in an S3-compatible bucket (``OIC_AI_TEMPLATES_DIR=s3://bucket/prefix``).

Read with pyarrow's S3 file system (pyarrow is already a dependency of LanceDB, so nothing new to install),
configured from the same ``ai.storage`` settings LanceDB gets as storage options: one endpoint, one set of
credentials for the index and the templates. A listing gives each object's size and modification time,
which play the part of a local file's fingerprint; the index keys such templates by their ``s3://`` URI, so
every replica agrees on the row ids whatever its local paths.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit

from ..core.config import StorageSettings

log = logging.getLogger(__name__)

SKIPPED_DIRS = ("files", "node_modules")


def split_uri(uri: str) -> tuple[str, str]:
    """'s3://bucket/a/b' -> ('bucket', 'a/b')."""
    parts = urlsplit(uri)
    return parts.netloc, parts.path.strip("/")


def s3_filesystem(storage: StorageSettings) -> Any:
    from pyarrow import fs

    kwargs: dict[str, Any] = {}
    if storage.endpoint:
        endpoint = urlsplit(storage.endpoint)
        if endpoint.scheme and endpoint.netloc:
            kwargs["endpoint_override"] = endpoint.netloc + endpoint.path.rstrip("/")
            kwargs["scheme"] = endpoint.scheme
        else:
            kwargs["endpoint_override"] = storage.endpoint
            kwargs["scheme"] = "http" if storage.allow_http else "https"
    if storage.region:
        kwargs["region"] = storage.region
    if storage.access_key_id and storage.secret_access_key is not None:
        kwargs["access_key"] = storage.access_key_id
        kwargs["secret_key"] = storage.secret_access_key.get_secret_value()
        if storage.session_token is not None:
            kwargs["session_token"] = storage.session_token.get_secret_value()
    if storage.virtual_hosted_style:
        kwargs["force_virtual_addressing"] = True
    return fs.S3FileSystem(**kwargs)


class ObjectRoot:
    """One ``s3://bucket/prefix`` template directory."""

    def __init__(self, uri: str, storage: StorageSettings, suffixes: tuple[str, ...]):
        self.uri = uri.rstrip("/")
        self.bucket, self.prefix = split_uri(self.uri)
        self._storage = storage
        self._suffixes = suffixes
        self._fs: Any = None

    @property
    def fs(self) -> Any:
        if self._fs is None:
            self._fs = s3_filesystem(self._storage)
        return self._fs

    def _base(self) -> str:
        return f"{self.bucket}/{self.prefix}" if self.prefix else self.bucket

    def scan(self) -> list[tuple[str, int, int]]:
        """(path relative to the prefix, size, mtime_ns) of every template object; [] when unreachable."""
        from pyarrow import fs

        base = self._base()
        try:
            infos = self.fs.get_file_info(fs.FileSelector(base, recursive=True, allow_not_found=True))
        except OSError as exc:
            log.warning("cannot list templates in %s: %s", self.uri, exc)
            raise
        out: list[tuple[str, int, int]] = []
        for info in infos:
            if info.type != fs.FileType.File:
                continue
            rel = info.path[len(base):].lstrip("/")
            parts = rel.split("/")
            if any(p.startswith(".") for p in parts) or any(p in SKIPPED_DIRS for p in parts[:-1]):
                continue
            if not rel.endswith(self._suffixes):
                continue
            out.append((rel, int(info.size or 0), int(info.mtime_ns or 0)))
        return out

    def read(self, rel: str) -> bytes:
        with self.fs.open_input_stream(f"{self._base()}/{rel}") as stream:
            return stream.read()

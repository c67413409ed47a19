"""Recognising a full disk (or an exhausted quota) behind the errors of LanceDB, SQLite and the OS.

LanceDB reports ENOSPC as a Rust error string with a source path in it, SQLite as "database or disk is
full": neither tells the user which directory filled up or what to do. :class:`DiskFullError` does.
"""

from __future__ import annotations

import errno
from pathlib import Path

_MARKERS = ("no space left on device", "os error 28", "disk quota exceeded", "os error 122",
            "database or disk is full")


class DiskFullError(RuntimeError):
    """A write failed because the disk (or quota) holding ``where`` is full."""

    def __init__(self, where: Path | str, what: str):
        self.where = str(where)
        super().__init__(f"disk full at {where}: {what} could not be written (no space left on the device); "
                         "free some space there, or point the cache elsewhere with OIC_AI_CACHE_DIR")


def is_disk_full(exc: BaseException) -> bool:
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", -1)):
        return True
    text = str(exc).lower()
    return any(marker in text for marker in _MARKERS)

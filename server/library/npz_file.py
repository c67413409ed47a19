"""Cache files of arrays plus a small JSON document, in numpy's ``.npz`` (read with ``allow_pickle=False``),
written atomically: several servers may share a cache dir, and a reader sees the old file or the new one."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)


def write(path: Path, meta: dict[str, Any], arrays: dict[str, np.ndarray], prefix: str) -> None:
    """Write ``meta`` (JSON) and ``arrays`` to ``path`` through a temporary file named ``prefix``-something."""
    abandoned(path.parent, prefix)
    blob = np.frombuffer(json.dumps(meta, separators=(",", ":")).encode(), dtype=np.uint8)
    fd, temp = tempfile.mkstemp(prefix=prefix, suffix=".npz", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            members: dict[str, Any] = {"meta": blob, **arrays}
            np.savez(handle, **members)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def read(path: Path) -> tuple[Any, dict[str, np.ndarray]]:
    """The JSON document and every array; OSError, ValueError or zipfile's BadZipFile when it cannot be read."""
    with np.load(path, allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    return json.loads(bytes(arrays.pop("meta")).decode()), arrays


def read_kept(path: Path, what: str) -> tuple[Any, dict[str, np.ndarray]] | None:
    """:func:`read`, or None when the file is missing or cannot be read: a file kept between starts is then made
    again, never an error (``what`` names it in the log)."""
    try:
        return read(path)
    except FileNotFoundError:
        return None
    except Exception as exc:  # noqa: BLE001 - zipfile, numpy and json each raise their own types
        log.info("%s at %s not used: %s", what, path, exc)
        return None


def abandoned(directory: Path, prefix: str, age_s: float = 3600.0, suffix: str = ".npz") -> None:
    """Remove temporary files of writers killed mid-write (a finished write renames its file)."""
    now = time.time()
    for temp in directory.glob(f"{prefix}*{suffix}"):
        with contextlib.suppress(OSError):
            if now - temp.stat().st_mtime > age_s:
                temp.unlink()

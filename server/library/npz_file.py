"""Cache files of arrays plus a small JSON document, in numpy's ``.npz`` (read with ``allow_pickle=False``),
written atomically: several servers may share a cache dir, and a reader sees the old file or the new one."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import struct
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
from numpy.lib import format as npy_format

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
    """The JSON document and every array; OSError, ValueError or zipfile's BadZipFile when it cannot be read.

    Members stored uncompressed (what :func:`write` makes) are read straight from the file, one read each: through
    zipfile, numpy copies them in chunks and checks a CRC as it goes, 0.07-0.3 s for the 80 MB of full-text
    postings at 100,000 templates against ~0.02 s. The arrays' own checks (shape, dtype, what their readers
    verify) stay; a torn file is not possible, :func:`write` renames a finished one into place.
    """
    arrays: dict[str, np.ndarray] = {}
    with zipfile.ZipFile(path) as archive, open(path, "rb") as handle:
        for info in archive.infolist():
            name = info.filename.removesuffix(".npy")
            if info.compress_type != zipfile.ZIP_STORED:
                with archive.open(info) as member:
                    arrays[name] = npy_format.read_array(member, allow_pickle=False)
                continue
            handle.seek(info.header_offset)
            local = handle.read(30)  # the local header: its name and extra field lengths end it
            if len(local) != 30 or local[:4] != b"PK\x03\x04":
                raise zipfile.BadZipFile(f"{path}: no local header for {info.filename}")
            name_length, extra_length = struct.unpack("<HH", local[26:30])
            handle.seek(info.header_offset + 30 + name_length + extra_length)
            array = npy_format.read_array(handle, allow_pickle=False)
            if handle.tell() > info.header_offset + 30 + name_length + extra_length + info.file_size:
                raise ValueError(f"{path}: {info.filename} runs past its member")
            arrays[name] = array
    if "meta" not in arrays:
        raise ValueError(f"{path}: no meta document")
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

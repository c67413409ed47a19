"""Saving a template into the user's templates directory (``ai.save_dir``), where search finds it."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)


class TemplateSaver:
    def __init__(self, directory: Path, after_save: Callable[[Path], None] = lambda path: None):
        self.directory = directory
        self._after_save = after_save  # e.g. sync the index when the directory is one of its roots

    def check_name(self, save_as: str, overwrite: bool) -> Path:
        """The path ``save_as`` would write to; ValueError for names that escape the directory or clobber."""
        name = save_as.strip()
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,120}", name) or ".." in name:
            raise ValueError(f"save_as '{save_as}' is not a plain file name; use letters, digits, '.', '_' and '-' "
                             "(no directories), e.g. my-edge-image.yml")
        if not name.endswith((".yml", ".yaml")):
            name += ".yml"
        directory = self.directory
        path = (directory / name).resolve()
        if path.parent != directory.resolve():
            raise ValueError(f"save_as '{save_as}' would leave the save directory {directory}")
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise ValueError(f"refusing to write {path}: it is a symlink or not a regular file")
        if path.exists() and not overwrite:
            raise ValueError(f"{path.name} already exists in {directory}; pass overwrite=true to replace it")
        return path

    def save(self, text: str, save_as: str, overwrite: bool) -> Path:
        path = self.check_name(save_as, overwrite)
        path.parent.mkdir(parents=True, exist_ok=True)
        # A fresh, randomly named temp file created with O_EXCL (mkstemp): nothing planted in the directory
        # (a symlink at a predictable temp name) can redirect the write. os.replace then renames the file
        # itself, atomically: readers never see half a template, and a symlink at the final name is replaced,
        # not followed.
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(text.encode("utf-8"))
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp_name, 0o644)  # mkstemp makes it 0600; a template is meant to be shared like the others
            os.replace(tmp_name, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)
            raise
        self._after_save(path)
        log.info("saved template to %s", path)
        return path

"""Storage trouble says what happened and where: a full disk under the index or the conversation store, and a
conversation store that moved to a fallback cache directory."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from image_composer_mcp.server.core.diskfull import DiskFullError, is_disk_full
from image_composer_mcp.server.library.index import TemplateIndex

from tests.conftest import HashEmbedder, write_template


@contextlib.contextmanager
def small_disk(where: Path, size: str = "4m") -> Iterator[Path]:
    """A real, tiny tmpfs (needs root and mount rights; skipped elsewhere)."""
    where.mkdir()
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                              capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        pytest.skip("cannot mount a tmpfs here")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, timeout=30)


def _fill(directory: Path) -> None:
    with contextlib.suppress(OSError), open(directory / "filler", "wb") as fh:
        while True:
            fh.write(b"\0" * 65536)
            fh.flush()
            os.fsync(fh.fileno())


def test_index_write_on_a_full_disk_says_disk_full(tmp_path: Path) -> None:
    root = tmp_path / "templates"
    root.mkdir()
    write_template(root, "alpha")
    with small_disk(tmp_path / "disk") as disk:
        index = TemplateIndex(disk / "cache", [root], HashEmbedder())
        index.sync()
        _fill(disk)
        for i in range(20):
            write_template(root, f"more-{i}", description="x " * 2000)
        with pytest.raises(DiskFullError) as caught:
            index.sync()
    message = str(caught.value)
    assert message.startswith(f"disk full at {disk / 'cache'}")
    assert ".rs:" not in message and "LanceError" not in message and "OIC_AI_CACHE_DIR" in message


def test_conversation_store_on_a_full_disk_says_disk_full(tmp_path: Path) -> None:
    from image_composer_mcp.server.agent.conversations_sqlite import SqliteConversationStore

    with small_disk(tmp_path / "disk", size="1m") as disk:
        store = SqliteConversationStore(disk / "conversations.sqlite3")
        cid = store.create().id
        _fill(disk)
        with pytest.raises(DiskFullError) as caught:
            for _ in range(200):
                store.add_message(cid, "user", "y" * 200_000)
        store.close()
    assert str(caught.value).startswith(f"disk full at {disk}")


def test_disk_full_recognition() -> None:
    lance = OSError("LanceError(IO): Generic LocalFileSystem error: Unable to copy file: No space left on device "
                    "(os error 28), /home/build/.cargo/registry/src/lance-io/src/object_store.rs:123:45")
    assert is_disk_full(lance) and is_disk_full(OSError(28, "No space left on device"))
    assert not is_disk_full(OSError(13, "Permission denied"))


def test_conversations_in_a_moved_store_say_why(tmp_path: Path) -> None:
    from image_composer_mcp.server.agent.conversations import ConversationNotFound
    from image_composer_mcp.server.core.config import load_settings
    from image_composer_mcp.server.engine import Providers, build_engine

    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be")
    settings = load_settings(env={"OIC_AI_CACHE_DIR": str(blocker / "cache"),
                                  "OIC_AI_TEMPLATES_DIR": str(tmp_path)})
    engine = build_engine(settings, Providers(fallback_cache_dir=tmp_path / "fallback"))
    with pytest.raises(ConversationNotFound) as caught:
        engine.conversations.get("from-an-earlier-run")
    message = str(caught.value)
    assert "does not exist in this run's conversation store" in message
    assert str(tmp_path / "fallback") in message and str(blocker / "cache") in message
    assert "moved because" in message and "Not a directory" in message

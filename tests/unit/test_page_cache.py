"""page_cache.read_through: reads the range it is given, once, on its own descriptor, and never raises."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from image_composer_mcp.server.library import page_cache


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "rows.f32"
    path.write_bytes(os.urandom(3 * page_cache.CHUNK + 123))
    return path


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    seen: list[tuple[int, int]] = []
    real = os.preadv

    def recording(fd: int, buffers: list, offset: int) -> int:  # type: ignore[type-arg]
        n = real(fd, buffers, offset)
        seen.append((offset, n))
        return n

    monkeypatch.setattr(page_cache.os, "preadv", recording)
    return seen


def _covered(reads: list[tuple[int, int]]) -> tuple[int, int]:
    start = reads[0][0]
    for (offset, n), (after, _) in zip(reads, reads[1:], strict=False):
        assert after == offset + n, "the reads leave a gap or overlap"
    return start, reads[-1][0] + reads[-1][1]


def test_reads_the_whole_file_to_its_end(data_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = _reads(monkeypatch)
    with open(data_file, "rb") as f:
        page_cache.read_through(f.fileno()).join(10)
    assert _covered([r for r in reads if r[1]]) == (0, data_file.stat().st_size)


def test_reads_only_the_range_asked(data_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = _reads(monkeypatch)
    with open(data_file, "rb") as f:
        page_cache.read_through(f.fileno(), 1000, page_cache.CHUNK + 7).join(10)
    assert _covered(reads) == (1000, 1000 + page_cache.CHUNK + 7)


def test_the_callers_descriptor_may_close_at_once_and_none_is_left_open(data_file: Path) -> None:
    before = set(os.listdir("/proc/self/fd")) if Path("/proc/self/fd").is_dir() else None
    f = open(data_file, "rb")  # noqa: SIM115 - closed before the thread is done on purpose
    thread = page_cache.read_through(f.fileno())
    f.close()
    thread.join(10)
    assert not thread.is_alive()
    if before is not None:
        assert set(os.listdir("/proc/self/fd")) <= before


def test_a_read_error_ends_the_thread_quietly(data_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(fd: int, buffers: list, offset: int) -> int:  # type: ignore[type-arg]
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(page_cache.os, "preadv", failing)
    with open(data_file, "rb") as f:
        thread = page_cache.read_through(f.fileno())
        thread.join(10)
    assert not thread.is_alive()

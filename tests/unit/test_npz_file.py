"""Cache files of arrays and a JSON document (server/library/npz_file.py): what is written reads back exactly,
through the direct read of stored members and numpy's own for compressed ones; a damaged file is an error that
``read_kept`` turns into "make it again"."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from image_composer_mcp.server.library import npz_file


def _arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {"doc": rng.integers(0, 1000, 100_003, dtype=np.int32), "weight": rng.random(100_003, dtype=np.float32),
            "grid": np.asfortranarray(rng.random((37, 5))), "empty": np.zeros(0, dtype=np.int64),
            "bytes": np.frombuffer("a\nb\nnaïve".encode(), dtype=np.uint8)}


def test_round_trip_is_exact(tmp_path: Path) -> None:
    path = tmp_path / "x.npz"
    arrays = _arrays()
    npz_file.write(path, {"format": 1, "words": ["ä", "b"]}, arrays, "x-")
    meta, back = npz_file.read(path)
    assert meta == {"format": 1, "words": ["ä", "b"]}
    assert set(back) == set(arrays)
    for name, array in arrays.items():
        assert back[name].dtype == array.dtype and back[name].shape == array.shape
        np.testing.assert_array_equal(back[name], array)
    assert back["grid"].flags.f_contiguous
    assert back["doc"].flags.writeable  # owned memory, not a view of a file


def test_compressed_members_are_read_too(tmp_path: Path) -> None:
    path = tmp_path / "c.npz"
    meta = np.frombuffer(b'{"k": 2}', dtype=np.uint8)
    np.savez_compressed(path, meta=meta, doc=np.arange(5000, dtype=np.int32))
    got, arrays = npz_file.read(path)
    assert got == {"k": 2}
    np.testing.assert_array_equal(arrays["doc"], np.arange(5000, dtype=np.int32))


@pytest.mark.parametrize("cut", [0.3, 0.6, 0.95])
def test_a_truncated_file_is_an_error_and_not_kept(tmp_path: Path, cut: float) -> None:
    path = tmp_path / "t.npz"
    npz_file.write(path, {"format": 1}, _arrays(), "t-")
    raw = path.read_bytes()
    path.write_bytes(raw[: int(len(raw) * cut)])
    with pytest.raises(Exception) as info:
        npz_file.read(path)
    assert isinstance(info.value, (OSError, ValueError, EOFError)) or "zip" in type(info.value).__name__.lower()
    assert npz_file.read_kept(path, "test arrays") is None


def test_a_member_that_runs_past_its_end_is_an_error(tmp_path: Path) -> None:
    """A header claiming more items than its member holds, with other members' bytes after it."""
    path = tmp_path / "m.npz"
    npz_file.write(path, {"format": 1}, {"a": np.arange(10, dtype=np.int64), "b": np.arange(10_000, dtype=np.int64)},
                   "m-")
    raw = bytearray(path.read_bytes())
    header = raw.index(b"'shape': (10,)")
    raw[header:header + len(b"'shape': (10,)")] = b"'shape': (99,)"
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError):
        npz_file.read(path)


def test_no_meta_document_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "n.npz"
    np.savez(path, doc=np.arange(3))
    with pytest.raises(ValueError, match="meta"):
        npz_file.read(path)
    assert npz_file.read_kept(path, "test arrays") is None

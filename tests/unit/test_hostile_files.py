"""Hostile templates directories: special files, symlinks, oversize and broken files, and save_as races.

The index runs in a subprocess with a memory cap and a time-out for the cases that used to hang the reader
(a FIFO) or grow it without bound (a symlink to /dev/zero), so a regression fails the test instead of taking
the test runner or the machine down with it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest
from image_composer_mcp.server.library.index import TemplateIndex

from tests.conftest import HashEmbedder, write_template

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX special files")

SYNC_SCRIPT = """
import json, resource, sys
from pathlib import Path
resource.setrlimit(resource.RLIMIT_DATA, (3 << 30, 3 << 30))  # /dev/zero read whole would hit this, not the host
from image_composer_mcp.server.library.index import TemplateIndex
from tests.conftest import HashEmbedder
index = TemplateIndex(Path(sys.argv[1]), [Path(sys.argv[2])], HashEmbedder())
index.follow_external_symlinks = sys.argv[3] == "1"
report = index.sync()
print(json.dumps({"names": sorted(index.names()), "problems": {Path(p.path).name: p.message for p in report.problems}}))
"""


def _hostile_library(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "templates"
    root.mkdir()
    write_template(root, "good")
    os.mkfifo(root / "pipe.yml")
    (root / "zero.yml").symlink_to("/dev/zero")
    (root / "null.yaml").symlink_to("/dev/null")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    write_template(outside, "secret")
    (root / "outside.yml").symlink_to(outside / "secret.yml")
    (root / "outside-dir.yml").symlink_to(outside)
    (root / "inside.yml").symlink_to(root / "good.yml")
    (root / "dangling.yml").symlink_to(root / "missing.yml")
    (root / "dir.yml").mkdir()  # a directory with a template's name is a directory: walked, not read
    write_template(root / "dir.yml", "nested")
    (root / "huge.yml").write_bytes(b"a: " + b"x" * (3 * 1024 * 1024))
    (root / "deep.yml").write_text("? " * 30000 + "x")  # used to SIGSEGV the server at every start
    return root, outside


def _sync_in_subprocess(tmp_path: Path, root: Path, follow_external: bool = False) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", SYNC_SCRIPT, str(tmp_path / "cache"), str(root),
                           "1" if follow_external else "0"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_special_files_and_symlinks_are_skipped_and_reported(tmp_path: Path) -> None:
    root, outside = _hostile_library(tmp_path)
    result = _sync_in_subprocess(tmp_path, root)
    assert result["names"] == ["dir.yml__nested", "good", "inside"]
    problems = result["problems"]
    assert "FIFO" in problems["pipe.yml"]
    assert "symlink to /dev/zero, outside the templates directory" in problems["zero.yml"]
    assert "symlink to /dev/null" in problems["null.yaml"]
    assert "outside the templates directory" in problems["outside.yml"]
    assert "templates_follow_external_symlinks" in problems["outside.yml"]
    assert "outside the templates directory" in problems["outside-dir.yml"]
    assert "broken symlink" in problems["dangling.yml"]
    assert "over the 1,048,576-byte template limit" in problems["huge.yml"]
    assert "nested more than" in problems["deep.yml"]


def test_external_symlinks_are_followed_when_configured(tmp_path: Path) -> None:
    root, _outside = _hostile_library(tmp_path)
    result = _sync_in_subprocess(tmp_path, root, follow_external=True)
    assert "outside" in result["names"]
    # Still only regular files: the policy setting widens where, not what.
    assert "FIFO" in result["problems"]["pipe.yml"] and "character device" in result["problems"]["zero.yml"]
    assert "character device" in result["problems"]["null.yaml"]
    assert "directory" in result["problems"]["outside-dir.yml"]


def test_fifo_does_not_block_a_sync(tmp_path: Path) -> None:
    """In-process too: the sync thread must finish even though nobody ever writes to the FIFO."""
    root = tmp_path / "t"
    root.mkdir()
    write_template(root, "good")
    os.mkfifo(root / "x.yml")
    index = TemplateIndex(tmp_path / "cache", [root], HashEmbedder())
    done: list[object] = []
    worker = threading.Thread(target=lambda: done.append(index.sync()), daemon=True)
    worker.start()
    worker.join(60)
    assert done, "sync blocked on a FIFO"
    assert index.names() == ["good"]
    assert [Path(p.path).name for p in index.problems] == ["x.yml"]
    # Unblock the old code's open() so the daemon thread cannot linger past the test.
    if worker.is_alive():
        with open(root / "x.yml", "wb"):
            pass


def test_broken_files_are_not_reread_until_they_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import image_composer_mcp.server.library.index_sync as index_mod

    root = tmp_path / "t"
    root.mkdir()
    write_template(root, "good")
    broken = root / "broken.yml"
    broken.write_text("image: [unclosed\n" + "# padding\n" * 1000)
    reads: list[str] = []
    real_read = index_mod.read_template_file

    def counting_read(path, *args, **kwargs):
        reads.append(Path(path).name)
        return real_read(path, *args, **kwargs)

    monkeypatch.setattr(index_mod, "read_template_file", counting_read)
    index = TemplateIndex(tmp_path / "cache", [root], HashEmbedder())
    first = index.sync()
    assert reads.count("broken.yml") == 1 and len(first.problems) == 1
    for _ in range(3):
        again = index.sync()
        assert [p.message for p in again.problems] == [p.message for p in first.problems]  # still reported
    assert reads.count("broken.yml") == 1
    assert not index._differs(index.scan())  # the background scanner sees nothing to do either
    broken.write_text(broken.read_text().replace("[unclosed", "{name: fixed}\ntarget: {os: ubuntu}"))
    os.utime(broken, ns=(broken.stat().st_atime_ns, broken.stat().st_mtime_ns + 10**9))
    assert index._differs(index.scan())
    fixed = index.sync()
    assert reads.count("broken.yml") == 2 and not fixed.problems
    assert "broken" in index.names()


def _engine(tmp_path: Path, **env: str):
    from image_composer_mcp.server.core.config import load_settings
    from image_composer_mcp.server.engine import build_engine

    root = tmp_path / "library"
    root.mkdir(exist_ok=True)
    # save_as writes into the library here on purpose: the planted symlink sits in the target directory.
    settings = load_settings(env={"OIC_AI_TEMPLATES_DIR": str(root), "OIC_AI_CACHE_DIR": str(tmp_path / "cache"),
                                  "OIC_AI_SAVE_DIR": str(root), **env})
    return build_engine(settings), root


def test_save_as_does_not_write_through_a_planted_temp_symlink(tmp_path: Path) -> None:
    engine, root = _engine(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("original")
    (root / ".mine.yml.tmp").symlink_to(victim)  # the temp name the old code used
    saved = engine.save_template("image: {name: x}\n", "mine.yml", overwrite=False)
    assert victim.read_text() == "original"
    assert saved == root / "mine.yml" and not saved.is_symlink() and saved.read_text() == "image: {name: x}\n"
    assert not [p for p in root.iterdir() if p.name.endswith(".tmp") and p.name != ".mine.yml.tmp"]


def test_healthz_is_degraded_when_the_index_cannot_load(tmp_path: Path) -> None:
    """An index that cannot be built (here: embeddings from an Ollama that is not there) is not 'ok'."""
    from image_composer_mcp.server.transport.http import Gateway

    engine, root = _engine(tmp_path, OIC_AI_EMBEDDING_PROVIDER="ollama", OLLAMA_HOST="http://127.0.0.1:9",
                           OIC_AI_OLLAMA_TIMEOUT="2")
    write_template(root, "good")
    engine.start()
    with pytest.raises(RuntimeError):
        engine.ready(120)

    async def inner(scope, receive, send):  # never reached: /healthz is answered by the gateway
        raise AssertionError("health check passed through")

    gateway = Gateway(inner, engine, token="t" * 32, transport="streamable-http", version="test")

    async def probe() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=gateway), base_url="http://127.0.0.1") as c:
            return await c.get("/healthz")

    import anyio

    response = anyio.run(probe)
    assert response.status_code == 503
    assert response.json()["status"] == "degraded" and response.json()["index"] == "error"
    engine.close()


def test_indexed_template_swapped_for_a_fifo_is_refused_not_a_hang(tmp_path: Path) -> None:
    """Reads after indexing (validate by name, the template:// resource, grounding) use the same safe reader."""
    engine, root = _engine(tmp_path)
    write_template(root, "good")
    engine.ready(120)
    (root / "good.yml").unlink()
    os.mkfifo(root / "good.yml")
    outcome: list[BaseException | object] = []

    def read() -> None:
        try:
            outcome.append(engine.template_text(None, "good"))
        except BaseException as exc:  # noqa: BLE001 - the outcome is what the test checks
            outcome.append(exc)

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(60)
    if worker.is_alive():  # old behaviour: blocked on the FIFO; unblock it so the thread ends
        with open(root / "good.yml", "wb"):
            pass
    assert outcome, "reading the template blocked on a FIFO"
    assert isinstance(outcome[0], ValueError) and "FIFO" in str(outcome[0])
    engine.close()

"""The mirror on disk (server/library/snapshot.py): a later start searches from it without opening LanceDB,
with the candidates the table gives, and only while it still describes the template files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from image_composer_mcp.server.library import snapshot, term_counts
from image_composer_mcp.server.library.index import TemplateIndex
from image_composer_mcp.server.library.lance_table import build_where

from tests.conftest import LIBRARY, HashEmbedder, write_template

REPO = Path(__file__).resolve().parents[2]
QUERIES = ["ubuntu edge gateway with docker", "minimal arm image", "secure boot immutable", "cloud vm", "x", ""]
FILTERS = [{}, {"arch": "x86_64"}, {"os": "ubuntu", "arch": "aarch64"}, {"dist": "no-such-dist"}]


def _candidates(index: TemplateIndex, emb: HashEmbedder) -> dict:
    """Every query's candidates once the mirror's full-text leg is built (LanceDB's scores differ in the last
    float32 bit while it answers that leg)."""
    index.candidates(emb.embed_query("docker"), "docker", None, 5, filters={})
    index.settle()
    out = {}
    for query in QUERIES:
        for filters in FILTERS:
            found = index.candidates(emb.embed_query(query or "y"), query, build_where(filters), 20, filters=filters)
            out[query, tuple(filters.items())] = [(index.catalog[c.uid].name, c.cosine, c.bm25, c.in_vector_leg,
                                                   c.in_text_leg) for c in found]
    return out


def _first_start(cache: Path, roots: list[Path], emb: HashEmbedder) -> TemplateIndex:
    """A start from the table whose first search leaves the mirror on disk."""
    index = TemplateIndex(cache, roots, emb)
    report = index.start()
    assert report is not None and not index.from_snapshot
    index.candidates(emb.embed_query("docker"), "docker", None, 5, filters={})
    index.settle()
    assert index.snapshot_path is not None and index.snapshot_path.is_file()
    return index


def test_a_second_start_searches_from_the_mirror_on_disk_with_the_table_s_candidates(tmp_path: Path) -> None:
    emb = HashEmbedder(dimensions=64)
    first = _first_start(tmp_path / "cache", [LIBRARY], emb)
    expected = _candidates(first, emb)
    second = TemplateIndex(tmp_path / "cache", [LIBRARY], emb)
    report = second.start()
    assert second.from_snapshot and second._table is None
    assert second.source == "the mirror on disk; the table opens at the first change"
    assert report is not None and report.embedded == 0 and report.hits == len(first.catalog) == report.scanned
    assert second.names() == first.names()
    assert [dataclass_values(r) for r in second.records()] == [dataclass_values(r) for r in first.records()]
    assert _candidates(second, emb) == expected
    assert second._table is None  # every search above was answered without opening LanceDB
    assert second.refresh_if_stale(0) is None and second._table is None  # the files did not change


def dataclass_values(record: object) -> tuple:
    import dataclasses

    return tuple(getattr(record, f.name) for f in dataclasses.fields(record))  # type: ignore[arg-type]


def test_a_file_changed_since_is_synced_from_the_table_and_written_again(tmp_path: Path) -> None:
    root = tmp_path / "templates"
    root.mkdir()
    write_template(root, "alpha", "edge gateway with docker", "edge, docker", "docker.io")
    write_template(root, "beta", "kiosk browser", "kiosk", "chromium")
    emb = HashEmbedder()
    _first_start(tmp_path / "cache", [root], emb)
    write_template(root, "beta", "robot controller", "robotics", "ros-base")  # a new size: the scan sees it
    changed = TemplateIndex(tmp_path / "cache", [root], emb)
    report = changed.start()
    assert not changed.from_snapshot and report is not None and report.embedded == 1
    assert "robot controller" in changed.by_name("beta").description  # type: ignore[union-attr]

    # Started from the disk mirror, then a file changes: the refresh opens the table and syncs it.
    changed.candidates(emb.embed_query("robot"), "robot", None, 5, filters={})
    changed.settle()
    live = TemplateIndex(tmp_path / "cache", [root], emb)
    live.start()
    assert live.from_snapshot
    write_template(root, "gamma", "cloud vm image", "cloud", "cloud-init")
    report = live.refresh_if_stale(0)
    assert report is not None and report.embedded == 1 and not live.from_snapshot
    names = {live.catalog[c.uid].name for c in live.candidates(emb.embed_query("cloud vm"), "cloud", None, 5,
                                                                filters={})}
    assert "gamma" in names
    live.settle()
    again = TemplateIndex(tmp_path / "cache", [root], emb)
    again.start()
    assert again.from_snapshot and again.by_name("gamma") is not None


def _corrupt_truncated(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _corrupt_garbage(path: Path) -> None:
    path.write_bytes(os.urandom(4096))


def _corrupt_format(path: Path) -> None:
    _rewrite_meta(path, lambda meta: {**meta, "format": snapshot.FORMAT + 1})


def _corrupt_postings(path: Path) -> None:
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    arrays["doc"] = arrays["doc"] + 10_000  # rows that do not exist
    np.savez(path, **arrays)


def _corrupt_codes(path: Path) -> None:
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    arrays["col.packages"] = arrays["col.packages"] + 1_000_000  # values the column does not have
    np.savez(path, **arrays)


def _rewrite_meta(path: Path, change) -> None:
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    meta = change(json.loads(bytes(arrays["meta"]).decode()))
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez(path, **arrays)


@pytest.mark.parametrize("corrupt", [_corrupt_truncated, _corrupt_garbage, _corrupt_format, _corrupt_postings,
                                     _corrupt_codes, lambda p: _rewrite_meta(p, lambda m: {**m, "distinct": {}}),
                                     lambda p: _rewrite_meta(p, lambda m: {**m, "rows": m["rows"] + 1})])
def test_an_unusable_file_is_passed_over_for_the_table(tmp_path: Path, corrupt) -> None:
    emb = HashEmbedder()
    first = _first_start(tmp_path / "cache", [LIBRARY], emb)
    corrupt(first.snapshot_path)
    index = TemplateIndex(tmp_path / "cache", [LIBRARY], emb)
    report = index.start()
    assert not index.from_snapshot and report is not None and report.hits == len(first.catalog)
    assert _candidates(index, emb) == _candidates(first, emb)


def test_another_embedding_model_does_not_use_it(tmp_path: Path) -> None:
    _first_start(tmp_path / "cache", [LIBRARY], HashEmbedder(model_id="test:hash"))
    other = TemplateIndex(tmp_path / "cache", [LIBRARY], HashEmbedder(model_id="test:other"))
    report = other.start()
    assert not other.from_snapshot and report is not None and report.embedded == len(other.catalog)


def test_broken_and_touched_files_are_remembered_across_starts(tmp_path: Path) -> None:
    root = tmp_path / "templates"
    root.mkdir()
    alpha = write_template(root, "alpha", "edge gateway with docker", "edge, docker", "docker.io")
    (root / "broken.yml").write_text("image: [unclosed\n")
    emb = HashEmbedder()
    index = TemplateIndex(tmp_path / "cache", [root], emb)
    first_report = index.start()
    # A new index writes its table in the background, and a search-path sync does not wait for that writer's
    # lock (it returns None: the next one catches up), so the touch is noticed once the table is written.
    index.wait_for_table()
    os.utime(alpha, ns=(alpha.stat().st_atime_ns, alpha.stat().st_mtime_ns + 10**9))  # touched, same text
    assert index.refresh_if_stale(0) is not None  # the sync reads it, finds the same hash, notes the new mtime
    index.candidates(emb.embed_query("docker"), "docker", None, 5, filters={})
    index.settle()
    later = TemplateIndex(tmp_path / "cache", [root], emb)
    report = later.start()
    assert later.from_snapshot and report is not None
    assert [p.path for p in report.problems] == [p.path for p in first_report.problems] == [str(root / "broken.yml")]
    assert later.refresh_if_stale(0) is None and later._table is None


def test_cache_clear_removes_it(tmp_path: Path) -> None:
    emb = HashEmbedder()
    index = _first_start(tmp_path / "cache", [LIBRARY], emb)
    counts = index.snapshot_path.parent / term_counts.FILE  # type: ignore[union-attr]
    term_counts.save(counts, "key", Counter({"docker": 2}))  # kept from 2,000 templates on: stands in for one
    index.clear()
    assert not index.snapshot_path.exists()  # type: ignore[union-attr]
    assert not counts.exists()
    fresh = TemplateIndex(tmp_path / "cache", [LIBRARY], emb)
    report = fresh.start()
    assert not fresh.from_snapshot and report is not None and report.embedded == len(fresh.catalog)


def test_a_shared_index_keeps_none(tmp_path: Path) -> None:
    class Lease:
        held = True

        def try_acquire(self) -> bool:
            return True

        def release(self) -> None:
            pass

    index = TemplateIndex(None, [LIBRARY], HashEmbedder(), uri=str(tmp_path / "shared"), lease=Lease())
    assert index.snapshot_path is None


_SERVER_START = """
import json, sys
from image_composer_mcp.server.core.config import load_settings
from image_composer_mcp.server.engine import build_engine
settings = load_settings(env={"OIC_AI_TEMPLATES_DIR": sys.argv[1], "OIC_AI_CACHE_DIR": sys.argv[2],
                              "OIC_AI_PROVIDER": "offline"})
engine = build_engine(settings)
engine.ready()
outcome = engine.searcher.search("edge gateway with docker", top_k=3)
engine.index.settle()
print(json.dumps({"from_snapshot": engine.index.from_snapshot, "lancedb": "lancedb" in sys.modules,
                  "pyarrow": "pyarrow" in sys.modules,
                  "results": [[r.record.name, round(r.score, 6)] for r in outcome.results]}))
engine.close()
"""


def test_a_warm_server_start_never_imports_lancedb(tmp_path: Path) -> None:
    """The real engine and local model: the second start answers from the mirror and the label cache alone."""
    pytest.importorskip("onnxruntime")
    root = tmp_path / "templates"
    shutil.copytree(LIBRARY, root)
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", _SERVER_START, str(root), str(tmp_path / "cache")],
                              capture_output=True, text=True, cwd=REPO, timeout=300,
                              env={**os.environ, "LANCEDB_LOG": "error"})
        assert done.returncode == 0, done.stderr[-2000:]
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert runs[0]["from_snapshot"] is False and runs[0]["lancedb"] is True
    assert runs[1] == {**runs[0], "from_snapshot": True, "lancedb": False, "pyarrow": False}
    assert (tmp_path / "cache" / "concept-labels.npz").is_file()


def test_a_killed_writer_s_temporary_file_is_removed_by_a_later_write(tmp_path: Path) -> None:
    emb = HashEmbedder()
    index = _first_start(tmp_path / "cache", [LIBRARY], emb)
    directory = index.snapshot_path.parent  # type: ignore[union-attr]
    abandoned, in_progress = directory / ".mirror-abandoned.npz", directory / ".mirror-writing.npz"
    for temp in (abandoned, in_progress):
        temp.write_bytes(b"half a file")
    os.utime(abandoned, (0, 0))
    assert index._mirror is not None
    index._save_snapshot(index._mirror)
    assert not abandoned.exists() and in_progress.exists()  # another writer's file of a moment ago stays


def test_a_new_index_searches_from_memory_while_its_table_is_written(tmp_path: Path) -> None:
    emb = HashEmbedder(dimensions=64)
    index = TemplateIndex(tmp_path / "cache", [LIBRARY], emb)
    report = index.start()
    assert report is not None and report.embedded == len(index.catalog) > 0 and report.hits == 0
    assert not index.from_snapshot and index._mirror is not None and index._mirror.text is not None
    assert index.source in ("memory: a new index, its table being written", "the table, through its in-memory mirror")
    early = _candidates(index, emb)  # answered from memory, whether or not the table is written yet
    index.settle()
    assert index.source == "the table, through its in-memory mirror"  # the same mirror, now the table's
    assert index._table is not None and index._table.count_rows() == len(index.catalog)
    assert len(set(index._table.search().select(["uid"]).limit(10_000).to_arrow().column("uid").to_pylist())) == \
        len(index.catalog)
    assert all(not r.text for r in index.catalog.values())  # the text lives in the table now
    assert _candidates(index, emb) == early
    from_table = TemplateIndex(tmp_path / "cache", [LIBRARY], emb)
    from_table.open()
    assert _candidates(from_table, emb) == early  # the table LanceDB holds gives the same candidates
    later = TemplateIndex(tmp_path / "cache", [LIBRARY], emb)
    again = later.start()
    assert later.from_snapshot and again is not None and again.embedded == 0  # the writer left the mirror


def test_a_new_index_whose_table_cannot_be_written_is_written_by_the_next_sync(tmp_path: Path,
                                                                            monkeypatch) -> None:
    emb = HashEmbedder()
    index = TemplateIndex(tmp_path / "cache", [LIBRARY], emb)
    failing = {"left": 1}
    real_write = index._write

    def write_once_failing(records, progress):
        if failing["left"]:
            failing["left"] -= 1
            raise OSError(28, "No space left on device")
        return real_write(records, progress)

    monkeypatch.setattr(index, "_write", write_once_failing)
    index.start()
    index.settle()
    assert index._table is None and index.catalog  # still searchable from memory
    assert index.candidates(emb.embed_query("docker"), "docker", None, 5, filters={})
    report = index.refresh_if_stale(0)
    assert report is not None and index._table is not None
    assert index._table.count_rows() == len(index.catalog) == report.embedded + report.hits


def test_a_new_empty_library_starts_and_later_finds_its_first_template(tmp_path: Path) -> None:
    root = tmp_path / "templates"
    root.mkdir()
    emb = HashEmbedder()
    index = TemplateIndex(tmp_path / "cache", [root], emb)
    report = index.start()
    assert report is not None and report.scanned == 0 and index.catalog == {}
    assert index.candidates(emb.embed_query("docker"), "docker", None, 5, filters={}) == []
    index.settle()
    write_template(root, "alpha", "edge gateway with docker", "edge, docker", "docker.io")
    assert index.refresh_if_stale(0).embedded == 1  # type: ignore[union-attr]
    found = index.candidates(emb.embed_query("docker"), "docker", None, 5, filters={})
    assert [index.catalog[c.uid].name for c in found] == ["alpha"]


def test_a_new_index_waits_for_a_process_already_writing_it(tmp_path: Path) -> None:
    """Servers starting together on one empty cache dir: the one holding the writer lock embeds, the
    others wait for it (as they wait for a sync) instead of embedding every template again beside it."""
    fcntl = pytest.importorskip("fcntl")
    import threading

    from image_composer_mcp.server.library.lance_table import WRITER_LOCK

    emb = HashEmbedder()
    cache = tmp_path / "cache"
    (cache / "index.lance").mkdir(parents=True)
    other_process = open(cache / "index.lance" / WRITER_LOCK, "a+b")  # noqa: SIM115 - held across the test
    fcntl.flock(other_process, fcntl.LOCK_EX)
    index = TemplateIndex(cache, [LIBRARY], emb)
    reports = []
    starting = threading.Thread(target=lambda: reports.append(index.start()))
    starting.start()
    starting.join(0.5)
    assert starting.is_alive() and emb.calls == []  # waiting for the lock, nothing embedded meanwhile
    fcntl.flock(other_process, fcntl.LOCK_UN)
    other_process.close()
    starting.join(30)
    assert reports and reports[0].embedded == len(index.catalog) > 0 and index._table is not None

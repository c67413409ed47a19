"""The LanceDB table as index and embedding cache: what gets (re-)embedded, when, and what survives restarts."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
from image_composer_mcp.server.library.index import TemplateIndex

from tests.conftest import HashEmbedder, write_template


def _corpus(tmp_path: Path) -> Path:
    root = tmp_path / "templates"
    root.mkdir()
    write_template(root, "alpha", "edge gateway with docker", "edge, docker", "docker.io, openssh-server")
    write_template(root, "beta", "minimal base image", "minimal", "openssh-server")
    write_template(root, "gamma", "cloud vm with cloud-init", "cloud", "cloud-init")
    return root


def test_first_sync_embeds_everything_in_batches(tmp_path: Path):
    root = _corpus(tmp_path)
    emb = HashEmbedder()
    index = TemplateIndex(tmp_path / "cache", [root], emb)
    report = index.sync()
    assert (report.scanned, report.embedded, report.hits) == (3, 3, 0)
    assert sum(emb.calls) == 3 and len(emb.calls) == 1  # one batch
    assert sorted(index.names()) == ["alpha", "beta", "gamma"]
    assert index._table.count_rows() == 3


def test_unchanged_templates_are_never_reembedded_across_restarts(tmp_path: Path):
    root = _corpus(tmp_path)
    TemplateIndex(tmp_path / "cache", [root], HashEmbedder()).sync()
    emb = HashEmbedder()
    index = TemplateIndex(tmp_path / "cache", [root], emb)
    report = index.sync()
    assert (report.embedded, report.hits) == (0, 3)
    assert emb.calls == []
    assert index.by_name("alpha").description == "edge gateway with docker"  # catalog restored from the table


def test_touched_but_identical_file_is_a_cache_hit(tmp_path: Path):
    root = _corpus(tmp_path)
    emb = HashEmbedder()
    index = TemplateIndex(tmp_path / "cache", [root], emb)
    index.sync()
    path = root / "beta.yml"
    before = path.stat()
    later = time.time() + 10
    os.utime(path, (later, later))
    report = index.sync()
    assert (report.embedded, report.hits) == (0, 3)
    assert index.sync().hits == 3  # the touch remembered
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # back to the fingerprint the table has
    emb.calls.clear()
    report = index.sync()
    assert (report.embedded, report.hits) == (0, 3) and emb.calls == []


def test_changed_added_and_removed_templates(tmp_path: Path):
    root = _corpus(tmp_path)
    emb = HashEmbedder()
    index = TemplateIndex(tmp_path / "cache", [root], emb)
    index.sync()
    write_template(root, "beta", "minimal base image for routers", "minimal, router", "openssh-server")
    write_template(root, "delta", "robotics with ros2", "robotics", "ros-jazzy-desktop")
    (root / "gamma.yml").unlink()
    emb.calls.clear()
    report = index.sync()
    assert (report.embedded, report.removed, report.hits) == (2, 1, 1)
    assert sum(emb.calls) == 2
    assert sorted(index.names()) == ["alpha", "beta", "delta"]
    assert "routers" in index.by_name("beta").description
    assert index._table.count_rows() == 3  # upsert, not duplicate rows


def test_a_different_model_reembeds_everything(tmp_path: Path):
    root = _corpus(tmp_path)
    TemplateIndex(tmp_path / "cache", [root], HashEmbedder("test:a", 32)).sync()
    same_dims = HashEmbedder("test:b", 32)
    report = TemplateIndex(tmp_path / "cache", [root], same_dims).sync()
    assert report.embedded == 3
    other_dims = HashEmbedder("test:c", 48)
    index = TemplateIndex(tmp_path / "cache", [root], other_dims)
    assert index.sync().embedded == 3
    assert index._table.schema.field("vector").type.list_size == 48


def test_broken_files_are_skipped_and_reported(tmp_path: Path):
    root = _corpus(tmp_path)
    (root / "broken.yml").write_text("image: [oops\n")
    (root / "notes.yaml").write_text("just: notes\n")
    index = TemplateIndex(tmp_path / "cache", [root], HashEmbedder())
    report = index.sync()
    assert report.embedded == 3
    reasons = {Path(p.path).name: p.message for p in report.problems}
    assert "line" in reasons["broken.yml"] and "not an image template" in reasons["notes.yaml"]


def test_several_roots_and_name_collisions(tmp_path: Path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    write_template(a, "same", "from a")
    write_template(b, "same", "from b")
    write_template(b, "only-b", "only in b")
    index = TemplateIndex(tmp_path / "cache", [a, b], HashEmbedder())
    index.sync()
    assert index.by_name("same").description == "from a"
    assert index.by_name("same@b").description == "from b"
    assert index.by_name("only-b.yml") is not None


def test_candidates_use_vector_and_text_legs_with_filters(tmp_path: Path):
    root = _corpus(tmp_path)
    emb = HashEmbedder()
    index = TemplateIndex(tmp_path / "cache", [root], emb)
    index.sync()
    cands = index.candidates(emb.embed_query("docker edge gateway"), "docker edge gateway", None, 10)
    by_uid = {index.catalog[c.uid].name: c for c in cands}
    assert by_uid["alpha"].in_text_leg and by_uid["alpha"].bm25 > 0
    assert by_uid["alpha"].cosine == max(c.cosine for c in cands)
    none = index.candidates(emb.embed_query("x"), "docker", "dist = 'debian13'", 10)
    assert none == []


def test_no_cache_dir_uses_a_temporary_index(tmp_path: Path):
    root = _corpus(tmp_path)
    index = TemplateIndex(None, [root], HashEmbedder())
    index.sync()
    location = index.location
    assert location.exists()
    index.close()
    assert not location.exists()


def test_vectors_are_stored_as_given(tmp_path: Path):
    root = _corpus(tmp_path)
    emb = HashEmbedder()
    index = TemplateIndex(tmp_path / "cache", [root], emb)
    index.sync()
    row = index._table.search().where("name = 'alpha'").select(["vector", "model_id", "dims", "text"]).to_list()[0]
    assert row["model_id"].startswith("test:hash|text-v") and row["dims"] == 32
    assert "alpha" in row["text"].lower()
    assert index.by_name("alpha").text == ""  # the table keeps the searchable text, the catalog does not
    expected = emb.embed([row["text"]])[0]
    assert np.allclose(row["vector"], expected)


def test_deferred_namespace_client_still_loads_on_demand():
    """The start-up shortcut in import_lancedb must not hide anything LanceDB's REST client offers."""
    import subprocess
    import sys

    code = ("from image_composer_mcp.server.library.lance_table import import_lancedb; import sys; import_lancedb(); "
            "assert 'lance_namespace_urllib3_client.api.table_api' not in sys.modules; "
            "from lance_namespace_urllib3_client import ApiClient, TableApi; print(ApiClient.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ApiClient"


def test_catalog_columns_share_one_str_per_distinct_value():
    import pyarrow as pa
    from image_composer_mcp.server.library.lance_table import python_values

    lists = pa.chunked_array([pa.array([["docker", "vim"], None, []]), pa.array([["docker"]])])
    values = python_values(lists)
    assert values == [["docker", "vim"], [], [], ["docker"]]
    assert values[0][0] is values[3][0]
    names = python_values(pa.chunked_array([pa.array(["ubuntu", None, "ubuntu"])]))
    assert names == ["ubuntu", None, "ubuntu"] and names[0] is names[2]
    assert python_values(pa.chunked_array([pa.array([1, 2])])) == [1, 2]


def test_a_root_named_twice_still_sees_removals_and_a_fixed_broken_file(tmp_path: Path):
    """The sync counts the scanned files it knows instead of keeping a set of every uid: a root given twice
    must not count its files twice, or a removal would hide behind the duplicates."""
    root = _corpus(tmp_path)
    index = TemplateIndex(tmp_path / "cache", [root, root], HashEmbedder())
    assert index.sync().embedded == 3
    (root / "gamma.yml").unlink()
    (root / "broken.yml").write_text("image: [oops\n")
    report = index.sync()
    assert (report.removed, report.hits) == (1, 2)
    assert sorted(index.names()) == ["alpha", "beta"]
    assert [Path(p.path).name for p in report.problems] == ["broken.yml"]
    (root / "broken.yml").unlink()
    report = index.sync()
    assert (report.removed, report.hits, report.problems) == (0, 2, [])
    assert index._broken == {}  # a broken file that left is forgotten

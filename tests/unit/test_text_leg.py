"""The full-text leg in memory above the mirror's size: LanceDB's scores from postings built a batch at a time,
following the catalog's content, kept for the next start, and LanceDB's leg whenever the postings are not ready."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest
from image_composer_mcp.server.library import text_leg, vector_mirror
from image_composer_mcp.server.library.index import TemplateIndex
from image_composer_mcp.server.library.lance_table import build_where
from image_composer_mcp.server.library.text_mirror import TextMirror

from tests.conftest import LIBRARY, HashEmbedder, write_template
from tests.unit.test_text_mirror import _assert_same, _labelled_queries, _lancedb_scores
from tests.unit.test_vector_mirror import FILTERS, QUERIES, _legs, _same


def _index(tmp_path: Path, monkeypatch, root: Path = LIBRARY) -> tuple[TemplateIndex, HashEmbedder]:
    """An index of ``root`` above a (lowered) mirror size, its postings built."""
    monkeypatch.setattr(vector_mirror, "MIRROR_MAX_ROWS", 0)
    emb = HashEmbedder(dimensions=64)
    index = TemplateIndex(tmp_path / "cache", [root], emb)
    index.start()
    index.settle()
    assert index._text_leg.ready_for(index.catalog)
    return index, emb


def _leg_scores(index: TemplateIndex, query: str, filters: dict) -> dict[str, float]:
    leg = index._text_leg.current(index._table, index.catalog)
    assert leg is not None
    return {row["uid"]: row["_score"] for row in leg.rows(query, filters, 10_000)}


def test_batches_build_the_postings_one_batch_would(tmp_path: Path, monkeypatch) -> None:
    index, _ = _index(tmp_path, monkeypatch)
    texts = index._table.search().select(["text"]).limit(10_000).to_arrow().column("text").to_pylist()
    whole = TextMirror(texts)
    for size in (1, 7, 64):
        batched = TextMirror.from_batches(texts[i:i + size] for i in range(0, len(texts), size))
        assert batched.rows == whole.rows
        for query in _labelled_queries("search-library.yaml"):
            assert batched.search(query, None, 1000) == whole.search(query, None, 1000), (size, query)
    index.close()


def test_scores_equal_lancedb_on_every_labelled_query(tmp_path: Path, monkeypatch) -> None:
    index, _ = _index(tmp_path, monkeypatch)
    for query in _labelled_queries("search-library.yaml"):
        _assert_same(_leg_scores(index, query, {}), _lancedb_scores(index, query), query)
    for filters in ({"arch": "x86_64"}, {"os": "ubuntu", "image_type": "raw"}):
        for query in ("edge gateway docker", "secure boot", "minimal image for the cloud"):
            _assert_same(_leg_scores(index, query, filters), _lancedb_scores(index, query, build_where(filters)),
                         f"{query} {filters}")
    index.close()


@pytest.mark.parametrize("filters", FILTERS)
def test_index_candidates_are_lancedbs(tmp_path: Path, filters: dict, monkeypatch) -> None:
    index, emb = _index(tmp_path, monkeypatch)
    assert index.source == "the table, with its vector leg's 8-bit codes and its full-text postings in memory"
    from_postings = {q: _legs(index, emb, q, filters) for q in QUERIES}
    monkeypatch.setattr(index._text_leg, "current", lambda *_: None)
    direct = {q: _legs(index, emb, q, filters) for q in QUERIES}
    assert all(_same(from_postings[q], direct[q]) for q in QUERIES), (from_postings, direct)
    index.close()


def test_postings_follow_the_templates_content(tmp_path: Path, monkeypatch) -> None:
    """An edit leaves the leg to LanceDB until postings of the new content are built; a template only touched
    (same content, a new record) keeps them."""
    root = tmp_path / "templates"
    root.mkdir()
    for i in range(5):
        write_template(root, f"t{i}", f"template number {i} with docker", "edge, docker", "docker.io")
    index, emb = _index(tmp_path, monkeypatch, root)
    leg = index._text_leg.current(index._table, index.catalog)
    assert leg is not None and "t1" not in str(_leg_scores(index, "kubernetes", {}))
    touched = {uid: dataclasses.replace(rec, mtime_ns=rec.mtime_ns + 1) for uid, rec in index.catalog.items()}
    assert leg.describes(touched) and leg.catalog is touched
    write_template(root, "t1", "template number 1 with kubernetes", "edge, kubernetes", "kubeadm")
    index.sync()
    assert not index._text_leg.ready_for(index.catalog)
    assert index._text_leg.current(index._table, index.catalog) is None  # LanceDB answers; the build starts
    found = index.candidates(emb.embed_query("kubernetes"), "kubernetes", None, 10, filters={})
    assert [c.uid for c in found if c.in_text_leg] == [uid for uid in index.catalog if uid.endswith("t1.yml")]
    index.settle()
    assert list(_leg_scores(index, "kubernetes", {})) == [uid for uid in index.catalog if uid.endswith("t1.yml")]
    index.close()


def test_a_second_start_uses_the_kept_postings(tmp_path: Path, monkeypatch) -> None:
    first, _ = _index(tmp_path, monkeypatch)
    first.close()
    builds: list[int] = []
    real = text_leg.build
    monkeypatch.setattr(text_leg, "build", lambda *a, **k: builds.append(1) or real(*a, **k))
    second, _ = _index(tmp_path, monkeypatch)
    assert builds == []
    query = "edge gateway docker"
    _assert_same(_leg_scores(second, query, {}), _lancedb_scores(second, query), query)
    second.clear()
    assert not (second.location / text_leg.FILE).exists()  # type: ignore[operator]
    second.close()


@pytest.mark.parametrize("damage", ["truncated", "garbage", "other model", "other content"])
def test_kept_postings_that_do_not_describe_the_catalog_are_passed_over(tmp_path: Path, monkeypatch,
                                                                       damage: str) -> None:
    index, _ = _index(tmp_path, monkeypatch)
    directory = index.location
    assert directory is not None
    path = directory / text_leg.FILE
    catalog, key = index.catalog, index.model_key
    assert text_leg.load(directory, catalog, key) is not None
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[:1000])
    elif damage == "garbage":
        path.write_bytes(b"not a zip file at all")
    elif damage == "other model":
        key = key + "-other"
    else:
        uid = next(iter(catalog))
        catalog = {**catalog, uid: dataclasses.replace(catalog[uid], content_hash="0" * 64)}
    assert text_leg.load(directory, catalog, key) is None
    index.close()


def test_a_failed_build_leaves_the_leg_to_lancedb_until_the_catalog_changes(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(vector_mirror, "MIRROR_MAX_ROWS", 0)
    emb = HashEmbedder(dimensions=64)
    index = TemplateIndex(tmp_path / "cache", [LIBRARY], emb)
    index.sync()
    calls: list[int] = []

    def broken(*_args: object) -> None:
        calls.append(1)
        raise OSError("disk gone")

    monkeypatch.setattr(text_leg, "build", broken)
    keeper = index._text_leg
    assert keeper.current(index._table, index.catalog) is None
    keeper.join(30)
    assert keeper.current(index._table, index.catalog) is None and calls == [1]  # not retried for this catalog
    keeper.join(30)
    assert calls == [1]
    found = index.candidates(emb.embed_query("docker"), "docker", None, 10, filters={})
    assert any(c.in_text_leg for c in found)
    assert keeper.current(index._table, dict(index.catalog)) is None  # another catalog: tried again
    keeper.join(30)
    assert calls == [1, 1]
    index.close()


def test_rows_the_catalog_lacks_are_left_out(tmp_path: Path, monkeypatch) -> None:
    index, _ = _index(tmp_path, monkeypatch)
    partial = {uid: rec for i, (uid, rec) in enumerate(index.catalog.items()) if i % 2 == 0}
    leg = text_leg.build(index._table, partial)
    assert sorted(leg.uids) == sorted(partial)
    found = leg.rows("docker edge minimal ubuntu image", {}, 1000)
    assert found and {row["uid"] for row in found} <= set(partial)
    index.close()


def _slowed(monkeypatch, name: str, seconds: float) -> None:
    real = getattr(text_leg, name)

    def slow(*args: object, **kwargs: object) -> object:
        time.sleep(seconds)
        return real(*args, **kwargs)

    monkeypatch.setattr(text_leg, name, slow)


def test_a_search_waits_for_the_kept_postings_being_read(tmp_path: Path, monkeypatch) -> None:
    """A second start reads the postings in the background; a search meanwhile gets them instead of LanceDB."""
    first, _ = _index(tmp_path, monkeypatch)
    first.close()
    _slowed(monkeypatch, "load", 0.5)
    emb = HashEmbedder(dimensions=64)
    index = TemplateIndex(tmp_path / "cache", [LIBRARY], emb)
    index.start()  # starts the read
    keeper = index._text_leg
    assert keeper.current(index._table, index.catalog) is None  # not waiting: LanceDB's leg meanwhile
    leg = keeper.current(index._table, index.catalog, wait=30)
    assert leg is not None and keeper.ready_for(index.catalog)
    found = index.candidates(emb.embed_query("docker"), "docker", None, 10, filters={})
    assert any(c.in_text_leg for c in found)
    index.close()


def test_a_search_does_not_wait_for_a_build(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(vector_mirror, "MIRROR_MAX_ROWS", 0)
    _slowed(monkeypatch, "build", 3.0)
    index = TemplateIndex(tmp_path / "cache", [LIBRARY], HashEmbedder(dimensions=64))
    index.sync()
    keeper = index._text_leg
    assert keeper.current(index._table, index.catalog, wait=30) is None  # nothing kept: a build, not waited for
    assert keeper.busy()
    keeper.join(60)
    assert keeper.current(index._table, index.catalog) is not None
    index.close()

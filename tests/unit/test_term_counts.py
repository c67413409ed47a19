"""The templates' term counts kept between starts (server/library/term_counts.py)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import pytest
from image_composer_mcp.server.library import term_counts


def test_counts_come_back_equal_and_in_the_order_they_were_counted(tmp_path: Path):
    path = tmp_path / term_counts.FILE
    counts = Counter({"ubuntu": 7, "": 1, "nginx": 3, "émt": 2, "docker-ce": 5})
    term_counts.save(path, "k1", counts)
    loaded = term_counts.load(path, "k1")
    assert loaded == counts and list(loaded.items()) == list(counts.items())
    assert term_counts.load(path, "k2") is None  # another catalog's counts are not used
    term_counts.save(path, "k3", Counter())
    assert term_counts.load(path, "k3") == Counter()


def test_a_missing_unreadable_or_unsaveable_file_means_counting_again(tmp_path: Path):
    path = tmp_path / term_counts.FILE
    assert term_counts.load(path, "k") is None
    path.write_bytes(b"not a zip file")
    assert term_counts.load(path, "k") is None
    path.unlink()
    term_counts.save(path, "k", Counter({"a\0b": 1}))  # the separator inside a term: not kept
    assert not path.exists()
    term_counts.save(tmp_path / "missing-dir" / term_counts.FILE, "k", Counter({"a": 1}))  # logged, not raised


def test_the_key_follows_every_record_and_how_terms_are_drawn(library_engine):
    catalog = dict(library_engine.index.catalog)
    key = term_counts.catalog_key(catalog, "model|text-v1")
    assert term_counts.catalog_key(dict(catalog), "model|text-v1") == key
    assert term_counts.catalog_key(catalog, "model|text-v2") != key
    uid = next(iter(catalog))
    assert term_counts.catalog_key({k: v for k, v in catalog.items() if k != uid}, "model|text-v1") != key
    changed = {**catalog, uid: dataclasses.replace(catalog[uid], content_hash="0" * 16)}
    assert term_counts.catalog_key(changed, "model|text-v1") != key


def test_a_restart_reads_the_counts_a_first_start_made_and_ranks_the_same(library_engine, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch):
    from image_composer_mcp.server.library import search as search_mod
    from image_composer_mcp.server.library.search import SearchEngine

    searcher = library_engine.searcher
    path = tmp_path / term_counts.FILE

    def started() -> SearchEngine:
        engine = SearchEngine(library_engine.index, searcher.embedder, searcher.settings, term_counts=path)
        engine._refresh_terms()
        return engine

    small = started()
    assert not path.exists()  # 40 templates: counting is cheaper than the file
    monkeypatch.setattr(term_counts, "MIN_ROWS", 1)
    first = started()
    assert path.is_file() and first._df == small._df

    def no_count(rec):  # a restart that counted would call it
        raise AssertionError("counted again")

    with monkeypatch.context() as patched:
        patched.setattr(search_mod, "_terms", no_count)
        again = started()
    assert list(again._df.items()) == list(first._df.items())
    assert again._n_docs == first._n_docs
    for query in ("minimal edge image for ubuntu", "nginx on azure linux", "realtime kernl for robots"):
        ours = [(r.record.name, r.score, r.keyword) for r in again.search(query, use_threshold=False).results]
        assert ours == [(r.record.name, r.score, r.keyword) for r in first.search(query, use_threshold=False).results]
    for engine in (small, first, again):
        engine.close()

"""The in-memory full-text leg scores every row exactly as LanceDB's FTS index does, with LanceDB as the oracle."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from image_composer_mcp.server.library import vector_mirror
from image_composer_mcp.server.library.candidates import _fts_rows
from image_composer_mcp.server.library.index import TemplateIndex
from image_composer_mcp.server.library.lance_table import FTS_OPTIONS, build_where, import_lancedb
from image_composer_mcp.server.library.text_mirror import TextMirror, analyze_word, reproduces

from bench.evaluation import load_queries
from tests.conftest import LIBRARY, REFERENCE_TEMPLATES, REPO, HashEmbedder, needs_reference

EVAL = REPO / "bench" / "eval"


def _labelled_queries(name: str) -> list[str]:
    return [q.query for q in load_queries(EVAL / name)]


def _wait_for_text(index: TemplateIndex, timeout: float = 30.0) -> TextMirror:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        mirror = index._mirror
        if mirror is not None and mirror.text is not None:
            return mirror.text
        time.sleep(0.01)
    raise AssertionError("the full-text leg was not built in memory")


def _lancedb_scores(index: TemplateIndex, query: str, where: str | None = None) -> dict[str, float]:
    rows = _fts_rows(index._table, query, where, 10_000, ["uid"])
    return {row["uid"]: float(row["_score"]) for row in rows}


def _mirror_scores(index: TemplateIndex, text: TextMirror, query: str, keep: np.ndarray | None = None) -> dict[str, float]:
    mirror = index._mirror
    assert mirror is not None
    return {mirror.uids[pos]: score for pos, score in text.search(query, keep, 10_000)}


def _assert_same(ours: dict[str, float], theirs: dict[str, float], query: str) -> None:
    assert ours.keys() == theirs.keys(), (query, sorted(ours.keys() ^ theirs.keys()))
    for uid, score in theirs.items():
        assert ours[uid] == pytest.approx(score, rel=1e-5, abs=1e-6), (query, uid, ours[uid], score)


def _synced(tmp_path: Path, root: Path) -> tuple[TemplateIndex, TextMirror]:
    emb = HashEmbedder(dimensions=32)
    index = TemplateIndex(tmp_path / "cache", [root], emb)
    index.sync()
    index.candidates(emb.embed_query("warm up"), "warm up", None, 10, filters={})
    return index, _wait_for_text(index)


def test_the_index_analyzer_is_the_one_reproduced() -> None:
    assert reproduces(FTS_OPTIONS)
    assert not reproduces({**FTS_OPTIONS, "stem": False})
    assert not reproduces({**FTS_OPTIONS, "base_tokenizer": "whitespace"})


def test_library_scores_equal_lancedb_on_every_labelled_query(tmp_path: Path) -> None:
    index, text = _synced(tmp_path, LIBRARY)
    queries = _labelled_queries("search-library.yaml")
    assert len(queries) >= 20
    for query in queries:
        _assert_same(_mirror_scores(index, text, query), _lancedb_scores(index, query), query)


def test_reference_scores_equal_lancedb_on_every_labelled_query(tmp_path: Path) -> None:
    needs_reference()
    index, text = _synced(tmp_path, REFERENCE_TEMPLATES)
    for query in _labelled_queries("search-reference.yaml"):
        _assert_same(_mirror_scores(index, text, query), _lancedb_scores(index, query), query)


def test_filters_keep_the_global_statistics(tmp_path: Path) -> None:
    """A prefilter narrows the rows, not N or the document frequencies, in LanceDB and here alike."""
    index, text = _synced(tmp_path, LIBRARY)
    mirror = index._mirror
    assert mirror is not None
    for filters in ({"arch": "x86_64"}, {"os": "ubuntu"}, {"image_type": "raw", "arch": "aarch64"}):
        keep = mirror.mask(filters)
        for query in ("edge gateway docker", "secure boot", "minimal image for the cloud"):
            _assert_same(_mirror_scores(index, text, query, keep), _lancedb_scores(index, query, build_where(filters)),
                         f"{query} {filters}")


def _table(tmp_path: Path, texts: list[str | None]) -> tuple[object, TextMirror]:
    import pyarrow as pa

    # lancedb whole first: importing a submodule while an earlier test's background sync imports the package
    # hands one of the two threads a partially initialised module (CPython's import deadlock break)
    db = import_lancedb().connect(tmp_path / "words")
    from lancedb.index import FTS
    table = db.create_table("t", data=pa.table({"uid": [str(i) for i in range(len(texts))],
                                                "text": pa.array(texts, pa.string())}))
    table.create_index("text", config=FTS(**FTS_OPTIONS))
    return table, TextMirror(texts)


@pytest.mark.parametrize("query", [
    "does", "over", "the running modules", "Ecole ECOLE", "v4l2loopback x86_64", "ß strasse", "a" * 39, "a" * 40,
    "docker docker edge", "kubernetes", "12345 7", "naïve cafe",
])
def test_analyzer_rules_match_lancedb(tmp_path: Path, query: str) -> None:
    """Stop words after stemming ("does" stems to "doe" and stays), 40-byte tokens dropped, folding, digits,
    repeated query words counted twice, rows without a token (None, "", only stop words) left out of N."""
    texts = ["does the job over there", "running modules and module runs", "École, naïve café", "Straße strasse",
             "v4l2loopback on x86_64 hosts", "a" * 39 + " " + "a" * 40, "docker edge docker gateway", None, "",
             "the and of", "kubernetes 12345 7", "edge"]
    table, mirror = _table(tmp_path, texts)
    theirs = {int(r["uid"]): float(r["_score"]) for r in _fts_rows(table, query, None, 100, ["uid"])}
    ours = dict(mirror.search(query, None, 100))
    assert ours.keys() == theirs.keys(), (query, ours, theirs)
    for row, score in theirs.items():
        assert ours[row] == pytest.approx(score, rel=1e-5), (query, row)


def test_analyze_word_examples() -> None:
    assert analyze_word("does") == "doe"
    assert analyze_word("over") is None and analyze_word("the") is None
    assert analyze_word("modules") == "modul"
    assert analyze_word("école") == "ecole" and analyze_word("ecole") == "ecol"  # folded after stemming
    assert analyze_word("a" * 40) is None and analyze_word("a" * 39) == "a" * 39


def test_ties_and_limit() -> None:
    mirror = TextMirror(["edge", "edge", "edge", "cloud"])
    assert [row for row, _ in mirror.search("edge", None, 2)] == [2, 1]
    assert mirror.search("edge", np.array([True, False, False, True]), 5) == [(0, pytest.approx(mirror.search(
        "edge", None, 5)[0][1]))]
    assert mirror.search("nothing here", None, 5) == [] and mirror.search("", None, 5) == []


def test_search_uses_memory_once_built_and_lancedb_before(tmp_path: Path, monkeypatch) -> None:
    """Until the postings are built LanceDB answers the full-text leg; the candidates are the same either way."""
    emb = HashEmbedder(dimensions=32)
    index = TemplateIndex(tmp_path / "cache", [LIBRARY], emb)
    index.sync()
    gate = []
    real = vector_mirror.attach_text

    def held(mirror, table) -> None:  # noqa: ANN001
        while not gate:
            time.sleep(0.005)
        real(mirror, table)

    monkeypatch.setattr("image_composer_mcp.server.library.index.attach_text", held)
    lancedb_calls = []
    import image_composer_mcp.server.library.index as index_module

    real_start = index_module.start_text_leg
    monkeypatch.setattr(index_module, "start_text_leg", lambda *a, **k: lancedb_calls.append(1) or real_start(*a, **k))
    query = "edge gateway with docker"
    before = index.candidates(emb.embed_query(query), query, None, 20, filters={})
    assert lancedb_calls == [1]
    gate.append(True)
    _wait_for_text(index)
    after = index.candidates(emb.embed_query(query), query, None, 20, filters={})
    assert lancedb_calls == [1]
    as_dict = lambda cands: {c.uid: (round(c.cosine, 5), round(c.bm25, 4), c.in_text_leg) for c in cands}  # noqa: E731
    assert as_dict(before) == as_dict(after)


def test_a_failed_build_leaves_lancedb_answering(tmp_path: Path, monkeypatch) -> None:
    emb = HashEmbedder(dimensions=32)
    index = TemplateIndex(tmp_path / "cache", [LIBRARY], emb)
    index.sync()

    def broken(mirror, table) -> None:  # noqa: ANN001
        raise OSError("disk gone")

    monkeypatch.setattr("image_composer_mcp.server.library.index.attach_text", broken)
    first = index.candidates(emb.embed_query("docker"), "docker", None, 10, filters={})
    time.sleep(0.2)
    assert index._mirror is not None and index._mirror.text is None
    again = index.candidates(emb.embed_query("docker"), "docker", None, 10, filters={})
    assert {c.uid for c in first} == {c.uid for c in again} and any(c.in_text_leg for c in again)


def test_the_two_word_rules_agree_on_every_assigned_character() -> None:
    """Rows are split by Arrow's RE2 and queries by Python's re: the same words either way."""
    import unicodedata

    import pyarrow as pa
    import pyarrow.compute as pc
    from image_composer_mcp.server.library.text_mirror import SEPARATORS, WORD

    chars = [chr(c) for c in range(0x110000)
             if not 0xD800 <= c < 0xE000 and unicodedata.category(chr(c)) != "Cn"]
    in_word_re2 = pc.invert(pc.match_substring_regex(pa.array(chars), "^" + SEPARATORS + "$")).to_pylist()
    in_word_py = [WORD.fullmatch(c) is not None for c in chars]
    differ = [hex(ord(c)) for c, a, b in zip(chars, in_word_re2, in_word_py, strict=True) if a != b]
    assert not differ, differ[:20]

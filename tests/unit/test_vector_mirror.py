"""The in-memory vector mirror answers the vector leg exactly as LanceDB's flat search does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from image_composer_mcp.server.library import vector_mirror
from image_composer_mcp.server.library.index import TemplateIndex
from image_composer_mcp.server.library.lance_table import build_where

from tests.conftest import LIBRARY, HashEmbedder, write_template

QUERIES = ["ubuntu edge gateway with docker", "minimal arm image", "secure boot immutable", "cloud vm", "x"]
FILTERS = [{}, {"arch": "x86_64"}, {"os": "ubuntu", "arch": "aarch64"}, {"dist": "no-such-dist"}]


def _legs(index: TemplateIndex, emb: HashEmbedder, query: str, filters: dict) -> tuple[dict, list[float]]:
    """Every candidate (a limit above the corpus size), and the cosines of a cut-off top 10: with ties at the
    cut the two searches may keep different rows of equal score, never different scores."""
    cands = index.candidates(emb.embed_query(query), query, build_where(filters), 1000, filters=filters)
    everything = {c.uid: (c.cosine, c.bm25, c.in_vector_leg, c.in_text_leg) for c in cands}
    top = index.candidates(emb.embed_query(query), "", build_where(filters), 10, filters=filters)
    return everything, sorted(c.cosine for c in top)


def _same(a: tuple[dict, list[float]], b: tuple[dict, list[float]]) -> bool:
    """Equal up to float32 rounding (LanceDB and numpy sum the products in different orders)."""
    close = np.allclose
    return (a[0].keys() == b[0].keys()
            and all(close(a[0][u][:2], b[0][u][:2], atol=1e-5) and a[0][u][2:] == b[0][u][2:] for u in a[0])
            and close(a[1], b[1], atol=1e-5))


@pytest.fixture
def library_index(tmp_path: Path) -> tuple[TemplateIndex, HashEmbedder]:
    emb = HashEmbedder(dimensions=64)
    index = TemplateIndex(tmp_path / "cache", [LIBRARY], emb)
    index.sync()
    return index, emb


@pytest.mark.parametrize("scan_min_rows", [0, vector_mirror.SCAN_MIN_ROWS], ids=["onnxruntime-scan", "numpy-scan"])
@pytest.mark.parametrize("filters", FILTERS)
def test_mirror_and_lancedb_give_the_same_candidates(library_index, filters: dict, scan_min_rows: int,
                                                      monkeypatch) -> None:
    index, emb = library_index
    monkeypatch.setattr(vector_mirror, "SCAN_MIN_ROWS", scan_min_rows)
    mirrored = {q: _legs(index, emb, q, filters) for q in QUERIES}
    assert index._mirror is not None
    monkeypatch.setattr(vector_mirror, "MIRROR_MAX_ROWS", 0)  # force LanceDB's own flat search
    index._mirror = None
    direct = {q: _legs(index, emb, q, filters) for q in QUERIES}
    assert index._mirror is None
    assert all(_same(mirrored[q], direct[q]) for q in QUERIES), (mirrored, direct)


def test_mirror_follows_catalog_changes(tmp_path: Path) -> None:
    root = tmp_path / "templates"
    root.mkdir()
    write_template(root, "alpha", "edge gateway with docker", "edge, docker", "docker.io")
    emb = HashEmbedder()
    index = TemplateIndex(tmp_path / "cache", [root], emb)
    index.sync()
    assert {index.catalog[c.uid].name for c in index.candidates(emb.embed_query("kiosk"), "", None, 10)} == {"alpha"}
    write_template(root, "beta", "kiosk browser", "kiosk", "chromium")
    index.sync()
    names = {index.catalog[c.uid].name for c in index.candidates(emb.embed_query("kiosk"), "", None, 10)}
    assert names == {"alpha", "beta"}
    (root / "alpha.yml").unlink()
    index.sync()
    names = {index.catalog[c.uid].name for c in index.candidates(emb.embed_query("kiosk"), "", None, 10)}
    assert names == {"beta"}


def test_no_mirror_once_the_vector_index_serves(library_index) -> None:
    index, emb = library_index
    index.vector_index_rows = 20_000
    index._mirror = None
    index.candidates(emb.embed_query("docker"), "docker", None, 10, filters={})
    assert index._mirror is None


@pytest.mark.skipif(vector_mirror._scan_session() is None, reason="onnxruntime is not installed")
def test_onnxruntime_scan_finds_what_numpy_finds(monkeypatch) -> None:
    """The same rows and dot products from both scans, unfiltered and filtered, also when fewer rows are
    allowed than asked for, or none."""
    rng = np.random.default_rng(7)
    centres = rng.standard_normal((40, 48)).astype(np.float32)
    matrix = centres[rng.integers(0, 40, 3000)] + 0.3 * rng.standard_normal((3000, 48)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    uids = [f"u{i}" for i in range(len(matrix))]
    mirror = vector_mirror.VectorMirror({}, uids, matrix)
    assert mirror.matrix.shape == (3000, 48) and np.array_equal(mirror.matrix, matrix)
    keeps = [None, rng.random(3000) < 0.2, np.arange(3000) < 7, np.zeros(3000, dtype=bool)]
    for q in range(20):
        query = matrix[q * 97] + 0.2 * rng.standard_normal(48).astype(np.float32)
        for keep in keeps:
            found = {}
            for scan_min_rows in (0, 10**9):
                monkeypatch.setattr(vector_mirror, "SCAN_MIN_ROWS", scan_min_rows)
                rows, cosines, scores = mirror.nearest(query, keep, 50)
                found[scan_min_rows] = dict(zip(rows.tolist(), cosines.tolist(), strict=True))
                assert np.allclose(scores, matrix @ query, atol=1e-5)
            onnx, numpy_ = found[0], found[10**9]
            allowed = 3000 if keep is None else int(keep.sum())
            assert len(onnx) == len(numpy_) == min(50, allowed)
            assert onnx.keys() == numpy_.keys()
            assert all(abs(onnx[r] - numpy_[r]) < 1e-5 for r in onnx)
            assert all(abs(onnx[r] - float(matrix[r] @ query)) < 1e-5 for r in onnx)
            assert keep is None or all(keep[r] for r in onnx)


def test_term_postings_are_built_off_the_search_path(library_index) -> None:
    """The first ask starts the build on a thread of its own and answers None; then every row's strong and
    weak terms are found under each term, and a uid the catalog lacks holds none."""
    index, _emb = library_index
    mirror = index.memory_mirror() or index._vector_mirror()
    assert mirror is not None
    uids = [*mirror.uids, "gone::x.yml"]
    fresh = vector_mirror.VectorMirror(mirror.catalog, uids, np.zeros((len(uids), 4), dtype=np.float32))
    first = fresh.term_postings()
    builder = fresh.terms_builder()
    if first is None:
        assert builder is not None
    if builder is not None:  # it may have set the postings and not yet ended: the answer came before its exit
        builder.join(30)
    postings = fresh.term_postings()
    assert postings is not None and fresh.terms_builder() is None and postings.rows == len(uids)
    for row, uid in enumerate(mirror.uids):
        rec = mirror.catalog[uid]
        assert all(row in postings.strong(t) for t in rec.terms_strong)
        assert all(row in postings.weak(t) for t in rec.terms_weak)
    gone = len(uids) - 1
    assert not any(gone in postings.strong(t) or gone in postings.weak(t) for rec in mirror.catalog.values()
                   for t in (*rec.terms_strong, *rec.terms_weak))
    assert len(postings.strong("no-such-term")) == 0


def test_a_failing_onnxruntime_scan_leaves_the_search_to_numpy(monkeypatch, caplog) -> None:
    """A scan session that cannot be made, or a run that fails, costs speed, not the search."""
    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((50, 16)).astype(np.float32)
    mirror = vector_mirror.VectorMirror({}, [f"u{i}" for i in range(50)], matrix)
    query = matrix[7]
    expected = set(np.argsort(-(matrix @ query))[:5].tolist())
    monkeypatch.setattr(vector_mirror, "SCAN_MIN_ROWS", 0)

    class Broken:
        def run(self, *args: object) -> None:
            raise RuntimeError("onnxruntime failed")

    monkeypatch.setattr(vector_mirror, "_scan", [Broken()])
    rows, _cosines, scores = mirror.nearest(query, None, 5)
    assert set(rows.tolist()) == expected and np.allclose(scores, matrix @ query)
    assert "numpy answers this search" in caplog.text

    def cannot_make() -> None:
        raise RuntimeError("no graph")

    monkeypatch.setattr(vector_mirror, "_scan", [])
    monkeypatch.setattr(vector_mirror, "_make_scan_session", cannot_make)
    assert vector_mirror._scan_session() is None
    rows, _cosines, _scores = mirror.nearest(query, None, 5)
    assert set(rows.tolist()) == expected


def test_coded_columns_answer_as_the_records_do(library_index) -> None:
    """Filters, stated-target penalties and name order read each row's value through integer codes: the same
    answers as the records' own values, for every value present, one absent, and a uid the catalog lacks."""
    from image_composer_mcp.server.library.ranking import name_ranks, off_target

    index, _emb = library_index
    mirror = index.memory_mirror() or index._vector_mirror()
    assert mirror is not None
    columns = vector_mirror.FilterColumns({**mirror.catalog}, [*mirror.uids, "gone/missing.yml"])
    records = [columns.catalog.get(u) for u in columns.uids]
    for attr in ("os", "dist", "arch", "image_type"):
        values = [getattr(r, attr, None) for r in records]
        for value in {*filter(None, values), "absent"}:
            assert columns.rows_with(attr, value).tolist() == [v == value for v in values]
            assert columns.mask({"os": None, "dist": None, attr: value}).tolist() == [v == value for v in values]
            assert columns.rows_where(attr, lambda v, w=value: off_target(v, w)).tolist() == \
                [v is not None and off_target(v, value) for v in values]
    names = [r.name for r in records[:-1]]
    assert mirror.name_ranks().tolist() == name_ranks(names).tolist()
    assert len(set(names)) < len(names) or len(set(names)) > 10  # many names (and any repeats) are ranked

"""The vector leg as 8-bit codes (above the in-memory mirror's size) finds what exact search finds, with exact
cosines, follows the catalog, and leaves the leg to LanceDB while it is built or when it cannot be."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pytest
from image_composer_mcp.server.library import quantized_mirror, vector_mirror
from image_composer_mcp.server.library.index import TemplateIndex
from image_composer_mcp.server.library.lance_table import import_lancedb
from image_composer_mcp.server.library.quantized_mirror import QuantizedKeeper, build

from tests.conftest import LIBRARY, HashEmbedder, write_template
from tests.unit.test_vector_mirror import FILTERS, QUERIES, _legs, _same

pytestmark = pytest.mark.skipif(not quantized_mirror.available(), reason="onnxruntime is not installed")
DIMS = 384


def _clustered(rows: int, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """Rows near a few hundred parents, as the bench's corpora are (cosine ~0.94 to the parent): close
    neighbours, which is where 8-bit codes could misorder rows."""
    rng = np.random.default_rng(seed)
    parents = rng.standard_normal((300, DIMS)).astype(np.float32)
    parents /= np.linalg.norm(parents, axis=1, keepdims=True)
    vectors = parents[rng.integers(0, len(parents), rows)] + 0.36 * rng.standard_normal((rows, DIMS)) / np.sqrt(DIMS)
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    return vectors, parents


def _table(tmp_path: Path, vectors: np.ndarray) -> object:
    lancedb = import_lancedb()
    uids = [f"u{i:05d}" for i in range(len(vectors))]
    data = pa.table({"uid": uids, "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIMS)})
    return lancedb.connect(str(tmp_path / "db")).create_table("t", data=data)


def _catalog(uids: list[str], arch_every: int = 3) -> dict[str, SimpleNamespace]:
    return {u: SimpleNamespace(arch="aarch64" if i % arch_every == 0 else "x86_64") for i, u in enumerate(uids)}


@pytest.fixture
def clustered(tmp_path: Path, monkeypatch) -> tuple[object, np.ndarray, dict]:
    monkeypatch.setattr(vector_mirror, "MIRROR_MAX_ROWS", 100)
    vectors, _ = _clustered(6000)
    table = _table(tmp_path, vectors)
    return table, vectors, _catalog([f"u{i:05d}" for i in range(len(vectors))])


def test_the_nearest_row_stays_in_the_shortlist_where_16_bit_pair_sums_would_saturate(tmp_path: Path,
                                                                                     monkeypatch) -> None:
    """Rows and queries of equal-magnitude coordinates put every code and query value at its range's end: a
    full-range (0..255) query made onnxruntime's AVX2 u8 x s8 kernel saturate its 16-bit pair sums, and the
    nearest row fell out of the shortlist."""
    monkeypatch.setattr(vector_mirror, "MIRROR_MAX_ROWS", 10)
    rng = np.random.default_rng(5)
    signs = np.sign(rng.standard_normal((200, DIMS))).astype(np.float32)
    vectors = signs / np.sqrt(DIMS)
    table = _table(tmp_path, vectors)
    mirror = build(table, _catalog([f"u{i:05d}" for i in range(len(vectors))]), DIMS, tmp_path, threads=1)
    assert mirror is not None
    for q in range(20):
        query = vectors[q] * (1.0 if q % 2 else -1.0)
        best = int(np.argmax(vectors @ query))
        assert best in mirror.shortlist(query, None, 3).tolist(), q
        assert mirror.nearest(query, None, 1)[0][0] == best


def test_shortlist_finds_the_exact_neighbours_with_exact_cosines(clustered, tmp_path: Path) -> None:
    table, vectors, catalog = clustered
    mirror = build(table, catalog, DIMS, tmp_path, threads=1)
    assert mirror is not None and len(mirror.uids) == len(vectors)
    rng = np.random.default_rng(1)
    recall10, recall50 = [], []
    for i in rng.integers(0, len(vectors), 40):
        query = vectors[i] + 0.5 * rng.standard_normal(DIMS).astype(np.float32) / np.sqrt(DIMS)
        query /= np.linalg.norm(query)
        found = mirror.nearest(query, None, 50)
        exact = vectors @ query
        truth = np.argsort(-exact, kind="stable")[:50]
        rows = [mirror.position[f"u{r:05d}"] for r in truth]
        recall10.append(len({r for r, _ in found[:10]} & set(rows[:10])) / 10)
        recall50.append(len({r for r, _ in found} & set(rows)) / 50)
        got = np.array([c for _, c in found])
        assert np.all(np.diff(got) <= 0), "best first"
        assert np.allclose(got, [exact[int(mirror.uids[r][1:])] for r, _ in found], atol=1e-6)
    assert np.mean(recall10) == 1.0 and np.mean(recall50) >= 0.99, (np.mean(recall10), np.mean(recall50))
    mirror.close()


def test_filters_and_catalog_limit_the_rows(clustered, tmp_path: Path) -> None:
    table, vectors, catalog = clustered
    partial = {u: r for i, (u, r) in enumerate(catalog.items()) if i % 2 == 0}  # rows the catalog no longer has
    mirror = build(table, partial, DIMS, tmp_path, threads=1)
    assert mirror is not None and set(mirror.uids) == set(partial)
    keep = mirror.mask({"arch": "aarch64"})
    found = mirror.nearest(vectors[0], keep, 20)
    assert len(found) == 20 and all(partial[mirror.uids[r]].arch == "aarch64" for r, _ in found)
    assert mirror.nearest(vectors[0], np.zeros(len(mirror.uids), dtype=bool), 20) == []
    few = np.zeros(len(mirror.uids), dtype=bool)
    few[[5, 900, 2999]] = True  # fewer allowed rows than asked for: those, never a filtered-out one
    assert sorted(r for r, _ in mirror.nearest(vectors[0], few, 20)) == [5, 900, 2999]
    assert mirror.uids[found[0][0]] == "u00000"  # the query is that row's own vector
    mirror.close()


def test_keeper_builds_in_the_background_and_follows_the_catalog(clustered, tmp_path: Path) -> None:
    table, _vectors, catalog = clustered
    keeper = QuantizedKeeper(tmp_path, threads=1)
    assert keeper.current(table, catalog, DIMS, wait=0) is None and keeper.busy()  # started, not waited for
    first = keeper.current(table, catalog, DIMS)  # a search waits for the build
    assert first is not None and first.catalog is catalog and not keeper.busy()
    moved_on = dict(catalog)
    second = keeper.current(table, moved_on, DIMS)
    assert second is not None and second is not first and second.catalog is moved_on
    assert not first.codes.file.closed  # a search on another thread may still read the stale one
    assert first.nearest(_vectors[0], None, 5)[0][0] == first.position["u00000"]
    keeper.close()
    assert keeper.current(table, moved_on, DIMS) is None and keeper.current(table, {**moved_on}, DIMS) is None
    assert second.nearest(_vectors[0], None, 5)  # a search that was under way finishes with it


def test_a_search_waits_only_so_long(clustered, tmp_path: Path, monkeypatch) -> None:
    table, _vectors, catalog = clustered
    release = threading.Event()
    real = quantized_mirror.build

    def slow(*args, **kwargs):
        release.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(quantized_mirror, "build", slow)
    keeper = QuantizedKeeper(tmp_path, threads=1)
    started = time.monotonic()
    assert keeper.current(table, catalog, DIMS, wait=0.2) is None  # LanceDB answers this search
    assert 0.2 <= time.monotonic() - started < 5 and keeper.busy()
    release.set()
    assert keeper.current(table, catalog, DIMS) is not None
    keeper.close()


def test_keeper_stays_out_of_small_catalogs_and_without_onnxruntime(clustered, tmp_path: Path, monkeypatch) -> None:
    table, _vectors, catalog = clustered
    keeper = QuantizedKeeper(tmp_path, threads=1)
    small = dict(list(catalog.items())[:50])  # the in-memory mirror's size
    assert keeper.current(table, small, DIMS) is None and not keeper.busy()
    monkeypatch.setattr(quantized_mirror, "available", lambda: False)
    without = QuantizedKeeper(tmp_path)
    assert without.current(table, catalog, DIMS) is None and not without.busy()


def test_a_failed_build_leaves_the_leg_to_lancedb_until_the_catalog_changes(clustered, tmp_path: Path,
                                                                            caplog) -> None:
    _table_, _vectors, catalog = clustered

    class Broken:
        reads = 0

        def count_rows(self) -> int:
            Broken.reads += 1
            raise OSError("disk gone")

    keeper = QuantizedKeeper(tmp_path, threads=1)
    assert keeper.current(Broken(), catalog, DIMS) is None
    assert keeper.current(Broken(), catalog, DIMS) is None
    assert Broken.reads == 1 and "stays in LanceDB" in caplog.text
    assert keeper.current(Broken(), dict(catalog), DIMS) is None
    assert Broken.reads == 2
    keeper.close()


@pytest.mark.parametrize("filters", FILTERS)
def test_index_answers_from_the_codes_as_lancedb_does(tmp_path: Path, filters: dict, monkeypatch) -> None:
    """The library above a (lowered) mirror size: the same candidates, cosines and BM25 scores as LanceDB's
    own legs, once the codes are built."""
    monkeypatch.setattr(vector_mirror, "MIRROR_MAX_ROWS", 0)
    emb = HashEmbedder(dimensions=64)
    index = TemplateIndex(tmp_path / "cache", [LIBRARY], emb)
    index.sync()
    assert index.source == "the table"
    assert index._quantized.current(index._table, index.catalog, 64) is not None
    assert index.source == "the table, with its vector leg's 8-bit codes in memory"  # cache_stats says so
    quantized = {q: _legs(index, emb, q, filters) for q in QUERIES}
    monkeypatch.setattr(index._quantized, "current", lambda *_: None)
    direct = {q: _legs(index, emb, q, filters) for q in QUERIES}
    assert all(_same(quantized[q], direct[q]) for q in QUERIES), (quantized, direct)
    index.close()


def _replace_rows(table, rows: dict[str, np.ndarray]) -> None:
    table.delete("uid IN (" + ", ".join(f"'{u}'" for u in rows) + ")")
    flat = np.stack(list(rows.values())).astype(np.float32).ravel()
    table.add(pa.table({"uid": list(rows), "vector": pa.FixedSizeListArray.from_arrays(pa.array(flat), DIMS)}))


def test_a_few_changed_rows_are_patched_in_and_searched_exactly(clustered, tmp_path: Path, monkeypatch) -> None:
    table, vectors, catalog = clustered
    keeper = QuantizedKeeper(tmp_path, threads=1)
    base = keeper.current(table, catalog, DIMS)
    assert base is not None
    rng = np.random.default_rng(3)
    fresh = rng.standard_normal((2, DIMS)).astype(np.float32)
    fresh /= np.linalg.norm(fresh, axis=1, keepdims=True)
    _replace_rows(table, {"u00007": fresh[0], "u09999": fresh[1]})  # one edited, one new
    moved_on = {u: r for u, r in catalog.items() if u != "u00011"}  # one removed
    moved_on["u00007"] = SimpleNamespace(arch="x86_64")  # a sync swaps in a new record for an edited template
    moved_on["u09999"] = SimpleNamespace(arch="aarch64")
    reads = []
    real = quantized_mirror._table_vectors
    monkeypatch.setattr(quantized_mirror, "_table_vectors", lambda *a: reads.append(a[1]) or real(*a))
    patched = keeper.current(table, moved_on, DIMS, wait=0)  # no build to wait for
    assert patched is not None and patched.codes is base.codes and not keeper.busy()
    assert sorted(reads[0]) == ["u00007", "u09999"]
    top = patched.nearest(fresh[0], None, 5)
    assert patched.uids[top[0][0]] == "u00007" and abs(top[0][1] - 1.0) < 1e-5  # its new vector, exactly
    assert patched.uids[patched.nearest(fresh[1], patched.mask({"arch": "aarch64"}), 3)[0][0]] == "u09999"
    old_vector_hits = [patched.uids[r] for r, _ in patched.nearest(vectors[7], None, 50)]
    assert old_vector_hits.count("u00007") <= 1 and "u00011" not in old_vector_hits
    assert all(c <= 0.999 for r, c in patched.nearest(vectors[7], None, 50) if patched.uids[r] == "u00007")
    assert "u00011" not in [patched.uids[r] for r, _ in patched.nearest(vectors[11], None, 50)]
    # The next change keeps the vectors it already has and reads only the new row.
    again = dict(moved_on)
    again["u00020"] = SimpleNamespace(arch="x86_64")
    _replace_rows(table, {"u00020": fresh[1]})
    assert keeper.current(table, again, DIMS, wait=0) is not None and reads[1] == ["u00020"]
    keeper.close()


def test_many_changed_rows_build_the_codes_again(clustered, tmp_path: Path, monkeypatch) -> None:
    table, _vectors, catalog = clustered
    monkeypatch.setattr(quantized_mirror, "PATCH_MAX", 3)
    keeper = QuantizedKeeper(tmp_path, threads=1)
    base = keeper.current(table, catalog, DIMS)
    assert base is not None
    moved_on = dict(catalog)
    for uid in ("u00001", "u00002", "u00003", "u00004"):
        moved_on[uid] = SimpleNamespace(arch="x86_64")
    rebuilt = keeper.current(table, moved_on, DIMS)
    assert rebuilt is not None and rebuilt.codes is not base.codes and rebuilt.stale is None and not len(rebuilt.delta)
    keeper.close()


def test_index_finds_a_template_added_above_the_mirror_size(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(vector_mirror, "MIRROR_MAX_ROWS", 0)
    root = tmp_path / "templates"
    root.mkdir()
    write_template(root, "alpha", "edge gateway with docker", "edge, docker", "docker.io")
    write_template(root, "beta", "kiosk browser", "kiosk", "chromium")
    emb = HashEmbedder(dimensions=64)
    index = TemplateIndex(tmp_path / "cache", [root], emb)
    index.start()
    first = index._quantized.current(index._table, index.catalog, 64)
    assert first is not None
    write_template(root, "gamma", "cloud vm image", "cloud", "cloud-init")
    (root / "alpha.yml").unlink()
    index.sync()
    names = {index.catalog[c.uid].name for c in index.candidates(emb.embed_query("cloud vm"), "", None, 10,
                                                                 filters={})}
    assert names == {"beta", "gamma"}
    now = index._quantized.current(index._table, index.catalog, 64)
    assert now is not None and now.codes is first.codes and len(now.delta) == 1
    index.close()


def test_codes_are_kept_for_the_next_start_while_they_describe_the_table(clustered, tmp_path: Path,
                                                                        monkeypatch) -> None:
    table, vectors, catalog = clustered
    kept = tmp_path / "kept"
    kept.mkdir()
    built = build(table, catalog, DIMS, kept, threads=1, model_key="m1")
    assert built is not None and (kept / quantized_mirror.CODES_FILE).is_file()
    assert not list(kept.glob(f"{quantized_mirror.ROWS_TEMP}*"))  # the rows' file went under its name
    loaded = quantized_mirror.load(table, catalog, DIMS, kept, 1, "m1")
    assert loaded is not None and loaded.uids == built.uids
    for i in (0, 123, 4567):
        assert loaded.nearest(vectors[i], None, 10) == built.nearest(vectors[i], None, 10)
    # A keeper starting over the same directory loads them instead of building.
    monkeypatch.setattr(quantized_mirror, "build", lambda *a, **k: pytest.fail("built again"))
    keeper = QuantizedKeeper(kept, threads=1, model_key=lambda: "m1")
    assert keeper.current(table, catalog, DIMS) is not None
    keeper.close()
    # What no longer describes the table is passed over.
    assert quantized_mirror.load(table, catalog, DIMS, kept, 1, "another-model") is None
    assert quantized_mirror.load(table, dict(list(catalog.items())[:-1]), DIMS, kept, 1, "m1") is None
    _replace_rows(table, {"u00003": vectors[3]})  # a new table version
    assert quantized_mirror.load(table, catalog, DIMS, kept, 1, "m1") is None


@pytest.mark.parametrize("damage", ["truncated codes", "garbage codes", "other rows file", "no rows file"])
def test_damaged_kept_codes_are_passed_over(clustered, tmp_path: Path, damage: str) -> None:
    table, _vectors, catalog = clustered
    kept = tmp_path / "kept"
    kept.mkdir()
    assert build(table, catalog, DIMS, kept, threads=1, model_key="m1") is not None
    codes, rows = kept / quantized_mirror.CODES_FILE, kept / quantized_mirror.ROWS_FILE
    if damage == "truncated codes":
        codes.write_bytes(codes.read_bytes()[: codes.stat().st_size // 2])
    elif damage == "garbage codes":
        codes.write_bytes(b"not a zip file at all")
    elif damage == "other rows file":
        data = rows.read_bytes()
        rows.unlink()
        rows.write_bytes(data)  # same size, another inode: not the file the codes were written with
    else:
        rows.unlink()
    assert quantized_mirror.load(table, catalog, DIMS, kept, 1, "m1") is None
    keeper = QuantizedKeeper(kept, threads=1, model_key=lambda: "m1")
    assert keeper.current(table, catalog, DIMS) is not None  # built again
    keeper.close()
    assert quantized_mirror.load(table, catalog, DIMS, kept, 1, "m1") is not None


def test_a_second_start_of_the_index_uses_the_kept_codes(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(vector_mirror, "MIRROR_MAX_ROWS", 0)
    emb = HashEmbedder(dimensions=64)
    first = TemplateIndex(tmp_path / "cache", [LIBRARY], emb)
    first.start()
    first.settle()
    assert first._quantized.ready_for(first.catalog)
    first.close()
    builds = []
    real = quantized_mirror.build
    monkeypatch.setattr(quantized_mirror, "build", lambda *a, **k: builds.append(1) or real(*a, **k))
    second = TemplateIndex(tmp_path / "cache", [LIBRARY], emb)
    second.start()
    assert second._quantized.current(second._table, second.catalog, 64) is not None and builds == []
    second.clear()
    assert not (second.location / quantized_mirror.CODES_FILE).exists()  # type: ignore[operator]
    second.close()


def test_searches_go_on_while_templates_change(tmp_path: Path, monkeypatch) -> None:
    """Searches on four threads while templates are added, edited and removed above the (lowered) mirror size:
    no search fails, and once the changes stop the codes answer for exactly the templates on disk."""
    monkeypatch.setattr(vector_mirror, "MIRROR_MAX_ROWS", 0)
    monkeypatch.setattr(quantized_mirror, "PATCH_MAX", 2)  # some changes patch, some build again
    root = tmp_path / "templates"
    root.mkdir()
    for i in range(6):
        write_template(root, f"t{i}", f"template number {i} with docker", "edge, docker", "docker.io")
    emb = HashEmbedder(dimensions=64)
    index = TemplateIndex(tmp_path / "cache", [root], emb)
    index.start()
    errors: list[BaseException] = []
    stop = threading.Event()

    def search() -> None:
        while not stop.is_set():
            try:
                index.candidates(emb.embed_query("docker template"), "docker", None, 5, filters={})
            except BaseException as exc:  # noqa: BLE001 - collected for the assertion
                errors.append(exc)
                return

    workers = [threading.Thread(target=search) for _ in range(4)]
    for w in workers:
        w.start()
    for step in range(8):
        write_template(root, f"n{step}", f"new kiosk template {step}", "kiosk", "chromium")
        if step % 3 == 0:
            (root / f"t{step % 6}.yml").unlink(missing_ok=True)
        index.sync()
    stop.set()
    for w in workers:
        w.join(30)
    assert not errors, errors
    on_disk = {p.stem for p in root.glob("*.yml")}
    found = index.candidates(emb.embed_query("kiosk"), "", None, 100, filters={})
    assert {index.catalog[c.uid].name for c in found} == on_disk
    assert index._quantized.ready_for(index.catalog)
    index.close()

"""The benchmark's own pieces: the upstream baseline port, the synthetic generator, bulk loading and the scale switch."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import image_composer_mcp.server.library.index_sync as index_sync
import image_composer_mcp.server.library.index_upkeep as index_upkeep
import numpy as np
import pytest
from image_composer_mcp.server.core.yamlsafe import load_mapping
from image_composer_mcp.server.library.index import TemplateIndex
from image_composer_mcp.server.library.templates import Fingerprint, load_record, record_from_data
from image_composer_mcp.server.validation.validator import validate_text

from bench.baseline import BaselineIndex, UpstreamDoc, doc_from_data, parse_query
from bench.corpus import derive_vectors
from bench.evaluation import LabelledQuery
from bench.measure import percentile
from bench.queries import FIRST_QUERY, latency_queries
from bench.synthetic import (
    THEMES,
    corpus_variant,
    load_sources,
    make_corpus,
    make_pool,
    parent_order,
    render_yaml,
    themed_variant,
)
from tests.conftest import LIBRARY, HashEmbedder, write_template

# ---- upstream query parser -------------------------------------------------------------------------------------


def test_parser_keeps_packages_and_content_words():
    q = parse_query("Image with nginx and docker-ce!")
    assert q.tokens == ["image", "nginx", "docker-ce"]  # "with", "and" are upstream stop words
    assert q.packages == ["nginx", "docker-ce"]
    assert q.negative == []


def test_parser_negates_exactly_one_term_per_negation_word():
    q = parse_query("minimal without docker for edge")
    assert q.negative == ["docker"]
    assert q.tokens == ["minimal", "edge"]  # the negated word is not a token; "for" is a stop word
    assert q.packages == []


def test_parser_conjunction_after_negation_keeps_negating():
    q = parse_query("no and docker, nginx")
    assert q.negative == ["and", "docker"]
    assert q.packages == ["nginx"] and q.tokens == ["nginx"]


def test_parser_package_patterns_are_substrings():
    q = parse_query("python3-pip openssh-server vim-tiny")
    assert q.packages == ["python3-pip", "openssh-server", "vim-tiny"]


# ---- upstream scoring ----------------------------------------------------------------------------------------


def _doc(name: str, packages: list[str], keywords: list[str] | None = None, **kw: str) -> UpstreamDoc:
    return UpstreamDoc(name=name, file_name=f"{name}.yml", keywords=keywords or [], packages=packages,
                       dist=kw.get("dist", "ubuntu24"), arch=kw.get("arch", "x86_64"),
                       image_type=kw.get("image_type", "raw"))


def _unit(i: int, dims: int = 8) -> np.ndarray:
    v = np.zeros(dims, dtype=np.float32)
    v[i] = 1.0
    return v


def test_fixed_weights_keyword_share_and_package_prefixes():
    docs = [_doc("alpha-edge-raw", ["docker-ce", "nginx=1.24"], ["gateway"]), _doc("beta-cloud", ["cloud-init"])]
    index = BaselineIndex(docs, np.stack([_unit(0), _unit(1)]))
    score, semantic, keyword, package = index.scores("edge gateway docker nginx", _unit(0))
    # tokens: edge (file stem), gateway (keyword), docker, nginx -> 2 of 4 match; both packages match by prefix.
    assert semantic[0] == pytest.approx(1.0)
    assert keyword[0] == pytest.approx(0.5)
    assert package[0] == pytest.approx(1.0)
    assert score[0] == pytest.approx(0.7 * 1.0 + 0.2 * 0.5 + 0.1 * 1.0)
    assert score[1] == pytest.approx(0.0)


def test_version_suffix_adds_the_base_name():
    doc = _doc("gamma", ["python3=3.12.1"])
    assert doc.package_names() == {"python3=3.12.1", "python3"}


def test_negation_halves_and_threshold_drops():
    docs = [_doc("edge-docker", ["docker.io"]), _doc("edge-plain", ["openssh-server"])]
    vectors = np.stack([_unit(0), _unit(0)])
    index = BaselineIndex(docs, vectors)
    hits = index.search("edge without docker", _unit(0))
    by_name = {h.name: h.score for h in hits}
    # tokens ["edge"] match both stems; docker.io contains the negated "docker": x0.5 (0.9 -> 0.45).
    assert by_name["edge-plain"] == pytest.approx(0.9)
    assert by_name["edge-docker"] == pytest.approx(0.45)
    assert [h.name for h in hits] == ["edge-plain", "edge-docker"]
    weak = BaselineIndex(docs, np.stack([_unit(1), _unit(1)]))
    assert weak.search("something unrelated", _unit(0)) == []  # 0.0 < 0.40


def test_searchable_text_infers_keywords_from_the_file_name_only_without_metadata():
    doc = doc_from_data("emt3-x86_64-edge-raw.yml", {
        "image": {"name": "edge"}, "target": {"os": "edge-microvisor-toolkit", "dist": "emt3", "arch": "x86_64",
                                              "imageType": "raw"},
        "systemConfig": {"description": "Edge image", "packages": [f"p{i}" for i in range(25)],
                         "kernel": {"packages": ["kernel-rt"]}}})
    text = doc.searchable_text().splitlines()
    assert text[0] == "Template: emt3-x86_64-edge-raw.yml"
    assert "Description: Edge image" in text
    assert text[-1] == "Keywords: edge, raw"
    packages_line = next(line for line in text if line.startswith("Packages: "))
    assert packages_line.count(",") == 19  # the first 20 system packages; kernel packages are not read
    assert doc.all_keywords() == ["edge", "raw"]


# ---- synthetic templates -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def library_sources():
    sources = load_sources([LIBRARY])
    assert len(sources) >= 20
    return sources


def test_variants_are_valid_templates_and_round_trip(library_sources, tmp_path: Path):
    pool = make_pool(library_sources, 40)
    variants = pool[:12] + make_corpus(pool, 12, start=500)
    for variant in variants:
        text = render_yaml(variant.data, header="synthetic")
        assert load_mapping(text.encode()).data == variant.data
        report = validate_text(text, base_dir=tmp_path)
        assert report.valid, (variant.name, report.summary())


def test_generator_is_deterministic_and_range_independent(library_sources):
    a = make_pool(library_sources, 30)
    b = make_pool(library_sources, 30)
    assert [v.name for v in a] == [v.name for v in b]
    assert len({v.name for v in a}) == 30
    order = parent_order(len(a))
    whole = make_corpus(a, 20)
    assert [v.name for v in whole[10:]] == [corpus_variant(a, order, s).name for s in range(10, 20)]
    assert all(0 <= v.parent < len(a) for v in whole)


def test_variant_carries_theme_packages_and_metadata(library_sources):
    import random

    source = next(s for s in library_sources if s.target.get("dist") == "ubuntu24")
    theme = next(t for t in THEMES if t.slug == "iot-gateway")
    variant = themed_variant(source, theme, random.Random(1))
    assert "mosquitto" in variant.data["systemConfig"]["packages"]
    assert variant.data["metadata"]["use_cases"][0] == "iot-gateway"
    assert set(variant.data["metadata"]) == {"description", "use_cases", "keywords"}  # upstream's fields only
    assert "additionalFiles" not in variant.data["systemConfig"]


def test_record_from_memory_equals_record_from_the_written_file(library_sources, tmp_path: Path):
    pool = make_pool(library_sources, 10)
    variant = make_corpus(pool, 1)[0]
    raw = render_yaml(variant.data).encode()
    path = tmp_path / f"{variant.name}.yml"
    path.write_bytes(raw)
    st = path.stat()
    from_memory = record_from_data(variant.data, rel_id=path.name, root=str(tmp_path), raw=raw,
                                   fingerprint=Fingerprint(st.st_size, st.st_mtime_ns))
    assert from_memory == load_record(tmp_path, path)


def test_derived_vectors_match_the_calibrated_cosine():
    rng = np.random.default_rng(0)
    pool = rng.standard_normal((20, 384)).astype(np.float32)
    pool /= np.linalg.norm(pool, axis=1, keepdims=True)
    parents = np.arange(2000) % 20
    sigma = np.sqrt(1 / 0.93**2 - 1)
    vectors = derive_vectors(pool, parents, float(sigma), seed=1)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert float(np.mean(np.sum(vectors * pool[parents], axis=1))) == pytest.approx(0.93, abs=0.01)


# ---- bulk load, the vector-index switch and background scanning -------------------------------------------


def _bulk_corpus(tmp_path: Path, n: int) -> tuple[Path, list]:
    root = tmp_path / "templates"
    root.mkdir()
    for i in range(n):
        write_template(root, f"t{i:04d}", f"template number {i} for edge", "edge", "openssh-server")
    return root, [load_record(root, p) for p in sorted(root.glob("*.yml"))]


def test_bulk_load_rows_are_cache_hits_for_a_later_sync(tmp_path: Path):
    root, records = _bulk_corpus(tmp_path, 30)
    emb = HashEmbedder()
    index = TemplateIndex(tmp_path / "cache", [root], emb)
    index.bulk_load(records, emb.embed([r.text for r in records]))
    assert index._table.count_rows() == 30 and len(index.names()) == 30
    emb.calls.clear()
    report = TemplateIndex(tmp_path / "cache", [root], emb).sync()
    assert (report.embedded, report.hits) == (0, 30)
    assert emb.calls == []


def test_bulk_load_rejects_mismatched_vectors(tmp_path: Path):
    root, records = _bulk_corpus(tmp_path, 3)
    index = TemplateIndex(tmp_path / "cache", [root], HashEmbedder())
    with pytest.raises(ValueError):
        index.bulk_load(records, np.zeros((2, 32), dtype=np.float32))
    with pytest.raises(ValueError):
        index.bulk_load(records, np.full((3, 32), np.nan, dtype=np.float32))


def test_vector_index_is_built_past_the_switch_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(index_upkeep, "VECTOR_INDEX_MIN_ROWS", 256)
    root, records = _bulk_corpus(tmp_path, 300)
    emb = HashEmbedder()
    index = TemplateIndex(tmp_path / "cache", [root], emb)
    index.bulk_load(records, emb.embed([r.text for r in records]))
    assert index.vector_index_rows == 300
    names = [i.name for i in index._table.list_indices()]
    assert "vector_ivfsq_300" in names
    found = index.candidates(emb.embed_query("template number 7 for edge"), "", None, 10)
    assert len(found) == 10
    reopened = TemplateIndex(tmp_path / "cache", [root], emb)
    reopened.open()
    assert reopened.vector_index_rows == 300  # read back from the index name


def test_small_tables_stay_flat(tmp_path: Path):
    root, records = _bulk_corpus(tmp_path, 20)
    emb = HashEmbedder()
    index = TemplateIndex(tmp_path / "cache", [root], emb)
    index.bulk_load(records, emb.embed([r.text for r in records]))
    assert index.vector_index_rows == 0
    assert not [i for i in index._table.list_indices() if list(i.columns) == ["vector"]]


def test_large_libraries_scan_in_the_background(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(index_sync, "BACKGROUND_SCAN_MIN", 2)
    root, _records = _bulk_corpus(tmp_path, 5)
    emb = HashEmbedder()
    index = TemplateIndex(tmp_path / "cache", [root], emb)
    index.sync()
    write_template(root, "added", "a new template", "new", "nginx")
    assert index.refresh_if_stale(0.0) is None  # nothing synced on the caller's thread
    deadline = time.monotonic() + 30
    while index._pending_scan is None and time.monotonic() < deadline:
        time.sleep(0.01)
    report = index.refresh_if_stale(0.0)  # the pending scan is applied now
    assert report is not None and report.embedded == 1
    assert "added" in index.names()
    index.close()



def _waiting_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, patience: float) -> TemplateIndex:
    """A library scanned in the background, in chunks of 4 entries, with one template added since its sync."""
    monkeypatch.setattr(index_sync, "BACKGROUND_SCAN_MIN", 2)
    monkeypatch.setattr(index_sync, "SCAN_CHUNK", 4)
    root, _records = _bulk_corpus(tmp_path, 20)
    index = TemplateIndex(tmp_path / "cache", [root], HashEmbedder())
    index.sync()
    write_template(root, "added", "a new template", "new", "nginx")
    index.foreground.patience = patience
    return index


def _pending(index: TemplateIndex, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while index._pending_scan is None and time.monotonic() < deadline:
        time.sleep(0.01)
    return index._pending_scan is not None


def test_the_background_scan_waits_while_a_search_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    index = _waiting_scan(tmp_path, monkeypatch, patience=60.0)
    scanned = threading.Event()
    scan = index.scan

    def scan_and_say(pace=None):
        entries = scan(pace)
        scanned.set()
        return entries

    monkeypatch.setattr(index, "scan", scan_and_say)
    with index.foreground.serving():
        assert index.refresh_if_stale(0.0) is None  # starts the scan
        assert not scanned.wait(0.5)  # held at its first chunk while the search is in flight
        assert index._pending_scan is None
        assert index._scanner is not None and index._scanner.is_alive()
    assert _pending(index, 30)  # and done once the search ended
    assert index._scan_seconds < 0.4  # the wait is not counted as scanning work (SCAN_DUTY spaces the scans)
    report = index.refresh_if_stale(0.0)
    assert report is not None and report.embedded == 1
    paces: list[int] = []
    assert not index._differs(scan(), lambda: paces.append(1))  # the comparison makes way too, per chunk
    assert len(paces) == 6  # 21 files in chunks of 4
    index.close()


def test_the_background_scan_still_ends_under_searches_without_pause(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch):
    index = _waiting_scan(tmp_path, monkeypatch, patience=0.01)
    with index.foreground.serving():
        index.refresh_if_stale(0.0)
        assert _pending(index, 30)  # one chunk per ``patience`` at least
    index.close()



def test_upkeep_waits_for_a_quiet_moment_after_a_search():
    from image_composer_mcp.server.library.foreground import Foreground

    foreground = Foreground(patience=5.0, quiet=0.2)
    assert foreground.make_way() == 0.0  # no search yet: idle
    with foreground.serving():
        pass
    assert 0.15 <= foreground.make_way() < 2.0  # the gap after a search is not idle time yet
    assert foreground.make_way() == 0.0


def test_a_search_is_in_flight_for_the_background_scan(library_engine, monkeypatch: pytest.MonkeyPatch):
    searcher = library_engine.searcher
    seen = []
    validate = searcher.validate_args
    monkeypatch.setattr(searcher, "validate_args",
                        lambda *a: (seen.append(searcher.index.foreground._serving), validate(*a))[1])
    searcher.search("minimal edge image with ssh")
    assert seen == [1] and searcher.index.foreground._serving == 0


def test_scan_matches_the_template_loader(tmp_path: Path):
    root, _records = _bulk_corpus(tmp_path, 3)
    (root / "sub").mkdir()
    write_template(root / "sub", "nested")
    (root / ".hidden").mkdir()
    write_template(root / ".hidden", "secret")
    (root / "files").mkdir()
    write_template(root / "files", "overlay")
    (root / "notes.txt").write_text("x")
    from image_composer_mcp.server.library.templates import scan_files

    index = TemplateIndex(tmp_path / "cache", [root], HashEmbedder())
    mine = sorted((r, rel) for r, rel, _s, _m in index.scan())
    theirs = sorted((str(r), p.relative_to(r).as_posix()) for r, p, _fp in scan_files([root]))
    assert mine == theirs and ("sub/nested.yml" in {rel for _r, rel in mine})


# ---- small helpers -----------------------------------------------------------------------------------------


def test_latency_queries_are_distinct_and_exclude_the_first_query():
    labelled = [LabelledQuery(f"query {i}", ["x"]) for i in range(7)] + [LabelledQuery(FIRST_QUERY, ["x"])]
    qs = latency_queries(labelled, 50)
    assert len(qs) == 50 and len({q.lower() for q in qs}) == 50
    assert FIRST_QUERY not in qs


def test_percentile_interpolates():
    assert percentile([1, 2, 3, 4], 50) == pytest.approx(2.5)
    assert percentile([5.0], 99) == 5.0



def test_the_ratio_interval_brackets_the_ratio_and_tells_a_real_gap_from_noise():
    from bench.measure import ratio_interval

    rng = np.random.default_rng(3)
    base = list(4.0 + rng.gamma(2.0, 0.5, 600))
    same = list(np.asarray(base) * rng.normal(1.0, 0.05, 600))  # the same searches, with noise
    slower = [x * 1.2 for x in base]
    low, high = ratio_interval(same, base)
    assert low < 1.0 < high  # noise only: not told apart from the baseline
    low, high = ratio_interval(slower, base)
    assert low == pytest.approx(1.2) and high == pytest.approx(1.2)  # paired: every resample keeps the 1.2
    assert ratio_interval(base[:10], base[:10]) is None  # too few searches to say
    low, high = ratio_interval(slower[:300], base)  # unpaired: each side resampled on its own
    assert low < 1.2 < high


def test_plan_table_names_the_rows_where_plan_mode_did_worse():
    from bench.llm import plan_markdown

    def half(right: int, failures: list[dict], **extra: int) -> dict:
        row = {"count": 2, "right": right, "misses": len(failures), "reported": len(failures), "failures": failures,
               "providers": {"openai+composer": 2}}
        return {"requests": {**row, **extra}, "refinements": {**row, "right": 2, "misses": 0, "reported": 0,
                                                               "failures": []}}

    miss = {"text": "debian 13 with curl", "problems": ["package curl missing"], "reported": True}
    plan = {"offline": {"dev": half(2, []), "test": half(2, [])},
            "plan": {"dev": half(1, [miss], planned=2, plan_right=1, planned_merged_right=1), "test": half(2, [])}}
    text = plan_markdown(plan, "tiny.gguf", {"date": "today"})
    assert "| dev | requests | 2/2 | 1/2 **worse** | 2/2 | 2/2 | 1/2 (50 %) | 1/2 (50 %) | 1/1 |" in text
    assert "| test | refinements | 2/2 | 2/2 | 2/2 | - | - | - | 0/0 |" in text
    assert "- dev requests, plan mode missed where offline did not: debian 13 with curl: package curl missing" in text


def test_beside_baseline_reports_ratios_and_the_searches_during_background_work():
    from bench.report import _beside_baseline

    def size(ours: float, base: float, during: int) -> dict:
        inproc = {"latency": {"p95_ms": ours}, "background_s": 0.5, "searches_during_background": during}
        if during:
            inproc["latency_during_background"] = {"p95_ms": 17.0}
        return {"inproc": inproc, "baseline": {"latency": {"p95_ms": base}}}

    results = {"speed": {"48": size(5.0, 5.0, 0), "10000": size(9.0, 6.0, 40)},
               "indexing": {"embedding": {"texts": 32, "texts_per_s": 26.67, "runs_s": [1.6, 1.2, 1.0]}}}
    results["speed"]["48"]["inproc"]["pooled_latencies_ms"] = [5.0 + i / 100 for i in range(100)]
    results["speed"]["48"]["baseline"]["pooled_latencies_ms"] = [5.0 + i / 100 for i in range(100)]
    results["speed"]["10000"]["baseline"].update(embedder_threads="sleeping", other_setting={
        "embedder_threads": "spinning", "latency": {"p95_ms": 14.37}})
    text = "\n".join(_beside_baseline(results))
    assert "lower pooled p95 (`bench/inproc.py` `alternating_runs`): 10,000: sleeping (spinning: p95 14.4 ms). " in text
    assert "| 1.00× (same); 95 % interval 1.00–1.00× |" in text  # pooled latencies: the interval beside the ratio
    assert "2 cores (median of 3 batches: 20.0 / 26.7 / 32.0 /s) | 26.7 /s |" in text
    assert "| in-process search p95, 48 templates | 5.0 ms | 5.0 ms | 1.00× (same); 95 % interval" in text
    assert "| in-process search p95, 10,000 templates | 9.0 ms | 6.0 ms | 1.50× (worse) | ≤ 1.0× | **no** |" in text
    assert "10,000 templates: 0.50 s, 40 searches meanwhile, p95 17.0 ms" in text
    assert "48 templates: 0.50 s" not in text  # nothing ran meanwhile: not reported


def test_searches_during_background_work_are_timed_apart_and_waited_for():
    from bench.inproc import _during_background

    class Index:
        def __init__(self) -> None:
            self.left = 3
            self.settled = False

        def background_busy(self) -> bool:
            return self.left > 0

        def settle(self) -> None:
            self.settled = True

    class Engine:
        def __init__(self) -> None:
            self.index = Index()
            self.asked: list[str] = []

        def search(self, query: str) -> None:
            self.asked.append(query)
            self.index.left -= 1

    engine = Engine()
    out = _during_background(engine, ["a", "b", "c", "d", "e"])
    assert out["searches_during_background"] == 3 and engine.index.settled
    assert engine.asked == ["a please", "b please", "c please"]  # not the timed set's own texts
    assert out["latency_during_background"]["p95_ms"] >= 0


def test_start_up_figures_are_the_median_of_several_starts():
    from bench.report import _runs
    from bench.run import _median_start

    runs = [{"first_result_s": 3.1, "peak_rss_mb": 1}, {"first_result_s": 2.7, "peak_rss_mb": 2},
            {"first_result_s": 2.9, "peak_rss_mb": 3}]
    median = _median_start(runs)
    assert median["first_result_s"] == 2.9 and median["peak_rss_mb"] == 3  # the median run, whole
    assert median["first_result_runs_s"] == [3.1, 2.7, 2.9]
    assert _runs(median) == " (median of 3 starts: 2.70 / 2.90 / 3.10 s)"
    assert _runs({"first_result_s": 1.0}) == ""


def test_alternating_rounds_pool_their_latencies_and_run_in_turns(monkeypatch, tmp_path: Path):
    """Ours and the baseline take turns; each side's latencies are pooled over its rounds, the rest is its first
    round's, only the first round edits a template, and a failed round is counted and left out. The baseline
    runs with both embedder thread settings and keeps the one with the lower pooled p95."""
    from bench import inproc

    calls: list[tuple[str, object]] = []
    ours_lat = iter([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    base_lat = {True: iter([[10.0], [20.0]]), False: iter([[5.0], [6.0], [7.0]])}

    def engine(roots, cache_dir, first, queries, edit_file):
        calls.append(("ours", edit_file))
        lat = next(ours_lat)
        return {"latencies_ms": lat, "latency": inproc.summary(lat), "ready_s": len(calls)}

    def baseline(docs, first, queries, spin=True):
        calls.append(("base", spin))
        if spin and len([c for c in calls if c == ("base", True)]) == 2:
            return {"error": "boom"}
        lat = next(base_lat[spin])
        return {"latencies_ms": lat, "latency": inproc.summary(lat)}

    monkeypatch.setattr(inproc, "engine_process", engine)
    monkeypatch.setattr(inproc, "baseline_process", baseline)
    edit = tmp_path / "t.yml"
    ours, base = inproc.alternating_runs([tmp_path], tmp_path, tmp_path / "docs", "q", ["a"], edit, rounds=3)
    assert [c[0] for c in calls] == ["ours", "base", "base"] * 3
    assert [c[1] for c in calls if c[0] == "base"] == [True, False] * 3
    assert [c[1] for c in calls if c[0] == "ours"] == [edit, None, None]
    assert ours["latency"]["n"] == 6 and ours["latency"]["p50_ms"] == 3.5 and ours["ready_s"] == 1
    assert len(ours["latency_rounds"]) == 3 and ours["failed_rounds"] == 0
    assert base["embedder_threads"] == "sleeping" and base["latency"]["n"] == 3 and base["failed_rounds"] == 0
    other = base["other_setting"]
    assert other["embedder_threads"] == "spinning" and other["latency"]["n"] == 2


def test_the_baseline_keeps_spinning_threads_when_they_are_faster(monkeypatch, tmp_path: Path):
    from bench import inproc

    def baseline(docs, first, queries, spin=True):
        lat = [4.0, 5.0] if spin else [8.0, 9.0]
        return {"latencies_ms": lat, "latency": inproc.summary(lat)}

    monkeypatch.setattr(inproc, "engine_process", lambda *a: {"latencies_ms": [1.0], "latency": inproc.summary([1.0])})
    monkeypatch.setattr(inproc, "baseline_process", baseline)
    _, base = inproc.alternating_runs([tmp_path], tmp_path, tmp_path / "docs", "q", ["a"], None, rounds=2)
    assert base["embedder_threads"] == "spinning" and base["latency"]["p95_ms"] <= 5.0
    assert base["other_setting"]["latency"]["p95_ms"] >= 8.0

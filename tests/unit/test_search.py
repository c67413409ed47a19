"""Search behaviour and quality on the real reference corpus with the real local embedder."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from image_composer_mcp.server.library.keyword_scoring import (
    coverage,
    keyword_plan,
    keyword_score,
    keywords_at,
)
from image_composer_mcp.server.library.query_analysis import SearchInputError

from bench.evaluation import evaluate, load_queries
from tests.conftest import REPO

REFERENCE_QUERIES = REPO / "tests" / "data" / "queries-reference.yaml"

# Measured on the labelled set (see README "Search quality"); the test fails if quality drops below.
REFERENCE_BAR = {"hit@3": 0.97, "mrr": 0.93}


def _rank(engine):
    def rank(query: str):
        outcome = engine.searcher.search(query, 10, use_threshold=False)
        return [r.record.name for r in outcome.results], outcome.query_type
    return rank


def test_quality_on_the_reference_corpus(reference_engine):
    queries = load_queries(REFERENCE_QUERIES)
    assert len(queries) >= 40
    assert {q.type for q in queries} >= {"semantic", "package-explicit", "keyword-heavy", "negation"}
    report = evaluate(queries, _rank(reference_engine))
    metrics = report.metrics()
    failures = [(o.query.query, o.ranked[:3]) for o in report.failures()]
    assert metrics["hit@3"] >= REFERENCE_BAR["hit@3"], failures
    assert metrics["mrr"] >= REFERENCE_BAR["mrr"], metrics


def test_threshold_keeps_every_relevant_top3_hit(reference_engine):
    """The calibrated threshold must never drop a relevant template that ranks in the top 3."""
    for q in load_queries(REFERENCE_QUERIES):
        ranked = reference_engine.searcher.search(q.query, 3, use_threshold=False)
        shipped = {r.record.name for r in reference_engine.searcher.search(q.query, 3).results}
        for r in ranked.results:
            if r.record.name in q.relevant:
                assert r.record.name in shipped, (q.query, r.record.name, r.score)


@pytest.mark.parametrize("query", ["chocolate cake recipe with strawberries", "the stock market fell on tuesday",
                                   "how do penguins survive antarctic winters"])
def test_irrelevant_queries_say_nothing_relevant(reference_engine, query):
    outcome = reference_engine.search(query)
    assert outcome.results == []
    assert "no relevant templates found" in outcome.message


def test_a_package_no_one_writes_as_a_word_finds_the_template_that_lists_it(reference_engine):
    # mosquitto sits in one template's list of ~240 packages and nowhere in its words: the match alone is evidence
    outcome = reference_engine.search("mosquitto broker")
    assert outcome.results and all("mosquitto" in r.record.packages for r in outcome.results)
    assert "relevance threshold" in outcome.message


def test_a_package_that_is_an_everyday_word_needs_the_meaning_too(reference_engine):
    # watch and tree are packages too: a match of such a word alone, with no meaning in common, shows nothing
    assert reference_engine.search("watch the tree grow").results == []


@pytest.mark.parametrize(("tokens", "read"), [
    (["docker-free", "image"], ["without", "docker", "image"]), (["rhel-like"], ["rhel"]),
    (["that", "isn", "t", "ubuntu"], ["that", "without", "ubuntu"]), (["rather", "than", "ubuntu"], ["without", "ubuntu"]),
    (["headless", "ros"], ["headless", "without", "desktop", "and", "kiosk", "ros"]),
])
def test_negations_in_other_forms_are_read_as_negation_words(tokens, read):
    from image_composer_mcp.server.library.query_analysis import _negations_as_words

    assert _negations_as_words(tokens) == read


@pytest.mark.parametrize(("query", "unwanted"), [
    ("docker-free minimal microvisor image", "moby-engine"),
    ("AI video inference image that isn't Ubuntu", "ubuntu"),
    ("edge multifunction image, no real-time kernel", "rt"),
])
def test_what_a_query_negates_in_other_forms_is_not_what_it_gets_first(reference_engine, query, unwanted):
    top = reference_engine.search(query).results[0].record
    assert unwanted not in top.packages and unwanted not in top.dist and unwanted not in top.name.split("-")


@pytest.mark.parametrize(("query", "named"), [("Windows 11 IoT Enterprise LTSC", "Windows 11"),
                                              ("RISC-V development board", "RISC-V"),
                                              ("fedora coreos kubernetes", "Fedora CoreOS")])
def test_a_target_no_template_can_have_gets_no_results_and_is_told(reference_engine, query, named):
    outcome = reference_engine.search(query)
    assert outcome.results == [] and outcome.message.startswith(f"no templates for {named}:")


@pytest.mark.parametrize("query", ["debian kiosk for shop windows", "ubuntu server instead of windows server 2022"])
def test_an_everyday_word_or_a_negated_name_is_no_target(reference_engine, query):
    assert not reference_engine.search(query).message.startswith("no templates for")


def test_adr_cloud_elxr(reference_engine):
    outcome = reference_engine.search("cloud elxr raw image")
    assert outcome.results[0].record.name == "elxr-cloud-amd64"
    assert all(r.record.dist == "elxr12" for r in outcome.results[:3])


def test_adr_package_explicit_boosts_package_weight(reference_engine):
    outcome = reference_engine.search("image with nginx and docker-ce")
    assert outcome.query_type == "package-explicit"
    assert outcome.analysis.packages == ["nginx", "docker-ce"]
    assert outcome.weights["package"] == 0.40
    semantic = reference_engine.search("an image for the edge")
    assert semantic.weights["package"] < outcome.weights["package"]


def test_adr_keyword_heavy(reference_engine):
    outcome = reference_engine.search("edge IoT minimal raw")
    assert outcome.query_type == "keyword-heavy"
    assert outcome.weights["keyword"] > 0.3
    assert "edge" in outcome.results[0].record.name


def test_adr_negation_penalizes_docker_templates(reference_engine):
    outcome = reference_engine.searcher.search("minimal without docker", 48, use_threshold=False)
    assert outcome.query_type == "negation" and outcome.analysis.excluded == ["docker"]
    penalized = [r for r in outcome.results if r.penalties]
    assert penalized, "some template in the corpus installs docker"
    for r in penalized:
        assert "docker" in r.penalties[0]
    top = outcome.results[0]
    assert not top.penalties and "minimal" in top.record.name
    plain = reference_engine.searcher.search("minimal docker", 48, use_threshold=False)
    plain_scores = {r.record.name: r.score for r in plain.results}
    for r in penalized:
        if r.record.name in plain_scores:
            assert r.score < plain_scores[r.record.name]


def test_negation_stops_at_the_end_of_the_excluded_list(reference_engine):
    analysis = reference_engine.searcher.analyzer.analyze("edge image without docker and nginx for arm64 boards")
    assert analysis.excluded == ["docker", "nginx"]
    assert "arm64" in analysis.content_terms


def test_result_breakdown_and_filters(reference_engine):
    outcome = reference_engine.search("minimal image", 5, arch="aarch64")
    assert outcome.results and all(r.record.arch == "aarch64" for r in outcome.results)
    r = outcome.results[0]
    w = outcome.weights
    expected = w["semantic"] * r.semantic + w["keyword"] * r.keyword + w["package"] * r.package
    assert r.score == pytest.approx(expected, abs=1e-3)
    iso = reference_engine.search("ubuntu", 10, image_type="iso", dist="ubuntu24")
    assert {x.record.image_type for x in iso.results} == {"iso"}


def test_stated_target_mismatch_is_penalized(reference_engine):
    outcome = reference_engine.searcher.search("minimal ubuntu for arm64", 10, use_threshold=False)
    assert outcome.results[0].record.arch == "aarch64"
    x86 = [r for r in outcome.results if r.record.arch == "x86_64"]
    assert x86 and all(any("arch" in p for p in r.penalties) for r in x86)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"query": ""}, "query is empty"),
        ({"query": "   "}, "query is empty"),
        ({"query": "x" * 5000}, "limit is 2,000"),
        ({"query": "edge", "top_k": 0}, "top_k is 0"),
        ({"query": "edge", "top_k": 500}, "top_k is 500"),
        ({"query": "edge", "dist": "windows11"}, "unknown dist filter 'windows11'"),
        ({"query": "edge", "arch": "riscv"}, "indexed values: aarch64, x86_64"),
    ],
)
def test_bad_search_input_gets_a_specific_error(reference_engine, kwargs, message):
    query = kwargs.pop("query")
    top_k = kwargs.pop("top_k", 5)
    with pytest.raises(SearchInputError, match=message):
        reference_engine.search(query, top_k, **kwargs)


def test_repeated_queries_are_served_from_the_result_cache(reference_engine):
    first = reference_engine.search("ubuntu robotics jazzy")
    again = reference_engine.search("ubuntu robotics jazzy")
    assert again.cached and [r.record.name for r in again.results] == [r.record.name for r in first.results]


LIBRARY_QUERIES = REPO / "tests" / "data" / "queries-library.yaml"
LIBRARY_BAR = {"hit@3": 0.96, "mrr": 0.93}


def test_quality_on_our_library(library_engine):
    queries = load_queries(LIBRARY_QUERIES)
    assert len(queries) >= 30
    report = evaluate(queries, _rank(library_engine))
    metrics = report.metrics()
    assert metrics["hit@3"] >= LIBRARY_BAR["hit@3"], [(o.query.query, o.ranked[:3]) for o in report.failures()]
    assert metrics["mrr"] >= LIBRARY_BAR["mrr"], metrics


def test_a_template_without_docker_wins_a_negated_docker_query(library_engine):
    outcome = library_engine.search("edge gateway without docker", 3)
    top = outcome.results[0]
    assert not top.penalties
    assert not any("docker" in p or "moby" in p for p in top.record.packages)


class _CountingEmbedder:
    dimensions = 8

    def __init__(self, model_id: str):
        self.model_id = model_id
        self.batches: list[list[str]] = []

    def embed(self, texts: list[str]):
        import numpy as np

        self.batches.append(list(texts))
        return np.ones((len(texts), self.dimensions), dtype=np.float32) / np.sqrt(self.dimensions)

    def embed_query(self, text: str):
        return self.embed([text])[0]


def test_glossary_labels_are_embedded_once_at_start_for_the_local_model_only():
    from image_composer_mcp.server.core.config import load_settings
    from image_composer_mcp.server.library.search import SearchEngine

    settings = load_settings(env={})
    local = _CountingEmbedder("local:all-MiniLM-L6-v2")
    engine = SearchEngine(None, local, settings)  # type: ignore[arg-type] - labels need no index
    assert len(local.batches) == 1 and len(local.batches[0]) > 10
    label = local.batches[0][0]
    engine._vectors("some query", [label])
    assert local.batches[1:] == [["some query"]]  # the label answered from the start-up batch
    remote = _CountingEmbedder("ollama:nomic-embed-text")
    engine = SearchEngine(None, remote, settings)  # type: ignore[arg-type]
    assert remote.batches == []  # a slow remote embedder must not hold the start back
    _, vectors = engine._vectors("some query", [label])
    assert remote.batches == [["some query", label]] and set(vectors) == {label}


def test_glossary_label_vectors_are_kept_per_model_between_starts(tmp_path):
    from image_composer_mcp.server.core.config import load_settings
    from image_composer_mcp.server.library.search import SearchEngine

    settings = load_settings(env={})
    cache = tmp_path / "concept-labels.npz"
    first = _CountingEmbedder("local:all-MiniLM-L6-v2")
    started = SearchEngine(None, first, settings, label_cache=cache)  # type: ignore[arg-type]
    assert len(first.batches) == 1 and cache.is_file()
    again = _CountingEmbedder("local:all-MiniLM-L6-v2")
    restarted = SearchEngine(None, again, settings, label_cache=cache)  # type: ignore[arg-type]
    assert again.batches == []  # read from the file
    assert restarted._label_vectors.keys() == started._label_vectors.keys()
    assert all((restarted._label_vectors[k] == v).all() for k, v in started._label_vectors.items())
    other = _CountingEmbedder("local:another-model")
    SearchEngine(None, other, settings, label_cache=cache)  # type: ignore[arg-type]
    assert len(other.batches) == 1  # another model's vectors are not reused
    cache.write_bytes(b"not a zip file")
    broken = _CountingEmbedder("local:all-MiniLM-L6-v2")
    SearchEngine(None, broken, settings, label_cache=cache)  # type: ignore[arg-type]
    assert len(broken.batches) == 1  # an unreadable file is re-made, never an error


def test_a_spelling_correction_is_embedded_in_the_query_s_call_once():
    from image_composer_mcp.server.core.config import load_settings
    from image_composer_mcp.server.library.search import SearchEngine

    embedder = _CountingEmbedder("local:all-MiniLM-L6-v2")
    engine = SearchEngine(None, embedder, load_settings(env={}))  # type: ignore[arg-type]
    start = len(embedder.batches)
    engine._vectors("raspbery gateway", ["raspberry"])
    engine._vectors("raspbery kiosk", ["raspberry"])
    assert embedder.batches[start:] == [["raspbery gateway", "raspberry"], ["raspbery kiosk"]]


def test_spelling_corrections_embed_the_same_query_vector_as_before(library_engine):
    """Batched with its correction, a query's vector is the one it has alone (the padding is masked)."""
    embedder = library_engine.searcher.embedder
    alone = embedder.embed(["ubuntu robotcs image"])[0]
    batched = embedder.embed(["ubuntu robotcs image", "robotics"])[0]
    assert float(alone @ batched) > 0.99999


def _outcome(engine, query: str, **filters) -> tuple:
    engine.searcher._cache.clear()
    o = engine.searcher.search(query, top_k=5, use_threshold=False, **filters)
    return o.message, o.below_threshold, [(r.record.name, r.score, r.semantic, r.keyword, r.package, r.cosine, r.bm25,
                                           r.penalties, r.matched_packages, r.matched_terms) for r in o.results]


def test_the_second_core_s_work_changes_no_result(library_engine, monkeypatch):
    """With both legs in memory, the full-text leg and the static score parts run beside the query's embedding
    (search.py ``_prepare``); the answers are the ones of the one-thread path, to the last digit."""
    engine = library_engine
    engine.search("warm up")
    engine.index.settle()
    mirror = engine.index.memory_mirror()
    assert mirror is not None and mirror.term_postings() is not None  # every row's words scored at once
    queries = [q.query for q in load_queries(REPO / "bench" / "eval" / "search-library.yaml")][:40]
    queries += ["without docker minimal", "ubuntu arm64 raw with nginx", "kernel-rt for x86_64 not ubuntu", "zzqx"]
    cases = [(q, {}) for q in queries] + [("edge image", {"arch": "x86_64"}), ("docker", {"os": "ubuntu"})]
    calls = []
    real = engine.searcher._prepare
    monkeypatch.setattr(engine.searcher, "_prepare", lambda *a: calls.append(1) or real(*a))
    overlapped = [_outcome(engine, q, **f) for q, f in cases]
    assert len(calls) == len(cases)
    monkeypatch.setattr(engine.index, "memory_mirror", lambda: None)
    one_thread = [_outcome(engine, q, **f) for q, f in cases]
    assert overlapped == one_thread


def test_every_row_s_keyword_coverage_at_once_equals_one_candidate_at_a_time(library_engine):
    """keyword_scoring ``coverage`` (from the mirror's term postings) against ``keyword_score`` for every row and
    query, to the last bit: plain words, synonyms, stems, concepts described in plain words, misspellings."""
    engine = library_engine
    engine.search("warm up")
    engine.index.settle()
    mirror = engine.index.memory_mirror()
    postings = mirror.term_postings()
    assert postings is not None and postings.rows == len(mirror.uids)
    searcher = engine.searcher
    queries = [q.query for f in ("search-library.yaml", "search-reference.yaml")
               for q in load_queries(REPO / "bench" / "eval" / f)]  # library and reference
    queries += ["boot machines over the network", "kubernets on a raspbery pi", "secure immutable os", "x"]
    rows = list(range(len(mirror.uids)))
    credited = 0
    for query in queries:
        analysis = searcher.analyzer.analyze(" ".join(query.split()))
        plan = keyword_plan(analysis, searcher._idf)
        at_once = keywords_at(coverage(plan, postings), rows)
        one_by_one = [keyword_score(plan, mirror.catalog[uid]) for uid in mirror.uids]
        assert at_once == one_by_one, query
        credited += sum(1 for value, _ in at_once if value)
    assert credited > len(queries)  # most queries credit some rows: the comparison is not of zeros


def test_on_inference_calls_back_once_at_the_model_run_or_at_the_end():
    from image_composer_mcp.server.library.embedder import inference_starts, on_inference

    calls = []
    with on_inference(lambda: calls.append("run")):
        inference_starts()
        inference_starts()  # a second sub-batch: already called
        assert calls == ["run"]
    assert calls == ["run"]
    with on_inference(lambda: calls.append("end")):
        pass  # a cached vector: no model run
    assert calls == ["run", "end"]
    inference_starts()  # outside a block: nothing to call
    assert calls == ["run", "end"]


def test_every_row_s_static_parts_at_once_equal_one_candidate_at_a_time(library_engine):
    """Scoring from ``_prepare``'s shares for every row (keyword coverage and package shares from the term
    postings) against scoring one candidate at a time, every row a candidate, for every query: the same
    scores, shares, order, evidence and penalties, and the same words, packages and reasons for each result
    (packages named, aliases, package stems, exclusions and stated targets included)."""
    import threading

    engine = library_engine
    engine.search("warm up")
    engine.index.settle()
    mirror = engine.index.memory_mirror()
    assert mirror is not None and mirror.term_postings() is not None
    searcher = engine.searcher
    started = threading.Event()
    started.set()
    queries = [q.query for f in ("search-library.yaml", "search-reference.yaml")
               for q in load_queries(REPO / "bench" / "eval" / f)]
    queries += ["docker.io and moby-engine", "linux headers for the intel kernel", "nginx without docker on ubuntu"]
    uids, rows = list(mirror.uids), list(range(len(mirror.uids)))
    rng = np.random.default_rng(7)
    named = penalised = 0
    for query in queries:
        analysis = searcher.analyzer.analyze(" ".join(query.split()))
        _hits, plan, static, every = searcher._prepare(started, mirror, analysis, "", {}, len(mirror.uids))
        assert every is not None and static == {}
        cosines, bm25 = rng.uniform(-0.1, 0.9, len(uids)), rng.uniform(0.0, 9.0, len(uids)) * (rng.random(len(uids)) < 0.5)
        weights = searcher.weights_for(analysis)
        at_once = searcher._score_all(uids, cosines, bm25, analysis, weights, {}, None, plan, every, rows)
        alone = searcher._score_all(uids, cosines, bm25, analysis, weights, {}, None, plan)
        assert at_once.order == alone.order, query
        for field in ("score", "semantic", "keyword", "package", "worded", "penalised"):
            assert getattr(at_once, field).tolist() == getattr(alone, field).tolist(), (query, field)
        assert at_once.parts(rows) == alone.parts(rows), query
        named += bool(analysis.packages) and any(alone.package)
        penalised += any(alone.penalised)
    assert named >= 10  # queries naming packages that some template installs were among them
    assert penalised >= 10  # and queries with exclusions or stated targets that some template misses


def test_a_concept_label_not_embedded_at_start_is_embedded_after_the_analysis_and_kept(library_engine, monkeypatch):
    """Below the mirror's size the query is analysed while it is embedded, so a concept label the start-up
    could not embed (a remote model, or a failure) is embedded after the analysis: the answer is the one
    with the label embedded at start, and the label is kept for the next query."""
    engine = library_engine
    searcher = engine.searcher
    query = "boot diskless machines over the lan"
    assert engine.index.memory_mirror() is not None
    labels = searcher.analyzer.analyze(query).embedding_labels()
    assert labels  # a concept named in plain words
    searcher._cache.clear()
    before = [(r.record.name, round(r.semantic, 3)) for r in engine.search(query, 5).results]
    calls: list[list[str]] = []
    real_embed = searcher.embedder.embed
    monkeypatch.setattr(searcher.embedder, "embed", lambda texts: calls.append(list(texts)) or real_embed(texts))
    monkeypatch.setattr(searcher, "_label_vectors", {})
    searcher._cache.clear()
    after = [(r.record.name, round(r.semantic, 3)) for r in engine.search(query, 5).results]
    assert after == before
    assert calls == [labels] and set(labels) <= set(searcher._label_vectors)
    searcher._cache.clear()
    engine.search(query, 5)
    assert calls == [labels]  # kept: not embedded again


def test_document_frequencies_follow_edits_and_removals(tmp_path):
    from image_composer_mcp.server.core.config import load_settings
    from image_composer_mcp.server.library.index import TemplateIndex
    from image_composer_mcp.server.library.search import SearchEngine

    from tests.conftest import HashEmbedder, write_template

    root = tmp_path / "templates"
    root.mkdir()
    for i in range(5):
        write_template(root, f"t{i}", f"edge gateway number {i}", "edge", "openssh-server")
    settings = load_settings(env={})
    index = TemplateIndex(tmp_path / "cache", [root], HashEmbedder())
    index.sync()
    searcher = SearchEngine(index, HashEmbedder(), settings)
    searcher.search("edge gateway")
    before = dict(searcher._df)
    write_template(root, "t1", "web server for a shop", "web", "Nginx")
    (root / "t2.yml").unlink()
    write_template(root, "t9", "kiosk with a browser", "kiosk", "chromium")
    index.sync()
    searcher.search("edge gateway")
    fresh = SearchEngine(index, HashEmbedder(), settings)
    fresh.search("edge gateway")
    assert +searcher._df == +fresh._df and searcher._df != before  # the edits counted as a fresh count does
    assert searcher._df["gateway"] == 3 and searcher._df["kiosk"] == 1
    assert {"nginx", "chromium", "openssh-server"} <= index.all_packages() and "Nginx" not in index.all_packages()
    index.close()


def test_word_counts_of_many_new_rows_and_the_spelling_index_are_kept_out_of_the_cyclic_gc(library_engine,
                                                                                           monkeypatch):
    """Counted from many new rows (BULK_ROWS, lowered here to the library's size), the word counts are frozen
    out of the cyclic GC, as the spelling index built ahead of the first unknown word is: full collections, inside a
    search, walked them (~15-29 ms at 100,000 templates). The counts are those of a fresh count either way."""
    import gc

    from image_composer_mcp.server.library import search as search_module
    from image_composer_mcp.server.library.query_analysis import SpellingIndex

    def builds_done() -> None:  # the last of the threads building at once freezes what they all built
        for thread in [t for t in threading.enumerate() if t.name == "spelling-index"]:
            thread.join(10)

    searcher = library_engine.searcher
    library_engine.search("warm up")
    builds_done()  # earlier tests' engines may still build theirs
    before = dict(searcher._df)
    build_ahead = SpellingIndex.build_ahead
    # The spelling index's own freeze (below) would freeze the counts too: first the counts alone.
    monkeypatch.setattr(SpellingIndex, "build_ahead", lambda self, make_way, chunk=0: None)
    gc.unfreeze()  # what earlier tests' engines froze (this one's counts among it)

    def recount(query: str) -> None:
        searcher._seen.clear()
        searcher._df.clear()
        searcher._catalog_version = (-1, -1)
        library_engine.search(query)

    try:
        monkeypatch.setattr(search_module, "BULK_ROWS", len(library_engine.index.catalog) + 1)
        recount("minimal edge image")
        tracked = {id(o) for o in gc.get_objects()}
        assert id(searcher._df) in tracked  # fewer new rows than BULK_ROWS: left to the GC
        monkeypatch.setattr(search_module, "BULK_ROWS", 1)
        recount("minimal edge image for arm")
        assert id(searcher._df) not in {id(o) for o in gc.get_objects()} and gc.isenabled()
        assert searcher.analyzer.spelling is not None and searcher.analyzer.spelling._by_deletion is None
        monkeypatch.setattr(SpellingIndex, "build_ahead", build_ahead)
        gc.unfreeze()
        recount("minimal edge image for arm")  # known words only: the spelling index is built ahead
        spelling = searcher.analyzer.spelling
        deadline = time.monotonic() + 10
        while spelling is not None and spelling._by_deletion is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert spelling is not None and spelling._by_deletion is not None
        builds_done()
        assert id(spelling._by_deletion) not in {id(o) for o in gc.get_objects()} and gc.isenabled()
        assert "read 'dokcer' as 'docker'" in library_engine.search("minimal edge image with dokcer").message
        assert {k: v for k, v in searcher._df.items() if v} == {k: v for k, v in before.items() if v}
    finally:
        gc.unfreeze()

"""Regression tests per failure class of issue 18: package stems, target vocabulary, plain-word concepts,
threshold calibration, and the needs-written labelled set with its held-out half."""

from __future__ import annotations

import pytest

from bench.evaluation import evaluate, load_queries
from tests.conftest import REPO

NEEDS = {name: REPO / "bench" / "eval" / f"search-{name}.yaml" for name in ("reference", "library")}


def _names(outcome) -> list[str]:
    return [r.record.name for r in outcome.results]


# ---- package stems ----------------------------------------------------------------------------------------

def test_stem_keys_cover_suffixes_prefixes_and_versions():
    from image_composer_mcp.server.library.query_analysis import package_stem_keys

    assert "v4l2loopback" in package_stem_keys("v4l2loopback-dkms")
    assert "tpm2" in package_stem_keys("tpm2-tools")
    assert "dlstreamer" in package_stem_keys("intel-dlstreamer-2025.2.0")
    assert "openvino" in package_stem_keys("openvino_2025.3.0.19807")
    assert "node-exporter" in package_stem_keys("prometheus-node-exporter")
    assert "linux-headers" in package_stem_keys("linux-headers-6.12-intel")
    assert "elf" in package_stem_keys("libelf-dev")


def test_a_query_naming_installed_packages_by_stem_is_never_empty(library_engine):
    outcome = library_engine.search("v4l2loopback")
    assert _names(outcome)[:1] == ["ubuntu24-x86_64-developer-dkms-raw"], outcome.message
    assert outcome.results[0].matched_packages == ["v4l2loopback"]


def test_two_word_package_stems_match(reference_engine):
    outcome = reference_engine.search("linux headers for the intel 6.12 kernel")
    assert outcome.results, outcome.message
    assert "linux-headers" in outcome.analysis.packages
    assert any(p.startswith("linux-headers-") for p in outcome.results[0].record.packages)
    assert set(_names(outcome)[:3]) & {"elxr12-x86_64-dlstreamer", "elxr12-x86_64-minimal-raw",
                                       "ubuntu24-x86_64-dlstreamer"}


def test_generic_words_are_not_read_as_package_stems(library_engine):
    analysis = library_engine.searcher.analyzer.analyze("camera analytics on the edge with intel graphics for control")
    assert analysis.package_sets == {}


def test_package_equivalences_come_from_the_shared_knowledge():
    from image_composer_mcp.server.library.query_analysis import package_aliases

    assert {"podman-docker"} <= package_aliases("podman")
    assert {"mariadb-server", "mysql-server"} <= package_aliases("mysql")
    assert {"docker.io", "moby-engine"} <= package_aliases("docker")


# ---- distribution / vendor / arch vocabulary --------------------------------------------------------------

@pytest.mark.parametrize(("query", "key", "value"), [
    ("Wind River minimal for arm64", "dist", "elxr12"),
    ("CentOS Stream base raw disk", "dist", "el10"),
    ("CBL-Mariner minimal base", "dist", "azl3"),
    ("Red Hat flavoured image", "dist", "el10"),
    ("bookworm-based minimal raw image", "dist", "elxr12"),
    ("closest thing to jammy", "os", "ubuntu"),
    ("Canonical arm64 cloud server", "os", "ubuntu"),
    ("elxr minimal x64", "arch", "x86_64"),
    ("ubuntu server cloud on AArch64", "arch", "aarch64"),
])
def test_every_name_of_a_target_reaches_the_target_fields(reference_engine, query, key, value):
    assert reference_engine.searcher.analyzer.analyze(query).wants.get(key) == value


@pytest.mark.parametrize(("query", "key", "value"), [
    ("Microsoft's Linux for edge devices running containers", "dist", "azl3"),
    ("a linux distro from Microsoft for containers", "dist", "azl3"),
    ("Intel's own edge OS with docker", "dist", "emt3"),
    ("ubuntu on microsoft azure cloud", "os", "ubuntu"),
    ("desktop for 64-bit PCs", "arch", "x86_64"),
    ("Raspberry Pi 4 running 64-bit Linux", "arch", "aarch64"),
    ("graviton instance image", "arch", "aarch64"),
])
def test_a_target_named_by_its_maker_its_cloud_or_its_machine_reaches_the_target_fields(reference_engine, query, key,
                                                                                         value):
    assert reference_engine.searcher.analyzer.analyze(query).wants.get(key) == value


def test_a_target_named_by_its_maker_is_embedded_in_its_own_name_and_ranks_its_templates(reference_engine):
    """"microsoft's distro" says nothing of Azure Linux to the model: its name is embedded beside the query, so the
    Azure Linux templates are the answer rather than nothing above the threshold."""
    analysis = reference_engine.searcher.analyzer.analyze("k8s worker on microsoft's distro")
    assert analysis.target_label == "Azure Linux" and "Azure Linux" in analysis.embedding_labels()
    outcome = reference_engine.searcher.search("k8s worker on microsoft's distro", 5)
    assert outcome.results and all(r.record.dist == "azl3" for r in outcome.results[:3]), outcome.message
    assert reference_engine.searcher.analyzer.analyze("azure linux with docker").target_label is None


@pytest.mark.parametrize("query", ["Microsoft Teams on a kiosk", "an Intel NUC media box", "microsoft azure vm"])
def test_a_maker_alone_names_no_distribution(reference_engine, query):
    assert "dist" not in reference_engine.searcher.analyzer.analyze(query).wants


@pytest.mark.parametrize(("query", "read"), [("Jazzy Jalisco", "jazzy"), ("ROS 2 on Noble Numbat", "noble"),
                                             ("64 bit pc desktop", "x86_64")])
def test_a_name_in_several_words_is_read_as_its_one_word(reference_engine, query, read):
    outcome = reference_engine.searcher.search(query, 5)
    assert outcome.results, outcome.message
    assert f"as '{read}'" in outcome.message


def test_a_named_target_is_a_preference_not_a_filter(library_engine):
    outcome = library_engine.searcher.search("Wind River minimal for arm64", 10, use_threshold=False)
    dists = [r.record.dist for r in outcome.results]
    assert dists[0] == "elxr12"
    assert any(d != "elxr12" for d in dists), "other distributions stay as fallbacks"


# ---- concepts in plain words ------------------------------------------------------------------------------

def test_glossary_covers_the_kinds_of_image_in_both_corpora():
    from image_composer_mcp.server.knowledge.glossary import load_glossary

    concepts = load_glossary().concepts
    for kind in ("network-boot", "installer", "immutable", "real-time", "robotics", "desktop", "uki",
                 "virtualization-host", "cloud-vm", "ai-vision", "monitoring", "web-server", "hardened", "kiosk",
                 "containers", "podman", "kernel-dev", "minimal", "edge-gateway", "edge-multifunction"):
        assert kind in concepts


@pytest.mark.parametrize(("query", "kind"), [
    ("an image my servers fetch at power-on through the LAN", "img"),
    ("something I can put on a USB stick to install on bare metal", "iso"),
])
def test_plain_words_reach_the_image_kind(reference_engine, query, kind):
    outcome = reference_engine.search(query)
    assert outcome.results, outcome.message
    assert outcome.results[0].record.image_type == kind


@pytest.mark.parametrize(("query", "concept", "first"), [
    ("operator touch panel for SCADA screens on the plant floor", "kiosk", "ubuntu24-x86_64-minimal-desktop-raw"),
    ("a build server for our firmware", "build-host", None),
])
def test_workload_jargon_names_its_concept(reference_engine, query, concept, first):
    outcome = reference_engine.search(query)
    assert concept in [c.id for c, _words in outcome.analysis.concepts]
    assert outcome.results, outcome.message
    assert first is None or outcome.results[0].record.name == first


def test_plain_words_expand_both_legs(reference_engine):
    analysis = reference_engine.searcher.analyzer.analyze("root filesystem that cannot be modified at runtime")
    assert "dm-verity" in analysis.expansion_terms()
    assert any("dm-verity" in label for label in analysis.embedding_labels())
    outcome = reference_engine.search("root filesystem that cannot be modified at runtime")
    immutable = {"azl3-x86_64-edge-raw", "elxr12-x86_64-edge-raw", "emt3-x86_64-edge-raw", "ubuntu24-x86_64-edge-raw",
                 "ubuntu24-x86_64-ros2"}
    assert set(_names(outcome)[:3]) & immutable, outcome.message


def test_a_negated_word_does_not_name_a_concept(library_engine):
    outcome = library_engine.search("web server without nginx", 3)
    assert _names(outcome)[0] == "el10-x86_64-web-server-httpd-raw"
    assert not outcome.results[0].penalties, "an inferred keyword is no evidence that nginx is installed"


# ---- threshold --------------------------------------------------------------------------------------------

def test_strong_keyword_evidence_survives_a_weak_semantic_score(reference_engine):
    outcome = reference_engine.search("ramdisk loaded over tftp")
    assert outcome.results and outcome.results[0].record.image_type == "img", outcome.message


@pytest.mark.parametrize("query", ["chocolate cake recipe", "book a flight from Berlin to Tokyo",
                                   "how do I file my taxes"])
def test_irrelevant_queries_still_find_nothing(reference_engine, query):
    outcome = reference_engine.search(query)
    assert outcome.results == [] and "no relevant templates found" in outcome.message


# ---- the needs-written set --------------------------------------------------------------------------------

def test_needs_set_is_large_and_split_once():
    queries = [q for path in NEEDS.values() for q in load_queries(path)]
    assert len(queries) >= 120
    assert {q.split for q in queries} == {"dev", "test"}
    for half in ("dev", "test"):
        types = {q.type for q in queries if q.split == half}
        assert {"package-stem", "codename", "vendor", "misspelling", "negation", "paraphrase", "multi-constraint",
                "irrelevant"} <= types


@pytest.mark.parametrize("corpus", ["reference", "library"])
def test_needs_set_test_half_meets_the_bar(corpus, request):
    engine = request.getfixturevalue(f"{corpus}_engine")

    def rank(query: str):
        outcome = engine.searcher.search(query, 5)
        return [r.record.name for r in outcome.results], outcome.query_type

    report = evaluate(load_queries(NEEDS[corpus], "test"), rank)
    metrics = report.metrics()
    misses = [(o.query.query, o.ranked[:3]) for o in report.failures()]
    assert metrics["hit@3"] >= 0.97, misses
    assert metrics["mrr"] >= 0.93, metrics
    assert metrics["empty"] == 0 and metrics["rejected"] == 1.0, misses


# ---- misspellings -----------------------------------------------------------------------------------------

def test_a_misspelt_word_is_read_as_the_known_word_one_edit_away(reference_engine):
    outcome = reference_engine.search("ubunut edge image with contianers")
    assert ("ubunut", "ubuntu") in outcome.analysis.corrections
    assert ("contianers", "containers") in outcome.analysis.corrections
    assert outcome.analysis.wants.get("os") == "ubuntu"
    assert outcome.results[0].record.os == "ubuntu" and "read 'ubunut' as 'ubuntu'" in outcome.message


def test_known_words_are_never_corrected(reference_engine):
    analysis = reference_engine.searcher.analyzer.analyze("minimal debian installer with openssh-server")
    assert analysis.corrections == []


def test_a_common_english_word_is_not_a_misspelling_of_a_glossary_word(library_engine):
    library_engine.search("k3s")  # the analyzer knows the catalog's words once it is loaded
    analysis = library_engine.searcher.analyzer.analyze("kubernetes control plane with etcd")
    assert ("plane", "plate") not in analysis.corrections and "plane" in analysis.tokens


def test_a_plural_of_a_known_word_is_not_a_misspelling(reference_engine):
    reference_engine.search("linux headers")  # the analyzer knows the catalog's package stems once it is loaded
    analysis = reference_engine.searcher.analyzer.analyze("linux headers for the intel 6.12 kernel")
    assert analysis.corrections == [] and "linux-headers" in analysis.packages


def test_per_template_set_caches_stay_bounded_and_drop_the_oldest_first():
    from image_composer_mcp.server.library.template_sets import DOC_SETS_MAX, remember

    cache: dict[str, int] = {}
    for i in range(DOC_SETS_MAX + 10):
        remember(cache, f"t{i}", i)
    assert len(cache) <= DOC_SETS_MAX
    assert f"t{DOC_SETS_MAX + 9}" in cache and "t0" not in cache  # newest kept, oldest gone
    assert len(cache) > DOC_SETS_MAX // 2  # a quarter goes at a time, not everything at once


def test_repeated_searches_score_the_same_after_the_set_caches_turn_over(reference_engine, monkeypatch):
    from image_composer_mcp.server.library import template_sets

    query = "edge image with docker and ssh for an arm board"
    before = [(r.record.name, r.score, r.matched_terms) for r in reference_engine.search(query, 10).results]
    monkeypatch.setattr(template_sets, "DOC_SETS_MAX", 8)  # every query now evicts sets it built a moment ago
    searcher = reference_engine.searcher
    searcher._cache.clear()
    after = [(r.record.name, r.score, r.matched_terms) for r in reference_engine.search(query, 10).results]
    assert after == before


def test_an_excluded_term_is_found_under_its_names_a_package_name_s_start_or_the_author_s_words():
    from image_composer_mcp.server.library.query_analysis import QueryAnalysis
    from image_composer_mcp.server.library.template_sets import TemplateSets
    from image_composer_mcp.server.library.templates import TemplateRecord

    rec = TemplateRecord(id="ubuntu24-x86_64-web-raw.yml", root="/nowhere", name="ubuntu24-x86_64-web-raw",
                         image_name="web", content_hash="h", size=1, mtime_ns=1, packages=["Docker-CE-cli", "moby-engine", "openssh-server"], explicit_keywords=["Kiosk"])
    sets = TemplateSets(lambda: {"u1": rec})

    def hits(*excluded: str) -> list[str]:
        return sets.excluded_hits(QueryAnalysis("q", "negation", [], [], [], list(excluded), 0.0), rec, "u1")

    assert hits("docker", "docker-ce", "openssh-server", "kiosk", "web") == ["docker", "docker-ce", "openssh-server",
                                                                           "kiosk", "web"]
    # a name's end or middle, a start not ended by a dash, a package not installed
    assert hits("ce", "cli", "dock", "moby-eng", "nginx") == []
    assert hits("openssh", "moby") == ["openssh", "moby"]
    assert sets.excluded_hits(QueryAnalysis("q", "semantic", [], [], [], [], 0.0), rec, "u1") == []


def test_a_word_s_reading_is_remembered_and_forgotten_with_the_catalog_s_words():
    """Misspelt words are read as the closest known word once per spelling index; the memo answers the same
    as the look-up, and a new index (new catalog words) reads anew."""
    from collections import Counter

    from image_composer_mcp.server.library.query_analysis import SpellingIndex

    words = {"ubuntu": 9, "wireguard": 3, "docker": 5}
    index = SpellingIndex(words, Counter())
    for word in ("ubunut", "wiregard", "dokcer", "zzzzzz", "ubuntu", "dock"):
        first = index.correct(word)
        assert index.correct(word) == first == index._correct(word)
    assert index.correct("ubunut") == "ubuntu" and index.correct("zzzzzz") is None
    index._read_as["ubunut"] = "remembered"  # the memo is what answers the second time
    assert index.correct("ubunut") == "remembered"
    assert SpellingIndex({"ubunut": 1, "ubuntu": 9}, Counter()).correct("ubunut") is None  # now a known word
    small = SpellingIndex(words, Counter())
    small.MEMO_WORDS = 2
    for word in ("ubunut", "wiregard", "dokcer"):
        small.correct(word)
    assert len(small._read_as) <= 2  # bounded


def test_the_spelling_index_built_ahead_in_chunks_is_the_one_a_query_builds_and_makes_way_each_chunk():
    """build_ahead gives the same deletion index as a query's own build, asks for way before every chunk,
    and stops when a query built the index first or the catalog moved on (abandoned)."""
    from collections import Counter

    from image_composer_mcp.server.library.query_analysis import SpellingIndex

    words = {w: i + 1 for i, w in enumerate(("ubuntu", "wireguard", "docker", "nginx", "prometheus", "kiosk",
                                             "x86_64", "dlstreamer", "gazebo", "libvirt", "ab"))}
    ahead, on_demand = SpellingIndex(words, Counter()), SpellingIndex(words, Counter())
    asked: list[int] = []
    ahead.build_ahead(lambda: asked.append(1), chunk=3)
    indexed = [w for w in words if len(w) >= SpellingIndex.MIN_FUZZY_LEN - 1]
    assert len(asked) == -(-len(indexed) // 3)  # one request per chunk
    assert ahead._by_deletion == on_demand._index() and "ab" not in str(ahead._by_deletion)
    for word in ("ubunut", "wiregard", "dokcer", "dlstreamr", "zzzzzz"):
        assert ahead.correct(word) == on_demand.correct(word)

    built_first = SpellingIndex(words, Counter())
    theirs = built_first._index()
    built_first.build_ahead(lambda: None, chunk=3)
    assert built_first._by_deletion is theirs  # a query's build is kept, not replaced
    gone = SpellingIndex(words, Counter())
    gone.build_ahead(lambda: setattr(gone, "abandoned", True), chunk=3)
    assert gone._by_deletion is None  # stopped at the first chunk: its catalog was replaced


def test_a_cloud_named_beside_another_distribution_ranks_that_distributions_images(library_engine):
    """"ubuntu on azure": Azure is the cloud, so its word no longer matches Azure Linux by keyword and full text."""
    outcome = library_engine.searcher.search("ubuntu on azure", 5)
    assert outcome.results and outcome.results[0].record.os == "ubuntu", [r.record.name for r in outcome.results]


def test_a_machine_named_for_its_architecture_keeps_its_words_for_the_templates_that_name_it(library_engine):
    outcome = library_engine.searcher.search("something like a raspberry pi board", 5)
    assert all(r.record.arch == "aarch64" for r in outcome.results)
    assert outcome.results[0].record.name == "azl3-aarch64-edge-gateway-containers-raw"  # names Raspberry Pi


def test_a_possessive_adds_no_word():
    from image_composer_mcp.server.library.vocabulary import tokenize

    assert tokenize("k8s worker on Microsoft's distro") == ["k8s", "worker", "on", "microsoft", "distro"]
    assert tokenize("Intel\u2019s edge OS") == ["intel", "edge", "os"]


def test_the_operating_system_asked_for_outranks_another_systems_image_of_the_right_shape(library_engine):
    """"minimal arm64 ubuntu": Ubuntu's arm64 image before Debian's minimal arm64 one, whose words fit better."""
    outcome = library_engine.searcher.search("minimal arm64 ubuntu", 5)
    assert outcome.results[0].record.os == "ubuntu", [r.record.name for r in outcome.results]
    debian = next(r for r in outcome.results if r.record.os == "debian")
    assert "os is debian, query asks for ubuntu (x0.7)" in debian.penalties

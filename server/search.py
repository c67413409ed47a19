"""Query classification and hybrid scoring (ADR §3, calibrated for MiniLM).

Candidates come from LanceDB's vector and full-text legs (over-fetched); the
final score is computed here so it means the same thing for every query:

    score = Ws·semantic + Wk·keyword + Wp·package      (× penalties)

* semantic: cosine similarity rescaled from MiniLM's working range
  [COS_FLOOR, COS_CEIL] onto [0, 1]. Raw MiniLM cosines for a clearly relevant
  template sit around 0.45–0.75 and unrelated text around 0.0–0.25, which is
  why the ADR's 0.40 threshold on raw scores emptied good result lists.
* keyword: IDF-weighted share of the query's content words found in the
  template's words (name parts, keywords explicit and inferred, use cases,
  description, distribution words), synonyms allowed, plus a small BM25 share.
* package: share of the packages the query names that the template installs
  (distro-aware aliases: docker ~ docker.io ~ docker-ce ~ moby-engine).
  When a query names no package, the package weight moves to the keyword
  signal instead of capping every score at 0.9.

Penalties: excluded terms ("without docker") multiply by negation_penalty;
an explicit distribution, architecture or image type the template does not
have multiplies by MISMATCH_PENALTY. Results under min_score_threshold are
dropped; the threshold default (0.30) was calibrated on the labelled query set
in tests/data/queries.yaml: the lowest-scoring relevant hit@3 template there
scores above 0.40 while queries about unrelated topics score under 0.25.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from server import vocabulary as vocab
from server.config import AISettings
from server.index import TemplateIndex, build_where
from server.templates import TemplateRecord

if TYPE_CHECKING:
    from server.embeddings import Embedder

log = logging.getLogger(__name__)

COS_FLOOR = 0.10
COS_CEIL = 0.70
MISMATCH_PENALTY = 0.8
BM25_SHARE = 0.15
WEAK_CREDIT = 0.5  # a word we inferred, or a synonym, counts for less than one the author wrote
RESULT_CACHE_TTL = 30.0
RESULT_CACHE_SIZE = 256

QUERY_TYPES = ("semantic", "package-explicit", "keyword-heavy", "negation")

# Cross-distribution names for the same thing; used for package matching and negation.
PACKAGE_ALIAS_GROUPS: list[set[str]] = [
    {"docker", "docker.io", "docker-ce", "moby-engine", "moby", "docker-engine"},
    {"docker-cli", "docker-ce-cli", "moby-cli"},
    {"containerd", "containerd.io", "moby-containerd"},
    {"podman", "podman-docker"},
    {"openssh-server", "openssh", "sshd", "ssh"},
    {"nginx", "nginx-core", "nginx-light", "nginx-full"},
    {"apache", "apache2", "httpd"},
    {"prometheus-node-exporter", "node-exporter", "node_exporter", "golang-github-prometheus-node-exporter"},
    {"kernel", "linux-image-amd64", "linux-image-generic", "linux-image-arm64", "linux-image"},
    {"python3", "python"},
    {"qemu-kvm", "qemu-system-x86", "kvm", "qemu"},
    {"libvirt", "libvirt-daemon-system", "libvirt-daemon"},
    {"postgres", "postgresql"},
    {"mysql", "mariadb", "mariadb-server", "mysql-server"},
]
_ALIASES: dict[str, set[str]] = {}
for _group in PACKAGE_ALIAS_GROUPS:
    for _name in _group:
        _ALIASES.setdefault(_name, set()).update(_group)


def package_aliases(name: str) -> set[str]:
    low = name.lower()
    return _ALIASES.get(low, set()) | {low}


class SearchInputError(ValueError):
    """A search argument that cannot be used; the message says how to fix it."""


@dataclass
class QueryAnalysis:
    text: str
    query_type: str
    tokens: list[str]
    content_terms: list[str]
    packages: list[str]
    excluded: list[str]
    density: float
    wants: dict[str, str] = field(default_factory=dict)  # dist/arch/image_type stated in the query


@dataclass
class ScoredResult:
    record: TemplateRecord
    score: float
    semantic: float
    keyword: float
    package: float
    cosine: float
    bm25: float
    penalties: list[str] = field(default_factory=list)
    matched_packages: list[str] = field(default_factory=list)
    matched_terms: list[str] = field(default_factory=list)


@dataclass
class SearchOutcome:
    query: str
    query_type: str
    weights: dict[str, float]
    results: list[ScoredResult]
    analysis: QueryAnalysis
    candidates: int
    below_threshold: int
    message: str
    latency_ms: float = 0.0
    cached: bool = False
    notices: tuple[str, ...] = ()  # what limits this answer (e.g. no embedding model), for the reader


_stem = vocab.stem


class QueryAnalyzer:
    """Classifies a query and pulls out packages, exclusions and stated targets."""

    def __init__(self, settings: AISettings, known_packages: set[str], vocabulary_terms: set[str]):
        self.settings = settings
        self.known_packages = known_packages | set(_ALIASES)
        self.vocabulary_terms = vocabulary_terms

    def analyze(self, query: str) -> QueryAnalysis:
        tokens = vocab.tokenize(query)
        excluded, negated_idx = self._negations(tokens)
        packages: list[str] = []
        content: list[str] = []
        technical = 0
        for i, tok in enumerate(tokens):
            if tok in vocab.NEGATION_WORDS or i in negated_idx:
                continue
            is_pkg = tok in self.known_packages
            if is_pkg and tok not in packages:
                packages.append(tok)
            if tok in vocab.STOPWORDS:
                continue
            content.append(tok)
            if is_pkg or tok in self.vocabulary_terms or _stem(tok) in self.vocabulary_terms:
                technical += 1
        words = [t for t in tokens if t not in vocab.NEGATION_WORDS]
        density = technical / len(words) if words else 0.0
        cls = self.settings.classification
        if excluded:
            qtype = "negation"
        elif len(packages) >= cls.package_threshold:
            qtype = "package-explicit"
        elif density >= cls.keyword_density and len(content) >= 2:
            qtype = "keyword-heavy"
        else:
            qtype = "semantic"
        return QueryAnalysis(query, qtype, tokens, content, packages, excluded, density, self._wants(content))

    @staticmethod
    def _negations(tokens: list[str]) -> tuple[list[str], set[int]]:
        """Terms after without/no/exclude..., continuing through 'and', 'or' and commas."""
        excluded: list[str] = []
        idx: set[int] = set()
        i = 0
        while i < len(tokens):
            if tokens[i] in vocab.NEGATION_WORDS:
                j = i + 1
                while j < len(tokens):
                    tok = tokens[j]
                    if tok in ("and", "or", "nor", "any"):
                        j += 1
                        continue
                    if tok in vocab.STOPWORDS and tok not in ("gui",):
                        break
                    excluded.append(tok)
                    idx.add(j)
                    j += 1
                    # "without docker and nginx" continues; "without docker for edge" stops at the stopword.
                    if j < len(tokens) and tokens[j] not in ("and", "or", "nor"):
                        break
                i = j
            else:
                i += 1
        return excluded, idx

    @staticmethod
    def _wants(content: list[str]) -> dict[str, str]:
        wants: dict[str, str] = {}
        for tok in content:
            for arch, words in vocab.ARCH_WORDS.items():
                if tok in words and tok not in ("intel",):
                    wants["arch"] = arch
            for itype, words in vocab.IMAGE_TYPE_WORDS.items():
                if tok in (itype, *words[:2]) and tok != "disk":
                    wants["image_type"] = itype
            dists = vocab.dist_for_word(tok)
            if len(dists) == 1 and tok not in ("intel", "microsoft", "canonical", "wind", "river", "debian-based"):
                wants["dist"] = dists[0]
            elif tok == "ubuntu" and "dist" not in wants:
                wants["os"] = "ubuntu"
        return wants


class SearchEngine:
    def __init__(self, index: TemplateIndex, embedder: Embedder, settings: AISettings):
        self.index = index
        self.embedder = embedder
        self.settings = settings
        self._df: Counter[str] = Counter()
        self._seen: dict[str, tuple[str, tuple[str, ...]]] = {}  # uid -> (content hash, its terms)
        self._doc_sets: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
        self._n_docs = 1
        self._catalog_version: tuple[int, int] = (-1, -1)
        self._default_idf = 1.0
        self._cache: OrderedDict[tuple, tuple[float, SearchOutcome]] = OrderedDict()
        self._lock = threading.Lock()
        self.analyzer = QueryAnalyzer(settings, set(), set())

    # ---- per-catalog precomputation ------------------------------------------
    def _refresh_terms(self) -> None:
        """Document frequencies for IDF, updated incrementally from the terms stored with each row."""
        version = (id(self.index), self.index.generation)
        if version == self._catalog_version:
            return
        catalog = self.index.catalog
        df = self._df
        seen = self._seen
        for uid in [u for u in seen if u not in catalog]:
            df.subtract(seen.pop(uid)[1])
        for uid, rec in catalog.items():
            old = seen.get(uid)
            if old is not None and old[0] == rec.content_hash:
                continue
            if old is not None:
                df.subtract(old[1])
            terms = (*rec.terms_strong, *rec.terms_weak)
            df.update(terms)
            seen[uid] = (rec.content_hash, terms)
        self._n_docs = max(len(seen), 1)
        self._default_idf = math.log(1 + self._n_docs)
        self._doc_sets.clear()
        technical = set(vocab.TECHNICAL_TERMS) | {w for words in vocab.ARCH_WORDS.values() for w in words}
        technical.discard("intel")
        self.analyzer = QueryAnalyzer(self.settings, self.index.all_packages(), technical)
        self._catalog_version = version
        self._cache.clear()

    def _idf(self, term: str) -> float:
        count = self._df.get(term) or self._df.get(_stem(term))
        return math.log(1 + self._n_docs / count) if count and count > 0 else self._default_idf

    def _term_sets(self, uid: str) -> tuple[frozenset[str], frozenset[str]]:
        """Sets only for the candidates a query scores (at most a few hundred), built on demand."""
        sets = self._doc_sets.get(uid)
        if sets is None:
            rec = self.index.catalog.get(uid)
            sets = (frozenset(rec.terms_strong), frozenset(rec.terms_weak)) if rec else (frozenset(), frozenset())
            if len(self._doc_sets) > 4096:
                self._doc_sets.clear()
            self._doc_sets[uid] = sets
        return sets

    # ---- scoring -------------------------------------------------------------
    def weights_for(self, analysis: QueryAnalysis) -> dict[str, float]:
        s = self.settings.scoring
        if analysis.query_type == "package-explicit":
            w = {"semantic": 0.40, "keyword": 0.20, "package": 0.40}
        elif analysis.query_type == "keyword-heavy":
            w = {"semantic": 0.50, "keyword": 0.40, "package": 0.10}
        else:
            w = {"semantic": s.semantic, "keyword": s.keyword, "package": s.package}
        if not analysis.packages and w["package"] > 0:
            # No package named: the spare weight goes to the keyword signal, the other exact-word evidence.
            w = {"semantic": w["semantic"], "keyword": w["keyword"] + w["package"], "package": 0.0}
        return w

    def _keyword_score(self, analysis: QueryAnalysis, uid: str) -> tuple[float, list[str]]:
        strong, weak = self._term_sets(uid)
        total = matched = 0.0
        hits: list[str] = []
        for q in dict.fromkeys(analysis.content_terms):
            idf = self._idf(q)
            total += idf
            exact = {q, _stem(q)}
            synonyms = set(vocab.SYNONYMS.get(q, []))
            if exact & strong:
                credit = 1.0
            elif synonyms & strong or exact & weak:
                credit = WEAK_CREDIT
            elif synonyms & weak:
                credit = WEAK_CREDIT * WEAK_CREDIT
            else:
                continue
            matched += credit * idf
            hits.append(q)
        return (matched / total if total else 0.0), hits

    @staticmethod
    def _package_score(analysis: QueryAnalysis, rec: TemplateRecord) -> tuple[float, list[str]]:
        if not analysis.packages:
            return 0.0, []
        have = {p.lower() for p in rec.packages}
        matched = [p for p in analysis.packages if package_aliases(p) & have]
        return len(matched) / len(analysis.packages), matched

    @staticmethod
    def _excluded_hits(analysis: QueryAnalysis, rec: TemplateRecord) -> list[str]:
        have = {p.lower() for p in rec.packages}
        words = {w.lower() for w in rec.keywords} | {w for w in vocab.split_parts(rec.id)}
        hits = []
        for term in analysis.excluded:
            aliases = package_aliases(term) | {_stem(term)} | set(vocab.SYNONYMS.get(term, [])[:1])
            pkg_hit = any(a in have for a in aliases) or any(p.startswith(term + "-") for p in have)
            if pkg_hit or term in words:
                hits.append(term)
        return hits

    # ---- the search ----------------------------------------------------------
    def validate_args(self, query: str, top_k: int, filters: dict[str, str | None]) -> str:
        if not isinstance(query, str) or not query.strip():
            raise SearchInputError("query is empty: describe the image you need, e.g. 'minimal edge image for ubuntu'")
        limit = self.settings.search.max_query_chars
        if len(query) > limit:
            raise SearchInputError(f"query is {len(query):,} characters; the limit is {limit:,}. Shorten it to the key facts.")
        max_k = self.settings.search.max_top_k
        if not 1 <= top_k <= max_k:
            raise SearchInputError(f"top_k is {top_k}; use a number from 1 to {max_k}")
        for key, value in filters.items():
            if value:
                known = sorted(self.index.known_values(key))
                if value not in known:
                    raise SearchInputError(
                        f"unknown {key} filter '{value}'; indexed values: {', '.join(known) or 'none'}"
                    )
        return " ".join(query.split())

    def search(self, query: str, top_k: int = 5, *, os: str | None = None, dist: str | None = None,
               arch: str | None = None, image_type: str | None = None, use_threshold: bool = True) -> SearchOutcome:
        started = time.perf_counter()
        filters = {"os": os, "dist": dist, "arch": arch, "image_type": image_type}
        with self._lock:
            self._refresh_terms()
        query = self.validate_args(query, top_k, filters)
        key = (query.lower(), top_k, os, dist, arch, image_type, use_threshold, self._catalog_version)
        hit = self._cache.get(key)
        if hit and time.monotonic() - hit[0] < RESULT_CACHE_TTL:
            outcome = hit[1]
            return SearchOutcome(**{**outcome.__dict__, "cached": True,
                                    "latency_ms": (time.perf_counter() - started) * 1000})
        analysis = self.analyzer.analyze(query)
        weights = self.weights_for(analysis)
        keyword_only = getattr(self.embedder, "keyword_only", False)
        if keyword_only:  # no model: the semantic share goes to the other signals, in proportion
            rest = (weights["keyword"] + weights["package"]) or 1.0
            weights = {"semantic": 0.0, "keyword": weights["keyword"] / rest, "package": weights["package"] / rest}
        qvec = None if keyword_only else self.embedder.embed_query(query)
        fts_terms = [t for t in analysis.tokens if t not in vocab.STOPWORDS and t not in analysis.excluded
                     and t not in vocab.NEGATION_WORDS]
        fts_query = " ".join(re.sub(r"[^a-z0-9.+-]", " ", t) for t in fts_terms)
        limit = max(top_k * 4, 50)
        candidates = self.index.candidates(None if qvec is None else np.asarray(qvec), fts_query,
                                           build_where(filters), limit)
        max_bm25 = max((c.bm25 for c in candidates), default=0.0) or 1.0
        scored: list[ScoredResult] = []
        for cand in candidates:
            rec = self.index.catalog[cand.uid]
            semantic = min(1.0, max(0.0, (cand.cosine - COS_FLOOR) / (COS_CEIL - COS_FLOOR)))
            coverage, hits = self._keyword_score(analysis, cand.uid)
            keyword = (1 - BM25_SHARE) * coverage + BM25_SHARE * (cand.bm25 / max_bm25)
            package, matched = self._package_score(analysis, rec)
            score = weights["semantic"] * semantic + weights["keyword"] * keyword + weights["package"] * package
            penalties: list[str] = []
            excluded = self._excluded_hits(analysis, rec)
            if excluded:
                factor = self.settings.classification.negation_penalty
                score *= factor
                penalties.append(f"contains excluded {', '.join(excluded)} (x{factor})")
            for attr, wanted in analysis.wants.items():
                if attr in filters and filters[attr]:
                    continue
                have = getattr(rec, attr)
                if have and have != wanted:
                    score *= MISMATCH_PENALTY
                    penalties.append(f"{attr} is {have}, query asks for {wanted} (x{MISMATCH_PENALTY})")
            scored.append(ScoredResult(rec, round(score, 4), round(semantic, 4), round(keyword, 4), round(package, 4),
                                       round(cand.cosine, 4), round(cand.bm25, 4), penalties, matched, hits))
        scored.sort(key=lambda r: (-r.score, r.record.name))
        threshold = self.settings.scoring.min_score_threshold if use_threshold else 0.0
        kept = [r for r in scored if r.score >= threshold]
        below = len(scored) - len(kept)
        results = kept[:top_k]
        if results:
            message = f"{len(results)} template(s) for a {analysis.query_type} query"
        elif scored:
            message = (f"no relevant templates found: the best candidate ({scored[0].record.name}) scored "
                       f"{scored[0].score:.2f}, under the {threshold:.2f} relevance threshold. Rephrase with the "
                       "distribution, use case or packages you need, or drop filters.")
        else:
            message = "no relevant templates found" + (" matching the filters" if any(filters.values()) else "")
        outcome = SearchOutcome(query, analysis.query_type, weights, results, analysis, len(candidates), below,
                                message, (time.perf_counter() - started) * 1000)
        log.info("search type=%s packages=%s excluded=%s candidates=%d results=%d top=%s",
                 analysis.query_type, analysis.packages, analysis.excluded, len(candidates), len(results),
                 results[0].record.name if results else None)
        if log.isEnabledFor(logging.DEBUG):
            for r in results:
                log.debug("score %s=%.3f sem=%.3f kw=%.3f pkg=%.3f pen=%s", r.record.name, r.score, r.semantic,
                          r.keyword, r.package, r.penalties)
        with self._lock:
            self._cache[key] = (time.monotonic(), outcome)
            while len(self._cache) > RESULT_CACHE_SIZE:
                self._cache.popitem(last=False)
        return outcome

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
  (distro-aware aliases from server.package_names: docker ~ docker.io ~
  docker-ce ~ moby-engine; and package stems: "v4l2loopback" names
  v4l2loopback-dkms, "linux headers" names linux-headers-6.12-intel).
  When a query names no package, the package weight moves to the keyword
  signal instead of capping every score at 0.9.

Concepts described in plain words ("boot machines over the network") are
recognised through the domain glossary (resources/glossary.yaml, read via
server.knowledge.load_glossary) and expand both legs: their terms join the
BM25 query and the keyword signal, their label joins the embedded text.

Penalties: excluded terms ("without docker") multiply by negation_penalty;
an explicit distribution, architecture or image type the template does not
have multiplies by ranking.mismatch_penalty. Results under min_score_threshold are
dropped unless they carry strong exact evidence (most named packages installed,
or most of the query's words present) and no penalty, so a weak semantic score
never empties a query a template clearly answers. The threshold default (0.30)
was calibrated on the labelled query sets: relevant top-3 templates score
above it while queries about unrelated topics score under 0.25.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import itertools
import logging
import math
import re
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..core.config import AISettings
from ..knowledge.glossary import load_glossary
from ..knowledge.request_words import load_request_words
from . import label_cache, term_counts
from . import vocabulary as vocab
from .candidates import text_hits
from .embedder import on_inference
from .foreground import serves
from .index import TemplateIndex
from .keyword_scoring import KeywordPlan, coverage, keyword_plan, keyword_score
from .lance_table import build_where
from .long_lived import bulk_objects
from .query_analysis import (
    QueryAnalysis,
    QueryAnalyzer,
    SearchInputError,
    SpellingIndex,
    Spelt,
    package_aliases,
    package_stem_keys,
)
from .ranking import (
    BM25_SHARE,
    COS_CEIL,
    COS_FLOOR,
    EveryRow,
    Ranked,
    ScoredResult,
    Static,
    Words,
    mismatch_penalty,
    off_target,
)
from .template_sets import TemplateSets, excluded_rows
from .templates import TemplateRecord
from .vector_mirror import VectorMirror

if TYPE_CHECKING:
    from pathlib import Path

    from .embedder import Embedder

log = logging.getLogger(__name__)

RESULT_CACHE_TTL = 30.0
RESULT_CACHE_SIZE = 256
LABEL_VECTORS_MAX = 20_000  # glossary labels and spelling corrections: ~30 MB of vectors at most

MAX_STEM_PACKAGES = 12
BULK_ROWS = 10_000  # new rows from which the word counts are made outside the cyclic GC (bulk_objects)
MAX_SPELLING_TERMS = 5_000  # the most frequent catalog terms a misspelt word may be read as
_Prepared = tuple[list[tuple[int, float]], KeywordPlan, dict[str, Static], EveryRow | None]


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


def _terms(rec: TemplateRecord) -> tuple[str, ...]:
    return (*rec.terms_strong, *rec.terms_weak)


def combined_vector(query: str, query_vector: np.ndarray, labels: list[str],
                    label_vector: Callable[[str], np.ndarray]) -> np.ndarray:
    """The query's vector with its labels' vectors, each weighted by its word count and normalised: the mean
    pooling a model would do over the query and labels as one text, without embedding the longer text.

    Labels come from a fixed glossary and a spelling index, so their vectors are embedded once and a query
    costs one embedding of its own words (measured on every labelled set: the same hit@3 and MRR as embedding
    "query (label; label)" in one pass, whose longer text made the p95 embedding ~1.7x slower).
    """
    if not labels:
        return np.asarray(query_vector)
    total = np.asarray(query_vector, dtype=np.float32) * len(query.split())
    for label in labels:
        total = total + np.asarray(label_vector(label), dtype=np.float32) * len(label.split())
    norm = float(np.linalg.norm(total))
    return total / norm if norm else np.asarray(query_vector)


class SearchEngine:
    def __init__(self, index: TemplateIndex, embedder: Embedder, settings: AISettings,
                 label_cache: Path | None = None, term_counts: Path | None = None):
        self.index = index
        self._label_cache = label_cache  # where the concept labels' vectors are kept between starts
        self._term_counts = term_counts  # and the templates' term counts (term_counts.py)
        self.embedder = embedder
        self.settings = settings
        self._df: Counter[str] = Counter()
        # uid -> the record whose terms are counted in _df (kept, not copied: the catalog may replace it)
        self._seen: dict[str, TemplateRecord] = {}
        self._sets = TemplateSets(lambda: self.index.catalog)
        self._n_docs = 1
        self._catalog_version: tuple[int, int] = (-1, -1)
        self._default_idf = 1.0
        self._cache: OrderedDict[tuple, tuple[float, SearchOutcome]] = OrderedDict()
        self._lock = threading.Lock()
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None  # _prepare's threads
        self.analyzer = QueryAnalyzer(settings, set(), set())
        self._label_vectors = self._embed_labels()

    def _embed_labels(self) -> dict[str, np.ndarray]:
        """The glossary's concept labels, embedded in one batch while the engine starts (~75 ms; read from
        the label cache after the first start), so no query waits for a label's vector; measured, a warm-up
        after the first search slowed the next ~20 searches by ~2 ms each, competing for the cores. Spelling
        corrections are embedded on first use."""
        local = str(getattr(self.embedder, "model_id", "")).startswith("local:")
        if getattr(self.embedder, "keyword_only", False) or not local:
            return {}  # a remote embedder is not asked at start-up, where a slow one would hold every tool back
        labels = list(dict.fromkeys(c.label for c in self.analyzer.glossary.concepts.values()))
        model_id = str(self.embedder.model_id)
        vectors = label_cache.load(self._label_cache, model_id, labels) if self._label_cache else None
        if vectors is None:
            try:
                vectors = np.asarray(self.embedder.embed(labels), dtype=np.float32)
            except Exception as exc:  # noqa: BLE001 - a model that cannot load: the first query reports it
                log.debug("concept labels not pre-embedded: %s", exc)
                return {}
            if self._label_cache is not None and len(vectors) == len(labels):
                label_cache.save(self._label_cache, model_id, labels, vectors)
        return dict(zip(labels, vectors, strict=True)) if len(vectors) == len(labels) else {}

    def _vectors(self, query: str, labels: list[str]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """The query's own vector and its labels', any label not embedded yet (a spelling correction) in the
        same call as the query.

        Why one call: a short text's cost is streaming the model's weights, which a batch of two streams once;
        a correction embedded on its own was a second full query embedding for about one query in ten. New
        vectors are kept beside the glossary's (one word from a finite vocabulary each, up to LABEL_VECTORS_MAX).
        """
        known = {label: self._label_vectors[label] for label in labels if label in self._label_vectors}
        missing = [label for label in dict.fromkeys(labels) if label not in known]
        if not missing:
            return np.asarray(self.embedder.embed_query(query)), known
        vectors = np.asarray(self.embedder.embed([query, *missing]), dtype=np.float32)
        return vectors[0], {**known, **self._keep(missing, vectors[1:])}

    def _combined(self, query: str, query_vector: np.ndarray, labels: list[str],
                  known: dict[str, np.ndarray]) -> np.ndarray:
        """:func:`combined_vector` of the query and its ``labels``, whose vectors are in ``known`` or kept here; a
        label in neither (a glossary label when they could not be embedded at start-up) is embedded now."""
        missing = [label for label in dict.fromkeys(labels) if label not in known and label not in self._label_vectors]
        if missing:
            known = {**known, **self._keep(missing, np.asarray(self.embedder.embed(missing), dtype=np.float32))}
        vectors = self._label_vectors
        return combined_vector(query, query_vector, labels, lambda label: known[label] if label in known
                               else vectors[label])

    def _keep(self, labels: list[str], vectors: np.ndarray) -> dict[str, np.ndarray]:
        """New labels' vectors, kept beside the glossary's while there is room (LABEL_VECTORS_MAX)."""
        fresh = dict(zip(labels, vectors, strict=True))
        if len(self._label_vectors) + len(fresh) <= LABEL_VECTORS_MAX:
            self._label_vectors.update(fresh)
        return fresh

    def _read(self, query: str, spelt: Spelt | None = None) -> tuple[QueryAnalysis, dict[str, float], str]:
        """The query's analysis, the weights of its signals and its full-text query."""
        analysis = self.analyzer.analyze(query, spelt)
        weights = self.weights_for(analysis)
        if getattr(self.embedder, "keyword_only", False):  # no model: the semantic share goes to the others
            rest = (weights["keyword"] + weights["package"]) or 1.0
            weights = {"semantic": 0.0, "keyword": weights["keyword"] / rest, "package": weights["package"] / rest}
        fts_terms = [t for t in analysis.tokens if t not in vocab.STOPWORDS and t not in analysis.excluded
                     and t not in vocab.NEGATION_WORDS]
        fts_terms += [t for t in analysis.expansion_terms() if t not in fts_terms]
        return analysis, weights, " ".join(re.sub(r"[^a-z0-9.+-]", " ", t) for t in fts_terms)

    # ---- per-catalog precomputation ------------------------------------------
    def _refresh_terms(self) -> None:
        """Document frequencies for IDF, updated incrementally from the terms stored with each row."""
        version = (id(self.index), self.index.generation)
        if version == self._catalog_version:
            return
        catalog = self.index.catalog
        df = self._df
        seen = self._seen
        first = not seen
        for uid in [u for u in seen if u not in catalog]:
            df.subtract(_terms(seen.pop(uid)))
        if first:  # every row is new: copied at once (the loop below took ~60 ms at 100,000 templates)
            seen.update(catalog)
            fresh = list(catalog.values())
        else:
            fresh = []
            for uid, rec in catalog.items():
                old = seen.get(uid)
                if old is not None and old.content_hash == rec.content_hash:
                    continue
                if old is not None:
                    df.subtract(_terms(old))
                fresh.append(rec)
                seen[uid] = rec
        path, key, stored = self._term_counts, None, None
        if first and path is not None and len(fresh) >= term_counts.MIN_ROWS:  # maybe counted by an earlier start
            key = term_counts.catalog_key(catalog, self.index.model_key)
            stored = term_counts.load(path, key)
        # One count over every new row's terms (at 100,000 templates one update per row took ~0.5 s). Many rows:
        # the counts join the catalog outside the cyclic GC, whose full collections walked them (~15-29 ms
        # within a search, at 100,000 templates).
        with bulk_objects() if len(fresh) >= BULK_ROWS else contextlib.nullcontext():
            if stored is not None:
                self._df = df = stored
            else:
                df.update(itertools.chain.from_iterable(_terms(rec) for rec in fresh))
        if path is not None and key is not None and stored is None:
            term_counts.save(path, key, df)
        self._n_docs = max(len(seen), 1)
        self._default_idf = math.log(1 + self._n_docs)
        self._sets.clear()
        technical = set(vocab.TECHNICAL_TERMS) | {w for words in vocab.ARCH_WORDS.values() for w in words}
        technical.discard("intel")
        packages = self.index.all_packages()
        stems = self._package_stems(packages)
        if self.analyzer.spelling is not None:  # its build, if still under way, stops
            self.analyzer.spelling.abandoned = True
        spelling = self._spelling(stems)
        self.analyzer = QueryAnalyzer(self.settings, packages, technical, stems, spelling)
        self._catalog_version = version
        self._cache.clear()
        threading.Thread(target=spelling.build_ahead, args=(self.index.foreground.make_way,), name="spelling-index",
                         daemon=True).start()

    def _spelling(self, stems: dict[str, frozenset[str]]) -> SpellingIndex:
        glossary = load_glossary()
        domain = {*vocab.STOPWORDS, *vocab.TECHNICAL_TERMS, *vocab.SYNONYMS, *vocab.FILENAME_HINTS,
                  *(w for words in (*vocab.DIST_WORDS.values(), *vocab.ARCH_WORDS.values(),
                                    *vocab.IMAGE_TYPE_WORDS.values(), *vocab.FILENAME_HINTS.values()) for w in words),
                  *glossary.phrase_words, *(t for c in glossary.concepts.values() for t in c.terms),
                  *(k for k in stems if "-" not in k)}
        words = {w: self._df.get(w, 0) + 1 for w in domain}
        for term, count in self._df.most_common(MAX_SPELLING_TERMS):
            if count > 0:
                words[term] = count + 1
        return SpellingIndex(words, self._df)

    @staticmethod
    def _package_stems(packages: set[str]) -> dict[str, frozenset[str]]:
        stems: dict[str, set[str]] = {}
        for name in packages:
            for key in package_stem_keys(name):
                if key != name.lower():
                    stems.setdefault(key, set()).add(name.lower())
        # A stem shared by very many packages (ros-*, python3-*) identifies none of them.
        return {k: frozenset(v) for k, v in stems.items() if len(v) <= MAX_STEM_PACKAGES}

    def _idf(self, term: str) -> float:
        count = self._df.get(term) or self._df.get(vocab.stem(term))
        return math.log(1 + self._n_docs / count) if count and count > 0 else self._default_idf

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

    @staticmethod
    def _package_score(analysis: QueryAnalysis, have: frozenset[str]) -> tuple[float, list[str]]:
        """``have``: the template's packages, lower-cased."""
        if not analysis.packages:
            return 0.0, []
        matched = [p for p in analysis.packages
                   if not have.isdisjoint(package_aliases(p)) or not have.isdisjoint(analysis.package_sets.get(p, ()))]
        return len(matched) / len(analysis.packages), matched

    def _static_parts(self, plan: KeywordPlan, analysis: QueryAnalysis, rec: TemplateRecord, uid: str,
                      wants: list[tuple[str, str]], keyword: Words | None = None,
                      packages: Words | None = None) -> Static:
        """What a candidate's score takes from the query and the template alone (not from the legs): word
        coverage, packages, and the penalties' factor and reasons. ``keyword`` and ``packages``: its coverage and
        package share with what they matched, when :class:`EveryRow` has them."""
        coverage, hits = keyword if keyword is not None else keyword_score(plan, rec)
        if not analysis.packages and not analysis.excluded and not wants:
            return coverage, hits, 0.0, [], (), []  # most queries: no package, exclusion or stated target
        if packages is None:
            packages = self._package_score(analysis, self._sets.packages(uid) if analysis.packages else frozenset())
        package, matched = packages
        factors, penalties = self._penalties(analysis, rec, uid, wants)
        return coverage, hits, package, matched, factors, penalties

    def _penalties(self, analysis: QueryAnalysis, rec: TemplateRecord, uid: str,
                   wants: list[tuple[str, str]]) -> tuple[tuple[float, ...], list[str]]:
        """The penalties' factors, applied one by one in this order as the score always was, and reasons."""
        factors: list[float] = []
        penalties: list[str] = []
        if analysis.excluded:
            excluded = self._sets.excluded_hits(analysis, rec, uid)
            if excluded:
                negation = self.settings.classification.negation_penalty
                factors.append(negation)
                penalties.append(f"contains excluded {', '.join(excluded)} (x{negation})")
        for attr, wanted in wants:
            value = getattr(rec, attr)
            if off_target(value, wanted):
                factors.append(mismatch_penalty(attr))
                penalties.append(f"{attr} is {value}, query asks for {wanted} (x{mismatch_penalty(attr)})")
        return tuple(factors), penalties

    def _wants(self, analysis: QueryAnalysis, filters: dict[str, str | None]) -> list[tuple[str, str]]:
        return [(attr, wanted) for attr, wanted in analysis.wants.items() if not filters.get(attr)]

    def _score_all(self, uids: list[str], cosines: np.ndarray, bm25: np.ndarray, analysis: QueryAnalysis,
                   weights: dict[str, float], filters: dict[str, str | None],
                   static: dict[str, Static] | None = None, plan: KeywordPlan | None = None,
                   every: EveryRow | None = None, rows: np.ndarray | list[int] | None = None) -> Ranked:
        """Every candidate's score (``uids`` with their legs' ``cosines`` and ``bm25`` scores), ranked;
        :meth:`Ranked.result` makes the few shown into results. ``static``: parts already worked out for some
        candidates, with the ``plan`` they used; ``every``: every mirror row's shares and penalties for that
        plan, with ``rows``, the candidates' mirror rows. The scores are worked out for all candidates at once,
        in the float operations (and their order) of one candidate's formula, so the same values bit for bit.
        With ``every`` only the numbers are read for each candidate, as arrays; the words, packages and
        penalties' reasons are written out for the results shown (measured at 1,000 templates: p50 ~0.21 ->
        ~0.16 ms a search, p95 ~0.59 -> ~0.27, the tail being negation queries, whose exclusions the term
        postings now find for every row)."""
        plan = plan if plan is not None else keyword_plan(analysis, self._idf)
        static = static or {}
        rows = None if rows is None else np.asarray(rows, dtype=np.int64)
        catalog = self.index.catalog
        records = [catalog[uid] for uid in uids]
        wants = self._wants(analysis, filters)
        known: dict[int, Static] = {}
        ranks: np.ndarray | None = None
        stages: list[tuple[np.ndarray, np.ndarray | float]]  # penalties: the rows each applies to, its factor
        if every is not None and rows is not None and not static:
            cover, worded, shares = every.shares(rows)
            package = shares if shares is not None else np.zeros(len(uids))
            stages = [(applies[rows], factor) for applies, factor in every.penalties]
            ranks = every.ranks[rows]
        else:
            parts_in_order = [static.get(uid) or self._static_parts(plan, analysis, rec, uid, wants)
                              for uid, rec in zip(uids, records, strict=True)]
            known = dict(enumerate(parts_in_order))
            cover = np.array([part[0] for part in parts_in_order], dtype=np.float64)
            worded = np.array([bool(part[1]) for part in parts_in_order], dtype=bool)
            package = np.array([part[2] for part in parts_in_order], dtype=np.float64)
            factors = [part[4] for part in parts_in_order]
            stages = [(np.array([len(f) > j for f in factors], dtype=bool),
                       np.array([f[j] if len(f) > j else 1.0 for f in factors]))
                      for j in range(max(map(len, factors), default=0))]
        max_bm25 = (float(bm25.max()) if len(bm25) else 0.0) or 1.0
        # + 0.0: Python's max(0.0, -0.0) is 0.0, numpy's maximum keeps -0.0
        semantic = np.minimum(1.0, np.maximum(0.0, (cosines - COS_FLOOR) / (COS_CEIL - COS_FLOOR))) + 0.0
        keyword = (1 - BM25_SHARE) * cover + BM25_SHARE * (bm25 / max_bm25)
        scores = weights["semantic"] * semantic + weights["keyword"] * keyword + weights["package"] * package
        penalised = np.zeros(len(uids), dtype=bool)
        for applies, factor in stages:  # one by one, as one candidate's score always took them (x 1.0 is exact)
            scores = scores * np.where(applies, factor, 1.0)
            penalised |= applies

        def parts(shown: list[int]) -> list[Static]:
            missing = [i for i in shown if i not in known]
            if missing:
                assert every is not None and rows is not None
                for i, (words, named) in zip(missing, every.parts(analysis, rows[missing].tolist()), strict=True):
                    known[i] = self._static_parts(plan, analysis, records[i], uids[i], wants, words, named)
            return [known[i] for i in shown]

        return Ranked.of(scores, records, (semantic, keyword, package, cosines, bm25), worded, penalised, parts,
                         ranks)

    def _analyse_and_prepare(self, started: threading.Event, mirror: VectorMirror, query: str,
                             spelt: Spelt, filters: dict[str, str | None],
                             limit: int) -> tuple[tuple[QueryAnalysis, dict[str, float], str], _Prepared]:
        """:meth:`_read` and :meth:`_prepare`, on a second thread while the query is embedded."""
        started.wait()
        read = self._read(query, spelt)
        return read, self._prepare(started, mirror, read[0], read[2], filters, limit)

    def _prepare(self, started: threading.Event, mirror: VectorMirror, analysis: QueryAnalysis, fts_query: str,
                 filters: dict[str, str | None], limit: int) -> _Prepared:
        """Run on a second thread while the query is embedded (from the model run on, see ``on_inference``):
        the in-memory full-text leg, and every row's keyword and package shares from the term postings; before
        those are built, the static parts of the candidates known before the vector leg (its hits, and every
        row when the vector leg will return them all)."""
        started.wait()
        keep = mirror.mask(filters)
        hits = text_hits(mirror, fts_query, keep, limit)
        plan = keyword_plan(analysis, self._idf)
        postings = mirror.term_postings()
        every = None
        if postings is not None:
            named = analysis.packages
            packages = np.array([postings.installing_any(package_aliases(p) | set(analysis.package_sets.get(p, ())))
                                 for p in named], dtype=bool).reshape(len(named), postings.rows) if named else None
            penalties = [(excluded_rows(postings, analysis.excluded), self.settings.classification.negation_penalty)
                         ] if analysis.excluded else []
            for attr, wanted in self._wants(analysis, filters):
                penalties.append((mirror.rows_where(attr, functools.partial(off_target, wanted=wanted)),
                                  mismatch_penalty(attr)))
            every = EveryRow(coverage(plan, postings), packages, penalties, mirror.name_ranks())
        if every is not None:
            return hits, plan, {}, every  # the scorer reads each candidate's shares from it, all at once
        rows = list(range(len(mirror.uids))) if len(mirror.uids) <= limit else [pos for pos, _ in hits]
        catalog = mirror.catalog
        wants = self._wants(analysis, filters)
        static = {}
        for row in rows:
            uid = mirror.uids[row]
            if uid in catalog:
                static[uid] = self._static_parts(plan, analysis, catalog[uid], uid, wants)
        return hits, plan, static, every

    def close(self) -> None:
        """Let :meth:`_prepare`'s threads go (a search still running finishes first)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def _helper(self) -> concurrent.futures.ThreadPoolExecutor:
        if self._pool is None:
            with self._lock:
                if self._pool is None:
                    self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="search-prep")
        return self._pool

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

    @serves  # the periodic template scan waits for it
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
        keyword_only = getattr(self.embedder, "keyword_only", False)
        mirror = None if keyword_only else self.index.memory_mirror()
        limit = max(top_k * 4, 50)
        static: dict[str, Static] | None = None
        plan: KeywordPlan | None = None
        every: EveryRow | None = None
        if mirror is not None:
            # Both legs in memory: the query's analysis, the full-text leg and what scoring can do before the
            # vector leg run on a second core while onnxruntime embeds the query (measured: p50 ~0.5 ms less at
            # 48 to 10,000 templates, of ~5-8 ms; the analysis moved there too, with the array scoring, ~0.1-0.15
            # ms less again in paired runs at 48 and 1,000). Started any earlier, that work held the GIL the
            # tokenising needed. The embedding runs on this thread: on a worker from the start it was ~1 ms
            # slower, the worker and this thread queuing for the GIL.
            inference = threading.Event()
            spelt = self.analyzer.spelt(query)
            prepared = self._helper().submit(self._analyse_and_prepare, inference, mirror, query, spelt, filters,
                                             limit)
            try:
                with on_inference(inference.set):
                    # Spelling corrections join the query's batch; the glossary's labels are embedded already.
                    query_vector, label_vectors = self._vectors(query, [read for _, read in spelt[1]])
            finally:
                inference.set()
            (analysis, weights, fts_query), (hits, plan, static, every) = prepared.result()
            vector = self._combined(query, query_vector, analysis.embedding_labels(), label_vectors)
            found = self.index.mirror_rows(mirror, vector, hits, filters, limit)
            rows: np.ndarray | None = found.rows
            uids, cosines, bm25 = [mirror.uids[row] for row in found.rows.tolist()], found.cosine, found.bm25
        else:
            analysis, weights, fts_query = self._read(query)

            def embed() -> np.ndarray:  # called by the index once its full-text leg is under way
                labels = analysis.embedding_labels()
                query_vector, label_vectors = self._vectors(query, labels)
                return self._combined(query, query_vector, labels, label_vectors)

            candidates = self.index.candidates(None if keyword_only else embed, fts_query, build_where(filters),
                                               limit, filters=filters)
            rows = None
            uids = [c.uid for c in candidates]
            cosines = np.array([c.cosine for c in candidates], dtype=np.float64)
            bm25 = np.array([c.bm25 for c in candidates], dtype=np.float64)
        ranked = self._score_all(uids, cosines, bm25, analysis, weights, filters, static, plan, every, rows)
        threshold = self.settings.scoring.min_score_threshold if use_threshold else 0.0
        # A weak semantic score never empties a query a template clearly answers (ranking.py Ranked.kept).
        kept = ranked.kept(threshold, bool(analysis.packages),
                           not {p.lower() for p in analysis.packages} & load_request_words().everyday_names)
        below = len(ranked.order) - len(kept)
        shown = kept[:top_k]
        results = [ranked.result(i, part) for i, part in zip(shown, ranked.parts(shown), strict=True)]
        if results:
            message = f"{len(results)} template(s) for a {analysis.query_type} query"
            if analysis.corrections:
                message += "; read " + ", ".join(f"'{a}' as '{b}'" for a, b in analysis.corrections)
            rescued = [r.record.name for r in results if r.score < threshold]
            if rescued:
                message += (f"; {len(rescued)} scored under the {threshold:.2f} relevance threshold and are shown "
                            "because they have the named packages or words")
        elif ranked.order:
            best = ranked.order[0]
            message = (f"no relevant templates found: the best candidate ({ranked.records[best].name}) scored "
                       f"{float(ranked.score[best]):.2f}, under the {threshold:.2f} relevance threshold. Rephrase with the "
                       "distribution, use case or packages you need, or drop filters.")
        else:
            message = "no relevant templates found" + (" matching the filters" if any(filters.values()) else "")
        outcome = SearchOutcome(query, analysis.query_type, weights, results, analysis, len(uids), below,
                                message, (time.perf_counter() - started) * 1000)
        log.info("search type=%s packages=%s excluded=%s candidates=%d results=%d top=%s",
                 analysis.query_type, analysis.packages, analysis.excluded, len(uids), len(results),
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

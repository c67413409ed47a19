"""The keyword signal: the share of the query's words (IDF-weighted, synonyms and inferred words for less)
that a template holds, one candidate at a time (:func:`keyword_score`) or every mirror row at once
(:func:`coverage`, from term_postings), with the same floats bit for bit."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import vocabulary as vocab
from .query_analysis import QueryAnalysis
from .templates import TemplateRecord
from .term_postings import TermPostings

WEAK_CREDIT = 0.5  # a word we inferred, or a synonym, counts for less than one the author wrote
CONCEPT_CREDIT = 0.9  # a template using the concept's own words, for a query that described it in plain words
_WordForms = tuple[set[str], set[str]]  # a query word with its stem, and its synonyms
ConceptPlan = tuple[str, list[tuple[_WordForms, float]], float, set[str]]  # id, (forms, idf) per word, weight, terms
_TermPlan = tuple[str, float, set[str], set[str]]  # word, idf, word and stem, synonyms
KeywordPlan = tuple[list[ConceptPlan], list[_TermPlan], frozenset[str]]  # ..., every form the plan looks for
# Every mirror row's keyword coverage, whether each of the query's words (or concepts) credited it (words x
# rows), and those words, in the order a candidate's matched words are listed.
Coverage = tuple[np.ndarray, np.ndarray, list[str]]


def credit(words: set[str], synonyms: set[str], strong: frozenset[str] | set[str],
            weak: frozenset[str] | set[str]) -> float:
    # isdisjoint, not `&`: the same answer without building a set per template and query word.
    if not strong.isdisjoint(words):
        return 1.0
    if not strong.isdisjoint(synonyms) or not weak.isdisjoint(words):
        return WEAK_CREDIT
    if not weak.isdisjoint(synonyms):
        return WEAK_CREDIT * WEAK_CREDIT
    return 0.0


def keyword_plan(analysis: QueryAnalysis, idf: Callable[[str], float]) -> KeywordPlan:
    """What the keyword score needs from the query alone (weights, stems, synonyms), worked out once per
    query instead of once per candidate; with the union of every form it looks for."""
    concepts: list[ConceptPlan] = []
    covered: set[str] = set()
    # A concept named in plain words ("fetch at power-on through the LAN") is matched by the words the
    # templates use for it (initrd, pxe): its words weigh together and earn the best credit either way.
    for concept, words in analysis.concepts:
        if not words or covered.issuperset(words):
            continue
        fresh = [w for w in words if w not in covered]
        covered.update(words)
        weights = [idf(w) for w in fresh]
        forms = [({w, vocab.stem(w)}, set(vocab.SYNONYMS.get(w, []))) for w in fresh]
        terms = {t for term in concept.terms for t in (term, vocab.stem(term))}
        concepts.append((concept.id, list(zip(forms, weights, strict=True)), sum(weights), terms))
    plain = [(q, idf(q), {q, vocab.stem(q)}, set(vocab.SYNONYMS.get(q, [])))
             for q in dict.fromkeys(analysis.content_terms) if q not in covered]
    wanted: set[str] = set()
    for concept_plan in concepts:
        wanted |= concept_plan[3]
        for (word_forms, word_synonyms), _weight in concept_plan[1]:
            wanted |= word_forms | word_synonyms
    for term_plan in plain:
        wanted |= term_plan[2] | term_plan[3]
    return concepts, plain, frozenset(wanted)


def keyword_score(plan: KeywordPlan, rec: TemplateRecord) -> tuple[float, list[str]]:
    concepts, plain, wanted = plan
    # Only the template's terms the query looks for matter: intersecting once (one pass over its terms, in
    # C) leaves two small sets that every credit check below reads, the same answers as its full sets.
    strong, weak = wanted.intersection(rec.terms_strong), wanted.intersection(rec.terms_weak)
    if not strong and not weak:
        return 0.0, []  # none of the query's words: most candidates of most queries
    total = matched = 0.0
    hits: list[str] = []
    for concept_id, forms, weight, terms in concepts:
        own = 0.0
        for (words, synonyms), wt in forms:  # added in order, not sum(): as coverage() adds them, bit for bit
            own += wt * credit(words, synonyms, strong, weak)
        own /= weight
        best = max(own, credit(terms, set(), strong, weak) * CONCEPT_CREDIT)
        total += weight
        if best:
            matched += best * weight
            hits.append(concept_id)
    for q, idf, words, synonyms in plain:
        total += idf
        earned = credit(words, synonyms, strong, weak)
        if earned:
            matched += earned * idf
            hits.append(q)
    return (matched / total if total else 0.0), hits


def credits(postings: TermPostings, words: set[str], synonyms: set[str] | tuple[()]) -> np.ndarray:
    """:func:`credit` for every row at once: the weaker credits assigned first, so a row keeps its best."""
    out = np.zeros(postings.rows)
    for value, rows_of, forms in ((WEAK_CREDIT * WEAK_CREDIT, postings.weak, synonyms),
                                  (WEAK_CREDIT, postings.strong, synonyms), (WEAK_CREDIT, postings.weak, words),
                                  (1.0, postings.strong, words)):
        for form in forms:
            rows = rows_of(form)
            if len(rows):
                out[rows] = value
    return out


def coverage(plan: KeywordPlan, postings: TermPostings) -> Coverage:
    """:func:`keyword_score` for every mirror row at once, with the same float operations in the same
    order (so the same values, bit for bit)."""
    concepts, plain, _wanted = plan
    total = 0.0
    matched = np.zeros(postings.rows)
    credited: list[np.ndarray] = []
    names: list[str] = []
    for concept_id, forms, weight, terms in concepts:
        own = np.zeros(postings.rows)
        for (words, synonyms), wt in forms:
            own += wt * credits(postings, words, synonyms)
        own /= weight
        best = np.maximum(own, credits(postings, terms, ()) * CONCEPT_CREDIT)
        total += weight
        matched += best * weight
        credited.append(best > 0)
        names.append(concept_id)
    for q, idf, words, synonyms in plain:
        total += idf
        earned = credits(postings, words, synonyms)
        matched += earned * idf
        credited.append(earned > 0)
        names.append(q)
    shares = matched / total if total else np.zeros(postings.rows)
    return shares, np.array(credited, dtype=bool).reshape(len(names), postings.rows), names


def keywords_at(cover: Coverage, rows: list[int]) -> list[tuple[float, list[str]]]:
    """Rows' (coverage, matched words) from :func:`coverage`, read in two numpy calls for all of them."""
    shares, credited, names = cover
    values = shares[rows].tolist()
    flags = credited[:, rows].T.tolist()
    return [(value, [name for name, flag in zip(names, row_flags, strict=True) if flag]) if value else (0.0, [])
            for value, row_flags in zip(values, flags, strict=True)]

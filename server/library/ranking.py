"""A search's candidates as scored: the parts of a score a template's words and packages give (``Static``),
those parts for every mirror row at once (``EveryRow``), and the ranking (``Ranked``), whose shown results
alone get their matched words, packages and penalties written out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .keyword_scoring import Coverage, keywords_at
from .query_analysis import QueryAnalysis
from .templates import TemplateRecord

# A candidate's score parts from the query and the template alone: keyword coverage and the words it matched,
# package share and the packages matched, the penalties' factors and reasons.
Static = tuple[float, list[str], float, list[str], tuple[float, ...], list[str]]
Words = tuple[float, list[str]]  # a share of the query's words or packages, and the ones matched


@dataclass
class EveryRow:
    """Shares worked out for every mirror row at once (``SearchEngine._prepare``): the keyword coverage,
    whether each package the query names is installed (packages x rows), and whether a row has one of the
    query's excluded terms (None when it excludes nothing)."""
    keywords: Coverage
    packages: np.ndarray | None
    excluded: np.ndarray | None = None

    def parts(self, analysis: QueryAnalysis, rows: list[int]) -> list[tuple[Words, Words | None]]:
        """Rows' (keyword coverage and words, package share and packages), as one candidate's formulas give them."""
        words = keywords_at(self.keywords, rows)
        if self.packages is None:
            return [(w, None) for w in words]
        named = analysis.packages
        out: list[tuple[Words, Words | None]] = []
        for w, flags in zip(words, self.packages[:, rows].T.tolist(), strict=True):
            matched = [p for p, flag in zip(named, flags, strict=True) if flag]
            out.append((w, (len(matched) / len(named), matched)))
        return out

    def shares(self, rows: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Rows' keyword coverage, whether any of the query's words credited them, and their package share: the
        numbers of :meth:`parts` without the lists of words and packages (the same floats: the share is the
        count over the number of packages named, both exact)."""
        shares, credited, _names = self.keywords
        cover = shares[rows]
        worded = (cover != 0) & credited[:, rows].any(axis=0)
        package = None if self.packages is None else \
            self.packages[:, rows].sum(axis=0) / self.packages.shape[0]
        return cover, worded, package


@dataclass
class Ranked:
    """Every candidate's score and shares (candidate order), and the candidates best first (ties by name).
    ``parts`` gives a candidate's words, packages and penalties, worked out when a result shows them."""
    order: list[int]
    score: list[float]  # rounded to 4 places, as results show it
    names: list[str]
    records: list[TemplateRecord]
    semantic: list[float]  # the shares unrounded
    keyword: list[float]
    package: list[float]
    cosine: list[float]
    bm25: list[float]
    worded: list[bool]  # some word (or concept) of the query credited the template
    penalised: list[bool]
    parts: Callable[[int], Static]

    @staticmethod
    def of(score: list[float], records: list[TemplateRecord], shares: tuple[np.ndarray, ...], worded: list[bool],
           penalised: list[bool], parts: Callable[[int], Static]) -> Ranked:
        """``shares``: semantic, keyword, package, cosine and BM25 arrays."""
        names = [rec.name for rec in records]
        order = sorted(range(len(score)), key=lambda i: (-score[i], names[i]))
        semantic, keyword, package, cosine, bm25 = (a.tolist() for a in shares)
        return Ranked(order, score, names, records, semantic, keyword, package, cosine, bm25, worded, penalised,
                      parts)

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
    whether each package the query names is installed (packages x rows), the penalties (which rows each
    applies to, and its factor, in the order a score takes them), and every row's :func:`name_ranks`."""
    keywords: Coverage
    packages: np.ndarray | None
    penalties: list[tuple[np.ndarray, float]]
    ranks: np.ndarray

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

    def shares(self, rows: list[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Rows' keyword coverage, whether any of the query's words credited them, and their package share: the
        numbers of :meth:`parts` without the lists of words and packages (the same floats: the share is the
        count over the number of packages named, both exact)."""
        shares, credited, _names = self.keywords
        cover = shares[rows]
        worded = (cover != 0) & credited[:, rows].any(axis=0)
        package = None if self.packages is None else \
            self.packages[:, rows].sum(axis=0) / self.packages.shape[0]
        return cover, worded, package


def exact_round(values: np.ndarray, places: int = 4) -> np.ndarray:
    """``round(x, places)`` of every element, the same floats bit for bit, in a few array operations.

    Why not ``np.round``: it scales first, and the scaling's own rounding (under 2**-22 here) can move an
    element lying that close to a half to the other side, where Python rounds the exact value. Here those
    elements, and any too large for that bound (past 2**30 scaled), are rounded by Python; for the rest both
    take the same integer, and dividing it by 10**places is one correctly rounded division, the float
    nearest the decimal, which is what Python's round returns.
    """
    values = np.asarray(values, dtype=np.float64)
    scale = 10.0 ** places
    if not np.abs(values).max(initial=0.0) < 2.0 ** 30 / scale:  # also NaN
        return np.array([round(v, places) for v in values.tolist()], dtype=np.float64)
    scaled = values * scale
    out = np.rint(scaled) / scale
    off_half = scaled - np.floor(scaled)
    off_half -= 0.5
    for i in np.flatnonzero(np.abs(off_half) < 1e-6).tolist():
        out[i] = round(float(values[i]), places)
    return out


def name_ranks(names: list[str]) -> np.ndarray:
    """Each name's place among the distinct names in order (equal names, equal ranks): sorting by it sorts
    by the name."""
    place = {name: i for i, name in enumerate(sorted(set(names)))}
    return np.fromiter((place[name] for name in names), dtype=np.int64, count=len(names))


@dataclass
class Ranked:
    """Every candidate's score and shares (candidate order), and the candidates best first (ties by name).
    ``parts`` gives candidates' words, packages and penalties, worked out for the results shown (together:
    reading one row at a time cost ~20 us a result)."""
    order: list[int]
    score: np.ndarray  # rounded to 4 places, as results show it
    records: list[TemplateRecord]
    semantic: np.ndarray  # the shares unrounded
    keyword: np.ndarray
    package: np.ndarray
    cosine: np.ndarray
    bm25: np.ndarray
    worded: np.ndarray  # bool: some word (or concept) of the query credited the template
    penalised: np.ndarray  # bool
    parts: Callable[[list[int]], list[Static]]

    @staticmethod
    def of(score: np.ndarray, records: list[TemplateRecord], shares: tuple[np.ndarray, ...], worded: np.ndarray,
           penalised: np.ndarray, parts: Callable[[list[int]], list[Static]],
           ranks: np.ndarray | None = None) -> Ranked:
        """``shares``: semantic, keyword, package, cosine and BM25 arrays; ``ranks``: the candidates'
        :func:`name_ranks` when known (worked out from the records otherwise). The order is by rounded score,
        then name, then candidate order (lexsort is stable), as ``sorted`` by (-score, name) gave it."""
        rounded = exact_round(score)
        if ranks is None:
            ranks = name_ranks([rec.name for rec in records])
        order = np.lexsort((ranks, -rounded)).tolist()
        semantic, keyword, package, cosine, bm25 = shares
        return Ranked(order, rounded, records, semantic, keyword, package, cosine, bm25,
                      np.asarray(worded, dtype=bool), np.asarray(penalised, dtype=bool), parts)

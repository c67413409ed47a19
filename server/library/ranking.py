"""A search's candidates as scored: the parts of a score a template's words and packages give (``Static``),
those parts for every mirror row at once (``EveryRow``), and the ranking (``Ranked``), whose shown results
alone get their matched words, packages and penalties written out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .keyword_scoring import Coverage, keywords_at
from .query_analysis import QueryAnalysis
from .templates import TemplateRecord

COS_FLOOR = 0.10  # MiniLM's working range of cosines, rescaled onto [0, 1] (see search's module docstring)
COS_CEIL = 0.70
MISMATCH_PENALTY = 0.8  # a stated distribution, architecture or image type the template does not have
# A stated operating system the template is not: another system is further off than another architecture or image
# type of the one asked for ("minimal arm64 ubuntu": Debian's arm64 image had ranked above Ubuntu's)
OS_MISMATCH_PENALTY = 0.7


def mismatch_penalty(attr: str) -> float:
    return OS_MISMATCH_PENALTY if attr in ("dist", "os") else MISMATCH_PENALTY
BM25_SHARE = 0.15  # of the keyword signal
STRONG_EVIDENCE = 0.5  # package or keyword share at which a result is kept even under the semantic threshold

# A candidate's score parts from the query and the template alone: keyword coverage and the words it matched,
# package share and the packages matched, the penalties' factors and reasons.
Static = tuple[float, list[str], float, list[str], tuple[float, ...], list[str]]
Words = tuple[float, list[str]]  # a share of the query's words or packages, and the ones matched


def off_target(value: str, wanted: str) -> bool:
    """A template's distribution, architecture or image type (``value``) is not the one the query states; a
    template that does not say is not penalised."""
    return bool(value) and value != wanted


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

    def kept(self, threshold: float, packages_named: bool, unmistakable: bool = False) -> list[int]:
        """The candidates shown, best first: those scoring ``threshold`` or more, and those under it with exact
        evidence and no penalty: most named packages installed (``packages_named``: the query names some), or
        most of the query's words (or concepts) present. On the shares as results show them (rounded).
        ``unmistakable``: no named package is an everyday word, so its match alone is evidence."""
        keep = self.score >= threshold
        doubt = np.flatnonzero(~keep & ~self.penalised)
        if len(doubt):
            strong = self.worded[doubt] & (exact_round(self.keyword[doubt]) >= STRONG_EVIDENCE + BM25_SHARE)
            if packages_named:
                # Some package names are English words ("file", "less"): their match counts only when the query's
                # meaning is not wholly unrelated to the template (cosine above the floor). A name no one writes
                # as a word ("mosquitto") counts alone: a template that lists it among hundreds of packages has
                # no other words for it.
                related = (exact_round(self.semantic[doubt]) > 0) | unmistakable
                strong |= (exact_round(self.package[doubt]) >= STRONG_EVIDENCE) & related
            keep[doubt[strong]] = True
        order = np.asarray(self.order, dtype=np.int64)
        return order[keep[order]].tolist()

    def result(self, i: int, part: Static) -> ScoredResult:
        """Candidate ``i`` as a result, with its ``parts``."""
        _coverage, hits, _package, matched, _factors, penalties = part
        return ScoredResult(self.records[i], float(self.score[i]), round(float(self.semantic[i]), 4),
                            round(float(self.keyword[i]), 4), round(float(self.package[i]), 4),
                            round(float(self.cosine[i]), 4), round(float(self.bm25[i]), 4), list(penalties),
                            matched, hits)

"""Sets of one template a score reads (its packages lower-cased; the words its author wrote and the starts of
its packages' names), built the first time the template is a candidate and kept, bounded, until the catalog
changes: once per template instead of once per query and candidate."""

from __future__ import annotations

import bisect
import functools
import itertools
import sys
from collections.abc import Callable
from typing import TypeVar

import numpy as np

from . import vocabulary as vocab
from .query_analysis import QueryAnalysis, package_aliases
from .templates import TemplateRecord, authored_words
from .term_postings import TermPostings

DOC_SETS_MAX = 4096  # sets kept per kind between queries: bounded for 100,000 templates
_T = TypeVar("_T")


def remember(cache: dict[str, _T], key: str, value: _T) -> None:
    """Insert, keeping at most DOC_SETS_MAX entries: the oldest quarter goes when full (dicts keep insertion
    order), so no single query pays for dropping thousands of sets at once."""
    if len(cache) >= DOC_SETS_MAX:
        for old in list(itertools.islice(cache, DOC_SETS_MAX // 4)):
            cache.pop(old, None)  # not del: a search on another thread may have dropped it first
    cache[key] = value


@functools.lru_cache(maxsize=1024)
def excluded_forms(term: str) -> frozenset[str]:
    """The names an excluded term is installed under: its package aliases, its stem and its first synonym."""
    return package_aliases(term) | {vocab.stem(term)} | set(vocab.SYNONYMS.get(term, [])[:1])


def excluded_rows(postings: TermPostings, terms: list[str]) -> np.ndarray:
    """Whether each row has one of the excluded ``terms``, as :meth:`TemplateSets.excluded_hits` finds them."""
    out = np.zeros(postings.rows, dtype=bool)
    for term in terms:
        out |= postings.installing_any(excluded_forms(term)) | postings.installing_named(term + "-")
        out[postings.authored(term)] = True
    return out


class TemplateSets:
    def __init__(self, catalog: Callable[[], dict[str, TemplateRecord]]) -> None:
        self._catalog = catalog
        self._packages: dict[str, frozenset[str]] = {}
        self._authored: dict[str, tuple[frozenset[str], list[str]]] = {}

    def clear(self) -> None:
        self._packages.clear()
        self._authored.clear()

    def packages(self, uid: str) -> frozenset[str]:
        """A template's packages, lower-cased."""
        have = self._packages.get(uid)
        if have is None:
            rec = self._catalog().get(uid)
            # Interned: the same names recur across templates (4,096 sets at 100,000 templates: 13.5 -> 7.5 MB).
            have = frozenset(sys.intern(p.lower()) for p in rec.packages) if rec else frozenset()
            remember(self._packages, uid, have)
        return have

    def excluded_hits(self, analysis: QueryAnalysis, rec: TemplateRecord, uid: str) -> list[str]:
        """The query's excluded terms the template has: installed under one of their names or as the start of
        a package's name ("docker" in docker-ce), or written by its author."""
        if not analysis.excluded:  # most queries negate nothing
            return []
        have = self.packages(uid)
        words, names = self._authored_sets(uid, rec, have)
        return [term for term in analysis.excluded
                if not have.isdisjoint(excluded_forms(term)) or term in words or _starts_a_name(names, term + "-")]

    def _authored_sets(self, uid: str, rec: TemplateRecord, have: frozenset[str]) -> tuple[frozenset[str], list[str]]:
        """The words its author wrote (``authored_words``) and its packages' names in order, where a name
        starting with a term is found in two steps. Kept: a negation query's candidates cost ~15 us each
        without them."""
        sets = self._authored.get(uid)
        if sets is None:
            sets = (frozenset(authored_words(rec)), sorted(have))
            remember(self._authored, uid, sets)
        return sets


def _starts_a_name(names: list[str], start: str) -> bool:
    """Whether a name in ``names`` (sorted) starts with ``start``: the first name not before it does, if any."""
    at = bisect.bisect_left(names, start)
    return at < len(names) and names[at].startswith(start)

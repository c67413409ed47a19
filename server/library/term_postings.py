"""The mirror's rows by the words they hold, so the keyword signal is scored for every row at once.

Why: scored one candidate at a time, a query's keyword coverage cost ~5-7 us a candidate (a pass over the
template's ~70 terms, then its credit checks), ~0.3 ms at 48 templates and ~1 ms at 10,000, where ~95
candidates come from the two legs. Inverted, a query costs a few numpy assignments per word it looks for,
whatever the number of candidates (keyword_scoring.coverage). Built from the rows' stored
terms (``TemplateRecord.terms_strong`` / ``terms_weak``), packages and authored words on a thread of its own:
~0.3 s and ~8 MB at 10,000 of the bench's rows (0.19 s and 5.7 MB before the packages' name list and the
authored words, which find a negation query's exclusions for every row); until it is ready candidates are
scored one by one, with the same results.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from .templates import TemplateRecord, authored_words

_NONE = np.zeros(0, dtype=np.int32)


class TermPostings:
    """term -> the rows (positions in ``uids``) holding it among their strong, and among their weak, terms;
    package name (lower-cased) -> the rows installing it; and a word its author wrote (an explicit keyword or a
    part of the file name, lower-cased) -> the rows with it."""

    def __init__(self, catalog: Mapping[str, TemplateRecord], uids: Sequence[str]) -> None:
        strong: dict[str, list[int]] = {}
        weak: dict[str, list[int]] = {}
        packages: dict[str, set[int]] = {}
        authored: dict[str, set[int]] = {}
        for row, uid in enumerate(uids):
            rec = catalog.get(uid)
            if rec is None:  # a row the catalog lacks holds no words
                continue
            for term in rec.terms_strong:
                strong.setdefault(term, []).append(row)
            for term in rec.terms_weak:
                weak.setdefault(term, []).append(row)
            for name in rec.packages:
                packages.setdefault(name.lower(), set()).add(row)
            for word in authored_words(rec):
                authored.setdefault(word, set()).add(row)
        self.rows = len(uids)
        self._strong = {t: np.asarray(r, dtype=np.int32) for t, r in strong.items()}
        self._weak = {t: np.asarray(r, dtype=np.int32) for t, r in weak.items()}
        self._packages = {name: np.asarray(sorted(r), dtype=np.int32) for name, r in packages.items()}
        self._names = sorted(self._packages)
        self._authored = {word: np.asarray(sorted(r), dtype=np.int32) for word, r in authored.items()}

    def strong(self, term: str) -> np.ndarray:
        return self._strong.get(term, _NONE)

    def weak(self, term: str) -> np.ndarray:
        return self._weak.get(term, _NONE)

    def installing_any(self, names: Iterable[str]) -> np.ndarray:
        """Whether each row installs one of ``names`` (lower-cased package names)."""
        out = np.zeros(self.rows, dtype=bool)
        for name in names:
            rows = self._packages.get(name)
            if rows is not None:
                out[rows] = True
        return out

    def installing_named(self, start: str) -> np.ndarray:
        """Whether each row installs a package whose name starts with ``start`` (lower-case)."""
        out = np.zeros(self.rows, dtype=bool)
        at = bisect.bisect_left(self._names, start)
        while at < len(self._names) and self._names[at].startswith(start):
            out[self._packages[self._names[at]]] = True
            at += 1
        return out

    def authored(self, word: str) -> np.ndarray:
        """The rows whose author wrote ``word`` (lower-case): an explicit keyword or a part of the file name."""
        return self._authored.get(word, _NONE)

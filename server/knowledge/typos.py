"""Whether an unknown word of a request is a misspelling of a known one, and of which.

A rule about spelling, not a list of typos: the word is at least five letters long, one known word is clearly the
closest (difflib ratio >= 0.8, the same first letter), and no farther than a slip of the fingers: one edit
(insertion, deletion, substitution or swap of neighbours) for words of up to seven letters, two for longer ones.
Another form of the same word is no misspelling ("controller" is not "control", "compute" not "computer"): it
means something else, and is reported if nothing reads it, rather than read as what it is not.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection

# Endings that make another word of the same stem (a doer, a past, an action), unlike a plural.
_DERIVING = ("r", "er", "or", "ler", "ller", "ed", "d", "ing", "ion", "ation", "ment", "al", "ly")


def edit_distance(a: str, b: str, limit: int = 3) -> int:
    """Damerau (optimal string alignment) distance, or ``limit`` once it is certain to be at least that."""
    if abs(len(a) - len(b)) >= limit:
        return limit
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        row = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                row[j] = min(row[j], prev2[j - 2] + 1)
        if min(row) >= limit:
            return limit
        prev2, prev = prev, row
    return min(prev[-1], limit)


def derived_form(word: str, known: str) -> bool:
    """``word`` and ``known`` are one stem with different endings ("controller"/"control", "compute"/"computer",
    "exported"/"exporter")."""
    short, long_ = sorted((word, known), key=len)
    if long_.startswith(short) and long_[len(short):] in _DERIVING:
        return True
    return any(a.endswith(x) and b.endswith(y) and a[:-len(x)] == b[:-len(y)]
               for a, b in ((word, known), (known, word)) for x in _DERIVING for y in _DERIVING if x != y)


def slip_of(word: str, known: str) -> bool:
    """Whether ``known`` could be what ``word`` was meant to be, as a slip of the fingers: the same first letter
    (people rarely mistype it; "flake" is no "lake"), not another form of the same word, and not another number
    of the same name: "frobtool2" is no "frobtool", "libssl3" no "libssl1" (a number written is meant; a name said
    without its number, "apache" for apache2, still is)."""
    return word[:1] == known[:1] and not derived_form(word, known) and not _renumbered(word, known)


def _renumbered(word: str, known: str) -> bool:
    """``word`` has digits, and the two differ in their digits only."""
    bare = word.translate(_NO_DIGITS)
    return word != known and bare != word and bare == known.translate(_NO_DIGITS)


_NO_DIGITS = str.maketrans("", "", "0123456789")


def misspelling_of(word: str, vocabulary: Collection[str]) -> str | None:
    """The known word ``word`` is a misspelling of, or None (see the module docstring)."""
    if len(word) < 5 or word in vocabulary:
        return None
    close = [c for c in difflib.get_close_matches(word, vocabulary, n=2, cutoff=0.8) if c[0] == word[0]]
    if not close or (len(close) > 1 and difflib.SequenceMatcher(None, word, close[1]).ratio()
                     >= difflib.SequenceMatcher(None, word, close[0]).ratio()):
        return None
    best = close[0]
    if not slip_of(word, best) or edit_distance(word, best) > (1 if len(word) <= 7 else 2):
        return None
    if len(word) == len(best) and not _neighbour_slips(word, best):
        return None
    return best


# QWERTY's rows: a key slips onto those beside it in its row and in the rows above and below
_ROWS = ("1234567890", "qwertyuiop", "asdfghjkl", "zxcvbnm")
_KEYS = {ch: (r, c) for r, row in enumerate(_ROWS) for c, ch in enumerate(row)}


def _neighbours(a: str, b: str) -> bool:
    if a not in _KEYS or b not in _KEYS:
        return False
    (ra, ca), (rb, cb) = _KEYS[a], _KEYS[b]
    return abs(ra - rb) <= 1 and abs(ca - cb) <= 1 + (ra != rb)  # rows are staggered by about half a key


# Letters people write for one another by sound: any two vowels ("jetsen" for jetson), and c/k/q, s/z, f/v
_SOUNDS = ("aeiouy", "ckq", "sz", "fv")


def _neighbour_slips(word: str, known: str) -> bool:
    """Of two words of one length, whether every letter that differs could be a slip: a neighbouring key struck
    ("dovker" for docker), a letter of the same sound ("dokker", "jetsen"), or two letters swapped. "snmpd" is no
    slip of "snapd": m and a are far apart and sound nothing alike, so it names something else (SNMP's daemon)."""
    differ = [(a, b) for a, b in zip(word, known, strict=True) if a != b]
    if len(differ) == 2 and differ[0] == differ[1][::-1]:
        return True  # a swap of neighbours ("dokcer")
    return all(_neighbours(a, b) or any(a in group and b in group for group in _SOUNDS) for a, b in differ)


__all__ = ["derived_form", "edit_distance", "misspelling_of", "slip_of"]

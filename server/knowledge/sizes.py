"""Sizes: the one place that reads and writes disk and partition sizes.

Two kinds of input, two clearly named readers, because they legitimately differ:

* **Template values** (``disk.size``, a partition's ``start``/``end``) follow upstream's rule, which
  :func:`template_bytes` implements and everything else reading a template calls: digits followed by
  exactly one of ``KiB MiB GiB K M G KB MB GB`` (case-sensitive; ``K``/``M``/``G`` are binary,
  ``KB``/``MB``/``GB`` decimal), or the bare ``"0"`` (an ``end`` that grows to the end of the disk).
  A bare number such as ``8`` is *not* a size there: upstream's schema documents sizes with units
  ("e.g. '4GiB', '8GB'"), every upstream template and default config writes one, and a reader cannot tell
  whether ``8`` meant MiB or GiB. The validator reports it with a hint (:func:`template_bytes` gives the
  why-not); :func:`template_mib` (the composer's layout arithmetic) reads it as "no size" (``None``).
* **Words in a request** ("8 gigs", "8G", "8 GB", "half a terabyte", "1.5 tb") are read by
  :func:`casual_mib` / :func:`parse_casual`: case-insensitive, fractions allowed, and decimal units read
  as their binary counterparts (nobody who types "8 GB disk" wants an image of 7.45 GiB; the composer
  writes binary units). A bare number is no size there either (``None``): "8" next to "disk" is too
  ambiguous to act on, and the caller reports it as not understood.
"""

from __future__ import annotations

import re
from typing import Any

# MiB per unit as people write it in a request (case-insensitive; decimal read as binary, see above).
UNITS_MIB: dict[str, float] = {
    "kib": 1 / 1024, "k": 1 / 1024, "kb": 1 / 1024,
    "mib": 1, "m": 1, "mb": 1,
    "gib": 1024, "g": 1024, "gb": 1024,
    "tib": 1024 * 1024, "t": 1024 * 1024, "tb": 1024 * 1024,
}  # fmt: skip

# How people spell units in a request: "gigs", "gigabytes", "megs", "terabyte", "10 giga"; and the octet units of
# French and other languages ("15 Go", "512 Mo", "2 Gio"). Not "To" (téraoctet): in English it is "to".
CASUAL_UNITS: dict[str, str] = {
    "gig": "gib", "gigs": "gib", "gigabyte": "gib", "gigabytes": "gib", "gibibyte": "gib", "gibibytes": "gib",
    "giga": "gib", "gigas": "gib", "go": "gib", "gio": "gib",
    "meg": "mib", "megs": "mib", "megabyte": "mib", "megabytes": "mib", "mebibyte": "mib", "mebibytes": "mib",
    "mega": "mib", "megas": "mib", "mo": "mib", "mio": "mib",
    "tera": "tib", "terabyte": "tib", "terabytes": "tib", "tebibyte": "tib", "tebibytes": "tib", "tio": "tib",
}  # fmt: skip
_FRACTIONS = {"half": 0.5, "quarter": 0.25, "a": 1.0, "an": 1.0}
# Numbers in words ("twenty gigabytes", "twenty-five gigs", "a hundred gigs", "two hundred gigabytes").
_ONES = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
         "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
         "eighteen": 18, "nineteen": 19}  # fmt: skip
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_UNDER_100 = rf"(?:(?:{'|'.join(_TENS)})(?:[\s-]+(?:{'|'.join(k for k, v in _ONES.items() if v < 10)}))?|{'|'.join(_ONES)})"
NUMBER_WORDS = rf"(?:(?:(?:an?|{_UNDER_100})\s+hundred(?:\s+(?:and\s+)?{_UNDER_100})?)|{_UNDER_100})"

# A casual size inside a sentence: "8 gigs", "8G", "1.5 tb", "half a terabyte", "twenty gigabytes". Group 1 is
# the number (digits, a fraction or a number in words), group 2 the unit as written.
UNIT_WORDS = "|".join(sorted([*UNITS_MIB, *CASUAL_UNITS], key=len, reverse=True))
# Words for numbers only count before a spelled-out unit ("half a terabyte", "twenty gigs"; not "a m", "one g").
CASUAL_SIZE = (
    rf"(?<![\w.])(\d+(?:\.\d+)?|(?:half(?:\s+an?)?|quarter(?:\s+of)?(?:\s+an?)?|{NUMBER_WORDS}|an?)"
    r"(?=[\s-]+(?:tera|tebi|giga|gibi|gig|mega|mebi|meg)))"
    rf"\s*-?\s*({UNIT_WORDS})\b"
)


def number_value(words: str) -> float | None:
    """A number written in words ("twenty five", "a hundred", "two hundred and fifty") or a fraction ("half a")."""
    parts = [w for w in re.split(r"[\s-]+", words.lower()) if w and w != "and"]
    if parts and parts[0] in _FRACTIONS and "hundred" not in parts:  # "half a", "a" (gig); not "a hundred"
        return _FRACTIONS[parts[0]]
    total = current = 0
    for part in parts:
        if part in _ONES:
            current += _ONES[part]
        elif part in _TENS:
            current += _TENS[part]
        elif part == "hundred":
            current = max(current, 1) * 100
        elif part in ("a", "an"):
            current += 1
        else:
            return None
    total += current
    return float(total) if total else None
# Upstream's size suffixes for template values, in bytes (see the module docstring).
TEMPLATE_UNITS: dict[str, int] = {
    "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3,
    "K": 1024, "M": 1024**2, "G": 1024**3,
    "KB": 1000, "MB": 1000**2, "GB": 1000**3,
}  # fmt: skip
_TEMPLATE_SIZE = re.compile(r"^(\d+)(KiB|MiB|GiB|K|M|G|KB|MB|GB)$")
_MIB = 1024**2


def unit_mib(unit: str) -> float:
    """MiB per one of ``unit`` (any spelling this module knows); KeyError when it is no unit."""
    unit = unit.lower()
    return UNITS_MIB[CASUAL_UNITS.get(unit, unit)]


def template_bytes(value: Any) -> tuple[int | None, str | None]:
    """Bytes for a template size ("1MiB", "512M", "4GB", "0"), or (None, how to write it instead)."""
    if isinstance(value, bool) or value is None:
        return None, "a size such as 512MiB or 4GiB"
    if isinstance(value, int):
        return (0, None) if value == 0 else (None, f'add a unit and quote it, e.g. "{value}MiB"')
    if not isinstance(value, str):
        return None, "a size such as 512MiB or 4GiB"
    if value == "0":
        return 0, None
    m = _TEMPLATE_SIZE.match(value)
    if m:
        return int(m.group(1)) * TEMPLATE_UNITS[m.group(2)], None
    compact = value.replace(" ", "")
    if compact != value and _TEMPLATE_SIZE.match(compact):
        return None, f"remove the space: {compact}"
    m = re.match(r"^(\d+(?:\.\d+)?)\s*([A-Za-z]*)$", value.strip())
    if not m:
        return None, "use digits followed by a unit, e.g. 512MiB or 4GiB"
    number, unit = m.groups()
    if "." in number:
        return None, "use a whole number with a smaller unit, e.g. 1536MiB instead of 1.5GiB"
    if not unit:
        return None, f'add a unit, e.g. {number}MiB; only "0" may be written without one'
    for known in TEMPLATE_UNITS:
        if unit.lower() == known.lower():
            return None, f"units are case-sensitive: write {number}{known}"
    if unit.lower() in ("t", "tb", "tib"):
        return None, f"TiB/TB are not supported; write {int(number) * 1024}GiB"
    if unit.lower() in ("b", "bytes"):
        return None, "byte counts are not supported; use KiB, MiB or GiB"
    return None, f"unknown unit '{unit}'; use one of {', '.join(TEMPLATE_UNITS)}"


def template_mib(value: Any) -> int | None:
    """A template size in whole MiB ('513MiB' -> 513, '4GiB' -> 4096); None when unreadable or 0."""
    size, _why = template_bytes(value)
    return round(size / _MIB) if size else None


def casual_mib(number: str, unit: str) -> int | None:
    """A request's size ("8", "gigs"; "half a", "terabyte") in MiB; None when either part is unknown."""
    number = " ".join(number.lower().split())
    value: float | None
    try:
        value = float(number)
    except ValueError:
        value = number_value(number) if number else None
    if value is None:
        return None
    try:
        return round(value * unit_mib(unit))
    except KeyError:
        return None


def parse_casual(text: str) -> int | None:
    """The first casual size in ``text`` in MiB, or None."""
    m = re.search(CASUAL_SIZE, text, re.I)
    return casual_mib(m.group(1), m.group(2)) if m else None


def fmt_size(mib: int) -> str:
    """A size for people and for disk.size: whole GiB when exact, else MiB (upstream accepts both)."""
    return f"{mib // 1024}GiB" if mib % 1024 == 0 and mib >= 1024 else f"{mib}MiB"


def fmt_bytes(n: float) -> str:
    """A byte count for people: 4GiB, 1.50GiB, 512KiB, 12 bytes."""
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= size:
            value = n / size
            return f"{value:g}{unit}" if value == int(value) else f"{value:.2f}{unit}"
    return f"{int(n)} bytes"


def fmt_offset(mib: int) -> str:
    """Partition offsets in MiB, as every upstream template writes them."""
    return f"{mib}MiB"


__all__ = ["CASUAL_SIZE", "TEMPLATE_UNITS", "casual_mib", "fmt_bytes", "fmt_offset", "fmt_size", "parse_casual",
           "template_bytes", "template_mib", "unit_mib"]

"""Sizes: the one place that reads and writes disk and partition sizes.

Two readers, one unit table:

* :func:`template_mib` reads a size written in a template ("513MiB", "4GiB", "8G"). A bare number is
  what upstream's Go code reads as MiB, so tolerant readers (the composer's layout arithmetic) take it
  as MiB; the validator still reports a bare number other than ``0`` as an error, because upstream's
  schema wants a unit and a reader cannot tell whether ``8`` meant MiB or GiB.
* :func:`casual_mib` reads a size as people type it in a request ("8 gigs", "8G", "8 GB", "half a
  terabyte", "1.5 tb"). A bare number there is not a size at all (returns ``None``): "8" next to
  "disk" is too ambiguous to act on, and the caller reports it as not understood.

Decimal units (GB, MB) are read as their binary counterparts (GiB, MiB) in requests: nobody who types
"8 GB disk" wants an image of 7.45 GiB, and every template in the library writes binary units.
"""

from __future__ import annotations

import re
from typing import Any

# MiB per unit, for template sizes (upstream's accepted suffixes) and casual ones.
UNITS_MIB: dict[str, float] = {
    "kib": 1 / 1024, "k": 1 / 1024, "kb": 1 / 1024,
    "mib": 1, "m": 1, "mb": 1,
    "gib": 1024, "g": 1024, "gb": 1024,
    "tib": 1024 * 1024, "t": 1024 * 1024, "tb": 1024 * 1024,
}  # fmt: skip

# How people spell units in a request: "gigs", "gigabytes", "megs", "terabyte".
CASUAL_UNITS: dict[str, str] = {
    "gig": "gib", "gigs": "gib", "gigabyte": "gib", "gigabytes": "gib", "gibibyte": "gib", "gibibytes": "gib",
    "meg": "mib", "megs": "mib", "megabyte": "mib", "megabytes": "mib", "mebibyte": "mib", "mebibytes": "mib",
    "tera": "tib", "terabyte": "tib", "terabytes": "tib", "tebibyte": "tib", "tebibytes": "tib",
}  # fmt: skip
_FRACTIONS = {"half": 0.5, "quarter": 0.25, "a": 1.0, "an": 1.0, "one": 1.0, "two": 2.0, "three": 3.0, "four": 4.0}

# A casual size inside a sentence: "8 gigs", "8G", "1.5 tb", "half a terabyte". Group 1 is the number
# (digits or a fraction word), group 2 the unit as written.
UNIT_WORDS = "|".join(sorted([*UNITS_MIB, *CASUAL_UNITS], key=len, reverse=True))
# Fraction words only count before a spelled-out unit ("half a terabyte", not "a m").
CASUAL_SIZE = (
    r"(?<![\w.])(\d+(?:\.\d+)?|(?:half\s+a|quarter\s+of\s+a|an?|one|two|three|four)"
    r"(?=\s+(?:tera|tebi|giga|gibi|gig|mega|mebi|meg)))"
    rf"\s*-?\s*({UNIT_WORDS})\b"
)
_TEMPLATE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(KiB|MiB|GiB|TiB|K|M|G|T|KB|MB|GB|TB)?\s*", re.I)


def unit_mib(unit: str) -> float:
    """MiB per one of ``unit`` (any spelling this module knows); KeyError when it is no unit."""
    unit = unit.lower()
    return UNITS_MIB[CASUAL_UNITS.get(unit, unit)]


def template_mib(value: Any) -> int | None:
    """'513MiB' -> 513, '4GiB' -> 4096, 8 (bare: MiB, as upstream reads it) -> 8; None if unreadable or 0."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return int(value) if value else None
    m = _TEMPLATE.fullmatch(str(value))
    if not m:
        return None
    number = float(m.group(1))
    if not number:
        return None
    return int(number * unit_mib(m.group(2) or "MiB"))


def casual_mib(number: str, unit: str) -> int | None:
    """A request's size ("8", "gigs"; "half a", "terabyte") in MiB; None when either part is unknown."""
    number = " ".join(number.lower().split())
    try:
        value = float(number)
    except ValueError:
        value = _FRACTIONS.get(number.split()[0]) if number else None
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


def fmt_offset(mib: int) -> str:
    """Partition offsets in MiB, as every upstream template writes them."""
    return f"{mib}MiB"


__all__ = ["CASUAL_SIZE", "casual_mib", "fmt_offset", "fmt_size", "parse_casual", "template_mib", "unit_mib"]

"""Durations as people say them ("30 days", "2 weeks", "a month", "12h"), read as systemd time spans."""

from __future__ import annotations

import re

DURATION_UNITS = {"minute": "min", "min": "min", "hour": "h", "h": "h", "hr": "h", "day": "day", "d": "day",
                  "week": "week", "w": "week", "wk": "week", "month": "month", "year": "year", "y": "year"}
DURATION = (r"(?:\d+|an?|one)\s*(?:minutes?|mins?|hours?|hrs?|h|days?|d|weeks?|wks?|w|months?|years?|y)(?![\w-])")


def time_span(text: str) -> str:
    """A duration said in words as a systemd time span (systemd.time(7)): "30 days" -> "30day"."""
    m = re.fullmatch(r"(\d+|an?|one)\s*([a-z]+?)s?", text.strip().lower())
    if m is None:
        return ""
    count = m.group(1) if m.group(1).isdigit() else "1"
    unit = DURATION_UNITS.get(m.group(2)) or DURATION_UNITS.get(m.group(2).rstrip("s"), "")
    return f"{count}{unit}" if unit and int(count) > 0 else ""

"""When something recurs, as people say it ("every night at 3am", "sundays at 4", "weekly", "at 02:30 on
weekdays"), read as a systemd calendar event (systemd.time(7): ``DayOfWeek Year-Month-Day Hour:Minute:Second``).

A schedule is made of a period (which days) and a time of day, either first. A period with no time starts at
midnight, as systemd's own ``daily`` and ``weekly`` do; "weekly" is systemd's week, from Monday. An hour said
without am/pm is read on the 24-hour clock, except after "night" or "evening", where "at 11" is 23:00; each
reading that chose something not said is returned as a note.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_DAYS = {"mon": "Mon", "tue": "Tue", "wed": "Wed", "thu": "Thu", "fri": "Fri", "sat": "Sat", "sun": "Sun"}
_DAY = (r"(?:mon(?:day)?|tue(?:s(?:day)?)?|wed(?:nesday)?|thu(?:r(?:s(?:day)?)?)?|fri(?:day)?|sat(?:urday)?"
        r"|sun(?:day)?)s?")
_UNIT = r"(?:day|night|morning|evening|week|month|weekday|weekend)s?"
_DAYS_SAID = rf"{_DAY}(?:\s*(?:,|\band\b|\bor\b|&)\s*{_DAY})*"  # "monday and thursday", "sat, sun"
# What recurs, said as an adjective ("a nightly reboot", "weekly backups").
CALENDAR_ADJECTIVES = ("hourly", "daily", "nightly", "weekly", "monthly")
# Within a day: "hourly", "every hour", "every 6 hours", "every 15 minutes" (a step from the top of the day or hour).
_WITHIN_DAY = r"(?:hourly|(?:every|each|once\s+an?)\s+hour|every\s+\d{1,2}\s+(?:hours?|hrs?|minutes?|mins?))"
PERIOD = (rf"(?:{_WITHIN_DAY}|(?:every|each)\s+(?:other\s+)?(?:{_UNIT}|{_DAYS_SAID})|(?:daily|nightly|weekly|monthly)"
          rf"|(?:on\s+)?(?:the\s+)?(?:{_DAYS_SAID}|weekends|weekdays)(?:\s+(?:nights?|mornings?|evenings?))?"
          r"|once\s+(?:a|per|every)\s+(?:day|night|week|month)|at\s+night|in\s+the\s+(?:night|morning|evening))")
# A time of day; a bare hour only after "at" ("at 4"), not a size or a count ("4 gb", "4 cores").
TIME = (r"(?:(?:at|around|by)\s+)?(?:midnight|noon|midday|\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)|\d{1,2}:\d{2}"
        # a full stop may end the sentence after the hour ("reboot every night at 4."), never a decimal's point
        r"|(?<=at\s)\d{1,2}(?![\d:]|\.\d|\s*(?:gi?b?|mi?b?|%|cores?|cpus?|users?)\b))")
# A whole schedule: one or two pieces, a period and a time in either order ("every sunday at 4", "at 3am daily").
SCHEDULE = rf"(?:{PERIOD}|{TIME})(?:\s*,?\s*(?:{PERIOD}|{TIME}))?"


@dataclass(frozen=True)
class Calendar:
    event: str  # the OnCalendar value
    notes: tuple[str, ...] = ()
    # The part a default filled ("time": no time of day said, "days": no period said): in an edit, the earlier
    # schedule's own part is kept instead (see ``merged``).
    defaulted: str = ""
    default_note: str = ""  # the note that says which default was chosen (among ``notes``)


def merged(event: str, defaulted: str, old: str) -> str:
    """``event`` with its ``defaulted`` part (Calendar.defaulted) taken from the earlier event ``old``: "on
    saturdays" said of a reboot every night at 3am is "Sat *-*-* 03:00:00", "at 4am" said of one on Saturdays at
    midnight is "Sat *-*-* 04:00:00". Unchanged when nothing was defaulted, or either is no day-and-time event
    (one that recurs within a day)."""
    day_and_time = r"\S+(?: \S+)? \d{2}:\d{2}:\d{2}"
    if defaulted not in ("time", "days") or not (re.fullmatch(day_and_time, old) and re.fullmatch(day_and_time, event)):
        return event
    days, time = event.rsplit(" ", 1)
    old_days, old_time = old.rsplit(" ", 1)
    return f"{days} {old_time}" if defaulted == "time" else f"{old_days} {time}"


def calendar(text: str) -> Calendar | None:
    """The calendar event ``text`` (one schedule, matched by SCHEDULE) says; None when it says no period and
    no time."""
    said = text.lower()
    if re.search(r"\bother\s+(?!days?\b|nights?\b)", said):
        return None  # every other week or weekday: no calendar event says it
    within = _within_day(said)
    if within is not None:
        return within
    days, period_notes, evening = _period(said)
    hour_minute = _time(said, evening)
    if days is None and hour_minute is None:
        return None
    notes = list(period_notes)
    defaulted = default_note = ""
    if hour_minute is None:
        hour, minute = 0, 0
        defaulted, default_note = "time", "no time of day said: at midnight"
        notes.append(default_note)
    else:
        hour, minute, time_note = hour_minute
        notes += [time_note] if time_note else []
    if days is None:
        days, defaulted = "*-*-*", "days"
    return Calendar(f"{days} {hour:02d}:{minute:02d}:00", tuple(notes), defaulted, default_note)


def _within_day(said: str) -> Calendar | None:
    """A schedule that recurs within each day: hourly at minute 0, every N hours from midnight, every N minutes
    from the top of the hour (a step that does not divide the hour or the day restarts there, as systemd's does)."""
    m = re.search(r"\bevery\s+(\d{1,2})\s+(hours?|hrs?|minutes?|mins?)\b", said)
    if m is not None:
        step = int(m.group(1))
        if m.group(2).startswith("h"):
            return Calendar(f"*-*-* 00/{step}:00:00") if 1 <= step <= 23 else None
        return Calendar(f"*-*-* *:00/{step}:00") if 1 <= step <= 59 else None
    if re.search(r"\b(?:hourly|(?:every|each|once\s+an?)\s+hour)\b", said):
        return Calendar("*-*-* *:00:00")
    return None


def _period(said: str) -> tuple[str | None, list[str], bool]:
    """Which days (the calendar's date part), notes on what was chosen, and whether an hour belongs to the
    evening ("every night at 11")."""
    evening = bool(re.search(r"\b(?:night|nightly|evening)s?\b", said))
    if re.search(r"\bother\s+(?:day|night)\b", said):
        return "*-*-01/2", ["every other day: on the odd days of the month"], evening
    days = [_DAYS[d[:3]] for d in re.findall(rf"\b({_DAY})\b", said) if d[:3] in _DAYS]
    if days:
        return f"{','.join(dict.fromkeys(days))} *-*-*", [], evening
    if re.search(r"\bweekdays?\b", said):
        return "Mon..Fri *-*-*", [], evening
    if re.search(r"\bweekends?\b", said):
        return "Sat,Sun *-*-*", [], evening
    if re.search(r"\b(?:weekly|weeks?)\b", said):
        return "Mon *-*-*", ["weekly: on Mondays, as systemd's weekly"], evening
    if re.search(r"\b(?:monthly|months?)\b", said):
        return "*-*-01", ["monthly: on the first of the month"], evening
    if re.search(r"\b(?:daily|nightly|days?|nights?|mornings?|evenings?)\b", said):
        return "*-*-*", [], evening
    return None, [], evening


def _time(said: str, evening: bool) -> tuple[int, int, str] | None:
    m = re.search(r"\b(midnight|noon|midday)\b", said)
    if m:
        return (0, 0, "") if m.group(1) == "midnight" else (12, 0, "")
    m = re.search(r"(?<![\d:])(\d{1,2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?(?![\d:])", said)
    if m is None:
        return None
    hour, minute, half = int(m.group(1)), int(m.group(2) or 0), (m.group(3) or "").replace(".", "")
    if hour > 23 or minute > 59 or (half and not 1 <= hour <= 12):
        return None
    if half:
        return (hour % 12 + (12 if half == "pm" else 0), minute, "")
    if evening and 6 <= hour < 12:
        return hour + 12, minute, f"{m.group(0).strip()} at night: {hour + 12:02d}:{minute:02d}"
    if not m.group(2) and hour <= 12:
        return hour, minute, f"{hour} read on the 24-hour clock: {hour:02d}:00"
    return hour, minute, ""


__all__ = ["PERIOD", "SCHEDULE", "TIME", "Calendar", "calendar", "merged"]

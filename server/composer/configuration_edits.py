"""Settings written as configuration commands (RequestSpec.configurations): each replaces the commands that set
the same thing before, brings the packages it needs, and a timer's schedule keeps what an edit did not say."""

from __future__ import annotations

import re

from .coherence import store_configurations
from .network_edits import NetworkEdit
from .schedules import merged

# The calendar event of a timer a configuration command writes, and the timer's unit.
_ON_CALENDAR = re.compile(r"OnCalendar=(.+?)\\n")
_TIMER_UNIT = re.compile(r"/etc/systemd/system/([\w@.-]+)\.timer")


class ConfigurationEdit(NetworkEdit):
    """Configuration commands and the schedules of the timers they write."""

    def configurations(self, entries: list[dict]) -> None:
        """Settings written as configuration commands (RequestSpec.configurations): each replaces the commands
        that set the same thing before (an earlier time zone, the same sysctl key) and brings the packages it
        needs."""
        for entry in entries:
            if entry.get("reschedule"):
                self._reschedule(entry)
                continue
            if entry.get("network") and not entry.get("remove") and not self.static_network(entry):
                continue
            configs = [c for c in self.system(create=False).get("configurations") or [] if c is not None]
            pattern = re.compile(str(entry.get("replaces") or r"(?!)"))
            old = [c for c in configs if isinstance(c, dict) and pattern.search(str(c.get("cmd") or ""))]
            if entry.get("defaulted") and old:
                self._keep_schedule(entry, str(old[-1].get("cmd") or ""))
            cmd = str(entry["cmd"])
            label = entry.get("label") or entry.get("setting") or "setting"
            if entry.get("remove"):
                if old:
                    store_configurations(self.system(), [c for c in configs if c not in old])
                    self.changes.append(f"took out {label}: " + "; ".join(f"`{c.get('cmd')}`" for c in old))
                elif not entry.get("implied"):  # said, not dropped: the edit found nothing of it
                    self.changes.append(f"nothing to take out: the image has no {label}")
                continue
            if entry.get("edits_only") and not old:  # a value for a command the template must already have
                self.problems.append(f"{label}: {entry['edits_only']}")
                continue
            where = self.dist or self.family  # a setting's packages by the target's names ("locales": glibc-i18n)
            local = [self.caps.translate_package(p, where) if where else p for p in entry.get("packages") or ()]
            added = [p for p in local if p and self.add_package(p)]
            if [c.get("cmd") for c in old] == [cmd]:
                self.changes.append(f"{label}: already set (`{cmd}`)")
                continue
            store_configurations(self.system(), [c for c in configs if c not in old] + [{"cmd": cmd}])
            what = [f"configuration `{cmd}`"] + [f"replaces `{c.get('cmd')}`" for c in old]
            self.changes.append(f"set {label}: " + "; ".join(what + ([f"package {', '.join(added)}"] if added else [])))

    def _keep_schedule(self, entry: dict, old_cmd: str) -> str | None:
        """A schedule said in part replacing one written before keeps that one's other part ("reboot on
        saturdays instead" keeps 3am): the entry's command and label follow, and the note of the default it no
        longer uses is taken back. The event written, or None when the old command has none."""
        found = _ON_CALENDAR.search(old_cmd)
        if found is None:
            return None
        event = str(entry["calendar"])
        kept = merged(event, str(entry.get("defaulted") or ""), found.group(1))
        if kept != event:
            entry["cmd"] = str(entry["cmd"]).replace(f"OnCalendar={event}", f"OnCalendar={kept}")
            entry["label"] = str(entry.get("label") or "").replace(event, kept)
            entry["calendar"] = kept
            part = "time of day" if entry.get("defaulted") == "time" else "days"
            self.changes.append(f"note: the earlier schedule's {part} kept ({found.group(1)} -> {kept})")
            if entry.get("default_note"):
                self.withdrawn.append(str(entry["default_note"]))
                self.changes = [c for c in self.changes if c != f"note: {entry['default_note']}"]
        return kept

    def _reschedule(self, entry: dict) -> None:
        """"make it weekly on sundays instead": the one schedule the image has (a scheduled reboot or job) takes
        the new one, its part not said kept."""
        configs = [c for c in self.system(create=False).get("configurations") or [] if isinstance(c, dict)]
        timers = [c for c in configs if _ON_CALENDAR.search(str(c.get("cmd") or ""))]
        units = [m.group(1) for c in timers for m in [_TIMER_UNIT.search(str(c.get("cmd") or ""))] if m]
        if len(timers) != 1:
            self.problems.append(f"{entry['label']}: " + (
                f"which one? the image has {', '.join(units or ['several timers'])}: say which, e.g. 'reboot every "
                "sunday at 4'" if timers else str(entry["edits_only"])))
            return
        (timer,) = timers
        entry["cmd"] = str(timer["cmd"])
        before = _ON_CALENDAR.search(entry["cmd"])
        assert before is not None  # the timer was found by it
        event = str(entry["calendar"])
        entry["cmd"] = entry["cmd"].replace(f"OnCalendar={before.group(1)}", f"OnCalendar={event}")
        kept = self._keep_schedule(entry, str(timer["cmd"])) or event
        if kept == before.group(1):
            self.changes.append(f"schedule of {units[0] if units else 'the timer'}: already {kept}")
            return
        store_configurations(self.system(), [{"cmd": entry["cmd"]} if c is timer else c for c in configs])
        self.changes.append(f"schedule of {units[0] if units else 'the timer'}: {before.group(1)} -> {kept}")

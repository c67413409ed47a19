"""Reading what recurs: scheduled reboots and programs run on a schedule ("reboots every night at 3am", "run
/opt/sync.sh every sunday at 4", "a nightly cron job running …"), systemd timers on their calendar events
(server/composer/schedules.py), and a new schedule for the one the image has ("make it weekly on sundays")."""

from __future__ import annotations

import re

from ..knowledge.system_settings import (
    Setting,
    boot_service_command,
    timer_command,
    update_reboot_configuration,
)
from .phrasing import ParserState
from .schedules import CALENDAR_ADJECTIVES, SCHEDULE, TIME, Calendar, calendar

# Verbs that take a setting out, whatever its value ("remove isolcpus", "cancel the nightly reboot").
UNDO = (r"(?:remove|drop|delete|disable|strip|stop|no|without|get\s+rid\s+of|forget(?:\s+about)?|cancel|scratch"
        r"|never\s+mind|(?:do\s+not|don['’]?t|no\s+longer)\s+(?:want|need))")  # "I don't want the reboot anymore"

# A program by its absolute path, as a unit's ExecStart names it ("/usr/local/bin/backup.sh")
_PROGRAM = r"(/[\w.+-]+(?:/[\w.+-]+)+)"


class SchedulePhrases(ParserState):
    """The schedules of a request. A scheduled setting is written as the settings' reading writes every setting."""

    def _write(self, setting: Setting, value: str) -> None:
        """The setting at ``value``, written (SettingPhrases)."""
        raise NotImplementedError

    def _undo(self, setting: Setting) -> None:
        """The setting taken out, whatever its value (SettingPhrases)."""
        raise NotImplementedError

    def _configure(self, label: str, entry: dict) -> None:
        self.spec.configurations.append({**entry, "label": label})

    def _update_reboots(self) -> None:
        """"automatic updates, reboot at 2am if needed", "reboot after updates", "unattended upgrades that reboot
        automatically": the updater's own reboot when an update needs one (with the updates), never a reboot on a
        schedule."""
        reboot = r"\breboot(?:s|ing)?(?:\s+(?:itself|it|the\s+(?:machine|system|box|device))|\s+automatically)*"
        needed = (r"(?:if|when|whenever|only\s+if|only\s+when|as)\s+(?:an?\s+)?(?:an?\s+update\s+|updates?\s+)?"
                  r"(?:is\s+|are\s+)?(?:needed|required|necessary|requires?\s+it|needs?\s+it|need\s+one|needs?\s+one)")
        after = r"(?:after|following)\s+(?:the\s+|an?\s+|its\s+)?(?:updates?|upgrades?|patch(?:es|ing))"
        for m in self._each(rf"{reboot}(?:\s+(?P<at>{TIME}))?\s+(?:{needed}|{after})(?:\s*,?\s+(?P<at2>{TIME}))?"
                            rf"|\b(?:updates?|upgrades?)\s+(?:that|which)\s+reboot(?:s)?\s+(?:itself\s+|the\s+machine\s+)?"
                            rf"(?:automatically|when\s+needed|if\s+needed)"):
            said = m.group("at") or m.group("at2")
            at = calendar(said) if said else None
            time = re.search(r"(\d\d:\d\d):\d\d$", at.event) if at else None
            self.spec.configurations.append(update_reboot_configuration(time.group(1) if time else None))
            self.spec.add_groups.append("updates")
            if time:
                self.spec.notes.append(f"reboot after updates at {time.group(1)}: unattended-upgrades waits for that "
                                       "time; dnf-automatic reboots right after the update run its timer starts")
            self._mask(m.start(), m.end())

    def _scheduled_commands(self) -> None:
        """A program run on a schedule ("a cron job that runs /usr/local/bin/backup.sh every night", "run
        /opt/sync.sh every sunday at 4"): a systemd timer and its oneshot service, as a scheduled reboot is; the
        program itself must be in the image, which is said. "remove the cron job" takes such timers out."""
        self._update_reboots()  # before the reboots on a schedule, which "reboot at 2am if needed" is not
        self._boot_commands()  # before the schedules, whose "runs" would take the program without a calendar event
        every = "|".join(CALENDAR_ADJECTIVES)
        kind = r"cron\s*job|cron\s+entry|crontab(?:\s+entry)?|systemd\s+timer|timer|scheduled\s+(?:job|task)|job|task"
        # "set up a cron to …": cron alone is a job too, but "remove cron" is the package
        job = rf"(?:(?:a|an|the)\s+)?(?:(?P<adjective>{every})\s+)?(?:{kind}|cron)"
        undo_job = rf"(?:(?:a|an|the)\s+)?(?:(?:{every})\s+)?(?:{kind})"
        run = r"(?:runs?|running|executes?|executing|calls?|starts?)"
        path = _PROGRAM
        # "remove the cron job", "get rid of the cleanup job": by its program's name when one is said
        for m in self._each(rf"\b{UNDO}\s+(?:the\s+|that\s+|this\s+)?(?:(?:{every})\s+)?(?:{path}\s+|(?P<named>(?!(?:{every}|cron|systemd|scheduled)\b)"
                            rf"[a-z][\w-]*)\s+)?{undo_job}s?\b"):
            name = _unit_name(m.group(1)) if m.group(1) else re.escape(_unit_name(m.group("named"))) if m.group(
                "named") else r"[\w-]+"
            self.spec.configurations.append({"remove": True, "replaces": rf"/etc/systemd/system/run-{name}\.timer",
                                             "cmd": "", "label": "scheduled job"})
            self._mask(m.start(), m.end())
        # "a cron to renew certs at 3am daily with /usr/bin/certbot renew": what the job is for, when, then the
        # program with its arguments (words that are no schedule's nor a clause's)
        args = (r"(?:\s+(?!(?:and|or|but|to|at|on|in|every|each|once|twice|from|for|with|via|then|please|as|the|a|an|it|its"
                rf"|{every})\b)(?:--?[a-z][\w-]*(?:=[\w.:/-]+)?|[a-z][\w.-]*)){{0,3}}")
        for m in self._each(rf"\b(?P<job>{job})\s+(?:that\s+|which\s+|to\s+)(?P<what>(?:(?![\d/])[\w'-]+\s+){{1,5}}?)"
                            rf"(?P<when>{SCHEDULE})\s*,?\s+(?:with|via|using|by\s+running|running|calling|through)\s+"
                            rf"(?P<program>{path}{args})"):
            at = calendar(m.group("when"))
            if at is None:
                continue
            self._timer(" ".join(m.group("program").split()), at)
            self._mask(m.start(), m.end())
        # "backups every sunday at 2am via /opt/backup.sh": what the job is for, when, and by which program
        via = r"(?:via|using|by\s+running|running)"
        for m in self._each(rf"(?:\b(?P<job>{job})\s+(?:that\s+|which\s+|to\s+)?{run}|\b(?:runs?|executes?)|\b(?P<verb>schedule)"
                            rf"|(?P<first>{SCHEDULE})\s*,?\s+(?:run|execute)s?"
                            rf"|(?:\b[a-z][\w-]*\s+)?(?P<then>{SCHEDULE})\s*,?\s+{via})\s+{path}(?:\s+to\s+(?:run|be\s+run))?"
                            rf"(?:\s*,?\s+(?P<when>{SCHEDULE}))?"):
            said = m.group("first") or m.group("then") or m.group("when") or m.group("adjective")
            at = calendar(said) if said else None
            found = re.search(path, m.group(0))
            assert found is not None  # the match holds the path
            program = found.group(1)
            if at is None:
                if m.group("job") or m.group("verb") or said:  # a job whose schedule says no calendar event
                    self.spec.notes.append(f"scheduled {program} not applied: " + (
                        f"'{said}' says no calendar event; say when, e.g. 'every night at 2' or 'every 6 hours'"
                        if said else "no schedule said; say when, e.g. 'every night at 2' or 'every 6 hours'"))
                    self._mask(m.start(), m.end())
                continue
            self._timer(program, at)
            self.spec.notes.append(f"{program} is run by a systemd timer (no cron needed); the program itself is "
                                   "not written: put it in the image (the template's additional files)")
            self._mask(m.start(), m.end())
        # "a cron job that runs backup.sh every night": a script named without where it is, which a timer cannot run
        for m in self._each(rf"(?:\b(?P<job>{job})\s+(?:that\s+|which\s+|to\s+)?{run}|\b(?:run|execute)s?)\s+"
                            rf"(?P<file>[\w+-]+\.(?:sh|bash|py|pl|rb|js))\b(?:\s*,?\s+(?P<when>{SCHEDULE}))?"):
            if m.group("job") or m.group("when"):
                when = " ".join((m.group("when") or m.group("adjective") or "every night at 2").split())
                self.spec.notes.append(f"scheduled {m.group('file')} not applied: a timer runs a program by its full "
                                       f"path; say where it is in the image, e.g. 'run /usr/local/bin/{m.group('file')} "
                                       f"{when}'")
                self._mask(m.start(), m.end())
        # "a cron job that renews certs every night": a job said by what it does, with no program to run
        for m in self._each(rf"\b(?P<job>{job})\s+(?:that\s+|which\s+|to\s+)?(?P<what>(?:(?![\d/])[\w'-]+\s+){{1,5}}?)"
                            rf"(?P<when>{SCHEDULE})"):
            what = " ".join(m.group("what").split())
            self.spec.notes.append(f"scheduled job ({what}) not applied: no program named; say which runs, e.g. "
                                   "'run /usr/local/bin/renew.sh every night'")
            self._mask(m.start(), m.end())

    def _boot_commands(self) -> None:
        """"runs /opt/app/run.sh at boot", "a custom systemd service from /opt/app/run.sh at startup": a program
        started at every boot, by a service of its own; the program itself must be in the image, which is said."""
        path = _PROGRAM
        boot = r"(?:at|on|during|after|upon)\s+(?:every\s+|each\s+)?(?:boot|boot-?up|startup|start-?up|power[\s-]?on)"
        service = (r"\b(?:(?:runs?|has|with)\s+)?(?:an?\s+)?(?:custom\s+|own\s+)?(?:systemd\s+)?(?:service|unit|daemon)\s+"
                   r"(?:that\s+|which\s+|to\s+)?(?:runs?|running|starts?|from|for|executing|executes?)\s+")
        for m in self._each(rf"(?:{service}|\b(?:runs?|start|starts|execute|executes|launch|launches)\s+){path}\s+{boot}"
                            rf"|\b{boot}\s*,?\s+(?:it\s+)?(?:runs?|starts?|executes?|launch(?:es)?)\s+{path}"):
            program = m.group(1) or m.group(2)
            self._configure(f"started at boot {program}", {**boot_service_command(f"boot-{_unit_name(program)}", program),
                                                           "setting": f"started at boot {program}"})
            self.spec.notes.append(f"{program} is started at boot by a service of its own; the program itself is not "
                                   "written: put it in the image (the template's additional files)")
            self._mask(m.start(), m.end())

    def _timer(self, program: str, at: Calendar) -> None:
        """``program`` (its path, then any arguments) run at ``at`` by a timer named after the path, and said."""
        path = program.split()[0]
        self._configure(f"scheduled {program} {at.event}", {**timer_command(f"run-{_unit_name(path)}", program, at.event),
                                                             "setting": f"scheduled {path}"})
        self._dated(at, f"scheduled {program}: ")
        self.spec.notes += [f"scheduled {program}: {note}" for note in at.notes]

    def _dated(self, at: Calendar, prefix: str) -> None:
        """The schedule just written, with the part a default filled and the note that says so: an edit keeps the
        earlier schedule's own part instead, and takes the note back (system_edits.configurations)."""
        self.spec.configurations[-1].update(calendar=at.event, defaulted=at.defaulted,
                                            default_note=prefix + at.default_note if at.default_note else "")

    def _rescheduled(self) -> None:
        """"make it weekly on sundays instead", "run it at 4am": a new schedule for the one the image has (a
        scheduled reboot or job), said by a pronoun; applied only where the template has exactly one."""
        what = r"(?:it|that|this|the\s+(?:job|timer|schedule|reboot|task|cron\s*job))"
        for m in self._each(rf"\b(?:make|run|schedule|reschedule|move|change|set|switch|have|let)\s+{what}\s+"
                            rf"(?:to\s+)?(?:(?:run|happen|be|go)\s+)?(?:(?:to|for)\s+)?(?P<when>{SCHEDULE})"
                            r"(?:\s+instead)?(?![\w/.-])"):
            at = calendar(m.group("when"))
            if at is None:
                continue
            self.spec.configurations.append({
                "cmd": "", "reschedule": True, "replaces": r"OnCalendar=", "label": f"schedule {at.event}",
                "edits_only": "the image has no scheduled reboot or job to give this schedule; say what runs, e.g. "
                              "'reboot every sunday at 4' or 'run /opt/x.sh every night'"})
            self._dated(at, "schedule: ")
            self.spec.notes += [f"schedule: {note}" for note in at.notes]
            self._mask(m.start(), m.end())

    def _scheduled(self, setting: Setting, w: str) -> None:
        """A recurring setting and when: "reboot it every sunday at 4", "a nightly reboot at 3am", "at 2am every
        day the machine reboots". What the reading chose that was not said (midnight, Monday for weekly) is noted."""
        what = r"(?:\s+(?:it|itself|the\s+(?:machine|system|box|device|server|node|image|computer)))?"
        subject = r"(?:(?:it|the\s+(?:machine|system|box|device|server|node|image|computer))\s+)?"
        for m in self._each(rf"(?:\b({SCHEDULE})\s+{subject})?{w}{what}(?:\s*,?\s+({SCHEDULE}))?"):
            undo = re.search(rf"\b{UNDO}\s+(?:(?:the|any|its|more)\s+)*$", self.work[:m.start()])
            if undo:
                self._undo(setting)  # "stop the nightly reboot", "no more weekly reboots"
                self._mask(undo.start(), m.end())
                continue
            said = " ".join(g for g in (m.group(1), m.group(2)) if g)
            at = calendar(said) if said else None
            if at is None:
                continue  # "reboot" alone, or after updates: no schedule, and nothing written
            self._write(setting, at.event)
            self._dated(at, f"{setting.name}: ")
            self.spec.notes += [f"{setting.name}: {note}" for note in at.notes]
            self._mask(m.start(), m.end())


def _unit_name(program: str) -> str:
    """A unit name for a program's timer: its file name without the extension, in a unit name's letters."""
    base = program.rstrip("/").rsplit("/", 1)[-1].rsplit(".", 1)[0].lower()
    return re.sub(r"[^a-z0-9-]+", "-", base).strip("-") or "job"


__all__ = ["UNDO", "SchedulePhrases"]

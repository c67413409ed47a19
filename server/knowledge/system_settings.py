"""System settings a request names in words with a value (resources/system_settings.yaml): CPU isolation, huge
pages, IP forwarding, swappiness, the time zone, switches such as IPv6 or SMT off. What each writes: kernel
parameters, sysctl lines or a configuration command, with the packages that command needs.

The request parser reads the words and values here, the composer writes what they give, so a new setting is a
data change. Time zone names are checked against the tz database (the ``tzdata`` dependency carries it on every
platform).
"""

from __future__ import annotations

import dataclasses
import functools
import re
import shlex
import zoneinfo
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core.paths import resource_text
from ..core.yamlsafe import load_mapping

RESOURCE = "system_settings.yaml"
VALUE_KINDS = ("cpus", "count", "size", "zone", "address", "schedule", "layout", "locale", "duration", "text", "on",
               "off", "none")


@dataclass(frozen=True)
class Setting:
    name: str
    words: tuple[str, ...]
    value: str  # one of VALUE_KINDS
    cmdline: tuple[str, ...] = ()
    sysctl: str = ""  # one "key = value" line
    command: str = ""
    replaces: str = ""
    packages: tuple[str, ...] = ()
    low: int | None = None
    high: int | None = None
    reason: str = ""  # why a setting of value "none" is not written
    default: str = "the kernel's default"  # whose default the other direction of a switch is
    switched_only: bool = False  # read only beside a switch word ("no swap"), never as the bare word
    valued_only: bool = False  # read only with its value: the words alone name something else ("a dns server")
    addresses_only: bool = False  # value address: IP addresses only, never a host name (resolved's DNS=)
    locked_words: tuple[str, ...] = ()  # words of the switch off read only with a verb of locking ("lock root")
    several: bool = False  # value address: several may be said ("ntp servers a and b"), written space-separated
    same_cpus: tuple[str, ...] = ()  # kernel parameters naming the same CPUs (value cpus)
    other_cpus: tuple[str, ...] = ()  # kernel parameters naming the other CPUs
    with_address: str = ""  # the setting these words name when an address follows them (a destination)
    packages_named: tuple[str, ...] = ()  # packages among the words, wanted too when they are read with a value
    example: str = ""  # the setting said with a value, for the message when the words come without one
    writes_as: str = ""  # the setting whose writing this one's words ask for ("a router": ip forwarding)
    size_each_mib: int | None = None  # value count: a size said for it counts units of this many MiB

    runs: tuple[str, str, bool] | None = None  # value schedule: (timer unit, program, persistent)

    def configuration(self, value: str) -> dict[str, str] | None:
        """The configuration entry that writes this setting at ``value`` (None for kernel parameters only):
        its command, the name of the setting written (the one it writes as, if any), and the pattern of the
        commands it replaces (an earlier value)."""
        name = self.writes_as or self.name
        if self.sysctl:
            return sysctl_configuration(self.sysctl.format(value=value), name.replace(" ", "-"), name)
        if self.runs:
            unit, program, persistent = self.runs
            return {**timer_command(unit, program, value, persistent), "setting": name}
        if self.command:
            console = keyboard_layouts().get(value, ("", value))[1] if self.value == "layout" else ""
            source = value.replace(".UTF-8", "") if self.value == "locale" else ""  # de_DE.UTF-8@euro -> de_DE@euro
            short = value.removesuffix("iB") if self.value == "size" else ""  # 500MiB -> 500M (journald's units)
            seconds = span_seconds(value) if self.value == "duration" else ""  # 5min -> 300 (a shell's TMOUT)
            quoted = shlex.quote(value) if self.value == "text" else ""  # a text said, as one shell word
            return {"cmd": self.command.format(value=value, console=console, source=source, short=short,
                                               seconds=seconds, quoted=quoted),
                    "setting": name,
                    "replaces": self.replaces.replace("{value}", re.escape(value)).replace("{source}", re.escape(source))}
        return None

    def parameters(self, value: str) -> list[str]:
        return [p.format(value=value) for p in self.cmdline]


_SPAN_SECONDS = {"s": 1, "min": 60, "h": 3600, "day": 86400, "week": 604800, "month": 2630016, "year": 31557600}


def span_seconds(span: str) -> str:
    """A systemd time span of one unit ("5min", "2h") in seconds ("300"), as systemd.time(7) counts a month and
    a year; "" when it is not one."""
    m = re.fullmatch(r"(\d+)([a-z]+)", span)
    return str(int(m.group(1)) * _SPAN_SECONDS[m.group(2)]) if m and m.group(2) in _SPAN_SECONDS else ""


def sysctl_configuration(line: str, file: str, setting: str) -> dict[str, str]:
    """The command that writes one sysctl ``line`` ("vm.swappiness = 10") to /etc/sysctl.d/90-<file>.conf, with
    the pattern of the commands that set the same key (which it replaces)."""
    key = line.split("=", 1)[0].strip()
    return {"cmd": f"echo '{line}' > /etc/sysctl.d/90-{file}.conf", "setting": setting,
            "replaces": rf"{re.escape(key)}\s*="}


def timer_command(unit: str, program: str, event: str, persistent: bool = True) -> dict[str, str]:
    """The command that runs ``program`` at the calendar ``event`` (systemd.time(7)): a oneshot service and the
    timer that starts it (systemd.timer(5)), written to /etc/systemd/system and enabled offline, with the pattern
    of that command (which it replaces). ``persistent``: a run missed while the machine was off is made up at boot."""
    path = f"/etc/systemd/system/{unit}"
    service = f"[Unit]\\nDescription=Run {program}\\n\\n[Service]\\nType=oneshot\\nExecStart={program}\\n"
    timer = (f"[Unit]\\nDescription=Run {program} on schedule\\n\\n[Timer]\\nOnCalendar={event}\\n"
             f"Persistent={'true' if persistent else 'false'}\\n\\n[Install]\\nWantedBy=timers.target\\n")
    return {"cmd": f"printf '{service}' > {path}.service && printf '{timer}' > {path}.timer "
                   f"&& systemctl enable {unit}.timer",
            "replaces": rf"{re.escape(unit)}\.timer"}


def boot_service_command(unit: str, program: str) -> dict[str, str]:
    """The command that runs ``program`` at every boot, once the network is up: a service of the simple type (it may
    run on or end), enabled offline for multi-user.target, with the pattern of that command (which it replaces)."""
    path = f"/etc/systemd/system/{unit}.service"
    service = (f"[Unit]\\nDescription=Run {program} at boot\\nWants=network-online.target\\nAfter=network-online.target"
               f"\\n\\n[Service]\\nType=simple\\nExecStart={program}\\n\\n[Install]\\nWantedBy=multi-user.target\\n")
    return {"cmd": f"printf '{service}' > {path} && systemctl enable {unit}.service",
            "replaces": rf"/etc/systemd/system/{re.escape(unit)}\.service"}


def update_reboot_configuration(time: str | None) -> dict[str, Any]:
    """The command that lets the image's automatic updater reboot when an update needs it, at ``time`` (HH:MM)
    where the updater takes one (system_settings.yaml update_reboot)."""
    raw = _raw().get("update_reboot") or {}
    return {"cmd": " ".join(str(raw.get("command") or "").split()).replace("{time}", time or "now"),
            "replaces": str(raw.get("replaces") or ""), "setting": "reboot after updates",
            "label": "reboot after updates when needed" + (f", at {time}" if time else "")}


@functools.lru_cache(maxsize=1)
def tuned_profiles() -> tuple[str, ...]:
    """tuned's profiles by name (system_settings.yaml tuned_profile)."""
    return tuple(str(p).lower() for p in (_raw().get("tuned_profile") or {}).get("profiles") or ())


def tuned_profile_configuration(profile: str) -> dict[str, Any]:
    """The command that makes ``profile`` tuned's active one (system_settings.yaml tuned_profile)."""
    raw = _raw().get("tuned_profile") or {}
    return {"cmd": " ".join(str(raw.get("command") or "").split()).replace("{profile}", profile),
            "replaces": str(raw.get("replaces") or ""), "setting": "tuned profile",
            "packages": [str(p) for p in raw.get("packages") or ()]}


def user_sshd_configuration(setting: str, user: str) -> dict[str, Any]:
    """The sshd_config lines of ``setting`` for ``user`` alone: a Match block appended to the end of sshd_config,
    where nothing follows it (a Match block lasts to the end of its file, and the drop-ins are included at the top:
    one there would make the main file's own lines conditional), with the pattern of that user's block."""
    lines = [str(line) for line in (_raw().get("settings") or {}).get(setting, {}).get("sshd") or ()]
    text = "".join(f"    {line}\\n" for line in lines).replace("%", "%%")
    return {"cmd": f"printf '\\nMatch User {user}\\n{text}' >> /etc/ssh/sshd_config",
            "replaces": rf"Match User {re.escape(user)}\\n", "setting": f"{setting} for {user}",
            "packages": ["openssh-server"]}


@dataclass(frozen=True)
class NetworkMountKind:
    """How a kind of network share is mounted (system_settings.yaml network_mounts)."""

    type: str  # the mount type: nfs, cifs
    client: str  # the package that mounts it, by Debian's name where the families differ
    options: str
    guest_options: str = ""  # with no credentials ("a guest share"), where the protocol has them
    secret: str = ""  # where credentials go, said with the mount


@functools.lru_cache(maxsize=1)
def network_mount_kinds() -> Mapping[str, NetworkMountKind]:
    fields = {f.name for f in dataclasses.fields(NetworkMountKind)}
    return {str(k): NetworkMountKind(**{f: " ".join(str(v).split()) for f, v in dict(raw).items() if f in fields})
            for k, raw in (_raw().get("network_mounts") or {}).items()}


def mount_unit_name(where: str) -> str:
    """systemd's unit name for a mount point (systemd-escape --path --suffix=mount): "/mnt/nas-1" is
    mnt-nas\\x2d1.mount, "/" is -.mount."""
    path = where.strip("/")
    if not path:
        return "-.mount"
    escaped = "".join(c if c.isascii() and (c.isalnum() or c in ":_.") else "-" if c == "/" else
                      "".join(f"\\x{b:02x}" for b in c.encode()) for c in re.sub(r"/+", "/", path))
    return ("\\x2e" + escaped[1:] if escaped.startswith(".") else escaped) + ".mount"


def network_mount_configuration(kind: NetworkMountKind, source: str, where: str, guest: bool = False) -> dict[str, Any]:
    """The command that mounts the share ``source`` at ``where`` at every boot: a mount unit in
    /etc/systemd/system, enabled offline (systemd.mount(5)), with the client package and the pattern of the
    commands that mounted something there before (which it replaces)."""
    unit = mount_unit_name(where)
    options = kind.guest_options if guest and kind.guest_options else kind.options
    text = (f"[Unit]\\nDescription={kind.type} share {source}\\nWants=network-online.target\\n"
            f"After=network-online.target\\n\\n[Mount]\\nWhat={source}\\nWhere={where}\\nType={kind.type}\\n"
            f"Options={options}\\n\\n[Install]\\nWantedBy=remote-fs.target\\n")
    return {"cmd": f"mkdir -p '{where}' && printf '{text}' > '/etc/systemd/system/{unit}' && systemctl enable '{unit}'",
            "replaces": rf"/etc/systemd/system/{re.escape(unit)}'", "packages": [kind.client],
            "label": f"network share {source} at {where}", "setting": f"network share at {where}"}


def sshd_configuration(lines: tuple[str, ...], file: str, setting: str) -> dict[str, str]:
    """The command that writes sshd_config ``lines`` to the drop-in /etc/ssh/sshd_config.d/20-<file>.conf, with
    the pattern of that command (which it replaces). It also puts the Include of that directory at the top of
    sshd_config where a family's own file lacks it, so the drop-in is read everywhere: sshd takes the first value
    it reads, so the top wins over the file's own lines."""
    text = "".join(line.replace("%", "%%") + "\\n" for line in lines)  # printf's format: "%u" is sshd's, not printf's
    return {"cmd": f"mkdir -p /etc/ssh/sshd_config.d && printf '{text}' > /etc/ssh/sshd_config.d/20-{file}.conf "
                   "&& (grep -q '^Include /etc/ssh/sshd_config.d/' /etc/ssh/sshd_config "
                   "|| sed -i '1i Include /etc/ssh/sshd_config.d/*.conf' /etc/ssh/sshd_config)",
            "setting": setting, "replaces": rf"sshd_config\.d/20-{re.escape(file)}\.conf"}


def section(name: str) -> Mapping[str, Any]:
    """One top-level section of the bundled file (empty when it has none), for the modules that read their own."""
    found = _raw().get(name)
    return found if isinstance(found, Mapping) else {}


@functools.lru_cache(maxsize=1)
def _raw() -> Mapping[str, Any]:
    """The bundled file, read and parsed once for the settings, the kernel modules and the country words."""
    data: Mapping[str, Any] = load_mapping(resource_text(RESOURCE)).data
    return data


def _with_copulas(words: Iterable[str]) -> tuple[str, ...]:
    """A setting's words, and those of a thing put somewhere or made something ("/tmp as tmpfs", "ssh on port",
    "logs on disk") said with a verb of being as well: "/tmp is a tmpfs", "ssh should be on port", "logs are on
    disk", "/tmp mounted as tmpfs"."""
    out: dict[str, None] = {}
    for word in words:
        out[word] = None
        found = re.fullmatch(r"(\S+) (as|on|in) (.+)", word)
        if found:
            thing, prep, what = found.groups()
            for verb in ("is", "are", "should be", "must be"):  # "/tmp is a tmpfs", "ssh is on port"
                out[f"{thing} {verb} {what}" if prep == "as" else f"{thing} {verb} {prep} {what}"] = None
            for verb in ("mounted", "kept"):  # "/tmp mounted as tmpfs"
                out[f"{thing} {verb} {prep} {what}"] = None
    return tuple(out)


@functools.lru_cache(maxsize=1)
def load_settings() -> Mapping[str, Setting]:
    """The bundled settings by name, parsed once."""
    raw = _raw()
    out: dict[str, Setting] = {}
    for name, spec in (raw.get("settings") or {}).items():
        value = str(spec.get("value"))
        if value not in VALUE_KINDS:
            raise ValueError(f"{RESOURCE}: setting {name!r} has value {value!r}; use one of {', '.join(VALUE_KINDS)}")
        out[str(name)] = Setting(
            name=str(name), words=_with_copulas(str(w).lower() for w in spec.get("words") or ()), value=value,
            cmdline=tuple(str(p) for p in spec.get("cmdline") or ()),
            sysctl=str(spec.get("sysctl") or ""), command=str(spec.get("command") or ""),
            replaces=str(spec.get("replaces") or ""), packages=tuple(str(p) for p in spec.get("packages") or ()),
            low=spec.get("min"), high=spec.get("max"), reason=str(spec.get("reason") or ""),
            default=str(spec.get("default") or Setting.default), switched_only=bool(spec.get("switched_only")),
            valued_only=bool(spec.get("valued_only")), addresses_only=bool(spec.get("addresses_only")),
            locked_words=tuple(str(w).lower() for w in spec.get("locked_words") or ()),
            several=bool(spec.get("several")),
            same_cpus=tuple(str(p) for p in spec.get("same_cpus") or ()),
            other_cpus=tuple(str(p) for p in spec.get("other_cpus") or ()),
            with_address=str(spec.get("with_address") or ""),
            packages_named=tuple(str(p) for p in spec.get("packages_named") or ()),
            example=str(spec.get("example") or ""),
            size_each_mib=int(spec["size_each_mib"]) if spec.get("size_each_mib") else None,
            runs=(str(spec["runs"]["unit"]), str(spec["runs"]["program"]), bool(spec["runs"].get("persistent", True)))
            if isinstance(spec.get("runs"), dict) else None)
        if spec.get("sshd"):  # sshd_config lines: their drop-in is the setting's command
            entry = sshd_configuration(tuple(str(line) for line in spec["sshd"]), str(name).replace(" ", "-"),
                                       str(name))
            # a command of its own goes before it ("ssh banner": the banner's file, then sshd's Banner line)
            own = out[str(name)].command
            out[str(name)] = dataclasses.replace(out[str(name)], command=f"{own} && {entry['cmd']}" if own else entry["cmd"],
                                                 replaces=out[str(name)].replaces or entry["replaces"])
    for name, spec in (raw.get("settings") or {}).items():
        if spec.get("with_address") and out.get(str(spec["with_address"]), Setting("", (), "")).value != "address":
            raise ValueError(f"{RESOURCE}: setting {name!r} names {spec['with_address']!r} with an address, "
                             "which is no setting taking one")
        if spec.get("writes_as"):
            same = out.get(str(spec["writes_as"]))
            if same is None:
                raise ValueError(f"{RESOURCE}: setting {name!r} writes as {spec['writes_as']!r}, which is no setting")
            out[str(name)] = dataclasses.replace(out[str(name)], cmdline=same.cmdline, sysctl=same.sysctl,
                                                 command=same.command, replaces=same.replaces,
                                                 packages=same.packages, writes_as=same.name)
    return out


@functools.lru_cache(maxsize=1)
def kernel_modules() -> Mapping[str, str]:
    """The words people use for a kernel module, each to the module's name (system_settings.yaml), keyed by
    :func:`module_key`."""
    raw = _raw()
    return {module_key(word): str(module) for module, words in (raw.get("kernel_modules") or {}).items()
            for word in [str(module), *(str(w) for w in words or ())]}


@functools.lru_cache(maxsize=1)
def keyboard_layouts() -> Mapping[str, tuple[str, str]]:
    """Every word for a keyboard layout (its XKB name among them), lower case, to the layout's XKB name and the
    console keymap that matches it (system_settings.yaml ``keyboard_layouts``)."""
    out: dict[str, tuple[str, str]] = {}
    for xkb, spec in (_raw().get("keyboard_layouts") or {}).items():
        pair = (str(xkb), str(spec["console"]))
        for word in [str(xkb), *(str(w) for w in spec.get("words") or ())]:
            out[module_key(word)] = pair
    return out


def keyboard_layout_named(text: str) -> str | None:
    """The XKB layout ``text`` names ("german" -> "de", "uk" -> "gb"), or None."""
    found = keyboard_layouts().get(module_key(text))
    return found[0] if found else None


@functools.lru_cache(maxsize=1)
def _locales() -> tuple[Mapping[str, str], Mapping[str, str]]:
    """glibc's UTF-8 locales by their lower-case source name, and the words for a locale to its source name
    (system_settings.yaml ``glibc_locales``, ``locale_words``)."""
    raw = _raw()
    sources = {name.lower(): name for name in str(raw.get("glibc_locales") or "").split()}
    words = {module_key(str(word)): str(source) for source, said in (raw.get("locale_words") or {}).items()
             for word in said or ()}
    unknown = sorted(set(words.values()) - set(sources.values()))
    if unknown:
        raise ValueError(f"{RESOURCE}: locale_words names {', '.join(unknown)}, which glibc_locales lacks")
    return sources, words


_LOCALE_NAME = re.compile(r"([a-z]{2,3})(?:_([a-z]{2}))?(?:\.utf-?8)?(@[a-z]+)?", re.I)


def locale_named(text: str, by_code_only: bool = False) -> str | None:
    """The UTF-8 locale ``text`` names, as LANG takes it: by its name in any case, with or without its charset
    ("de_de.utf8", "en_GB" -> en_GB.UTF-8, "ca_ES@valencia" -> ca_ES.UTF-8@valencia, "C.UTF-8"), or (unless
    ``by_code_only``) by a language or place ("german" -> de_DE.UTF-8); None for anything else."""
    sources, words = _locales()
    said = text.strip()
    if said.lower() in ("c.utf-8", "c.utf8"):
        return "C.UTF-8"
    m = _LOCALE_NAME.fullmatch(said)
    if m is not None and (m.group(2) or "." in said or "@" in said):
        source = sources.get(f"{m.group(1)}_{m.group(2)}{m.group(3) or ''}".lower() if m.group(2)
                             else f"{m.group(1)}{m.group(3) or ''}".lower())
        if source is not None:
            base, at, modifier = source.partition("@")
            return f"{base}.UTF-8{at}{modifier}"
    if by_code_only:
        return None
    source = words.get(module_key(said))
    return f"{source}.UTF-8" if source else None


@functools.lru_cache(maxsize=1)
def firewall_services() -> Mapping[str, str]:
    """Services a firewall lets through by name, each to its port ("https" -> "443/tcp")."""
    return {str(k).lower(): str(v) for k, v in (_raw().get("firewall_services") or {}).items()}


# An entry of RequestSpec.open_ports let in from some addresses alone: "ssh from 10.0.0.0/8"
FROM = " from "


def port_of(what: str) -> tuple[str, str]:
    """(number or range, protocol) of a service name or a port entry: "ssh" -> ("22", "tcp")."""
    number, _, proto = firewall_services().get(what, what).partition("/")
    return number, proto or "tcp"


@functools.lru_cache(maxsize=1)
def firewall_traffic() -> Mapping[str, tuple[str, ...]]:
    """The services a firewall lets in for a service's name ("https" -> ("https",)) or a kind of traffic ("web" ->
    ("http", "https"))."""
    own = {name: (name,) for name in firewall_services()}
    return {**own, **_served("firewall_traffic")}


@functools.lru_cache(maxsize=1)
def firewall_software() -> Mapping[str, tuple[str, ...]]:
    """What each software's word has a firewall let in, by service name or port ("nginx" -> ("http", "https"),
    "grafana" -> ("3000/tcp",)), with the names of firewall_traffic."""
    return {**firewall_traffic(), **_served("firewall_software")}


@functools.lru_cache(maxsize=1)
def listening_as_installed() -> frozenset[str]:
    """The packages of firewall_software that serve the network as installed (no configuration of their own)."""
    return frozenset(str(p) for p in _raw().get("listening_as_installed") or ())


def _served(key: str) -> dict[str, tuple[str, ...]]:
    return {module_key(str(k)): tuple(str(v).lower() for v in vs) for k, vs in (_raw().get(key) or {}).items()}


@functools.lru_cache(maxsize=1)
def cpu_governors() -> tuple[str, ...]:
    """The kernel's CPU frequency governors by name (system_settings.yaml cpu_governors)."""
    return tuple(str(g).lower() for g in _raw().get("cpu_governors") or ())


def module_key(words: str) -> str:
    """Words for a module as they are looked up: lower case, dashes, underscores and spaces alike."""
    return " ".join(re.split(r"[\s_-]+", words.strip().lower()))


@functools.lru_cache(maxsize=1)
def _zones() -> Mapping[str, str]:
    """Every tz database name by its lower-case spelling, and by its last part where that is one zone's alone
    ("berlin", "new york" -> Europe/Berlin, America/New_York)."""
    names = sorted(zoneinfo.available_timezones())
    by_name = {n.lower(): n for n in names}
    by_place: dict[str, set[str]] = {}
    for n in names:
        if "/" in n and not n.startswith(("Etc/", "SystemV/", "posix/", "right/")):
            by_place.setdefault(n.rsplit("/", 1)[1].lower().replace("_", " "), set()).add(n)
    places = {place: next(iter(zones)) for place, zones in by_place.items() if len(zones) == 1}
    return {**places, **by_name, **_country_zones()}  # a country by its name: its zone's canonical name ("japan")


@functools.lru_cache(maxsize=1)
def _country_zones() -> Mapping[str, str]:
    """Countries by their names (the tz database's iso3166.tab, and the adjectives in system_settings.yaml
    ``country_words``), lower case, to the country's zone: its only one, or the one zone.tab says covers most of
    it or its mainland ("most of Germany": Europe/Berlin). A country with several zones and no main one is left
    out, so its zone must be named."""
    try:
        from importlib.resources import files

        base = files("tzdata.zoneinfo")
        countries = base.joinpath("iso3166.tab").read_text(encoding="utf-8")
        table = base.joinpath("zone.tab").read_text(encoding="utf-8")
    except (ModuleNotFoundError, OSError):  # no tzdata package: the system's zones still name places
        return {}
    by_code: dict[str, list[tuple[str, str]]] = {}
    for line in table.splitlines():
        fields = line.split("\t")
        if len(fields) >= 3 and not line.startswith("#"):
            by_code.setdefault(fields[0], []).append((fields[2], fields[3] if len(fields) > 3 else ""))
    main: dict[str, str] = {}
    for code, zones in by_code.items():
        chosen = [z for z, note in zones if re.search(r"\bmost\b|\bmainland\b", note, re.I)]
        if len(zones) == 1 or len(chosen) == 1:
            main[code] = zones[0][0] if len(zones) == 1 else chosen[0]
    names = {fields[1].lower(): fields[0] for line in countries.splitlines() if not line.startswith("#")
             for fields in [line.split("\t")] if len(fields) == 2}
    raw = _raw()
    names |= {str(word).lower(): str(code) for word, code in (raw.get("country_words") or {}).items()}
    return {name: main[code] for name, code in names.items() if code in main}


def zone_named(text: str) -> str | None:
    """The tz database name ``text`` spells ("europe/berlin", "UTC", "New York"), or None."""
    key = " ".join(text.replace("_", " ").split()).lower()
    return _zones().get(key) or _zones().get(key.replace(" ", "_"))

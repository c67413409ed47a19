"""Did a template do what was asked? The one check, used at run time (the agent's enforcement and its
honesty notes), in tests and in the benchmark.

A wanted-facts mapping names what must hold:

* target: ``os``, ``dist``, ``arch``, ``type`` (imageType);
* packages: ``has`` (must be installed), ``lacks`` (must not be);
* ``hostname``; ``version`` (image.version); ``size`` (disk.size, compared in MiB) and ``min_size``;
* partitions: ``mount`` (a mount point that must exist), ``no_mount`` (one that must not), ``sized`` (mount
  point -> the size its partition must have, compared in MiB);
* ``cmdline`` (a kernel command-line fragment), ``immutable`` (bool), ``user`` (user names), ``config_has`` (text
  some configuration command must contain),
  ``artifact`` (artifact types such as qcow2), ``no_enable`` (services no configuration may enable), ``opened``
  (ports or services a firewall command must let in), ``addressed`` (static addresses a configuration command must
  give: interface, address and gateway, each unset or "" when any will do).

Facts about the answer rather than the template (``unsupported``: the reply names something as
unsupported; ``unchanged``: no revision was made) are checked by :func:`unmet_reply`.
"""

from __future__ import annotations

import re
from typing import Any

from ..knowledge import nft_ruleset
from ..knowledge.package_names import versioned_build
from ..knowledge.sizes import parse_casual, template_mib
from ..knowledge.static_network import StaticAddress, read_all
from ..knowledge.system_settings import firewall_services
from . import cpu_lists, module_lists
from .coherence import written_commands
from .consoles import SERIAL_CONSOLE, serial_port
from .firewall_sources import lets_in_from, service_names, sourced_let_in, split_source
from .layout import GPT_TAIL_MIB
from .request_spec import REFERRED_USER


def _wanted_mib(value: Any) -> int | None:
    """A wanted size in MiB, in a template's units or any a person writes ("1TiB", which templates spell 1024GiB)."""
    return template_mib(value) or parse_casual(str(value))


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple | set) else [value]


def installed(doc: dict[str, Any]) -> set[str]:
    """Every package the template installs (system and kernel lists)."""
    system = doc.get("systemConfig") or {}
    names = {str(p) for p in (system.get("packages") or [])}
    names |= {str(p) for p in ((system.get("kernel") or {}).get("packages") or [])}
    return names


def enabled_services(doc: dict[str, Any]) -> set[str]:
    """Units that ``systemctl enable`` lines in systemConfig.configurations turn on (without .service)."""
    from ..knowledge.stems import service_spans

    configs = (doc.get("systemConfig") or {}).get("configurations")
    return {unit for entry in (configs if isinstance(configs, list) else []) if isinstance(entry, dict)
            for _s, _e, unit in service_spans(str(entry.get("cmd", "")))}


def unmet(doc: dict[str, Any], want: dict[str, Any]) -> list[str]:
    """What of ``want`` the template ``doc`` does not hold, in words; empty when everything holds."""
    target = doc.get("target") or {}
    system = doc.get("systemConfig") or {}
    disk = doc.get("disk") or {}
    packages = installed(doc)
    problems: list[str] = []
    for key, field in (("dist", "dist"), ("arch", "arch"), ("type", "imageType"), ("os", "os")):
        if key in want and target.get(field) != want[key]:
            problems.append(f"{field} is {target.get(field)!r}, wanted {want[key]!r}")
    problems += [f"package {p} missing" for p in _as_list(want.get("has"))
                 if p not in packages and not any(versioned_build(str(p), q) for q in packages)]
    problems += [f"package {p} still present" for p in _as_list(want.get("lacks")) if p in packages]
    if "hostname" in want and system.get("hostname") != want["hostname"]:
        problems.append(f"hostname is {system.get('hostname')!r}, wanted {want['hostname']!r}")
    version = (doc.get("image") or {}).get("version")
    if "version" in want and str(version) != str(want["version"]):
        problems.append(f"image version is {version!r}, wanted {want['version']!r}")
    have_mib = template_mib(disk.get("size"))
    if "size" in want and have_mib != _wanted_mib(want["size"]):
        problems.append(f"disk size is {disk.get('size')!r}, wanted {want['size']!r}")
    if "min_size" in want and (have_mib or 0) < (_wanted_mib(want["min_size"]) or 0):
        problems.append(f"disk size is {disk.get('size')!r}, wanted at least {want['min_size']!r}")
    mounts = {str(p.get("mountPoint")) for p in disk.get("partitions") or [] if isinstance(p, dict)}
    mounts |= {"swap" for p in disk.get("partitions") or [] if isinstance(p, dict)
               and ("swap" in str(p.get("type", "")) or p.get("fsType") == "swap")}
    problems += [f"no partition mounted at {m}" for m in _as_list(want.get("mount")) if m not in mounts]
    problems += [f"a partition is still mounted at {m}" for m in _as_list(want.get("no_mount")) if m in mounts]
    for mount, size in (want.get("sized") or {}).items():
        part = next((p for p in disk.get("partitions") or [] if isinstance(p, dict)
                     and (p.get("mountPoint") == mount or mount == "/" and p.get("id") in ("rootfs", "root"))), None)
        span = part_mib(part, have_mib) if part is not None else None
        if span != _wanted_mib(size):
            problems.append(f"partition {mount} is {'missing' if part is None else f'{span} MiB'}, wanted {size}")
    cmdline = str((system.get("kernel") or {}).get("cmdline", ""))
    arch = str((doc.get("target") or {}).get("arch") or "")
    serial = f"console={serial_port(arch)}"  # a serial console said without a device: that port, at any speed
    problems += [f"kernel cmdline still has {c}" for c in _as_list(want.get("no_cmdline")) if c in cmdline.split()]
    problems += [f"kernel cmdline lacks {serial if c == SERIAL_CONSOLE else c}" for c in _as_list(want.get("cmdline"))
                 if (serial if c == SERIAL_CONSOLE else c) not in cmdline
                 and not cpu_lists.names_cpus(cmdline.split(), str(c))
                 and not module_lists.listed(cmdline.split(), str(c))]
    if "immutable" in want and bool((system.get("immutability") or {}).get("enabled")) != want["immutable"]:
        problems.append(f"immutability is not {want['immutable']}")
    written = written_commands(system)
    problems += [f"port {p} not let in by the firewall" for p in _as_list(want.get("opened")) if not lets_in(written, p)]
    users = {str(u.get("name")) for u in system.get("users") or [] if isinstance(u, dict)}
    problems += [f"no user {u}" for u in _as_list(want.get("user")) if u not in users]
    types = {str(a.get("type")) for a in (disk.get("artifacts") or []) if isinstance(a, dict)}
    problems += [f"no {a} artifact" for a in _as_list(want.get("artifact")) if a not in types]
    configs = system.get("configurations")
    commands = {str(c.get("cmd")) for c in (configs if isinstance(configs, list) else []) if isinstance(c, dict)}
    problems += [f"no configuration command `{c}`" for c in _as_list(want.get("config")) if c not in commands]
    problems += [f"no configuration command with `{t}`" for t in _as_list(want.get("config_has"))
                 if not any(t in c for c in commands)]
    statics = read_all(commands)
    problems += [f"no {_described(w)}"
                 for w in _as_list(want.get("addressed")) if not any(_gives(s, w) for s in statics)]
    services = enabled_services(doc)
    problems += [f"service {s} is still enabled" for s in _as_list(want.get("no_enable")) if s in services]
    return problems


def _described(wanted: dict[str, str]) -> str:
    return StaticAddress(*(str(wanted.get(part) or "") for part in ("interface", "address", "gateway"))).describe()


def _gives(static: StaticAddress, wanted: dict[str, str]) -> bool:
    """Whether ``static`` is what was wanted; an address wanted as its prefix length alone ("/16") is any host's."""
    return all(not wanted.get(part) or getattr(static, part) == wanted[part]
               or (part == "address" and wanted[part].startswith("/") and static.address.endswith(wanted[part]))
               for part in ("interface", "address", "gateway"))


def part_mib(part: dict, disk_mib: int | None) -> int | None:
    """A partition's size in MiB from its start and end (an end of "0" is the end of a disk of ``disk_mib``, less
    the backup GPT's tail)."""
    start, end = template_mib(part.get("start")), part.get("end")
    stop = disk_mib - GPT_TAIL_MIB if disk_mib and str(end) in ("0", "") else template_mib(end)
    return stop - start if start is not None and stop is not None else None


def want_from_spec(spec: Any, dist: str | None = None, arch: str | None = None) -> dict[str, Any]:
    """The wanted facts a parsed request states (server.composer.request_spec.RequestSpec), in the names the
    target ``dist`` and ``arch`` (the spec's when not given) use, so the run-time check and the benchmark judge a
    template the same way."""
    from ..knowledge.loader import load_capabilities
    from ..knowledge.request_words import load_request_words

    caps = load_capabilities()
    where = dist or spec.dist or spec.os or ""
    family = caps.families.get(caps.family_of(where) or "")
    pkg_type = family.pkg_type if family is not None else "deb"
    arch = arch or spec.arch or "x86_64"

    def local(name: str) -> str | None:
        # "linux-headers" is linux-headers-arm64 on a Debian arm64 image: the family's name, then the arch's
        named = caps.translate_package(name, where) if where else name
        return (caps.rename_for_arch(named, pkg_type, arch) or named) if named else named

    want: dict[str, Any] = {}
    for key, attr in (("dist", "dist"), ("arch", "arch"), ("type", "image_type"), ("hostname", "hostname"),
                      ("size", "disk_size"), ("version", "image_version")):
        if getattr(spec, attr, None):
            want[key] = getattr(spec, attr)
    configurations = [c for c in getattr(spec, "configurations", None) or [] if not c.get("remove")]
    needed = [p for c in configurations for p in c.get("packages") or ()]
    has = list(dict.fromkeys(n for n in (local(p) for p in [*spec.add_packages, *needed]) if n))
    lacks = [n for p in spec.remove_packages for n in {p, local(p)} if n and n not in has]
    # A group taken out: its packages here, and its own kernel parameters, switched off where it has a switch.
    removed = [g for g in spec.remove_groups if g in caps.groups] if where else []
    lacks += [n for g in removed for n in caps.packages_for(g, where, arch) if n not in has and n not in lacks]
    switched_off = [p for g in removed for p in caps.group_switch_off(g, where)]
    switched_on = [p for g in removed if caps.group_switch_off(g, where) for p in caps.group_cmdline(g, where)]
    if switched_on:
        want["no_cmdline"] = switched_on
    if has:
        want["has"] = has
    if lacks:
        want["lacks"] = lacks

    def placed(mount: str) -> str | None:
        """Where the edit puts a partition asked at ``mount``: a database's directory in the target's format; a
        placeholder ("@database", "@that") is resolved, or reported, by the edit itself."""
        if mount.startswith("@"):
            return None
        moved = load_request_words().data_dir(mount, pkg_type)
        return moved[1] if moved else mount

    mounts = [m for p in spec.partitions if p.get("action") == "add" if (m := placed(str(p["mountPoint"])))]
    gone = [m for p in spec.partitions if p.get("action") == "remove" if (m := placed(str(p["mountPoint"])))]
    if mounts:
        want["mount"] = mounts
    if gone:
        want["no_mount"] = gone
    if spec.kernel_cmdline_append or switched_off:
        want["cmdline"] = list(dict.fromkeys([*spec.kernel_cmdline_append, *switched_off]))
    # A value for a command the template may lack (a kiosk's page) is checked where it is applied, not here.
    written = [str(c["cmd"]) for c in configurations
               if not c.get("edits_only") and not c.get("defaulted") and not c.get("network")]
    # A static address is written for the image's network manager, and an edit's keeps the part it did not say
    # (system_edits): what it gives is checked, not the command.
    addressed = [dict(c["network"]) for c in configurations if c.get("network")]
    if addressed:
        want["addressed"] = addressed
    if written:
        want["config"] = written
    # A schedule said in part takes its other part from an earlier one where the template has it (system_edits
    # _keep_schedule): its timer is checked, not the event.
    partly = [str(c["cmd"]).split("OnCalendar=")[0] for c in configurations if c.get("defaulted") and c.get("cmd")]
    if partly:
        want["config_has"] = [*_as_list(want.get("config_has")), *partly]
    if spec.immutability is not None:
        want["immutable"] = spec.immutability
    if spec.open_ports:
        want["opened"] = list(spec.open_ports)
    users = [u["name"] for u in spec.users if u.get("action") == "add" and u.get("name") not in (None, REFERRED_USER)]
    if users:
        want["user"] = users
    if spec.artifacts:
        want["artifact"] = list(spec.artifacts)
    return want


# Words an answer uses when it reports something it did not do (every miss must be reported).
REPORTED = re.compile(r"\b(?:not understood|not applied|unsupported|not supported|no counterpart|not met|"
                      r"not placed|nothing changed|refusing|too small|NOT valid)\b", re.I)


def unmet_reply(reply: dict[str, Any], want: dict[str, Any], *, previous_revision: int | None = None) -> list[str]:
    """Facts about the tool's answer itself: honesty about unsupported targets, no-op edits."""
    problems: list[str] = []
    explanation = str(reply.get("explanation") or "")
    if want.get("unsupported") and not (reply.get("unsupported") or re.search(r"\bunsupported|not supported\b",
                                                                               explanation, re.I)):
        problems.append("the unsupported target is not named as unsupported")
    if want.get("unchanged"):
        if previous_revision is not None and reply.get("revision") != previous_revision:
            problems.append("an instruction that changed nothing created a revision")
        if not REPORTED.search(explanation):
            problems.append("the instruction that changed nothing is not reported as not understood")
    return problems


def let_in(written: str) -> list[str]:
    """Every port and service configuration commands ``written`` let in, in order (firewalld's offline command,
    ufw's rules), as system_edits.open_ports writes them."""
    found = re.findall(r"--add-(?:service|port)=([\w/.-]+)|\bufw\s+allow\s+(?!from\b)([\w/:.-]+)", written)
    ruleset = nft_ruleset.read(written)
    return list(dict.fromkeys([*(a or b for a, b in found), *sourced_let_in(written), *(ruleset[1] if ruleset else ())]))


def lets_in(written: str, opened: str) -> bool:
    """Whether configuration commands ``written`` already let ``opened`` in ("443/tcp" or "https"), by port or by
    the service of that port, for firewalld or ufw. A port said without its protocol ("443") is TCP's, as the
    request reading takes it."""
    if re.fullmatch(r"\d{1,5}(?:-\d{1,5})?", opened):
        opened = f"{opened}/tcp"
    what, source = split_source(opened)
    if nft_ruleset.lets_in(written, what, source):
        return True
    if source:
        return lets_in_from(written, what, source)
    port = firewall_services().get(opened, opened)
    said = [rf"--add-port={re.escape(port)}\b", rf"\bufw\s+allow\s+{re.escape(port.replace('-', ':'))}(?![\w:])"]
    said += [rf"--add-service={re.escape(n)}\b|\bufw\s+allow\s+{re.escape(n)}\b" for n in service_names(opened)]
    return any(re.search(pattern, written) for pattern in said)


def untold(missed: list[str], told: list[str]) -> list[str]:
    """Those of ``missed`` (from :func:`unmet`) that no line of ``told`` already reports: a package the
    answer said it did not add ("k3s not added: Kubernetes is not packaged ...") is not reported twice."""
    said = [t for t in told if REPORTED.search(t) or re.search(r"\bnot added\b", t)]
    out = []
    for miss in missed:
        subject = re.fullmatch(r"package (\S+) missing|port (\S+) not let in by the firewall", miss)
        named = subject and (subject.group(1) or subject.group(2))
        if miss in " ".join(told) or (named and any(re.search(rf"(?<![\w.-]){re.escape(named)}(?![\w.-])", t)
                                                  for t in said)):
            continue
        out.append(miss)
    return out


def reported(reply: dict[str, Any]) -> bool:
    """Whether the answer says that something was not done (see :data:`REPORTED`)."""
    return bool(REPORTED.search(str(reply.get("explanation") or ""))) or bool(reply.get("unsupported"))


__all__ = ["REPORTED", "enabled_services", "installed", "lets_in", "reported", "unmet", "unmet_reply", "untold",
           "want_from_spec"]

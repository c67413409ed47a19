"""Choosing the template a new one starts from, and what of it nobody asked for.

Search ranks templates by how well they read like the request; a good starting point also carries little
that the request did not ask for. :func:`baggage` names the capability groups a template carries beyond
the always-welcome basics (``base_groups`` in capabilities.yaml) that the request did not ask for;
:func:`choose_base` prefers the candidate with the least of it among those that match the target.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Collection
from typing import Any

from ..knowledge.loader import Capabilities
from ..knowledge.package_names import versioned_build
from ..knowledge.request_words import load_request_words
from .coherence import written_commands
from .request_spec import RequestSpec
from .retarget import kernel_like


def _installed(data: dict[str, Any]) -> set[str]:
    system = data.get("systemConfig") or {}
    return {str(p) for p in system.get("packages") or []}


UNASKED_IMMUTABILITY = 4  # in packages of baggage (see unasked)
UNASKED_SECURE_BOOT = 2


def asked_groups(spec: RequestSpec, caps: Capabilities) -> set[str]:
    """Groups the request asked for, by trigger word or by naming one of their packages."""
    groups = set(spec.add_groups)
    # a kind of a group asks for the group too ("gnome desktop": a desktop template is a fine start)
    groups |= {other for g in spec.add_groups if g in caps.groups for other in caps.groups[g].supersedes}
    groups |= {c for g in set(groups) if g in caps.groups for c in caps.groups[g].companions}
    named = {p.lower() for p in spec.add_packages}
    for gid in caps.groups:
        universe = {n.lower() for n in caps.group_package_universe(gid)}
        # "openvino" names the group's openvino-2025.3.0 too
        if named & universe or any(versioned_build(n, u) for n in named for u in universe):
            groups.add(gid)
    return groups


def baggage(data: dict[str, Any], spec: RequestSpec, caps: Capabilities) -> dict[str, list[str]]:
    """Capability groups ``data`` carries that the request did not ask for -> the packages, kernel packages and
    kernel parameters they bring."""
    target = data.get("target") or {}
    where = caps.dist_of(str(target.get("dist") or "")) or caps.family_of(str(target.get("os") or "")) or ""
    have = _installed(data)
    kernel = (data.get("systemConfig") or {}).get("kernel")
    kernel = kernel if isinstance(kernel, dict) else {}
    kernels = {str(p) for p in kernel.get("packages") or []}
    arch = str(target.get("arch") or "")
    asked = asked_groups(spec, caps)
    named = {p.lower() for p in spec.add_packages}
    out: dict[str, list[str]] = {}
    # a package a group asked for explains (a desktop's linux-firmware) is none of another group's baggage (AI's)
    named |= {p.lower() for gid in asked for p in caps.group_members(gid, sorted(have), where)}
    # a machine of its own has no use for what a base group does for a cloud (cloud-init), and a minimal image
    # ("a minimal elxr12 with only ssh and curl") has none unless asked
    welcome = caps.base_groups - set(caps.hardware.leave_groups) if spec.hardware or spec.minimal else caps.base_groups
    for gid in caps.groups:
        if gid in asked or gid in welcome:
            continue
        mine = [p for p in caps.group_members(gid, sorted(have), where) if p.lower() not in named]
        # A group is carried by its kernel and its kernel parameters too (a real-time template's kernel-rt and
        # CPU isolation), even where it has no packages of its own.
        mine += [k for k in caps.group_kernel_packages(gid, where, arch) if k in kernels]
        mine += caps.group_tuning(gid, str(kernel.get("cmdline") or ""))
        if mine:
            out[gid] = mine
    return out


def _name_words(name: str, caps: Capabilities, *, purpose: bool = True) -> set[str]:
    """Words of a template file name that say what it is for: not its dist, arch or image type. ``purpose``: only
    those naming its software (nginx, docker, ros2), not deployment words (edge, gateway, server, cloud: the use
    cases), which fit many templates."""
    generic = {w for uc in caps.use_cases.values() for phrase in uc.words for w in phrase.lower().split()} \
        if purpose else set()
    parts = re.split(r"[-_.\s]+", name.lower())
    formats = {*load_request_words().image_types, *load_request_words().artifacts}
    kept = [w for w in parts if w.isalnum() and not w.isdigit() and len(w) > 2 and w not in formats
            and not caps.arch_of(w) and w not in ("yml", "base") and not caps.dist_of(w)]
    # a word before a use case's is one name with it ("web-server" is "webserver"): "web" alone, in "a web page",
    # says nothing of serving one
    return {w + after if after in generic else w for w, after in itertools.zip_longest(kept, kept[1:], fillvalue="")
            if w not in generic}


def related(name: str, request: str, caps: Capabilities, removed: Collection[str] = ()) -> bool:
    """Whether the software a template is named for is something the request talks about; for a template named
    only by what it is for ("debian13-x86_64-realtime-industrial"), whether the request says all of that.
    Software of a group the request takes out (``removed``: "disable selinux") is talked about, but not wanted."""
    said = re.findall(r"[a-z0-9]+", request.lower())
    # a name written apart is the same name ("DL Streamer" for the dlstreamer template)
    words = set(said) | {a + b for a, b in zip(said, said[1:], strict=False)}
    purpose = _name_words(name, caps)
    if purpose:
        return bool({w for w in purpose & words if caps.group_for_word(w) not in removed})
    deployment = _name_words(name, caps, purpose=False)
    return bool(deployment) and deployment <= words


def named_in(name: str, request: str, caps: Capabilities) -> bool:
    """Whether the request says what a template is for, in any of its name's words ("an edge gateway")."""
    return bool(_name_words(name, caps, purpose=False) & set(re.findall(r"[a-z0-9]+", request.lower())))


def leftovers(data: dict[str, Any], spec: RequestSpec, caps: Capabilities) -> list[str]:
    """Packages of a starting template that nothing explains: not named by the request, not in a capability
    group (those are :func:`baggage` or asked for), and not the distribution's own base system, kernel,
    bootloader or family-specific packages. A minimal request drops them; any other request is told of them."""
    target = data.get("target") or {}
    dist = caps.dist_of(str(target.get("dist") or "")) or ""
    family = caps.family_of(str(target.get("os") or "")) or caps.family_of(dist) or ""
    if not family:
        return []
    named = {n.lower() for p in spec.add_packages for n in {p, *caps.aliases(p)}}
    listed = [str(p) for p in (data.get("systemConfig") or {}).get("packages") or []]
    boot = {n for f in caps.families for n in caps.all_bootloader_packages(f)}  # any family's spelling boots
    own = {n.lower() for n in {*caps.base_system(dist or family), *boot, *kernel_like(listed, caps, dist or family)}}
    # a group's package on this target; another family's member (nftables is Debian's firewall, not Ubuntu's) is
    # explained by no group here, so it is said (or dropped for a minimal request) like any other
    grouped = {p.lower() for gid in caps.groups for p in caps.group_members(gid, listed, dist or family)}
    return [name for name in listed
            if name.lower() not in named and name.lower() not in own and name.lower() not in grouped
            and not caps.is_specific_to(name, family)]


def unasked_users(data: dict[str, Any], spec: RequestSpec) -> list[tuple[dict[str, Any], bool]]:
    """The users of a starting template the request did not name, each with whether a configuration command of the
    template names it (a kiosk's session user, a service account's linger file): such a user is part of what the
    template does."""
    system = data.get("systemConfig") or {}
    named = {str(u.get("name")) for u in spec.users}
    commands = written_commands(system)
    return [(u, bool(re.search(rf"(?<![\w-]){re.escape(str(u['name']))}(?![\w-])", commands)))
            for u in system.get("users") or [] if isinstance(u, dict) and u.get("name") and str(u["name"]) not in named]


def describe_user(user: dict[str, Any]) -> str:
    """A user as the answer names it: "user edgeadmin (sudo; groups docker, wheel)"."""
    details = [*(["sudo"] if user.get("sudo") else []),
               *([f"groups {', '.join(str(g) for g in user['groups'])}"] if user.get("groups") else [])]
    return f"user {user['name']}" + (f" ({'; '.join(details)})" if details else "")


def unasked_formats(data: dict[str, Any], spec: RequestSpec) -> list[str]:
    """The disk formats (``disk.artifacts`` types other than raw) a template writes that the request did not ask
    for: a cloud template's qcow2 and vmdk for a request that named no format."""
    disk = data.get("disk")
    artifacts = disk.get("artifacts") if isinstance(disk, dict) else None
    kinds = [str(a.get("type")) for a in artifacts or [] if isinstance(a, dict) and a.get("type")]
    return [k for k in dict.fromkeys(kinds) if k != "raw" and k not in spec.artifacts]


def unasked(name: str, data: dict[str, Any], spec: RequestSpec, caps: Capabilities, request: str | None) -> int:
    """How much of a template the request did not ask for: its baggage, and what no group explains unless the
    template's purpose is what the request is about (a ROS template's navigation stack for a robotics request,
    not for a web server)."""
    extra = sum(len(v) for v in baggage(data, spec, caps).values())
    if request is not None and not related(name, request, caps, spec.remove_groups):
        extra += len(leftovers(data, spec, caps))
    # A read-only root and a signed boot chain shape everything after them, and a starting template's are kept:
    # unasked, they weigh more than a group's few packages, which leave ("elxr12 minimal image" had started from the
    # immutable template once its cloud template's cloud-init counted as baggage).
    immutability = (data.get("systemConfig") or {}).get("immutability")
    immutability = immutability if isinstance(immutability, dict) else {}
    if immutability.get("enabled") and spec.immutability is not True:
        extra += UNASKED_IMMUTABILITY + UNASKED_SECURE_BOOT * (spec.secure_boot is not True
                                                               and bool(immutability.get("secureBootDBKey")))
    if spec.hardware:  # a virtual-machine kernel on a machine of its own is swapped, and weighs like a group
        kernel = (data.get("systemConfig") or {}).get("kernel")
        kernels = kernel.get("packages") if isinstance(kernel, dict) else None
        extra += any(caps.hardware.is_vm_kernel(str(k)) for k in kernels or ())
    return extra  # disk formats nobody asked for weigh nothing: they leave whole (compose._without_formats)


def unavailable_groups(spec: RequestSpec, target: dict[str, Any], caps: Capabilities) -> int:
    """How many asked groups a target (its ``dist`` or ``os``, and ``arch``) cannot have (a kiosk where browsers are
    snaps only)."""
    where = target.get("dist") or target.get("os")
    if not where:
        return 0
    return sum(1 for g in spec.add_groups if g in caps.groups and not caps.group_available(g, where,
                                                                                            target.get("arch")))


def choose_base(candidates: list[tuple[str, str, dict]], spec: RequestSpec,
                caps: Capabilities, request: str | None = None) -> list[tuple[str, str, dict]]:
    """Candidates reordered: matching target first, then the fewest asked groups their target lacks, then those
    whose purpose the request names (a real-time template for a real-time request keeps its tuned command line,
    where a bare base given the real-time group would not), then the least unrequested baggage, then search rank."""
    def target_miss(data: dict[str, Any]) -> int:
        target = data.get("target") or {}
        # An image type nobody named is the default raw disk, not whatever the closest template is.
        kind = spec.image_type or "raw"
        return sum(1 for key, want in (("dist", spec.dist), ("arch", spec.arch), ("imageType", kind))
                   if want and target.get(key) != want)

    def score(item: tuple[int, tuple[str, str, dict]]) -> tuple[int, int, bool, int, int]:
        rank, (name, _text, data) = item
        # with no target named, a family that has the asked groups is the better start
        lacking = unavailable_groups(spec, data.get("target") or {}, caps)
        unrelated = request is not None and not spec.minimal and not related(name, request, caps, spec.remove_groups)
        return target_miss(data), lacking, unrelated, unasked(name, data, spec, caps, request), rank

    return [c for _r, c in sorted(enumerate(candidates), key=score)]


def strip_plan(name: str, data: dict[str, Any], spec: RequestSpec, request: str,
               caps: Capabilities) -> list[str]:
    """Groups to leave out of the starting template: all its baggage when the request is minimal or the
    template's purpose is unrelated to the request; nothing otherwise (its purpose is what was asked)."""
    if not (spec.minimal or not related(name, request, caps, spec.remove_groups)):
        return []
    return sorted(g for g in baggage(data, spec, caps) if g not in spec.remove_groups)  # those: the request's own


__all__ = ["asked_groups", "baggage", "choose_base", "describe_user", "leftovers", "named_in", "related", "strip_plan",
           "unasked", "unasked_formats", "unasked_users", "unavailable_groups"]

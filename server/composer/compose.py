"""The offline provider: a deterministic generator and structured editor for templates.

``compose`` starts from the best retrieved template and applies every constraint a request
states; ``apply_instruction`` refines an existing template and changes only what is asked.
Both share :func:`apply_spec`, which works on a copy and returns a human-readable change
list. No LLM is involved: the request is parsed by :mod:`.request_parser` and the
distribution facts come from :mod:`server.knowledge`.
"""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..knowledge.loader import Capabilities, load_capabilities
from ..knowledge.request_words import load_request_words
from ..validation.upstream import conform
from . import firewall_reach
from .base import describe_user, leftovers, unasked_formats, unasked_users
from .disk_edits import DiskEdit
from .editing import image_section, mapping_at, template_packages
from .output import dump_yaml
from .request_parser import is_question, parse_request
from .request_spec import RequestSpec
from .retarget import RetargetEdit
from .system_edits import SystemEdit

logger = logging.getLogger(__name__)


@dataclass
class ComposeResult:
    data: dict
    yaml: str
    changes: list[str]
    spec: RequestSpec
    unhandled: list[str] = field(default_factory=list)  # every wish left undone: words unread, then problems
    problems: list[str] = field(default_factory=list)  # of those, the wishes read but not applicable here

    def notes(self, skip: set[str] | frozenset[str] = frozenset()) -> list[str]:
        """One line per wish left undone (``skip``: ones another reading took): a word nothing read is "not
        understood", a wish read but impossible on this target is "not applied" (it was understood)."""
        return [f"{'not applied' if u in self.problems else 'not understood'}: {u}" for u in self.unhandled
                if u not in skip]


# --------------------------------------------------------------------------- public API


def compose(
    request: str,
    base: dict,
    *,
    base_file: str | None = None,
    os: str | None = None,
    dist: str | None = None,
    arch: str | None = None,
    image_type: str | None = None,
    spec: RequestSpec | None = None,
    strip_groups: list[str] | None = None,
) -> ComposeResult:
    """A new template for ``request``, built from the best retrieved template ``base``.

    ``spec`` is the request as understood once by the caller (the agent); without it the request is parsed
    here. ``strip_groups`` are capability groups of the base that nobody asked for (server.compose_base):
    they leave first, with everything they brought.
    """
    caps = load_capabilities()
    if spec is None:
        spec = parse_request(request, known_packages=template_packages(base))
    spec.is_question = False  # a generation request is never "just a question"
    if os:
        spec.os = caps.family_of(os) or os
    if dist:
        spec.dist = caps.dist_of(dist) or dist
        spec.os = spec.os if os else caps.family_of(spec.dist) or spec.os
    if arch:
        spec.arch = caps.arch_of(arch) or arch
    if image_type:
        spec.image_type = image_type
    spec.image_type = spec.image_type or "raw"  # a new image nobody said the kind of is a raw disk image
    start_changes: list[str] = []
    unexplained = leftovers(base, spec, caps)
    dropped = unexplained if spec.minimal else []  # minimal means nothing beyond what was asked
    if strip_groups or dropped:
        edit = Edit(base, caps)
        edit.remove_groups(strip_groups or [])
        if dropped and edit.remove_packages(set(dropped)):
            edit.changes.append(f"removed {', '.join(dropped)}")
        edit.clean_up_after_removals()
        edit.tidy()
        base = edit.data
        start_changes = [f"left out of the starting template (not asked for): {c.removeprefix('removed ')}"
                         for c in edit.changes if c.startswith("removed ")]
        start_changes += [c.replace("also removed what the removed software needed", "left out with it")
                          for c in edit.changes if c.startswith("also removed ")]
    base, left_out = _without_formats(base, spec)
    start_changes += left_out
    if strip_groups or spec.minimal:  # its purpose is not what was asked: its accounts are not either
        base, left_out = _without_users(base, spec)
        start_changes += left_out
    base_users = {u.get("name") for u, _tied in unasked_users(base, spec)}
    data, changes, problems = _apply(base, spec, caps)
    changes = start_changes + changes
    changes += _fresh_hostname(data, spec, strip_groups or [], caps)
    # Every miss is reported: what the starting template brought that nothing the request said explains is named.
    if unexplained and not dropped:
        present = set(template_packages(data))
        kept = [p for p in unexplained if p in present]
        if kept:
            changes.append(f"kept from the starting template (not asked for): {', '.join(kept)}")
    kept_users = [describe_user(u) for u, _tied in unasked_users(data, spec) if u.get("name") in base_users]
    if kept_users:
        changes.append(f"kept from the starting template (not asked for): {', '.join(kept_users)}")
    changes += _kept_immutability(data, spec)
    _drop_sample_repositories(data, changes)
    if base_file:
        changes.insert(0, f"started from {base_file}")
    _name_and_describe(data, spec, request, caps, changes)
    return ComposeResult(data, dump_yaml(data), changes, spec, [*spec.unparsed, *problems], problems)


def _without_users(base: dict, spec: RequestSpec) -> tuple[dict, list[str]]:
    """The starting template without the accounts nobody asked for, but those its own configuration names."""
    gone = [u for u, tied in unasked_users(base, spec) if not tied]
    if not gone:
        return base, []
    data = copy.deepcopy(base)
    system = data["systemConfig"]
    system["users"] = [u for u in system.get("users") or [] if not any(u is g or u == g for g in gone)]
    if not system["users"]:
        del system["users"]
    return data, [f"left out of the starting template (not asked for): {describe_user(u)}" for u in gone]


def _kept_immutability(data: dict, spec: RequestSpec) -> list[str]:
    """A read-only root (and its signed boot chain) that the starting template had and the request did not ask
    about shapes everything after it, so the answer says it stayed."""
    immutability = (data.get("systemConfig") or {}).get("immutability")
    if spec.immutability is not None or not isinstance(immutability, dict) or not immutability.get("enabled"):
        return []
    signed = spec.secure_boot is None and bool(immutability.get("secureBootDBKey"))
    return [f"kept from the starting template (not asked for): an immutable root (dm-verity)"
            f"{' with secure boot keys' if signed else ''}; say 'not immutable' for a writable root"]


def _without_formats(base: dict, spec: RequestSpec) -> tuple[dict, list[str]]:
    """A new image writes the disk formats its request asked for: ``base`` without the others, and the change."""
    formats = unasked_formats(base, spec) if spec.image_type == "raw" else []
    if not formats:
        return base, []
    base = copy.deepcopy(base)
    disk = base["disk"]
    left = [a for a in disk["artifacts"] if not (isinstance(a, dict) and a.get("type") in formats)]
    if left:
        disk["artifacts"] = left
    else:
        disk.pop("artifacts")
    return base, [f"left out of the starting template (not asked for): disk formats {', '.join(formats)}"
                  + ("" if left else " (the build writes the raw disk only)")]


def apply_instruction(data: dict, instruction: str, *, spec: RequestSpec | None = None,
                      known_packages: Iterable[str] = ()) -> ComposeResult:
    """Refine ``data`` as ``instruction`` asks (``spec``: the instruction as already understood); everything not
    mentioned is preserved."""
    caps = load_capabilities()
    if spec is None:
        spec = parse_request(instruction, known_packages={*template_packages(data), *known_packages})
    if spec.is_question:
        same = copy.deepcopy(data)
        return ComposeResult(same, dump_yaml(same), [], spec, [])
    new, changes, problems = _apply(data, spec, caps)
    changes += _fresh_hostname(new, spec, [], caps)  # "it goes on a NUC" renames "ubuntu-cloud" as a request would
    new, moved = conform(new)  # metadata os-image-composer refuses (the ADR's fields) -> its own fields
    changes += moved
    unhandled = [*spec.unparsed, *problems]
    if (spec.is_empty() and not unhandled and not spec.autologin and not spec.unsupported
            and not any("not applied" in n for n in spec.notes)):
        # a note that says why the one wish was not applied ("nvidia driver not applied: ...") is the answer, as is
        # one that says it is not supported ("a second disk")
        unhandled.append(f"could not find an edit in: {instruction!r}")
    return ComposeResult(new, dump_yaml(new), changes, spec, unhandled, problems)


def apply_spec(data: dict, spec: RequestSpec) -> tuple[dict, list[str]]:
    """Apply a parsed spec to a copy of ``data``; returns the new dict and what changed.

    Requests that could not be applied are listed too, prefixed with "not applied:".
    """
    new, changes, problems = _apply(data, spec, load_capabilities())
    return new, [*changes, *(f"not applied: {p}" for p in problems)]


def is_explanation_question(text: str) -> bool:
    """Same test the parser uses: "what packages are included?" is a question, not an edit."""
    return is_question(text)


# --------------------------------------------------------------------------- the edit


class Edit(RetargetEdit, SystemEdit, DiskEdit):
    """A whole application of a spec, in the order that keeps each step's assumptions true."""

    def run(self, spec: RequestSpec) -> None:
        kept_out_before = firewall_reach.kept_out(self.data)
        for note in spec.notes:
            self.changes.append(f"note: {note}")
        self.switch_distribution(spec)
        self.switch_arch(spec)
        self.switch_image_type(spec)
        self.remove_groups(spec.remove_groups)
        self.remove_named_packages(spec.remove_packages)
        self.add_groups(self._groups_to_add(spec), spec.group_modes, without=spec.remove_packages,
                        without_groups=spec.remove_groups, named=[*spec.groups_named, *spec.add_packages])
        self.add_named_packages(spec.add_packages)
        self.name_groups(spec.groups_named)
        self.one_per_role()
        self.graphical_apps(spec)
        self.on_hardware(spec)
        self.kernel_edits(spec)
        self.swap_partition_off(spec)
        self.configurations(spec.configurations)
        spec.notes = [n for n in spec.notes if n not in self.withdrawn]
        firewall_asked = "firewall" in spec.add_groups or "ufw" in spec.add_packages
        self.open_ports(spec.open_ports, firewall_asked)
        self.turn_ufw_on(firewall_asked)
        self.hostname(spec.hostname)
        self.users(spec.users)
        self.ssh_keys(spec.ssh_keys)
        self.autologin(spec)  # after the users, one of whom it logs in
        self.bootloader(spec)
        # Disk size first so a dm-verity layout is cut for the final size; partitions last
        # so that an added /data sits in the final layout.
        self.keep_root = not (spec.disk_size or spec.disk_size_delta)
        self.disk_size_edits(spec)
        self.immutability(spec.immutability)
        self.secure_boot(spec.secure_boot)
        self.partition_edits(spec)
        self.artifacts(spec)
        if spec.name and image_section(self.data).get("name") != spec.name:
            image_section(self.data)["name"] = spec.name
            self.changes.append(f"image name set to {spec.name}")
        if spec.image_version and str(image_section(self.data).get("version")) != spec.image_version:
            image_section(self.data)["version"] = spec.image_version
            self.changes.append(f"image version set to {spec.image_version}")
        self.clean_up_after_removals()
        self.changes += firewall_reach.newly_kept_out(kept_out_before, self.data)
        self.tidy()

    def _groups_to_add(self, spec: RequestSpec) -> list[str]:
        """The groups the spec adds, but the firewall named by ports opened in it where the template has one
        ("open port 443 in the firewall" asks for a firewall only where there is none)."""
        if not spec.open_ports or "firewall" not in spec.add_groups or not (where := self.dist or self.family):
            return spec.add_groups
        own = {*self.caps.packages_for("firewall", where), *self.caps.groups["firewall"].filled_by}
        if not own & set(template_packages(self.data)):
            return spec.add_groups
        return [g for g in spec.add_groups if g != "firewall"]


def _apply(data: dict, spec: RequestSpec, caps: Capabilities) -> tuple[dict, list[str], list[str]]:
    edit = Edit(data, caps)
    edit.run(spec)
    logger.debug("offline edit: %d change(s), %d problem(s)", len(edit.changes), len(edit.problems))
    return edit.data, edit.changes, edit.problems


# --------------------------------------------------------------------------- naming and metadata


def _drop_sample_repositories(data: dict, changes: list[str]) -> None:
    """Upstream samples carry '<URL>' repositories to be filled in; a generated template must not."""
    repos = data.get("packageRepositories")
    if not isinstance(repos, list):
        return
    samples = [
        r for r in repos if isinstance(r, dict) and "<" in str(r.get("url", "")) + str(r.get("pkey", ""))
    ]
    if not samples:
        return
    left = [r for r in repos if r not in samples]
    if left:
        data["packageRepositories"] = left
    else:
        data.pop("packageRepositories")
    changes.append(
        "dropped sample repositories with placeholders: " + ", ".join(str(r.get("codename")) for r in samples)
    )


def _fresh_hostname(data: dict, spec: RequestSpec, stripped: list[str], caps: Capabilities) -> list[str]:
    """A host name that names what left the template ("kiosk", "rt-controller", "ros2-amr") leaves with it,
    unless the request names one. What left: ``stripped``, the groups removed, and the guest groups when the
    image goes onto a machine of its own."""
    if spec.hostname:
        return []
    gone = [*stripped, *spec.remove_groups, *(caps.hardware.leave_groups if spec.hardware else ())]
    system = data.get("systemConfig")
    old = system.get("hostname") if isinstance(system, dict) else None
    if not isinstance(system, dict) or not isinstance(old, str):
        return []
    if not caps.names_group(old, gone):
        return []
    dist = str(mapping_at(data, "target").get("dist") or "")
    new = re.sub(r"[^a-z0-9-]+", "-", "-".join([dist or "linux", *spec.use_cases[:1]]).lower()).strip("-")[:63]
    system["hostname"] = new
    return [f"hostname {old} -> {new} (the old one named what left)"]


def _name_and_describe(
    data: dict, spec: RequestSpec, request: str, caps: Capabilities, changes: list[str]
) -> None:
    target = mapping_at(data, "target")
    dist = str(target.get("dist") or "custom")
    arch = str(target.get("arch") or "x86_64")
    image_type = str(target.get("imageType") or "raw")
    family = caps.family_of(dist) or caps.family_of(str(target.get("os") or ""))
    parts: list[str] = []
    for uc in spec.use_cases:
        parts.append(uc)
    words = load_request_words()
    # Only what the target has: a group reported not available (kubernetes on azl3 aarch64) is not named or described.
    groups = [g for g in spec.add_groups if g in caps.groups and caps.group_available(g, dist, arch)]
    for group in groups:
        slug = words.name_slug(group, family)
        if slug:
            parts.append(slug)
    parts = list(dict.fromkeys(p for p in parts if p not in (dist, arch, image_type)))[:4] or ["custom"]
    slug = spec.name or "-".join([dist, arch, *parts, image_type])
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", slug).strip("-_") or "image"
    image = image_section(data)
    if image.get("name") != slug:
        changes.append(f"image name {image.get('name') or 'unset'} -> {slug}")
        image["name"] = slug
    image.setdefault("version", caps.dists[dist].release if dist in caps.dists else "1.0.0")
    sc = data.get("systemConfig")
    if isinstance(sc, dict):
        sc["name"] = slug
    disk = data.get("disk")
    if isinstance(disk, dict):
        disk["name"] = slug  # upstream: "1:1 mapping to the systemConfig name"
    label = caps.dists[dist].label if dist in caps.dists else dist
    use_labels = [caps.use_cases[u].label for u in dict.fromkeys(spec.use_cases) if u in caps.use_cases]
    group_labels = [caps.groups[g].description.split(" (")[0] for g in groups]
    description = f"{label} {arch} {image_type} image"
    if use_labels:
        description += " for " + ", ".join(use_labels)
    if group_labels:
        description += "; includes " + ", ".join(g[0].lower() + g[1:] for g in group_labels)
    request_text = " ".join(request.split())
    if request_text:
        description += f". Requested as: {request_text[:200]}"
    if isinstance(sc, dict):
        sc["description"] = description.split(". Requested as:")[0]
    keywords = [dist, family or "", arch, image_type, *spec.use_cases, *groups]
    for group in groups:
        first = caps.groups[group].triggers[0] if caps.groups[group].triggers else ""
        if first and not first.startswith(group[:5]):
            keywords.append(first)
    metadata = {
        "description": description,
        "use_cases": list(dict.fromkeys([*use_labels, *group_labels])) or [f"{label} {image_type} image"],
        "keywords": list(dict.fromkeys(k for k in keywords if k))[:16],
    }
    data["metadata"] = metadata
    changes.append("metadata written (description, use_cases, keywords)")


__all__ = ["ComposeResult", "Edit", "apply_instruction", "apply_spec", "compose", "is_explanation_question"]

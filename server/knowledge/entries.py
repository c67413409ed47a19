"""The typed entries of the capability knowledge (``resources/capabilities.yaml``) and how each is read from its
YAML mapping. server/knowledge/loader.py builds a :class:`~.loader.Capabilities` from them and answers
questions over them."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import nft_ruleset


@dataclass(frozen=True)
class Dist:
    id: str
    family: str
    label: str
    release: str
    codename: str | None
    words: tuple[str, ...]
    kernel_version: str | None
    kernel_packages: Mapping[str, tuple[str, ...]]
    search_words: tuple[str, ...] = ()


@dataclass(frozen=True)
class Family:
    id: str  # the target.os value
    label: str
    pkg_type: str  # deb | rpm
    default_dist: str
    words: tuple[str, ...]
    admin_group: str
    dists: Mapping[str, Dist]
    cmdline: str
    bootloader_packages: Mapping[str, Mapping[str, tuple[str, ...]]]  # provider -> arch -> names
    specific: tuple[re.Pattern[str], ...]
    default_layout: str
    search_words: tuple[str, ...] = ()
    other_releases: Mapping[str, str] = field(default_factory=dict)  # codename -> release, not buildable here
    makers: tuple[str, ...] = ()  # names that mean this family only beside an OS noun (capabilities.yaml os_nouns)
    bios_boot_packages: tuple[str, ...] = ()  # GRUB's BIOS core, for legacy boot on x86_64


@dataclass(frozen=True)
class Group:
    id: str
    description: str
    triggers: tuple[str, ...]
    packages: Mapping[str, tuple[str, ...]]
    kernel_packages: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    cmdline_append: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    cmdline_tuning: tuple[str, ...] = ()  # kernel parameter names the group's templates set (left with it)
    repositories: Mapping[str, tuple[dict, ...]] = field(default_factory=dict)
    configurations: Mapping[str, tuple[dict, ...]] = field(default_factory=dict)
    users: Mapping[str, tuple[dict, ...]] = field(default_factory=dict)
    notes: Mapping[str, str] = field(default_factory=dict)
    x86_only: bool = False
    # Packages that belong to the group where a template has them, though adding the group does not install
    # them (a ROS template's navigation stack, a desktop's display manager): regexes on the package name.
    members: tuple[re.Pattern[str], ...] = ()
    # Words of the configuration commands that set the group up ("kiosk", "graphical.target"): such a command
    # leaves with the group even when it is not the group's own text.
    configuration_words: tuple[str, ...] = ()
    mounts: tuple[str, ...] = ()  # partitions that hold the group's data (a web server's /var/www)
    # Words that, as a user or host name, name the group without being a request word for it ("robot" for ROS:
    # a request for a robot arm needs no ROS, but a template's "robot" account is ROS's).
    account_words: tuple[str, ...] = ()
    as_platform: str | None = None  # the group a trigger means right after "for"/"on" (where the image runs)
    # Groups this one is a kind of and stands in for ("xfce" for "desktop"): asked for together, only this one
    # is added, and adding it takes out the other's software the template has that is not this one's.
    supersedes: tuple[str, ...] = ()
    # Groups that come with this one ("printing" with a desktop): asked for with it, so a starting template's share
    # of them is kept, never added unasked.
    companions: tuple[str, ...] = ()
    # How the group logs a user in at boot (a kiosk's session), said when automatic login is asked for.
    logs_in: str = ""
    # Software packaged in parts (Kubernetes: the kubelet, kubectl, kubeadm): its name asks for the whole group,
    # even where one part's package carries the name (an exact package name otherwise wins over a trigger).
    whole_by_name: bool = False
    # Ways the group can run ("permissive" MAC): mode -> its words, and its kernel parameters and notes per
    # family, which stand in for the group's own where given.
    modes: Mapping[str, GroupMode] = field(default_factory=dict)
    # Releases of the software the group does not install ("humble" of ROS 2) -> why: said, never swapped in silently
    other_releases: Mapping[str, str] = field(default_factory=dict)
    # The disk format of the hypervisor the group is the guest side of, and the hypervisor: (vmdk, VMware).
    disk_format: tuple[str, str] | None = None
    # Triggers that name the group's role rather than its software ("container host"), and the software (a
    # package or a group) that fills that role when the request names it beside them ("... with podman").
    role_words: tuple[str, ...] = ()
    filled_by: tuple[str, ...] = ()
    # Kernel parameters that switch the group's software off at boot, per family, for a request that takes it out:
    # the kernel keeps an LSM on without its packages (Ubuntu's AppArmor), so removing them alone leaves it running.
    # Its trigger words after "without"/"disable" then take the group out even where one is a package's name.
    switch_off: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Software named with the group that runs in the place of one of its packages ("a kiosk in firefox"): the
    # package named -> the one it replaces and the texts of the group's commands it changes.
    variants: Mapping[str, GroupVariant] = field(default_factory=dict)


@dataclass(frozen=True)
class GroupVariant:
    replaces: str
    commands: Mapping[str, str] = field(default_factory=dict)  # a text of the group's commands -> its own

    def command(self, cmd: str) -> str:
        for old, new in self.commands.items():
            cmd = cmd.replace(old, new)
        return cmd


@dataclass(frozen=True)
class GroupMode:
    words: tuple[str, ...]
    cmdline_append: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    notes: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Hardware:
    """Words that say an image runs on a machine of its own; the groups and VM kernel flavours that leave it."""

    words: tuple[str, ...] = ()
    leave_groups: tuple[str, ...] = ()
    vm_kernels: tuple[re.Pattern[str], ...] = ()
    virtual_words: tuple[str, ...] = ()  # "not a vm": a machine of its own, said by what it is not

    def is_vm_kernel(self, name: str) -> bool:
        return any(p.search(name) for p in self.vm_kernels)


@dataclass(frozen=True)
class VendorStack:
    """A vendor whose drivers the archives lack: its words, the groups it is no stand-in for, what to say."""

    words: tuple[str, ...]
    instead_of: tuple[str, ...]
    note: str


@dataclass(frozen=True)
class UseCase:
    id: str
    label: str
    words: tuple[str, ...]


NOT_TARGET_KEYS = ("aliases", "substitutes", "suggest")


def entry_names(entry: Mapping[str, Any]) -> set[str]:
    """The names translation knows for an entry: its targets and aliases (``suggest`` is looser)."""
    names = {str(v) for k, v in entry.items() if k not in NOT_TARGET_KEYS and v}
    names.update(str(a) for a in entry.get("aliases") or ())
    return names


def as_tuple(values: Iterable[Any] | None) -> tuple[str, ...]:
    return tuple(str(v) for v in values or ())


def read_family(fid: str, spec: Mapping[str, Any]) -> Family:
    dists = {}
    for did, dspec in (spec.get("dists") or {}).items():
        kernel = dspec.get("kernel") or {}
        dists[did] = Dist(
            id=did,
            family=fid,
            label=str(dspec.get("label", did)),
            release=str(dspec.get("release", "")),
            codename=dspec.get("codename"),
            words=as_tuple(dspec.get("words")),
            kernel_version=str(kernel["version"]) if kernel.get("version") else None,
            kernel_packages={a: as_tuple(v) for a, v in (kernel.get("packages") or {}).items()},
            search_words=as_tuple(dspec.get("search_words")),
        )
    return Family(
        id=fid,
        label=str(spec.get("label", fid)),
        pkg_type=str(spec.get("pkg_type", "deb")),
        default_dist=str(spec.get("default_dist") or next(iter(dists), "")),
        words=as_tuple(spec.get("words")),
        admin_group=str(spec.get("admin_group", "wheel")),
        dists=dists,
        cmdline=str(spec.get("cmdline", "")),
        bootloader_packages={
            prov: {a: as_tuple(v) for a, v in (by_arch or {}).items()}
            for prov, by_arch in (spec.get("bootloader_packages") or {}).items()
        },
        specific=tuple(re.compile(p) for p in spec.get("specific") or ()),
        default_layout=str(spec.get("default_layout", "minimal")),
        search_words=as_tuple(spec.get("search_words")),
        other_releases={str(k).lower(): str(v) for k, v in (spec.get("other_releases") or {}).items()},
        makers=tuple(m.lower() for m in as_tuple(spec.get("makers"))),
        bios_boot_packages=as_tuple(spec.get("bios_boot_packages")),
    )


def _configuration(config: Mapping[str, Any]) -> dict:
    """A group's configuration command; ``{nftables: <path>}`` is the firewall's ruleset written to that path,
    letting SSH in (nft_ruleset.py), so the ruleset's text has one writer."""
    if "nftables" in config:
        return {"cmd": nft_ruleset.command(str(config["nftables"]), [nft_ruleset.SSH])}
    return dict(config)


def read_group(gid: str, spec: Mapping[str, Any]) -> Group:
    return Group(
        id=gid,
        description=str(spec.get("description", gid)),
        triggers=as_tuple(spec.get("triggers")),
        packages={k: as_tuple(v) for k, v in (spec.get("packages") or {}).items()},
        kernel_packages={
            k: {a: as_tuple(n) for a, n in (by_arch or {}).items()}
            for k, by_arch in (spec.get("kernel_packages") or {}).items()
        },
        cmdline_append={k: as_tuple(v) for k, v in (spec.get("cmdline_append") or {}).items()},
        cmdline_tuning=as_tuple(spec.get("cmdline_tuning")),
        switch_off={k: as_tuple(v) for k, v in (spec.get("switch_off") or {}).items()},
        repositories={
            k: tuple(dict(r) for r in v or ()) for k, v in (spec.get("repositories") or {}).items()
        },
        configurations={
            k: tuple(_configuration(c) for c in v or ()) for k, v in (spec.get("configurations") or {}).items()
        },
        users={k: tuple(dict(u) for u in v or ()) for k, v in (spec.get("users") or {}).items()},
        notes={k: str(v) for k, v in (spec.get("notes") or {}).items()},
        x86_only=bool(spec.get("x86_only", False)),
        members=tuple(re.compile(m) for m in as_tuple(spec.get("members"))),
        configuration_words=as_tuple(spec.get("configuration_words")),
        mounts=as_tuple(spec.get("mounts")),
        account_words=as_tuple(spec.get("account_words")),
        as_platform=str(spec["as_platform"]) if spec.get("as_platform") else None,
        supersedes=as_tuple(spec.get("supersedes")),
        companions=as_tuple(spec.get("companions")),
        logs_in=str(spec.get("logs_in") or ""),
        whole_by_name=bool(spec.get("whole_by_name", False)),
        modes={str(name): GroupMode(as_tuple(mode.get("words")),
                                    {k: as_tuple(v) for k, v in (mode.get("cmdline_append") or {}).items()},
                                    {k: str(v) for k, v in (mode.get("notes") or {}).items()})
               for name, mode in (spec.get("modes") or {}).items() if isinstance(mode, dict)},
        other_releases={str(k).lower(): str(v) for k, v in (spec.get("other_releases") or {}).items()},
        disk_format=(str(spec["disk_format"]["type"]), str(spec["disk_format"]["of"])) if spec.get("disk_format")
        else None,
        role_words=tuple(str(w).lower() for w in as_tuple(spec.get("role_words"))),
        filled_by=tuple(str(w).lower() for w in as_tuple(spec.get("filled_by"))),
        variants={str(name): GroupVariant(str(v["replaces"]), {str(a): str(b) for a, b in (v.get("commands") or {}).items()})
                  for name, v in (spec.get("variants") or {}).items() if isinstance(v, dict)},
    )


__all__ = ["NOT_TARGET_KEYS", "Dist", "Family", "Group", "GroupMode", "GroupVariant", "UseCase", "VendorStack", "as_tuple", "entry_names",
           "read_family", "read_group"]

"""What a request states, as the composer and the agent use it: :class:`RequestSpec`."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# The name of a user said only by a pronoun, resolved against the template's users when the edit is applied.
REFERRED_USER = "<referred>"
# The database the image has, whichever it is: "a partition for the database", "get rid of the database"
# (the mount word of request_words.yaml, resolved by its data_dirs when the edit is applied).
DATABASE = "@database"
# A partition's size said as a share of the disk ("50%": half), sized by the edit from the disk's final size
DISK_SHARE = "%"
# The shell of a user that never logs in (a service account): shadow-utils' nologin, at /usr/sbin on every family.
NOLOGIN_SHELL = "/usr/sbin/nologin"


@dataclass
class RequestSpec:
    """What a plain-words request or instruction states. Unset means "not mentioned"."""

    os: str | None = None
    dist: str | None = None
    arch: str | None = None
    image_type: str | None = None
    add_packages: list[str] = field(default_factory=list)
    remove_packages: list[str] = field(default_factory=list)
    add_groups: list[str] = field(default_factory=list)
    remove_groups: list[str] = field(default_factory=list)
    disk_size: str | None = None
    # {"action": "add"|"remove"|"resize", "mountPoint": "/data", "size": "4GiB"|None, "fsType": str|None, "fill": bool}
    partitions: list[dict] = field(default_factory=list)
    hostname: str | None = None
    kernel_version: str | None = None
    kernel_cmdline: str | None = None
    kernel_cmdline_append: list[str] = field(default_factory=list)
    # {"action": "add"|"remove", "name": str, "sudo": bool?, "groups": [...], "shell": str?, "home": str?};
    # name REFERRED_USER: a pronoun for a user this request does not name ("make her an admin" in an edit)
    users: list[dict] = field(default_factory=list)
    immutability: bool | None = None
    secure_boot: bool | None = None
    artifacts: list[str] = field(default_factory=list)
    name: str | None = None
    # Groups named by their own software ("docker"), not by their role's words: their packages count as named
    groups_named: list[str] = field(default_factory=list)
    # What the firewall lets in: ports ("443/tcp", "8000-8010/tcp") and services by name ("https")
    open_ports: list[str] = field(default_factory=list)
    image_version: str | None = None  # image.version ("version 2.1.0", "set the image version to 1.2")
    is_question: bool = False
    unparsed: list[str] = field(default_factory=list)
    # Additions beyond the first agreed API (all optional, defaults keep callers working).
    kernel_cmdline_remove: list[str] = field(default_factory=list)
    # "2 isolated cores": how many CPUs to isolate, not which; the template's isolated CPUs decide (system_edits)
    isolated_cpu_count: int | None = None
    disk_size_delta: str | None = None  # "+2GiB", "-1GiB" or "x2"
    disk_direction: str | None = None  # "down" / "up": the way a size said with it was to move ("smaller, 10 gigs")
    remove_artifacts: list[str] = field(default_factory=list)
    artifact_compression: str | None = None
    bootloader: str | None = None  # grub | systemd-boot
    boot_type: str | None = None  # efi | legacy
    use_cases: list[str] = field(default_factory=list)  # use-case ids (edge, iot, ...) for names and metadata
    notes: list[str] = field(default_factory=list)  # things understood but deliberately not applied
    # Targets named that cannot be built, each with the closest supported choice ("fedora 40 is not supported ...").
    unsupported: list[str] = field(default_factory=list)
    minimal: bool = False  # "minimal", "bare", "slim": start from the target's minimal base
    corrected: list[str] = field(default_factory=list)  # spelling fixes applied ("dokcer -> docker")
    arch_named: bool = False  # the text or the caller named the architecture (else x86_64 is a default)
    group_modes: dict[str, str] = field(default_factory=dict)  # group -> how it runs ("mac": "permissive")
    # System settings written as configuration commands (server/knowledge/system_settings.py): {"cmd": str,
    # "label": "timezone Europe/Berlin", "setting": str, "replaces": regex of the commands it stands in for,
    # "packages": [what the command needs]}
    configurations: list[dict] = field(default_factory=list)
    ssh_keys: list[dict] = field(default_factory=list)  # {"user": str, "key": "ssh-ed25519 AAAA… comment"}
    uki: bool | None = None  # kernel.uki: the kernel as a unified kernel image (booted by systemd-boot)
    hardware: bool | None = None  # True: the image runs on a machine of its own (bare metal, a NUC, a board)
    autologin: str | None = None  # automatic login, in the words said ("auto login")
    autologin_user: str | None = None  # the user it logs in, when said ("autologin as guest")
    # The partition the conversation's last edit added or changed (the refinement sets it): what a filesystem
    # said with no place ("make it xfs", "change its filesystem") and "that partition" among several mean.
    last_partition: str | None = None
    # The disk section the conversation's image last had, with its revision (the refinement sets it while the image
    # has none): an iso made a raw disk again gets its own layout back, not a default one.
    earlier_disk: tuple[int, dict[str, Any]] | None = None

    def is_empty(self) -> bool:
        """True when the text asked for nothing the composer can act on."""
        ignore = {"is_question", "unparsed", "use_cases", "notes", "unsupported", "minimal", "corrected",
                  "arch_named", "last_partition", "earlier_disk", "autologin", "autologin_user", "groups_named"}
        return not any(
            value is not None if isinstance(value, bool) or value is None else bool(value)
            for key, value in asdict(self).items()
            if key not in ignore
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

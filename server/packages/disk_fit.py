"""Does the install closure fit the partition that holds ``/``?

The estimate (one place; the composer calls ``estimate_min_disk_size`` when it picks or changes a
disk size, validation calls ``check_disk_fit``):

    content  = installed size of the closure x (1 + ALLOCATION_SLACK)
             + INITRAMFS_BYTES                      (generated at build time, in no package)
             + KERNEL_ALLOWANCE_BYTES               (only when no kernel package is in the closure)
             + PACKAGE_DB_FIXED_BYTES + PACKAGE_DB_PER_PACKAGE_BYTES x packages
    partition >= (content + fs fixed) / (1 - fs fraction)

Filesystem overheads (``FS_OVERHEAD``): ext4 reserves 5 % for root (mke2fs -m 5) plus about 1.6 % of
inode tables (256-byte inodes, one per 16 KiB) and a journal (64 MiB at these sizes); xfs keeps about
1 % and a log; btrfs about 2 % metadata plus system chunks. Installed-Size (deb, KiB) and size
installed (rpm, bytes) are the sums of file sizes, so ALLOCATION_SLACK adds the block rounding of
many small files.

A root partition smaller than the estimate is an error (with the numbers and the smallest size that
fits); one within WARN_MARGIN (15 %) of it is a warning. When ``/usr`` or ``/var`` are separate
partitions the indexes do not say which files land where, so their capacities are added to ``/``'s
and the result says so.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from ..knowledge.sizes import fmt_bytes, template_bytes
from ..knowledge.template_format import load_template_format

MiB = 1024**2
GiB = 1024**3

ALLOCATION_SLACK = 0.05
INITRAMFS_BYTES = 96 * MiB
KERNEL_ALLOWANCE_BYTES = 400 * MiB
PACKAGE_DB_FIXED_BYTES = 64 * MiB  # apt lists / rpmdb, logs, machine-id, ssh host keys, locales
PACKAGE_DB_PER_PACKAGE_BYTES = 32 * 1024  # /var/lib/dpkg/info/* or rpmdb headers per package
WARN_MARGIN = 0.15
# fsType -> (fraction of the partition, fixed bytes)
FS_OVERHEAD: dict[str, tuple[float, int]] = {
    "ext4": (0.066, 64 * MiB),
    "ext3": (0.066, 64 * MiB),
    "ext2": (0.066, 0),
    "xfs": (0.01, 64 * MiB),
    "btrfs": (0.02, 128 * MiB),
}
_DEFAULT_FS = "ext4"
KERNEL_PACKAGE_PREFIXES = ("linux-image-", "kernel", "linux-signed-image-")


@dataclass
class SpaceEstimate:
    installed_bytes: int
    package_count: int
    overhead: dict[str, int]  # name -> bytes, each documented above
    content_bytes: int  # what the filesystem must hold
    fs_type: str
    min_partition_bytes: int  # smallest partition (whole MiB) that holds content_bytes

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class DiskFit:
    checked: bool
    status: str  # "fits" | "tight" | "too_small" | "unknown"
    path: str  # where in the template, e.g. $.disk.partitions[1].end
    capacity_bytes: int | None
    estimate: SpaceEstimate | None
    min_partition_bytes: int | None
    min_disk_bytes: int | None  # smallest disk.size (whole GiB) that fits, when the root grows with the disk
    message: str
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def has_kernel_package(names: list[str]) -> bool:
    return any(n.startswith(KERNEL_PACKAGE_PREFIXES) for n in names)


def estimate_required_bytes(installed_bytes: int, package_count: int, *, fs_type: str | None = None,
                            has_kernel: bool = True) -> SpaceEstimate:
    """The space a root filesystem needs for a closure of ``package_count`` packages."""
    fs = (fs_type or _DEFAULT_FS).lower()
    fraction, fixed = FS_OVERHEAD.get(fs, FS_OVERHEAD[_DEFAULT_FS])
    overhead = {
        "allocation_slack": int(installed_bytes * ALLOCATION_SLACK),
        "initramfs": INITRAMFS_BYTES,
        "package_database": PACKAGE_DB_FIXED_BYTES + PACKAGE_DB_PER_PACKAGE_BYTES * package_count,
    }
    if not has_kernel:
        overhead["kernel_allowance"] = KERNEL_ALLOWANCE_BYTES
    content = installed_bytes + sum(overhead.values())
    need = (content + fixed) / (1 - fraction)
    overhead["filesystem"] = int(need) - content
    return SpaceEstimate(installed_bytes, package_count, overhead, content, fs,
                         int(math.ceil(need / MiB)) * MiB)


@dataclass
class _Part:
    index: int
    mount: str
    fs: str | None
    start: int | None
    end: int | None  # None: unknown; grows to the disk end when the template says "0"
    grows: bool

    def size(self, disk_bytes: int | None, tail: int) -> int | None:
        if self.start is None:
            return None
        if self.grows:
            return None if disk_bytes is None else disk_bytes - tail - self.start
        return None if self.end is None else self.end - self.start


def _partitions(data: dict[str, Any]) -> list[_Part]:
    disk = found if isinstance(found := data.get("disk"), dict) else {}
    out: list[_Part] = []
    for i, p in enumerate(disk.get("partitions") or []):
        if not isinstance(p, dict):
            continue
        start, _ = template_bytes(p.get("start"))
        end, _ = template_bytes(p.get("end"))
        out.append(_Part(i, str(p.get("mountPoint") or ""), p.get("fsType"), start,
                         None if end in (None, 0) else end, end == 0))
    return out


def _disk(data: dict[str, Any]) -> tuple[int | None, int]:
    disk = found if isinstance(found := data.get("disk"), dict) else {}
    size, _ = template_bytes(disk.get("size")) if "size" in disk else (None, None)
    # GPT keeps a backup table at the end of the disk too.
    return (size or None), load_template_format().table(str(disk.get("partitionTableType", "gpt"))).backup_bytes


def _header(data: dict[str, Any]) -> int:
    disk = found if isinstance(found := data.get("disk"), dict) else {}
    return load_template_format().table(str(disk.get("partitionTableType", "gpt"))).header_bytes


def check_disk_fit(data: dict[str, Any], installed_bytes: int, package_names: list[str]) -> DiskFit:
    """Compare the closure (``installed_bytes`` over ``package_names``) with the template's root space."""
    disk_bytes, tail = _disk(data)
    parts = _partitions(data)
    notes: list[str] = []
    root = next((p for p in parts if p.mount == "/"), None)
    if root is None and parts:
        return DiskFit(False, "unknown", "$.disk.partitions", None, None, None, None,
                       "No partition is mounted at /; disk fit not checked.")
    if root is None:
        if disk_bytes is None:
            return DiskFit(False, "unknown", "$.disk", None, None, None, None,
                           "The template gives neither partitions nor disk.size; disk fit not checked.")
        capacity: int | None = disk_bytes - _header(data) - tail
        path, fs, grows = "$.disk.size", None, True
        label = "the disk (no partitions)"
    else:
        capacity = root.size(disk_bytes, tail)
        path = f"$.disk.partitions[{root.index}].{'end' if not root.grows else 'start'}"
        if root.grows:
            path = "$.disk.size"
        fs, grows = root.fs, root.grows
        label = f"root partition #{root.index + 1} (/{', ' + fs if fs else ''})"
        for extra in ("/usr", "/var"):
            sep = next((p for p in parts if p.mount == extra), None)
            if sep is not None:
                size = sep.size(disk_bytes, tail)
                if size is not None and capacity is not None:
                    capacity += size
                    notes.append(f"{extra} is a separate partition ({fmt_bytes(size)}); the indexes do not say "
                                 f"which files land there, so its space is counted together with /.")
    est = estimate_required_bytes(installed_bytes, len(package_names), fs_type=fs,
                                  has_kernel=has_kernel_package(package_names))
    if capacity is None:
        return DiskFit(False, "unknown", path, None, est, est.min_partition_bytes, None,
                       f"The size of {label} cannot be computed from the template; the closure needs at least "
                       f"{fmt_bytes(est.min_partition_bytes)}.", notes)
    deficit = est.min_partition_bytes - capacity
    min_disk = None
    if disk_bytes is not None and grows:
        min_disk = int(math.ceil((disk_bytes + max(deficit, 0)) / GiB)) * GiB
    need = (f"needs {fmt_bytes(est.min_partition_bytes)} ({fmt_bytes(installed_bytes)} installed by "
            f"{len(package_names)} packages + {fmt_bytes(est.min_partition_bytes - installed_bytes)} overhead: "
            + ", ".join(f"{k.replace('_', ' ')} {fmt_bytes(v)}" for k, v in est.overhead.items()) + ")")
    if deficit > 0:
        fix = f"the smallest {('disk.size' if grows and disk_bytes else 'root partition')} that fits is " + (
            fmt_bytes(min_disk) if min_disk else fmt_bytes(est.min_partition_bytes))
        return DiskFit(True, "too_small", path, capacity, est, est.min_partition_bytes, min_disk,
                       f"{label} holds {fmt_bytes(capacity)} but the install closure {need}; {fix}.", notes)
    if capacity < est.min_partition_bytes * (1 + WARN_MARGIN):
        spare = capacity - est.min_partition_bytes
        return DiskFit(True, "tight", path, capacity, est, est.min_partition_bytes, min_disk,
                       f"{label} holds {fmt_bytes(capacity)}; the install closure {need}, leaving only "
                       f"{fmt_bytes(spare)} ({spare / capacity:.0%}) free.", notes)
    return DiskFit(True, "fits", path, capacity, est, est.min_partition_bytes, min_disk,
                   f"{label} holds {fmt_bytes(capacity)}; the install closure {need}.", notes)


def estimate_min_disk_size(data: dict[str, Any], installed_bytes: int, package_names: list[str]) -> int:
    """Smallest whole-GiB ``disk.size`` whose root holds the closure, given the template's other partitions.

    For the composer: everything before the root partition (and fixed partitions after it) keeps its
    size; the root grows. Without partitions the whole disk is the root. The result includes the
    WARN_MARGIN headroom, so a disk of this size passes ``check_disk_fit`` without a warning."""
    parts = _partitions(data)
    root = next((p for p in parts if p.mount == "/"), None)
    fs = root.fs if root is not None else None
    est = estimate_required_bytes(installed_bytes, len(package_names), fs_type=fs,
                                  has_kernel=has_kernel_package(package_names))
    _, tail = _disk(data)
    before = root.start if root is not None and root.start is not None else _header(data)
    after = sum(p.end - p.start for p in parts if root is not None and p.index > root.index
                and p.end is not None and p.start is not None)
    need = before + est.min_partition_bytes + after + tail
    return int(math.ceil(need * (1 + WARN_MARGIN) / GiB)) * GiB

"""Disk layout arithmetic for the composer: partitions added, removed, resized, shifted, and the disk
resized with its flexible partitions following (server/composer/disk_edits.py drives it through :class:`Layout`)."""

from __future__ import annotations

import math
import re
from typing import Any, Protocol

from ..knowledge.loader import Capabilities
from ..knowledge.sizes import fmt_offset as _fmt_mib
from ..knowledge.sizes import fmt_size as _fmt_size
from ..knowledge.sizes import template_mib as _mib
from ..validation.disk_rules import is_bios_boot

# dm-verity hash partition size used by the upstream default layouts (osv default-raw-*.yml).
VERITY_HASH_MIB = 500
DEFAULT_NEW_PARTITION_MIB = 1024
MIN_ROOT_MIB = 1024
MIN_OTHER_MIB = 256
# What the partition that fills the disk keeps when a partition added or grown before it would take its room
# (Layout._needs_own_room): a root that small is often full after the first updates.
ROOM_KEPT_MIB = 4096
BIOS_BOOT_MIB = 4  # GRUB's i386-pc core image needs well under 1 MiB; upstream's template gives 4
GPT_TAIL_MIB = 1  # the backup GPT lives in the last sectors; fixed partitions must end before it
THAT_PARTITION = "@that"  # the mount point of "that partition": Layout.referent says which it is
# A filesystem said with no place ("make it xfs"): the partition the last edit touched (RequestSpec.last_partition),
# else root.
LAST_EDITED = "@last"


class EditLog(Protocol):
    """What the layout needs of the edit that drives it (server/composer/editing.py TemplateEdit): the
    knowledge, and the lists it reports its changes and problems into."""

    caps: Capabilities
    changes: list[str]
    problems: list[str]


def part_id(part: Any) -> str:
    return str(part.get("id", "")) if isinstance(part, dict) else ""


def is_fill(end: Any) -> bool:
    return end is None or str(end).strip() in ("0", "")


def changed_by(mib: int, delta: str) -> int | None:
    """A size in MiB changed by "+2GiB", "-1GiB" or a factor "x2", "x0.5"; None when the change is unreadable."""
    if delta.startswith("x"):
        try:
            return int(mib * float(delta[1:]))
        except ValueError:
            return None
    amount = _mib(delta[1:])
    if amount is None or delta[0] not in "+-":
        return None
    return mib + amount if delta[0] == "+" else mib - amount


class Layout:
    """Partition arithmetic on one disk (MiB, upstream's start/end strings, "0" = end of disk)."""

    def __init__(self, edit: EditLog, disk: dict):
        # ``edit`` is the composer's edit in progress: its caps, and the changes and problems it reports.
        self.edit = edit
        self.disk = disk
        if not isinstance(disk.get("partitions"), list):
            disk["partitions"] = []
        self.parts: list[dict] = disk["partitions"]
        self.size_mib = _mib(disk.get("size"))

    def find(self, mount: str) -> int | None:
        """The index of the partition mounted at ``mount`` (or of that id), if the layout has one."""
        return self._find(mount)

    def _find(self, mount: str) -> int | None:
        for i, p in enumerate(self.parts):
            if not isinstance(p, dict):
                continue
            mp = str(p.get("mountPoint", ""))
            if mp == mount or (
                mount == "swap" and (p.get("type") == "linux-swap" or p.get("fsType") == "linux-swap")
            ):
                return i
            if mount == "/" and part_id(p) in ("rootfs", "root") and mp in ("", "/"):
                return i
        return None

    def _fill_index(self) -> int | None:
        for i, p in enumerate(self.parts):
            if isinstance(p, dict) and is_fill(p.get("end")):
                return i
        return None

    def _fixed_end(self) -> int:
        ends = [_mib(p.get("end")) for p in self.parts if isinstance(p, dict) and not is_fill(p.get("end"))]
        return max((e for e in ends if e is not None), default=0)

    def _min_size(self, part: dict) -> int:
        return MIN_ROOT_MIB if part.get("mountPoint") == "/" else MIN_OTHER_MIB

    def _fits(self) -> int | None:
        """The smallest disk size (MiB) that holds the layout, or None if the current one does."""
        if not self.size_mib:
            return None
        need = self._fixed_end() + GPT_TAIL_MIB
        fill = self._fill_index()
        if fill is not None:
            start = _mib(self.parts[fill].get("start")) or 0
            need = max(need, start + self._min_size(self.parts[fill]))
        return need if need > self.size_mib else None

    def _minimum(self) -> int:
        """The smallest disk (MiB) the layout holds with every data partition and the one that fills the disk at
        its minimum: what comes before the first partition, the partitions, the backup GPT."""
        parts = [p for p in self.parts if isinstance(p, dict)]
        first = min((_mib(p.get("start")) or 0 for p in parts), default=0)
        return first + GPT_TAIL_MIB + sum(self._min_size(p) if is_fill(p.get("end")) or self._flexible(p)
                                          else self._span(p) for p in parts)

    def grow_disk_to(self, mib: int) -> None:
        old = self.disk.get("size")
        gib = math.ceil(mib / 1024)
        self.disk["size"] = f"{gib}GiB"
        self.size_mib = gib * 1024
        self.edit.changes.append(f"disk size {old} -> {self.disk['size']} so the partitions fit")

    def set_size(self, size: str) -> None:
        new = _mib(size)
        if new is None:
            self.edit.problems.append(
                f"disk size {size!r} is not a size upstream understands (use e.g. 8GiB)"
            )
            return
        old_text, old = self.disk.get("size"), self.size_mib
        self.size_mib = new
        need = self._fits()
        if need and self._shrink_flexible(need - new):
            need = self._fits()
        if need:
            self.size_mib = old
            fixed = [f"{part_id(p)} ({_fmt_size(self._span(p))})" for p in self.parts
                     if isinstance(p, dict) and not self._flexible(p) and not is_fill(p.get("end"))]
            self.edit.problems.append(
                f"disk size {size} is too small: the partitions need at least {_fmt_size(self._minimum())} even "
                f"with every data partition at its minimum; fixed partitions: {', '.join(fixed) or 'none'}"
            )
            return
        self.disk["size"] = size
        # the partition that takes the rest of the disk gets the room, or gives it: said when it is not root
        filler = next((p for p in self.parts if isinstance(p, dict) and is_fill(p.get("end"))), None)
        root = next((p for p in self.parts if isinstance(p, dict) and p.get("mountPoint") == "/"), None)
        whose = ""
        if filler is not None and root is not None and filler is not root and old is not None and new != old:
            whose = (f" ({filler.get('mountPoint') or part_id(filler)} takes the rest of the disk, so the room "
                     f"{'goes to' if new > old else 'comes from'} it; root stays {_fmt_size(self._span(root))})")
        self.edit.changes.append(f"disk size {old_text or 'unset'} -> {size}{whose}")

    @staticmethod
    def _span(part: dict) -> int:
        return (_mib(part.get("end")) or 0) - (_mib(part.get("start")) or 0)

    @staticmethod
    def _flexible(part: dict) -> bool:
        """A partition whose size can follow the disk: a mounted data or root file system, not the ESP, /boot,
        a BIOS boot or a dm-verity hash partition."""
        mount = str(part.get("mountPoint") or "")
        return (mount.startswith("/") and mount not in ("/boot/efi", "/boot") and part.get("type") not in
                ("esp", "bios", "xbootldr") and not is_fill(part.get("end")))

    def _shrink_flexible(self, excess: int) -> bool:
        """Take ``excess`` MiB from the fixed-size data partitions, largest first, down to their minimums.
        Returns whether anything shrank (the plan is applied only when it frees the whole excess)."""
        plan: list[tuple[int, int]] = []
        left = excess
        order = sorted((i for i, p in enumerate(self.parts) if isinstance(p, dict) and self._flexible(p)),
                       key=lambda i: -self._span(self.parts[i]))
        for i in order:
            room = self._span(self.parts[i]) - self._min_size(self.parts[i])
            take = min(max(room, 0), left)
            if take > 0:
                plan.append((i, take))
                left -= take
            if left <= 0:
                break
        if left > 0 or not plan:
            return False
        for i, take in sorted(plan, reverse=True):
            part = self.parts[i]
            old = self._span(part)
            part["end"] = _fmt_mib((_mib(part.get("end")) or 0) - take)
            self._shift_after(i, -take)
            self.edit.changes.append(f"partition {part.get('mountPoint')}: {_fmt_size(old)} -> "
                                     f"{_fmt_size(old - take)} to fit the disk")
        return True

    def change_size_by(self, delta: str) -> None:
        if not self.size_mib:
            self.edit.problems.append("the disk has no size to change; give an absolute size (e.g. 8GiB)")
            return
        new = changed_by(self.size_mib, delta)
        if new is None:
            self.edit.problems.append(f"cannot read the size change {delta!r}")
            return
        if new <= 0:
            self.edit.problems.append(f"the disk is {_fmt_size(self.size_mib)}: it cannot shrink by {delta[1:]}")
            return
        self.set_size(_fmt_size(new))

    def new_partition(self, pid: str, mount: str, start: int, end: int | None, fs: str | None = None) -> dict:
        caps = self.edit.caps
        swap = mount == "swap"
        ptype = caps.mount_types.get(mount, "linux")
        part: dict[str, Any] = {"id": pid}
        styled = [p for p in self.parts if isinstance(p, dict)]
        if styled and all("name" in p for p in styled):
            part["name"] = pid.upper() if all(str(p.get("name", "")).isupper() for p in styled) else pid
        part["type"] = ptype
        if any("typeUUID" in p for p in styled) and ptype in caps.partition_types:
            part["typeUUID"] = caps.partition_types[ptype]
        part["start"] = _fmt_mib(start)
        part["end"] = "0" if end is None else _fmt_mib(end)
        part["fsType"] = "linux-swap" if swap else fs or "ext4"
        part["mountPoint"] = "none" if swap else mount
        part["mountOptions"] = "sw" if swap else "defaults"
        if styled and all("flags" in p for p in styled):
            part["flags"] = []
        return part

    def _unique_id(self, mount: str) -> str:
        base = "swap" if mount == "swap" else re.sub(r"[^A-Za-z0-9]+", "_", mount.strip("/")) or "part"
        ids = {part_id(p) for p in self.parts}
        pid, n = base, 2
        while pid in ids:
            pid, n = f"{base}{n}", n + 1
        return pid

    def add(self, mount: str, size: str | None, fs: str | None, fill: bool, grow_disk: bool = False,
            filler_ends_at: int | None = None) -> None:
        """Add a partition. ``grow_disk`` (no disk size was asked for): a partition placed before the one that
        fills the disk grows the disk by its size when it would take over half of that one (_needs_own_room);
        otherwise it takes its room from that partition. ``filler_ends_at`` (MiB; the disk's size before the
        request grew it): a partition that is to fill the disk starts there, the one filling it now keeping its
        size, instead of taking half of that one."""
        found = self._find(mount)
        if found is not None:
            fill_i = self._fill_index()
            if size:
                self.resize(mount, size, grow_disk=grow_disk)
            if fs:  # "xfs for /var" where the disk has one: that partition's filesystem
                self.set_fs(mount, fs)
            if size or fs:
                return
            if not fill:
                self.edit.changes.append(f"the disk already has a {mount} partition")
            elif fill_i == found:
                self.edit.changes.append(f"{mount} already fills the rest of the disk")
            else:  # another partition takes the end of the disk: moving partitions is not done here
                taker = f"{part_id(self.parts[fill_i])} does" if fill_i is not None else "no partition does"
                self.edit.problems.append(f"{mount} does not fill the rest of the disk ({taker}); remove or size "
                                          "the partition after it")
            return
        size_mib = _mib(size) if size else None
        if size and size_mib is None:
            self.edit.problems.append(f"partition size {size!r} is not a size upstream understands")
            return
        chosen = size_mib or DEFAULT_NEW_PARTITION_MIB
        note = "" if size_mib else f" (no size given; used {_fmt_size(chosen)})"
        pid = self._unique_id(mount)
        fill_i = self._fill_index()
        if fill and fill_i is not None:
            grower = self.parts[fill_i]
            start = _mib(grower.get("start")) or 0
            available = (self.size_mib or start + 2 * MIN_ROOT_MIB) - start
            keep = max(self._min_size(grower), (available // 2) // 256 * 256)
            if filler_ends_at and self.size_mib and start + self._min_size(grower) <= filler_ends_at < self.size_mib:
                keep = filler_ends_at - start
            grower["end"] = _fmt_mib(start + keep)
            part = self.new_partition(pid, mount, start + keep, None, fs)
            self.parts.insert(fill_i + 1, part)
            self.edit.changes.append(
                f"added partition {mount} from {part['start']} to the end of the disk; {part_id(grower)} fixed at {_fmt_size(keep)}"
            )
        elif fill_i is not None:
            grower = self.parts[fill_i]
            start = _mib(grower.get("start")) or 0
            part = self.new_partition(pid, mount, start, start + chosen, fs)
            self.parts.insert(fill_i, part)
            grower["start"] = _fmt_mib(start + chosen)
            self.edit.changes.append(
                f"added partition {mount} ({_fmt_size(chosen)}, {part['fsType']}) at {part['start']}-{part['end']}{note}; "
                f"{part_id(grower)} now starts at {grower['start']}"
            )
            if grow_disk and self._needs_own_room(chosen, start):
                old = self.disk.get("size")
                self.size_mib = math.ceil(((self.size_mib or 0) + chosen) / 1024) * 1024
                self.disk["size"] = _fmt_size(self.size_mib)
                self.edit.changes.append(f"disk size {old} -> {self.disk['size']}, so {part_id(grower)} keeps its size "
                                         "(give a disk size to take the room from it instead)")
        else:
            start = self._fixed_end() or 1
            part = self.new_partition(pid, mount, start, None if fill else start + chosen, fs)
            self.parts.append(part)
            self.edit.changes.append(
                f"added partition {mount} ({'rest of the disk' if fill else _fmt_size(chosen)}, {part['fsType']}) "
                f"at {part['start']}{note}"
            )
        need = self._fits()
        if need:
            self.grow_disk_to(need)

    def set_fs(self, mount: str, fs: str) -> None:
        index = self._find(mount)
        if index is None:
            self.edit.problems.append(f"no {mount} partition to change")
            return
        part = self.parts[index]
        if part.get("fsType") != fs:
            self.edit.changes.append(f"partition {mount}: filesystem {part.get('fsType')} -> {fs}")
            part["fsType"] = fs
        else:  # said, so an edit asking for what is there is answered rather than "not understood"
            self.edit.changes.append(f"partition {mount} is already {fs}")

    def _needs_own_room(self, more: int, filler_start: int) -> bool:
        """Whether ``more`` MiB for a partition before the one that fills the disk (starting at ``filler_start``)
        grow the disk rather than come from that one: they would take over half of it and leave it under
        ROOM_KEPT_MIB ("a 50GB /var/lib/pgsql" on an 8GiB image had left root 1.4 GiB, "2 GiB of swap" on a
        4 GiB one 1.5 GiB). Otherwise they come from it: a disk enlarged first for a partition ("+10G", then "a
        2G /data") or given its size ("a 50GB disk", then "a 30GB /var/lib/docker") stays the size it was."""
        if not self.size_mib or more <= 0:
            return False
        filler = self.size_mib - filler_start
        return more > filler // 2 and filler - more < ROOM_KEPT_MIB

    def referent(self, mount: str, last: str | None = None) -> str | None:
        """The mount point an edit means. ``LAST_EDITED`` ("make it xfs") is ``last``, the partition the last edit
        touched, when the disk still has it, else root. ``THAT_PARTITION`` ("make that partition xfs") is the
        template's one partition beyond the boot, root and swap ones, or ``last`` among several; otherwise None
        and the problem said."""
        have = {str(p.get("mountPoint")) for p in self.parts if isinstance(p, dict)}
        if mount == LAST_EDITED:
            return last if last in have else "/"
        if mount != THAT_PARTITION:
            return mount
        own = [str(p.get("mountPoint")) for p in self.parts if isinstance(p, dict) and p.get("mountPoint")
               and p.get("mountPoint") not in ("/", "/boot/efi", "none", "swap") and p.get("type") != "esp"]
        if len(own) == 1:
            return own[0]
        if last in own:
            return last
        self.edit.problems.append("which partition is meant? " + (
            f"name its mount point ({', '.join(own)})" if own else "the image has no partition beyond boot and root"))
        return None

    def resize(self, mount: str, size: str, grow_disk: bool = False) -> None:
        """A partition's size. ``grow_disk`` (no disk size was asked for): the partition that fills the disk keeps
        filling it, the disk sized for it to be ``size``; a partition before it grown by over half of it grows the
        disk instead (_needs_own_room). Otherwise the filling partition gives or takes the room, or is fixed at
        ``size``."""
        index = self._find(mount)
        if index is None:
            self.edit.problems.append(f"no {mount} partition to resize")
            return
        new = _mib(size)
        if new is None:
            self.edit.problems.append(f"partition size {size!r} is not a size upstream understands")
            return
        part = self.parts[index]
        start = _mib(part.get("start")) or 0
        if is_fill(part.get("end")) and grow_disk and self.size_mib and index == len(self.parts) - 1:
            old = self.disk.get("size")
            self.size_mib = start + new + GPT_TAIL_MIB
            self.disk["size"] = _fmt_size(self.size_mib)
            self.edit.changes.append(f"partition {mount}: {size}, still the rest of the disk (disk size {old} -> "
                                     f"{self.disk['size']})")
            return
        if is_fill(part.get("end")):
            part["end"] = _fmt_mib(start + new)
            self.edit.changes.append(f"partition {mount}: fixed at {size} (was the rest of the disk)")
        else:
            old_end = _mib(part.get("end")) or start
            delta = start + new - old_end
            fill_i = self._fill_index()
            filler_start = _mib(self.parts[fill_i].get("start")) if fill_i is not None and fill_i > index else None
            own_room = grow_disk and filler_start is not None and self._needs_own_room(delta, filler_start)
            part["end"] = _fmt_mib(start + new)
            self._shift_after(index, delta)
            # The partition that fills the disk gives or takes the room when the disk keeps its size: said, with
            # its new size, where "moved" alone had hidden that root shrank.
            given = (f"; {part_id(self.parts[fill_i])} {'gives' if delta > 0 else 'takes'} the room: now "
                     f"{_fmt_size(self.size_mib - filler_start - delta - GPT_TAIL_MIB)}"
                     if filler_start is not None and fill_i is not None and self.size_mib and not own_room else "")
            self.edit.changes.append(
                f"partition {mount}: {_fmt_size(old_end - start)} -> {size}" + self._shift_note(index, delta) + given
            )
            if own_room and fill_i is not None:
                old_size = self.disk.get("size")
                self.size_mib = (self.size_mib or 0) + delta
                self.disk["size"] = _fmt_size(self.size_mib)
                self.edit.changes.append(f"disk size {old_size} -> {self.disk['size']}, so "
                                         f"{part_id(self.parts[fill_i])} keeps its size")
        need = self._fits()
        if need:
            self.grow_disk_to(need)

    def resize_by(self, mount: str, delta: str, grow_disk: bool = False) -> None:
        """A partition's size changed by an amount ("+2GiB") or a factor ("x2"), from the size it has now (the rest
        of the disk, for the partition that fills it)."""
        index = self._find(mount)
        if index is None:
            self.edit.problems.append(f"no {mount} partition to resize")
            return
        part = self.parts[index]
        start = _mib(part.get("start")) or 0
        end = self.size_mib if is_fill(part.get("end")) else _mib(part.get("end"))
        new = changed_by(end - start, delta) if end else None
        if new is None or new <= 0:
            self.edit.problems.append(f"cannot change the {mount} partition's size by {delta!r}")
            return
        self.resize(mount, _fmt_size(new), grow_disk=grow_disk)

    def remove(self, mount: str) -> None:
        index = self._find(mount)
        if index is None:
            self.edit.changes.append(f"nothing to remove: no {mount} partition")
            return
        part = self.parts[index]
        if part.get("mountPoint") in ("/", "/boot/efi") or part.get("type") == "esp":
            self.edit.problems.append(
                f"refusing to remove the {part.get('mountPoint') or part.get('type')} partition: the image cannot boot without it"
            )
            return
        start = _mib(part.get("start")) or 0
        if is_fill(part.get("end")):
            self.parts.pop(index)
            if index > 0 and isinstance(self.parts[index - 1], dict):
                self.parts[index - 1]["end"] = "0"
                self.edit.changes.append(
                    f"removed partition {mount}; {part_id(self.parts[index - 1])} now fills the disk"
                )
            return
        size = (_mib(part.get("end")) or start) - start
        self.parts.pop(index)
        self._shift_after(index - 1, -size)
        self.edit.changes.append(
            f"removed partition {mount} ({_fmt_size(size)})" + self._shift_note(index - 1, -size)
        )

    def bios_boot_partition(self) -> str | None:
        """A BIOS boot partition first on a GPT disk, for GRUB's i386-pc core (as upstream's ubuntu24 cloud template
        has it, 4 MiB), the others moved up by its size; None when the disk has one or is MBR, else what was done."""
        if str(self.disk.get("partitionTableType") or "gpt").lower() != "gpt" or not self.parts:
            return None
        if any(isinstance(p, dict) and is_bios_boot(p) for p in self.parts):
            return None
        first = _mib(self.parts[0].get("start")) if isinstance(self.parts[0], dict) else None
        start = first if first is not None else 1
        part: dict[str, Any] = {"id": "bios", "type": "bios"}
        if any(isinstance(p, dict) and "typeUUID" in p for p in self.parts):
            part["typeUUID"] = self.edit.caps.partition_types["bios"]
        part.update({"flags": ["bios_grub"], "start": _fmt_mib(start), "end": _fmt_mib(start + BIOS_BOOT_MIB),
                     "fsType": "ext2"})
        self.parts.insert(0, part)
        self._shift_after(0, BIOS_BOOT_MIB)
        need = self._fits()
        if need:
            self.grow_disk_to(need)
        return (f"added a {BIOS_BOOT_MIB}MiB BIOS boot partition (bios_grub) first, for GRUB's BIOS core"
                + self._shift_note(0, BIOS_BOOT_MIB))

    def _shift_after(self, index: int, delta: int) -> None:
        for part in self.parts[index + 1 :]:
            if not isinstance(part, dict):
                continue
            for key in ("start", "end"):
                if key == "end" and is_fill(part.get(key)):
                    continue
                value = _mib(part.get(key))
                if value is not None:
                    part[key] = _fmt_mib(value + delta)

    def insert_after(self, index: int, part: dict, size: int) -> None:
        self.parts.insert(index + 1, part)
        self._shift_after(index + 1, size)
        need = self._fits()
        if need:
            self.grow_disk_to(need)

    def _shift_note(self, index: int, delta: int) -> str:
        following = [part_id(p) for p in self.parts[index + 1 :] if isinstance(p, dict)]
        if not following or not delta:
            return ""
        return f"; moved {', '.join(following)} by {'+' if delta > 0 else '-'}{_fmt_size(abs(delta))}"


__all__ = ["DEFAULT_NEW_PARTITION_MIB", "GPT_TAIL_MIB", "LAST_EDITED", "THAT_PARTITION", "Layout", "MIN_OTHER_MIB", "MIN_ROOT_MIB",
           "VERITY_HASH_MIB", "is_fill", "part_id"]

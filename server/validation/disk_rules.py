"""Rule family: the disk. Size syntax, partition geometry (inside the table, overlaps, beyond the disk, who
grows), ids and mount points used twice, file systems, and partition types per architecture.

Facts (partition type GUIDs, table sizes, file systems) come from the knowledge layer; sizes are read by
server/knowledge/sizes.py with upstream's rule for template values.
"""

from __future__ import annotations

import re
from typing import Any

from ..knowledge.sizes import fmt_bytes, template_bytes
from ..knowledge.template_format import load_template_format
from .context import Context, PathT, closest, show

_GUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def partitions_of(ctx: Context) -> list[tuple[int, dict]]:
    return [(i, p) for i, p in enumerate(ctx.list_at("disk", "partitions")) if isinstance(p, dict)]


def _effective_guid(part: dict) -> str | None:
    guid = part.get("typeUUID")
    if isinstance(guid, str) and guid:
        return guid.lower()
    ptype = part.get("type")
    return load_template_format().partition_guid(ptype) if isinstance(ptype, str) else None


def _flags(part: dict) -> list[Any]:
    flags = part.get("flags")
    return flags if isinstance(flags, list) else []


def is_esp(part: dict) -> bool:
    flags = _flags(part)
    return part.get("type") == "esp" or _effective_guid(part) == load_template_format().partition_guid("esp") or "esp" in flags


def is_bios_boot(part: dict) -> bool:
    flags = _flags(part)
    return (
        part.get("type") in ("bios", "bios-boot")
        or _effective_guid(part) == load_template_format().partition_guid("bios")
        or "bios_grub" in flags
        or "bios-grub" in flags
    )


def part_label(i: int, part: dict) -> str:
    for key in ("id", "name"):
        if isinstance(part.get(key), str) and part[key]:
            return f"'{part[key]}'"
    return f"#{i}"


def check_disk_geometry(ctx: Context) -> None:
    disk = ctx.dict_at("disk")
    if not disk:
        return
    disk_size: int | None = None
    if "size" in disk:
        disk_size, why = template_bytes(disk["size"])
        if disk_size is None and isinstance(disk["size"], str):
            ctx.add(
                ("disk", "size"),
                f"disk.size {show(disk['size'])} is not a size os-image-composer understands",
                "disk.size_format",
                hint=why,
            )
        elif disk_size == 0:
            ctx.add(
                ("disk", "size"),
                "disk.size is 0; the image needs a real size",
                "disk.size_format",
                hint="Give the whole image size, e.g. 4GiB or 8GiB.",
            )
            disk_size = None
    gpt = disk.get("partitionTableType", "gpt") != "mbr"
    table = load_template_format().table("gpt" if gpt else "mbr")
    header = table.header_bytes
    parts = partitions_of(ctx)
    last_index = len(ctx.list_at("disk", "partitions")) - 1
    spans: list[tuple[int, float, int, dict]] = []  # start, end (inf when growing), index, partition
    grow_seen: int | None = None
    for i, part in parts:
        base: PathT = ("disk", "partitions", i)
        start = end = None
        for key in ("start", "end"):
            raw = part.get(key)
            if raw is None:
                ctx.add(
                    (*base, key),
                    f"partition {part_label(i, part)} has no {key}",
                    "partition.size_format",
                    hint=f'Add {key}: e.g. "1MiB"'
                    + ('; "0" means "to the end of the disk"' if key == "end" else ""),
                    at_key=True,
                )
                continue
            value, why = template_bytes(raw)
            if value is None:
                if isinstance(raw, str):  # non-strings are already schema errors
                    ctx.add(
                        (*base, key),
                        f"partition {part_label(i, part)} {key} {show(raw)} is not a size "
                        "os-image-composer understands",
                        "partition.size_format",
                        hint=why,
                    )
                continue
            if key == "start":
                start = value
            else:
                end = value
        if start is not None and start < header:
            ctx.add(
                (*base, "start"),
                f"partition {part_label(i, part)} starts at {fmt_bytes(start)}, inside the "
                f"{'GPT' if gpt else 'MBR'} partition table",
                "partition.start_in_table",
                hint='Start the first partition at "1MiB" (the usual alignment).',
            )
        grows = end == 0
        if grows:
            if grow_seen is not None:
                ctx.add(
                    (*base, "end"),
                    f'partition {part_label(i, part)} also uses end "0" (grow to fill the disk); '
                    f"only one partition can, and it must be the last",
                    "partition.multiple_grow",
                    hint="Give all but the last partition an explicit end.",
                )
            elif i != last_index:
                ctx.add(
                    (*base, "end"),
                    f'partition {part_label(i, part)} uses end "0" (grow to fill the disk) but is '
                    "not the last partition; the ones after it would have no space",
                    "partition.grow_not_last",
                    hint="Move this partition to the end of the list or give it an explicit end.",
                )
            grow_seen = i
        if start is not None and end is not None and not grows and start >= end:
            ctx.add(
                (*base, "end"),
                f"partition {part_label(i, part)} ends at {fmt_bytes(end)}, not after its start "
                f"{fmt_bytes(start)}",
                "partition.start_after_end",
                hint="end is an absolute offset from the start of the disk, not a length.",
            )
            continue
        if disk_size is not None:
            if start is not None and start >= disk_size:
                ctx.add(
                    (*base, "start"),
                    f"partition {part_label(i, part)} starts at {fmt_bytes(start)}, beyond "
                    f"disk.size {fmt_bytes(disk_size)}",
                    "partition.beyond_disk",
                    hint="Increase disk.size or move/shrink the partitions.",
                )
                continue
            if end is not None and not grows:
                if end > disk_size:
                    ctx.add(
                        (*base, "end"),
                        f"partition {part_label(i, part)} ends at {fmt_bytes(end)}, beyond "
                        f"disk.size {fmt_bytes(disk_size)}",
                        "partition.beyond_disk",
                        hint="Increase disk.size or end the partition earlier.",
                    )
                elif gpt and end > disk_size - table.backup_bytes:
                    ctx.warn(
                        (*base, "end"),
                        f"partition {part_label(i, part)} ends in the last 33 sectors of the "
                        "disk, where GPT keeps its backup table",
                        "partition.beyond_disk",
                        hint='Use end: "0" to fill the disk, or end a little earlier.',
                    )
        if start is not None and (end is not None):
            effective_end: float = (disk_size if disk_size is not None else float("inf")) if grows else end
            if not (grows and i != last_index):  # a misplaced grower is reported once, above
                spans.append((start, effective_end, i, part))
    _check_overlaps(ctx, spans)


def _check_overlaps(ctx: Context, spans: list[tuple[int, float, int, dict]]) -> None:
    spans.sort(key=lambda s: (s[0], s[2]))
    reach: tuple[float, int, dict] | None = None  # furthest end so far and its owner
    for start, end, i, part in spans:
        if reach is not None and start < reach[0]:
            j, other = reach[1], reach[2]
            later, earlier = (i, part), (j, other)
            if i < j:  # report at the partition that comes later in the file
                later, earlier = (j, other), (i, part)
            ctx.add(
                ("disk", "partitions", later[0], "start"),
                f"partition {part_label(*later)} overlaps partition {part_label(*earlier)}",
                "partition.overlap",
                hint="Each partition must start at or after the end of the previous one.",
            )
        if reach is None or end > reach[0]:
            reach = (end, i, part)


def check_partition_fields(ctx: Context) -> None:
    fs_types = load_template_format().filesystems
    arch = ctx.str_at("target", "arch")
    seen_ids: dict[str, int] = {}
    seen_mounts: dict[str, int] = {}
    for i, part in partitions_of(ctx):
        base: PathT = ("disk", "partitions", i)
        pid = part.get("id")
        if isinstance(pid, str) and pid:
            if pid in seen_ids:
                ctx.add(
                    (*base, "id"),
                    f"partition id '{pid}' is used twice (also partition #{seen_ids[pid]})",
                    "partition.duplicate_id",
                    hint="Partition ids must be unique; upstream uses them as keys.",
                )
            seen_ids.setdefault(pid, i)
        mount = part.get("mountPoint")
        if isinstance(mount, str) and mount not in ("", "none"):
            normal = mount.rstrip("/") or "/"
            if normal in seen_mounts:
                ctx.add(
                    (*base, "mountPoint"),
                    f"mount point '{mount}' is used twice (also partition #{seen_mounts[normal]})",
                    "partition.duplicate_mount",
                    hint="Mount each path from one partition only.",
                )
            seen_mounts.setdefault(normal, i)
        fs = part.get("fsType")
        if fs is None:
            ctx.add(
                base,
                f"partition {part_label(i, part)} has no fsType",
                "partition.fs_type",
                hint=f"Upstream refuses partitions without one; use one of {', '.join(fs_types)}.",
                at_key=True,
            )
        elif isinstance(fs, str) and fs not in fs_types:
            guess = closest(fs, fs_types)
            ctx.add(
                (*base, "fsType"),
                f"fsType '{fs}' is not supported by os-image-composer",
                "partition.fs_type",
                hint=(f"Did you mean '{guess}'? " if guess else "") + f"Supported: {', '.join(fs_types)}.",
            )
        _check_partition_type(ctx, base, i, part, arch)


def _check_partition_type(ctx: Context, base: PathT, i: int, part: dict, arch: str | None) -> None:
    fmt = load_template_format()
    guids = fmt.caps.partition_types  # upstream's type name -> GPT type GUID
    ptype, raw_guid = part.get("type"), part.get("typeUUID")
    guid = raw_guid if isinstance(raw_guid, str) else ""
    guid_ok = bool(_GUID_RE.match(guid))
    if guid and not guid_ok:
        ctx.add(
            (*base, "typeUUID"),
            f"typeUUID {show(raw_guid)} is not a GUID",
            "partition.bad_guid",
            hint=f"Use the 36-character form, e.g. {fmt.root_guid('x86_64')}, or drop typeUUID and use type.",
        )
    if isinstance(ptype, str) and ptype:
        known = guids.get(ptype)
        if known is None and not guid_ok:
            guess = closest(ptype, guids)
            ctx.warn(
                (*base, "type"),
                f"partition type '{ptype}' is unknown to os-image-composer and no typeUUID "
                "is given; the partition gets the default Linux type",
                "partition.unknown_type",
                hint=(f"Did you mean '{guess}'? " if guess else "")
                + "Known types: "
                + ", ".join(guids)
                + "; or add typeUUID.",
            )
        elif known is not None and guid_ok and ptype != "linux" and known != guid.lower():
            # 'linux' is the generic family name: reference templates pair it with xbootldr.
            named = next((n for n, g in guids.items() if g == guid.lower()), None)
            ctx.add(
                (*base, "typeUUID"),
                f"type '{ptype}' and typeUUID {guid} disagree"
                + (f" (that GUID is '{named}')" if named else ""),
                "partition.type_mismatch",
                hint=f"For '{ptype}' the GUID is {known}; upstream uses typeUUID when both are set.",
            )
    effective = guid.lower() if guid_ok else (guids.get(ptype) if isinstance(ptype, str) else None)
    root_arch = fmt.arch_of_root_guid(effective or "")
    want = fmt.root_guid(arch) if arch else None
    if want and root_arch and root_arch != arch:
        field_name = "typeUUID" if guid_ok else "type"
        want_name = next(n for n, g in guids.items() if g == want)
        # A warning, not an error: fstab still mounts it, only auto-discovery by GUID breaks, and
        # upstream ships such layouts itself (el10 default-raw-aarch64, ubuntu24-aarch64-server-cloud).
        ctx.warn(
            (*base, field_name),
            f"partition {part_label(i, part)} has the {root_arch} root partition type but target.arch is {arch}",
            "partition.arch_mismatch",
            hint=f"Use type: {want_name} (typeUUID {want}).",
        )


__all__ = ["check_disk_geometry", "check_partition_fields", "is_bios_boot", "is_esp", "part_label", "partitions_of"]

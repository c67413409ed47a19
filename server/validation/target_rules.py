"""Rule family: target, boot and build support. OS/dist pairs and the default configs upstream ships, the
bootloader against the boot mode and the disk (ESP, BIOS boot partition, root), secure boot against
immutability, and values the schema allows but the build has no branch for.
"""

from __future__ import annotations

from ..knowledge.template_format import load_template_format
from .context import Context, PathT, show
from .disk_rules import is_bios_boot, is_esp, part_label, partitions_of


def check_target(ctx: Context) -> None:
    os_name, dist = ctx.str_at("target", "os"), ctx.str_at("target", "dist")
    arch, itype = ctx.str_at("target", "arch"), ctx.str_at("target", "imageType")
    fmt = load_template_format()
    families, defaults = fmt.caps.families, fmt.default_configs
    # The schema pins dist for five OSes; redhat-compatible-distro has no such rule upstream.
    rcd = families.get("redhat-compatible-distro")
    if rcd is not None and os_name == rcd.id and dist is not None and dist not in rcd.dists:
        ctx.add(
            ("target", "dist"),
            f"target.dist is {show(dist)}, which is not a {os_name} release; "
            f"allowed: {', '.join(rcd.dists)}",
            "target.dist",
            hint=f"Use dist: {rcd.default_dist} (upstream looks for osv/{rcd.id}/{rcd.default_dist}).",
        )
    if (
        os_name in families
        and arch in ("x86_64", "aarch64", "armv7hl")  # the schema's target.arch values
        and itype is not None
        and itype in defaults
        and arch not in defaults[itype]
    ):
        ctx.warn(
            ("target", "arch"),
            f"os-image-composer ships no default configuration for a {arch} {itype} image "
            f"(it has default-{'initrd' if itype == 'img' else itype}-"
            f"{'/'.join(defaults[itype])}.yml only)",
            "target.no_defaults",
            hint="The build will fail unless you add that default config; "
            + (
                "use imageType raw for this architecture."
                if arch in defaults["raw"]
                else "use x86_64 or aarch64."
            ),
        )


def check_boot(ctx: Context) -> None:
    fmt = load_template_format()
    itype = ctx.str_at("target", "imageType")
    boot = ctx.dict_at("systemConfig", "bootloader")
    boot_type = (
        boot.get("bootType") if isinstance(boot.get("bootType"), str) else "efi"
    )  # every default is efi
    provider = boot.get("provider")
    disk = ctx.get("disk")
    parts = [p for _, p in partitions_of(ctx)]
    has_parts = bool(parts)
    gpt = ctx.get("disk", "partitionTableType") != "mbr"
    if boot_type == "legacy" and provider == "systemd-boot":
        ctx.add(
            ("systemConfig", "bootloader", "provider"),
            "systemd-boot cannot boot in legacy (BIOS) mode",
            "bootloader.legacy_systemd_boot",
            hint="Use provider: grub for legacy boot, or bootType: efi.",
        )
    if itype in ("raw", "img") and has_parts and boot_type == "efi" and not any(is_esp(p) for p in parts):
        ctx.add(
            ("disk", "partitions"),
            "EFI boot needs an EFI System Partition, but no partition is of type esp",
            "disk.esp_missing",
            at_key=True,
            hint='Add e.g. {id: boot, type: esp, flags: [esp, boot], start: "1MiB", end: "513MiB", '
            "fsType: fat32, mountPoint: /boot/efi}, or set systemConfig.bootloader.bootType: legacy.",
        )
    for i, part in partitions_of(ctx):
        fs = part.get("fsType")
        if is_esp(part) and isinstance(fs, str) and fs in fmt.filesystems and fs not in fmt.fat_filesystems:
            ctx.add(
                ("disk", "partitions", i, "fsType"),
                f"the EFI System Partition {part_label(i, part)} uses {fs}; UEFI firmware reads only FAT",
                "partition.esp_fs",
                hint="Use fsType: fat32 (or vfat).",
            )
    if boot_type == "legacy" and has_parts and gpt and not any(is_bios_boot(p) for p in parts):
        ctx.warn(
            ("systemConfig", "bootloader", "bootType"),
            "legacy boot from a GPT disk needs a BIOS boot partition for GRUB, and there is none",
            "bootloader.no_bios_boot",
            hint='Add {id: bios, type: bios, start: "1MiB", end: "5MiB", fsType: ext2, flags: [bios_grub]} '
            "or use partitionTableType: mbr.",
        )
    if itype == "raw" and isinstance(disk, dict):
        if "size" not in disk:
            ctx.add(
                ("disk",),
                "a raw image with its own disk section needs disk.size",
                "disk.size_missing",
                at_key=True,
                hint="Add size: e.g. 4GiB (the disk section replaces the default one entirely).",
            )
        if not has_parts:
            ctx.warn(
                ("disk",),
                "the disk section has no partitions; it replaces the default layout entirely",
                "disk.no_partitions",
                at_key=True,
                hint="Add partitions (ESP + root), or remove the disk section to use the distro default.",
            )
        if has_parts and not any(p.get("mountPoint") == "/" for p in parts):
            ctx.add(
                ("disk", "partitions"),
                "no partition is mounted at '/'; the image has no root file system",
                "disk.no_root",
                at_key=True,
                hint="Add a root partition, e.g. {id: rootfs, type: linux-root-amd64, fsType: ext4, mountPoint: /}.",
            )
    if not gpt and len(parts) > 4:
        ctx.warn(
            ("disk", "partitions"),
            f"an MBR disk holds at most 4 primary partitions; {len(parts)} are listed",
            "disk.mbr_limit",
            at_key=True,
            hint="Use partitionTableType: gpt.",
        )


def check_immutability(ctx: Context) -> None:
    imm = ctx.dict_at("systemConfig", "immutability")
    if not imm:
        return
    base: PathT = ("systemConfig", "immutability")
    keys = [k for k in ("secureBootDBKey", "secureBootDBCrt", "secureBootDBCer") if imm.get(k)]
    if keys and ctx.get("systemConfig", "bootloader", "bootType") == "legacy":
        ctx.add(
            (*base, keys[0]),
            "secure boot keys are given but bootType is legacy; secure boot is UEFI-only",
            "immutability.secure_boot_legacy",
            at_key=True,
            hint="Set systemConfig.bootloader.bootType: efi, or remove the secureBootDB* keys.",
        )
    parts = [p for _, p in partitions_of(ctx)]
    if imm.get("enabled") is True and parts and not any(_is_hash_partition(p) for p in parts):
        ctx.warn(
            (*base, "enabled"),
            "immutability is enabled but the disk layout has no dm-verity hash partition; "
            "os-image-composer silently disables immutability then",
            "immutability.no_hash_partition",
            hint="Add a partition with id: roothashmap, type: linux, mountPoint: none (about 500MiB), "
            "or set enabled: false.",
        )


def _is_hash_partition(part: dict) -> bool:
    return part.get("id") in ("roothashmap", "hash") or (
        part.get("mountPoint") == "none" and part.get("type") == "linux"
    )


def check_build_support(ctx: Context) -> None:
    fmt = load_template_format()
    bootloaders, compressions = fmt.build_bootloaders, fmt.build_compressions
    provider = ctx.get("systemConfig", "bootloader", "provider")
    if isinstance(provider, str) and provider not in bootloaders and ctx.str_at("target", "imageType") != "img":
        ctx.add(
            ("systemConfig", "bootloader", "provider"),
            f"bootloader provider {show(provider)} passes os-image-composer's schema, but its build stops with "
            f"'unsupported bootloader provider: {provider}' (it installs only {' and '.join(bootloaders)})",
            "build.bootloader",
            hint="Use provider: grub (GRUB 2 is installed under that name).",
        )
    for i, artifact in enumerate(ctx.list_at("disk", "artifacts")):
        comp = artifact.get("compression") if isinstance(artifact, dict) else None
        if isinstance(comp, str) and comp and comp not in compressions:
            ctx.add(
                ("disk", "artifacts", i, "compression"),
                f"compression {show(comp)} passes os-image-composer's schema, but its build stops with "
                f"'unsupported compression type: {comp}' after the image is made",
                "build.compression",
                hint=f"Use {fmt.compression_fixes.get(comp, ', '.join(compressions))}.",
            )


__all__ = ["check_boot", "check_build_support", "check_immutability", "check_target"]

"""Edits to what a template builds on disk: image type, disk size, partitions, output artifacts, and the
immutable root (dm-verity hash partition) with its secure boot keys. The arithmetic is :mod:`.layout`'s."""

from __future__ import annotations

import copy
import re
from typing import Any

from ..knowledge.request_words import load_request_words
from ..knowledge.sizes import fmt_offset, fmt_size, template_mib
from .editing import TemplateEdit, mapping_at
from .layout import GPT_TAIL_MIB, MIN_ROOT_MIB, VERITY_HASH_MIB, Layout, is_fill, part_id
from .request_spec import DATABASE, DISK_SHARE, RequestSpec


class DiskEdit(TemplateEdit):
    """Image type, disk, partition, artifact, immutability and secure boot edits."""

    # The disk's size in MiB before the request grew it (disk_size_edits), for a new partition that is to fill it
    disk_grown_from: int | None = None

    def switch_image_type(self, spec: RequestSpec) -> None:
        new = spec.image_type
        if not new and (
            spec.artifacts
            or spec.disk_size
            or spec.disk_size_delta
            or any(p.get("action") for p in spec.partitions)
        ):
            current = str((self.data.get("target") or {}).get("imageType", "raw"))
            if current != "raw" and spec.artifacts:
                new = "raw"  # qcow2/vhdx are disk formats: only raw images produce them
        if not new:
            return
        target = self.data.setdefault("target", {})
        old = target.get("imageType")
        if old == new:
            return
        target["imageType"] = new
        self.changes.append(f"image type {old or '?'} -> {new}")
        if new in ("iso", "img") and self.disk() is not None:
            self.data.pop("disk")
            self.changes.append(
                f"disk section removed ({new} images take their layout from the distribution defaults)"
            )
        if new == "raw" and self.disk() is None:
            if spec.earlier_disk is not None and not spec.disk_size:
                revision, disk = spec.earlier_disk
                self.data["disk"] = copy.deepcopy(disk)
                mounts = [str(p.get("mountPoint")) for p in disk.get("partitions") or [] if isinstance(p, dict)
                          and p.get("mountPoint")]
                self.changes.append(f"disk section of revision {revision} restored ({disk.get('size')}; "
                                    f"partitions {', '.join(mounts) or 'none'})")
            else:
                self.ensure_disk(spec.disk_size)

    def ensure_disk(self, size: str | None = None) -> dict:
        disk = self.disk()
        if disk is not None:
            return disk
        immutable = bool((self.system(create=False).get("immutability") or {}).get("enabled"))
        layout = self.caps.layout("minimal", self.arch) or {"size": "4GiB", "partitions": []}
        name = str(self.system(create=False).get("name") or "Default_Raw")
        disk = {
            "name": name,
            "artifacts": [{"type": "raw", "compression": "gz"}],
            "size": size or layout["size"],
            "partitionTableType": "gpt",
            "partitions": layout["partitions"],
        }
        self.data["disk"] = disk
        self.changes.append(
            f"added a disk section (ESP + root, {disk['size']}); it replaces the distribution's default layout"
        )
        if immutable:
            self._verity_layout()  # sized for this disk, as in the upstream immutable defaults
        return disk

    def _disk_for_edit(self) -> dict | None:
        image_type = str((self.data.get("target") or {}).get("imageType", "raw"))
        if image_type != "raw" and self.disk() is None:
            self.problems.append(f"disk size and partitions apply to raw images; this one is {image_type}")
            return None
        return self.disk()

    def disk_size_edits(self, spec: RequestSpec) -> None:
        if not (spec.disk_size or spec.disk_size_delta or spec.partitions):
            return
        if (
            self._disk_for_edit() is None
            and str((self.data.get("target") or {}).get("imageType", "raw")) != "raw"
        ):
            return
        created = self.disk() is None
        disk = self.ensure_disk(spec.disk_size)
        layout = Layout(self, disk)
        if spec.disk_size_delta:
            layout.change_size_by(spec.disk_size_delta)
        if spec.disk_size and not created and disk.get("size") != spec.disk_size:
            before = layout.size_mib
            wanted = template_mib(spec.disk_size)
            if before and wanted and spec.disk_direction and (wanted > before) == (spec.disk_direction == "down"):
                self.changes.append(f"note: the disk was {disk.get('size')}, so {spec.disk_size} makes it "
                                    f"{'larger' if wanted > before else 'smaller'}, not "
                                    f"{'smaller' if wanted > before else 'larger'}: the size said is applied")
            layout.set_size(spec.disk_size)
            if before and (layout.size_mib or 0) > before:
                self.disk_grown_from = before  # what a new partition filling the disk leaves the one filling it now

    def partition_edits(self, spec: RequestSpec) -> None:
        disk = self.disk()
        if not spec.partitions or disk is None:
            return
        layout = Layout(self, disk)
        grow_disk = not (spec.disk_size or spec.disk_size_delta)
        # "a big data partition, 2TB disk": a new partition filling the disk takes the room the request added, and
        # the partition that filled it keeps its size (else it would keep half of the new disk)
        grown_from = self.disk_grown_from
        # "shrink root to 6G and give the rest to /srv": the partition that is to fill the disk first, so root is a
        # fixed one by the time it is sized, and sizing it moves the rest instead of the disk's end
        filler = any(r.get("action") == "add" and r.get("fill") and r.get("mountPoint") != "/" for r in spec.partitions)
        ordered = sorted(spec.partitions, key=lambda r: not (r.get("action") == "add" and r.get("fill"))) \
            if filler else spec.partitions
        for request in ordered:
            action = request.get("action")
            place = self._data_dir(str(request["mountPoint"]), spec)
            mount = layout.referent(place, spec.last_partition) if place is not None else None
            if mount is None:
                continue
            if action == "remove":
                layout.remove(mount)
            elif action == "resize":
                if request.get("size") and mount != "/" and layout.find(mount) is None:
                    # "the /var partition needs to be 5G" where there is none: the partition is what is asked for
                    layout.add(mount, request["size"], request.get("fsType"), False, grow_disk=grow_disk)
                    continue
                if request.get("fsType"):
                    layout.set_fs(mount, request["fsType"])
                if request.get("size"):
                    layout.resize(mount, request["size"], grow_disk=grow_disk)
                elif request.get("size_delta"):
                    layout.resize_by(mount, request["size_delta"], grow_disk=grow_disk)
            elif str(request.get("size") or "").endswith(DISK_SHARE):
                # a share of the disk ("/home on half of the disk"): of its size now, taken from what fills it
                share, disk_mib = float(str(request["size"])[:-len(DISK_SHARE)]), template_mib(disk.get("size"))
                if disk_mib:
                    size = fmt_size(int(disk_mib * share / 100))
                    layout.add(mount, size, request.get("fsType"), False, grow_disk=False)
                    self.changes.append(f"{mount}: {size}, {share:g}% of the {disk.get('size')} disk, as asked")
                else:
                    self.problems.append(f"{mount} as {request['size']} of the disk not applied: the template sets "
                                         "no disk size; give one (e.g. 'a 40G disk')")
            else:
                layout.add(mount, request.get("size"), request.get("fsType"), bool(request.get("fill")),
                           grow_disk=grow_disk, filler_ends_at=grown_from)

    def swap_partition_off(self, spec: RequestSpec) -> None:
        """"no swap" where the disk has a swap partition: the partition goes too (the layout closes the gap, said);
        masking swap.target alone left a partition nobody could use."""
        off = any(c.get("setting") == "swap" and not c.get("remove") for c in spec.configurations)
        disk = self.disk()
        if off and disk is not None:
            layout = Layout(self, disk)
            if layout.find("swap") is not None:
                layout.remove("swap")

    def _data_dir(self, mount: str, spec: RequestSpec) -> str | None:
        """Where a partition for a database goes on this target (request_words.yaml ``data_dirs``): DATABASE is
        the data directory of the one database the image has or is asked for; another format's directory of a
        database ("/var/lib/postgresql" on an RPM family) is this format's. None, the problem said, when
        DATABASE names no database or several."""
        dirs = load_request_words().data_dirs
        family = self.caps.families.get(self.family)
        pkg_type = family.pkg_type if family is not None else "deb"
        if mount == DATABASE:
            names = [*self.packages(), *spec.add_packages]
            have = {name: d for name, d in dirs.items() if any(re.match(d["packages"], n) for n in names)}
            places = {d.get(pkg_type) or d["deb"] for d in have.values()}
            if len(places) == 1:
                return places.pop()
            self.problems.append("which database is the partition for? " + (
                f"the image has {' and '.join(have)}: give the mount point" if have else
                f"the image has none: name it ({', '.join(dirs)}) or give the mount point"))
            return None
        moved = load_request_words().data_dir(mount, pkg_type)
        if moved is not None:
            name, own = moved
            self.changes.append(f"partition {mount} mounted at {own} instead, where {name} keeps its data on "
                                f"{self.dist or pkg_type}")
            return own
        return mount

    def artifacts(self, spec: RequestSpec) -> None:
        if not (spec.artifacts or spec.remove_artifacts or spec.artifact_compression):
            return
        image_type = str((self.data.get("target") or {}).get("imageType", "raw"))
        if image_type != "raw":
            self.problems.append(f"output artifacts apply to raw images; this one is {image_type}")
            return
        disk = self.ensure_disk()
        arts = [a for a in disk.get("artifacts") or [] if isinstance(a, dict)]
        if spec.remove_artifacts:
            drop_all = "*" in spec.remove_artifacts
            if drop_all:
                left = [a for a in arts if a.get("type") in spec.artifacts]
            else:
                left = [a for a in arts if a.get("type") not in spec.remove_artifacts]
            gone = [str(a.get("type")) for a in arts if a not in left]
            if gone:
                self.changes.append(f"removed artifact(s): {', '.join(gone)}")
            # "drop the qcow2 output" of an image that writes none: said, never "no edit found"
            absent = [k for k in spec.remove_artifacts if k not in ("*", "raw") and k not in gone and k not in spec.artifacts]
            if absent:
                self.changes.append(f"nothing to remove: no {', '.join(absent)} artifact (the build writes "
                                    f"{', '.join(str(a.get('type')) for a in left) or 'the raw disk only'})")
            arts = left
        for kind in spec.artifacts:
            if not any(a.get("type") == kind for a in arts):
                item: dict[str, Any] = {"type": kind}
                if spec.artifact_compression:
                    item["compression"] = spec.artifact_compression
                arts.append(item)
                self.changes.append(
                    f"added {kind} artifact"
                    + (f" ({spec.artifact_compression})" if spec.artifact_compression else "")
                )
            elif spec.artifact_compression:
                for a in arts:
                    if a.get("type") == kind and a.get("compression") != spec.artifact_compression:
                        a["compression"] = spec.artifact_compression
                        self.changes.append(f"{kind} artifact compressed with {spec.artifact_compression}")
        if spec.artifact_compression and not spec.artifacts:
            for a in arts:
                if a.get("compression") != spec.artifact_compression:
                    a["compression"] = spec.artifact_compression
            self.changes.append(f"artifacts compressed with {spec.artifact_compression}")
        if arts:
            disk["artifacts"] = arts
        else:
            disk.pop("artifacts", None)
            self.changes.append("note: no output artifacts left; the build writes the raw disk only")

    def immutability(self, value: bool | None) -> None:
        if value is None:
            return
        sc = self.system()
        imm = mapping_at(sc, "immutability")
        old = imm.get("enabled")
        imm["enabled"] = value
        if not value:
            for key in ("secureBootDBKey", "secureBootDBCrt", "secureBootDBCer"):
                if imm.pop(key, None) is not None:
                    self.changes.append(f"removed {key} (secure boot keys need immutability)")
        sc["immutability"] = imm
        if old != value:
            self.changes.append(f"immutability {'enabled' if value else 'disabled'}")
        else:
            self.changes.append(f"immutability already {'enabled' if value else 'disabled'}")
        if value:
            self._verity_layout()
            provider = (
                (sc.get("bootloader") or {}).get("provider")
                if isinstance(sc.get("bootloader"), dict)
                else None
            )
            if provider and str(provider).startswith("grub"):
                self.changes.append(
                    "note: the upstream immutable images boot with systemd-boot (UKI); consider 'use systemd-boot'"
                )
        elif (
            old and (disk := self.disk()) and any(part_id(p) == "roothashmap" for p in disk.get("partitions") or [])
        ):
            self.changes.append(
                "note: the roothashmap (dm-verity hash) partition is kept; remove it if unused"
            )

    def _verity_layout(self) -> None:
        """Give an immutable root the dm-verity hash partition the upstream layouts have."""
        disk = self.disk()
        if not disk or not isinstance(disk.get("partitions"), list) or not disk["partitions"]:
            return
        parts = disk["partitions"]
        if any(part_id(p) == "roothashmap" for p in parts):
            return
        root_i = next(
            (i for i, p in enumerate(parts) if isinstance(p, dict) and p.get("mountPoint") == "/"), None
        )
        if root_i is None:
            return
        layout = Layout(self, disk)
        root = parts[root_i]
        start = template_mib(root.get("start"))
        if start is None:
            return
        if is_fill(root.get("end")):
            available = (layout.size_mib or 0) - start
            if self.keep_root and layout.size_mib:
                # No size was asked for: keep the root as big as it was and grow the disk for
                # the hash and a 1GiB writable /opt.
                root_size = max(MIN_ROOT_MIB, available - GPT_TAIL_MIB)
                layout.grow_disk_to(start + root_size + VERITY_HASH_MIB + 1024 + GPT_TAIL_MIB)
            else:
                needed = MIN_ROOT_MIB + VERITY_HASH_MIB + 512
                if layout.size_mib and available < needed:
                    layout.grow_disk_to(start + needed)
                    available = (layout.size_mib or 0) - start
                root_size = max(MIN_ROOT_MIB, ((available - VERITY_HASH_MIB) * 2 // 3) // 256 * 256)
            root["end"] = fmt_offset(start + root_size)
            hash_part = layout.new_partition(
                "roothashmap", "none", start + root_size, start + root_size + VERITY_HASH_MIB
            )
            hash_part["mountPoint"] = "none"
            hash_part.pop("mountOptions", None)
            parts.insert(root_i + 1, hash_part)
            if not any(isinstance(p, dict) and p.get("mountPoint") == "/opt" for p in parts):
                data = layout.new_partition("userdata", "/opt", start + root_size + VERITY_HASH_MIB, None)
                data.pop("mountOptions", None)
                parts.insert(root_i + 2, data)
            else:
                parts[root_i + 1]["end"] = "0"
            self.changes.append(
                f"disk: rootfs fixed at {fmt_size(root_size)}, added roothashmap ({VERITY_HASH_MIB}MiB, dm-verity hash)"
                + (" and userdata (/opt, rest of the disk)" if parts[root_i + 1]["end"] != "0" else "")
            )
        else:
            end = template_mib(root.get("end"))
            if end is None:
                return
            hash_part = layout.new_partition("roothashmap", "none", end, end + VERITY_HASH_MIB)
            hash_part["mountPoint"] = "none"
            hash_part.pop("mountOptions", None)
            layout.insert_after(root_i, hash_part, VERITY_HASH_MIB)
            self.changes.append(f"disk: added roothashmap ({VERITY_HASH_MIB}MiB dm-verity hash) after rootfs")

    def secure_boot(self, value: bool | None) -> None:
        if value is None:
            return
        sc = self.system()
        imm = mapping_at(sc, "immutability")
        keys = ("secureBootDBKey", "secureBootDBCrt", "secureBootDBCer")
        if value:
            if not imm.get("enabled"):
                self.immutability(True)
                imm = sc["immutability"]
            placeholders = {
                "secureBootDBKey": "${SECURE_BOOT_DB_KEY}",
                "secureBootDBCrt": "${SECURE_BOOT_DB_CRT}",
                "secureBootDBCer": "${SECURE_BOOT_DB_CER}",
            }
            added = [k for k in keys if not imm.get(k)]
            for k in added:
                imm[k] = placeholders[k]
            boot = sc.get("bootloader") if isinstance(sc.get("bootloader"), dict) else None
            if boot and boot.get("bootType") == "legacy":
                boot["bootType"] = "efi"
                self.changes.append("boot type legacy -> efi (secure boot needs UEFI)")
            if added:
                self.changes.append(
                    "secure boot enabled: set the environment variables SECURE_BOOT_DB_KEY, SECURE_BOOT_DB_CRT and "
                    "SECURE_BOOT_DB_CER to your db key (.key/.pem), certificate (.crt/.pem) and DER certificate (.cer)"
                )
        else:
            removed = [k for k in keys if imm.pop(k, None) is not None]
            self.changes.append("secure boot disabled" if removed else "secure boot was not configured")

"""Partitions said as a list of places ("separate /var, /tmp and /home partitions of 5G each") or as a share of
the disk ("/home on half of the disk"): each place its own partition, of the size said or of its share of the disk's
final size (disk_edits sizes a share once the disk's size is known)."""

from __future__ import annotations

import re

from ..knowledge.sizes import CASUAL_SIZE
from .partition_words import MOUNT, mount_point, size_said
from .phrasing import ParserState
from .request_spec import DISK_SHARE

_SIZE = CASUAL_SIZE
# A share of the disk ("50%", "half", "a quarter"): its percent, or its words (_FRACTIONS)
_SHARE = r"(?:(\d{1,2}(?:\.\d+)?)\s*%|(half|(?:a|one)\s+third|(?:a|one)\s+quarter|two\s+thirds|three\s+quarters))"
# Places whose size is no share of the data: a partition there without a size keeps the default one.
_NO_SHARE = ("/boot", "/tmp", "/var/tmp", "/var/log", "swap", "none", "@")
_FRACTIONS = {"half": 50.0, "a third": 100 / 3, "one third": 100 / 3, "a quarter": 25.0, "one quarter": 25.0,
              "two thirds": 200 / 3, "three quarters": 75.0}


class PartitionListPhrases(ParserState):
    """The list and share forms of partitions; the rest of the disk's phrases are parse_disk's."""

    def _places_listed(self) -> None:
        spec = self.spec
        # "separate /var, /tmp and /home partitions of 5G each", "partitions for /var and /tmp, 2G each": a list of
        # places, each its own partition of the one size said (or none)
        places = r"(/[\w./-]*(?:\s*(?:,|\band\b)\s*(?:and\s+)?/[\w./-]*)+)"
        each = rf"(?:\s*,?\s*\(?(?:(?:of|at|with)\s+)?{_SIZE}(?:\s+(?:each|apiece|per\s+partition))?\)?)?"
        for m in self._each(rf"(?:\b(?:separate|dedicated|own)\s+)?{places}\s+partitions\b{each}"
                            rf"|\bpartitions\s+(?:for|at|on)\s+{places}{each}"):
            listed, number, unit = (m.group(1), m.group(2), m.group(3)) if m.group(1) else m.groups()[3:6]
            for place in re.findall(r"/[\w./-]*", listed):
                spec.partitions.append({"action": "add", "mountPoint": mount_point(place),
                                        "size": size_said(number, unit) if number else None, "fsType": None, "fill": False})
            self._mask(m.start(), m.end())

    def _shares_of_disk(self) -> None:
        spec = self.spec
        # "/home on half of the disk", "50% of the disk for /data", "give /srv a quarter of the disk": a share of
        # the disk, which the edit sizes once the disk's size is known (disk_edits)
        disk = r"(?:of\s+)?(?:the\s+)?(?:whole\s+)?disk\b"
        for pattern, place in ((rf"(?<![\w/.-]){MOUNT}\s+(?:on|gets?|takes?|with|using|at)\s+(?:its\s+own\s+)?{_SHARE}\s+{disk}", 1),
                               (rf"\b{_SHARE}\s+{disk}\s+(?:for|to|on)\s+{MOUNT}", 3),
                               (rf"\bgive\s+(?:the\s+)?{MOUNT}\s+{_SHARE}\s+{disk}", 1)):
            for m in self._each(pattern):
                number, words = (m.group(2), m.group(3)) if place == 1 else (m.group(1), m.group(2))
                percent = float(number) if number else _FRACTIONS[" ".join(words.lower().split())]
                if 0 < percent < 100:
                    spec.partitions.append({"action": "add", "mountPoint": mount_point(m.group(place)),
                                            "size": f"{percent:.4g}{DISK_SHARE}", "fsType": None, "fill": False})
                self._mask(m.start(), m.end())

    def _data_shares_a_sized_disk(self) -> None:
        """"a 200G disk and a separate /data partition", "500GB disk, postgres data on its own partition": a place
        for data with no size of its own, on a disk whose size the request names, takes the rest of the disk (root
        keeping the template's size, Layout.add) rather than a default gigabyte. Places of logs, temporary files and
        boot keep the default: their size is no share of the data."""
        spec = self.spec
        unsized = [p for p in spec.partitions if p.get("action") == "add" and not p.get("size") and not p.get("fill")]
        if spec.disk_size and len(unsized) == 1 and not any(p.get("fill") for p in spec.partitions) and not (
                str(unsized[0].get("mountPoint")).startswith(_NO_SHARE)):
            unsized[0]["fill"] = True

    def _partition_table(self) -> None:
        """"change the partition table to mbr", "an msdos partition table", "use gpt": GPT is what the composer writes
        (every layout of os-image-composer's own templates is GPT; legacy BIOS boots from a bios_grub partition on
        it), so MBR is said unsupported and GPT needs nothing."""
        kind = r"(mbr|msdos|dos|gpt)"
        for m in self._each(rf"\b(?:partition\s+table|partitioning|label)\s*(?:type\s+)?(?:to|as|is|=|:|of|should\s+be)?\s*"
                            rf"{kind}\b|\b(?:an?\s+)?{kind}\s+(?:partition\s+table|partitioning|disk\s+label|label)\b"):
            if (m.group(1) or m.group(2)).lower() == "gpt":
                self.spec.notes.append("the partition table is GPT already: the composer writes GPT layouts")
            else:
                self.spec.unsupported.append(f"{' '.join(m.group(0).split())}: the composer writes GPT layouts only "
                                             "(legacy BIOS boots from a bios_grub partition on GPT)")
            self._mask(m.start(), m.end())

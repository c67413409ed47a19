"""Reading the disk facets of a request: partitions added, removed, resized or reformatted, the disk size or
a change of it, output artifacts and their compression."""

from __future__ import annotations

import re
from typing import Any

from ..knowledge.request_words import load_request_words
from ..knowledge.sizes import CASUAL_SIZE
from ..knowledge.template_format import load_template_format
from .layout import LAST_EDITED, THAT_PARTITION
from .parse_partition_lists import PartitionListPhrases
from .partition_words import DATA_NOUNS, MOUNT, mount_point, size_said
from .phrasing import CORRECTION, alternatives

# A size as people write it: "8GiB", "8 GB", "512M", "1.5 gib", "8 gigs", "half a terabyte".
_SIZE = CASUAL_SIZE
_WORDS = load_request_words()


# A filesystem's name before a word for its software ("zfs utilities", "xfs tools") names that software, no
# filesystem to make.
_FS_SOFTWARE = (r"(?:utilities|utility|utils|tools|progs|userland|userspace|support|packages?|kernel\s+modules?|modules?|"
                r"drivers?|dkms|pools?)")
_FS = rf"({alternatives(_WORDS.filesystems)})(?!\s+{_FS_SOFTWARE}\b)"
# A filesystem named after its partition: "formatted xfs", "formatted as btrfs", "with xfs"
_FS_AFTER = rf"(?:\s+(?:formatted(?:\s+(?:as|with|using|in|to))?|as|with|using|in)\s+{_FS})?"
# "under 1 GB", "no bigger than 2G": a lone size as an upper bound is the disk's size, the words read with it
_UPPER_BOUND = re.compile(r"\b(?:(?:no|not)\s+(?:bigger|larger|more)\s+than|(?:smaller|less|lower)\s+than|at\s+most"
                          r"|up\s+to|under|below|max(?:imum)?|within)\s*$", re.I)
# "the web root", "the document root" are the web server's place (mount_words), not /
_OTHER_ROOTS = r"(?<!web\s)(?<!web-)(?<!document\s)"
# A mount point with no "partition" beside it: a path ("/boot", "/", not "/64GB"), or a word that names a place
# in the filesystem by itself ("root", "boot"; see hierarchy_mounts).
# Swap too, sized by a verb ("shrink swap to 1G"), though after a bare size it may be a swap file's.
_PLACE = rf"(/(?:[a-z_][\w./-]*)?|{_OTHER_ROOTS}(?:{alternatives(_WORDS.hierarchy_mounts)}|swap)\b)"
# "a data partition", "a data disk partition", "a data volume": the noun of a partition, with a filler noun.
_PARTITION = r"(?:(?:disk|drive|storage)\s+)?(?:partition|volume)"
# What an image is written to, said instead of "disk" ("a 16GB card", "a 32G eMMC").
_MEDIA = r"(?:(?:sd|micro\s*sd|microsd|cf)\s+)?card|emmc|ssd|nvme(?:\s+drive)?|usb\s+(?:stick|drive|key)|flash(?:\s+drive)?|stick"
# The root partition in words: "the root partition", "rootfs", "/".
# The room left on the disk, as people say it ("the rest", "whatever is left", "everything else").
_REST_WORDS = (r"(?:rest|remainder|remaining(?:\s+space)?|leftover(?:\s+space)?|leftovers|free\s+space"
               r"|what(?:ever)?(?:\s+space)?\s+(?:is\s+)?(?:left|remains)|what's\s+left|everything\s+else"
               r"|all\s+(?:the\s+)?(?:remaining|free)\s+space)")
# A filesystem, a size, or both in either order, as a partition is changed to them ("to xfs and 20G").
_FS_OR_SIZE = rf"(?:to\s+|as\s+|into\s+|with\s+)?(?:(?:{_FS})|{_SIZE})(?:\s+(?:and|,)\s+(?:(?:{_FS})|{_SIZE}))?"
# Verbs that give a partition a size ("bump root to 8 gigs", "shrink /var to 2G").
_SIZING_VERBS = (r"resize|grow|shrink|make|set|change|extend|increase|decrease|enlarge|reduce|bump(?:\s+up)?|raise|"
                 r"expand|boost|lower|trim|cut|cap|limit|give|allot|allocate|assign")
# A verb of having between a place and its size: "/var/log gets 5 gigs", "/home should get 20G".
_GETS = r"(?:(?:should|will|would|can|must)\s+(?:get|have|take)|gets?|has|takes|is\s+given|needs)\s+(?:about\s+|around\s+)?"
_ROOT = rf"(?:the\s+)?{_OTHER_ROOTS}(?:root(?:\s+(?:partition|filesystem|file\s+system|fs))?|rootfs|/)(?![\w/])"


class DiskPhrases(PartitionListPhrases):
    """The partition, disk size and artifact phrases of a request."""

    def _software_readable(self, m: re.Match[str], group: int | None) -> None:
        """A partition added for software ("a 40G partition for docker") asks for the software too: its word
        (the match's ``group``, None for forms without a mount word) is left for the package and group reading
        (request_words.yaml ``software_mounts``)."""
        if group is None:
            return
        word = m.group(group)
        software = re.sub(rf"\s+{DATA_NOUNS}$", "", word or "", flags=re.I)  # "postgres data": postgres
        if software and software.lower() in _WORDS.software_mounts:
            start, end = m.span(group)
            self.work = self.work[:start] + software.ljust(end - start) + self.work[end:]

    def _partitions(self) -> None:
        spec = self.spec
        # "xfs tools", "btrfs utilities": the filesystem's software, a package (ZFS's: the zfs group's triggers)
        tools = _WORDS.filesystem_tools
        for m in self._each(rf"\b({alternatives(tools)})\s+{_FS_SOFTWARE}\b"):
            spec.add_packages.append(tools[m.group(1).lower()])
            self._mask(m.start(), m.end())
        self._its_data()
        self._software_logs()
        # "a nightly backup to /backup, 50G backup partition": a partition named by the last word of a path the
        # request names is that path's ("the backup partition" is /backup), with its size if one comes before
        paths = {p.rstrip("/").rsplit("/", 1)[-1].lower(): p.rstrip("/")
                 for p in re.findall(r"(?<![\w.])/[a-z][\w./-]*", self.said, re.I) if p.rstrip("/")}
        named = {n: p for n, p in paths.items() if n.isalpha() and n not in _WORDS.mount_words}
        if named:
            # not inside the path itself: "a 100G /var/lib/pgsql partition" is the path's partition, said whole
            for m in self._each(rf"(?:\b{_SIZE}\s+)?(?<![/\w.-])({alternatives(named)})\s+(?:partition|volume)\b"
                                rf"(?:\s+(?:of\s+|with\s+|at\s+)?{_SIZE}(?![\w/]))?"):
                size = (size_said(m.group(1), m.group(2)) if m.group(1) else
                        size_said(m.group(4), m.group(5)) if m.group(4) else None)
                spec.partitions.append({"action": "add", "mountPoint": mount_point(named[m.group(3).lower()]),
                                        "size": size, "fsType": None, "fill": False})
                self._mask(m.start(), m.end())
        # "a writable /data of 5G": every partition beside a read-only root is writable; the word is no wish
        for m in self._each(r"\b(?:writable|writeable|read-write)\s+(?=/|[a-z]+\s+(?:partition|volume)\b)"):
            self._mask(m.start(), m.end())
        # "btrfs for the root partition": before the patterns below read "the root partition" as one to add
        for m in self._each(rf"\b{_FS}(?:\s+(?:filesystem|file\s+system|fs|format))?\s+(?:on|for)\s+{_ROOT}"):
            spec.partitions.append({"action": "resize", "mountPoint": "/", "size": None, "fsType": _fs(m.group(1))})
            self._mask(m.start(), m.end())
        for m in self._each(
            # "a swap file instead of a swap partition": what something stands in for is taken out
            rf"\b(?:remove|drop|delete|get\s+rid\s+of|no|without|instead\s+of|rather\s+than|in\s+place\s+of"
            # what is taken back: "never mind the /var/log partition", "forget the swap partition"
            rf"|never\s+mind|forget(?:\s+about)?|scrap|scratch|cancel|ditch|skip)\s+"
            rf"(?:the\s+|an?\s+)?(?:separate\s+|extra\s+|dedicated\s+)?{MOUNT}"
            rf"\s+partition\b"
            rf"|\b(?:remove|drop|delete)\s+(?:the\s+)?partition\s+(?:for|mounted\s+(?:at|on)|at|on)\s+(/[\w./-]*)"
            # a path said separate is its partition: "no separate /boot"
            rf"|\b(?:no|without)\s+(?:an?\s+)?(?:separate|dedicated)\s+(/[\w./-]*)(?![\w/-])"
        ):
            spec.partitions.append({"action": "remove", "mountPoint": mount_point(m.group(1) or m.group(2) or m.group(3))})
            self._mask(m.start(), m.end())
        for m in self._each(
            rf"\b(?:{_SIZING_VERBS})\s+(?:the\s+)?"
            rf"(?:size\s+of\s+(?:the\s+)?)?{MOUNT}\s+(?:partition|filesystem|file\s+system|fs|volume)(?:'s)?\s+"
            rf"(?:size\s+)?(?:to\s+|=\s*|be\s+)?{_SIZE}"
        ):
            spec.partitions.append(
                {"action": "resize", "mountPoint": mount_point(m.group(1)), "size": size_said(m.group(2), m.group(3))}
            )
            self._mask(m.start(), m.end())
        # "make root 6GB", "grow /var to 20G", "root should be 6 GB": a place in the filesystem, no noun
        for m in self._each(_place_said(rf"{_SIZING_VERBS}|take|bring",
                                        r"(?:size\s+)?(?:back\s+)?(?:down\s+|up\s+)?(?:to\s+|=\s*|be\s+)?", _SIZE)):
            place, number, unit = _said(m)
            spec.partitions.append({"action": "resize", "mountPoint": mount_point(place), "size": size_said(number, unit)})
            self._mask(m.start(), m.end())
        # "change /boot to ext2", "format /data as xfs", "/srv should be xfs": a place in the filesystem, no noun
        for m in self._each(_place_said(r"make|change|set|format|convert|reformat|switch",
                                        r"(?:to\s+|as\s+|into\s+|with\s+|in\s+)?", rf"{_FS}(?![\w-])")):
            place, named_fs = _said(m)
            spec.partitions.append({"action": "resize", "mountPoint": mount_point(place), "size": None,
                                    "fsType": _fs(named_fs)})
            self._mask(m.start(), m.end())
        # "make that partition xfs", "the new partition should be 20G": the partition meant (Layout.referent)
        that = r"(?:that|this|the\s+(?:new|extra|added|additional|separate|other|data))\s+(?:partition|volume)"
        for m in self._each(rf"\b(?:make|change|set|format|convert|reformat|resize|grow|shrink)\s+{that}\s+{_FS_OR_SIZE}"):
            size, fs = _fs_and_size(m.groups())
            spec.partitions.append({"action": "resize", "mountPoint": THAT_PARTITION, "size": size, "fsType": _fs(fs)})
            self._mask(m.start(), m.end())
        for m in self._each(rf"\b(?:make|change|set|format|convert|reformat)\s+(?:the\s+)?{MOUNT}\s+"
                            rf"(?:partition|filesystem|fs)\s+{_FS_OR_SIZE}"):
            size, fs = _fs_and_size(m.groups()[1:])
            spec.partitions.append({"action": "resize", "mountPoint": mount_point(m.group(1)), "size": size, "fsType": _fs(fs)})
            self._mask(m.start(), m.end())
        self._shares_of_disk()
        own = r"its\s+own|their\s+own|a\s+separate|a\s+dedicated|a\s+distinct"
        for m in self._each(
            # "put /var/log on its own 5G partition", "make /var/log its own 5G partition with xfs"
            rf"\b(?:give|put|make|move)\s+(?:the\s+)?{MOUNT}\s+(?:on\s+|onto\s+|into\s+|to\s+)?(?:{own}|an?)\s+(?:{_SIZE}\s+)?"
            rf"(?:{_FS}\s+)?(?:partition|volume)(?:\s+(?:of|with)\s+{_SIZE})?{_FS_AFTER}"
            # no verb: "/var on its own 20 GB partition", "home in a separate partition of 50G"
            rf"|(?<![\w/.-]){MOUNT}\s+(?:on|in|gets?|has|with|needs?|wants?|deserves?|requires?"
            rf"|(?:should|must|will|shall|can)\s+(?:have|get|go\s+on|be\s+on|live\s+on))\s+(?:{own})\s+(?:{_SIZE}\s+)?"
            rf"(?:{_FS}\s+)?partition(?:\s+(?:of|with)\s+{_SIZE})?{_FS_AFTER}"
        ):
            g = m.groups()
            software_at: int | None = 1  # the match's group of the mount word, which may name software
            if g[0] is None:  # the second form, without a verb
                g = g[7:]
                software_at = 8
            size = size_said(g[1], g[2]) if g[1] else size_said(g[4], g[5]) if g[4] else None
            # "postgres on its own 30G partition at /var/lib/postgresql": a place said after it is its mount point
            placed = re.match(r"\s+(?:(?:mounted\s+)?(?:at|on|under)|for)\s+(/[\w./-]*)", self.work[m.end():], re.I)
            if placed:
                self._mask(m.end(), m.end() + placed.end())
            spec.partitions.append(
                {
                    "action": "add",
                    "mountPoint": mount_point(placed.group(1) if placed else g[0]),
                    "size": size,
                    "fsType": _fs(g[3] or g[6]),
                    "fill": False,
                }
            )
            self._mask(m.start(), m.end())
            self._software_readable(m, software_at)
        self._places_listed()
        # "2 partitions: / 10G and /data ...": the count of a list that follows
        for m in self._each(r"\b(?:two|three|four|five|\d)\s+partitions?\s*:"):
            self._mask(m.start(), m.start() + len(m.group(0).split()[0]))
        # "partitions: /home 2G and /srv 3G": a list of mount points, each with its size.
        # The last may take the rest: "/ 10G and /data rest".
        pair = rf"(/[\w./-]*)\s+(?:of\s+|at\s+|with\s+)?{_SIZE}"
        last = rf"(?:{pair}|(/[\w./-]*)\s+(?:(?:takes|gets|with|using)\s+)?(?:the\s+)?{_REST_WORDS})"
        for m in self._each(rf"\bpartitions?\s*(?::|=|like|for)?\s*{pair}(?:\s*(?:,|\band\b|;)\s*{last})*"):
            for each in re.finditer(last, m.group(0), re.I):
                if each.group(1):
                    spec.partitions.append({"action": "add", "mountPoint": mount_point(each.group(1)),
                                            "size": size_said(each.group(2), each.group(3)), "fsType": None, "fill": False})
                else:
                    spec.partitions.append({"action": "add", "mountPoint": mount_point(each.group(4)), "size": None,
                                            "fsType": None, "fill": True})
            self._mask(m.start(), m.end())
        add_patterns = [
            # "a separate 4GiB xfs /data partition of 4GiB formatted as xfs"
            rf"(?:(?:separate|dedicated|new|extra|additional|own|its\s+own)\s+)?"
            rf"(?:{_SIZE}\s+)?(?:{_FS}\s+)?(?:separate\s+|dedicated\s+|new\s+|extra\s+|additional\s+|own\s+|its\s+own\s+)?"
            rf"(?:{_FS}\s+)?{MOUNT}\s+{_PARTITION}(?!\s+table)"
            rf"(?:\s+(?:of|with|sized?|at|that\s+is|:)?\s*{_SIZE})?"
            rf"{_FS_AFTER}"
            # "a data partition mounted at /srv/data", "a data partition on /var/lib/pgsql": the path is its place
            rf"(?:\s+(?:(?:mounted|mount)\s+)?(?:at|on|as|for|under|in)\s+(/[\w./-]*))?",
            # "a partition for /srv/backup of 100G", "a 100G partition for /srv/backup", "a partition for logs"
            rf"(?:\b(?:separate|dedicated|extra|additional)\s+)?(?:\b{_SIZE}\s+)?"
            rf"(?:\b(?:separate|dedicated|extra|additional)\s+)?\b(?:partition|volume)\s+(?:for|mounted\s+(?:at|on)|at|on)\s+(?:the\s+)?{MOUNT}(?![\w/-])"
            rf"(?:\s+(?:of|with|sized?)\s+{_SIZE})?",
            rf"\b{_SIZE}\s+(?:of\s+)?swap\b",
            rf"\bswap\s+(?:space\s+)?(?:of\s+)?{_SIZE}",
        ]
        for index, pattern in enumerate(add_patterns):
            for m in self._each(pattern):
                g = m.groups()
                software_at = None  # the match's group of the mount word, in the forms that have one
                if index == 0:
                    size = size_said(g[0], g[1]) if g[0] else size_said(g[5], g[6]) if g[5] else None
                    fs = g[2] or g[3] or g[7]
                    mount = mount_point(g[8] or g[4])
                    software_at = 9 if g[8] else 5
                elif index == 1:
                    size = size_said(g[0], g[1]) if g[0] else size_said(g[3], g[4]) if g[3] else None
                    mount, fs = mount_point(g[2]), None
                    software_at = 3
                else:
                    mount, size, fs = "swap", size_said(g[0], g[1]), None
                # "a big data partition": no size, so it takes the rest of the disk (the adjective is read)
                big = re.search(r"\b(?:big|bigger|large|larger|huge|roomy|spacious)\s+$", self.work[:m.start()], re.I)
                tail = self.work[m.end() : m.end() + 60]
                # "... that takes the rest", "... using all remaining space of the disk": only those words are read
                # (a disk size said after them, ", 100G disk", is the disk's)
                taking = re.match(
                    rf"\s*(?:that\s+|which\s+)?(?:uses|using|fills?|filling|takes?|taking|with|gets?)\s+(?:up\s+)?(?:the\s+)?"
                    rf"(?:{_REST_WORDS}|remaining|all\s+remaining|free)(?:\s+(?:space|room))?"
                    rf"(?:\s+(?:of|on)\s+(?:the\s+)?(?:disk|drive|image))?",
                    tail,
                    re.I,
                )
                fill = bool(taking) or bool(big and size is None and mount != "swap")
                if taking:
                    self._mask(m.end(), m.end() + taking.end())
                spec.partitions.append(
                    {"action": "add", "mountPoint": mount, "size": size, "fsType": _fs(fs), "fill": fill}
                )
                if big:
                    self._mask(big.start(), big.end())
                # "... partition for logs": the purpose describes the partition, it asks for no software.
                purpose = re.match(r"\s+for\s+(?:the\s+|my\s+|our\s+|its\s+)?[a-z][\w-]*(?:\s+(?:data|files|storage))?",
                                   self.work[m.end():], re.I)
                self._mask(m.start(), m.end() + (purpose.end() if purpose else 0))
                self._software_readable(m, software_at)
        # "a 200GB data disk at /tank", "an xfs drive mounted on /srv": a template has one disk, so a disk for a place
        # in the filesystem is a partition on it, and the answer says so
        for m in self._each(rf"(?:\b{_SIZE}\s+)?(?:{_FS}\s+)?(?:(?:data|storage|second|extra|separate|additional|"
                            rf"dedicated|another)\s+)?\b(?:disk|drive)\s+(?:(?:mounted|mount)\s+)?(?:at|on|for|as)\s+"
                            rf"(/[\w./-]+)(?![\w/-])(?:\s+(?:of|with|sized?)\s+{_SIZE})?{_FS_AFTER}"):
            g = m.groups()
            size = size_said(g[0], g[1]) if g[0] else size_said(g[4], g[5]) if g[4] else None
            mount = mount_point(g[3])
            spec.partitions.append({"action": "add", "mountPoint": mount, "size": size, "fsType": _fs(g[2] or g[6]),
                                    "fill": False})
            spec.notes.append(f"a template describes one disk: {mount} is a partition on it, not a disk of its own")
            self._mask(m.start(), m.end())
        # "a second disk for data", "an extra 500G drive for docker": one more disk for what a word names
        places = alternatives({w for w, place in _WORDS.mount_words.items() if place not in ("/", "/boot", "/boot/efi")})
        for m in self._each(rf"\b(?:second|extra|separate|additional|dedicated|another)\s+(?:{_SIZE}\s+)?(?:{_FS}\s+)?"
                            rf"(?:disk|drive)\s+(?:(?:mounted|mount)\s+)?(?:for|as)\s+(?:the\s+|my\s+|our\s+|its\s+)?"
                            rf"({places})(?:\s+{DATA_NOUNS})?\b"):
            g = m.groups()
            mount = mount_point(g[3])
            spec.partitions.append({"action": "add", "mountPoint": mount, "size": size_said(g[0], g[1]) if g[0] else None,
                                    "fsType": _fs(g[2]), "fill": False})
            spec.notes.append(f"a template describes one disk: {mount} is a partition on it, not a disk of its own")
            software = g[3].lower() in self.known or self.caps.group_for_word(g[3].lower())
            self._mask(m.start(), m.start(4) if software else m.end())  # "for docker": docker is wanted too
        self._more_disks()
        # "a 500MB /boot and 8G for /", "2 GB boot, 10 GB root", "/var 20G": a size beside a mount point, with
        # no "partition": a partition of that size there (the root one is fixed at it). After the forms with
        # "partition", which say more (what is separate, its filesystem).
        for m in self._each(
            rf"(?:\b(?:separate|dedicated|extra|additional)\s+)?{_SIZE}\s+(?:{_FS}\s+)?(?:(?:of\s+)?(?:storage|space)\s+)?(?:for|of|on|at)?\s*(?:the\s+)?{_PLACE}(?![\w/])"
            rf"(?:\s+(?:partition|filesystem|file\s+system|fs|volume|mount)\b)?"
            # "/ (16G)": the size may stand in parentheses after the mount point
            rf"|(?:\b(?:separate|dedicated|extra|additional)\s+)?"  # "a separate /var of 10G"
            rf"(?<![\w/])(/(?:[a-z_][\w./-]*)?)\s+(?:partition\s+)?(?:of\s+|at\s+|with\s+|=\s*|:\s*|\(\s*|{_GETS})?{_SIZE}"
            rf"(?:\s*\))?"
        ):
            g = m.groups()
            mount, size, fs = (g[3], size_said(g[0], g[1]), g[2]) if g[3] else (g[4], size_said(g[5], g[6]), None)
            spec.partitions.append({"action": "add", "mountPoint": mount_point(mount), "size": size, "fsType": _fs(fs),
                                    "fill": False})
            self._mask(m.start(), m.end())
        # "/data using the rest", "/srv takes the remaining space": a partition there that fills the disk
        # "/data (rest)", "/home the rest": the verb may be left out, the rest put in parentheses
        for m in self._each(r"(?<![\w/])(/[a-z_][\w./-]*)\s+(?:partition\s+)?(?:(?:using|with|taking|gets?|takes?|fills?|on|in)"
                            rf"\s+|\(\s*|(?=the\s))(?:up\s+)?(?:all\s+)?(?:the\s+)?{_REST_WORDS}"
                            r"(?:\s+of\s+(?:the\s+)?(?:disk|space|drive))?(?:\s*\))?"):
            spec.partitions.append({"action": "add", "mountPoint": mount_point(m.group(1)), "size": None, "fsType": None,
                                    "fill": True})
            self._mask(m.start(), m.end())
        # "give the rest to /srv", "the rest goes to /data", "the remainder for home": the rest said first, then
        # where it goes (root: see below)
        rest = rf"(?:the\s+)?{_REST_WORDS}(?:\s+of\s+(?:the\s+)?(?:disk|space|drive))?"
        for m in self._each(rf"\b(?:(?:give|giving|put|leave|assign|allocate|dedicate|use)\s+)?{rest}\s+"
                            rf"(?:(?:goes|going|should\s+go|will\s+go)\s+)?(?:(?:to|for|on|in|into|as|at)\s+)?"
                            rf"(?:the\s+)?{MOUNT}(?![\w/-])(?!\s+(?:partition|filesystem|fs)\s+(?:of|at)\b)"):
            mount = mount_point(m.group(1))
            if mount != "/":
                spec.partitions.append({"action": "add", "mountPoint": mount, "size": None, "fsType": None,
                                        "fill": True})
                self._mask(m.start(), m.end())
        # "root 6G", "rootfs: 20 GB", "root gets 10 gigs": the root partition's size said after it
        for m in self._each(rf"(?<![\w/-])(?:the\s+)?(?:root|rootfs)(?:\s+(?:partition|filesystem|fs))?\s*"
                            rf"(?:of\s+|at\s+|=\s*|:\s*|\(\s*|{_GETS})?{_SIZE}(?:\s*\))?(?!\s*(?:disk|drive|image)\b)"):
            spec.partitions.append({"action": "add", "mountPoint": "/", "size": size_said(m.group(1), m.group(2)),
                                    "fsType": None, "fill": False})
            self._mask(m.start(), m.end())
        # "the rest as root", "root takes the remaining space": the root partition fills the disk
        root = _ROOT
        for m in self._each(rf"\b{rest}\s+(?:goes\s+|going\s+)?(?:as|for|to|on|in|into)\s+{root}"
                            rf"|(?<![\w/]){root}\s+(?:(?:gets|takes|fills|uses|on|with|in|for)\s+(?:up\s+)?|\(\s*){rest}(?:\s*\))?"):
            spec.partitions.append({"action": "add", "mountPoint": "/", "size": None, "fsType": None, "fill": True})
            self._mask(m.start(), m.end())
        # "give root all remaining space", "let /data use the free space": who gets it said first, after the verb
        for m in self._each(rf"\b(?:give|giving|let|allow|have)\s+(?:(?P<path>/[a-z_][\w./-]*)|{root})\s+"
                            rf"(?:(?:use|take|fill|have|get)\s+)?(?:up\s+)?(?:all\s+)?(?:of\s+)?{rest}"):
            path = m.group("path")
            spec.partitions.append({"action": "add", "mountPoint": mount_point(path) if path else "/", "size": None,
                                    "fsType": None, "fill": True})
            self._mask(m.start(), m.end())
        # "ext4 on root", "root as xfs", "an xfs root filesystem": the root partition's filesystem
        for m in self._each(rf"(?<![\w/]){root}\s+(?:(?:as|in|on|with|formatted\s+as|=|:|is|be|to\s+be|should\s+be|"
                            rf"must\s+be|needs\s+to\s+be|will\s+be)\s*)?"
                            rf"{_FS}\b|\b{_FS}\s+(?:root|rootfs)(?:\s+(?:partition|filesystem|file\s+system|fs))?\b"
                            rf"|\b{_FS}\s+(?:instead\s+of|rather\s+than|in\s+place\s+of)\s+(?:the\s+)?{_FS}\b"):
            fs = next(g for g in m.groups() if g)
            spec.partitions.append({"action": "resize", "mountPoint": "/", "size": None, "fsType": _fs(fs)})
            self._mask(m.start(), m.end())
        # "... btrfs for root instead of ext4": the filesystem replaced is the one read above, no package
        for m in self._each(rf"\b(?:instead\s+of|rather\s+than|in\s+place\s+of)\s+(?:the\s+)?{_FS}\b"):
            if any(p.get("fsType") for p in spec.partitions):
                self._mask(m.start(), m.end())
        self._appositive_sizes()
        self._lone_filesystems()
        self._supported_filesystems()

    def _more_disks(self) -> None:
        """"an extra 10GB data disk", "add a second 20G drive", "two disks": a disk beside the image's own. A template
        describes one disk, so data's becomes a partition on it (said); any other is not written, and its size is
        never the image's disk size."""
        for m in self._each(rf"\b(?:(?:second|2nd|extra|separate|additional|dedicated|another)\s+(?:{_SIZE}\s+)?"
                            rf"(?:(data|storage)\s+)?(?:disk|drive|ssd|hdd)\b|(?:two|2|several|multiple)\s+(?:disks|drives))"):
            said = " ".join(m.group(0).split())
            if m.group(3):
                mount = mount_point(m.group(3))
                size = size_said(m.group(1), m.group(2)) if m.group(1) else None
                self.spec.partitions.append({"action": "add", "mountPoint": mount, "size": size, "fsType": None,
                                             "fill": False})
                self.spec.notes.append(f"a template describes one disk: {mount} is a partition on it, not a disk of its own")
            else:
                self.spec.unsupported.append(f"{said}: a template describes one disk; say a partition on it instead "
                                             "(e.g. 'a 20G /data partition')")
            self._mask(m.start(), m.end())

    def _its_data(self) -> None:
        """"also mariadb, and put its data on a 50G partition", "postgres 16, data on its own 100G partition": the
        data of the software named last before it that has a place of its own (request_words.yaml software_mounts),
        as "mariadb's data" would say; with no such software before it, /data."""
        owners = alternatives(_WORDS.software_mounts)
        for m in self._each(rf"(?:\b(?:put|move|keep|place|store|give)\s+(?:its|their|the)\s+|(?:^|[,;:(]|\band\b|\bwith\b)\s*"
                            rf"(?:(?:its|their|the)\s+)?)data\s+(?:on|onto|in|into|to|its)\s+"
                            rf"(?:an?\s+|its\s+own\s+|a\s+separate\s+|a\s+dedicated\s+|own\s+)?{_OWN_PARTITION}"):
            named = re.findall(rf"\b({owners})\b", self.said[:m.start()], re.I)
            self.spec.partitions.append(_added(mount_point(f"{named[-1]} data") if named else "/data", m.groups()))
            self._mask(m.start(), m.end())

    def _software_logs(self) -> None:
        """"the nginx logs on their own partition": a daemon's logs are its directory under /var/log."""
        for m in self._each(rf"\b([a-z][\w.+-]*)\s+logs?\s+(?:on|in|into|to|gets?|with|should\s+(?:go\s+on|get))\s+"
                            rf"(?:their|its|a|an)\s+(?:own\s+|separate\s+|dedicated\s+)?{_OWN_PARTITION}"):
            name = m.group(1).lower()
            if name not in self.known and not self.caps.group_for_word(name):
                continue  # "system logs", "the logs": no software's directory
            self.spec.partitions.append(_added(f"/var/log/{name}", m.groups()[1:]))
            self._mask(m.start(1) + len(m.group(1)), m.end())  # the software stays for the package reading

    def _appositive_sizes(self) -> None:
        """"I want /home on its own partition, 20 gigs", "/var as well, 10G, ext4": a size (and filesystem) said
        right after a partition added without one, past a comma, is that partition's, never the disk's. A path
        said "as well" or "too" is one more partition."""
        spec = self.spec
        for m in self._each(r"(?<![\w/.-])(/[\w./-]*[\w])\s+(?:as\s+well|too)\b"):
            if not any(p.get("mountPoint") == mount_point(m.group(1)) for p in spec.partitions):
                spec.partitions.append({"action": "add", "mountPoint": mount_point(m.group(1)), "size": None,
                                        "fsType": None, "fill": False, "said_at": m.start(1)})
            self._mask(m.start(), m.end())
        for part in spec.partitions:
            said_at = part.pop("said_at", None)
            if part.get("action") != "add" or part.get("size") or part.get("mountPoint") in (None, "/"):
                continue
            name = str(part["mountPoint"])
            at = said_at if said_at is not None else self.said.lower().rfind(name.lower())
            if at < 0:
                continue
            # what stands between the path and the comma was read with it (masked), or is filler
            tail = re.match(rf"[^,.;]*?,\s*{_SIZE}(?:\s*,\s*(?:formatted\s+(?:as\s+)?)?{_FS})?(?=\s*(?:$|[,.;]|\band\b))",
                            self.work[at:], re.I)
            if tail is None or self.work[at:at + tail.group(0).index(",")].strip(" \t").lower() not in ("", "too",
                                                                                                           "as well", "also"):
                continue
            part["size"] = size_said(tail.group(1), tail.group(2))
            if tail.group(3) and not part.get("fsType"):
                part["fsType"] = _fs(tail.group(3))
            self._mask(at, at + tail.end())

    def _lone_filesystems(self) -> None:
        """A filesystem named alone ("a /var/log partition of 4G, ext4", "/srv partition 2G ext4") is the last
        partition's added without one, else the one the conversation's last edit touched ("make it xfs"), else
        the root's; never a package."""
        spec = self.spec
        # "put the web root on xfs", "keep /srv on btrfs": a place put on a filesystem (resized to it, or added)
        for m in self._each(rf"\b(?:put|keep|have|place)\s+(?:the\s+)?{MOUNT}(?:\s+(?:partition|volume))?\s+(?:on|in|as)\s+"
                            rf"{_FS}(?![\w/-])(?!\s+(?:partition|volume)\b)"):
            mount, fs = mount_point(m.group(1)), _fs(m.group(2))
            spec.partitions.append({"action": "resize", "mountPoint": mount, "size": None, "fsType": fs})
            self._mask(m.start(), m.end())
        # "btrfs /home", "xfs for /srv": a filesystem followed by the mount point it is for
        for m in self._each(rf"(?<![\w/.-]){_FS}\s+(?:for\s+|on\s+)?(?:the\s+)?(/[\w./-]*)(?![\w/-])"):
            fs, mount = _fs(m.group(1)), mount_point(m.group(2))
            if mount == "/":
                spec.partitions.append({"action": "resize", "mountPoint": "/", "size": None, "fsType": fs})
            else:
                named = [p for p in spec.partitions if p.get("mountPoint") == mount]
                if named:
                    named[-1]["fsType"] = fs
                else:
                    spec.partitions.append({"action": "add", "mountPoint": mount, "size": None, "fsType": fs,
                                            "fill": False})
            self._mask(m.start(), m.end())
        for m in self._each(rf"(?<![\w/.-]){_FS}(?![\w/-])"):
            fs = _fs(m.group(1))
            unformatted = [p for p in spec.partitions if p.get("action") == "add" and not p.get("fsType")
                           and p.get("mountPoint") not in ("swap", "/")]
            corrected = re.search(rf"{CORRECTION}\W*$", self.work[:m.start()], re.I) and [
                p for p in spec.partitions if p.get("fsType") and p.get("mountPoint") != LAST_EDITED]
            if corrected:  # "ext4 for /srv... actually xfs": the filesystem just said for a partition, said again
                corrected[-1]["fsType"] = fs
            elif unformatted:
                unformatted[-1]["fsType"] = fs
            else:  # in a conversation, the partition its last edit touched (Layout.referent)
                spec.partitions.append({"action": "resize", "mountPoint": LAST_EDITED, "size": None, "fsType": fs})
            self._mask(m.start(), m.end())

    def _supported_filesystems(self) -> None:
        """A filesystem the build cannot make is said so and not written: the partition keeps its own, and a
        wish that was only the filesystem is dropped."""
        supported = load_template_format().filesystems
        kept = []
        for part in self.spec.partitions:
            fs = part.get("fsType")
            if fs and fs not in supported:
                mount = part.get("mountPoint")
                # a filesystem said alone is the partition an edit means, named only once the template is read
                where = "" if mount == LAST_EDITED else " on root" if mount == "/" else f" on {mount or 'a partition'}"
                self.spec.unsupported.append(f"{fs}{where}: os-image-composer's build does not make {fs} "
                                             f"filesystems; supported: {', '.join(supported)}")
                part["fsType"] = None
                if part.get("action") == "resize" and not part.get("size"):
                    continue
            kept.append(part)
        self.spec.partitions = kept

    def _disk_size(self) -> None:
        spec = self.spec
        delta = self._each(
            # "bump the disk up by 10G", "grow it by 5 gigs": a particle of direction may stand before "by"
            rf"\b(increase|grow|expand|enlarge|extend|bump|raise|boost|decrease|shrink|reduce|lower|cut|trim)(?:\s+(?:up|down))?\s+"
            rf"(?:it|(?:the\s+)?(?:disk|image|drive)(?:\s+size)?)\s+(?:up\s+|down\s+)?by\s+{_SIZE}"
        )
        for m in delta:
            sign = "-" if m.group(1).lower() in ("decrease", "shrink", "reduce", "lower", "cut", "trim") else "+"
            spec.disk_size_delta = sign + size_said(m.group(2), m.group(3))
            self._mask(m.start(), m.end())
        for m in self._each(
            rf"\b(add|give|remove|take)\s+(?:another\s+|an\s+extra\s+|extra\s+)?{_SIZE}\s+(?:more\s+)?"
            rf"(?:to|from)\s+(?:the\s+)?(?:disk|image|drive)(?:\s+size)?"
            # "knock 2 gigs off the disk", "take 2G off", "shave a gig off it": a size taken off is a smaller disk
            rf"|\b(knock|take|shave|cut|trim|chop|lop|strip)\s+{_SIZE}\s+off(?:\s+(?:of\s+)?(?:the\s+)?(?:disk|image|drive|it)"
            rf"(?:\s+size)?|(?!\s+(?:of\s+)?(?:the\s+)?(?:{_PLACE}|{MOUNT})))"
        ):
            g = m.groups()
            number, unit = (g[1], g[2]) if g[0] else (g[4], g[5])
            # every verb of taking off subtracts; of the others, removing and taking do
            sign = "-" if g[0] is None or g[0].lower() in ("remove", "take") else "+"
            spec.disk_size_delta = sign + size_said(number, unit)
            self._mask(m.start(), m.end())
        for m in self._each(r"\b(?:double)\s+(?:the\s+)?(?:disk|image)(?:\s+size)?"
                            r"|\b(?:make\s+)?(?:the\s+)?(?:disk|image)(?:\s+size)?\s+(?:twice|2x|two\s+times)\s+"
                            r"(?:as\s+(?:big|large)|bigger|larger|the\s+size)"):
            spec.disk_size_delta = "x2"
            self._mask(m.start(), m.end())
        # "shrink it back to 4GB", "grow the disk to 40G", "cap the whole disk at 6G": a size the disk is taken to
        for m in self._each(rf"\b(?:{_SIZING_VERBS}|take|bring)\s+(?:it|(?:the\s+)?(?:whole\s+|entire\s+|overall\s+|total\s+)?"
                            rf"(?:disk|image|drive)(?:\s+size)?)\s+(?:back\s+)?(?:down\s+|up\s+)?(?:to|at)\s+{_SIZE}"):
            spec.disk_size = size_said(m.group(1), m.group(2))
            self._mask(m.start(), m.end())
        patterns = [
            rf"\b(?:disk|drive|storage|image)(?:\s+image)?(?:\s+size)?\s*(?:(?:grown|increased|enlarged|expanded|bumped|"
            rf"raised|resized|shrunk|reduced|changed|set|sized)\s+)?(?:to|=|:|of|at|is|should\s+be|be|with)?\s*{_SIZE}",
            rf"\bsize\s+(?:of\s+(?:the\s+)?)?(?:disk|image|drive)?\s*(?:to|=|:|of|at|is)?\s*{_SIZE}",
            rf"\b{_SIZE}\s+(?:raw\s+)?(?:disk|drive|storage|image|raw|{_MEDIA})\b",
        ]
        for pattern in patterns:
            for m in self._each(pattern):
                spec.disk_size = size_said(m.group(1), m.group(2))
                self._mask(m.start(), m.end())
        # "the disk 50G. no, 40G", "16 gigs, I mean 32": a size said again as a correction replaces the disk's
        if spec.disk_size is not None:
            for m in self._each(rf"(?:{CORRECTION}|\bno)\s*[,.:;-]?\s*(?<![\w/.]){_SIZE}(?!\s*(?:of\s+)?(?:ram|memory|swap|partition))"):
                spec.disk_size = size_said(m.group(1), m.group(2))
                self._mask(m.start(), m.end())
        if spec.disk_size is None and not spec.disk_size_delta:
            # A lone size ("edge image with docker, 32GiB") can only mean the disk; memory sizes are not ours.
            # "16 GB total", "32G in total": the size of the whole disk, the word after it read with it
            for m in self._each(rf"(?<![\w/.]){_SIZE}(?:\s+(?:in\s+)?(?:total|overall|altogether))?"
                                rf"(?!\s*(?:of\s+)?(?:ram|memory|swap|partition|tmpfs|ramdisk))"):
                # "a cache of 500MB", "logs: 2G", "journald limited to 500M": a size said of something else is no
                # disk size (what it is said of is reported as a value nothing read)
                said_of = re.search(r"\b([a-z][\w-]*)\s*(?:\bof|\bat|=|:|\s(?:limited|capped|restricted)\s+(?:to|at))\s*$",
                                    self.work[:m.start()], re.I)
                word = said_of.group(1).lower() if said_of else ""
                if word and word not in _DISK_WORDS and not (self.caps.family_of(word) or self.caps.dist_of(word)):
                    continue
                if re.match(r"\s*(?:of\s+)?(?:tmpfs|ram|memory)\b", self.said[m.end():], re.I):
                    continue  # "a 1G tmpfs for /tmp", its words read by the settings already: memory, not disk
                spec.disk_size = size_said(m.group(1), m.group(2))
                bound = _UPPER_BOUND.search(self.work[:m.start()])
                self._mask(bound.start() if bound else m.start(), m.end())
        # "make it smaller, 10 gigs is enough": the way the size was to move, checked against the disk's when applied
        if spec.disk_size is not None and not spec.disk_size_delta:
            down = re.search(r"\b(?:smaller|shrink|shrunk|reduce|reduced|tinier|less\s+(?:disk|space|room))\b", self.said, re.I)
            up = re.search(r"\b(?:bigger|larger|grow|grown|enlarge|expand|more\s+(?:disk|space|room))\b", self.said, re.I)
            spec.disk_direction = "down" if down and not up else "up" if up and not down else None
        # "make it smaller", "make the disk bigger": a way to move with no size to move by is asked back, not guessed
        elif spec.disk_size is None and not spec.disk_size_delta and not spec.partitions:
            for m in self._each(r"\b(?:make|get)\s+(?:it|this|the\s+(?:disk|image|drive))\s+(?:a\s+(?:bit|little)\s+)?"
                                r"(smaller|bigger|larger|tinier)\b|\b(shrink|grow|enlarge|expand)\s+(?:it|this|the\s+(?:disk|image|drive))\b"):
                to, by = ("4G", "2G smaller") if re.match(r"small|tin|shrink", m.group(1) or m.group(2), re.I) else (
                    "40G", "10G bigger")
                spec.unparsed.append(f"{' '.join(m.group(0).split())} (by how much? say a size: e.g. 'make the disk "
                                     f"{to}' or '{by}')")
                self._mask(m.start(), m.end())


# Words a lone size may be said of and still be the disk's ("a total of 32G", "disk: 8G", "size = 16G")
_DISK_WORDS = {"disk", "drive", "storage", "image", "size", "total", "capacity", "space", "a", "an", "with"}


def _fs_and_size(tail: tuple[str | None, ...]) -> tuple[str | None, str | None]:
    """(size, filesystem) from the groups of :data:`_FS_OR_SIZE`: a filesystem, a size, or both in either order."""
    number, unit = (tail[1], tail[2]) if tail[1] else (tail[4], tail[5])
    return (size_said(number, unit or "") if number else None), tail[0] or tail[3]


def _place_said(verbs: str, joiner: str, value: str) -> str:
    """A place in the filesystem given a value without the word partition: "<verb> (the) <place> <joiner><value>"
    or "(the) <place> should be <value>"; read with :func:`_said`."""
    noun = r"(?:\s+(?:partition|filesystem|file\s+system|fs|volume))?"  # "the root partition should be 12 gigs"
    return (rf"\b(?:{verbs})\s+(?:the\s+)?{_PLACE}(?![\w/])\s+{joiner}{value}"  # with the noun: _partitions
            rf"|(?<![\w/])(?:the\s+)?{_PLACE}(?![\w/]){noun}\s+(?:should|must|needs?\s+to|has\s+to|will|is\s+to)\s+be\s+{value}")


def _said(m: re.Match[str]) -> tuple[str, ...]:
    """The place and the value's groups of whichever side of :func:`_place_said` matched."""
    g = m.groups()
    half = len(g) // 2
    return g[:half] if g[0] else g[half:]


# A partition with its size and filesystem before or after the word: "a 50G xfs partition", "a partition of 5G".
_OWN_PARTITION = rf"(?:{_SIZE}\s+)?(?:{_FS}\s+)?(?:partition|volume)(?:\s+(?:of|with)\s+{_SIZE})?"


def _added(mount: str, groups: tuple[Any, ...]) -> dict:
    """A partition added at ``mount``, from the groups of an :data:`_OWN_PARTITION` match (size, unit, filesystem,
    size, unit)."""
    size, unit, fs, after, after_unit = groups[:5]
    return {"action": "add", "mountPoint": mount, "size": size_said(size, unit) if size else size_said(after, after_unit)
            if after else None, "fsType": _fs(fs), "fill": False}


def _fs(word: str | None) -> str | None:
    if not word:
        return None
    word = word.lower()
    return _WORDS.filesystems.get(word, word)

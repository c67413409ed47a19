"""Reading changes of a size, of the disk or of one partition: by an amount ("+10G", "10G bigger", "8 giga more",
"grow /data by 2G"), by a factor ("double it", "halve the disk", "make /srv twice as big", "50% bigger"), or to a
size for a partition named by its path ("resize /data to 3G"). Read before the partitions and the disk size,
whose patterns would take such a size for the disk's own."""

from __future__ import annotations

import re

from ..knowledge.request_words import load_request_words
from ..knowledge.sizes import CASUAL_SIZE, UNIT_WORDS, casual_mib, fmt_size, template_mib
from .partition_words import DATA_NOUNS, mount_point
from .phrasing import ParserState, alternatives

_SIZE = CASUAL_SIZE
_MOUNT = rf"(/[\w./-]*|{alternatives(load_request_words().mount_words)})"
_NOUN = r"(?:\s+(?:partition|filesystem|file\s+system|fs|volume))"
_DISK = r"(?:the\s+)?(?:disk|drive|image|storage)(?:\s+size)?"
_GROW = r"(?:increase|grow|expand|enlarge|extend|bump|raise|make)"
_SHRINK = r"(?:decrease|shrink|reduce|cut|lower|trim)"
# A factor in words: "double", "twice as big", "2x", "halve", "half the size", "triple".
_TIMES = {"double": "x2", "twice": "x2", "two times": "x2", "2x": "x2", "2 times": "x2", "triple": "x3",
          "thrice": "x3", "three times": "x3", "3x": "x3", "halve": "x0.5", "half": "x0.5"}
_BIGGER = r"(?:more|bigger|larger|extra|additional)"
_SMALLER = r"(?:less|smaller)"


def _amount(number: str, unit: str) -> str | None:
    mib = casual_mib(number, unit)
    return fmt_size(mib) if mib else None


def _percent(value: str, sign: str) -> str:
    factor = 1 + float(value) / 100 if sign == "+" else 1 - float(value) / 100
    return f"x{factor:g}"


class SizePhrases(ParserState):
    """Changes of the disk's or a partition's size."""

    def _size_changes(self) -> None:
        self._old_values_said()
        self._unitless_disk_size()
        self._software_data_sizes()
        self._disk_partitions()
        self._sizes_of_them()
        self._partition_size_changes()
        self._disk_size_changes()

    def _partition_sized_by_pronoun(self) -> None:
        """"home on a separate partition, 30 gigs for it", "add a /data partition, give it 20G": a size for "it"
        after a partition said in the same sentence is that partition's (the last one added without a size), never
        the disk's. Read after the partitions and before the disk size."""
        for m in self._each(rf"(?<![\w.]){_SIZE}\s+(?:for|to)\s+(?:it|that(?:\s+one)?)\b"
                            rf"|\b(?:give|make|set)\s+it\s+(?:to\s+)?{_SIZE}(?![\w/])(?!\s+(?:more|bigger|larger|smaller|less)\b)"):
            unsized = self._unsized_added()
            if not unsized or not re.search(r"\bpartition\b[^.;!?]*$", self.said[:m.start()], re.I):
                continue
            amount = _amount(m.group(1) or m.group(3), m.group(2) or m.group(4))
            if amount:
                unsized[-1].update(size=amount, fill=False)
                self._mask(m.start(), m.end())
        # "tmp on its own partition (2G, noexec)": a size in parentheses after "partition" is that partition's; mount
        # options said with it are not written (the composer keeps a partition's own), which is said
        for m in self._each(rf"\(\s*{_SIZE}\s*(?:,\s*(?P<options>[\w\s,=-]*?))?\s*\)"):
            unsized = self._unsized_added()
            amount = _amount(m.group(1), m.group(2))
            if not unsized or not amount or not re.search(r"\bpartition\s*$", self.said[:m.start()], re.I):
                continue
            unsized[-1].update(size=amount, fill=False)
            if m.group("options"):
                self.spec.unparsed.append(f"mount options {' '.join(m.group('options').split())} of "
                                          f"{unsized[-1]['mountPoint']} (not written by the composer: the partition keeps "
                                          "its defaults; set its mountOptions in the template)")
            self._mask(m.start(), m.end())

    def _unsized_added(self) -> list[dict]:
        """The partitions this request adds without a size, beyond root, in the order said."""
        return [p for p in self.spec.partitions if p.get("action") == "add" and not p.get("size")
                and p.get("mountPoint") not in (None, "/")]

    def _old_values_said(self) -> None:
        """"the disk should be 32 gigs, not 4", "/var should be 20 not 10": the number after "not" is the value being
        replaced, no wish of its own (it had been reported as not understood)."""
        for m in self._each(rf"(?:{_SIZE}|(?<![\w.])\d{{1,5}})(\s*,?\s+(?:not|instead\s+of|rather\s+than)\s+(?:the\s+)?"
                            rf"\d+(?:\.\d+)?(?:\s*(?:{UNIT_WORDS}))?)(?![\w.%/-])"):
            self._mask(m.start(3), m.end(3))

    def _unitless_disk_size(self) -> None:
        """"disk 16", "disk size: 40": a disk's size said without a unit is in GiB, the unit disks are sized in, and
        said so; a count too small for a disk ("disk 2", which may name a second disk) is left unread."""
        for m in self._each(rf"\b(?:disk|drive)(?:\s+size)?\s*(?:(?:of|is|should\s+be|to)\s+|[:=]\s*)?(\d{{1,4}})"
                            rf"(?![\w.%/-])(?!\s*(?:{UNIT_WORDS}|x|partitions?|disks?|drives?)\b)"):
            if int(m.group(1)) < 4:
                continue
            self.spec.disk_size = f"{int(m.group(1))}GiB"
            self.spec.notes.append(f"'{m.group(0)}' read as {self.spec.disk_size}, as no unit was said")
            self._mask(m.start(), m.end())
        # "/var should be 20": a partition's size, in GiB as well
        for m in self._each(rf"(?<![\w/.-])(/[\w./-]*)(?:\s+partition)?\s+(?:should\s+be|must\s+be|=|:|is)\s*(\d{{1,4}})"
                            rf"(?![\w.%/-])(?!\s*(?:{UNIT_WORDS}|x|users?|cores?|ports?)\b)"):
            self._partition(m.group(1), size=f"{int(m.group(2))}GiB")
            self.spec.notes.append(f"'{' '.join(m.group(0).split())}' read as {int(m.group(2))}GiB, as no unit was said")
            self._mask(m.start(), m.end())

    def _software_data_sizes(self) -> None:
        """"150G for the postgres data", "docker storage 80G": a size said for software's data is its partition's
        (request_words.yaml software_mounts), never the disk's; the software's word stays for the package reading."""
        software = rf"({alternatives(load_request_words().software_mounts)})(?:'s)?\s+{DATA_NOUNS}\b"
        for m in self._each(rf"(?<![\w.]){_SIZE}\s+(?:(?:of\s+)?(?:storage|space|room)\s+)?(?:for|to)\s+(?:the\s+|its\s+)?"
                            rf"{software}|(?<![\w/-]){software}\s+(?:gets\s+|of\s+|=\s*|:\s*)?{_SIZE}(?![\w/])"):
            number, unit, word = (m.group(1), m.group(2), m.group(3)) if m.group(1) else (m.group(5), m.group(6), m.group(4))
            amount = _amount(number, unit)
            if not amount:
                continue
            self.spec.partitions.append({"action": "add", "mountPoint": mount_point(f"{word} data"), "size": amount,
                                         "fsType": None, "fill": False})
            start = m.start(3) if m.group(1) else m.start(4)
            self._mask(m.start(), start)
            self._mask(start + len(word), m.end())

    def _disk_partitions(self) -> None:
        """"a dedicated 50G disk partition at /var/lib/mysql": a disk's partition is a partition, never the disk
        with its size; rewritten in place (the same length) as the partition word alone."""
        for m in self._each(r"\b(?:disk|drive)\s+(partitions?|volumes?)\b"):
            self.work = self.work[:m.start()] + m.group(1).rjust(m.end() - m.start()) + self.work[m.end():]

    def _sizes_of_them(self) -> None:
        """"make the image 12 gigabytes and give /home 4 of them": a count of "them" after a size is that many of
        its unit, rewritten in place (the same length) for the size readings."""
        for m in reversed(self._each(r"(?<![\w.])(\d+(?:\.\d+)?)\s+of\s+(?:them|those|these|it)\b")):
            sentence = re.split(r"[.;!?\n]", self.work[:m.start()])[-1]
            earlier = list(re.finditer(_SIZE, sentence, re.I))
            said = (_amount(m.group(1), earlier[-1].group(2)) or "") if earlier else ""
            if said and len(said) <= m.end() - m.start():
                self.work = self.work[:m.start()] + said.ljust(m.end() - m.start()) + self.work[m.end():]

    def _partition(self, mount: str, **change: str | None) -> None:
        mount = mount if mount.startswith("/") else load_request_words().mount_words.get(mount.lower(), mount)
        self.spec.partitions.append({"action": "resize", "mountPoint": mount, "size": None, **change})

    def _partition_size_changes(self) -> None:
        # "resize /data to 3G": a path needs no "partition" beside it
        for m in self._each(rf"\b(?:resize|grow|shrink|make|set|change|extend|increase|decrease|enlarge|reduce)\s+"
                            rf"(?:the\s+)?(/[\w./-]*){_NOUN}?(?:'s\s+size|\s+size)?\s+(?:to|=|be)\s*{_SIZE}"):
            self._partition(m.group(1), size=_amount(m.group(2), m.group(3)))
            self._mask(m.start(), m.end())
        # "the root partition is too small, give it 10G": "it" is the partition the clause before named
        for m in self._each(rf"\b(?:the\s+)?{_MOUNT}{_NOUN}?\s+is\s+(?:too\s+(?:small|tight|little|big|large)"
                            rf"|(?:running\s+)?out\s+of\s+(?:space|room)|(?:almost\s+)?full)\s*[,;.]?\s*"
                            rf"(?:so\s+|please\s+|just\s+)?(?:give|make|set|grow|resize|bump|shrink)\s+it\s+"
                            rf"(?:to\s+)?{_SIZE}"):
            amount = _amount(m.group(2), m.group(3))
            if amount:
                self._partition(m.group(1), size=amount)
                self._mask(m.start(), m.end())
        # "grow /data by 2G", "shrink the /var partition by 1G", "make /srv 2G bigger"
        for m in self._each(rf"\b({_GROW}|{_SHRINK})\s+(?:the\s+)?{_MOUNT}{_NOUN}?\s+by\s+{_SIZE}"
                            rf"|\b(?:make|grow)\s+(?:the\s+)?{_MOUNT}{_NOUN}?\s+{_SIZE}\s+({_BIGGER}|{_SMALLER})\b"):
            if m.group(1):
                sign = "-" if re.fullmatch(_SHRINK, m.group(1), re.I) else "+"
                mount, number, unit = m.group(2), m.group(3), m.group(4)
            else:
                sign = "-" if re.fullmatch(_SMALLER, m.group(8), re.I) else "+"
                mount, number, unit = m.group(5), m.group(6), m.group(7)
            amount = _amount(number, unit)
            if amount:
                self._partition(mount, size_delta=sign + amount)
                self._mask(m.start(), m.end())
        # "knock 1G off root", "cut 500MB off /var", "add 2G to /srv": a size taken off a place or given to it
        for m in self._each(rf"\b(knock|take|shave|cut|trim|chop|lop|add|give)\s+{_SIZE}\s+(?:more\s+)?(off|to)\s+(?:of\s+)?"
                            rf"(?:the\s+)?{_MOUNT}{_NOUN}?(?![\w/])"):
            amount = _amount(m.group(2), m.group(3))
            if amount and (m.group(4).lower() == "off") != (m.group(1).lower() in ("add", "give")):
                self._partition(m.group(5), size_delta=("-" if m.group(4).lower() == "off" else "+") + amount)
                self._mask(m.start(), m.end())
        # "8G more for /var", "2G extra to the data partition"
        for m in self._each(rf"(?<![\w.]){_SIZE}\s+({_BIGGER}|{_SMALLER})\s+(?:for|to|on)\s+(?:the\s+)?{_MOUNT}{_NOUN}?"
                            r"(?![\w/])"):
            amount = _amount(m.group(1), m.group(2))
            if amount:
                sign = "-" if re.fullmatch(_SMALLER, m.group(3), re.I) else "+"
                self._partition(m.group(4), size_delta=sign + amount)
                self._mask(m.start(), m.end())
        # "make /srv twice as big", "double /data", "halve the /var partition"
        times = alternatives(_TIMES)
        for m in self._each(rf"\b(double|halve|triple)\s+(?:the\s+)?(?:size\s+of\s+(?:the\s+)?)?{_MOUNT}{_NOUN}?(?!\w)"
                            rf"|\bmake\s+(?:the\s+)?{_MOUNT}{_NOUN}?\s+({times})(?:\s+(?:as\s+(?:big|large)|bigger|larger"
                            rf"|the\s+size))?\b"):
            if m.group(2) and not re.match(r"/|\w", m.group(2)):
                continue
            word, mount = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
            self._partition(mount, size_delta=_TIMES[" ".join(word.lower().split())])
            self._mask(m.start(), m.end())

    def _disk_size_changes(self) -> None:
        spec = self.spec
        # "make the disk +10G", "disk -2G": a signed amount
        for m in self._each(rf"\b{_DISK}\s*(?:(?:to|by)\s*)?([+-])\s*{_SIZE}"):
            amount = _amount(m.group(2), m.group(3))
            if amount:
                spec.disk_size_delta = m.group(1) + amount
                self._mask(m.start(), m.end())
        # "make the disk 10G bigger", "8 giga more", "bigger of 8 giga more", "5G less"
        for m in self._each(rf"(?:\b(?:make|grow)\s+(?:it|{_DISK})\s+)?(?:\b(?:bigger|larger|smaller)\s+(?:of|by)\s+)?"
                            rf"{_SIZE}\s+({_BIGGER}|{_SMALLER})\b(?!\s+(?:partition|for|to\s+/))"):
            amount = _amount(m.group(1), m.group(2))
            if amount and not spec.disk_size_delta:
                spec.disk_size_delta = ("-" if re.fullmatch(_SMALLER, m.group(3), re.I) else "+") + amount
                self._mask(m.start(), m.end())
        # A size said as one more is added to the disk, unless something else follows it ("another 10G partition",
        # "an extra 2G of swap", "4G more RAM"): "give the disk another 8 GB", "an extra 10 gigs", and with the word
        # of more between the number and its unit, "give it 2 more gigs", "add 5 extra GB to the disk".
        # ... nor a disk of its own ("an extra 10GB data disk": parse_disk.py's _more_disks)
        elsewhere = (r"(?!\s*(?:(?:data|storage|ssd|nvme)\s+)?(?:disks?|drives?|ssds?|hdds?)\b)"
                     r"(?!\s*(?:\w+\s+)?(?:partitions?|volumes?|swap|ram|memory|for|of\s+(?:swap|ram|memory)"
                     r"|(?:to|on)\s+/))")
        for pattern in (rf"\b(?:another|an?\s+(?:extra|additional|further)|extra|additional)\s+{_SIZE}",
                        rf"\b(?:give|add)\s+(?:it|{_DISK}\s+)?\s*(\d+(?:\.\d+)?)\s+(?:more|extra|additional)\s+"
                        rf"({UNIT_WORDS})\b"):
            for m in self._each(pattern + elsewhere):
                amount = _amount(m.group(1), m.group(2))
                if amount and not spec.disk_size_delta:
                    spec.disk_size_delta = "+" + amount
                    self._mask(m.start(), m.end())
        # "double it", "halve the disk", "make the disk twice as big", "half the size"
        times = alternatives(_TIMES)
        for m in self._each(rf"\b(double|halve|triple)\s+(?:it|this|{_DISK}|the\s+size)\b"
                            rf"|\b(?:make\s+)?(?:it|{_DISK})\s+({times})\s+(?:as\s+(?:big|large)|bigger|larger|the\s+size)\b"):
            spec.disk_size_delta = _TIMES[" ".join((m.group(1) or m.group(2)).lower().split())]
            self._mask(m.start(), m.end())
        # "increase the disk by 50%", "50% bigger"
        for m in self._each(rf"\b({_GROW}|{_SHRINK})\s+(?:it|{_DISK})\s+by\s+(\d+(?:\.\d+)?)\s*%"
                            rf"|\b(\d+(?:\.\d+)?)\s*%\s+({_BIGGER}|{_SMALLER})\b"):
            if m.group(1):
                sign = "-" if re.fullmatch(_SHRINK, m.group(1), re.I) else "+"
                spec.disk_size_delta = _percent(m.group(2), sign)
            else:
                spec.disk_size_delta = _percent(m.group(3), "-" if re.fullmatch(_SMALLER, m.group(4), re.I) else "+")
            self._mask(m.start(), m.end())

    def _even_split(self) -> None:
        """"a 1TB disk split evenly between / and /data", "half for root and half for /srv": of the disk this request
        sizes, the other partition gets half and root keeps the rest (so the boot partitions' few MiB come from
        root's half). Without a disk size, or between two partitions neither of which is root, it is said, not
        written."""
        half = r"(?:evenly|equally|50\s*/\s*50|in\s+half|half\s+and\s+half|fifty[\s-]+fifty)"
        the = r"(?:the\s+)?"
        for m in [*self._each(rf"\b(?:split|divided|shared|partitioned|spread)\s+(?:{half}\s+)?between\s+{the}{_MOUNT}"
                              rf"(?:{_NOUN})?\s+and\s+{the}{_MOUNT}(?:{_NOUN})?(?:\s*,?\s*{half})?"),
                  *self._each(rf"\bhalf\s+(?:of\s+it\s+)?(?:for|to|on)\s+{the}{_MOUNT}\s+and\s+(?:the\s+other\s+)?half\s+"
                              rf"(?:for|to|on)\s+{the}{_MOUNT}")]:
            places = [mount_point(m.group(1)), mount_point(m.group(2))]
            disk = template_mib(self.spec.disk_size) if self.spec.disk_size else None
            self._mask(m.start(), m.end())
            said = f"the disk split evenly between {places[0]} and {places[1]}"
            if "/" not in places or places[0] == places[1]:
                self.spec.notes.append(f"{said} not applied: one of the two must be root, which takes what the other "
                                       "leaves; give each its size instead (e.g. '/data 500G and /srv 500G')")
                continue
            if not disk:
                self.spec.notes.append(f"{said} not applied: no disk size said with it; say it (e.g. 'a 1TB disk split "
                                       f"evenly between / and {places[0] if places[1] == '/' else places[1]}')")
                continue
            other = places[0] if places[1] == "/" else places[1]
            size = fmt_size(disk // 2)
            named = [p for p in self.spec.partitions if p.get("mountPoint") == other]
            if named:
                named[-1]["size"] = size
            else:
                self.spec.partitions.append({"action": "add", "mountPoint": other, "size": size, "fsType": None,
                                             "fill": False})
            self.spec.notes.append(f"{said}: {other} {size}, root the rest (the boot partitions come from its half)")

    def _machine_resources(self) -> None:
        """"8GB of RAM", "4 cores", "2 vcpus": the machine's or the virtual machine's resources, which a template
        does not set (the image runs with what it is given). Said as not applied, so a size of memory is never read
        as the disk's, and a count of cores never as a CPU list."""
        units = r"(?:[kmgt]i?b|[kmgt]|gigs?|megs?|gigabytes?|megabytes?)"
        memory = rf"\b\d+(?:\.\d+)?\s*{units}\s+(?:of\s+)?(?:ram|memory)\b|\b(?:ram|memory)\s*(?:of|:|=)?\s*\d+(?:\.\d+)?\s*{units}(?![\w/])"
        cpus = r"\b\d+[\s-]+(?:v?cpus?|cpu\s+cores?|cores?|vcores?|cpu\s+threads|processors)\b"
        for m in self._each(rf"{memory}|{cpus}"):
            if re.search(r"\b(?:isolat\w*|reserv\w*|dedicat\w*|pin\w*)\s+$", self.work[max(0, m.start() - 20):m.start()], re.I) \
                    or re.match(r"\s+(?:(?:are|to\s+be|kept)\s+)?(?:isolated|reserved|dedicated)\b", self.work[m.end():], re.I):
                continue  # "isolate 2 cores", "2 cpus isolated": the CPU isolation's own words, read there
            said = " ".join(m.group(0).split())
            self.spec.notes.append(f"{said} not applied: memory and CPUs are set where the image runs (the virtual "
                                   "machine or the machine itself), not in a template")
            self._mask(m.start(), m.end())


__all__ = ["SizePhrases"]

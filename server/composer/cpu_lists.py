"""Kernel CPU lists ("2,3", "1-3", "0-1,4", "managed_irq,domain,2-3") and the parameters that move with them.

Why: real-time templates isolate CPUs with several parameters at once (isolcpus, nohz_full, rcu_nocbs on the
isolated CPUs, irqaffinity on the others). Changing isolcpus alone leaves the others naming the old CPUs, so
interrupts may land on a CPU that is now isolated; the parameters that matched the old set follow the new one
(resources/system_settings.yaml ``same_cpus`` / ``other_cpus``).
"""

from __future__ import annotations

import re

_ITEM = re.compile(r"^(\d+)(?:-(\d+))?$")


def parse(value: str) -> tuple[tuple[str, ...], frozenset[int]] | None:
    """(flags, CPUs) of a kernel CPU list, or None when it is not one (a range backwards, a stride, a word
    after the numbers). Flags are isolcpus's leading words ("managed_irq", "domain")."""
    flags: list[str] = []
    cpus: set[int] = set()
    for item in value.split(","):
        m = _ITEM.match(item.strip())
        if m is None:
            if cpus or not re.fullmatch(r"[a-z_]+", item.strip()):
                return None
            flags.append(item.strip())
            continue
        low, high = int(m.group(1)), int(m.group(2) or m.group(1))
        if high < low or high - low > 4096:
            return None
        cpus.update(range(low, high + 1))
    return (tuple(flags), frozenset(cpus)) if cpus else None


def format_cpus(cpus: frozenset[int]) -> str:
    """The shortest list: runs of three or more as ranges ("0-2,5"), pairs as "2,3"."""
    out: list[str] = []
    ordered = sorted(cpus)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        if j - i >= 2:
            out.append(f"{ordered[i]}-{ordered[j]}")
        else:
            out.extend(str(c) for c in ordered[i:j + 1])
        i = j + 1
    return ",".join(out)


def follow(words: list[str], old: frozenset[int], new: frozenset[int], new_text: str,
           same: tuple[str, ...], other: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """The command line ``words`` with the ``same`` parameters that named the ``old`` CPUs now naming the new ones
    (written as ``new_text``, the user's spelling), and the ``other`` parameters that named the rest of the CPUs
    up to the highest one seen now naming the rest again; with the changes said. An ``other`` parameter left
    with no CPU is removed (every CPU isolated), and said."""
    out: list[str] = []
    changes: list[str] = []
    for word in words:
        key, _, value = word.partition("=")
        read = parse(value) if value else None
        if read is None or read[0]:
            out.append(word)
            continue
        cpus = read[1]
        if key in same and cpus == old:
            out.append(f"{key}={new_text}")
            changes.append(f"kernel cmdline: {key} {value} -> {new_text} (the isolated CPUs)")
            continue
        top = max(old | cpus)
        if key in other and cpus == frozenset(range(top + 1)) - old:
            rest = frozenset(range(max(top, max(new)) + 1)) - new
            if not rest:
                changes.append(f"kernel cmdline: removed {word} (every CPU up to {max(new)} is isolated now; "
                               "leave one CPU out of the isolated list for interrupts and housekeeping)")
                continue
            out.append(f"{key}={format_cpus(rest)}")
            changes.append(f"kernel cmdline: {key} {value} -> {format_cpus(rest)} (the CPUs left for interrupts)")
            continue
        out.append(word)
    return out, changes


def names_cpus(words: list[str], param: str) -> bool:
    """Whether a command line's ``words`` give ``param``'s key the CPUs ``param`` names, in any spelling and with
    any flags ("isolcpus=2,3" is in "isolcpus=managed_irq,2-3")."""
    key, _, value = param.partition("=")
    wanted = parse(value) if value else None
    if wanted is None:
        return False
    for word in words:
        wkey, _, wvalue = word.partition("=")
        there = parse(wvalue) if wkey == key and wvalue else None
        if there is not None and there[1] == wanted[1] and set(wanted[0]) <= set(there[0]):
            return True
    return False

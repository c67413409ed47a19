"""Kernel parameters whose value is a list of module names ("module_blacklist=nouveau,pcspkr"): a new name joins
the list rather than replacing it, and a name is there when the list holds it."""

from __future__ import annotations

from collections.abc import Iterable

LIST_PARAMETERS = frozenset({"module_blacklist", "modprobe.blacklist", "rd.driver.blacklist", "initcall_blacklist"})


def merged(word: str, param: str) -> str | None:
    """``param`` joined to ``word`` of the same list key ("module_blacklist=a" + "module_blacklist=b" ->
    "module_blacklist=a,b"); None when either is no list parameter or the keys differ."""
    key, _, value = param.partition("=")
    wkey, _, wvalue = word.partition("=")
    if key not in LIST_PARAMETERS or wkey != key:
        return None
    return f"{key}={','.join(dict.fromkeys([*wvalue.split(','), *value.split(',')]))}"


def listed(words: Iterable[str], param: str) -> bool:
    """Whether every name ``param`` lists is in the list of the same key among ``words``."""
    key, _, value = param.partition("=")
    if key not in LIST_PARAMETERS:
        return False
    held = {name for w in words if w.partition("=")[0] == key for name in w.partition("=")[2].split(",")}
    return set(value.split(",")) <= held

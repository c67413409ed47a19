"""What every rule family works with: the check context (the template, positions, collected issues), paths
as people read them, and small helpers for messages (kinds, shown values, the closest spelling).
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

from .report import Issue

MAX_ISSUES = 100  # per severity; the rest is summarised in one "issues.truncated" entry


PathT = tuple[str | int, ...]


class Locator(Protocol):
    def position(self, path: PathT) -> tuple[int | None, int | None]: ...

    def key_position(self, path: PathT) -> tuple[int | None, int | None]: ...


class NoPositions:
    def position(self, path: PathT) -> tuple[int | None, int | None]:
        return None, None

    def key_position(self, path: PathT) -> tuple[int | None, int | None]:
        return None, None


class Context:
    """One validation run: the data, where its values are in the source, and the issues found so far."""

    def __init__(self, data: dict, locator: Locator, base_dir: Path | None):
        self.data = data
        self.loc = locator
        self.base_dir = base_dir
        self.errors: list[Issue] = []
        self.warnings: list[Issue] = []
        self.dropped = {"error": 0, "warning": 0}
        self._seen: set[tuple[str, str, str]] = set()

    def add(
        self,
        path: PathT,
        message: str,
        code: str,
        *,
        hint: str | None = None,
        severity: str = "error",
        at_key: bool = False,
    ) -> None:
        target = self.errors if severity == "error" else self.warnings
        if len(target) >= MAX_ISSUES:  # hostile input can produce thousands; positions cost a lookup each
            self.dropped[severity] += 1
            return
        shown = fmt_path(path)
        key = (shown, code, message)
        if key in self._seen:
            return
        self._seen.add(key)
        line, col = self.loc.key_position(path) if at_key else self.loc.position(path)
        target.append(Issue(path=shown, message=message, line=line, column=col, hint=hint, code=code,
                            severity=severity))

    def warn(
        self, path: PathT, message: str, code: str, *, hint: str | None = None, at_key: bool = False
    ) -> None:
        self.add(path, message, code, hint=hint, severity="warning", at_key=at_key)

    def source(self, path: PathT) -> str | None:
        """The scalar as written in the YAML (``1.10`` stays ``1.10``), when known."""
        node_at = getattr(self.loc, "node_at", None)
        if node_at is None:
            return None
        node = node_at(path)
        value = getattr(node, "value", None)
        return value if isinstance(value, str) else None

    # typed getters: semantic checks run even when the schema failed, so trust nothing
    def get(self, *keys: str | int) -> Any:
        cur: Any = self.data
        for k in keys:
            if isinstance(k, int):
                if not isinstance(cur, list) or not 0 <= k < len(cur):
                    return None
            elif not isinstance(cur, dict):
                return None
            cur = cur[k] if isinstance(k, int) else cur.get(k)
        return cur

    def dict_at(self, *keys: str | int) -> dict:
        value = self.get(*keys)
        return value if isinstance(value, dict) else {}

    def list_at(self, *keys: str | int) -> list:
        value = self.get(*keys)
        return value if isinstance(value, list) else []

    def str_at(self, *keys: str | int) -> str | None:
        value = self.get(*keys)
        return value if isinstance(value, str) else None


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def fmt_path(path: Iterable[str | int]) -> str:
    out = "$"
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENT.match(part):
            out += f".{part}"
        else:
            out += f"[{json.dumps(part)}]"
    return out


def where(path: PathT) -> str:
    """Human name of a location: 'disk.partitions[1]', or 'the template' for the root."""
    shown = fmt_path(path)
    return "the template" if shown == "$" else shown[2:] if shown.startswith("$.") else shown[1:]


def kind_of(value: Any) -> str:
    if value is None:
        return "empty (null)"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"a {type(value).__name__}"


def show(value: Any, limit: int = 60) -> str:
    text = repr(value) if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def jsonable(obj: Any, depth: int = 0) -> Any:
    """YAML can produce dates, bytes, sets and non-string keys; JSON Schema wants JSON types.

    Dates become ISO strings and bytes text, roughly what upstream's yaml.v3 -> JSON does.
    """
    if depth > 200:  # validate_data may receive arbitrary (even cyclic) Python objects
        raise ValueError("structure nested too deeply")
    if isinstance(obj, dict):
        return {_key_text(k): jsonable(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set | frozenset):
        return [jsonable(v, depth + 1) for v in obj]
    if isinstance(obj, _dt.date | _dt.datetime | _dt.time):
        return obj.isoformat()
    if isinstance(obj, bytes | bytearray):
        return bytes(obj).decode("utf-8", "replace")
    if obj is None or isinstance(obj, str | int | float | bool):
        return obj
    return str(obj)


def _key_text(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, _dt.date | _dt.datetime):
        return key.isoformat()
    return str(key)


def _levenshtein(a: str, b: str) -> int:
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def closest(word: str, options: Iterable[str]) -> str | None:
    """The option a typo most likely meant, or None when nothing is close enough."""
    if not isinstance(word, str) or len(word) > 100:
        return None
    low = word.lower()
    limit = max(2, len(word) // 3)
    best: tuple[int, str] | None = None
    for opt in options:
        if abs(len(opt) - len(word)) > limit:  # cannot be within the limit; skip the O(n*m) work
            continue
        dist = _levenshtein(low, opt.lower())
        if best is None or dist < best[0]:
            best = (dist, opt)
    if best is None:
        return None
    return best[1] if best[0] <= limit else None


PLACEHOLDER_TOKEN = re.compile(r"<[A-Z][A-Z0-9_]*>")


PLACEHOLDER_WHOLE = re.compile(r"^\s*<[^<>\n]{1,80}>\s*$")


__all__ = ["MAX_ISSUES", "PLACEHOLDER_TOKEN", "PLACEHOLDER_WHOLE", "Context", "Locator", "NoPositions", "PathT",
           "closest", "fmt_path", "jsonable", "kind_of", "show", "where"]

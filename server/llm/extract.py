"""YAML extraction from LLM replies: find the template inside prose, fences and truncated answers."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..core.yamlsafe import YamlError, parse_yaml

TEMPLATE_KEYS = ("image", "target", "disk", "systemConfig", "packageRepositories", "metadata")
# Keys that make a mapping "a template" rather than some other YAML the model emitted.
_CORE_KEYS = frozenset({"image", "target", "systemConfig", "disk"})

_FENCE_OPEN = re.compile(
    r"^(?P<indent>[ \t]*)(?:.*?[\s:])?(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w.+-]*)[^`~]*$"
)
_KEY_LINE = re.compile(r"^(?P<indent>[ ]*)(?P<key>" + "|".join(TEMPLATE_KEYS) + r")[ \t]*:(?:[ \t]|$)")
_ANY_KEY_LINE = re.compile(r"^[a-z_][\w.-]*[ \t]*:(?:[ \t]|$)")
_BARE_KEY = re.compile(r"^[\w.-]+[ \t]*:[ \t]*(?:#.*)?$")
_TOP_KEY_LINE = re.compile(r"^(?:" + "|".join(TEMPLATE_KEYS) + r")[ \t]*:(?:[ \t]|$)")
_YAML_LANGS = frozenset({"yaml", "yml"})


@dataclass
class _Candidate:
    text: str
    fenced: bool
    lang: str
    open_end: bool = False  # runs to the end of the reply (an unclosed fence): maybe truncated
    partial_tail: bool = False  # ...and the reply ends mid-line, so the last line is incomplete


def _fenced_blocks(lines: list[str]) -> list[_Candidate]:
    blocks: list[_Candidate] = []
    i = 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m.group("fence"), m.group("lang").lower()
        # Fences in markdown lists are indented; the content shares that indent.
        indent = len(m.group("indent")) if lines[i].lstrip().startswith(fence) else 0
        body: list[str] = []
        j = i + 1
        closed = False
        while j < len(lines):
            stripped = lines[j].strip()
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
                closed = True
                break
            if stripped.endswith(fence) and not stripped.startswith(fence[0]):
                # "  - vim```": the model glued the closing fence to the last line.
                body.append(lines[j].rstrip()[: -len(fence)])
                closed = True
                break
            body.append(lines[j])
            j += 1
        body = [_dedent_line(line, indent) for line in body]
        partial = not closed and bool(body) and bool(body[-1].strip())
        blocks.append(_Candidate("\n".join(body), True, lang, open_end=not closed, partial_tail=partial))
        i = j + 1
    return blocks


def _dedent_line(line: str, indent: int) -> str:
    if indent and line[:indent].strip() == "":
        return line[indent:]
    return line


def _unfenced_runs(lines: list[str]) -> list[_Candidate]:
    """Contiguous YAML blocks that start at a template key, outside any fence logic."""
    runs: list[_Candidate] = []
    i = 0
    while i < len(lines):
        m = _KEY_LINE.match(lines[i])
        if not m:
            i += 1
            continue
        indent = len(m.group("indent"))
        block = [lines[i][indent:]]
        # What the last line at the margin was: a bare "key:" or a "- " item may be followed
        # by "- " items at the margin; anything else followed by one is a prose bullet list.
        last_margin = "opener" if _BARE_KEY.match(block[0]) else "key"
        j = i + 1
        while j < len(lines):
            line = lines[j]
            if not line.strip():
                block.append("")
                j += 1
                continue
            lead = len(line) - len(line.lstrip(" \t"))
            if lead < indent:
                break
            rest = line[indent:]
            if lead > indent or rest.startswith(("\t", "#", "---")):
                block.append(rest)
            elif rest.startswith("- ") or rest == "-":
                if last_margin == "key" or not block[-1].strip():
                    break
                block.append(rest)
                last_margin = "item"
            elif _KEY_LINE.match(rest) or _ANY_KEY_LINE.match(rest):
                # Template keys are lowerCamel; "Note:" or "Explanation:" at the margin starts prose.
                block.append(rest)
                last_margin = "opener" if _BARE_KEY.match(rest) else "key"
            else:
                break
            j += 1
        while block and not block[-1].strip():
            block.pop()
        at_end = j >= len(lines)
        runs.append(_Candidate("\n".join(block), False, "", at_end, at_end and bool(lines[-1].strip())))
        i = j
    return runs


def _parse_mapping(text: str) -> dict[str, Any] | None:
    try:
        data = parse_yaml(text).data
    except YamlError:
        return None
    return data if isinstance(data, dict) else None


def _template_score(data: dict[str, Any] | None) -> int:
    """How template-like a mapping is; sections must be structured ("image: the name…" is prose)."""
    if not data:
        return 0
    sections = [k for k, v in data.items() if k in TEMPLATE_KEYS and isinstance(v, dict | list)]
    return sum(1 for k in sections if k in _CORE_KEYS) * 10 + len(sections)


_EMPTY_OPENER = re.compile(r"^\s*(?:-\s*)?(?:[\w.-]+\s*:)?\s*(?:#.*)?$")


def _repair_truncated(text: str, partial_tail: bool, max_drop: int = 12) -> tuple[str, dict[str, Any]] | None:
    """A reply cut off by max_tokens: drop the incomplete last line, then whatever keeps it from parsing.

    Trailing ``key:`` lines whose content was cut away are dropped too, so a truncated section
    disappears instead of turning into a null that validation would misreport.
    """
    lines = text.rstrip("\n").split("\n")
    if partial_tail and len(lines) > 1:
        lines.pop()
    for _ in range(max_drop + 1):
        while lines and _EMPTY_OPENER.match(lines[-1]):
            lines.pop()
        if not lines:
            return None
        shorter = "\n".join(lines)
        data = _parse_mapping(shorter)
        if data is not None and _template_score(data):
            return shorter, data
        lines.pop()
    return None


def extract_yaml(text: str) -> str | None:
    """The YAML template inside an LLM reply, or None when the reply holds nothing YAML-like.

    Preference, best first:
      1. blocks (fenced or not) that parse to a mapping with template keys: the one with the most
         core keys (image/target/systemConfig/disk), then the longest; a truncated last block is
         repaired by dropping its incomplete tail lines;
      2. blocks that look like a template (a top-level template key) but do not parse: returned
         as-is, so validation can report the syntax error and the fix loop can repair it;
      3. a ```yaml / ```yml fence whose content is some other mapping (a fragment).
    Tabs are left alone (the validator reports them); Windows newlines become ``\\n``.
    """
    if not text or not text.strip():
        return None
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    lines = text.split("\n")
    candidates = _fenced_blocks(lines)
    candidates += _unfenced_runs(lines)
    stripped = text.strip()
    if stripped.startswith("{") and stripped.endswith("}"):
        candidates.append(_Candidate(stripped, False, "json"))

    valid: list[tuple[int, int, str]] = []
    broken: list[str] = []
    fragments: list[str] = []
    for cand in candidates:
        body = cand.text.strip("\n")
        if not body.strip():
            continue
        data = _parse_mapping(body)
        if cand.open_end and (cand.partial_tail or not _template_score(data)):
            repaired = _repair_truncated(body, cand.partial_tail)
            if repaired:
                body, data = repaired
        score = _template_score(data)
        if score:
            valid.append((score, len(body), body))
        elif data is None and any(_TOP_KEY_LINE.match(line) for line in body.split("\n")):
            if cand.fenced and cand.lang and cand.lang not in _YAML_LANGS:
                continue  # e.g. a shell snippet that happens to contain "image:"
            broken.append(body)
        elif data is not None and cand.fenced and cand.lang in _YAML_LANGS:
            fragments.append(body)
    if valid:
        best = max(valid, key=lambda v: (v[0], v[1]))
        return best[2].rstrip() + "\n"
    for group in (broken, fragments):
        if group:
            return max(group, key=len).rstrip() + "\n"
    return None

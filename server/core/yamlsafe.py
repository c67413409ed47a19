"""Safe YAML parsing for untrusted template text.

PyYAML's safe loader already refuses arbitrary objects, but it still expands
aliases without bound (the "billion laughs" bomb), recurses once per nesting
level (in C for the C loader: a deep document is a SIGSEGV, not an exception),
and silently keeps the last of two duplicate keys. This module bounds the depth
on the parser's event stream first (iterative, every nesting construct), then
composes the node graph, checks alias expansion on that graph, and only then
builds Python objects. The node graph is kept so callers can
map a JSON-like path back to a line and column in the source.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

MAX_BYTES = 1024 * 1024  # 1 MiB: the largest real template is ~10 KiB
MAX_DEPTH = 64
MAX_NODES = 100_000  # after alias expansion

_CLoader = getattr(yaml, "CSafeLoader", None)

Path = tuple[str | int, ...]


class YamlError(ValueError):
    """A YAML document we refuse, with the 1-based position when known."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None, hint: str = ""):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.hint = hint

    def __str__(self) -> str:
        where = f" (line {self.line}, column {self.column})" if self.line else ""
        return f"{self.message}{where}"


@dataclass
class ParsedYaml:
    data: Any
    root: Node | None
    duplicate_keys: list[tuple[Path, int, int]] = field(default_factory=list)

    def node_at(self, path: Path) -> Node | None:
        """The deepest node along ``path`` that exists (a missing leaf gives its parent)."""
        node = self.root
        for part in path:
            child = _child(node, part)
            if child is None:
                break
            node = child
        return node

    def position(self, path: Path) -> tuple[int | None, int | None]:
        node = self.node_at(path)
        if node is None:
            return None, None
        return node.start_mark.line + 1, node.start_mark.column + 1

    def key_position(self, path: Path) -> tuple[int | None, int | None]:
        """Position of the mapping key for the last element of ``path`` (better for 'unknown key')."""
        if not path:
            return self.position(path)
        parent = self.node_at(path[:-1])
        if isinstance(parent, MappingNode):
            for key, _value in parent.value:
                if isinstance(key, ScalarNode) and key.value == path[-1]:
                    return key.start_mark.line + 1, key.start_mark.column + 1
        return self.position(path)


def _child(node: Node | None, part: str | int) -> Node | None:
    if isinstance(node, MappingNode):
        for key, value in node.value:
            if isinstance(key, ScalarNode) and key.value == str(part):
                return value
    elif isinstance(node, SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
        return node.value[part]
    return None


def _decode(data: str | bytes) -> str:
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise YamlError(
            f"input is not UTF-8 text (invalid byte at offset {exc.start})",
            hint="Templates must be UTF-8 YAML text; check that you did not pass a binary file.",
        ) from None


_OPEN_EVENTS = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_CLOSE_EVENTS = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


def _check_nesting(text: str, loader_cls: type) -> None:
    """Refuse documents nested deeper than MAX_DEPTH before anything recursive sees them.

    Both parsers (libyaml's and PyYAML's pure-Python one) are state machines with heap stacks, so
    streaming their events is bounded however deep the text nests. The composers that build the node
    graph afterwards recurse once per level (in C for the C loader, where a deep document overflows
    the C stack and kills the process with SIGSEGV). Counting start/end events is exact for every
    nesting construct (block indentation, ``- - -`` on one line, explicit ``?`` keys, flow ``[[``/``{{``,
    anchors and tags) and stops at the first event past the limit.
    """
    depth = 0
    loader = loader_cls(text)
    try:
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, _OPEN_EVENTS):
                depth += 1
                if depth > MAX_DEPTH:
                    mark = event.start_mark
                    raise YamlError(
                        f"document is nested more than {MAX_DEPTH} levels deep",
                        mark.line + 1 if mark else None,
                        mark.column + 1 if mark else None,
                        hint="Templates are shallow mappings; flatten the structure.",
                    )
            elif isinstance(event, _CLOSE_EVENTS):
                depth -= 1
    finally:
        loader.dispose()


def _check_graph(root: Node) -> list[tuple[Path, int, int]]:
    """Reject bombs and deep nesting; collect duplicate mapping keys."""
    sizes: dict[int, int] = {}
    duplicates: list[tuple[Path, int, int]] = []

    def walk(node: Node, depth: int, path: Path, on_stack: set[int]) -> int:
        if depth > MAX_DEPTH:
            raise YamlError(
                f"document is nested more than {MAX_DEPTH} levels deep",
                node.start_mark.line + 1,
                node.start_mark.column + 1,
                hint="Templates are shallow mappings; flatten the structure.",
            )
        key = id(node)
        if key in on_stack:
            raise YamlError(
                "recursive alias (an anchor that contains itself)",
                node.start_mark.line + 1,
                node.start_mark.column + 1,
                hint="Remove the self-referencing alias.",
            )
        if key in sizes:
            return sizes[key]
        total = 1
        on_stack.add(key)
        if isinstance(node, SequenceNode):
            for i, item in enumerate(node.value):
                total += walk(item, depth + 1, (*path, i), on_stack)
                if total > MAX_NODES:
                    break
        elif isinstance(node, MappingNode):
            seen: set[str] = set()
            for k, v in node.value:
                name = k.value if isinstance(k, ScalarNode) else None
                if name is not None:
                    if name in seen:
                        duplicates.append(((*path, name), k.start_mark.line + 1, k.start_mark.column + 1))
                    seen.add(name)
                total += walk(k, depth + 1, path, on_stack)
                total += walk(v, depth + 1, (*path, name if name is not None else "?"), on_stack)
                if total > MAX_NODES:
                    break
        on_stack.discard(key)
        if total > MAX_NODES:
            raise YamlError(
                f"document expands to more than {MAX_NODES:,} nodes (alias bomb or absurdly large input)",
                node.start_mark.line + 1,
                node.start_mark.column + 1,
                hint="Avoid aliases that multiply content; a template needs a few hundred nodes.",
            )
        sizes[key] = total
        return total

    walk(root, 0, (), set())
    return duplicates


def parse_yaml(data: str | bytes, max_bytes: int = MAX_BYTES) -> ParsedYaml:
    """Parse one YAML document safely, or raise :class:`YamlError` with a position."""
    size = len(data.encode("utf-8", "surrogatepass")) if isinstance(data, str) else len(data)
    if size > max_bytes:
        raise YamlError(
            f"input is {size:,} bytes, over the {max_bytes:,}-byte limit",
            hint="A template is a few KiB; send only the template text.",
        )
    text = _decode(data)
    if "\x00" in text:
        pos = text.index("\x00")
        line = text.count("\n", 0, pos) + 1
        raise YamlError("input contains NUL bytes (binary data, not YAML text)", line, pos - text.rfind("\n", 0, pos))
    loader_cls = _CLoader or yaml.SafeLoader
    loader = loader_cls(text)
    try:
        try:
            _check_nesting(text, loader_cls)
            root = loader.get_single_node()
        except RecursionError:
            raise YamlError(
                f"document is nested more than {MAX_DEPTH} levels deep", hint="Flatten the structure."
            ) from None
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            problem = exc.problem or exc.context or "invalid YAML"
            if exc.context and exc.problem:
                problem = f"{exc.problem} ({exc.context})"
            raise YamlError(
                f"YAML syntax error: {problem}",
                mark.line + 1 if mark else None,
                mark.column + 1 if mark else None,
                hint="Check indentation and quoting near that position.",
            ) from None
        except yaml.YAMLError as exc:
            raise YamlError(f"YAML error: {exc}") from None
        if root is None:
            return ParsedYaml(None, None)
        duplicates = _check_graph(root)
        try:
            data_obj = loader.construct_document(root)
        except yaml.constructor.ConstructorError as exc:
            mark = exc.problem_mark
            raise YamlError(
                f"YAML error: {exc.problem}",
                mark.line + 1 if mark else None,
                mark.column + 1 if mark else None,
            ) from None
        except (RecursionError, TypeError, ValueError) as exc:
            raise YamlError(f"YAML could not be loaded: {exc.__class__.__name__}: {exc}") from None
        return ParsedYaml(data_obj, root, duplicates)
    finally:
        loader.dispose()


def load_mapping(data: str | bytes, max_bytes: int = MAX_BYTES) -> ParsedYaml:
    """Like :func:`parse_yaml` but the document must be a mapping (a template)."""
    parsed = parse_yaml(data, max_bytes=max_bytes)
    if parsed.data is None:
        raise YamlError("the document is empty", 1, 1, hint="Send a template: a mapping with image, target, ...")
    if not isinstance(parsed.data, dict):
        line, col = parsed.position(())
        kind = type(parsed.data).__name__
        raise YamlError(
            f"the document is a {kind}, not a mapping",
            line,
            col,
            hint="A template is a YAML mapping with top-level keys such as image, target, disk, systemConfig.",
        )
    return parsed

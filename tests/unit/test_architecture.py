"""The engine's shape, checked: rooms import only rooms below them, nothing below the transport imports
``mcp``, and the import graph has no cycle. See README, Architecture."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

SERVER = Path(__file__).resolve().parents[2] / "server"

# Lowest first: a room may import itself and rooms before it. engine/ is the composition root.
LAYERS = ["core", "knowledge", "llm", "storage", "validation", "composer", "packages", "library", "agent",
          "engine", "transport"]
# Only the MCP-facing layer speaks the protocol; tools/ and resources/ are MCP surface outside server/.
MCP_LAYERS = {"transport"}


def _modules() -> dict[str, Path]:
    out = {}
    for path in SERVER.rglob("*.py"):
        parts = path.relative_to(SERVER).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> tuple[set[str], set[str]]:
    """(server modules imported, third-party top-level names imported), lazy imports included."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    inner, outer = set(), set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            outer.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                outer.add((node.module or "").split(".")[0])
                continue
            base = package[: len(package) - (node.level - 1)]
            if node.level - 1 > len(package):  # reaches above server/ (tools, resources)
                outer.add("..")
                continue
            target = base + (node.module.split(".") if node.module else [])
            for alias in node.names:
                full = ".".join([*target, alias.name])
                inner.add(full if full in modules else ".".join(target))
    inner.discard("")
    return inner, outer


def _room(module: str) -> str:
    return module.split(".")[0]


def _graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    modules = _modules()
    inner, outer = {}, {}
    for name, path in modules.items():
        inner[name], outer[name] = _imports(name, path, modules)
    return inner, outer


def test_every_server_module_lives_in_a_known_room():
    strays = sorted(m for m in _modules() if m and _room(m) not in LAYERS)
    assert not strays, f"modules outside the rooms {LAYERS}: {strays}"


def test_rooms_import_only_rooms_below_them():
    inner, _ = _graph()
    wrong = []
    for module, targets in inner.items():
        if not module:
            continue
        mine = LAYERS.index(_room(module))
        for target in targets:
            if target and LAYERS.index(_room(target)) > mine:
                wrong.append(f"{module} -> {target}")
    assert not wrong, "a room imports a room above it:\n" + "\n".join(sorted(wrong))


def test_no_engine_module_imports_mcp_or_the_mcp_surface():
    _, outer = _graph()
    wrong = sorted(m for m, names in outer.items() if m and _room(m) not in MCP_LAYERS and ({"mcp", ".."} & names))
    assert not wrong, f"engine modules importing mcp, tools/ or resources/: {wrong}"


def test_the_import_graph_has_no_cycle():
    inner, _ = _graph()
    edges = defaultdict(set)
    for module, targets in inner.items():
        for target in targets:
            # importing a package runs its __init__ only; a room's __init__ imports nothing of its own
            if target != module and target in inner:
                edges[module].add(target)
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for module in sorted(inner):
        if module not in state and (cycle := visit(module)):
            raise AssertionError("import cycle: " + " -> ".join(cycle))


def test_every_room_says_what_it_owns_and_may_import():
    for room in LAYERS:
        init = SERVER / room / "__init__.py"
        if not init.exists():
            continue
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert "Owns" in doc and "May import" in doc, f"{init}: docstring must say what it owns and may import"


MAX_MODULE_LINES = 600


def test_no_runtime_module_outgrows_one_concern():
    big = {str(p.relative_to(SERVER.parent)): n for p in [*SERVER.rglob("*.py"), *(SERVER.parent / "tools").rglob("*.py")]
           if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not big, f"modules over {MAX_MODULE_LINES} lines (split them by concern): {big}"


def test_every_package_is_listed_for_the_wheel():
    """pyproject lists packages by hand (the checkout root is the package): a new room must be added there."""
    import tomllib

    root = SERVER.parent
    listed = set(tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    on_disk = {"image_composer_mcp"} | {
        ".".join(("image_composer_mcp", *init.parent.relative_to(root).parts))
        for top in ("server", "tools", "resources") for init in (root / top).rglob("__init__.py")}
    assert on_disk == listed, f"missing from pyproject: {sorted(on_disk - listed)}; stale: {sorted(listed - on_disk)}"

"""Each fact has one home: the knowledge layer (resources/*.yaml read by server/knowledge/).

A table of distributions, architectures, partition types or package names written in code is a second copy
that drifts (issue #19). This test reads the facts from the knowledge layer and fails when code outside it
holds a collection literal naming several of them, or any partition-type GUID.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import yaml
from image_composer_mcp.server.core.paths import resource_text
from image_composer_mcp.server.knowledge.loader import load_capabilities

ROOT = Path(__file__).resolve().parents[2]
SCANNED = [ROOT / "server", ROOT / "tools", ROOT / "resources"]
HOME = ROOT / "server" / "knowledge"
GUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
# Naming a few facts together is ordinary code (a default, an example); a table names many.
MAX_FACTS_PER_LITERAL = 3


def _facts() -> set[str]:
    caps = load_capabilities()
    words: set[str] = set()
    raw = yaml.safe_load(resource_text("capabilities.yaml"))
    for arch, spec in raw.get("architectures", {}).items():
        words |= {arch, *spec.get("aliases", [])}
    words |= set(raw.get("partition_types", {}))
    for fid, family in raw.get("families", {}).items():
        words |= {fid, *family.get("words", []), *family.get("dists", {})}
    words |= caps.known_packages() | caps.alias_names()
    # Words too common to mean a table on their own: they appear in ordinary code as values.
    return {w.lower() for w in words if isinstance(w, str) and len(w) > 2}


def _strings(node: ast.AST) -> set[str]:
    out: set[str] = set()
    items: list[ast.AST] = []
    if isinstance(node, ast.Dict):
        items = [*(k for k in node.keys if k is not None), *node.values]
    elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = list(node.elts)
    for item in items:
        if isinstance(item, ast.Constant) and isinstance(item.value, str):
            out.add(item.value.lower())
        elif isinstance(item, (ast.List, ast.Tuple, ast.Set)):
            out |= _strings(item)
    return out


def _offenders() -> list[str]:
    facts = _facts()
    found = []
    for base in SCANNED:
        for path in sorted(base.rglob("*.py")):
            if HOME in path.parents:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and GUID.search(node.value):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: a partition-type GUID")
                if isinstance(node, (ast.Dict, ast.List, ast.Tuple, ast.Set)):
                    named = _strings(node) & facts
                    if len(named) > MAX_FACTS_PER_LITERAL:
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {sorted(named)[:8]}")
    return sorted(set(found))


def test_the_knowledge_layer_has_facts_to_guard():
    assert len(_facts()) > 100


def test_no_fact_table_outside_the_knowledge_layer():
    offenders = _offenders()
    assert not offenders, ("fact tables outside server/knowledge/ (move them to resources/*.yaml and read them "
                           "through server/knowledge/):\n" + "\n".join(offenders))

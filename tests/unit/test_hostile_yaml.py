"""Hostile YAML: every nesting construct, at 10x, 100x and 1000x the depth limit, parsed in a subprocess.

libyaml's composer recurses in C once per nesting level, so a deep document used to kill the process with
SIGSEGV (which no try/except catches). Each case runs in its own interpreter: a crash shows up as a failed
test with the signal, not as a dead test runner.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from image_composer_mcp.server.core.yamlsafe import MAX_DEPTH

ROOT = Path(__file__).resolve().parents[2]

# Each builder makes a document nested n levels deep, with the nesting written in a different way.
CONSTRUCTS = {
    "explicit-keys": "lambda n: '? ' * n + 'x'",
    "flow-sequences": "lambda n: '[' * n + ']' * n",
    "flow-mappings": "lambda n: '{a: ' * n + '1' + '}' * n",
    "unclosed-flow": "lambda n: '[' * n",
    "dashes-one-line": "lambda n: '- ' * n + 'x'",
    "block-mappings": "lambda n: ''.join(' ' * i + 'k:\\n' for i in range(n)) + ' ' * n + 'v\\n'",
    "block-sequences": "lambda n: ''.join(' ' * i + '-\\n' for i in range(n)) + ' ' * n + 'x\\n'",
    "anchored-flow": "lambda n: ''.join(f'&a{i} [' for i in range(n))",
    "tagged-flow": "lambda n: '!!seq [' * n",
    "mixed": "lambda n: '- ? ' * (n // 4) + '[{a: ' * (n // 4) + 'x' + '}]' * (n // 4)",
    "key-then-flow": "lambda n: 'k: ' + '[' * (n // 2) + '{a: ' * (n // 2)",
}

SCRIPT = """
import json, sys
from image_composer_mcp.server.core.yamlsafe import YamlError, parse_yaml
build = eval(sys.argv[1])
text = build(int(sys.argv[2]))
try:
    parse_yaml(text, max_bytes=64 * 1024 * 1024)
    print(json.dumps({"outcome": "parsed"}))
except YamlError as exc:
    print(json.dumps({"outcome": "refused", "message": str(exc)}))
"""


def _run(construct: str, depth: int) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", SCRIPT, CONSTRUCTS[construct], str(depth)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("factor", [10, 100, 1000])
@pytest.mark.parametrize("construct", sorted(CONSTRUCTS))
def test_deep_nesting_is_refused_not_a_crash(construct: str, factor: int) -> None:
    depth = MAX_DEPTH * factor
    if construct.startswith("block-") and factor == 1000:
        depth = MAX_DEPTH * 40  # indentation grows quadratically: 64,000 levels would be 2 GB of spaces
    proc = _run(construct, depth)
    assert proc.returncode == 0, f"{construct} x{factor}: exit {proc.returncode} (negative = signal)\n{proc.stderr[-2000:]}"
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["outcome"] == "refused", result
    assert f"nested more than {MAX_DEPTH} levels" in result["message"], result


@pytest.mark.parametrize("construct", sorted(CONSTRUCTS))
def test_nesting_under_the_limit_is_not_refused_for_depth(construct: str) -> None:
    """The bound is exact: the same constructs half as deep as the limit are not refused for nesting (some
    are still invalid YAML, such as unclosed brackets or mappings used as keys, and say so)."""
    from image_composer_mcp.server.core.yamlsafe import YamlError, parse_yaml

    text = eval(CONSTRUCTS[construct])(MAX_DEPTH // 2)  # noqa: S307 - our own constant table
    try:
        parse_yaml(text)
    except YamlError as exc:
        assert "nested more than" not in str(exc)


def test_validate_tool_survives_the_reported_payload() -> None:
    """The issue's reproducer through the real tool path (validation), in a subprocess."""
    script = ("from image_composer_mcp.server.validation.validator import validate_text\n"
              "r = validate_text('? ' * 30000 + 'x')\nprint(r.valid, r.errors[0].message)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("False") and "nested more than" in proc.stdout

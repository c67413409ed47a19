"""create_app skips the SDK's logging set-up only where it would do nothing (the root logger has handlers)."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import logging, sys
from image_composer_mcp.server.core.config import load_settings
from image_composer_mcp.server.core.logs import setup_logging
from image_composer_mcp.server.transport.app import create_app
if sys.argv[1] == "configured":
    setup_logging("WARNING", "text")
before = list(logging.getLogger().handlers)
create_app(load_settings(None))
after = logging.getLogger().handlers
print("rich" in sys.modules, after == before, len(after))
"""


def _run(mode: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, timeout=120,
                         check=True)
    return out.stdout.split()


def test_with_logging_configured_the_sdk_neither_imports_rich_nor_touches_the_handlers():
    rich, unchanged, count = _run("configured")
    assert rich == "False" and unchanged == "True" and int(count) >= 1


def test_without_logging_configured_the_sdk_sets_up_its_own():
    _rich, unchanged, count = _run("bare")
    assert unchanged == "False" and int(count) >= 1

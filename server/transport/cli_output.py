"""The command line's conventions: where an answer goes (JSON, rich on a terminal, plain text when piped), its
exit codes, and loading the engine with a progress bar.

Exit codes: 0 success, 1 the answer is "no" (invalid template, missing packages), 2 usage or configuration
error, 3 could not tell (a package repository was unreachable).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..engine import Engine

PROG = "mcp-server-image-composer"
EXIT_OK, EXIT_NO, EXIT_USAGE, EXIT_UNKNOWN = 0, 1, 2, 3


class Output:
    """Where a command's answer goes: JSON, rich (a terminal) or plain text."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.json = bool(getattr(args, "json", False))
        self.rich = not self.json and sys.stdout.isatty()
        self._console: Any = None

    @property
    def console(self) -> Any:
        if self._console is None:
            from rich.console import Console

            self._console = Console(highlight=False)
        return self._console

    def data(self, obj: Any) -> None:
        print(json.dumps(obj, indent=2, default=str))

    def text(self, line: str = "") -> None:
        print(line)


def error(message: str) -> None:
    print(f"{PROG}: {message}", file=sys.stderr)


def progress_wanted(out: Output) -> bool:
    return sys.stderr.isatty() and not out.json


def load_engine(engine: Engine, out: Output) -> None:
    """Load the engine (index sync included), with a progress bar on a terminal."""
    if not progress_wanted(out):
        engine.ready()
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("loading the template index", total=None)

        def on_progress(done: int, total: int, name: str) -> None:
            progress.update(task, completed=done, total=total, description=f"embedding {name}")

        engine.start(progress=on_progress)
        engine.ready()


def flatten(obj: Any, prefix: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(obj, dict):
        if not obj and prefix:
            yield prefix, "-"
        for key, value in obj.items():
            yield from flatten(value, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(obj, list) and obj and isinstance(obj[0], dict):
        for i, value in enumerate(obj):
            yield from flatten(value, f"{prefix}[{i}]")
    elif isinstance(obj, list):
        yield prefix, ", ".join(map(str, obj)) if obj else "-"
    else:
        yield prefix, "-" if obj is None else str(obj)


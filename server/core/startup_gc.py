"""The cyclic garbage collector held off while a server starts.

Why: starting allocates hundreds of thousands of long-lived objects (the MCP SDK's pydantic models, the settings,
the bundled knowledge, the catalog) and almost no garbage, yet the collector ran ~190 young, ~17 middle and a full
collection over them during the SDK's import and the app's assembly alone (~0.13 s of a ~1.6 s start, measured on
the project's 2-core VM). Held off until the engine is ready, then the survivors are frozen into the permanent
generation (``gc.freeze``), so later collections never walk them again.
"""

from __future__ import annotations

import gc
import threading

_lock = threading.Lock()
_held = False


LONGEST_HOLD = 60.0  # seconds: a server whose engine never starts (no client yet) collects again after this


def hold() -> None:
    """Hold the collector off until :func:`release`, at most :data:`LONGEST_HOLD` seconds (only if it runs now;
    idempotent)."""
    global _held
    with _lock:
        if not _held and gc.isenabled():
            gc.disable()
            _held = True
            timer = threading.Timer(LONGEST_HOLD, release)
            timer.daemon = True
            timer.start()


def release() -> None:
    """Freeze what start-up made and let the collector run again, if :func:`hold` held it off."""
    global _held
    with _lock:
        if _held:
            gc.freeze()
            gc.enable()
            _held = False


def held() -> bool:
    return _held


__all__ = ["held", "hold", "release"]

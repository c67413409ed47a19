"""The collector held off while a server starts (server/core/startup_gc.py)."""

from __future__ import annotations

import gc

from image_composer_mcp.server.core import startup_gc


def test_held_until_released_then_startup_objects_are_frozen():
    assert gc.isenabled() and not startup_gc.held()
    frozen = gc.get_freeze_count()
    try:
        startup_gc.hold()
        startup_gc.hold()  # idempotent
        assert not gc.isenabled() and startup_gc.held()
        made = [[i] for i in range(1000)]  # long-lived start-up objects
        startup_gc.release()
        assert gc.isenabled() and not startup_gc.held()
        assert gc.get_freeze_count() >= frozen + len(made)
        startup_gc.release()  # a second release changes nothing
        assert gc.isenabled()
    finally:
        gc.unfreeze()
        gc.enable()


def test_a_collector_someone_else_disabled_is_left_alone():
    gc.disable()
    try:
        startup_gc.hold()
        assert not startup_gc.held()
        startup_gc.release()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_hold_ends_by_itself_when_no_engine_starts(monkeypatch):
    monkeypatch.setattr(startup_gc, "LONGEST_HOLD", 0.05)
    try:
        startup_gc.hold()
        import time

        deadline = time.monotonic() + 5
        while startup_gc.held() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert gc.isenabled() and not startup_gc.held()
    finally:
        gc.unfreeze()
        gc.enable()

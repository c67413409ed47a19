"""Long-lived objects frozen out of the cyclic GC when several threads build them at once (long_lived.py)."""

from __future__ import annotations

import gc
import threading

from image_composer_mcp.server.library.long_lived import bulk_objects


def test_overlapping_builders_leave_nothing_unfrozen_and_the_gc_on():
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    built: list[dict[str, list[int]]] = []
    gc_off: list[bool] = []

    def first() -> None:
        with bulk_objects():
            first_in.set()
            second_in.wait(5)
        first_out.set()

    def second() -> None:
        first_in.wait(5)
        with bulk_objects():
            second_in.set()
            first_out.wait(5)  # the first builder is done: the GC must stay off until this one is
            gc_off.append(not gc.isenabled())
            built.append({"objects": [1, 2, 3]})

    gc.unfreeze()
    try:
        threads = [threading.Thread(target=first), threading.Thread(target=second)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert gc_off == [True] and built and gc.isenabled()
        assert id(built[0]) not in {id(o) for o in gc.get_objects()}  # frozen with the last builder
    finally:
        gc.unfreeze()

"""Reading a file through once in the background, so the page cache holds it before searches read it piecemeal.

Why: the search path reads two files in small pieces: the float32 rows the quantized vector leg re-scores
(~150 reads of 1.5 KB a search, quantized_mirror.py) and the word-embedding table the query encoder looks up
(~20 rows of a 47 MB memory map a query, embed_onnx.word_table). With the page cache cold (after a reboot, or
on a machine that reclaims it), each piece is a trip to the disk. Measured at 100,000 templates after the page
cache was dropped: search p50 20-24 ms and p95 35-41 ms over the first 200 searches, against 12.5 / 17 ms
with the files cached; reading both through takes ~0.15 s. The reads go to a reused buffer, so the process's
memory does not grow. ``posix_fadvise(WILLNEED)`` left most of the rows' file uncached here (9 of 146 MB
after 3 s), hence plain reads.

What this does not do: keep the pages cached. A machine that reclaims idle pages takes them back: this VM runs
DAMON's pageout scheme (/sys/kernel/mm/damon: pages idle for 60 s are paged out), so rows no search touched
for a minute are read from the disk again. Holding the rows in the process instead would put ~150 MB of
resident memory at 100,000 templates over the baseline's peak.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading

log = logging.getLogger(__name__)

CHUNK = 1 << 20


def read_through(fd: int, offset: int = 0, length: int | None = None) -> threading.Thread:
    """Start reading ``length`` bytes (None: to the end) of the open file ``fd`` from ``offset`` on a daemon
    thread, returned. It reads through a duplicate of ``fd``, so the caller may close its own at any time."""
    thread = threading.Thread(target=_read, args=(os.dup(fd), offset, length), name="page-cache-warm", daemon=True)
    thread.start()
    return thread


def _read(fd: int, offset: int, length: int | None) -> None:
    # The lowest CPU priority: the first searches after a start run beside this thread (Linux: per thread).
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    buffer = bytearray(CHUNK)
    end = None if length is None else offset + length
    try:
        while end is None or offset < end:
            view = memoryview(buffer) if end is None else memoryview(buffer)[:min(CHUNK, end - offset)]
            read = os.preadv(fd, [view], offset)
            if not read:
                break
            offset += read
    except OSError as exc:  # only later reads are slower
        log.debug("reading a file through for the page cache stopped at byte %d: %s", offset, exc)
    finally:
        os.close(fd)

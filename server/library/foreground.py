"""Searches in flight, so that background upkeep (the periodic template scan) makes way for them.

Why: a search's embedding keeps both cores of a small machine busy, and a scan of 100,000 template files
is ~1 s of CPU. Run beside the searches, it slowed each one it overlapped by ~40 % (measured at 100,000
templates: p50 9.1 -> 13.0 ms, p95 12.9 -> 18.2 ms, for the ~80 searches of its second). The scan now works
in small chunks and, before each, waits until no search has run for ``QUIET`` seconds: the gaps between
back-to-back searches (a client's round trip over stdio) are not idle time, and a scan resumed in each of
them measured as slow over stdio as one that never paused.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Concatenate, ParamSpec, Protocol, TypeVar

# The longest a chunk of upkeep waits for searches to end: a server searched without pause still notices
# edits on disk, one chunk at least every PATIENCE seconds.
PATIENCE = 0.05
QUIET = 0.02  # how long after a search the server counts as idle

P = ParamSpec("P")
R = TypeVar("R")


class Foreground:
    """Counts the searches in flight; upkeep calls :meth:`make_way` between its chunks."""

    def __init__(self, patience: float = PATIENCE, quiet: float = QUIET) -> None:
        self.patience = patience
        self.quiet = quiet
        self._idle = threading.Condition()
        self._serving = 0
        self._last_end = -float("inf")  # time.monotonic() when the last search ended

    @contextmanager
    def serving(self) -> Iterator[None]:
        with self._idle:
            self._serving += 1
        try:
            yield
        finally:
            with self._idle:
                self._serving -= 1
                self._last_end = time.monotonic()
                if not self._serving:
                    self._idle.notify_all()

    def make_way(self) -> float:
        """Wait until no search has run for ``quiet`` seconds, at most ``patience`` seconds; the seconds waited."""
        started = time.monotonic()
        if not self._serving and started - self._last_end >= self.quiet:
            return 0.0
        deadline = started + self.patience
        with self._idle:
            while (now := time.monotonic()) < deadline:
                if self._serving:
                    self._idle.wait(deadline - now)
                elif (calm := now - self._last_end) < self.quiet:
                    self._idle.wait(min(self.quiet - calm, deadline - now))
                else:
                    break
        return time.monotonic() - started


class _Served(Protocol):
    @property
    def foreground(self) -> Foreground: ...


class _HasIndex(Protocol):
    @property
    def index(self) -> _Served: ...


S = TypeVar("S", bound=_HasIndex)


def serves(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """A method that answers a search: marked in flight on its object's index for its whole run."""

    @functools.wraps(method)
    def served(self: S, *args: P.args, **kwargs: P.kwargs) -> R:
        with self.index.foreground.serving():
            return method(self, *args, **kwargs)

    return served

"""The query-vector cache: repeated searches for the same text reuse its embedding."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

QUERY_CACHE_SIZE = 1024


class QueryCache:
    """Thread-safe LRU of query vectors; arrays are read-only so callers cannot corrupt the cache."""

    def __init__(self, maxsize: int = QUERY_CACHE_SIZE) -> None:
        self._maxsize = maxsize
        self._items: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get_or_compute(self, text: str, compute: Callable[[str], np.ndarray]) -> np.ndarray:
        with self._lock:
            vec = self._items.get(text)
            if vec is not None:
                self._items.move_to_end(text)
                self.hits += 1
                return vec
            self.misses += 1
        # Computed outside the lock: a slow remote call must not block cache hits of other threads.
        vec = np.array(compute(text), dtype=np.float32, copy=True)
        vec.setflags(write=False)
        with self._lock:
            self._items[text] = vec
            self._items.move_to_end(text)
            while len(self._items) > self._maxsize:
                self._items.popitem(last=False)
        return vec

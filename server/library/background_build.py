"""What the in-memory legs' keepers (quantized_mirror, text_leg) share: one build thread at a time, and a
failed build not retried for the same catalog."""

from __future__ import annotations

import logging
import threading

log = logging.getLogger(__name__)


class BackgroundBuild:
    """A keeper's build thread (``_builder``, set by the keeper): whether it runs, and waiting for it."""

    def __init__(self) -> None:
        self._builder: threading.Thread | None = None
        self._lock = threading.Lock()
        self._failed_for: object | None = None  # the catalog a build failed for: not retried until it changes
        self._closed = False

    def busy(self) -> bool:
        builder = self._builder
        return builder is not None and builder.is_alive()

    def join(self, timeout: float) -> None:
        builder = self._builder
        if builder is not None:
            builder.join(timeout)

    def _give_up(self, catalog: object, leg: str, exc: Exception) -> None:
        """A build failed: LanceDB's index keeps answering ``leg``, and this catalog is not tried again."""
        log.warning("%s stays in LanceDB's index: %s", leg, exc)
        with self._lock:
            self._failed_for = catalog

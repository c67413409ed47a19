"""What the in-memory legs' keepers (quantized_mirror, text_leg) share: one build thread at a time."""

from __future__ import annotations

import threading


class BackgroundBuild:
    """A keeper's build thread (``_builder``, set by the keeper): whether it runs, and waiting for it."""

    _builder: threading.Thread | None = None

    def busy(self) -> bool:
        builder = self._builder
        return builder is not None and builder.is_alive()

    def join(self, timeout: float) -> None:
        builder = self._builder
        if builder is not None:
            builder.join(timeout)

"""`make bench`: quality and speed of our search against the upstream `ai` algorithm, at 48 to 100,000 templates.

Modules: ``baseline`` (the upstream algorithm, ported), ``synthetic`` (realistic template variants for large
corpora), ``corpus`` (building and caching the benchmark corpora and their vectors), ``measure`` (timers,
percentiles, RSS), ``stdio`` (latency and cold start through the real server process), ``report`` (JSON,
Markdown, plots) and ``run`` (the orchestration).
"""

from __future__ import annotations

import os
from pathlib import Path

# The checkout root (README.md, tests/data, image-templates/): for developer tools, never for bundled data.
REPO_ROOT = Path(__file__).resolve().parents[1]


def reference_checkout() -> Path:
    """The upstream os-image-composer checkout that parity tests and benchmarks compare with: any clone
    named by OIC_AI_REFERENCE_DIR, else ../shared/reference/os-image-composer beside this checkout."""
    explicit = os.environ.get("OIC_AI_REFERENCE_DIR")
    if explicit:
        return Path(explicit).expanduser().resolve()
    return Path(__file__).resolve().parents[2] / "shared" / "reference" / "os-image-composer"

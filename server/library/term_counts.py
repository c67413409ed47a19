"""Every template's terms counted (the document frequencies behind IDF and the spelling index), kept beside a
local index's mirror between starts.

Why: counting them is one pass over every row's terms, on the first search after every start: measured ~90 ms
at 10,000 templates and ~1.3 s at 100,000. The counts depend only on the catalog's records and on how terms are
drawn from them (the index's ``model_key`` carries ``TEXT_VERSION``), so a file keyed by both answers a later
start over the same templates. Any difference, or a file that cannot be read, and they are counted again.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from . import npz_file

if TYPE_CHECKING:
    from .templates import TemplateRecord

log = logging.getLogger(__name__)

FILE = "term-counts.npz"
FORMAT = 1
# Below this many templates counting takes under ~20 ms, about what keying and reading the file cost.
MIN_ROWS = 2_000
_SEPARATOR = "\0"  # terms are words: never inside one (checked before saving)


def catalog_key(catalog: dict[str, TemplateRecord], model_key: str) -> str:
    """What the counts depend on: every record's uid and content, in catalog order, and how terms are drawn.
    The same templates in another order only miss the file."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"{FORMAT}\n{model_key}\n".encode())
    # Joined by C loops, not a Python one per record (100,000 records: ~10 against ~60 ms).
    digest.update("\n".join(catalog).encode())
    digest.update(b"\0")
    digest.update("\n".join(map(attrgetter("content_hash"), catalog.values())).encode())
    return digest.hexdigest()


def load(path: Path, key: str) -> Counter[str] | None:
    """The counts stored at ``path`` under ``key``, in the order they were counted, or None."""
    kept = npz_file.read_kept(path, "template term counts")
    if kept is None:
        return None
    meta, arrays = kept
    words, counts = arrays.get("terms"), arrays.get("counts")
    if meta != {"key": key} or words is None or counts is None or words.dtype != np.uint8 \
            or counts.dtype != np.int64 or counts.ndim != 1:
        return None
    try:
        terms = bytes(words).decode().split(_SEPARATOR) if len(counts) else []
    except UnicodeDecodeError:
        return None
    if len(terms) != len(counts):
        return None
    return Counter(dict(zip(terms, counts.tolist(), strict=True)))


def save(path: Path, key: str, counts: Counter[str]) -> None:
    """Keep the counts for the next start; a failure only costs that start's first search the count."""
    terms = list(counts)
    if any(_SEPARATOR in term for term in terms):
        return
    try:
        npz_file.write(path, {"key": key},
                       {"terms": np.frombuffer(_SEPARATOR.join(terms).encode(), dtype=np.uint8),
                        "counts": np.fromiter(counts.values(), dtype=np.int64, count=len(terms))},
                       prefix=".term-counts-")
    except OSError as exc:
        log.info("template term counts not kept: %s", exc)


def remove(directory: Path) -> None:
    """``cache clear``: the counts go with the table."""
    (directory / FILE).unlink(missing_ok=True)

"""Handing the C heap's free memory back to the system between the steps of a large in-memory build."""

from __future__ import annotations


def trim() -> None:
    """``malloc_trim`` (glibc only; elsewhere nothing).

    Why: glibc keeps large freed blocks in its free lists (its mmap threshold grows as such blocks are freed),
    so a build's temporaries stay resident after they are gone. At 100,000 rows the table read left ~70 MB
    there before the 8-bit codes were packed (returned first: +158 -> +91 MB for that build), and the
    full-text postings' batches ~200 MB (returned after each batch: a peak of +263 -> +168 MB)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass

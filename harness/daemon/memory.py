"""Handing the C heap's free memory back to the system after each nightly run (issue 27).

The daemon's worker threads (the nightly job's, its event loop's executor, the API's thread
pool) each allocate from one of glibc's malloc arenas (up to eight a core). What a nightly
run frees there stays with the process: glibc gives memory back only from the top of an
arena, and a few long-lived blocks left above the freed ones (a cached object, a pooled
connection's buffers) pin the rest. Measured in the soaked daemon (``bench/soak_daemon.py``,
glibc ``mallinfo2``): the memory malloc held went from 46 to 67 MiB over cycles ~120–360 (and
part of the way back, now and then) while what was in use stayed at 32–34 MiB; the difference
was free memory, kept, and counted in the RSS.

:func:`release_free_memory` asks glibc to return it (``malloc_trim(0)``: every arena, the
free pages inside it as well as its top, with ``madvise``); the daemon calls it when a nightly
job ends. Nothing in use moves. Elsewhere than glibc (musl, macOS) there is no such call and
it does nothing. It costs a walk of the heap's free chunks: milliseconds on a daemon's heap
(~110–340 ms on a deliberately fragmented 400 MB one), once a night. In two soaks of 400 cycles
side by side with the same code without it, the RSS slope after warm-up was 5 and 22 KiB a
cycle against 37 and 45, and the last RSS 145 and 149 MiB against 150 and 154.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
from collections.abc import Callable

__all__ = ["release_free_memory"]

log = logging.getLogger(__name__)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where the C library has none."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        trim = libc.malloc_trim
    except (OSError, AttributeError, TypeError):  # no C library found, or not glibc
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim  # type: ignore[no-any-return]


def release_free_memory() -> bool:
    """Return the C heap's free memory to the system (glibc ``malloc_trim(0)``); True when
    some was returned, False when none was or the C library cannot (never raises)."""
    trim = _malloc_trim()
    if trim is None:
        return False
    try:
        return bool(trim(0))
    except Exception:  # a foreign C library's symbol of that name: not worth a failed run
        log.debug("malloc_trim failed", exc_info=True)
        return False

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
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

__all__ = ["ARENAS", "MemoryCollector", "MemoryUse", "limit_malloc_arenas", "release_free_memory"]

log = logging.getLogger(__name__)


@functools.cache
def _libc(name: str, restype: Any, *argtypes: Any) -> Any:
    """The C library's function ``name`` with its result and argument types, or None where
    the C library has none (none found, or not glibc: musl, macOS)."""
    try:
        function = getattr(ctypes.CDLL(ctypes.util.find_library("c")), name)
    except (OSError, AttributeError, TypeError):
        return None
    function.argtypes = list(argtypes)
    function.restype = restype
    return function


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where the C library has none."""
    return _libc("malloc_trim", ctypes.c_int, ctypes.c_size_t)  # type: ignore[no-any-return]


_M_ARENA_MAX = -8
"""glibc's ``M_ARENA_MAX`` parameter of ``mallopt``."""

ARENAS = 2
"""The malloc arenas the daemon allows itself (glibc's default: eight a core).

Measured with ``bench/soak_daemon.py --cycles 400 --rate 20`` (nightly runs with proxy calls and
API reads beside them), side by side on 2 cores, its own ``/metrics`` sampled at each cycle:
with glibc's default the C heap's memory in use stayed at 33–35 MiB while the *free* memory it
kept grew from 12 to 40 MiB (+258 KiB a cycle over cycles 240–400; ``malloc_trim`` after each
night could not give it back: free chunks scattered over many threads' arenas, pages pinned by
a few live blocks), and the RSS with it (+321 KiB a cycle); with ``MALLOC_ARENA_MAX=2`` the
free memory stayed at ~7 MiB and the RSS grew +75 KiB a cycle over the same cycles (end 144
against 173 MiB). The daemon's threads mostly wait on sockets and share the GIL, and Python's
own allocator serves its small objects, so two arenas cost them no measurable contention."""


def limit_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas at ``arenas`` (``mallopt(M_ARENA_MAX)``) unless the
    environment sets ``MALLOC_ARENA_MAX`` itself (the operator's choice stands). Call it before
    the process starts threads: arenas made already stay. True when the cap was set; False
    where the C library has no ``mallopt`` (musl, macOS) or the environment decides."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    mallopt = _libc("mallopt", ctypes.c_int, ctypes.c_int, ctypes.c_int)
    return mallopt is not None and bool(mallopt(_M_ARENA_MAX, arenas))


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


class _MallInfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2`` (2.33 and later): sizes in bytes."""

    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
            "fordblks", "keepcost",
        )
    ]


def _mallinfo2() -> Callable[[], _MallInfo2] | None:
    """glibc's ``mallinfo2``, or None where the C library has none (older glibc, musl, macOS)."""
    return _libc("mallinfo2", _MallInfo2)  # type: ignore[no-any-return]


@functools.cache
def _sqlite_memory_used() -> Callable[[], int] | None:
    """SQLite's ``sqlite3_memory_used`` from the library Python's ``sqlite3`` module uses, or
    None where it cannot be reached (a build that hides the symbol)."""
    try:
        import _sqlite3

        used = ctypes.CDLL(_sqlite3.__file__).sqlite3_memory_used
    except (ImportError, OSError, AttributeError, TypeError):
        return None
    used.argtypes = []
    used.restype = ctypes.c_int64
    return used  # type: ignore[no-any-return]


@dataclass(frozen=True)
class MemoryUse:
    """Where the daemon's memory is, as far as the process can tell (None: not measurable
    here): SQLite's own allocations, the C heap's bytes in use, free but kept, and mapped
    directly, and the Python objects' blocks."""

    sqlite_bytes: int | None
    heap_in_use: int | None
    heap_free: int | None
    heap_mmapped: int | None
    python_blocks: int

    @classmethod
    def now(cls) -> MemoryUse:
        sqlite = _sqlite_memory_used()
        info = _mallinfo2()
        m = info() if info is not None else None
        return cls(
            sqlite_bytes=None if sqlite is None else int(sqlite()),
            heap_in_use=None if m is None else int(m.uordblks),
            heap_free=None if m is None else int(m.fordblks),
            heap_mmapped=None if m is None else int(m.hblkhd),
            python_blocks=sys.getallocatedblocks(),
        )


class MemoryCollector(Collector):
    """``/metrics``: the process's memory (``process_*`` from prometheus_client's process
    collector) and where it is (:class:`MemoryUse`), so that an operator whose daemon grows
    can tell SQLite's page caches from the C heap's kept free memory from Python objects.
    A figure this platform cannot give is left out."""

    def collect(self) -> Iterator[Metric]:
        use = MemoryUse.now()
        if use.sqlite_bytes is not None:
            yield GaugeMetricFamily(
                "mindledger_sqlite_memory_bytes",
                "Memory SQLite holds in this process (its page caches included).",
                value=use.sqlite_bytes,
            )
        if use.heap_in_use is not None:
            heap = GaugeMetricFamily(
                "mindledger_c_heap_bytes",
                "The C heap (glibc mallinfo2): in use, free but kept by malloc, mapped directly.",
                labels=["state"],
            )
            heap.add_metric(["in_use"], float(use.heap_in_use))
            heap.add_metric(["free"], float(use.heap_free or 0))
            heap.add_metric(["mmapped"], float(use.heap_mmapped or 0))
            yield heap
        yield GaugeMetricFamily(
            "mindledger_python_allocated_blocks",
            "Memory blocks the Python interpreter has allocated (sys.getallocatedblocks).",
            value=use.python_blocks,
        )

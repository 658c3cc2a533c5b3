"""Hands memory freed by parsed trees back to the operating system when the process grows big.

A phase's lxml trees (and trafilatura's copy of each) are freed once its text is read, but
glibc keeps freed memory in its arenas, most of it in the worker threads' arenas, which it
seldom trims on its own: on the hostile-web suite the extractor stayed about 110 MiB above
what it held after its biggest phases, and the next phase's trees came on top of that.
``malloc_trim`` gives back the free pages of every arena, but costs about 1 ms per MiB given
back (and the pages are faulted in again when reused), so it runs only when the resident set
is above a bound: ordinary pages keep the extractor near 100-130 MiB, where the next batch
reuses the freed memory (trimming after each of their phases anyway cost about 1% more CPU),
and only big or dense pages take it past the bound. Without glibc
(musl, macOS) or ``/proc`` this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
from collections.abc import Callable
from pathlib import Path

from prometheus_client import Counter

log = logging.getLogger(__name__)

TRIMS = Counter("trawl_extractor_heap_trims_total",
                "Times the memory freed by a phase's trees was given back to the system (over the trim bound),"
                " in the service's own process (worker processes, TRAWL_EXTRACTOR_PROCESSES above 1, trim their own"
                " and are not counted).")

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_STATM = Path("/proc/self/statm")


def _load_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError, TypeError):
        log.info("no malloc_trim in the C library (%s): freed trees stay with the allocator", name)
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_TRIM = _load_trim()


def resident_bytes() -> int | None:
    """The process's resident set size now; None where ``/proc`` is not there."""
    try:
        return int(_STATM.read_text().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return None


def release_free_memory(above_bytes: int) -> bool:
    """Gives the allocator's free pages back to the system if the resident set is over ``above_bytes``.

    True if it trimmed. ``above_bytes`` 0 trims every time.
    """
    if _TRIM is None:
        return False
    resident = resident_bytes()
    if resident is None or resident <= above_bytes:
        return False
    _TRIM(0)
    TRIMS.inc()
    log.debug("heap trimmed at %.0f MiB resident (bound %.0f MiB)", resident / 2**20, above_bytes / 2**20)
    return True

"""Python's cyclic garbage collector: tuned for a long-running service, and held off while a batch is handled.

**The policy of every service** (:func:`tune_collector`, applied once the service has
started). What the process built to start (modules, protocol buffer descriptors, settings,
pools) lives as long as the process, yet every old-generation pass walks it again; it is
frozen out of the passes. The young generation is collected after
``TRAWL_GC_YOUNG_THRESHOLD`` more tracked objects (Python's default is 700): a service that
allocates without pause (the fetcher: requests, responses, messages, all freed by
reference counting) otherwise runs a young pass every few pages and promotes short-lived
objects into older generations, whose passes then walk a heap of robots.txt rules and
per-host state (a fifth of the fetcher's collector time went to 3-4 old passes of 50 ms
each per 11,500 pages, and collections cost it about 20 us per page in all).

**Paused per batch** (:func:`collector_paused`).

A batch allocates some hundred thousand small, acyclic objects (rows, keys, decoded
messages) that reference counting frees. With the collector's default thresholds (a
young-generation pass every 700 allocations, an old-generation pass as survivors pile up),
those passes cost the link base about a third of its CPU time per link (12.4 -> 9.4 us for
row building, targets and known-target bookkeeping) and the importance service several per
cent per link transfer. :func:`collector_paused` turns automatic collection off for the
duration of a batch and back on after it, so that cycles other code creates meanwhile are
still collected, right after the batch.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_THRESHOLD = 50_000

_holders = 0
_was_enabled = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """Automatic garbage collection off inside the block (nested or overlapping blocks: until the last ends)."""
    global _holders, _was_enabled
    if _holders == 0:
        _was_enabled = gc.isenabled()
        gc.disable()
    _holders += 1
    try:
        yield
    finally:
        _holders -= 1
        if _holders == 0 and _was_enabled:
            gc.enable()


def tune_collector(young_threshold: int = YOUNG_THRESHOLD) -> None:
    """Freezes everything alive now out of the collector's passes; young passes every ``young_threshold`` objects.

    Called once a service has started (see :mod:`libs.common.service`); a threshold of 0
    turns automatic collection off altogether, as Python's own ``gc.set_threshold`` does.
    """
    if young_threshold < 0:
        raise ValueError(f"young generation threshold must be >= 0, not {young_threshold}")
    gc.collect()
    gc.freeze()
    _young, middle, old = gc.get_threshold()
    gc.set_threshold(young_threshold, middle, old)

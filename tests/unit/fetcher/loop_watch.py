"""What a test of hostile input watches while the fetcher works: the event loop turning, and the resident set."""

from __future__ import annotations

import asyncio
import gc
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path


def rss_bytes() -> int:
    """This process's resident set now."""
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@dataclass
class LoopWatch:
    before: int
    """The resident set when the watch began (after a collection)."""
    peak: int = 0
    gaps: list[float] = field(default_factory=lambda: [0.0])
    """Seconds between the watch's turns of the loop (it asks for one every 5 ms)."""


@asynccontextmanager
async def watching_loop() -> AsyncIterator[LoopWatch]:
    """Turns of the event loop and the peak resident set while the block runs (what a gRPC health check and the
    other fetches need: the loop turning)."""
    gc.collect()
    watch = LoopWatch(rss_bytes())
    done = asyncio.Event()

    async def ticker() -> None:
        last = time.monotonic()
        while not done.is_set():
            await asyncio.sleep(0.005)
            now = time.monotonic()
            watch.gaps.append(now - last)
            last = now
            watch.peak = max(watch.peak, rss_bytes())

    ticks = asyncio.get_running_loop().create_task(ticker())
    try:
        yield watch
    finally:
        done.set()
        await ticks

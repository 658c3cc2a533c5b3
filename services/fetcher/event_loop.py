"""The event loop the fetcher runs on (``TRAWL_FETCHER_EVENT_LOOP``).

uvloop (libuv's loop, in C) by default: the fetcher is event-loop bound (sockets, timers,
futures for every fetch), and uvloop takes less CPU per fetch than the standard loop. The
standard ``asyncio`` loop remains a setting away.
"""

from __future__ import annotations

import asyncio

from libs.common.settings import SettingsError

__all__ = ["EVENT_LOOPS", "install_event_loop"]

EVENT_LOOPS = ("uvloop", "asyncio")


def install_event_loop(name: str) -> None:
    """Make ``asyncio.run`` use the loop ``name`` (one of :data:`EVENT_LOOPS`)."""
    if name not in EVENT_LOOPS:
        raise SettingsError(f"TRAWL_FETCHER_EVENT_LOOP={name!r}: use one of {', '.join(EVENT_LOOPS)}")
    if name == "uvloop":
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    else:
        asyncio.set_event_loop_policy(None)

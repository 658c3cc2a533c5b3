"""When the next dispatch round can find something to take, with nothing more to take now.

A round that took less than its room leaves nothing ready: the next URL becomes ready when time
passes (politeness, a retry's backoff, a planned revisit) or when something changes (new URLs, an
outcome, a policy: those wake the dispatcher). This reads the earliest of the times, through indexes,
a row or a few each:

- a one-slot host with a queued head, idle or with room behind its request in flight, whose next
  allowed time is still ahead: free ``ahead`` seconds before it (``hosts_waiting``, migration 0027);
- a large host's slots: its next start (``hosts_shared``);
- a head not due yet, a retry's backoff (``hosts_heads_due``): when it is due, or earlier;
- a fetched page's revisit (``frontier_revisits``): the round queues it again then.

Politeness is on the database's clock, heads and revisits on the scheduling clock (``clock.py``),
whose seconds are converted at its speed. A time may come early (a host whose head is not due when
it is free): the round then finds nothing and asks again. URLs behind a host's head that come due
before it are not looked for: the dispatcher's longest sleep bounds how late they start.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from psycopg import AsyncConnection

from services.scheduler.frontier.host_heads import BEHIND, OWNED, SHARED

# Seconds from now, each part NULL when it has no row.
NEXT_DUE = (
    "SELECT"
    " (SELECT extract(epoch FROM next_allowed_at - now()) - %(ahead)s FROM scheduler.hosts"
    "  WHERE head_fp IS NOT NULL AND slots = 1 AND next_allowed_at > now() + make_interval(secs => %(ahead)s)"
    "   AND (in_flight = 0 OR " + BEHIND + ") AND " + OWNED + " ORDER BY next_allowed_at LIMIT 1),"
    " (SELECT extract(epoch FROM min(next_allowed_at) - now()) FROM scheduler.hosts"
    "  WHERE slots > 1 AND head_fp IS NOT NULL AND next_allowed_at > now()"
    "   AND (in_flight = 0 OR " + SHARED + ") AND " + OWNED + "),"
    " (SELECT extract(epoch FROM head_due_at - %(now)s) / %(speed)s FROM scheduler.hosts"
    "  WHERE head_fp IS NOT NULL AND head_due_at > %(now)s AND " + OWNED + " ORDER BY head_due_at LIMIT 1),"
    " (SELECT extract(epoch FROM min(next_fetch_at) - %(now)s) / %(speed)s FROM scheduler.frontier"
    "  WHERE status = 'fetched')"
)


async def seconds_until_due(
    conn: AsyncConnection[Any], partitions: Sequence[int], held: Sequence[str], now: datetime, speed: float,
    ahead: float, queue_depth: int, behind_max_gap: float,
) -> float | None:
    """Seconds until the first URL of ``partitions`` (hosts in ``held`` apart) may be ready; None: none will
    be, unless something changes. ``now`` is the scheduling clock's time, running ``speed`` times real time."""
    cur = await conn.execute(
        NEXT_DUE,
        {"parts": list(partitions), "held": list(held), "now": now, "speed": speed, "ahead": ahead,
         "depth": queue_depth, "behind_gap": behind_max_gap},
    )
    row = await cur.fetchone()
    times = [float(t) for t in (row or ()) if t is not None]
    return min(times) if times else None

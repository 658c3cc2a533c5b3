"""Host heads: each host's best queued URL, kept on its row so a dispatch round reads only those.

A round must take, among the free hosts, the best queued URL of each, best first. Probing
every free host's queued URLs costs a round as many index probes as there are free hosts
(100,000 on a large crawl) whatever the room; with heads, the round reads ``room`` rows of
one index (``hosts_heads``: free hosts by head priority). The heads are exact when a round
selects: the round first refreshes the hosts the frontier's statement triggers named stale
(migration ``0020_host_heads.sql``: a URL queued, requeued, re-weighed or deleted), and the
statement that takes URLs sets the next heads of the hosts it took them from, in the same
statement (one statement per round).

A head ignores ``next_fetch_at``, since being due changes with time and not with a write:
a host whose head is not due yet (a retry waiting for its backoff) is probed for a due URL
(:data:`LATER`), and such hosts are few.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg import AsyncConnection

# The best queued URL of host ``h.host`` (NULLs when it has none), probed per host row.
_SET_HEAD = (
    "(head_fp, head_priority, head_due_at) = (SELECT f.url_fp, f.priority, f.next_fetch_at"
    " FROM scheduler.frontier f WHERE f.host = h.host AND f.status = 'queued' ORDER BY f.priority DESC, f.url_fp"
    " LIMIT 1)"
)

# Every host's head at once (what migration 0020 runs on an existing frontier; a bulk load too).
BACKFILL = (
    "UPDATE scheduler.hosts h SET head_fp = b.url_fp, head_priority = b.priority, head_due_at = b.next_fetch_at"
    " FROM (SELECT DISTINCT ON (host) host, url_fp, priority, next_fetch_at FROM scheduler.frontier"
    "   WHERE status = 'queued' ORDER BY host, priority DESC, url_fp) b"
    " WHERE h.host = b.host"
)

REFRESH_STALE = (
    "WITH s AS (DELETE FROM scheduler.host_heads_stale WHERE partition = ANY(%(parts)s) RETURNING host)"
    " UPDATE scheduler.hosts h SET " + _SET_HEAD + " WHERE h.host = ANY(ARRAY(SELECT DISTINCT host FROM s))"
)

# The hosts a round took URLs from, in the round's own statement: one more request out, a large
# host's next start spaced by its gap, and the next head. The statement's snapshot still shows the
# URL just taken as queued (a statement does not see its own writes), so the next head is the best
# queued URL other than it (``t``: the row the round took from the host).
_TAKEN = (
    "in_flight = h.in_flight + 1,"
    " next_allowed_at = CASE WHEN h.slots > 1 THEN greatest(h.next_allowed_at,"
    "   now() + make_interval(secs => coalesce(h.gap_seconds, 0))) ELSE h.next_allowed_at END,"
    " (head_fp, head_priority, head_due_at) = (SELECT f.url_fp, f.priority, f.next_fetch_at"
    "   FROM scheduler.frontier f WHERE f.host = h.host AND f.status = 'queued' AND f.url_fp <> t.url_fp"
    "   ORDER BY f.priority DESC, f.url_fp LIMIT 1)"
)

OWNED = "partition = ANY(%(parts)s) AND host <> ALL(%(held)s::text[])"
"""A host of the replica's partitions that no one holds."""
# A host may take a request when it has nothing in flight, or fewer than its slots and its gap
# since the last start has passed; never a held host, only in the owned partitions.
_FREE = "next_allowed_at <= now() AND " + OWNED
# A one-slot host may take a request up to ``ahead`` seconds before its next allowed time: the
# fetcher, which keeps the gap, holds it until then, so the request starts as the gap ends
# instead of a dispatch round and a broker hop later (a large host's slots share the scheduler's
# token and keep the strict rule).
_FREE_AHEAD = (
    "next_allowed_at <= now() + make_interval(secs => CASE WHEN slots = 1 THEN %(ahead)s ELSE 0 END)"
    " AND " + OWNED
)
# A large host's slots, some taken, its shared gap known.
SHARED = "slots > 1 AND in_flight BETWEEN 1 AND slots - 1 AND gap_seconds IS NOT NULL"

# Hosts of one slot with requests out but fewer than the queue depth, whose gap is shorter than
# ``behind_gap``: the next request waits at the fetcher for the host's gap instead of for the outcome's
# way back (hosts_busy_heads, migration 0024, indexes these: at most the in-flight budget). A host with
# a longer gap has time for its outcome to come back: its next URL is chosen then (up to ``ahead``
# before the gap ends), with the cash its last pages passed on, rather than as soon as one is out.
BEHIND = "slots = 1 AND in_flight BETWEEN 1 AND %(depth)s - 1 AND coalesce(gap_seconds, 0) < %(behind_gap)s"


def select_and_take(queue_depth: int = 1) -> str:
    """The round's statement: the best head of each free host, best first, taken, with the hosts'
    next heads. ``queue_depth`` requests of a one-slot host may be out at once (1: none behind the
    one being fetched); the fetcher keeps the host's politeness, one request on the wire at a time.

    Hosts with nothing out come first, best first, then the requests that would wait behind one
    already out: the in-flight budget goes to hosts that can start now before requests that wait
    for a gap, so a crawl starts every host it can at once rather than a few hosts deeper."""
    behind = queue_depth > 1
    return (
        "WITH idle AS ("
        "  SELECT head_fp AS url_fp, head_priority AS priority, 1 AS idle FROM scheduler.hosts"
        "  WHERE head_fp IS NOT NULL AND in_flight = 0 AND head_due_at <= %(now)s AND " + _FREE_AHEAD
        + "  ORDER BY head_priority DESC, head_fp LIMIT %(room)s"
        "  FOR UPDATE SKIP LOCKED"
        + ("), behind AS ("
           "  SELECT head_fp AS url_fp, head_priority AS priority, 0 AS idle FROM scheduler.hosts"
           "  WHERE head_fp IS NOT NULL AND in_flight > 0 AND " + BEHIND + " AND head_due_at <= %(now)s AND "
           + _FREE_AHEAD + "  ORDER BY head_priority DESC, head_fp LIMIT %(room)s"
           "  FOR UPDATE SKIP LOCKED" if behind else "")
        + "), shared AS ("
        "  SELECT head_fp AS url_fp, head_priority AS priority, 0 AS idle FROM scheduler.hosts"
        "  WHERE " + SHARED + " AND head_fp IS NOT NULL AND head_due_at <= %(now)s AND " + _FREE
        + "  FOR UPDATE SKIP LOCKED"
        "), later AS ("  # heads not due yet: the best due URL of such a host, if any
        "  SELECT host, (in_flight = 0)::int AS idle FROM scheduler.hosts"
        "  WHERE head_fp IS NOT NULL AND head_due_at > %(now)s AND (in_flight = 0 OR " + SHARED
        + (" OR " + BEHIND if behind else "") + ") AND " + _FREE
        + "  FOR UPDATE SKIP LOCKED"
        "), later_best AS ("
        "  SELECT b.url_fp, b.priority, later.idle FROM later, LATERAL ("
        "    SELECT url_fp, priority FROM scheduler.frontier f"
        "    WHERE f.host = later.host AND f.status = 'queued' AND f.next_fetch_at <= %(now)s"
        "    ORDER BY f.priority DESC, f.url_fp LIMIT 1) b"
        "), best AS ("
        "  SELECT url_fp, priority, idle FROM idle UNION ALL SELECT url_fp, priority, idle FROM shared"
        + ("  UNION ALL SELECT url_fp, priority, idle FROM behind" if behind else "")
        + "  UNION ALL SELECT url_fp, priority, idle FROM later_best"
        "  ORDER BY idle DESC, priority DESC, url_fp LIMIT %(room)s"
        "), took AS ("
        "  UPDATE scheduler.frontier f SET status = 'in_flight', attempts = attempts + 1,"
        "    dispatched_at = now(), request_id = md5(random()::text || f.url_fp::text)"
        "  WHERE f.url_fp = ANY(ARRAY(SELECT url_fp FROM best)) AND f.status = 'queued'"
        "  RETURNING f.url_fp, f.url, f.host, f.priority, f.depth, f.attempts, f.request_id,"
        "    f.etag, f.last_modified, f.validated_at"
        "), hosts AS ("  # the hosts the round took from (one URL each at most): see _TAKEN
        "  UPDATE scheduler.hosts h SET " + _TAKEN
        + "  FROM took t WHERE h.host = t.host"
        ")"
        # The hosts' next allowed times as the round found them (a statement's parts share one snapshot, so
        # this join does not see the update above): a request taken ahead of its host's gap carries it.
        " SELECT t.url_fp, t.url, t.host, t.priority, t.depth, t.attempts, t.request_id, t.etag, t.last_modified,"
        "  t.validated_at, h.next_allowed_at FROM took t JOIN scheduler.hosts h ON h.host = t.host"
    )



async def refresh_stale(conn: AsyncConnection[Any], partitions: Sequence[int]) -> None:
    """Recomputes the heads of the hosts of ``partitions`` whose queued URLs changed since."""
    await conn.execute(REFRESH_STALE, {"parts": list(partitions)})

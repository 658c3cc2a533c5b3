"""The frontier in PostgreSQL: what is known, queued, in flight, fetched or given up.

Every write is idempotent, so a redelivered message changes nothing: discoveries insert
or ignore, priorities overwrite, and an outcome only applies to the request it answers
(matched by request id while the URL is in flight).

Policies meet the frontier through its listeners (``listeners.py``): told of discoveries and
applied outcomes inside the same transactions, they keep a crawl goal's site statistics
(``services/scheduler/bandits/goal_sites.py``) and the freshness revisit plans. Large hosts may
have several request slots (``set_host_slots``): up to ``slots`` requests of such a host in
flight, their starts spaced by the host's politeness gap as the fetcher last reported it.

Revisits: a fetched page keeps status ``fetched`` with ``next_fetch_at`` at its planned revisit
(:data:`NEVER` unless a ``revisits`` planner sets one in the same transaction:
``services/scheduler/freshness/revisit_hook.py``), and a dispatch round first moves the pages
whose time has come back to ``queued``. Scheduling times are the ``clock``'s
(``services/scheduler/clock.py``); politeness and leases stay on the database's clock.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from psycopg import AsyncConnection

from libs.common.db.arrays import float8_array, int4_array, int8_array, text_array, timestamptz_array
from libs.common.db.pool import Database
from libs.common.kafka.partitioner import partition_for
from libs.common.url_keys import normalized_fingerprint, normalized_host
from libs.common.urls import InvalidUrl, normalize_url
from services.scheduler.clock import SchedulerClock, SystemClock
from services.scheduler.frontier import host_heads, next_due
from services.scheduler.frontier.listeners import (
    AppliedOutcomes,
    EndedFetch,
    FetchedPage,
    FrontierListener,
    RevisitPlan,
    RevisitPlanning,
)
from services.scheduler.frontier.priority import PriorityWeights, priority_sql


@dataclass(frozen=True)
class NewUrl:
    url_fp: int
    url: str
    host: str
    depth: int
    source: str = "link"
    discovered_from: str = ""  # the page it was found on, when known: credited to a crawl goal
    path_key: str = ""  # the linkbase's trap signal: the URL's path and that path's penalty
    path_penalty: float = 0.0
    occurrences: int = 1  # times the page it was found on links it (see UNANNOUNCED_PRIORITY)


@dataclass(frozen=True)
class Priority:
    url_fp: int
    url: str
    host: str
    priority: float


@dataclass(frozen=True)
class Outcome:
    url_fp: int
    request_id: str
    host: str
    status: str  # the frontier status to move to: fetched, failed, blocked, skipped, retry
    http_status: int
    outcome: str
    error: str
    fetched_at: datetime
    host_next_allowed_at: datetime | None
    etag: str = ""  # the validators the response gave ("" none; a 304's "" keeps the stored ones)
    last_modified: str = ""

    @property
    def not_modified(self) -> bool:
        """A 304 to a conditional revisit: fetched, and the page as at its last capture."""
        return self.outcome == NOT_MODIFIED


@dataclass(frozen=True)
class Dispatched:
    url_fp: int
    url: str
    host: str
    priority: float
    depth: int
    attempts: int
    request_id: str
    etag: str | None = None  # the validators of the page's last capture, for a conditional revisit
    last_modified: str | None = None
    validated_at: datetime | None = None
    host_not_before: datetime | None = None  # the host's next allowed time when the URL was taken


NOT_MODIFIED = "FETCH_STATUS_NOT_MODIFIED"  # Outcome.outcome of a 304 to a conditional revisit
_UNCHANGED = "o.outcome = '" + NOT_MODIFIED + "'"
_FINAL = ("fetched", "failed", "blocked", "skipped")  # outcomes that end a page's fetch (not a retry)
# The next fetch of a fetched page nothing plans a revisit for (the last instant Python can read back).
NEVER = datetime(9999, 12, 31, tzinfo=UTC)


def _dedupe(rows: Sequence[NewUrl]) -> list[NewUrl]:
    best: dict[int, NewUrl] = {}
    for row in rows:
        seen = best.get(row.url_fp)
        if seen is None or row.depth < seen.depth:
            best[row.url_fp] = row
    return list(best.values())


def _found_on(rows: Sequence[NewUrl], admitted: set[int]) -> dict[int, tuple[str, int]]:
    """Page fingerprint -> (its host, how many of the admitted URLs were found on it)."""
    found: dict[int, tuple[str, int]] = {}
    for row in rows:
        if row.url_fp not in admitted or not row.discovered_from:
            continue
        try:
            page = normalize_url(row.discovered_from)
        except InvalidUrl:
            continue
        fp = normalized_fingerprint(page)  # the page is normalised once, not three times
        host, count = found.get(fp, (normalized_host(page), 0))
        found[fp] = (host, count + 1)
    return found


async def _reweigh_paths(conn: AsyncConnection[Any], rows: Sequence[NewUrl]) -> None:
    """The trap signal: a path's newest penalty re-weighs the priority of its URLs still to fetch.

    Priority is always importance x (1 - path_penalty); a new penalty p' replaces p by scaling
    the priority by (1 - p') / (1 - p). Penalties stay below 1 (the handler clamps them).
    """
    latest = {r.path_key: r.path_penalty for r in rows if r.path_key}
    if not latest:
        return
    paths = sorted(latest)
    await conn.execute(
        "UPDATE scheduler.frontier AS f"
        " SET priority = f.priority * (1 - v.penalty) / (1 - f.path_penalty), path_penalty = v.penalty"
        " FROM unnest(%s::text[], %s::float8[]) AS v(path, penalty)"
        " WHERE f.path_key = v.path AND f.path_penalty <> v.penalty AND f.status IN ('queued', 'known')",
        (paths, [latest[p] for p in paths]),
    )


# Outcomes of in-flight requests, set-based: each URL answered moves on (a retry is queued again
# after its backoff, or failed once attempts are spent; a fetched page takes its revisit plan, when
# one was made: next fetch, change probability, gain and the priority they make), then each host
# it frees, once: one request fewer out; a one-slot host (or any host after an error) waits until
# the fetcher's next allowed time; the politeness gap the fetcher reported last (highest
# fingerprint) is remembered for a host with several slots (see dispatch). A fetched page keeps the
# validators its response gave for the next revisit (a 304 keeps the stored ones unless it sent new
# ones; a capture's time is kept with them, the one a 304's WARC record refers to).
_APPLY_OUTCOMES = (
    "WITH o AS ("
    "  SELECT * FROM unnest(%(fps)b::bigint[], %(rids)b::text[], %(statuses)b::text[], %(ats)b::timestamptz[],"
    "    %(https)b::int[], %(outcomes)b::text[], %(errors)b::text[], %(nexts)b::timestamptz[],"
    "    %(dues)b::timestamptz[], %(ps)b::float8[], %(gains)b::float8[], %(etags)b::text[], %(lms)b::text[])"
    "    AS o(fp, rid, status, at, http, outcome, error, next, due, p, gain, etag, lm)"
    "), done AS ("
    "  UPDATE scheduler.frontier f SET"
    "    status = CASE WHEN o.status <> 'retry' THEN o.status"
    "                  WHEN f.attempts >= %(max)s THEN 'failed' ELSE 'queued' END,"
    "    next_fetch_at = CASE WHEN o.status = 'retry'"
    "        THEN %(now)s + make_interval(secs => %(base)s * power(2, greatest(f.attempts - 1, 0)))"
    "        WHEN o.status = 'fetched' THEN coalesce(o.due, %(never)s) ELSE f.next_fetch_at END,"
    "    change_probability = CASE WHEN o.status = 'fetched' AND o.due IS NOT NULL THEN o.p"
    "        ELSE f.change_probability END,"
    "    freshness_gain = CASE WHEN o.status = 'fetched' AND o.due IS NOT NULL THEN o.gain ELSE f.freshness_gain END,"
    "    priority = CASE WHEN o.status = 'fetched' AND o.due IS NOT NULL"
    "        THEN " + priority_sql("f.cash", "o.p", "o.gain", "f.path_penalty") + " ELSE f.priority END,"
    "    fetched_at = o.at, http_status = o.http, last_outcome = o.outcome, last_error = nullif(o.error, ''),"
    "    fetch_seq = CASE WHEN o.status = 'fetched' THEN nextval('scheduler.fetch_seq') ELSE f.fetch_seq END,"
    "    etag = CASE WHEN o.status <> 'fetched' THEN f.etag"
    "        WHEN " + _UNCHANGED + " THEN coalesce(nullif(o.etag, ''), f.etag) ELSE nullif(o.etag, '') END,"
    "    last_modified = CASE WHEN o.status <> 'fetched' THEN f.last_modified"
    "        WHEN " + _UNCHANGED + " THEN coalesce(nullif(o.lm, ''), f.last_modified) ELSE nullif(o.lm, '') END,"
    "    validated_at = CASE WHEN o.status <> 'fetched' OR " + _UNCHANGED + " THEN f.validated_at"
    "        WHEN o.etag <> '' OR o.lm <> '' THEN o.at END,"
    "    request_id = NULL"
    "  FROM o WHERE f.url_fp = o.fp AND f.request_id = o.rid AND f.status = 'in_flight'"
    "  RETURNING f.url_fp, f.url, f.host, o.status AS reported, o.at, o.next"
    "), freed AS ("
    "  SELECT host, count(*) AS n, count(*) FILTER (WHERE reported = 'fetched') AS ok,"
    "    count(*) FILTER (WHERE reported IN ('retry', 'failed')) AS errors,"
    "    max(coalesce(next, now())) AS next_any,"
    "    max(coalesce(next, now())) FILTER (WHERE reported IN ('retry', 'failed')) AS next_error,"
    "    (array_agg(greatest(extract(epoch FROM next - at), 0) ORDER BY url_fp DESC)"
    "      FILTER (WHERE next IS NOT NULL))[1] AS gap"
    "  FROM done GROUP BY host"
    "), hosts AS ("
    "  UPDATE scheduler.hosts h SET in_flight = greatest(h.in_flight - a.n, 0),"
    "    next_allowed_at = greatest(h.next_allowed_at, CASE WHEN h.slots = 1 THEN a.next_any ELSE a.next_error END),"
    "    gap_seconds = coalesce(a.gap, h.gap_seconds), fetched = h.fetched + a.ok, errors = h.errors + a.errors"
    "  FROM (SELECT * FROM freed ORDER BY host) a WHERE h.host = a.host"
    ")"
    " SELECT url_fp, url, host, reported FROM done"
)


RELEASE_HOSTS = (
    "UPDATE scheduler.hosts h SET in_flight = greatest(h.in_flight - r.n, 0)"
    " FROM (SELECT host, count(*) AS n FROM unnest(%s::text[]) AS host GROUP BY host) r WHERE h.host = r.host"
)
"""Requests taken back from the hosts they were out for, one host per request (a host's two requests count two)."""


UNANNOUNCED_PRIORITY = 1e-12
"""The priority of a URL at depth 0 whose cash the importance service has not announced yet, shared by
``1 + depth`` below it and multiplied by the times the page it was found on links it: far under any
announced cash (100 credits over the whole crawl), so it only orders URLs with no cash yet, shallow
first and, among one page's new links, as AOPIC will share that page's cash (breadth-first until AOPIC
speaks: a host's next request is often handed out before its new pages' cash is announced, and a new
site's home page passes on its first cash only once the virtual page has paid it, a second or more
after its fetch)."""


class FrontierStore:
    def __init__(self, db: Database, partitions: int, clock: SchedulerClock | None = None,
                 revisits: RevisitPlanning | None = None, weights: PriorityWeights | None = None,
                 queue_depth: int = 1, dispatch_ahead: float = 0.0, behind_max_gap: float = float("inf"),
                 listeners: Sequence[FrontierListener] = ()) -> None:
        """``dispatch_ahead``: seconds before a one-slot host's next allowed time it may be handed a request
        (the fetcher holds it until the gap has passed). ``behind_max_gap``: a request waits behind another
        of its host (``queue_depth`` > 1) only while the host's gap is shorter than this. ``listeners`` are
        told of discoveries and applied outcomes, in order, then ``revisits`` (a listener too)."""
        if queue_depth < 1:
            raise ValueError(f"a host's queue depth is at least 1, not {queue_depth}")
        self._db = db
        self._queue_depth = queue_depth
        self._dispatch_ahead = max(0.0, dispatch_ahead)
        self._behind_max_gap = behind_max_gap
        self._select_and_take = host_heads.select_and_take(queue_depth)
        self._partitions = partitions
        self._clock = clock or SystemClock()
        self._revisits = revisits
        self._listeners: tuple[FrontierListener, ...] = (*listeners, *([revisits] if revisits is not None else []))
        self._weights = weights or PriorityWeights()
        self._in_flight: int | None = None  # the last in-flight count, kept up to date (in_flight_recent)
        self._in_flight_counted = 0.0

    async def add_urls(self, rows: Sequence[NewUrl]) -> int:
        """Queues URLs not seen before; returns how many were new."""
        rows = _dedupe(rows)
        if not rows:
            return 0
        hosts = sorted({r.host for r in rows})
        async with self._db.transaction() as conn:
            await conn.execute(
                "INSERT INTO scheduler.hosts (host, partition) SELECT * FROM unnest(%s::text[], %s::int[])"
                " ON CONFLICT (host) DO NOTHING",
                (hosts, [partition_for(h, self._partitions) for h in hosts]),
            )
            cur = await conn.execute(
                "INSERT INTO scheduler.frontier AS f"
                "   (url_fp, url, host, status, depth, source, path_key, path_penalty, next_fetch_at, priority)"
                " SELECT fp, url, host, 'queued', depth, source, NULLIF(path, ''), penalty, %s::timestamptz,"
                "   %s::float8 * occurrences * (1 - penalty) / (1 + greatest(depth, 0))"
                " FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::int[], %s::text[], %s::text[], %s::float8[],"
                "   %s::int[]) AS t(fp, url, host, depth, source, path, penalty, occurrences)"
                " ORDER BY fp"
                " ON CONFLICT (url_fp) DO UPDATE SET status = 'queued', depth = excluded.depth,"
                "   source = excluded.source, discovered_at = now(), path_key = excluded.path_key,"
                "   next_fetch_at = excluded.next_fetch_at,"
                "   path_penalty = excluded.path_penalty,"
                "   priority = f.priority * (1 - excluded.path_penalty) / (1 - f.path_penalty)"
                " WHERE f.status = 'known'"
                " RETURNING f.url_fp",
                (
                    self._clock.now(),
                    UNANNOUNCED_PRIORITY,
                    [r.url_fp for r in rows],
                    [r.url for r in rows],
                    [r.host for r in rows],
                    [r.depth for r in rows],
                    [r.source for r in rows],
                    [r.path_key for r in rows],
                    [r.path_penalty for r in rows],
                    [r.occurrences for r in rows],
                ),
            )
            admitted = {int(r[0]) for r in await cur.fetchall()}
            await _reweigh_paths(conn, rows)
            found = _found_on(rows, admitted)
            for listener in self._listeners:
                await listener.discovered(conn, found)
            return len(admitted)

    async def set_priorities(self, rows: Sequence[Priority]) -> None:
        """Records the cash the importance service announced (``Priority.priority``) and the priority it makes."""
        latest = {r.url_fp: r for r in rows}
        if not latest:
            return
        vals = sorted(latest.values(), key=lambda r: r.url_fp)
        async with self._db.transaction() as conn:
            await conn.execute(
                "INSERT INTO scheduler.frontier AS f (url_fp, url, host, status, cash, priority)"
                " SELECT fp, url, host, 'known', pr, " + priority_sql("pr", "1", "0", "0")
                + " FROM unnest(%(fps)s::bigint[], %(urls)s::text[], %(hosts)s::text[], %(cash)s::float8[])"
                "   AS t(fp, url, host, pr)"
                " ON CONFLICT (url_fp) DO UPDATE SET cash = excluded.cash,"
                "   priority = " + priority_sql("excluded.cash", "f.change_probability", "f.freshness_gain",
                                                "f.path_penalty"),
                {"fps": [r.url_fp for r in vals], "urls": [r.url for r in vals], "hosts": [r.host for r in vals],
                 "cash": [r.priority for r in vals], "w_importance": self._weights.importance,
                 "w_freshness": self._weights.freshness},
            )

    async def apply_outcomes(self, rows: Sequence[Outcome], max_attempts: int, retry_base: float) -> int:
        """Applies outcomes of in-flight requests; stale or repeated outcomes are ignored.

        One statement for the batch: the URLs the outcomes answer, then their hosts, each once.
        """
        unique = sorted({(o.url_fp, o.request_id): o for o in reversed(rows)}.values(), key=lambda r: r.url_fp)
        if not unique:
            return 0
        async with self._db.transaction() as conn:
            plans: Mapping[int, RevisitPlan] = {}
            if self._revisits is not None:  # planned first, so that the outcome's update writes the plan
                reported = {o.url_fp: FetchedPage(o.url_fp, "", o.host, o.fetched_at if o.not_modified else None)
                            for o in unique if o.status == "fetched"}
                if reported:
                    plans = await self._revisits.plan_fetched(conn, list(reported.values()))
            planned = [plans.get(o.url_fp) if o.status == "fetched" else None for o in unique]
            cur = await conn.execute(
                _APPLY_OUTCOMES,
                {  # arrays encoded at once (libs/common/db/arrays.py), not element by element
                    "fps": int8_array([o.url_fp for o in unique]), "rids": text_array([o.request_id for o in unique]),
                    "statuses": text_array([o.status for o in unique]),
                    "ats": timestamptz_array([o.fetched_at for o in unique]),
                    "https": int4_array([o.http_status for o in unique]),
                    "outcomes": text_array([o.outcome for o in unique]),
                    "errors": text_array([o.error[:2000] for o in unique]),
                    "nexts": timestamptz_array([o.host_next_allowed_at for o in unique]),
                    "dues": timestamptz_array([p.due if p else None for p in planned]),
                    "ps": float8_array([p.change_probability if p else None for p in planned]),
                    "gains": float8_array([p.freshness_gain if p else None for p in planned]),
                    "etags": text_array([o.etag for o in unique]),
                    "lms": text_array([o.last_modified for o in unique]),
                    "max": max_attempts, "base": retry_base, "now": self._clock.now(), "never": NEVER,
                    "w_importance": self._weights.importance, "w_freshness": self._weights.freshness,
                },
            )
            done = sorted((int(fp), str(url), str(host), str(status)) for fp, url, host, status in await cur.fetchall())
            ended = [EndedFetch(fp, host, status == "fetched") for fp, _url, host, status in done if status in _FINAL]
            unchanged = {o.url_fp: o.fetched_at for o in unique if o.not_modified}
            fetched = [FetchedPage(fp, url, host, unchanged.get(fp)) for fp, url, host, status in done
                       if status == "fetched"]
            applied = AppliedOutcomes(ended, fetched, plans)
            for listener in self._listeners:
                await listener.outcomes_applied(conn, applied)
        self._booked(-len(done))
        return len(done)

    async def dispatch(self, room: int, partitions: Sequence[int], held: Sequence[str] = ()) -> list[Dispatched]:
        """Takes the best queued URL of each free host, highest priority first, up to ``room``.

        A host is free when it has nothing in flight, or fewer requests than its slots and its
        gap since the last start has passed, or (one slot) fewer than the queue depth out; hosts
        in ``held`` (a crawl goal's sites the policy holds back this round) are skipped.
        """
        if room <= 0 or not partitions:
            return []
        now = self._clock.now()
        async with self._db.transaction() as conn:
            await conn.execute(  # fetched pages whose revisit has come are queued again
                "UPDATE scheduler.frontier SET status = 'queued', attempts = 0"
                " WHERE status = 'fetched' AND next_fetch_at <= %s",
                (now,),
            )
            await host_heads.refresh_stale(conn, partitions)
            cur = await conn.execute(
                self._select_and_take,
                {"parts": list(partitions), "room": room, "held": list(held), "now": now, "depth": self._queue_depth,
                 "ahead": self._dispatch_ahead, "behind_gap": self._behind_max_gap},
            )
            # RETURNING follows the join plan, not best's ORDER BY: restore best first.
            rows = sorted((Dispatched(*r) for r in await cur.fetchall()), key=lambda d: (-d.priority, d.url_fp))
        self._booked(len(rows))
        return rows

    async def seconds_until_due(self, partitions: Sequence[int], held: Sequence[str] = ()) -> float | None:
        """Seconds until a round over ``partitions`` may find a URL to take, hosts in ``held`` apart (``next_due.py``);
        None: not before something changes (URLs queued, an outcome, a policy)."""
        if not partitions:
            return None
        async with self._db.connection() as conn:
            return await next_due.seconds_until_due(
                conn, partitions, held, self._clock.now(), self._clock.speed, self._dispatch_ahead, self._queue_depth,
                self._behind_max_gap,
            )

    async def set_host_slots(self, hosts: Sequence[str], slots: int) -> None:
        """Gives ``hosts`` (large hosts) ``slots`` request slots; every other host goes back to one."""
        names = sorted(set(hosts))
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE scheduler.hosts SET slots = 1 WHERE slots > 1 AND host <> ALL(%s::text[])", (names,)
            )
            if names:
                await conn.execute(
                    "INSERT INTO scheduler.hosts AS h (host, partition, slots)"
                    " SELECT host, part, %s FROM unnest(%s::text[], %s::int[]) AS t(host, part)"
                    " ON CONFLICT (host) DO UPDATE SET slots = excluded.slots",
                    (max(1, slots), names, [partition_for(h, self._partitions) for h in names]),
                )

    async def queued_path_counts(self, host: str) -> dict[str, int]:
        """Queued URLs of ``host`` per first path segment ("" when the URL has no directory)."""
        async with self._db.connection() as conn:
            cur = await conn.execute(
                "SELECT coalesce(substring(url FROM '^[^:]+://[^/]+/([^/?#]*)/'), ''), count(*)"
                " FROM scheduler.frontier WHERE host = %s AND status = 'queued' GROUP BY 1",
                (host,),
            )
            return {str(segment): int(n) for segment, n in await cur.fetchall()}

    async def in_flight(self) -> int:
        """Requests in flight over the whole frontier, counted."""
        async with self._db.connection() as conn:
            cur = await conn.execute("SELECT count(*) FROM scheduler.frontier WHERE status = 'in_flight'")
            row = await cur.fetchone()
            count = int(row[0]) if row else 0
        self._in_flight, self._in_flight_counted = count, time.monotonic()
        return count

    async def in_flight_recent(self, max_age: float) -> int:
        """Requests in flight, counted at most every ``max_age`` seconds.

        Between counts the last count is kept up to date with this store's own writes: the URLs
        its rounds took, the outcomes and the expired leases it applied. Other writers (another
        replica, requests never sent queued again) show at the next count.
        """
        if self._in_flight is None or time.monotonic() - self._in_flight_counted >= max_age:
            return await self.in_flight()
        return self._in_flight

    def _booked(self, change: int) -> None:
        if self._in_flight is not None:
            self._in_flight = max(0, self._in_flight + change)

    async def expire_leases(self, lease_seconds: float) -> int:
        """Requests with no outcome for too long were lost (a fetcher died): queue them again."""
        async with self._db.transaction() as conn:
            cur = await conn.execute(
                "UPDATE scheduler.frontier SET status = 'queued', request_id = NULL,"
                " last_error = 'lease expired: no outcome received'"
                " WHERE status = 'in_flight' AND dispatched_at < now() - make_interval(secs => %s)"
                " RETURNING host",
                (lease_seconds,),
            )
            hosts = [r[0] for r in await cur.fetchall()]
            if hosts:
                await conn.execute(RELEASE_HOSTS, (hosts,))
        self._booked(-len(hosts))
        return len(hosts)

    async def status_counts(self) -> dict[str, int]:
        async with self._db.connection() as conn:
            cur = await conn.execute("SELECT status, count(*) FROM scheduler.frontier GROUP BY status")
            return {str(s): int(n) for s, n in await cur.fetchall()}

    async def host_count(self) -> int:
        async with self._db.connection() as conn:
            cur = await conn.execute("SELECT count(*) FROM scheduler.hosts")
            row = await cur.fetchone()
            return int(row[0]) if row else 0

    async def ready_count(self) -> int:
        async with self._db.connection() as conn:
            cur = await conn.execute(
                "SELECT count(*) FROM scheduler.frontier WHERE status = 'queued' AND next_fetch_at <= %s",
                (self._clock.now(),),
            )
            row = await cur.fetchone()
            return int(row[0]) if row else 0


def utc_from_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000.0, tz=UTC)

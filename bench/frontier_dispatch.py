"""URLs per second the scheduler's frontier hands out: one set-based query against a query per host.

Contender: ``FrontierStore.dispatch`` (one statement: the free hosts, each one's best
queued URL through a LATERAL index probe, best first, marked in flight) followed by
``FrontierStore.apply_outcomes`` for what it dispatched (every fetch succeeded, so each
host is free again at once).
Baseline: the naive loop, in one transaction per round: list the free hosts, then for each
one ``SELECT ... ORDER BY priority DESC LIMIT 1``, keep the best ``room`` of them, and mark
each in flight with its own ``UPDATE``; followed by the same ``apply_outcomes``.

The frontier holds ``--urls`` queued URLs (200,000) over ``--hosts`` hosts (2,000), with
random priorities, on a throwaway PostgreSQL server (durable by default; ``--fast`` turns
fsync off). It is loaded once through the store's own ``add_urls`` and ``set_priorities``
and copied (``CREATE DATABASE ... TEMPLATE``) for every run, so every run starts from the
same frontier. A round takes at most ``--room`` URLs, by default what one scheduler
replica takes with the shipped settings (min of the dispatch batch and the in-flight budget).
The headline figure is the whole cycle, dispatch plus outcomes; the dispatch step alone is
reported beside it.

    .venv/bin/python -m bench.frontier_dispatch [--urls 200000 --hosts 2000 --rounds 60] [--fast] [--json]
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime

from bench.harness import (
    REPO,
    Comparison,
    add_postgres_options,
    base_parser,
    chunks,
    fresh_database,
    interleaved,
    report,
    throwaway_postgres,
)
from libs.common.db.migrations import apply_migrations
from libs.common.db.pool import Database
from libs.common.db.settings import DatabaseSettings
from libs.common.topics import FETCH_REQUESTS
from libs.common.urls import url_fingerprint
from libs.localinfra import LocalPostgres
from services.scheduler.bandits.goal_sites import GoalSites
from services.scheduler.frontier.store import Dispatched, FrontierStore, NewUrl, Outcome, Priority
from services.scheduler.settings import SchedulerSettings

MIGRATIONS = REPO / "services" / "scheduler" / "migrations"
PARTITIONS = FETCH_REQUESTS.partitions
ALL_PARTITIONS = list(range(PARTITIONS))
LOAD_CHUNK = 20_000
TEMPLATE = "bench_frontier_template"

DispatchFn = Callable[[Database, FrontierStore, int], Awaitable[list[Dispatched]]]


def build_workload(urls: int, hosts: int, seed: int = 11) -> tuple[list[NewUrl], list[Priority]]:
    """``urls`` URLs spread round-robin over ``hosts`` hosts, each with a random priority."""
    rng = random.Random(seed)
    new: list[NewUrl] = []
    priorities: list[Priority] = []
    for i in range(urls):
        host = f"h{i % hosts:05d}.test"
        url = f"http://{host}/p/{i // hosts}"
        fp = url_fingerprint(url)
        new.append(NewUrl(fp, url, host, depth=1))
        priorities.append(Priority(fp, url, host, rng.random()))
    return new, priorities


def outcomes_for(rows: Sequence[Dispatched]) -> list[Outcome]:
    """A successful fetch for every dispatched URL, freeing its host at once."""
    now = datetime.now(UTC)
    return [
        Outcome(r.url_fp, r.request_id, r.host, "fetched", 200, "FETCH_STATUS_OK", "", now, None) for r in rows
    ]


async def dispatch_store(db: Database, store: FrontierStore, room: int) -> list[Dispatched]:
    """The contender: the scheduler's own dispatch."""
    return await store.dispatch(room, ALL_PARTITIONS)


_FREE_HOSTS = (
    "SELECT host FROM scheduler.hosts WHERE in_flight = 0 AND next_allowed_at <= now()"
    " AND partition = ANY(%s) FOR UPDATE SKIP LOCKED"
)
_BEST_OF_HOST = (
    "SELECT url_fp, priority FROM scheduler.frontier"
    " WHERE host = %s AND status = 'queued' AND next_fetch_at <= now()"
    " ORDER BY priority DESC, url_fp LIMIT 1"
)
_MARK = (
    "UPDATE scheduler.frontier SET status = 'in_flight', attempts = attempts + 1, dispatched_at = now(),"
    " request_id = md5(random()::text || url_fp::text) WHERE url_fp = %s"
    " RETURNING url_fp, url, host, priority, depth, attempts, request_id"
)
_TAKE_HOST = "UPDATE scheduler.hosts SET in_flight = in_flight + 1 WHERE host = %s"


async def dispatch_per_host(db: Database, store: FrontierStore, room: int) -> list[Dispatched]:
    """The baseline: one query per free host, then one update per chosen URL and its host."""
    async with db.transaction() as conn:
        cur = await conn.execute(_FREE_HOSTS, (ALL_PARTITIONS,))
        hosts = [row[0] for row in await cur.fetchall()]
        best: list[tuple[int, float]] = []
        for host in hosts:
            cur = await conn.execute(_BEST_OF_HOST, (host,))
            row = await cur.fetchone()
            if row is not None:
                best.append((row[0], row[1]))
        best.sort(key=lambda r: (-r[1], r[0]))
        out: list[Dispatched] = []
        for url_fp, _priority in best[:room]:
            cur = await conn.execute(_MARK, (url_fp,))
            marked = await cur.fetchone()
            assert marked is not None
            sent = Dispatched(*marked)
            await conn.execute(_TAKE_HOST, (sent.host,))
            out.append(sent)
    return out


async def load_template(server: LocalPostgres, urls: int, hosts: int) -> None:
    """The frontier every run starts from, in database ``TEMPLATE`` (no session left open on it)."""
    from libs.localinfra import create_database, drop_database

    admin = server.dsn("postgres")
    drop_database(admin, TEMPLATE)
    create_database(admin, TEMPLATE)
    dsn = server.dsn(TEMPLATE)
    apply_migrations(dsn, "scheduler", MIGRATIONS)
    new, priorities = build_workload(urls, hosts)
    db = Database(DatabaseSettings(dsn=dsn), "bench-frontier-load")
    await db.start()
    try:
        store = FrontierStore(db, PARTITIONS, listeners=[GoalSites(db)])
        for part in chunks(priorities, LOAD_CHUNK):
            await store.set_priorities(part)
        for part in chunks(new, LOAD_CHUNK):
            await store.add_urls(part)
        async with db.connection() as conn:
            await conn.set_autocommit(True)
            await conn.execute("VACUUM ANALYZE")
    finally:
        await db.stop()


class Runs:
    """Timed runs of one dispatch function, each on a fresh copy of the loaded frontier."""

    def __init__(self, server: LocalPostgres, dispatch: DispatchFn, label: str, rounds: int, room: int) -> None:
        self._server = server
        self._dispatch = dispatch
        self._label = label
        self._rounds = rounds
        self._room = room
        self._settings = SchedulerSettings()
        self.dispatch_only: list[float] = []
        self._count = 0

    async def __call__(self) -> float:
        self._count += 1
        with fresh_database(self._server, f"bench_frontier_{self._label}_{self._count}", TEMPLATE) as dsn:
            db = Database(DatabaseSettings(dsn=dsn), f"bench-{self._label}")
            await db.start()
            try:
                store = FrontierStore(db, PARTITIONS, listeners=[GoalSites(db)])
                dispatched, dispatch_s, outcome_s = 0, 0.0, 0.0
                for _ in range(self._rounds):
                    started = time.perf_counter()
                    rows = await self._dispatch(db, store, self._room)
                    middle = time.perf_counter()
                    applied = await store.apply_outcomes(
                        outcomes_for(rows), self._settings.max_attempts, self._settings.retry_base_seconds
                    )
                    outcome_s += time.perf_counter() - middle
                    dispatch_s += middle - started
                    if applied != len(rows) or not rows:
                        raise AssertionError(f"{self._label}: dispatched {len(rows)}, applied {applied}")
                    dispatched += len(rows)
            finally:
                await db.stop()
        self.dispatch_only.append(dispatched / dispatch_s)
        return dispatched / (dispatch_s + outcome_s)


async def measure(urls: int, hosts: int, rounds: int, room: int, repeat: int, fast: bool) -> Comparison:
    with throwaway_postgres(fast) as server:
        started = time.perf_counter()
        await load_template(server, urls, hosts)
        load_s = time.perf_counter() - started
        contender_runs = Runs(server, dispatch_store, "store", rounds, room)
        baseline_runs = Runs(server, dispatch_per_host, "perhost", rounds, room)
        # Warm-up (untimed figures dropped): first sessions, catalog and buffer caches.
        await Runs(server, dispatch_store, "warmup_store", 3, room)()
        await Runs(server, dispatch_per_host, "warmup_perhost", 3, room)()
        contender, baseline = await interleaved(
            contender_runs,
            baseline_runs,
            repeat,
            ("FrontierStore.dispatch + apply_outcomes", "per-host SELECT ... LIMIT 1 loop + apply_outcomes"),
        )
    only_c = statistics.median(contender_runs.dispatch_only)
    only_b = statistics.median(baseline_runs.dispatch_only)
    return Comparison(
        benchmark="frontier_dispatch",
        unit="dispatches/s (dispatch + outcome cycle)",
        contender=contender,
        baseline=baseline,
        workload={
            "queued_urls": urls,
            "hosts": hosts,
            "rounds_per_run": rounds,
            "room_per_round": room,
            "dispatches_per_run": rounds * room,
            "postgres": "fsync off" if fast else "durable (fsync on)",
        },
        notes=[
            f"dispatch step alone (median dispatches/s): store {only_c:,.0f}, per-host loop {only_b:,.0f},"
            f" ratio {only_c / only_b:.1f}x",
            f"frontier loaded through add_urls/set_priorities in {load_s:.1f} s (not timed)",
        ],
    )


def main() -> None:
    settings = SchedulerSettings()
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=200_000, help="Queued URLs in the frontier.")
    parser.add_argument("--hosts", type=int, default=2_000, help="Hosts they are spread over.")
    parser.add_argument("--rounds", type=int, default=60, help="Dispatch rounds per run.")
    parser.add_argument(
        "--room",
        type=int,
        default=min(settings.dispatch_batch, settings.max_in_flight),
        help="Most URLs per round (default: the shipped dispatch batch and in-flight budget).",
    )
    add_postgres_options(parser)
    args = parser.parse_args()
    result = asyncio.run(measure(args.urls, args.hosts, args.rounds, args.room, args.repeat, args.fast))
    report(result, args.json)


if __name__ == "__main__":
    main()

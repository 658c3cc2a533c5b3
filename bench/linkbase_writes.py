"""Links per second the link base writes: its batched path against one statement per row.

Contender: the service's own path, ``build_batch`` then ``LinkStore.write`` (one
transaction per consumed batch, every statement taking whole columns as arrays).
Baseline: the obvious way, one ``INSERT ... ON CONFLICT`` per host, per URL and per link,
in one transaction per page, with the same normaliser and the same upsert semantics.

Both write the same generated batches (page-links messages) into their own fresh, migrated
database on a throwaway PostgreSQL server, durable by default (``--fast`` turns fsync off).
Half of each page's links point to the host's navigation pages, seen again and again; the
other half are new URLs. Time covers building the rows and writing them, not the setup.

    .venv/bin/python -m bench.linkbase_writes [--rounds 4 --pages 500 --links 50] [--fast] [--json]
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bench.harness import (
    REPO,
    Comparison,
    add_postgres_options,
    base_parser,
    fresh_database,
    interleaved,
    report,
    throwaway_postgres,
)
from libs.common.db.migrations import apply_migrations
from libs.common.db.pool import Database
from libs.common.db.settings import DatabaseSettings
from libs.common.kafka.consumer import Record
from libs.common.topics import PAGE_LINKS
from libs.common.urls import registered_domain
from libs.common.wire import messages as pb
from libs.localinfra import LocalPostgres
from services.linkbase.batch import build_batch
from services.linkbase.rows import resolve
from services.linkbase.store import LinkStore

MIGRATIONS = REPO / "services" / "linkbase" / "migrations"
FETCHED_AT_MS = 1_700_000_000_000
HOSTS = 97

Batches = list[list[Record[Any]]]


def page_record(url: str, targets: list[str], *, depth: int = 1, offset: int = 0) -> Record[Any]:
    """A consumed page-links message: ``url`` links to every target, as an internal link."""
    links = [pb.Link(url=t, anchor=f"to {t}", link_class=pb.LINK_CLASS_INTERNAL) for t in targets]
    msg = pb.PageLinks(url=url, depth=depth, links=links, fetched_at_ms=FETCHED_AT_MS)
    return Record(PAGE_LINKS, 0, offset, "", msg, FETCHED_AT_MS, None, None)


def build_workload(rounds: int, pages_per_batch: int, links_per_page: int) -> Batches:
    """``rounds`` batches of ``pages_per_batch`` pages; half of each page's links are new URLs."""
    batches: Batches = []
    for r in range(rounds):
        records = []
        for p in range(pages_per_batch):
            host = f"h{(r * pages_per_batch + p) % HOSTS}.test"
            targets = [f"http://{host}/nav/{i}" for i in range(links_per_page // 2)]
            targets += [f"http://{host}/r{r}/p{p}/l{i}" for i in range(links_per_page - links_per_page // 2)]
            records.append(page_record(f"http://{host}/r{r}/page{p}", targets, offset=p))
        batches.append(records)
    return batches


def count_links(batches: Batches) -> int:
    return sum(len(record.value.links) for records in batches for record in records)


# -- the baseline: one statement per row, one transaction per page -----------------------------

_HOST = (
    "INSERT INTO linkbase.hosts (host_id, host, registered_domain) VALUES (%s, %s, %s)"
    " ON CONFLICT DO NOTHING"
)
_PAGE = """
INSERT INTO linkbase.urls AS u (url_fp, url, host_id, depth, fetched, fetched_at, announce_state)
VALUES (%s, %s, %s, %s, true, to_timestamp(%s / 1000.0), 2)
ON CONFLICT (host_id, url_fp) DO UPDATE SET fetched = true, announce_state = 2,
    depth = LEAST(u.depth, excluded.depth), fetched_at = GREATEST(u.fetched_at, excluded.fetched_at)
"""
_TARGET = """
INSERT INTO linkbase.urls AS u (url_fp, url, host_id, depth, discovered_from_host_id, discovered_from_fp,
                                announce_state)
VALUES (%s, %s, %s, %s, %s, %s, 1)
ON CONFLICT (host_id, url_fp) DO UPDATE SET
    depth = LEAST(u.depth, excluded.depth),
    discovered_from_fp = CASE WHEN excluded.depth < u.depth THEN excluded.discovered_from_fp
                              ELSE u.discovered_from_fp END,
    announce_state = GREATEST(u.announce_state, excluded.announce_state)
WHERE excluded.depth < u.depth OR u.depth IS NULL OR excluded.announce_state > u.announce_state
"""
_LINK = """
INSERT INTO linkbase.links AS l (source_host_id, source_fp, target_fp, target_host_id, anchor, link_class, nofollow)
VALUES (%s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (source_host_id, source_fp, target_fp) DO UPDATE SET
    anchor = excluded.anchor, link_class = excluded.link_class, nofollow = excluded.nofollow
WHERE (l.anchor, l.link_class, l.nofollow) IS DISTINCT FROM (excluded.anchor, excluded.link_class, excluded.nofollow)
"""


async def write_row_by_row(db: Database, records: list[Record[Any]]) -> None:
    """The baseline: each page in its own transaction, one upsert per host, URL and link."""
    for record in records:
        msg: pb.PageLinks = record.value
        page = resolve(msg.url)
        async with db.transaction() as conn:
            hosts = {page.host_id}
            await conn.execute(_HOST, (page.host_id, page.host, registered_domain(page.host)))
            await conn.execute(_PAGE, (page.fp, page.url, page.host_id, msg.depth, msg.fetched_at_ms))
            for link in msg.links:
                target = resolve(link.url)
                if target.host_id not in hosts:
                    hosts.add(target.host_id)
                    await conn.execute(_HOST, (target.host_id, target.host, registered_domain(target.host)))
                await conn.execute(_TARGET, (target.fp, target.url, target.host_id, msg.depth + 1, page.host_id,
                                             page.fp))
                await conn.execute(_LINK, (page.host_id, page.fp, target.fp, target.host_id, link.anchor,
                                           link.link_class, link.nofollow))


async def write_batched(db: Database, records: list[Record[Any]]) -> None:
    """The contender: the link base's own path for one consumed batch."""
    await LinkStore(db).write(build_batch(records))


# -- one timed run ----------------------------------------------------------------------------


async def _counts(db: Database) -> tuple[int, int]:
    async with db.connection() as conn:
        cur = await conn.execute("SELECT (SELECT count(*) FROM linkbase.links), (SELECT count(*) FROM linkbase.urls)")
        row = await cur.fetchone()
        assert row is not None
        return int(row[0]), int(row[1])


def make_run(
    server: LocalPostgres,
    batches: Batches,
    write: Callable[[Database, list[Record[Any]]], Awaitable[None]],
    label: str,
) -> Callable[[], Awaitable[float]]:
    """A run: a fresh migrated database, every batch written through ``write``; returns links/s."""
    links = count_links(batches)
    pages = sum(len(records) for records in batches)
    run_no = 0

    async def run() -> float:
        nonlocal run_no
        run_no += 1
        with fresh_database(server, f"bench_linkbase_{label}_{run_no}") as dsn:
            apply_migrations(dsn, "linkbase", MIGRATIONS)
            db = Database(DatabaseSettings(dsn=dsn), f"bench-{label}")
            await db.start()
            try:
                resolve.cache_clear()  # both pay for normalising every URL once
                started = time.perf_counter()
                for records in batches:
                    await write(db, records)
                elapsed = time.perf_counter() - started
                stored_links, stored_urls = await _counts(db)
            finally:
                await db.stop()
        if stored_links != links or stored_urls < pages:
            raise AssertionError(f"{label} stored {stored_links} links and {stored_urls} URLs, expected {links}")
        return links / elapsed

    return run


async def measure(rounds: int, pages: int, links: int, repeat: int, fast: bool) -> Comparison:
    batches = build_workload(rounds, pages, links)
    with throwaway_postgres(fast) as server:
        warmup = build_workload(1, 20, links)  # first connections, catalog caches, code paths
        await make_run(server, warmup, write_batched, "warmup_batched")()
        await make_run(server, warmup, write_row_by_row, "warmup_rowwise")()
        contender, baseline = await interleaved(
            make_run(server, batches, write_batched, "batched"),
            make_run(server, batches, write_row_by_row, "rowwise"),
            repeat,
            ("LinkStore.write (batched)", "row by row, one transaction per page"),
        )
    return Comparison(
        benchmark="linkbase_writes",
        unit="links/s",
        contender=contender,
        baseline=baseline,
        workload={
            "batches": rounds,
            "pages_per_batch": pages,
            "links_per_page": links,
            "links_per_run": count_links(batches),
            "new_url_share": 0.5,
            "postgres": "fsync off" if fast else "durable (fsync on)",
        },
    )


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4, help="Batches (one transaction each in the contender).")
    parser.add_argument("--pages", type=int, default=500, help="Pages per batch.")
    parser.add_argument("--links", type=int, default=50, help="Links per page.")
    add_postgres_options(parser)
    args = parser.parse_args()
    result = asyncio.run(measure(args.rounds, args.pages, args.links, args.repeat, args.fast))
    report(result, args.json)


if __name__ == "__main__":
    main()

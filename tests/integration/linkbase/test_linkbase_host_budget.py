"""The per-host URL budget on the real PostgreSQL server, and trapped links from the extractor."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import psycopg
import pytest

from libs.common.db.migrations import apply_migrations
from libs.common.db.pool import Database
from libs.common.kafka.consumer import Record
from libs.common.topics import PAGE_LINKS
from libs.common.wire import messages as pb
from services.linkbase.batch import build_batch
from services.linkbase.host_budget import TRAP_REASON, HostBudget
from services.linkbase.main import MIGRATIONS
from services.linkbase.rows import host_id, resolve
from services.linkbase.store import LinkStore

pytestmark = pytest.mark.integration


def _page(url: str, *links: pb.Link, depth: int = 0) -> Record[Any]:
    msg = pb.PageLinks(url=url, depth=depth, links=list(links), fetched_at_ms=1_700_000_000_000)
    return Record(PAGE_LINKS, 0, 0, "", msg, 1_700_000_000_000, None, None)


def _links(*urls: str) -> list[pb.Link]:
    return [pb.Link(url=u, anchor=u.rsplit("/", 1)[-1], link_class=pb.LINK_CLASS_INTERNAL) for u in urls]


async def _rows(db: Database, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    async with db.connection() as conn:
        cur = await conn.execute(sql, args)
        return await cur.fetchall()


async def _urls_of(db: Database, host: str) -> set[str]:
    return {r[0] for r in await _rows(db, "SELECT url FROM linkbase.urls WHERE host_id = %s", host_id(host))}


async def _bad(db: Database) -> dict[str, str]:
    return {href: reason for href, reason in await _rows(db, "SELECT href, reason FROM linkbase.bad_links")}


async def _count(db: Database, host: str) -> int:
    rows = await _rows(db, "SELECT urls FROM linkbase.host_url_counts WHERE host_id = %s", host_id(host))
    return int(rows[0][0]) if rows else 0


async def test_new_urls_over_a_hosts_budget_become_bad_links(linkbase_db: Database) -> None:
    store = LinkStore(linkbase_db, HostBudget(4))
    home = "http://shop.test/"
    first = [f"http://shop.test/item/{i}" for i in range(3)]
    await store.write(build_batch([_page(home, *_links(*first, "http://other.test/"))]))
    assert await _urls_of(linkbase_db, "shop.test") == {home, *first}
    assert await _count(linkbase_db, "shop.test") == 3  # link targets count (the seed page entered otherwise)

    more = [f"http://shop.test/item/{i}" for i in range(3, 8)]
    deeper = "http://shop.test/item/0"
    await store.write(build_batch([_page(deeper, *_links(*more, home), depth=1)]))
    urls = await _urls_of(linkbase_db, "shop.test")
    assert len(urls - {home, *first}) == 1  # one new URL fits the budget of 4
    assert await _count(linkbase_db, "shop.test") == 4
    bad = await _bad(linkbase_db)
    trapped = {href for href, reason in bad.items() if reason == TRAP_REASON}
    assert len(trapped) == 4 and trapped <= set(more)
    pending = await _rows(linkbase_db, "SELECT url FROM linkbase.urls WHERE announce_state = 1")
    assert not trapped & {r[0] for r in pending}

    # Links to URLs the host already has are never affected; a redelivery changes nothing.
    again = build_batch([_page(deeper, *_links(*more, home), depth=1)])
    await store.write(again)
    assert await _count(linkbase_db, "shop.test") == 4
    assert await _bad(linkbase_db) == bad
    links = await _rows(
        linkbase_db, "SELECT count(*) FROM linkbase.links WHERE source_fp = %s", next(iter(again.pages))
    )
    assert links[0][0] == 2  # the one new URL that fitted, and the home page


async def test_budget_off_counts_but_never_traps(linkbase_db: Database) -> None:
    store = LinkStore(linkbase_db, HostBudget(0))
    urls = [f"http://big.test/p{i}" for i in range(20)]
    await store.write(build_batch([_page("http://big.test/", *_links(*urls))]))
    assert len(await _urls_of(linkbase_db, "big.test")) == 21
    assert await _count(linkbase_db, "big.test") == 20
    assert await _bad(linkbase_db) == {}


async def test_extractor_trap_verdicts_are_bad_links_with_the_rule(linkbase_db: Database) -> None:
    store = LinkStore(linkbase_db)
    trapped = pb.Link(
        url="http://cal.test/calendar/2091/01/",
        anchor="Next month",
        link_class=pb.LINK_CLASS_BAD,
        bad_reason="trap:calendar",
        trap_rule="calendar",
        context="May 2091 Next month",
        source_tag="a",
    )
    await store.write(build_batch([_page("http://cal.test/", trapped, *_links("http://cal.test/about"))]))
    assert await _bad(linkbase_db) == {"http://cal.test/calendar/2091/01/": "trap:calendar"}
    assert await _urls_of(linkbase_db, "cal.test") == {"http://cal.test/", "http://cal.test/about"}


def test_the_budget_migration_counts_the_urls_already_known(fresh_db: str, tmp_path: Path) -> None:
    before = tmp_path / "before"
    before.mkdir()
    for migration in sorted(MIGRATIONS.glob("*.sql")):
        if migration.name < "0004":
            shutil.copy(migration, before)
    apply_migrations(fresh_db, "linkbase", before)
    refs = [resolve(u) for u in ("http://a.test/", "http://a.test/x", "http://b.test/")]
    with psycopg.connect(fresh_db) as conn:
        for ref in refs:
            conn.execute(
                "INSERT INTO linkbase.urls (host_id, url_fp, url) VALUES (%s, %s, %s)", (ref.host_id, ref.fp, ref.url)
            )
    apply_migrations(fresh_db, "linkbase", MIGRATIONS)
    with psycopg.connect(fresh_db) as conn:
        counts = conn.execute("SELECT host_id, urls FROM linkbase.host_url_counts").fetchall()
    assert sorted(counts) == sorted([(host_id("a.test"), 2), (host_id("b.test"), 1)])

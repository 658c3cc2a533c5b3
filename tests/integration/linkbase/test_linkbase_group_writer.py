"""Host groups written side by side on the real PostgreSQL server: the rows one writer writes, idempotent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from google.protobuf.message import Message

from libs.common.db.migrations import apply_migrations
from libs.common.db.pool import Database
from libs.common.db.settings import DatabaseSettings
from libs.common.kafka.consumer import Record
from libs.common.topics import DOCUMENTS, DUPLICATE_VERDICTS, FETCH_OUTCOMES, PAGE_LINKS, Topic
from libs.common.wire import messages as pb
from libs.localinfra import create_database, drop_database, dsn_with_database
from services.linkbase.batch import build_batch
from services.linkbase.handler import write_pipelined
from services.linkbase.main import MIGRATIONS
from services.linkbase.rows import host_group, host_id
from services.linkbase.store import LinkStore

pytestmark = pytest.mark.integration

# Every table the writer fills, in key order; first_seen columns (the transaction's time) are left out.
QUERIES = {
    "hosts": "SELECT host_id, host, registered_domain, pages_fetched, available, availability_at"
             " FROM linkbase.hosts ORDER BY host_id",
    "urls": "SELECT host_id, url_fp, url, depth, discovered_from_host_id, discovered_from_fp, announce_state, fetched,"
            " last_fetch_status, http_status, fetched_at, links_at, title, content_fp, dup_state, duplicate_of,"
            " near_duplicate_of, similarity FROM linkbase.urls ORDER BY host_id, url_fp",
    "links": "SELECT * FROM linkbase.links ORDER BY source_host_id, source_fp, target_fp",
    "bad_links": "SELECT * FROM linkbase.bad_links ORDER BY source_host_id, source_fp, href_hash",
    "fetch_history": "SELECT * FROM linkbase.fetch_history ORDER BY host_id, url_fp, request_id",
    "page_versions": "SELECT * FROM linkbase.page_versions ORDER BY host_id, url_fp, fetched_at",
    "publish_history": "SELECT * FROM linkbase.publish_history ORDER BY hub_host_id, hub_fp, fetched_at, child_fp",
    "path_stats": "SELECT * FROM linkbase.path_stats ORDER BY host_id, path_key",
    "host_url_counts": "SELECT * FROM linkbase.host_url_counts ORDER BY host_id",
}
HOSTS = [f"h{n}.test" for n in range(8)]
T0 = 1_700_000_000_000


def _record(topic: Topic, value: Message, offset: int) -> Record[Any]:
    return Record(topic, 0, offset, "", value, T0, None, None)


def _page(url: str, targets: list[str], depth: int, at: int, offset: int) -> Record[Any]:
    links = [pb.Link(url=t, anchor=f"to {t}", link_class=pb.LINK_CLASS_INTERNAL) for t in targets]
    return _record(PAGE_LINKS, pb.PageLinks(url=url, depth=depth, links=links, fetched_at_ms=at), offset)


def crawl(fetch: int) -> list[Record[Any]]:
    """A batch of pages on eight hosts linking across hosts (so targets cross host groups) at several depths.

    The same URLs are linked from pages of different depths and hosts (depths and discovering
    pages must resolve as one writer resolves them), one page appears twice (the later wins),
    and ``fetch`` 1 re-fetches pages of fetch 0 with changed links (history, deleted links).
    """
    records: list[Record[Any]] = []
    at = T0 + fetch * 600_000
    for n, host in enumerate(HOSTS):
        for p in range(3):
            targets = [f"http://{HOSTS[(n + k) % len(HOSTS)]}/shared/{(p + fetch) % 4}" for k in range(4)]
            targets += [f"http://{host}/own/{p}/{fetch}", "javascript:void(0)"]
            records.append(_page(f"http://{host}/p/{p}", targets, depth=p % 2 + n % 2 * fetch, at=at,
                                 offset=len(records)))
    records.append(_page("http://h0.test/p/0", ["http://h5.test/late"], depth=0, at=at + 1, offset=len(records)))
    records.append(_record(DOCUMENTS, pb.Document(url="http://h3.test/p/1", title="T", content_fingerprint="c",
                                                  fetched_at_ms=at), len(records)))
    records.append(_record(DUPLICATE_VERDICTS, pb.DuplicateVerdict(url="http://h4.test/p/2", duplicate=True,
                                                                   duplicate_of="http://h3.test/p/1"), len(records)))
    records.append(_record(FETCH_OUTCOMES, pb.FetchOutcome(request_id=f"r{fetch}", url="http://h6.test/",
                                                           status=pb.FETCH_STATUS_OK, http_status=200,
                                                           fetched_at_ms=at), len(records)))
    return records


async def _snapshot(db: Database) -> dict[str, list[tuple[Any, ...]]]:
    out: dict[str, list[tuple[Any, ...]]] = {}
    async with db.connection() as conn:
        for table, query in QUERIES.items():
            cur = await conn.execute(query)
            out[table] = await cur.fetchall()
    return out


@pytest.fixture
async def second_db(pg_admin_dsn: str, fresh_db: str) -> AsyncIterator[Database]:
    """Another migrated database on the same server, for the one-writer reference."""
    name = fresh_db.rsplit("/", 1)[-1].split("?")[0] + "_ref"
    create_database(pg_admin_dsn, name)
    dsn = dsn_with_database(pg_admin_dsn, name)
    apply_migrations(dsn, "linkbase", MIGRATIONS)
    db = Database(DatabaseSettings(dsn=dsn), "linkbase-reference")
    await db.start()
    try:
        yield db
    finally:
        await db.stop()
        drop_database(pg_admin_dsn, name)


def test_the_crawl_spans_host_groups() -> None:
    assert {host_group(host_id(h), 2) for h in HOSTS} == {0, 1}
    assert {host_group(host_id(h), 3) for h in HOSTS} == {0, 1, 2}


@pytest.mark.parametrize(("groups", "chunk"), [(2, 12), (3, 5)])
async def test_host_groups_write_the_rows_one_writer_writes(
    linkbase_db: Database, second_db: Database, groups: int, chunk: int
) -> None:
    one, grouped = LinkStore(second_db), LinkStore(linkbase_db)
    for fetch in (0, 1):
        await write_pipelined(one, crawl(fetch), chunk=chunk, groups=1)
        await write_pipelined(grouped, crawl(fetch), chunk=chunk, groups=groups)
        assert await _snapshot(linkbase_db) == await _snapshot(second_db)
    snapshot = await _snapshot(linkbase_db)
    assert snapshot["publish_history"] and snapshot["bad_links"] and snapshot["page_versions"]
    assert len({row[0] for row in snapshot["links"]}) == len(HOSTS)


async def test_a_batch_redelivered_to_host_groups_changes_nothing(linkbase_db: Database) -> None:
    store = LinkStore(linkbase_db)
    await write_pipelined(store, crawl(0), chunk=4, groups=2)
    first = await _snapshot(linkbase_db)
    await write_pipelined(LinkStore(linkbase_db), crawl(0), chunk=7, groups=2)  # a restarted process
    assert await _snapshot(linkbase_db) == first


async def test_a_target_the_link_cannot_change_is_not_locked(linkbase_db: Database) -> None:
    await LinkStore(linkbase_db).write(build_batch([_page("http://h0.test/", ["http://h1.test/nav"], depth=0, at=T0,
                                                          offset=0)]))
    later = LinkStore(linkbase_db)  # another process: its known-target cache has not seen the URL
    await later.write(build_batch([_page("http://h2.test/deep", ["http://h1.test/nav"], depth=5, at=T0, offset=1)]))
    async with linkbase_db.connection() as conn:
        cur = await conn.execute("SELECT depth, xmax::text FROM linkbase.urls WHERE url = 'http://h1.test/nav'")
        assert await cur.fetchall() == [(1, "0")]  # ON CONFLICT DO UPDATE would have left its lock in xmax



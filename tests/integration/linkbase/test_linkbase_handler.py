"""The handler's pipelined chunks on the real PostgreSQL server: same rows as one transaction, poison isolated."""

from __future__ import annotations

from typing import Any

import pytest

from libs.common.db.pool import Database
from libs.common.errors import PoisonMessage
from libs.common.kafka.consumer import Record
from libs.common.topics import PAGE_LINKS
from libs.common.wire import messages as pb
from services.linkbase.handler import write_pipelined
from services.linkbase.store import LinkStore

pytestmark = pytest.mark.integration


def _page(n: int, url: str = "") -> Record[Any]:
    links = [pb.Link(url=f"http://a.test/{n}/{i}", link_class=pb.LINK_CLASS_INTERNAL) for i in range(3)]
    return Record(PAGE_LINKS, 0, n, "", pb.PageLinks(url=url or f"http://a.test/page/{n}", links=links,
                                                     fetched_at_ms=1), 0, None, None)


async def _count(db: Database) -> int:
    async with db.connection() as conn:
        cur = await conn.execute("SELECT count(*) FROM linkbase.links")
        row = await cur.fetchone()
        assert row is not None
        return int(row[0])


async def test_chunks_write_every_page_and_a_rerun_changes_nothing(linkbase_db: Database) -> None:
    store = LinkStore(linkbase_db)
    records = [_page(n) for n in range(10)]
    await write_pipelined(store, records, chunk=3)
    assert await _count(linkbase_db) == 30
    await write_pipelined(store, records, chunk=4)
    assert await _count(linkbase_db) == 30


async def test_a_poison_message_stops_before_its_chunk_is_written(linkbase_db: Database) -> None:
    store = LinkStore(linkbase_db)
    records = [_page(0), _page(1), _page(2, url="mailto:nobody")]
    with pytest.raises(PoisonMessage):
        await write_pipelined(store, records, chunk=2)
    assert await _count(linkbase_db) == 6


async def test_chunks_built_ahead_in_slices_stop_at_the_poison(linkbase_db: Database) -> None:
    store = LinkStore(linkbase_db)
    records = [_page(n, url="mailto:nobody" if n == 20 else "") for n in range(40)]
    with pytest.raises(PoisonMessage):
        await write_pipelined(store, records, chunk=12, groups=2)
    assert await _count(linkbase_db) == 12 * 3  # chunk 0 only: the poison is in chunk 1, chunks 2 and 3 never come
    await write_pipelined(store, [r for r in records if r.offset != 20], chunk=12, groups=2)
    assert await _count(linkbase_db) == 39 * 3

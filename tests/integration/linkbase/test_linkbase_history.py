"""Publish-time history, per-path duplicate counts and the "seen" test on the real PostgreSQL server."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf.message import Message

from libs.common.db.pool import Database
from libs.common.kafka.consumer import Record
from libs.common.topics import DOCUMENTS, DUPLICATE_VERDICTS, PAGE_LINKS, Topic
from libs.common.wire import messages as pb
from services.linkbase.batch import build_batch
from services.linkbase.history_reader import HistoryReader
from services.linkbase.rows import resolve
from services.linkbase.seen import seen
from services.linkbase.store import LinkStore

pytestmark = pytest.mark.integration

T0 = 1_700_000_000_000


def _record(topic: Topic, value: Message) -> Record[Any]:
    return Record(topic, 0, 0, "", value, T0, None, None)


def _hub(fetched_at_ms: int, *children: str) -> Record[Any]:
    links = [pb.Link(url=c, link_class=pb.LINK_CLASS_INTERNAL) for c in ("http://news.test/about", *children)]
    return _record(PAGE_LINKS, pb.PageLinks(url="http://news.test/", depth=0, links=links,
                                            fetched_at_ms=fetched_at_ms))


def _verdict(url: str, kind: pb.DuplicateKind.ValueType = pb.DUPLICATE_KIND_UNSPECIFIED, of: str = "") -> Record[Any]:
    return _record(DUPLICATE_VERDICTS, pb.DuplicateVerdict(url=url, duplicate=bool(of), duplicate_of=of, kind=kind,
                                                           similarity=0.8 if of else 0.0))


async def _rows(db: Database, sql: str) -> list[tuple[Any, ...]]:
    async with db.connection() as conn:
        cur = await conn.execute(sql)
        return await cur.fetchall()


async def test_refetches_record_the_children_they_revealed(linkbase_db: Database) -> None:
    store = LinkStore(linkbase_db)
    assert await store.write(build_batch([_hub(T0, "http://news.test/a")])) == []  # first fetch: no T_last
    revealed = await store.write(build_batch([_hub(T0 + 600_000, "http://news.test/a", "http://news.test/b")]))
    assert [r.child_fp for r in revealed] == [resolve("http://news.test/b").fp]
    assert await store.write(build_batch([_hub(T0 + 600_000, "http://news.test/a", "http://news.test/b")])) == []
    await store.write(build_batch([_hub(T0 + 600_000 + 7_200_000, "http://news.test/c")]))
    await store.write(build_batch([_record(DOCUMENTS, pb.Document(
        url="http://news.test/b", content_fingerprint="b", published_at_ms=T0 + 100_000, fetched_at_ms=T0 + 1))]))

    history = await HistoryReader(linkbase_db).history(resolve("http://news.test/"), 100)
    got = [(r.child_url, r.previous_fetch_at_ms, r.fetched_at_ms, r.inferred_at_ms, r.child_published_at_ms)
           for r in history.revealed]
    assert got == [
        ("http://news.test/c", T0 + 600_000, T0 + 7_800_000, 0, 0),
        ("http://news.test/b", T0, T0 + 600_000, T0 + 300_000, T0 + 100_000),
    ]
    child = await HistoryReader(linkbase_db).history(resolve("http://news.test/b"), 100)
    assert [r.hub_url for r in child.revealed_by] == ["http://news.test/"]
    assert [v.content_fingerprint for v in child.versions] == ["b"]


async def test_verdicts_count_judged_pages_and_duplicates_per_path_once(linkbase_db: Database) -> None:
    store = LinkStore(linkbase_db)
    batch = [_verdict("http://a.test/cal/1"), _verdict("http://a.test/cal/2", pb.DUPLICATE_KIND_NEAR,
                                                        "http://a.test/cal/1"),
             _verdict("http://a.test/cal/3", pb.DUPLICATE_KIND_EXACT, "http://a.test/cal/1"),
             _verdict("http://a.test/page")]
    await store.write(build_batch(batch))
    await store.write(build_batch(batch))  # a redelivery counts nothing twice
    assert await _rows(linkbase_db, "SELECT path_key, judged, duplicates FROM linkbase.path_stats ORDER BY 1") == [
        ("a.test/", 1, 0), ("a.test/cal", 3, 2)]
    await store.write(build_batch([_verdict("http://a.test/cal/2")]))  # judged again: now unique
    assert await _rows(linkbase_db, "SELECT judged, duplicates FROM linkbase.path_stats WHERE path_key = 'a.test/cal'"
                       ) == [(3, 1)]
    states = await _rows(linkbase_db, "SELECT url, dup_state, duplicate_of, near_duplicate_of, similarity"
                                      " FROM linkbase.urls ORDER BY url")
    assert [s[:4] for s in states] == [
        ("http://a.test/cal/1", 0, None, None), ("http://a.test/cal/2", 0, None, None),
        ("http://a.test/cal/3", 1, "http://a.test/cal/1", None), ("http://a.test/page", 0, None, None)]


async def test_the_seen_test_answers_known_urls_only(linkbase_db: Database) -> None:
    await LinkStore(linkbase_db).write(build_batch([_hub(T0, "http://news.test/a")]))
    refs = [resolve(u) for u in ("http://news.test/", "http://news.test/a", "http://news.test/never")]
    async with linkbase_db.connection() as conn:
        assert await seen(conn, refs) == {refs[0].fp, refs[1].fp}
        assert await seen(conn, []) == set()

"""The link base's writes on the real PostgreSQL server: idempotence, depth, re-crawls, counters."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import psycopg
import pytest
from google.protobuf.message import Message

from libs.common.db.migrations import apply_migrations, discover
from libs.common.db.pool import Database
from libs.common.kafka.consumer import Record
from libs.common.topics import DOCUMENTS, DUPLICATE_VERDICTS, FETCH_OUTCOMES, PAGE_LINKS, Topic
from libs.common.urls import url_fingerprint
from libs.common.wire import messages as pb
from services.linkbase.batch import build_batch
from services.linkbase.main import MIGRATIONS
from services.linkbase.rows import host_id, resolve
from services.linkbase.store import LinkStore

pytestmark = pytest.mark.integration

TABLES = {
    "hosts": "host_id",
    "urls": "host_id, url_fp",
    "links": "source_host_id, source_fp, target_fp",
    "bad_links": "source_host_id, source_fp, href_hash",
    "fetch_history": "host_id, url_fp, request_id",
    "page_versions": "host_id, url_fp, fetched_at",
    "publish_history": "hub_host_id, hub_fp, fetched_at, child_fp",
    "path_stats": "host_id, path_key",
}


def _record(topic: Topic, value: Message, offset: int = 0) -> Record[Any]:
    return Record(topic, 0, offset, "", value, 1_700_000_000_000, None, None)


def _page(url: str, targets: list[str], *, depth: int = 0, nofollow: bool = False) -> Record[Any]:
    links = [pb.Link(url=t, anchor=f"to {t}", link_class=pb.LINK_CLASS_INTERNAL) for t in targets]
    return _record(PAGE_LINKS, pb.PageLinks(url=url, depth=depth, nofollow=nofollow, links=links,
                                            fetched_at_ms=1_700_000_000_000))


async def _write(store: LinkStore, *records: Record[Any]) -> None:
    await store.write(build_batch(list(records)))


async def _snapshot(db: Database) -> dict[str, list[tuple[Any, ...]]]:
    out: dict[str, list[tuple[Any, ...]]] = {}
    async with db.connection() as conn:
        for table, key in TABLES.items():
            cur = await conn.execute(f"SELECT * FROM linkbase.{table} ORDER BY {key}")
            out[table] = await cur.fetchall()
    return out


async def _url(db: Database, url: str) -> dict[str, Any]:
    async with db.connection() as conn:
        cur = await conn.execute(
            "SELECT depth, announce_state, fetched, discovered_from_fp, title, content_fp, duplicate_of,"
            " last_fetch_status, http_status, language, dup_state, near_duplicate_of, similarity"
            " FROM linkbase.urls WHERE url_fp = %s",
            (url_fingerprint(url),),
        )
        row = await cur.fetchone()
        assert row is not None, url
        assert cur.description is not None
        return dict(zip([c.name for c in cur.description], row, strict=True))


async def _host(db: Database, host: str) -> tuple[int, bool]:
    async with db.connection() as conn:
        cur = await conn.execute("SELECT pages_fetched, available FROM linkbase.hosts WHERE host_id = %s",
                                 (host_id(host),))
        row = await cur.fetchone()
        assert row is not None, host
        return row[0], row[1]


def test_migrations_apply_to_an_empty_database_and_are_idempotent(fresh_db: str) -> None:
    assert apply_migrations(fresh_db, "linkbase", MIGRATIONS) == [m.version for m in discover(MIGRATIONS)]
    assert apply_migrations(fresh_db, "linkbase", MIGRATIONS) == []


async def test_a_redelivered_batch_changes_nothing(linkbase_db: Database) -> None:
    store = LinkStore(linkbase_db)
    records = [
        _page("http://a.test/", ["http://a.test/x", "http://b.test/", "javascript:x()"]),
        _record(DOCUMENTS, pb.Document(url="http://a.test/", title="A", content_fingerprint="c1",
                                       fetched_at_ms=1_700_000_000_000)),
        _record(DUPLICATE_VERDICTS, pb.DuplicateVerdict(url="http://a.test/x", duplicate=True,
                                                        duplicate_of="http://a.test/")),
        _record(FETCH_OUTCOMES, pb.FetchOutcome(request_id="r1", url="http://a.test/", status=pb.FETCH_STATUS_OK,
                                                http_status=200, fetched_at_ms=1_700_000_000_000)),
    ]
    await _write(store, *records)
    first = await _snapshot(linkbase_db)
    await _write(store, *records)
    assert await _snapshot(linkbase_db) == first
    assert len(first["links"]) == 2 and len(first["bad_links"]) == 1
    assert await _host(linkbase_db, "a.test") == (2, True)  # the page, and /x (a verdict implies a fetch)


async def test_depth_is_the_fewest_hops_and_followable_targets_become_pending(linkbase_db: Database) -> None:
    store = LinkStore(linkbase_db)
    await _write(store, _page("http://a.test/deep", ["http://a.test/t"], depth=4, nofollow=True))
    target = await _url(linkbase_db, "http://a.test/t")
    assert (target["depth"], target["announce_state"]) == (5, 0)
    await _write(store, _page("http://a.test/", ["http://a.test/t"], depth=0))
    target = await _url(linkbase_db, "http://a.test/t")
    assert (target["depth"], target["announce_state"]) == (1, 1)
    assert target["discovered_from_fp"] == url_fingerprint("http://a.test/")
    await _write(store, _page("http://a.test/deep", ["http://a.test/t"], depth=9))
    assert (await _url(linkbase_db, "http://a.test/t"))["depth"] == 1
    page = await _url(linkbase_db, "http://a.test/deep")
    assert (page["depth"], page["announce_state"], page["fetched"]) == (4, 2, True)


async def test_a_recrawl_replaces_the_out_links(linkbase_db: Database) -> None:
    store = LinkStore(linkbase_db)
    await _write(store, _page("http://a.test/", ["http://a.test/1", "http://a.test/2", "mailto:x@a.test"]))
    await _write(store, _page("http://a.test/", ["http://a.test/2", "http://a.test/3"]))
    snapshot = await _snapshot(linkbase_db)
    targets = {row[2] for row in snapshot["links"]}
    assert targets == {url_fingerprint("http://a.test/2"), url_fingerprint("http://a.test/3")}
    assert snapshot["bad_links"] == []
    assert await _host(linkbase_db, "a.test") == (1, True)


async def test_a_page_marked_fetched_before_its_links_arrive_has_no_stored_links_to_look_up(
    linkbase_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its document and outcome mark it fetched first; its links still go straight in, and a re-fetch replaces them."""
    store = LinkStore(linkbase_db)
    looked_up: list[list[str]] = []
    replace_stale = store._replace_stale

    async def spy(conn: Any, pages: Any, links: Any, bad: Any) -> dict[int, set[int]]:
        looked_up.append([p.ref.url for p in pages])
        return await replace_stale(conn, pages, links, bad)

    monkeypatch.setattr(store, "_replace_stale", spy)
    await _write(store, _record(DOCUMENTS, pb.Document(url="http://a.test/", content_fingerprint="c1",
                                                       fetched_at_ms=1_700_000_000_000)),
                 _record(FETCH_OUTCOMES, pb.FetchOutcome(request_id="r1", url="http://a.test/", http_status=200,
                                                         status=pb.FETCH_STATUS_OK)))
    assert (await _url(linkbase_db, "http://a.test/"))["fetched"]
    await _write(store, _page("http://a.test/", ["http://a.test/1", "http://a.test/2"]))
    assert looked_up == []
    await _write(store, _page("http://a.test/", ["http://a.test/2", "http://a.test/3"]))
    assert looked_up == [["http://a.test/"]]
    targets = {row[2] for row in (await _snapshot(linkbase_db))["links"]}
    assert targets == {url_fingerprint("http://a.test/2"), url_fingerprint("http://a.test/3")}


async def test_links_stored_without_a_fetch_time_are_still_replaced_by_a_re_fetch(linkbase_db: Database) -> None:
    store = LinkStore(linkbase_db)
    undated = pb.PageLinks(url="http://a.test/", links=[pb.Link(url=t, link_class=pb.LINK_CLASS_INTERNAL)
                                                       for t in ("http://a.test/1", "http://a.test/2")])
    await _write(store, _record(PAGE_LINKS, undated))
    for _ in range(2):  # the second time the same links again: nothing to add, nothing removed
        await _write(store, _page("http://a.test/", ["http://a.test/2", "http://a.test/3"]))
    targets = {row[2] for row in (await _snapshot(linkbase_db))["links"]}
    assert targets == {url_fingerprint("http://a.test/2"), url_fingerprint("http://a.test/3")}


async def test_fetch_outcomes_history_status_and_host_availability(linkbase_db: Database) -> None:
    store = LinkStore(linkbase_db)
    await _write(
        store,
        _record(FETCH_OUTCOMES, pb.FetchOutcome(request_id="r1", url="http://down.test/", attempt=1,
                                                status=pb.FETCH_STATUS_NETWORK_ERROR, error="refused",
                                                fetched_at_ms=1_700_000_000_000)),
        _record(FETCH_OUTCOMES, pb.FetchOutcome(request_id="r2", url="http://up.test/p", attempt=1,
                                                status=pb.FETCH_STATUS_OK, http_status=200,
                                                fetched_at_ms=1_700_000_000_000)),
    )
    assert await _host(linkbase_db, "down.test") == (0, False)
    assert await _host(linkbase_db, "up.test") == (1, True)
    down = await _url(linkbase_db, "http://down.test/")
    assert (down["fetched"], down["last_fetch_status"], down["announce_state"]) == (
        False, pb.FETCH_STATUS_NETWORK_ERROR, 2)
    await _write(
        store,
        _record(FETCH_OUTCOMES, pb.FetchOutcome(request_id="r3", url="http://down.test/", attempt=2,
                                                status=pb.FETCH_STATUS_OK, http_status=200,
                                                fetched_at_ms=1_700_000_060_000)),
    )
    assert await _host(linkbase_db, "down.test") == (1, True)
    assert (await _url(linkbase_db, "http://down.test/"))["http_status"] == 200
    assert len((await _snapshot(linkbase_db))["fetch_history"]) == 3


async def test_documents_and_verdicts_annotate_urls(linkbase_db: Database) -> None:
    store = LinkStore(linkbase_db)
    await _write(
        store,
        _record(DOCUMENTS, pb.Document(url="http://a.test/p", title="Title", content_fingerprint="fp1",
                                       language="en", published_at_ms=1_600_000_000_000,
                                       fetched_at_ms=1_700_000_000_000)),
        _record(DUPLICATE_VERDICTS, pb.DuplicateVerdict(url="http://a.test/p", duplicate=True,
                                                        duplicate_of="http://a.test/")),
    )
    row = await _url(linkbase_db, "http://a.test/p")
    assert (row["title"], row["content_fp"], row["language"], row["duplicate_of"], row["fetched"]) == (
        "Title", "fp1", "en", "http://a.test/", True)
    await _write(store, _record(DUPLICATE_VERDICTS, pb.DuplicateVerdict(url="http://a.test/p", duplicate=False)))
    assert (await _url(linkbase_db, "http://a.test/p"))["duplicate_of"] is None
    assert len((await _snapshot(linkbase_db))["page_versions"]) == 1


def test_the_partitioning_migration_moves_existing_rows(fresh_db: str, tmp_path: Path) -> None:
    first = tmp_path / "first"
    first.mkdir()
    shutil.copy(MIGRATIONS / "0001_init.sql", first)
    apply_migrations(fresh_db, "linkbase", first)
    a, x, b = (resolve(u) for u in ("http://a.test/", "http://a.test/x", "http://b.test/"))
    with psycopg.connect(fresh_db) as conn:
        conn.execute("INSERT INTO linkbase.hosts (host_id, host, registered_domain) VALUES (%s, 'a.test', 'a.test'),"
                     " (%s, 'b.test', 'b.test')", (a.host_id, b.host_id))
        conn.execute("INSERT INTO linkbase.urls (url_fp, url, host_id, depth, fetched, fetched_at, duplicate_of,"
                     " discovered_from_fp) VALUES (%s, %s, %s, 0, true, now(), NULL, NULL),"
                     " (%s, %s, %s, 1, false, NULL, 'http://a.test/', %s), (%s, %s, %s, 1, false, NULL, NULL, %s)",
                     (a.fp, a.url, a.host_id, x.fp, x.url, x.host_id, a.fp, b.fp, b.url, b.host_id, a.fp))
        conn.execute("INSERT INTO linkbase.links VALUES (%s, %s, 'X', 1, false), (%s, %s, 'B', 2, false)",
                     (a.fp, x.fp, a.fp, b.fp))
        conn.execute("INSERT INTO linkbase.bad_links VALUES (%s, 5, 'mailto:x', 'scheme', '')", (a.fp,))
        conn.execute("INSERT INTO linkbase.fetch_history VALUES (%s, 'r1', 1, 1, 200, now(), 5, NULL)", (a.fp,))
    apply_migrations(fresh_db, "linkbase", MIGRATIONS)
    with psycopg.connect(fresh_db) as conn:
        links = conn.execute("SELECT source_host_id, source_fp, target_fp, target_host_id, anchor FROM linkbase.links"
                             " ORDER BY anchor").fetchall()
        assert links == [(a.host_id, a.fp, b.fp, b.host_id, "B"), (a.host_id, a.fp, x.fp, x.host_id, "X")]
        urls = conn.execute("SELECT url, host_id, discovered_from_host_id, dup_state, links_at IS NOT NULL"
                            " FROM linkbase.urls ORDER BY url").fetchall()
        assert urls == [(a.url, a.host_id, None, None, True), (x.url, x.host_id, a.host_id, 1, False),
                        (b.url, b.host_id, a.host_id, None, False)]
        assert conn.execute("SELECT count(*) FROM linkbase.bad_links").fetchone() == (1,)
        assert conn.execute("SELECT count(*) FROM linkbase.fetch_history").fetchone() == (1,)
        kinds = conn.execute("SELECT relkind FROM pg_class WHERE oid = 'linkbase.links'::regclass").fetchone()
        assert kinds == ("p",)

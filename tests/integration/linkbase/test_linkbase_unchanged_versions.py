"""A 304 outcome on the real PostgreSQL server: a content version equal to the page's last one, once."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf.message import Message

from libs.common.db.pool import Database
from libs.common.kafka.consumer import Record
from libs.common.topics import DOCUMENTS, FETCH_OUTCOMES, Topic
from libs.common.urls import url_fingerprint
from libs.common.wire import messages as pb
from services.linkbase.batch import build_batch
from services.linkbase.store import LinkStore

pytestmark = pytest.mark.integration

T0_MS = 1_700_000_000_000
PAGE = "http://a.test/p"


def _record(topic: Topic, value: Message) -> Record[Any]:
    return Record(topic, 0, 0, "", value, T0_MS, None, None)


def _not_modified(request_id: str, at_ms: int, url: str = PAGE) -> Record[Any]:
    return _record(FETCH_OUTCOMES, pb.FetchOutcome(request_id=request_id, url=url, attempt=1, http_status=304,
                                                   status=pb.FETCH_STATUS_NOT_MODIFIED, fetched_at_ms=at_ms))


async def _versions(db: Database, url: str = PAGE) -> list[tuple[int, str]]:
    async with db.connection() as conn:
        cur = await conn.execute(
            "SELECT (extract(epoch FROM fetched_at) * 1000)::bigint, content_fp FROM linkbase.page_versions"
            " WHERE url_fp = %s ORDER BY fetched_at", (url_fingerprint(url),))
        return [(int(ms), str(fp)) for ms, fp in await cur.fetchall()]


async def test_a_304_repeats_the_last_version_once_and_only_for_a_known_content(linkbase_db: Database) -> None:
    store = LinkStore(linkbase_db)
    await store.write(build_batch([_record(DOCUMENTS, pb.Document(url=PAGE, content_fingerprint="fp1",
                                                                  fetched_at_ms=T0_MS))]))
    batch = [_not_modified("r2", T0_MS + 60_000), _not_modified("r9", T0_MS + 60_000, "http://a.test/unknown")]
    await store.write(build_batch(batch))
    await store.write(build_batch(batch))  # redelivered: nothing twice
    assert await _versions(linkbase_db) == [(T0_MS, "fp1"), (T0_MS + 60_000, "fp1")]
    assert await _versions(linkbase_db, "http://a.test/unknown") == []  # no capture to be equal to


async def test_a_304_of_a_home_page_says_its_host_is_up(linkbase_db: Database) -> None:
    store = LinkStore(linkbase_db)
    down = pb.FetchOutcome(request_id="r1", url="http://b.test/", attempt=1, status=pb.FETCH_STATUS_NETWORK_ERROR,
                           fetched_at_ms=T0_MS)
    await store.write(build_batch([_record(FETCH_OUTCOMES, down), _not_modified("r2", T0_MS + 1, "http://b.test/")]))
    async with linkbase_db.connection() as conn:
        cur = await conn.execute("SELECT h.available, u.fetched, u.last_fetch_status FROM linkbase.hosts h"
                                 " JOIN linkbase.urls u USING (host_id) WHERE h.host = 'b.test'")
        assert await cur.fetchone() == (True, True, pb.FETCH_STATUS_NOT_MODIFIED)

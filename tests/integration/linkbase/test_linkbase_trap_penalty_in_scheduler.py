"""The trap signal end to end on the real database: linkbase verdict counts -> discovery -> scheduler priority.

The linkbase counts duplicates per path and announces a path's penalty with its URLs; the
scheduler's frontier multiplies the priority of the path's URLs by 1 - penalty, also for URLs
of the path it had already queued.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from libs.common.db.migrations import apply_migrations
from libs.common.db.pool import Database
from libs.common.db.settings import DatabaseSettings
from libs.common.kafka.consumer import Record
from libs.common.topics import DISCOVERED_URLS, DUPLICATE_VERDICTS, FETCH_REQUESTS, IMPORTANCE_UPDATES
from libs.common.wire import messages as pb
from services.linkbase.batch import build_batch
from services.linkbase.rows import resolve
from services.linkbase.store import LinkStore
from services.linkbase.trap_signal import TrapPolicy, path_penalties
from services.scheduler.frontier.store import FrontierStore
from services.scheduler.handlers import SchedulerHandler
from services.scheduler.settings import SchedulerSettings

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]


def _record(topic: Any, value: Any) -> Record[Any]:
    return Record(topic, 0, 0, "", value, 1_700_000_000_000, None, None)


async def _priorities(db: Database) -> dict[str, tuple[float, float, str | None]]:
    async with db.connection() as conn:
        cur = await conn.execute("SELECT url, priority, path_penalty, path_key FROM scheduler.frontier")
        return {url: (priority, penalty, path) for url, priority, penalty, path in await cur.fetchall()}


async def test_a_duplicate_heavy_path_lowers_its_urls_priority(linkbase_db: Database, fresh_db: str) -> None:
    apply_migrations(fresh_db, "scheduler", REPO / "services" / "scheduler" / "migrations")
    policy = TrapPolicy(min_judged=4, duplicate_share=0.5, penalty=0.9)
    store = LinkStore(linkbase_db)
    verdicts = [pb.DuplicateVerdict(url=f"http://a.test/cal/{i}", duplicate=i > 0, duplicate_of="http://a.test/cal/0",
                                    kind=pb.DUPLICATE_KIND_NEAR if i > 0 else pb.DUPLICATE_KIND_UNSPECIFIED)
                for i in range(4)]
    await store.write(build_batch([_record(DUPLICATE_VERDICTS, v) for v in verdicts]))
    trap, healthy = resolve("http://a.test/cal/9"), resolve("http://a.test/news/1")
    async with linkbase_db.connection() as conn:
        penalties = await path_penalties(conn, policy, [(trap.host_id, "a.test/cal"), (healthy.host_id, "a.test/news")])
    assert penalties == {(trap.host_id, "a.test/cal"): 0.9}

    db = Database(DatabaseSettings(dsn=fresh_db), "scheduler-trap-test")
    await db.start()
    try:
        handler = SchedulerHandler(FrontierStore(db, FETCH_REQUESTS.partitions), SchedulerSettings())
        await handler.discovered_urls([
            _record(DISCOVERED_URLS, pb.DiscoveredUrl(url="http://a.test/cal/8", depth=1, path_key="a.test/cal")),
            _record(DISCOVERED_URLS, pb.DiscoveredUrl(url="http://a.test/news/1", depth=1, path_key="a.test/news")),
        ])
        await handler.importance_updates([
            _record(IMPORTANCE_UPDATES, pb.ImportanceUpdates(host="a.test", updates=[
                pb.ImportanceUpdate(url="http://a.test/cal/8", cash=1.0),
                pb.ImportanceUpdate(url="http://a.test/news/1", cash=1.0)])),
        ])
        before = await _priorities(db)
        assert before["http://a.test/cal/8"][:2] == before["http://a.test/news/1"][:2] == (1.0, 0.0)
        # A later discovery under the path carries its penalty: queued URLs of the path follow.
        await handler.discovered_urls([_record(DISCOVERED_URLS, pb.DiscoveredUrl(
            url="http://a.test/cal/9", depth=1, path_key="a.test/cal", path_penalty=penalties[(trap.host_id,
                                                                                                "a.test/cal")]))])
        await handler.importance_updates([_record(IMPORTANCE_UPDATES, pb.ImportanceUpdates(
            host="a.test", updates=[pb.ImportanceUpdate(url="http://a.test/cal/9", cash=2.0)]))])
        after = await _priorities(db)
        assert after["http://a.test/cal/8"][:2] == pytest.approx((0.1, 0.9))
        assert after["http://a.test/cal/9"][:2] == pytest.approx((0.2, 0.9))
        assert after["http://a.test/news/1"] == (1.0, 0.0, "a.test/news")
        # The penalty goes away when the path recovers; a redelivered discovery changes nothing.
        recovered = pb.DiscoveredUrl(url="http://a.test/cal/10", depth=1, path_key="a.test/cal", path_penalty=0.0)
        await handler.discovered_urls([_record(DISCOVERED_URLS, recovered)])
        await handler.discovered_urls([_record(DISCOVERED_URLS, recovered)])
        final = await _priorities(db)
        assert final["http://a.test/cal/8"][:2] == pytest.approx((1.0, 0.0))
        assert final["http://a.test/cal/9"][:2] == pytest.approx((2.0, 0.0))
    finally:
        await db.stop()

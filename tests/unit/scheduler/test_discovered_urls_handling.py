"""Discovered URLs become new frontier rows with what their discovery says, bounded."""

from __future__ import annotations

import asyncio
from typing import Any

from libs.common.followed_links import MAX_COUNTED_OCCURRENCES
from libs.common.kafka.consumer import Record
from libs.common.topics import DISCOVERED_URLS
from libs.common.wire import messages as pb
from services.scheduler.frontier.store import NewUrl
from services.scheduler.handlers import SchedulerHandler
from services.scheduler.settings import SchedulerSettings


class _Store:
    def __init__(self) -> None:
        self.added: list[NewUrl] = []

    async def add_urls(self, rows: list[NewUrl]) -> int:
        self.added.extend(rows)
        return len(rows)


def _discovered(url: str, occurrences: int) -> Record[Any]:
    msg = pb.DiscoveredUrl(url=url, depth=1, discovered_from="http://a.test/", occurrences=occurrences)
    return Record(DISCOVERED_URLS, 0, 0, "a.test", msg, 1_000, b"a.test", msg.SerializeToString())


def test_a_discovery_keeps_how_often_its_page_links_it_at_least_once_and_at_most_the_bound() -> None:
    store = _Store()
    handler = SchedulerHandler(store, SchedulerSettings())  # type: ignore[arg-type]
    asyncio.run(handler.discovered_urls([_discovered("http://a.test/twice", 2), _discovered("http://a.test/seed", 0),
                                         _discovered("http://a.test/spam", 1_000_000)]))
    assert [(row.url, row.occurrences) for row in store.added] == [
        ("http://a.test/twice", 2), ("http://a.test/seed", 1), ("http://a.test/spam", MAX_COUNTED_OCCURRENCES)]

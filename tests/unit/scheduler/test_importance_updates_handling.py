"""Importance updates come one message per host and round: every entry sets its page's priority."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from libs.common.errors import PoisonMessage
from libs.common.kafka.consumer import Record
from libs.common.topics import IMPORTANCE_UPDATES
from libs.common.url_keys import normalized_fingerprint
from libs.common.wire import messages as pb
from services.scheduler.frontier.priority import crawl_priority
from services.scheduler.frontier.store import Priority
from services.scheduler.handlers import SchedulerHandler
from services.scheduler.settings import SchedulerSettings


class _Store:
    def __init__(self) -> None:
        self.priorities: list[Priority] = []

    async def set_priorities(self, rows: list[Priority]) -> None:
        self.priorities.extend(rows)


def _updates(host: str, *pages: tuple[str, float]) -> Record[Any]:
    msg = pb.ImportanceUpdates(host=host, updates=[pb.ImportanceUpdate(url=u, host=host, cash=c) for u, c in pages])
    return Record(IMPORTANCE_UPDATES, 0, 0, host, msg, 1_000, host.encode(), msg.SerializeToString())


def test_every_entry_of_every_message_sets_its_pages_priority_in_order() -> None:
    store = _Store()
    handler = SchedulerHandler(store, SchedulerSettings())  # type: ignore[arg-type]
    asyncio.run(handler.importance_updates([_updates("a.test", ("http://a.test/1", 0.5), ("HTTP://A.test:80/2", 0.25)),
                                            _updates("b.test", ("http://b.test/", 2.0)), _updates("c.test"),
                                            _updates("a.test", ("http://a.test/1", 0.75))]))
    assert [(p.url, p.host, p.url_fp, p.priority) for p in store.priorities] == [
        (u, h, normalized_fingerprint(u), crawl_priority(c)) for u, h, c in (
            ("http://a.test/1", "a.test", 0.5), ("http://a.test/2", "a.test", 0.25), ("http://b.test/", "b.test", 2.0),
            ("http://a.test/1", "a.test", 0.75))]


def test_an_entry_whose_url_is_not_valid_makes_the_message_poison() -> None:
    store = _Store()
    handler = SchedulerHandler(store, SchedulerSettings())  # type: ignore[arg-type]
    with pytest.raises(PoisonMessage, match="invalid URL"):
        asyncio.run(handler.importance_updates([_updates("a.test", ("http://a.test/1", 0.5),
                                                         ("http://[::1/broken", 1.0))]))
    assert store.priorities == []

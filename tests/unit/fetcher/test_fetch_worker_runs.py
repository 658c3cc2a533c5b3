"""The worker publishes finished fetches in runs, and everything before the producer's flush."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, cast

from google.protobuf.message import Message

from libs.common.topics import FETCH_OUTCOMES, Topic
from libs.common.wire import messages as pb
from services.fetcher.fetch_core import FetchAttempt
from services.fetcher.worker import FetchWorker


class Producer:
    """The part of TopicProducer the worker uses, in memory."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []  # (topic, message): the tests read the outcomes' fields
        self.flushed: list[int] = []  # how many messages had been sent at each flush
        self._hooks: list[Callable[[], None]] = []

    def send(self, topic: Topic, key: str, message: Message) -> None:
        self.sent.append((topic.name, message))

    def before_flush(self, hook: Callable[[], None]) -> None:
        self._hooks.append(hook)

    async def flush(self) -> None:
        for hook in self._hooks:
            hook()
        self.flushed.append(len(self.sent))


class Core:
    async def fetch(self, url: str, min_delay: float = 0.0, validators: object = None) -> FetchAttempt:
        return FetchAttempt(url, "robots_disallowed", None, False, 0.0, "robots.txt disallow")


class Clock:
    def now(self) -> float:
        return 0.0


def _request(n: int) -> pb.FetchRequest:
    return pb.FetchRequest(url=f"http://a.test/{n}", host="a.test", request_id=f"r{n}")


def _worker(producer: Producer, batch: int) -> FetchWorker:
    return FetchWorker(cast(Any, Core()), cast(Any, producer), cast(Any, Clock()), publish_batch=batch,
                       publish_delay=60.0)


async def test_outcomes_wait_for_their_run_and_the_flush_sends_the_rest() -> None:
    producer = Producer()
    worker = _worker(producer, batch=3)
    for n in range(4):
        await worker.handle(_request(n))
    assert [m.request_id for _, m in producer.sent] == ["r0", "r1", "r2"]  # one full run
    await producer.flush()
    assert [m.request_id for _, m in producer.sent] == ["r0", "r1", "r2", "r3"]
    assert producer.flushed == [4]  # sent before the flush, so before any commit
    assert {topic for topic, _ in producer.sent} == {FETCH_OUTCOMES.name}


async def test_a_batch_of_one_publishes_each_fetch_as_it_ends() -> None:
    producer = Producer()
    worker = _worker(producer, batch=1)
    await worker.handle(_request(0))
    assert [m.request_id for _, m in producer.sent] == ["r0"]


class HoldingCore(Core):
    """Records the holds the worker asks for."""

    def __init__(self) -> None:
        self.holds: list[tuple[str, float | None]] = []

    async def politeness_key(self, host: str) -> str:
        return host

    def take_key(self, key: str, not_before: float | None = None, last_fetch_end: float | None = None) -> None:
        self.holds.append((key, not_before))


async def test_a_stamped_request_holds_its_host_until_the_stamp() -> None:
    core = HoldingCore()
    worker = FetchWorker(cast(Any, core), cast(Any, Producer()), cast(Any, Clock()))
    await worker.handle(_request(0))
    assert core.holds == []  # no stamp: the host's own gap only
    stamped = _request(1)
    stamped.host_not_before_ms = int(time.time() * 1000) + 4000
    await worker.handle(stamped)
    ((key, not_before),) = core.holds
    assert key == "a.test" and not_before is not None and 3.9 < not_before < 4.1  # on the worker's clock (now 0)

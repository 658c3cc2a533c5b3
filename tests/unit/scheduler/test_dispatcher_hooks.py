"""The dispatcher with a crawl goal and a large host, on the real database and broker."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta

import pytest

from libs.common.db.pool import Database
from libs.common.kafka.producer import TopicProducer
from libs.common.kafka.settings import KafkaSettings
from libs.common.settings import load_settings
from libs.common.topics import FETCH_REQUESTS
from libs.common.urls import url_fingerprint, url_host
from libs.common.wire import messages as pb
from libs.localinfra import create_topics
from services.scheduler.admin.pause import PauseFlag
from services.scheduler.bandits.goal_sites import GoalSites
from services.scheduler.dispatcher import Dispatcher
from services.scheduler.frontier.store import FrontierStore, NewUrl, Outcome
from services.scheduler.settings import SchedulerSettings
from tests.topic_reading import first_messages

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


@pytest.fixture
def kafka(kafka_bootstrap: str, unique_name: Callable[[str], str]) -> KafkaSettings:
    settings = KafkaSettings(bootstrap=kafka_bootstrap, topic_prefix=unique_name("t") + ".")
    create_topics(settings.bootstrap, [(settings.topic(FETCH_REQUESTS.name), FETCH_REQUESTS.partitions)])
    return settings


@pytest.fixture
async def producer(kafka: KafkaSettings) -> AsyncIterator[TopicProducer]:
    sender = TopicProducer(kafka, "scheduler-hooks-test")
    await sender.start()
    try:
        yield sender
    finally:
        await sender.stop()


def sent_requests(bootstrap: str, topic: str, count: int) -> dict[str, tuple[str, pb.FetchRequest]]:
    """URL -> key and request of the first ``count`` fetch requests on ``topic`` (reads until they are there)."""
    found: dict[str, tuple[str, pb.FetchRequest]] = {}
    for message in first_messages(bootstrap, topic, FETCH_REQUESTS.partitions, count):
        request = pb.FetchRequest.FromString(message.value() or b"")
        found[request.url] = ((message.key() or b"").decode(), request)
    return found


def requests(bootstrap: str, topic: str, count: int) -> dict[str, str]:
    """URL -> key of the first ``count`` fetch requests on ``topic``."""
    return {url: key for url, (key, _request) in sent_requests(bootstrap, topic, count).items()}


def new(url: str) -> NewUrl:
    return NewUrl(url_fingerprint(url), url, url_host(url), 1)


async def test_the_goal_holds_sites_and_a_large_host_is_keyed_by_group(
    frontier: FrontierStore, goal_sites: GoalSites, scheduler_db: Database, producer: TopicProducer,
    kafka: KafkaSettings,
) -> None:
    settings = load_settings(
        SchedulerSettings,
        {},
        bandit_policy="r2",
        bandit_sites=("a.example", "b.example"),
        bandit_step=1,
        bandit_parallel=1,
        large_hosts=("big.example",),
        large_host_groups=2,
    )
    dispatcher = Dispatcher(frontier, producer, settings, lambda: set(range(FETCH_REQUESTS.partitions)), goal_sites,
                            PauseFlag(scheduler_db))
    await dispatcher.prepare()
    urls = [
        "http://a.example/",
        "http://b.example/",
        "http://c.example/",
        *[f"http://big.example/news/{i}" for i in range(6)],
        *[f"http://big.example/sport/{i}" for i in range(4)],
    ]
    await frontier.add_urls([new(u) for u in urls])
    assert await dispatcher.dispatch_once() == 3  # a (R2 starts with the first site), c, and one page of big
    sent = requests(kafka.bootstrap, kafka.topic(FETCH_REQUESTS.name), 3)
    assert sent.pop("http://a.example/") == "a.example"
    assert sent.pop("http://c.example/") == "c.example"  # not a goal site: dispatched as usual
    ((url, key),) = sent.items()
    assert key == ("big.example#0" if "/news/" in url else "big.example#1")  # news (6 URLs) and sport balanced
    assert "http://b.example/" not in sent


async def test_a_request_handed_out_ahead_of_its_hosts_gap_carries_the_hosts_next_allowed_time(
    frontier: FrontierStore, goal_sites: GoalSites, scheduler_db: Database, producer: TopicProducer,
    kafka: KafkaSettings,
) -> None:
    # A fetcher that has just taken the host's partition over never saw its last fetch: the stamp is all it knows.
    settings = load_settings(SchedulerSettings, {}, dispatch_ahead=5.0)
    frontier = FrontierStore(scheduler_db, FETCH_REQUESTS.partitions, dispatch_ahead=5.0)
    dispatcher = Dispatcher(frontier, producer, settings, lambda: set(range(FETCH_REQUESTS.partitions)), goal_sites,
                            PauseFlag(scheduler_db))
    await dispatcher.prepare()
    await frontier.add_urls([new("http://slow.example/a"), new("http://slow.example/b")])
    assert await dispatcher.dispatch_once() == 1
    ((first_url, (_key, first)),) = sent_requests(kafka.bootstrap, kafka.topic(FETCH_REQUESTS.name), 1).items()
    assert first.host_not_before_ms == 0  # the host is free now: nothing to wait for
    next_allowed = datetime.now(UTC) + timedelta(seconds=3)
    outcome = Outcome(url_fingerprint(first_url), first.request_id, "slow.example", "fetched", 200, "FETCH_STATUS_OK",
                      "", datetime.now(UTC), next_allowed)
    await frontier.apply_outcomes([outcome], 3, 60.0)
    assert await dispatcher.dispatch_once() == 1  # 3 s before the gap ends, within the 5 s ahead
    sent = sent_requests(kafka.bootstrap, kafka.topic(FETCH_REQUESTS.name), 2)
    _key, second = sent["http://slow.example/b" if first_url.endswith("/a") else "http://slow.example/a"]
    assert second.host_not_before_ms == int(next_allowed.timestamp() * 1000)

"""Requests in flight that never reached the fetch-request topic are queued again; sent ones are left alone."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka import Producer

from libs.common.db.pool import Database
from libs.common.kafka.settings import KafkaSettings
from libs.common.topics import FETCH_REQUESTS
from libs.common.urls import url_fingerprint, url_host
from libs.common.wire import messages as pb
from libs.localinfra import create_topics
from services.scheduler.frontier.store import FrontierStore, NewUrl
from services.scheduler.recovery.unsent_requests import UnsentRequests

pytestmark = pytest.mark.integration
ALL = list(range(FETCH_REQUESTS.partitions))


async def statuses(db: Database) -> dict[str, tuple[str, str | None]]:
    async with db.connection() as conn:
        cur = await conn.execute("SELECT url, status, last_error FROM scheduler.frontier")
        return {url: (status, error) for url, status, error in await cur.fetchall()}


async def test_requests_never_sent_are_queued_again_and_sent_ones_stay_in_flight(
    frontier: FrontierStore, scheduler_db: Database, kafka_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    kafka = KafkaSettings(bootstrap=kafka_bootstrap, topic_prefix=unique_name("unsent") + ".")
    topic = kafka.topic(FETCH_REQUESTS.name)
    create_topics(kafka_bootstrap, [(topic, FETCH_REQUESTS.partitions)])
    urls = [f"http://h{i}.example/" for i in range(4)]
    await frontier.add_urls([NewUrl(url_fingerprint(u), u, url_host(u), 0, "seed") for u in urls])
    taken = {d.url: d for d in await frontier.dispatch(10, ALL)}
    assert set(taken) == set(urls)
    sent, lost, young = urls[0], urls[1:3], urls[3]
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    request = pb.FetchRequest(request_id=taken[sent].request_id, url=sent, host=url_host(sent))
    producer.produce(topic, key=url_host(sent).encode(), value=request.SerializeToString())
    producer.produce(topic, key=b"x", value=b"\xff" * 12)  # garbage on the topic is skipped
    assert producer.flush(10) == 0
    async with scheduler_db.transaction() as conn:
        await conn.execute("UPDATE scheduler.frontier SET dispatched_at = now() - interval '1 minute'"
                           " WHERE url <> %s", (young,))

    unsent = UnsentRequests(scheduler_db, kafka, age=10)
    assert await unsent.requeue(ALL) == 2
    after = await statuses(scheduler_db)
    assert after[sent][0] == "in_flight"
    assert after[young][0] == "in_flight"  # not in flight long enough to be judged
    assert all(after[u] == ("queued", "never sent: queued again") for u in lost)
    assert await unsent.requeue(ALL) == 0
    assert await unsent.requeue([]) == 0
    async with scheduler_db.connection() as conn:
        cur = await conn.execute("SELECT host, in_flight FROM scheduler.hosts")
        in_flight = dict(await cur.fetchall())
    assert in_flight == {url_host(u): (0 if u in lost else 1) for u in urls}
    again = {d.url for d in await frontier.dispatch(10, ALL)}
    assert again == set(lost)


async def test_nothing_is_queued_again_when_only_partitions_of_other_replicas_have_old_requests(
    frontier: FrontierStore, scheduler_db: Database, kafka_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    kafka = KafkaSettings(bootstrap=kafka_bootstrap, topic_prefix=unique_name("unsent") + ".")
    create_topics(kafka_bootstrap, [(kafka.topic(FETCH_REQUESTS.name), FETCH_REQUESTS.partitions)])
    url = "http://only.example/"
    await frontier.add_urls([NewUrl(url_fingerprint(url), url, url_host(url), 0, "seed")])
    assert len(await frontier.dispatch(10, ALL)) == 1
    async with scheduler_db.transaction() as conn:
        await conn.execute("UPDATE scheduler.frontier SET dispatched_at = now() - interval '1 minute'")
        cur = await conn.execute("SELECT partition FROM scheduler.hosts")
        row = await cur.fetchone()
    assert row is not None
    others = [p for p in ALL if p != row[0]]
    assert await UnsentRequests(scheduler_db, kafka, age=10).requeue(others) == 0
    assert (await statuses(scheduler_db))[url][0] == "in_flight"

"""A partition's next owner finds, on the outcome and result topics, the requests its previous owner finished."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from confluent_kafka import Producer

from libs.common.kafka.partitioner import partition_for
from libs.common.kafka.settings import KafkaSettings
from libs.common.topics import FETCH_OUTCOMES, FETCH_REQUESTS, FETCH_RESULTS
from libs.common.wire import messages as pb
from libs.localinfra import create_topics
from services.fetcher.partitions.finished_requests import FinishedRequests

pytestmark = pytest.mark.integration
HOST = "finished.test"


async def test_requests_with_their_outcome_and_result_on_the_topics_are_finished(
    kafka_bootstrap: str, unique_name: Callable[[str], str]
) -> None:
    kafka = KafkaSettings(bootstrap=kafka_bootstrap, topic_prefix=unique_name("finished") + ".")
    create_topics(kafka_bootstrap, [(kafka.topic(t.name), t.partitions) for t in (FETCH_OUTCOMES, FETCH_RESULTS)])
    partition = partition_for(HOST, FETCH_REQUESTS.partitions)
    produced_ms = int(time.time() * 1000)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "partitioner": "murmur2_random"})

    def send(topic: str, message: pb.FetchOutcome | pb.FetchResult | bytes) -> None:
        value = message if isinstance(message, bytes) else message.SerializeToString()
        producer.produce(kafka.topic(topic), key=HOST.encode(), value=value)

    send(FETCH_RESULTS.name, pb.FetchResult(request_id="fetched", host=HOST))
    send(FETCH_OUTCOMES.name, pb.FetchOutcome(request_id="fetched", host=HOST, status=pb.FETCH_STATUS_OK))
    send(FETCH_OUTCOMES.name, pb.FetchOutcome(request_id="no-result-yet", host=HOST, status=pb.FETCH_STATUS_OK))
    send(FETCH_RESULTS.name, pb.FetchResult(request_id="no-outcome-yet", host=HOST))
    send(FETCH_OUTCOMES.name, pb.FetchOutcome(request_id="blocked", host=HOST,
                                              status=pb.FETCH_STATUS_ROBOTS_DISALLOWED))
    send(FETCH_OUTCOMES.name, b"\xff" * 12)  # garbage is passed over
    assert producer.flush(10) == 0

    finished = FinishedRequests(kafka)
    assigned_ms = produced_ms + 1000
    verdicts = {rid: await finished.finished(partition, assigned_ms, rid, produced_ms)
                for rid in ("fetched", "no-result-yet", "no-outcome-yet", "blocked", "never-seen")}
    assert verdicts == {"fetched": True, "no-result-yet": False, "no-outcome-yet": False, "blocked": True,
                        "never-seen": False}
    other = (partition + 1) % FETCH_REQUESTS.partitions  # another partition holds none of them
    assert not await finished.finished(other, assigned_ms, "fetched", produced_ms)

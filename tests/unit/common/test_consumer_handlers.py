"""A consumer hands each topic's records of a poll to that topic's own handler (no broker: the batch step alone)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from google.protobuf.message import Message

from libs.common.kafka.consumer import Record, TopicConsumer, TopicHandler
from libs.common.kafka.producer import TopicProducer
from libs.common.kafka.settings import KafkaSettings
from libs.common.topics import CASH_TRANSFERS, DOCUMENTS, PAGE_LINKS, SEEDS, Topic
from libs.common.wire import messages as pb

KAFKA = KafkaSettings(bootstrap="127.0.0.1:1", ensure_topics=False)


def _record(topic: Topic, partition: int, offset: int, value: Message) -> Record[Any]:
    return Record(topic, partition, offset, "k", value, 1, b"k", value.SerializeToString())


def _consumer(handlers: Sequence[TopicHandler[Any]]) -> TopicConsumer:
    return TopicConsumer(KAFKA, service="handlers-test", group_id="g", handlers=handlers,
                         producer=TopicProducer(KAFKA, "handlers-test"))


async def test_each_handler_gets_its_own_topic_s_records_in_order_topics_in_the_handlers_order() -> None:
    calls: list[tuple[str, list[tuple[int, int]]]] = []

    async def documents(records: Sequence[Record[pb.Document]]) -> None:
        assert all(isinstance(r.value, pb.Document) for r in records)
        calls.append(("documents", [(r.partition, r.offset) for r in records]))

    async def links(records: Sequence[Record[pb.PageLinks]]) -> None:
        assert all(isinstance(r.value, pb.PageLinks) for r in records)
        calls.append(("links", [(r.partition, r.offset) for r in records]))

    consumer = _consumer([TopicHandler(PAGE_LINKS, links), TopicHandler(DOCUMENTS, documents)])
    await consumer._process_batch([
        _record(DOCUMENTS, 0, 5, pb.Document(url="http://a.test/")),
        _record(PAGE_LINKS, 0, 7, pb.PageLinks(url="http://a.test/")),
        _record(DOCUMENTS, 1, 2, pb.Document(url="http://b.test/")),
        _record(DOCUMENTS, 0, 6, pb.Document(url="http://c.test/")),
        _record(PAGE_LINKS, 3, 1, pb.PageLinks(url="http://d.test/")),
    ])
    assert calls == [("links", [(0, 7), (3, 1)]), ("documents", [(0, 5), (1, 2), (0, 6)])]
    assert consumer.processed == 5


@pytest.mark.parametrize("topics", [[], [DOCUMENTS, DOCUMENTS]])
def test_one_handler_per_topic_and_at_least_one(topics: list[Topic[pb.Document]]) -> None:
    async def documents(records: Sequence[Record[pb.Document]]) -> None:
        pass

    with pytest.raises(ValueError, match="one handler per topic"):
        _consumer([TopicHandler(topic, documents) for topic in topics])


def test_a_service_s_consumer_takes_its_declared_inputs_only_in_their_order() -> None:
    async def links(records: Sequence[Record[pb.PageLinks]]) -> None:
        pass

    async def transfers(records: Sequence[Record[pb.CashTransfer]]) -> None:
        pass

    async def seeds(records: Sequence[Record[pb.Seed]]) -> None:
        pass

    def importance(handlers: Sequence[TopicHandler[Any]]) -> TopicConsumer:
        return TopicConsumer(KAFKA, service="importance", group_id="g", handlers=handlers,
                             producer=TopicProducer(KAFKA, "importance"))

    importance([TopicHandler(SEEDS, seeds), TopicHandler(PAGE_LINKS, links), TopicHandler(CASH_TRANSFERS, transfers)])
    with pytest.raises(ValueError, match="importance consumes"):
        importance([TopicHandler(SEEDS, seeds), TopicHandler(CASH_TRANSFERS, transfers),
                    TopicHandler(PAGE_LINKS, links)])
    with pytest.raises(ValueError, match="importance consumes"):
        importance([TopicHandler(PAGE_LINKS, links), TopicHandler(CASH_TRANSFERS, transfers)])

"""``trawl topics`` run against the real broker, on topics of a prefix no other test uses."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from typer.testing import CliRunner

from cli.main import app
from libs.common.topics import Topic
from libs.localinfra import create_topics


@dataclass
class TopicsCli:
    """The tool pointed at the session's broker and this test's topic prefix."""

    bootstrap: str
    prefix: str

    def name(self, topic: Topic) -> str:
        return self.prefix + topic.name

    def create(self, *topics: Topic) -> None:
        create_topics(self.bootstrap, [(self.name(t), t.partitions) for t in topics])

    def invoke(self, *args: str) -> Any:
        result = CliRunner().invoke(app, ["topics", *args, "--bootstrap", self.bootstrap, "--prefix", self.prefix])
        assert result.exit_code == 0, f"exit {result.exit_code}: {result.output}\n{result.exception!r}"
        return result

    def json(self, *args: str) -> dict[str, Any]:
        payload: dict[str, Any] = json.loads(self.invoke(*args, "--json").stdout)
        return payload

    def produce_one_per_batch(self, topic: Topic, items: list[tuple[str, bytes]]) -> None:
        """Each record in a batch of its own (Tansu reports a wrong high watermark for batches)."""
        producer = Producer({"bootstrap.servers": self.bootstrap, "partitioner": "murmur2_random", "linger.ms": 0})
        for key, value in items:
            producer.produce(self.name(topic), key=key.encode(), value=value)
            assert producer.flush(30) == 0
        del producer

    def produce_batch(self, topic: Topic, items: list[tuple[str, bytes]]) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "partitioner": "murmur2_random",
                             "linger.ms": 200})
        for key, value in items:
            producer.produce(self.name(topic), key=key.encode(), value=value)
        assert producer.flush(30) == 0

    def commit(self, group: str, offsets: dict[tuple[Topic[Any], int], int]) -> None:
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": group, "enable.auto.commit": False})
        try:
            consumer.commit(offsets=[TopicPartition(self.name(t), p, o) for (t, p), o in offsets.items()],
                            asynchronous=False)
        finally:
            consumer.close()

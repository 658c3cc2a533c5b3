"""``trawl topics replay-dead-letters`` on the real broker: chosen letters go back to their source topic."""

from __future__ import annotations

import pytest

from libs.common.kafka.partitioner import partition_for
from libs.common.topics import DEAD_LETTERS, FETCH_REQUESTS
from libs.common.wire import messages as pb
from tests.integration.cli_topics.topics_harness import TopicsCli

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def letter(cli: TopicsCli, source_offset: int, value: bytes, host: str = "a.test", topic: str | None = None,
           service: str = "fetcher") -> tuple[str, bytes]:
    dead = pb.DeadLetter(
        source_topic=topic or cli.name(FETCH_REQUESTS), source_partition=partition_for(host, 12),
        source_offset=source_offset, key=host.encode(), value=value, error="PoisonMessage: test", service=service,
        failed_at_ms=1_700_000_000_000, attempts=3,
    )
    return host, dead.SerializeToString()


def fetch_request(request_id: str, host: str = "a.test") -> bytes:
    return pb.FetchRequest(request_id=request_id, url=f"http://{host}/{request_id}", host=host).SerializeToString()


def source_records(cli: TopicsCli, host: str = "a.test") -> list[dict[str, object]]:
    records: list[dict[str, object]] = cli.json("peek", "trawl.fetch-requests", "--key", host)["records"]
    return records


def test_replay_sends_chosen_letters_back_and_a_dry_run_sends_nothing(cli: TopicsCli) -> None:
    cli.create(FETCH_REQUESTS, DEAD_LETTERS)
    cli.produce_one_per_batch(DEAD_LETTERS, [
        letter(cli, 3, fetch_request("r3")),
        letter(cli, 5, b"\xff\xfe undecodable"),
        letter(cli, 7, fetch_request("r7", "b.test"), host="b.test"),
        letter(cli, 4, fetch_request("r4"), service="extractor"),
        letter(cli, 1, fetch_request("gone"), topic=cli.prefix + "no-such-topic"),
    ])
    chosen = ["replay-dead-letters", "--source-topic", "trawl.fetch-requests", "--from-offset", "2",
              "--to-offset", "6", "--service", "fetcher"]

    dry = cli.json(*chosen, "--dry-run")
    assert [(x["source_offset"], x["action"]) for x in dry["letters"]] == [(3, "would replay"), (5, "skipped")]
    assert dry["letters"][1]["problem"].startswith("undecodable")
    assert source_records(cli) == []

    done = cli.json(*chosen)
    assert done["replayed"] == 1
    (replayed,) = source_records(cli)
    assert replayed["key"] == "a.test"
    assert replayed["partition"] == partition_for("a.test", FETCH_REQUESTS.partitions)
    assert replayed["value"] == {"request_id": "r3", "url": "http://a.test/r3", "host": "a.test"}

    unsound = cli.json(*chosen, "--from-offset", "5", "--include-unsound")
    assert [(x["source_offset"], x["action"]) for x in unsound["letters"]] == [(5, "replayed")]
    assert "undecodable" in source_records(cli)[-1]


def test_a_letter_whose_topic_is_gone_is_never_replayed(cli: TopicsCli) -> None:
    cli.create(FETCH_REQUESTS, DEAD_LETTERS)
    missing = cli.prefix + "no-such-topic"
    cli.produce_one_per_batch(DEAD_LETTERS, [letter(cli, 1, fetch_request("gone"), topic=missing)])
    payload = cli.json("replay-dead-letters", "--include-unsound")
    ((gone),) = payload["letters"]
    assert gone["action"] == "skipped" and "does not exist" in gone["problem"]
    topics = {t["topic"] for t in cli.json("list")["topics"]}
    assert missing not in topics

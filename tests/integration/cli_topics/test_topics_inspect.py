"""``trawl topics list | groups | locate | peek | tail`` on the real broker."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable

import pytest

from libs.common.kafka.partitioner import partition_for
from libs.common.topics import DEAD_LETTERS, FETCH_REQUESTS, PAGE_LINKS
from libs.common.urls import url_key
from libs.common.wire import messages as pb
from tests.integration.cli_topics.topics_harness import TopicsCli

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

HOSTS = ["a.test", "b.test", "c.test", "d.test", "e.test"]


def request(host: str, n: int) -> bytes:
    return pb.FetchRequest(request_id=f"{host}-{n}", url=f"http://{host}/page-{n}", host=host, priority=n / 10,
                           depth=n).SerializeToString()


def test_lag_shown_is_produced_minus_committed(cli: TopicsCli, unique_name: Callable[[str], str]) -> None:
    cli.create(FETCH_REQUESTS)
    items = [(host, request(host, n)) for n in range(4) for host in HOSTS]
    cli.produce_one_per_batch(FETCH_REQUESTS, items)
    produced = Counter(partition_for(host, FETCH_REQUESTS.partitions) for host, _ in items)
    first, *others = sorted(produced)
    committed = {first: 2, **{p: produced[p] for p in others[:1]}}  # partly read, fully read, the rest never
    empty = next(p for p in range(FETCH_REQUESTS.partitions) if p not in produced)
    group = unique_name("g")
    cli.commit(group, {(FETCH_REQUESTS, p): o for p, o in committed.items()} | {(FETCH_REQUESTS, empty): 5})

    (report,) = cli.json("groups", group)["groups"]
    lags = {p["partition"]: p for p in report["partitions"]}
    assert set(lags) == set(range(FETCH_REQUESTS.partitions))
    for partition in produced:
        assert lags[partition]["lag"] == produced[partition] - committed.get(partition, 0), partition
        assert lags[partition]["committed"] == committed.get(partition, -1)
    assert report["lag"] == sum(produced.values()) - sum(committed.values())
    # Committed past the end: shown as 0, flagged, and the tool says so.
    assert lags[empty]["lag"] == 0 and lags[empty]["clamped"] is True
    assert report["clamped_partitions"] == 1
    payload = cli.json("groups", group)
    assert any("clamped to 0 on 1 partition" in note for note in payload["notes"])
    table = cli.invoke("groups", group).stdout
    assert group in table and "(clamped)" in table


def test_lag_after_a_batched_produce_is_read_from_the_data(cli: TopicsCli, unique_name: Callable[[str], str]) -> None:
    cli.create(FETCH_REQUESTS)
    cli.produce_batch(FETCH_REQUESTS, [("a.test", request("a.test", n)) for n in range(10)])
    group = unique_name("g")
    partition = partition_for("a.test", FETCH_REQUESTS.partitions)
    cli.commit(group, {(FETCH_REQUESTS, partition): 3})
    (report,) = cli.json("groups", group)["groups"]
    (row,) = [p for p in report["partitions"] if p["partition"] == partition]
    assert (row["lag"], row["clamped"], row["end_verified"]) == (7, False, True)


def test_list_counts_messages_and_estimates_sizes(cli: TopicsCli) -> None:
    cli.create(FETCH_REQUESTS, DEAD_LETTERS)
    value = request("a.test", 1)
    cli.produce_one_per_batch(FETCH_REQUESTS, [("a.test", value)] * 7)
    topics = {t["topic"]: t for t in cli.json("list", "--declared-only")["topics"]}
    listed = topics[cli.name(FETCH_REQUESTS)]
    assert (listed["messages"], listed["partitions"], listed["message_type"]) == (7, 12, "FetchRequest")
    assert listed["estimated_bytes"] == 7 * (len("a.test") + len(value))
    assert topics[cli.name(DEAD_LETTERS)]["messages"] == 0


def test_a_peeked_message_decodes_to_the_values_produced(cli: TopicsCli) -> None:
    cli.create(FETCH_REQUESTS)
    cli.produce_one_per_batch(FETCH_REQUESTS, [("a.test", request("a.test", 1)), ("b.test", request("b.test", 2)),
                                               ("a.test", b"\xff\xfe this is not protobuf"),
                                               ("a.test", request("a.test", 3))])
    payload = cli.json("peek", "trawl.fetch-requests", "--key", "a.test")
    first, undecodable, third = payload["records"]
    assert first["key"] == "a.test" and first["type"] == "FetchRequest"
    assert first["value"] == {"request_id": "a.test-1", "url": "http://a.test/page-1", "host": "a.test",
                              "priority": 0.1, "depth": 1}
    assert "value" not in undecodable and "not a FetchRequest" in undecodable["undecodable"]
    assert undecodable["value_preview"].startswith("ff fe")
    assert third["value"]["request_id"] == "a.test-3"
    assert [r["offset"] for r in payload["records"]] == sorted(r["offset"] for r in payload["records"])
    assert any("not valid FetchRequest" in note for note in payload["notes"])
    table = cli.invoke("peek", "trawl.fetch-requests", "--key", "a.test").stdout
    assert "UNDECODABLE" in table and "a.test-3" in table

    by_url = cli.json("peek", "trawl.fetch-requests", "--url", "HTTP://b.test/page-2")["records"]
    assert [r["value"]["request_id"] for r in by_url] == ["b.test-2"]
    last = cli.json("peek", "trawl.fetch-requests", "--key", "a.test", "--last", "2")["records"]
    assert [r.get("value", {}).get("request_id") for r in last] == [None, "a.test-3"]  # the undecodable, then r3
    b_partition = partition_for("b.test", FETCH_REQUESTS.partitions)
    assert b_partition != partition_for("a.test", FETCH_REQUESTS.partitions)  # b.test's record is its partition's last
    tail_of_b = cli.json("peek", "trawl.fetch-requests", "--partition", str(b_partition), "--last", "1")["records"]
    assert [r["offset"] for r in tail_of_b] == [max(r["offset"] for r in by_url)]


def test_tail_prints_one_json_line_per_record_and_stops_at_its_limit(cli: TopicsCli) -> None:
    cli.create(FETCH_REQUESTS)
    cli.produce_one_per_batch(FETCH_REQUESTS, [("c.test", request("c.test", n)) for n in range(3)])
    out = cli.invoke("tail", "trawl.fetch-requests", "--key", "c.test", "--offset", "1", "--limit", "2",
                     "--json").stdout
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert [r["value"]["request_id"] for r in lines] == ["c.test-1", "c.test-2"]


def test_locate_gives_each_topics_partition_and_who_reads_it(cli: TopicsCli,
                                                            unique_name: Callable[[str], str]) -> None:
    cli.create(FETCH_REQUESTS, PAGE_LINKS)
    url = "http://d.test/page-1"
    partition = partition_for("d.test", FETCH_REQUESTS.partitions)
    cli.produce_one_per_batch(FETCH_REQUESTS, [("d.test", request("d.test", n)) for n in range(3)])
    group = unique_name("g")
    cli.commit(group, {(FETCH_REQUESTS, partition): 1})
    payload = cli.json("locate", url)
    places = {p["topic"]: p for p in payload["topics"]}
    assert places[cli.name(FETCH_REQUESTS)]["partition"] == partition
    assert places[cli.name(PAGE_LINKS)]["key"] == url_key(url)
    (reader,) = [r for r in payload["consumers"] if r["group"] == group]
    assert (reader["topic"], reader["partition"], reader["committed"], reader["lag"]) == (
        cli.name(FETCH_REQUESTS), partition, 1, 2)

"""Locating a URL: each topic's key for it and the partition Kafka's partitioner gives that key."""

from __future__ import annotations

import pytest

from cli.topics.locate import LargeHosts, key_for_url, locate
from libs.common.kafka.partitioner import partition_for
from libs.common.topics import ALL_TOPICS, DEAD_LETTERS, DOCUMENTS, FETCH_REQUESTS, PAGE_LINKS, SEEDS
from libs.common.urls import InvalidUrl, url_key


def test_every_declared_topic_is_located_by_its_declared_key() -> None:
    url, places = locate("HTTP://WWW.Example.test:80/a?b=1#frag")
    by_topic = {p.topic: p for p in places}
    assert set(by_topic) == {t.name for t in ALL_TOPICS}
    assert url == "http://www.example.test/a?b=1"
    host_place = by_topic[FETCH_REQUESTS.name]
    assert host_place.key == "www.example.test"
    assert host_place.partition == partition_for("www.example.test", FETCH_REQUESTS.partitions)
    assert by_topic[PAGE_LINKS.name].key == url_key(url)
    assert by_topic[PAGE_LINKS.name].partition == partition_for(url_key(url), PAGE_LINKS.partitions)
    assert by_topic[SEEDS.name].key == url_key(url)  # where the importance service was told of it as a seed
    assert by_topic[DOCUMENTS.name].key is None and by_topic[DOCUMENTS.name].partition is None
    assert by_topic[DEAD_LETTERS.name].key is None and by_topic[DEAD_LETTERS.name].partition == 0


def test_partition_counts_on_the_broker_win_over_the_declared_ones() -> None:
    _, places = locate("http://a.test/", {FETCH_REQUESTS.name: 3})
    place = next(p for p in places if p.topic == FETCH_REQUESTS.name)
    assert place.partitions == 3 and place.partition == partition_for("a.test", 3)


def test_keys_follow_the_topic_declaration_and_bad_urls_are_refused() -> None:
    assert key_for_url(FETCH_REQUESTS, "http://a.test/x") == "a.test"
    assert key_for_url(DOCUMENTS, "http://a.test/x") is None
    with pytest.raises(InvalidUrl):
        locate("mailto:someone@a.test")


def test_a_large_hosts_fetch_requests_are_in_one_of_its_groups_partitions() -> None:
    large = LargeHosts.from_env({"TRAWL_SCHEDULER_LARGE_HOSTS": "big.test", "TRAWL_SCHEDULER_LARGE_HOST_GROUPS": "3"})
    _, places = locate("http://big.test/a/b", large=large)
    requests = next(p for p in places if p.topic == FETCH_REQUESTS.name)
    assert requests.partition is None and requests.key == "big.test#<group>"
    assert requests.candidates == tuple(sorted({partition_for(f"big.test#{g}", 12) for g in range(3)}))
    outcomes = next(p for p in places if p.topic == "trawl.fetch-outcomes")
    assert outcomes.key == "big.test"  # fetch results and outcomes stay keyed by host
    assert key_for_url(FETCH_REQUESTS, "http://big.test/a", large) is None  # peek reads every partition
    assert key_for_url(FETCH_REQUESTS, "http://small.test/a", large) == "small.test"
    assert LargeHosts.from_env({"TRAWL_SCHEDULER_LARGE_HOSTS": "big.test", "TRAWL_SCHEDULER_LARGE_HOST_GROUPS": "1"}) \
        == LargeHosts()

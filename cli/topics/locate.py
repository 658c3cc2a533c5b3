"""Where a URL's messages are: each topic's key for the URL and the partition that key maps to.

Keys are declared per topic (``libs/common/topics.py``): host-keyed topics use the URL's
normalised host, URL-keyed ones the URL's fingerprint (``url_key``). Producers use Kafka's
murmur2 partitioner on the key, so the partition is computed, not searched for. A
document is keyed by its content fingerprint, which the URL alone does not give, and a
dead letter keeps its failed message's key: neither has a key for the URL (dead letters
have one partition, so their partition is known all the same).
"""

from __future__ import annotations

from dataclasses import dataclass

from libs.common.kafka.partitioner import partition_for
from libs.common.topics import ALL_TOPICS, Topic
from libs.common.urls import normalize_url, url_host, url_key

HOST_KEY = "host"
URL_KEYS = ("URL fingerprint", "URL fingerprint of the page")


@dataclass(frozen=True)
class Location:
    topic: str  # the declared name
    key_kind: str
    key: str | None  # None: the URL alone does not give this topic's key
    partition: int | None
    partitions: int


def key_for_url(topic: Topic, url: str) -> str | None:
    """The key ``topic``'s messages about ``url`` carry, or None when the URL does not determine it.

    Raises :class:`libs.common.urls.InvalidUrl` for a URL the crawler would not accept.
    """
    if topic.key == HOST_KEY:
        return url_host(url)
    if topic.key in URL_KEYS:
        return url_key(url)
    return None


def locate(url: str, partition_counts: dict[str, int] | None = None) -> tuple[str, list[Location]]:
    """The normalised URL and its location in every declared topic.

    ``partition_counts`` (declared name -> partitions on the broker) wins over the declared
    counts, so that a topic created with another count is located where its data really is.
    """
    normalised = normalize_url(url)
    counts = partition_counts or {}
    out = []
    for topic in ALL_TOPICS:
        partitions = counts.get(topic.name, topic.partitions)
        key = key_for_url(topic, normalised)
        partition = partition_for(key, partitions) if key is not None else (0 if partitions == 1 else None)
        out.append(Location(topic.name, topic.key, key, partition, partitions))
    return normalised, out

"""Where a URL's messages are: each topic's key for the URL and the partition that key maps to.

Keys are declared per topic (``libs/common/topics.py``): host-keyed topics use the URL's
normalised host, URL-keyed ones the URL's fingerprint (``url_key``). Producers use Kafka's
murmur2 partitioner on the key, so the partition is computed, not searched for. A
document is keyed by its content fingerprint, which the URL alone does not give, and a
dead letter keeps its failed message's key: neither has a key for the URL (dead letters
have one partition, so their partition is known all the same).

A host the scheduler splits by path (``TRAWL_SCHEDULER_LARGE_HOSTS``) has its fetch requests
keyed ``host#group``, the group chosen by a plan the scheduler recomputes: its requests are
in one of the groups' partitions, all of which are given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from libs.common.kafka.partitioner import partition_for
from libs.common.settings import load_settings
from libs.common.topics import ALL_TOPICS, FETCH_REQUESTS, Topic
from libs.common.urls import normalize_url, url_host, url_key
from services.scheduler.settings import SchedulerSettings

HOST_KEY = "host"
URL_KEYS = ("URL fingerprint", "URL fingerprint of the page")


@dataclass(frozen=True)
class Location:
    topic: str  # the declared name
    key_kind: str
    key: str | None  # None: the URL alone does not give this topic's key
    partition: int | None
    partitions: int
    candidates: tuple[int, ...] = ()  # a large host's fetch requests: the partitions of its groups


@dataclass(frozen=True)
class LargeHosts:
    """The hosts whose fetch requests the scheduler keys ``host#group``, and how many groups."""

    hosts: frozenset[str] = frozenset()
    groups: int = 1

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> LargeHosts:
        """As the scheduler reads them (``TRAWL_SCHEDULER_LARGE_HOSTS``, ``..._LARGE_HOST_GROUPS``)."""
        settings = load_settings(SchedulerSettings, env)
        if settings.large_host_groups <= 1:
            return cls()
        return cls(frozenset(settings.large_hosts), settings.large_host_groups)

    def splits(self, topic: Topic, host: str) -> bool:
        return topic is FETCH_REQUESTS and host in self.hosts


def key_for_url(topic: Topic, url: str, large: LargeHosts = LargeHosts()) -> str | None:
    """The key ``topic``'s messages about ``url`` carry, or None when the URL does not determine it.

    Raises :class:`libs.common.urls.InvalidUrl` for a URL the crawler would not accept.
    """
    if topic.key == HOST_KEY:
        host = url_host(url)
        return None if large.splits(topic, host) else host
    if topic.key in URL_KEYS:
        return url_key(url)
    return None


def locate(
    url: str, partition_counts: dict[str, int] | None = None, large: LargeHosts = LargeHosts()
) -> tuple[str, list[Location]]:
    """The normalised URL and its location in every declared topic.

    ``partition_counts`` (declared name -> partitions on the broker) wins over the declared
    counts, so that a topic created with another count is located where its data really is.
    """
    normalised = normalize_url(url)
    counts = partition_counts or {}
    out = []
    for topic in ALL_TOPICS:
        partitions = counts.get(topic.name, topic.partitions)
        key = key_for_url(topic, normalised, large)
        if key is None and large.splits(topic, url_host(normalised)):
            host = url_host(normalised)
            groups = tuple(sorted({partition_for(f"{host}#{g}", partitions) for g in range(large.groups)}))
            out.append(Location(topic.name, "host#group (a large host)", f"{host}#<group>", None, partitions, groups))
            continue
        partition = partition_for(key, partitions) if key is not None else (0 if partitions == 1 else None)
        out.append(Location(topic.name, topic.key, key, partition, partitions))
    return normalised, out

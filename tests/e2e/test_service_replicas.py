"""Two of each service, one of each killed mid-crawl; then poison on every topic the services consume.

Two processes of each of the six services share the crawl (one consumer group per
service, both members owning partitions). At a third of the crawl one process of
each service is killed with SIGKILL: the survivor must take over every partition
of its topics (as its log tells: Tansu describes groups without their
members), and the crawl must complete with every page
fetched once, redelivery aside (under 1%), politely.

Once the survivors own everything, undecodable bytes are produced once on each
topic a service consumes: every consumer of the topic must dead-letter it (the
dead-letter topic holds one letter per topic and consumer, with the bytes and the
reason), count it (``trawl_dead_letters_total`` of the survivor) and go on: the
crawl after the poison still completes.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from cli.stack.processes import ServiceProcess, owned_partitions
from libs.common.kafka.codec import ProtoCodec, UndecodableMessage
from libs.common.topics import ALL_TOPICS, BY_NAME, DEAD_LETTERS
from libs.simweb import SimWeb, SimWebConfig
from libs.simweb.request_log import RequestRecord
from tests.conftest import make_unique_name
from tests.e2e.crawl_checks import (
    expected_pages,
    lease_expiries,
    lost_urls,
    politeness_faults,
    refetches,
    requested_pages,
)
from tests.e2e.crawl_harness import CrawlStack, crawl_stack
from tests.e2e.fault_injection import (
    POISON,
    Replicas,
    dead_letter_metric,
    fetched_count,
    inject_poison,
    read_dead_letters,
    wait_fetched,
    wait_until_quiet,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

WEB = SimWebConfig(
    seed=37, hosts=24, pages=1300, host_size_exponent=0.3, hub_host_ratio=0.0,
    crawl_delay_host_ratio=0.1, crawl_delay_values=(0.8,),
)
MIN_DELAY = 0.5
ENV = {
    "TRAWL_FETCHER_MIN_DELAY": str(MIN_DELAY),
    "TRAWL_FETCHER_HANDOFF_DELAY": "1.0",  # covers the largest gap of this web (the Crawl-delay)
    "TRAWL_KAFKA_SESSION_TIMEOUT_MS": "3000",
    "TRAWL_KAFKA_HEARTBEAT_INTERVAL_MS": "500",
    # A request whose outcome never comes is queued again after the lease (its default, 300 s, would
    # outlast the test); the expiries are reported, and a request fetched twice counts against the 1%.
    "TRAWL_SCHEDULER_LEASE_SECONDS": "120",
}
Assignment = dict[str, dict[str, set[tuple[str, int]]]]  # service -> process name -> partitions


@dataclass
class ReplicaCrawl:
    stack: CrawlStack
    replicas: Replicas
    web: SimWeb
    log: list[RequestRecord]
    expected: set[str]
    before_kill: Assignment
    after_kill: Assignment
    takeover_seconds: float  # from the kills until every survivor owned all its service's partitions
    fetched_at_poison: int
    consumed: dict[str, set[str]]  # service -> the topics its group consumes (unprefixed), from the broker


def partitions_of(prefix: str, topics: set[str]) -> set[tuple[str, int]]:
    return {(prefix + name, p) for name in topics for p in range(BY_NAME[name].partitions)}


def consumed_topics(prefix: str, assignment: Assignment) -> dict[str, set[str]]:
    return {service: {topic.removeprefix(prefix) for owned in owners.values() for topic, _ in owned}
            for service, owners in assignment.items()}


def wait_for_assignment(stack: CrawlStack, members: dict[str, list[ServiceProcess]],
                        topics: dict[str, set[str]] | None = None, timeout: float = 120.0) -> Assignment:
    """Waits until the ``members`` of each service each own partitions and, together, all of ``topics``
    (service -> topic names; without it, of the topics they own), as their logs tell."""
    deadline = time.monotonic() + timeout
    while True:
        found = {service: {p.name: owned_partitions(p.log_path) for p in processes}
                 for service, processes in members.items()}
        wanted = topics or consumed_topics(stack.prefix, found)
        ready = all(
            all(owners.values()) and set().union(*owners.values()) == partitions_of(stack.prefix, wanted[service])
            and sum(len(o) for o in owners.values()) == len(partitions_of(stack.prefix, wanted[service]))
            for service, owners in found.items()
        )
        if ready:
            return found
        assert time.monotonic() < deadline, f"partitions not spread over {members}: {found}"
        time.sleep(0.5)


@pytest.fixture(scope="module")
def replica_crawl(
    kafka_bootstrap: str, pg_dsn: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ReplicaCrawl]:
    logs = tmp_path_factory.mktemp("logs")
    prefix = make_unique_name("replicas") + "."
    with crawl_stack(kafka_bootstrap, pg_dsn, prefix, logs, WEB) as (stack, simweb, web):
        for process in stack.processes.values():
            process.env.update(ENV)
        replicas = Replicas(stack, logs)
        try:
            expected = expected_pages(web)
            stack.start()
            for service in stack.processes:
                replicas.start(service, f"{service}.2")
            replicas.wait_serving()
            with stack.admin() as admin:
                admin.add_seeds(web.home_pages())
            pairs = {service: [stack.processes[service], replicas.processes[f"{service}.2"]]
                     for service in stack.processes}
            before = wait_for_assignment(stack, pairs)
            consumed = consumed_topics(stack.prefix, before)
            wait_fetched(stack.dsn, len(expected) // 3)
            killed_at, killed_wall = time.monotonic(), time.time()
            for process in stack.processes.values():
                process.kill()
            after = wait_for_assignment(stack, {s: [replicas.processes[f"{s}.2"]] for s in pairs}, consumed)
            takeover = time.monotonic() - killed_at
            fetched = fetched_count(stack.dsn)
            assert fetched < len(expected) * 3 // 4, "too little of the crawl left to show the consumers go on"
            poisoned = sorted(set().union(*consumed.values()))
            inject_poison(stack.bootstrap, stack.prefix, [BY_NAME[name] for name in poisoned])

            def survivors_alive() -> None:
                for name, process in replicas.processes.items():
                    assert process.alive(), f"{name} exited: see {process.log_path}"

            wait_until_quiet(stack, timeout=300, alive=survivors_alive)
            requests = list(simweb.request_log)
            (logs / "requests.jsonl").write_text("".join(r.to_json() + "\n" for r in requests))
            (logs / "kills.txt").write_text(f"{killed_wall:.3f}\n")
            yield ReplicaCrawl(stack, replicas, web, requests, expected, before, after, takeover, fetched, consumed)
        finally:
            replicas.stop_all()


def test_each_service_ran_two_members_owning_partitions(replica_crawl: ReplicaCrawl) -> None:
    for service, owners in replica_crawl.before_kill.items():
        assert len(owners) == 2 and all(owners.values()), service


def test_the_survivor_takes_over_all_partitions_of_its_service(replica_crawl: ReplicaCrawl) -> None:
    print(f"took over within {replica_crawl.takeover_seconds:.1f}s of the kills")
    for service, owners in replica_crawl.after_kill.items():
        (owned,) = owners.values()
        assert owned == partitions_of(replica_crawl.stack.prefix, replica_crawl.consumed[service]), service
        (survivor,) = owners
        assert replica_crawl.before_kill[service][survivor] < owned, f"{service}: it owned only some before"


def test_every_page_is_fetched_once_redelivery_aside(replica_crawl: ReplicaCrawl) -> None:
    assert requested_pages(replica_crawl.log) == replica_crawl.expected
    again = refetches(replica_crawl.log)
    expired = lease_expiries(replica_crawl.stack, [p.log_path for p in replica_crawl.replicas.processes.values()])
    print(f"refetched {again.extra} of {again.pages} pages ({again.share:.2%}): {again.urls};"
          f" {expired} requests queued again after the lease")
    assert again.share < 0.01
    assert lost_urls(replica_crawl.stack) == {}
    assert politeness_faults(replica_crawl.log, replica_crawl.web, MIN_DELAY) == {}


def wanted_letters(replica_crawl: ReplicaCrawl) -> Counter[tuple[str, str]]:
    """One letter per consumed topic and consumer: (topic name, service)."""
    return Counter((name, service) for service, names in replica_crawl.consumed.items() for name in names)


def test_every_topic_but_the_dead_letters_is_consumed(replica_crawl: ReplicaCrawl) -> None:
    poisoned = set().union(*replica_crawl.consumed.values())
    assert poisoned == {t.name for t in ALL_TOPICS if t is not DEAD_LETTERS}
    for name in poisoned:
        with pytest.raises(UndecodableMessage):
            ProtoCodec(BY_NAME[name].message_type).decode(POISON)


def test_poison_on_every_consumed_topic_is_dead_lettered_by_each_consumer(replica_crawl: ReplicaCrawl) -> None:
    prefix = replica_crawl.stack.prefix
    letters = read_dead_letters(replica_crawl.stack.bootstrap, prefix)
    got = Counter((letter.source_topic.removeprefix(prefix), letter.service) for letter in letters)
    assert got == wanted_letters(replica_crawl)
    assert all(letter.value == POISON and letter.key == b"poison.test" for letter in letters)
    assert all(
        letter.error.startswith(f"not a {BY_NAME[letter.source_topic.removeprefix(prefix)].message_type.__name__}")
        for letter in letters), [letter.error for letter in letters]


def test_each_consumer_counts_the_poison_it_dead_lettered(replica_crawl: ReplicaCrawl) -> None:
    prefix = replica_crawl.stack.prefix
    counted: Counter[tuple[str, str]] = Counter()
    for name, port in replica_crawl.replicas.metrics_ports.items():
        for (service, topic, reason), value in dead_letter_metric(port).items():
            assert reason == "undecodable", (name, topic, reason)
            counted[(topic.removeprefix(prefix), service)] += int(value)
    assert counted == wanted_letters(replica_crawl)


def test_consumers_go_on_after_the_poison(replica_crawl: ReplicaCrawl) -> None:
    assert replica_crawl.fetched_at_poison < len(replica_crawl.expected)
    assert fetched_count(replica_crawl.stack.dsn) == len(replica_crawl.expected)
    for name, process in replica_crawl.replicas.processes.items():
        assert process.alive(), name

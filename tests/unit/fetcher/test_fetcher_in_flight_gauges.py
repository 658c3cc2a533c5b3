"""The fetcher's in-flight gauges: requests in hand, hosts, and the most requests of one host."""

from __future__ import annotations

from typing import Any, cast

from prometheus_client import REGISTRY

from services.fetcher.worker import FetchWorker


def gauges() -> tuple[float | None, ...]:
    return tuple(REGISTRY.get_sample_value(name) for name in (
        "trawl_fetcher_in_flight", "trawl_fetcher_hosts_in_flight", "trawl_fetcher_host_in_flight_max"))


def test_requests_in_hand_are_counted_per_host_until_they_finish() -> None:
    worker = FetchWorker(cast(Any, None), cast(Any, None), cast(Any, None))  # only the gauges are used
    with worker._in_hand("a.test"):
        with worker._in_hand("a.test"), worker._in_hand("b.test"):
            assert gauges() == (3, 2, 2)
        assert gauges() == (1, 1, 1)
    assert gauges() == (0, 0, 0)

"""The fetch loop's consumers (the fetcher's requests, the scheduler's outcomes and discoveries) wait
``TRAWL_KAFKA_LOOP_FETCH_WAIT_MAX_MS`` for data; every other consumer ``TRAWL_KAFKA_FETCH_WAIT_MAX_MS``.
The scheduler's consumer hands over a batch once what came within ``TRAWL_SCHEDULER_CONSUMER_WAIT`` is in,
not once it is full.

Each service is built by its own factory (not started): the consumer it would run is inspected.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

import pytest

from libs.common.kafka.consumer import TopicConsumer
from libs.common.service import Service
from services.extractor.main import build as build_extractor
from services.fetcher.main import build as build_fetcher
from services.scheduler.main import build as build_scheduler


def _consumer(service: Service) -> TopicConsumer:
    consumers = [c for c in service.components if isinstance(c, TopicConsumer)]
    assert len(consumers) == 1
    return consumers[0]


def _env(kafka_bootstrap: str, fresh_db: str, prefix: str) -> dict[str, str]:
    return {
        "TRAWL_KAFKA_BOOTSTRAP": kafka_bootstrap, "TRAWL_TOPIC_PREFIX": prefix,
        "TRAWL_DATABASE_URL": fresh_db, "TRAWL_GRPC_ADDRESS": "127.0.0.1:0", "TRAWL_ADMIN_TOKEN": "x" * 32,
        "TRAWL_EXTRACTOR_PROCESSES": "1",
    }


async def test_the_scheduler_hands_over_batches_after_its_consumer_wait(
    kafka_bootstrap: str, fresh_db: str, unique_name: Callable[[str], str],
) -> None:
    env = _env(kafka_bootstrap, fresh_db, unique_name("t") + ".")
    assert _consumer(await build_scheduler(env)).batch_wait == 0.02  # the default
    assert _consumer(await build_scheduler({**env, "TRAWL_SCHEDULER_CONSUMER_WAIT": "0.07"})).batch_wait == 0.07
    assert _consumer(await build_extractor(env)).batch_wait == 0.2  # the poll timeout: a full batch or that long
    assert _consumer(await build_extractor({**env, "TRAWL_KAFKA_BATCH_WAIT_MS": "30"})).batch_wait == 0.03


@pytest.mark.parametrize(("factory", "expected"), [
    (build_fetcher, 80), (build_scheduler, 80), (build_extractor, 700),
], ids=["fetcher", "scheduler", "extractor"])
async def test_the_fetch_loop_waits_its_own_time(
    kafka_bootstrap: str, fresh_db: str, unique_name: Callable[[str], str],
    factory: Callable[[Mapping[str, str]], Awaitable[Service]], expected: int,
) -> None:
    env = {**_env(kafka_bootstrap, fresh_db, unique_name("t") + "."),
           "TRAWL_KAFKA_FETCH_WAIT_MAX_MS": "700", "TRAWL_KAFKA_LOOP_FETCH_WAIT_MAX_MS": "80"}
    service = await factory(env)
    assert _consumer(service).fetch_wait_ms == expected

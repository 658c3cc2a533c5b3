"""Entry point of the fetcher service."""

from __future__ import annotations

from collections.abc import Mapping

from libs.common.grpc_server import GrpcServer
from libs.common.kafka.consumer import TopicConsumer
from libs.common.kafka.producer import TopicProducer
from libs.common.kafka.settings import KafkaSettings
from libs.common.service import RuntimeSettings, Service, run_service
from libs.common.settings import load_settings
from libs.common.topics import FETCH_REQUESTS
from services.fetcher.clock import SystemClock
from services.fetcher.fetch_core import FetchCore, polite_robots_fetch
from services.fetcher.http_client import HttpFetcher
from services.fetcher.politeness import HostPoliteness
from services.fetcher.robots import RobotsCache
from services.fetcher.settings import FetcherSettings
from services.fetcher.worker import FetchWorker


async def build(env: Mapping[str, str]) -> Service:
    kafka = load_settings(KafkaSettings, env)
    runtime = load_settings(RuntimeSettings, env)
    settings = load_settings(FetcherSettings, env)
    clock = SystemClock()
    http = HttpFetcher(
        user_agent=settings.user_agent,
        connect_timeout=settings.connect_timeout,
        total_timeout=settings.total_timeout,
        max_body_bytes=settings.max_body_bytes,
        max_redirects=settings.max_redirects,
        proxy=settings.proxy or None,
        host_map=settings.host_map_entries(),
        connection_limit=max(settings.concurrency * 2, 10),
        clock=clock,
    )
    politeness = HostPoliteness(
        clock,
        min_delay=settings.min_delay,
        max_crawl_delay=settings.max_crawl_delay,
        response_time_factor=settings.response_time_factor,
        max_backoff=settings.max_backoff,
        park_after_failures=settings.park_after_failures,
    )
    robots = RobotsCache(
        polite_robots_fetch(http, politeness),
        user_agent_token=settings.robots_token,
        clock=clock,
        ttl=settings.robots_ttl,
        error_ttl=settings.robots_error_ttl,
    )
    producer = TopicProducer(kafka, "fetcher")
    worker = FetchWorker(FetchCore(http, robots, politeness, clock), producer, clock)
    consumer = TopicConsumer(
        kafka,
        service="fetcher",
        group_id=settings.group_id,
        topics=[FETCH_REQUESTS],
        handler=worker,
        producer=producer,
        concurrency=settings.concurrency,
    )
    return Service("fetcher", GrpcServer(runtime.grpc_address), [http, producer, consumer])


def main() -> None:
    run_service("fetcher", build)

"""Entry point of the fetcher service."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import sys
from collections.abc import Mapping

from libs.common.grpc_server import GrpcServer
from libs.common.kafka.consumer import TopicHandler
from libs.common.kafka.producer import TopicProducer
from libs.common.kafka.settings import KafkaSettings
from libs.common.service import Component, RuntimeSettings, Service, run_service
from libs.common.settings import SettingsError, load_settings
from libs.common.topics import FETCH_REQUESTS
from services.fetcher.clock import SystemClock
from services.fetcher.event_loop import install_event_loop
from services.fetcher.fetch_core import FetchCore, polite_robots_fetch
from services.fetcher.http.address_guard import AddressPolicy
from services.fetcher.http.http_client import HttpFetcher
from services.fetcher.partitions.finished_requests import FinishedRequests
from services.fetcher.partitions.handoff import Handoff
from services.fetcher.partitions.rebalance_consumer import RebalancingConsumer
from services.fetcher.politeness.politeness import HostPoliteness
from services.fetcher.politeness.politeness_keys import PolitenessKeys
from services.fetcher.publish.discoveries import DiscoveryPublisher
from services.fetcher.publish.result_body import BODY_CODECS
from services.fetcher.robots.robots import RobotsCache
from services.fetcher.settings import FetcherSettings
from services.fetcher.sitemaps.sitemaps import sitemap_reader
from services.fetcher.warc.warc_archive import WarcArchive
from services.fetcher.warc.warc_process import WarcProcessArchive
from services.fetcher.worker import PARKED_HOSTS, FetchWorker


async def build(env: Mapping[str, str]) -> Service:
    kafka = load_settings(KafkaSettings, env)
    runtime = load_settings(RuntimeSettings, env)
    settings = load_settings(FetcherSettings, env)
    try:
        address_policy = AddressPolicy.parse(settings.ssrf_allow)
    except ValueError as exc:
        raise SettingsError(f"TRAWL_FETCHER_SSRF_ALLOW: {exc}") from exc
    if settings.body_codec not in BODY_CODECS:
        raise SettingsError(f"TRAWL_FETCHER_BODY_CODEC={settings.body_codec!r}: use one of {', '.join(BODY_CODECS)}")
    if not 0 <= settings.warc_gzip_level <= 9:
        raise SettingsError(f"TRAWL_FETCHER_WARC_GZIP_LEVEL={settings.warc_gzip_level}: use 0 to 9")
    clock = SystemClock()
    components: list[Component] = []
    archive: WarcArchive | WarcProcessArchive | None = None
    if settings.warc_dir:
        archive = (WarcProcessArchive if settings.warc_process else WarcArchive)(
            settings.warc_dir,
            max_file_bytes=settings.warc_max_file_bytes,
            queue_records=settings.warc_queue_records,
            gzip_level=settings.warc_gzip_level,
        )
        components.append(archive)
    http = HttpFetcher(
        user_agent=settings.user_agent,
        connect_timeout=settings.connect_timeout,
        total_timeout=settings.total_timeout,
        max_body_bytes=settings.max_body_bytes,
        max_redirects=settings.max_redirects,
        max_informational_responses=settings.max_informational_responses,
        proxy=settings.proxy or None,
        host_map=settings.host_map_entries(),
        connection_limit=max(settings.concurrency * 2, 10),
        min_bytes_per_second=settings.min_bytes_per_second,
        rate_grace=settings.rate_grace,
        address_policy=address_policy,
        proxy_unresolved=settings.ssrf_proxy_unresolved,
        observer=archive.submit if archive is not None else None,
        clock=clock,
    )
    politeness = HostPoliteness(
        clock,
        min_delay=settings.min_delay,
        max_crawl_delay=settings.max_crawl_delay,
        response_time_factor=settings.response_time_factor,
        max_backoff=settings.max_backoff,
        park_after_failures=settings.park_after_failures,
        gap_margin=settings.gap_margin,
    )
    PARKED_HOSTS.set_function(lambda: len(politeness.parked_hosts()))
    keys = PolitenessKeys(http.resolve_address if settings.politeness_by_ip else None)
    producer = TopicProducer(
        dataclasses.replace(kafka, linger_ms=max(kafka.linger_ms, settings.producer_linger_ms)), "fetcher"
    )
    discoveries = DiscoveryPublisher(producer)
    wire = asyncio.Semaphore(settings.concurrency)  # requests being sent; those waiting for a gap hold none
    polite_fetch = polite_robots_fetch(http, politeness, keys, wire)
    sitemaps = sitemap_reader(settings, polite_fetch, discoveries.sitemap)
    robots = RobotsCache(
        polite_fetch,
        user_agent_token=settings.robots_token,
        clock=clock,
        ttl=settings.robots_ttl,
        error_ttl=settings.robots_error_ttl,
        timeout_ttl=settings.robots_timeout_ttl,
        on_loaded=sitemaps.robots_loaded if settings.sitemaps else None,
    )
    core = FetchCore(http, robots, politeness, clock, keys, wire)
    handoff = Handoff(
        core, clock, producer.flush, handoff_delay=settings.handoff_delay, grace=settings.handoff_grace,
        finished=FinishedRequests(kafka),
    )
    worker = FetchWorker(
        core, producer, clock, handoff, discoveries=discoveries, body_codec=settings.body_codec,
        max_message_bytes=kafka.max_message_bytes, publish_batch=settings.publish_batch,
        publish_delay=settings.publish_delay, publish_bytes=settings.publish_run_bytes,
    )
    consumer = RebalancingConsumer(
        kafka,
        service="fetcher",
        group_id=settings.group_id,
        handlers=[TopicHandler(FETCH_REQUESTS, worker)],
        producer=producer,
        slots=settings.max_in_hand,
        commit_interval=settings.commit_interval,
        pause_after=settings.pause_after,
        fetch_wait_ms=kafka.loop_fetch_wait_max_ms,
        poll_timeout=min(0.2, settings.commit_interval),  # the loop commits between polls
        listener=handoff,
        revoke_timeout=settings.handoff_grace + 60.0,
    )
    components += [http, producer, sitemaps, consumer]
    return Service("fetcher", GrpcServer(runtime.grpc_address), components)


def main() -> None:
    try:
        install_event_loop(load_settings(FetcherSettings, os.environ).event_loop)
    except SettingsError as exc:
        print(f"fetcher: {exc}", file=sys.stderr)
        raise SystemExit(2) from exc
    run_service("fetcher", build)

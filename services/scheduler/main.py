"""Entry point of the scheduler service."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path

from libs.common.db.migrations import apply_migrations
from libs.common.db.pool import Database
from libs.common.db.settings import DatabaseSettings
from libs.common.grpc_server import grpc_server_from
from libs.common.kafka.consumer import TopicConsumer
from libs.common.kafka.producer import TopicProducer
from libs.common.kafka.settings import KafkaSettings
from libs.common.service import RuntimeSettings, Service, run_service
from libs.common.settings import load_settings
from libs.common.topics import DISCOVERED_URLS, FETCH_REQUESTS
from services.scheduler.admin.api import SERVICE_NAME, AdminApi, AdminState, registrar
from services.scheduler.admin.seed_announcer import SeedAnnouncer
from services.scheduler.admin.topics import topic_stats
from services.scheduler.bandits.goal_sites import GoalSites
from services.scheduler.clock import ClockSettings, clock_from
from services.scheduler.dispatcher import Dispatcher
from services.scheduler.freshness.components import build_freshness
from services.scheduler.freshness.settings import FreshnessSettings
from services.scheduler.frontier.metrics import FrontierMetrics
from services.scheduler.frontier.priority import PriorityWeights
from services.scheduler.frontier.store import FrontierStore
from services.scheduler.handlers import SchedulerHandler
from services.scheduler.recovery.broker_loss import BrokerLoss
from services.scheduler.recovery.unsent_requests import UnsentRequests
from services.scheduler.sent_urls import SentUrls
from services.scheduler.settings import SchedulerSettings

MIGRATIONS = Path(__file__).parent / "migrations"


async def build(env: Mapping[str, str]) -> Service:
    kafka = load_settings(KafkaSettings, env)
    database = load_settings(DatabaseSettings, env)
    runtime = load_settings(RuntimeSettings, env)
    settings = load_settings(SchedulerSettings, env)
    await asyncio.to_thread(apply_migrations, database.dsn, "scheduler", MIGRATIONS)

    db = Database(database, "scheduler")
    clock = clock_from(load_settings(ClockSettings, env))
    weights = load_settings(PriorityWeights, env)
    freshness = build_freshness(db, load_settings(FreshnessSettings, env), weights, clock)
    goal_sites = GoalSites(db)
    store = FrontierStore(db, FETCH_REQUESTS.partitions, clock=clock, revisits=freshness.hook, weights=weights,
                          queue_depth=settings.host_queue_depth, dispatch_ahead=settings.dispatch_ahead,
                          behind_max_gap=settings.behind_max_gap,
                          listeners=[goal_sites])
    producer = TopicProducer(kafka, "scheduler")
    sent = SentUrls(2 * settings.max_in_flight + settings.dispatch_batch)
    consumer = TopicConsumer(
        kafka,
        service="scheduler",
        group_id=settings.group_id,
        handlers=SchedulerHandler(store, settings, lambda: dispatcher.wake(), sent=sent,
                                  goal_sites=goal_sites).topic_handlers(),
        producer=producer,
        batch_size=settings.consumer_batch,
        batch_wait=settings.consumer_wait,
        fetch_wait_ms=kafka.loop_fetch_wait_max_ms,  # outcomes free hosts: on the fetch loop
        assignment="range",  # the four inputs are keyed by host: one member owns all of a host
    )
    admin = AdminState.on(db, store, settings, FETCH_REQUESTS.partitions)
    unsent = UnsentRequests(db, kafka, settings.unsent_check_seconds, loss=BrokerLoss(db, kafka, producer))
    dispatcher = Dispatcher(store, producer, settings, lambda: consumer.assigned_partitions(DISCOVERED_URLS),
                            goal_sites, admin.pause,
                            policies=admin.policies, goal=admin.goal, unsent=unsent, sent=sent)
    seed_producer = TopicProducer(kafka, "scheduler-seeds")  # its own: an admin call's flush waits for seeds only
    seeds = SeedAnnouncer(seed_producer)
    api = AdminApi(db, admin, dispatcher.wake, lambda: topic_stats(kafka.bootstrap, kafka.topic_prefix),
                   explain=freshness.explainer.explain, seeds=seeds)
    server = grpc_server_from(env, runtime.grpc_address, service_names=[SERVICE_NAME], registrars=[registrar(api)])
    gauges = FrontierMetrics(db, settings.lease_seconds)
    return Service("scheduler", server,
                   [db, producer, seed_producer, seeds, freshness.registry, freshness.trainer, dispatcher, consumer,
                    gauges])


def main() -> None:
    run_service("scheduler", build)

"""Entry point of the importance service."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path

from libs.common.db.migrations import apply_migrations
from libs.common.db.pool import Database
from libs.common.db.settings import DatabaseSettings
from libs.common.grpc_server import GrpcServer
from libs.common.kafka.consumer import TopicConsumer
from libs.common.kafka.producer import TopicProducer
from libs.common.kafka.settings import KafkaSettings
from libs.common.service import RuntimeSettings, Service, run_service
from libs.common.settings import load_settings
from libs.common.topics import CASH_TRANSFERS, IMPORTANCE_UPDATES, PAGE_LINKS
from services.importance.cash_store import CashStore
from services.importance.handler import ImportanceHandler
from services.importance.owned_partitions import OwnedPartitions
from services.importance.settings import ImportanceSettings

MIGRATIONS = Path(__file__).parent / "migrations"


async def build(env: Mapping[str, str]) -> Service:
    kafka = load_settings(KafkaSettings, env)
    database = load_settings(DatabaseSettings, env)
    runtime = load_settings(RuntimeSettings, env)
    settings = load_settings(ImportanceSettings, env)
    await asyncio.to_thread(apply_migrations, database.dsn, "importance", MIGRATIONS)
    db = Database(database, "importance")
    partitions = PAGE_LINKS.partitions
    store = CashStore(db, partitions, settings.total_cash)
    producer = TopicProducer(kafka, "importance")
    owned = OwnedPartitions(
        store, producer, settings.opic_config(partitions), kafka.topic(CASH_TRANSFERS.name),
        kafka.topic(IMPORTANCE_UPDATES.name),
        snapshot_bytes=settings.snapshot_megabytes << 20, snapshot_idle=settings.snapshot_idle_seconds,
    )
    consumer = TopicConsumer(
        kafka,
        service="importance",
        group_id=settings.group_id,
        handlers=ImportanceHandler(owned, settings.follow_external, settings.max_link_occurrences).topic_handlers(),
        producer=producer,
        batch_size=settings.batch_size,
        assignment="range",  # page links and transfers are both keyed by URL: one member owns a partition's state
    )
    owned.owned = lambda: consumer.assigned_partitions(PAGE_LINKS)
    return Service("importance", GrpcServer(runtime.grpc_address), [db, producer, owned, consumer])


def main() -> None:
    run_service("importance", build)

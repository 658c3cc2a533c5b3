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
from libs.common.topics import PAGE_LINKS
from services.importance.cash_store import CashStore
from services.importance.handler import ImportanceHandler
from services.importance.settings import ImportanceSettings

MIGRATIONS = Path(__file__).parent / "migrations"


async def build(env: Mapping[str, str]) -> Service:
    kafka = load_settings(KafkaSettings, env)
    database = load_settings(DatabaseSettings, env)
    runtime = load_settings(RuntimeSettings, env)
    settings = load_settings(ImportanceSettings, env)
    await asyncio.to_thread(apply_migrations, database.dsn, "importance", MIGRATIONS)
    db = Database(database, "importance")
    store = CashStore(db, settings.total_cash)
    producer = TopicProducer(kafka, "importance")
    consumer = TopicConsumer(
        kafka,
        service="importance",
        group_id=settings.group_id,
        topics=[PAGE_LINKS],
        handler=ImportanceHandler(store, producer, settings),
        producer=producer,
    )
    return Service("importance", GrpcServer(runtime.grpc_address), [db, store, producer, consumer])


def main() -> None:
    run_service("importance", build)

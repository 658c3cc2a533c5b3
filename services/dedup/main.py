"""Entry point of the dedup service."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path

from libs.common.db.migrations import apply_migrations
from libs.common.db.pool import Database
from libs.common.db.settings import DatabaseSettings
from libs.common.grpc_server import GrpcServer
from libs.common.kafka.consumer import TopicConsumer, TopicHandler
from libs.common.kafka.producer import TopicProducer
from libs.common.kafka.settings import KafkaSettings
from libs.common.service import RuntimeSettings, Service, run_service
from libs.common.settings import load_settings
from libs.common.topics import DOCUMENTS
from services.dedup.handler import DedupHandler
from services.dedup.judge import DuplicateJudge
from services.dedup.near_store import NearDuplicateIndex
from services.dedup.settings import DedupSettings
from services.dedup.store import ExactFingerprintIndex

MIGRATIONS = Path(__file__).parent / "migrations"


async def build(env: Mapping[str, str]) -> Service:
    kafka = load_settings(KafkaSettings, env)
    database = load_settings(DatabaseSettings, env)
    runtime = load_settings(RuntimeSettings, env)
    settings = load_settings(DedupSettings, env)
    await asyncio.to_thread(apply_migrations, database.dsn, "dedup", MIGRATIONS)
    db = Database(database, "dedup")
    producer = TopicProducer(kafka, "dedup")
    judge = DuplicateJudge(settings.shape, settings.threshold)
    near = NearDuplicateIndex(db, judge)
    consumer = TopicConsumer(
        kafka,
        service="dedup",
        group_id=settings.group_id,
        handlers=[TopicHandler(DOCUMENTS, DedupHandler(ExactFingerprintIndex(db), near, judge, producer))],
        producer=producer,
        batch_size=settings.batch_size,
    )
    return Service("dedup", GrpcServer(runtime.grpc_address), components=[db, ShapeCheck(near), producer, consumer])


class ShapeCheck:
    """Checks, once the pool is open, that the stored index was built with the configured sketch shape."""

    def __init__(self, near: NearDuplicateIndex) -> None:
        self._near = near

    async def start(self) -> None:
        await self._near.check_shape()

    async def stop(self) -> None:
        return None


def main() -> None:
    run_service("dedup", build)

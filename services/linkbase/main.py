"""Entry point of the linkbase service."""

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
from services.linkbase.api import SERVICE_NAME, LinkbaseApi, registrar
from services.linkbase.graph import GraphReader
from services.linkbase.handler import LinkbaseHandler
from services.linkbase.history_reader import HistoryReader
from services.linkbase.host_budget import HostBudget
from services.linkbase.outbox import DiscoveryPublisher
from services.linkbase.settings import LinkbaseSettings
from services.linkbase.sites import SiteBook
from services.linkbase.store import LinkStore

MIGRATIONS = Path(__file__).parent / "migrations"


async def build(env: Mapping[str, str]) -> Service:
    kafka = load_settings(KafkaSettings, env)
    database = load_settings(DatabaseSettings, env)
    runtime = load_settings(RuntimeSettings, env)
    settings = load_settings(LinkbaseSettings, env)
    await asyncio.to_thread(apply_migrations, database.dsn, "linkbase", MIGRATIONS)
    db = Database(database, "linkbase")
    producer = TopicProducer(kafka, "linkbase")
    publisher = DiscoveryPublisher(db, producer, interval=settings.publish_interval, chunk=settings.publish_chunk,
                                   traps=settings.traps)
    consumer = TopicConsumer(
        kafka,
        service="linkbase",
        group_id=settings.group_id,
        handlers=LinkbaseHandler(LinkStore(db, HostBudget(settings.max_urls_per_host)), publisher,
                                 chunk=settings.write_chunk, groups=settings.write_groups).topic_handlers(),
        producer=producer,
        batch_size=settings.batch_size,
    )
    api = LinkbaseApi(GraphReader(db), HistoryReader(db), SiteBook(db), on_seeds=publisher.wake)
    grpc_server = grpc_server_from(env, runtime.grpc_address, service_names=[SERVICE_NAME], registrars=[registrar(api)])
    return Service("linkbase", grpc_server, components=[db, producer, publisher, consumer])


def main() -> None:
    run_service("linkbase", build)

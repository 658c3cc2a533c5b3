"""Entry point of the extractor service."""

from __future__ import annotations

from collections.abc import Mapping

from libs.common.grpc_server import GrpcServer
from libs.common.kafka.consumer import TopicConsumer, TopicHandler
from libs.common.kafka.producer import TopicProducer
from libs.common.kafka.settings import KafkaSettings
from libs.common.service import Component, RuntimeSettings, Service, run_service
from libs.common.settings import load_settings
from libs.common.topics import FETCH_RESULTS
from services.extractor.extraction_pool import ExtractionPool
from services.extractor.handler import ExtractorHandler
from services.extractor.page_extractor import ExtractionOptions
from services.extractor.settings import ExtractorSettings


async def build(env: Mapping[str, str]) -> Service:
    kafka = load_settings(KafkaSettings, env)
    runtime = load_settings(RuntimeSettings, env)
    settings = load_settings(ExtractorSettings, env)
    options = ExtractionOptions.from_env(env)
    producer = TopicProducer(kafka, "extractor")
    pool = ExtractionPool(env, settings.processes) if settings.processes > 1 else None
    consumer = TopicConsumer(
        kafka,
        service="extractor",
        group_id=settings.group_id,
        handlers=[TopicHandler(FETCH_RESULTS, ExtractorHandler(producer, options, pool))],
        producer=producer,
        batch_size=settings.batch_size,
    )
    components: list[Component] = [producer, *([pool] if pool is not None else []), consumer]  # stopped in reverse
    return Service("extractor", GrpcServer(runtime.grpc_address), components)


def main() -> None:
    run_service("extractor", build)

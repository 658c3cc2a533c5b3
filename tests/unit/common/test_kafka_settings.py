"""The consumer configuration's fetch wait: the general one, or the fetch loop's."""

from __future__ import annotations

from libs.common.kafka.settings import KafkaSettings
from libs.common.settings import load_settings


def test_the_fetch_wait_is_the_general_one_unless_given() -> None:
    settings = load_settings(KafkaSettings, {"TRAWL_KAFKA_FETCH_WAIT_MAX_MS": "700",
                                             "TRAWL_KAFKA_LOOP_FETCH_WAIT_MAX_MS": "80"})
    assert settings.consumer_config("g", "c")["fetch.wait.max.ms"] == 700
    assert settings.consumer_config("g", "c", fetch_wait_ms=settings.loop_fetch_wait_max_ms)["fetch.wait.max.ms"] == 80


def test_both_waits_default_to_100_ms() -> None:
    settings = KafkaSettings()
    assert (settings.fetch_wait_max_ms, settings.loop_fetch_wait_max_ms) == (100, 100)

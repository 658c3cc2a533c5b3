"""libs/common/metrics: the label sets known in advance exist at zero before the first event."""

from __future__ import annotations

from prometheus_client import REGISTRY

from libs.common import metrics


def sample(name: str, **labels: str) -> float | None:
    return REGISTRY.get_sample_value(name, labels)


def test_a_consumer_exports_its_topics_dead_letters_retries_and_clamped_lag_at_zero() -> None:
    metrics.declare_consumer("unit-svc", {"p.trawl.fetch-results": "trawl.fetch-results"})
    for reason in ("undecodable", "handler_failed"):
        assert sample("trawl_dead_letters_total", service="unit-svc", topic="p.trawl.fetch-results",
                      reason=reason) == 0
    for kind in ("transient", "error"):
        assert sample("trawl_handler_retries_total", service="unit-svc", topic="trawl.fetch-results", kind=kind) == 0
    assert sample("trawl_consumer_lag_clamped_total", service="unit-svc", topic="trawl.fetch-results") == 0


def test_a_service_reads_not_serving_and_no_startup_retries_until_it_serves() -> None:
    metrics.declare_service("unit-svc")
    assert sample("trawl_service_up", service="unit-svc") == 0
    assert sample("trawl_startup_retries_total", service="unit-svc") == 0


def test_declaring_again_keeps_what_was_counted() -> None:
    metrics.declare_consumer("unit-svc2", {"t": "t"})
    metrics.DEAD_LETTERS.labels("unit-svc2", "t", metrics.UNDECODABLE).inc()
    metrics.declare_consumer("unit-svc2", {"t": "t"})
    assert sample("trawl_dead_letters_total", service="unit-svc2", topic="t", reason="undecodable") == 1


def test_freshness_models_and_training_errors_start_at_zero() -> None:
    metrics.declare_freshness()
    assert sample("trawl_freshness_models", level="host") == 0
    assert sample("trawl_freshness_models", level="path") == 0
    assert sample("trawl_freshness_model_errors_total", kind="training") == 0

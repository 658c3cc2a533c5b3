"""Which Kafka the topic tools talk to: the option, the services' setting, then the local stack."""

from __future__ import annotations

from pathlib import Path

from cli.stack.layout import StackState
from cli.topics.target import resolve_target
from libs.common.topics import FETCH_REQUESTS


def test_the_option_wins_then_the_setting_then_the_local_stack(tmp_path: Path) -> None:
    env = {"TRAWL_HOME": str(tmp_path), "TRAWL_LOCAL_BROKER_PORT": "19999"}
    assert resolve_target(None, None, env).bootstrap == "127.0.0.1:19999"
    StackState(bootstrap="127.0.0.1:4242", dsn="", topic_prefix="demo.").save(tmp_path / "stack.json")
    stack = resolve_target(None, None, env)
    assert (stack.bootstrap, stack.prefix) == ("127.0.0.1:4242", "demo.")
    configured = resolve_target(None, None, {**env, "TRAWL_KAFKA_BOOTSTRAP": "kafka:9092", "TRAWL_TOPIC_PREFIX": "p."})
    assert (configured.bootstrap, configured.prefix, configured.source) == ("kafka:9092", "p.", "TRAWL_KAFKA_BOOTSTRAP")
    given = resolve_target("broker:1", "", {**env, "TRAWL_KAFKA_BOOTSTRAP": "kafka:9092"})
    assert (given.bootstrap, given.prefix) == ("broker:1", "")


def test_declared_names_get_the_prefix() -> None:
    target = resolve_target("b:1", "pre.", {})
    assert target.full_name("trawl.fetch-requests") == "pre.trawl.fetch-requests"
    assert target.full_name("pre.trawl.fetch-requests") == "pre.trawl.fetch-requests"
    assert target.full_name("other") == "other"
    assert target.declared("pre.trawl.fetch-requests") is FETCH_REQUESTS
    assert target.declared("trawl.fetch-requests") is None  # not this crawl's

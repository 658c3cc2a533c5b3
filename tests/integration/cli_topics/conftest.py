"""The ``cli`` fixture: the topic tool on the session's broker and a topic prefix of the test's own."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.integration.cli_topics.topics_harness import TopicsCli


@pytest.fixture
def cli(kafka_bootstrap: str, unique_name: Callable[[str], str]) -> TopicsCli:
    return TopicsCli(kafka_bootstrap, unique_name("p") + ".")

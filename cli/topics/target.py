"""Which Kafka the topic tools talk to, and the topic prefix of the crawl on it.

The bootstrap servers come from ``--bootstrap``, else ``TRAWL_KAFKA_BOOTSTRAP`` (the
services' own setting), else the local stack: the broker recorded by ``trawl up`` in
``TRAWL_HOME/stack.json``, or the local broker's port when the stack is not up. The topic
prefix follows the same order (``--prefix``, ``TRAWL_TOPIC_PREFIX``, the local stack's).
The scheduler's large hosts (``TRAWL_SCHEDULER_LARGE_HOSTS``) are read from the environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from cli.stack.layout import StackSettings, StackState, state_path
from cli.topics.locate import LargeHosts
from libs.common.kafka.settings import KafkaSettings
from libs.common.settings import load_settings
from libs.common.topics import BY_NAME, Topic


@dataclass(frozen=True)
class Target:
    bootstrap: str
    prefix: str
    source: str  # where the bootstrap came from, shown when the broker cannot be reached
    large_hosts: LargeHosts = field(default_factory=LargeHosts)  # hosts whose fetch requests are keyed host#group

    def name(self, topic: Topic) -> str:
        """The name of a declared topic on this Kafka."""
        return self.prefix + topic.name

    def declared(self, name: str) -> Topic | None:
        """The declared topic of a name on this Kafka (prefixed or not), or None."""
        if self.prefix and name.startswith(self.prefix):
            return BY_NAME.get(name.removeprefix(self.prefix))
        return BY_NAME.get(name) if not self.prefix else None

    def full_name(self, name: str) -> str:
        """``name`` as it is on this Kafka: a declared name gets the prefix, any other is kept."""
        if name in BY_NAME and not name.startswith(self.prefix):
            return self.prefix + name
        return name

    def kafka_settings(self, env: Mapping[str, str]) -> KafkaSettings:
        """The services' Kafka settings from ``env``, pointed at this Kafka."""
        return load_settings(KafkaSettings, env, bootstrap=self.bootstrap, topic_prefix=self.prefix)


def resolve_target(bootstrap: str | None, prefix: str | None, env: Mapping[str, str]) -> Target:
    stack = load_settings(StackSettings, env)
    state = StackState.load(state_path(stack))
    if bootstrap:
        source = "--bootstrap"
    elif env.get("TRAWL_KAFKA_BOOTSTRAP"):
        bootstrap, source = load_settings(KafkaSettings, env).bootstrap, "TRAWL_KAFKA_BOOTSTRAP"
    elif state is not None:
        bootstrap, source = state.bootstrap, f"the local stack ({state_path(stack)})"
    else:
        bootstrap, source = f"127.0.0.1:{stack.broker_port}", "the local stack's broker port (TRAWL_LOCAL_BROKER_PORT)"
    if prefix is None:
        if "TRAWL_TOPIC_PREFIX" in env:
            prefix = load_settings(KafkaSettings, env).topic_prefix
        else:
            prefix = state.topic_prefix if state is not None and source.startswith("the local stack (") else ""
    return Target(bootstrap, prefix, source, LargeHosts.from_env(env))

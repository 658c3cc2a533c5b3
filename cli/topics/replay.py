"""Replaying dead letters: each chosen letter's original key and value produced again to its source topic.

Letters are chosen by source topic, source partition, source offset range and the service
that gave up on them. A letter whose value does not decode as its source topic's type
would only fail again, and one whose value was cut (dead letters keep the first MiB) is
not the message that failed: both are skipped unless asked for. A dry run reports the
same choice and produces nothing. Replaying is at-least-once, like every producer here:
the services' handlers are idempotent, so replaying a letter twice does no harm.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, Producer

from cli.topics.target import Target
from libs.common.kafka.codec import ProtoCodec, UndecodableMessage
from libs.common.kafka.ends import partition_ends, read_to_end
from libs.common.topics import DEAD_LETTERS
from libs.common.wire import messages as pb

KEPT_VALUE_BYTES = 1024 * 1024  # libs/common/kafka/dead_letters.py keeps this much of a failed value


@dataclass(frozen=True)
class LetterFilter:
    source_topic: str | None = None  # on the broker (prefixed)
    partition: int | None = None
    from_offset: int | None = None
    to_offset: int | None = None  # inclusive
    service: str | None = None

    def matches(self, letter: pb.DeadLetter) -> bool:
        return (
            (self.source_topic is None or letter.source_topic == self.source_topic)
            and (self.partition is None or letter.source_partition == self.partition)
            and (self.from_offset is None or letter.source_offset >= self.from_offset)
            and (self.to_offset is None or letter.source_offset <= self.to_offset)
            and (self.service is None or letter.service == self.service)
        )


@dataclass
class Letter:
    offset: int  # in the dead-letter topic
    letter: pb.DeadLetter
    problem: str | None  # why replaying it would not help; None: replayable
    fatal: bool = False  # never replayed, not even on request (no such topic, not a dead letter)
    action: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "dead_letter_offset": self.offset, "source_topic": self.letter.source_topic,
            "source_partition": self.letter.source_partition, "source_offset": self.letter.source_offset,
            "key": self.letter.key.decode("utf-8", "replace"), "service": self.letter.service,
            "error": self.letter.error, "failed_at_ms": self.letter.failed_at_ms, "problem": self.problem,
            "action": self.action,
        }


def problem_of(target: Target, letter: pb.DeadLetter) -> str | None:
    if len(letter.value) >= KEPT_VALUE_BYTES:
        return "value was cut to 1 MiB when dead-lettered"
    declared = target.declared(letter.source_topic)
    if declared is None:
        return None
    try:
        ProtoCodec(declared.message_type).decode(letter.value)
    except UndecodableMessage as exc:
        return f"undecodable: {exc}"
    return None


def scan_letters(target: Target, letter_filter: LetterFilter, topics: set[str], timeout: float) -> list[Letter]:
    """The dead letters that pass the filter, oldest first, read up to the end of the dead-letter topic."""
    name = target.name(DEAD_LETTERS)
    if name not in topics:
        return []
    ends = partition_ends(target.bootstrap, [(name, p) for p in range(DEAD_LETTERS.partitions)], timeout=timeout)
    found: list[Letter] = []
    undecodable: list[int] = []

    def take(msg: Any) -> None:
        try:
            letter = pb.DeadLetter.FromString(msg.value() or b"")
        except Exception:  # a record that is not a dead letter is reported, never replayed
            undecodable.append(msg.offset())
            return
        if not letter_filter.matches(letter):
            return
        if letter.source_topic not in topics:  # producing would create it, with the wrong partition count
            found.append(Letter(msg.offset(), letter, f"source topic {letter.source_topic} does not exist", True))
        else:
            found.append(Letter(msg.offset(), letter, problem_of(target, letter)))

    read_to_end(target.bootstrap, {tp: end.low for tp, end in ends.items()}, timeout=timeout, on_message=take,
                purpose="dead-letters")
    found.extend(Letter(offset, pb.DeadLetter(), "not a DeadLetter record", True) for offset in undecodable)
    return sorted(found, key=lambda letter: letter.offset)


def replay(
    letters: list[Letter], producer_config: Mapping[str, Any], *, dry_run: bool, include_unsound: bool,
    timeout: float = 30.0,
) -> list[Letter]:
    """Produces the replayable letters (or says it would); returns every letter with its action."""
    chosen = [x for x in letters if x.problem is None or (include_unsound and not x.fatal)]
    picked = {id(x) for x in chosen}
    for x in letters:
        x.action = ("would replay" if dry_run else "replayed") if id(x) in picked else "skipped"
    if dry_run or not chosen:
        return letters
    errors: list[str] = []

    def delivered(err: KafkaError | None, _msg: Any) -> None:
        if err is not None:
            errors.append(str(err))

    producer = Producer(dict(producer_config))
    for x in chosen:
        producer.produce(x.letter.source_topic, key=x.letter.key or None, value=x.letter.value, on_delivery=delivered)
        producer.poll(0)
    remaining = producer.flush(timeout)
    if remaining or errors:
        raise RuntimeError(f"replay incomplete: {remaining} unacknowledged, {len(errors)} failed "
                           f"({errors[0] if errors else 'timeout'}); replaying again is safe")
    return letters

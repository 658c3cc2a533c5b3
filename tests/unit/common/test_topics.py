"""The topic declarations, and a protobuf round trip of every topic's message type."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

from libs.common.kafka.codec import ProtoCodec, UndecodableMessage, decode_key, encode_key
from libs.common.topics import ALL_TOPICS, BY_NAME, DEAD_LETTERS, FETCH_REQUESTS, Topic, topic_named
from libs.common.wire import messages as pb


def _value(field: FieldDescriptor, n: int) -> Any:
    """A value of ``field``'s type that is not its default, different for each ``n``."""
    if field.type == FieldDescriptor.TYPE_STRING:
        return f"{field.name}-{n}-\u00e9"
    if field.type == FieldDescriptor.TYPE_BYTES:
        return bytes([0, 255, n % 256]) + field.name.encode()
    if field.type == FieldDescriptor.TYPE_BOOL:
        return True
    if field.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return n + 0.5
    if field.type == FieldDescriptor.TYPE_ENUM:
        assert isinstance(field.enum_type, EnumDescriptor)
        return field.enum_type.values[-1].number
    if field.type in (FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_SINT64):
        return 1_700_000_000_000 + n  # beyond 32 bits
    return 1000 + n


def filled(message_type: type[Message], n: int = 1) -> Message:
    """A message of ``message_type`` with every field (and every nested field) set to a non-default value."""
    message = message_type()
    for field in message_type.DESCRIPTOR.fields:
        # The C implementation's descriptors at run time; they pass for the Python classes.
        assert isinstance(field, FieldDescriptor)
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            assert isinstance(field.message_type, Descriptor)
            child_type = GetMessageClass(field.message_type)
            children = [filled(child_type, n + i) for i in range(2)]
            if _repeated(field):
                getattr(message, field.name).extend(children)
            else:
                getattr(message, field.name).CopyFrom(children[0])
        elif _repeated(field):
            getattr(message, field.name).extend([_value(field, n), _value(field, n + 1)])
        else:
            setattr(message, field.name, _value(field, n))
    return message


def _repeated(field: FieldDescriptor) -> bool:
    return bool(field.is_repeated)


def test_topic_names_are_distinct_and_indexed() -> None:
    names = [t.name for t in ALL_TOPICS]
    assert len(set(names)) == len(names)
    assert all(name.startswith("trawl.") for name in names)
    assert {t.name: t for t in ALL_TOPICS} == BY_NAME


def test_each_message_type_is_carried_by_exactly_one_topic() -> None:
    counts = Counter(t.message_type for t in ALL_TOPICS)
    assert [t for t, c in counts.items() if c != 1] == []


@pytest.mark.parametrize("topic", ALL_TOPICS, ids=lambda t: t.name)
def test_each_topic_states_its_key_and_why(topic: Topic) -> None:
    assert topic.key.strip()
    assert len(topic.why.strip()) > 20
    assert topic.partitions >= 1


def test_every_event_message_of_the_wire_package_has_a_topic() -> None:
    """A message of messages.proto that is not a part of another message is an event: it needs a topic."""
    types = pb.DESCRIPTOR.message_types_by_name.values()
    parts = {f.message_type.full_name for t in types for f in t.fields if f.message_type is not None}
    events = {t.full_name for t in types} - parts
    assert events == {t.message_type.DESCRIPTOR.full_name for t in ALL_TOPICS}


def test_topic_named_strips_the_prefix() -> None:
    assert topic_named("crawl1.trawl.fetch-requests", prefix="crawl1.") is FETCH_REQUESTS
    assert topic_named("trawl.dead-letters") is DEAD_LETTERS
    with pytest.raises(KeyError):
        topic_named("other.trawl.fetch-requests", prefix="crawl1.")


@pytest.mark.parametrize("topic", ALL_TOPICS, ids=lambda t: t.name)
def test_message_round_trips_through_its_codec(topic: Topic) -> None:
    codec = ProtoCodec(topic.message_type)
    original = filled(topic.message_type)
    # every declared field is set, so a field the codec loses would show up below
    assert len(original.ListFields()) == len(topic.message_type.DESCRIPTOR.fields)
    data = codec.encode(original)
    decoded = codec.decode(data)
    assert type(decoded) is topic.message_type
    assert decoded == original
    assert decoded != topic.message_type()


def test_encode_refuses_another_message_type() -> None:
    with pytest.raises(TypeError, match="FetchRequest"):
        ProtoCodec(pb.FetchRequest).encode(pb.Document(url="http://a.test/"))  # type: ignore[arg-type]


@pytest.mark.parametrize("topic", ALL_TOPICS, ids=lambda t: t.name)
@pytest.mark.parametrize("garbage", [b"\xff\xff\xff\xff", None], ids=["bytes", "tombstone"])
def test_garbage_is_undecodable(topic: Topic, garbage: bytes | None) -> None:
    with pytest.raises(UndecodableMessage):
        ProtoCodec(topic.message_type).decode(garbage)


def test_a_string_field_with_bad_utf8_is_undecodable() -> None:
    # field 2 (url), length-delimited, one byte that is not UTF-8
    with pytest.raises(UndecodableMessage, match="FetchRequest"):
        ProtoCodec(pb.FetchRequest).decode(b"\x12\x01\xff")


def test_keys_are_utf8_and_decoding_never_fails() -> None:
    assert decode_key(encode_key("caf\u00e9.test")) == "caf\u00e9.test"
    assert decode_key(None) == ""
    assert decode_key(b"a\xffb") == "a\ufffdb"

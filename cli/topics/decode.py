"""A Kafka record as readable JSON: its value decoded by the topic's declared protobuf type.

Fields are printed by their proto names with native JSON numbers (int64 too), enums by
name and bytes as base64; fields at their default value are left out, as in protobuf's
JSON. Long strings and bytes are cut to ``max_chars`` unless ``full``. Two values get a
readable form as well: a fetch result's body is inflated into ``body_text``, and a dead
letter's value is decoded by its source topic's type into ``value_decoded``.

A value that is not a valid message of the declared type is never an error here: the
record is shown with ``undecodable`` (the reason) and a preview of its bytes. A value
that parses but carries fields the type does not declare is shown with
``unknown_fields``: it was written by a newer schema, or is not of this type at all.
"""

from __future__ import annotations

import base64
import zlib
from datetime import UTC, datetime
from typing import Any

from google.protobuf import unknown_fields
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from libs.common.kafka.codec import ProtoCodec, UndecodableMessage
from libs.common.topics import BY_NAME, Topic
from libs.common.wire import messages as pb

PREVIEW_BYTES = 64


def _cut(text: str, max_chars: int | None) -> str:
    if max_chars is None or len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}... (+{len(text) - max_chars} chars)"


def _scalar(field: FieldDescriptor, value: Any, max_chars: int | None) -> Any:
    if field.type == FieldDescriptor.TYPE_ENUM:
        found = field.enum_type.values_by_number.get(value) if field.enum_type else None
        return found.name if found is not None else value
    if field.type == FieldDescriptor.TYPE_BYTES:
        return _cut(base64.b64encode(value).decode("ascii"), max_chars)
    if field.type == FieldDescriptor.TYPE_STRING:
        return _cut(value, max_chars)
    return value


def to_json(message: Message, max_chars: int | None = 200) -> dict[str, Any]:
    """The fields of ``message`` that are set, as a JSON-ready dict (see the module docstring)."""
    out: dict[str, Any] = {}
    for field, value in message.ListFields():
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            out[field.name] = [to_json(v, max_chars) for v in value] if field.is_repeated else to_json(value, max_chars)
        elif field.is_repeated:
            out[field.name] = [_scalar(field, v, max_chars) for v in value]
        else:
            out[field.name] = _scalar(field, value, max_chars)
    return out


def preview(raw: bytes) -> str:
    """The first bytes of an undecodable value: as text when they are text, else as hex."""
    head = raw[:PREVIEW_BYTES]
    try:
        text = head.decode("utf-8")
        if text.isprintable():
            return text + ("..." if len(raw) > PREVIEW_BYTES else "")
    except UnicodeDecodeError:
        pass
    return head.hex(" ") + (" ..." if len(raw) > PREVIEW_BYTES else "")


def decode_value(raw: bytes | None, topic: Topic | None, max_chars: int | None = 200) -> dict[str, Any]:
    """``{"type", "value"}`` (plus ``unknown_fields``), or ``{"undecodable", "value_preview"}``."""
    if topic is None:
        return {"type": None, "undecodable": "not a declared topic: no type to decode with",
                "value_preview": preview(raw or b"")}
    type_name = topic.message_type.DESCRIPTOR.name
    try:
        message = ProtoCodec(topic.message_type).decode(raw)
    except UndecodableMessage as exc:
        return {"type": type_name, "undecodable": str(exc), "value_preview": preview(raw or b"")}
    out: dict[str, Any] = {"type": type_name, "value": to_json(message, max_chars)}
    unknown = len(unknown_fields.UnknownFieldSet(message))
    if unknown:
        out["unknown_fields"] = unknown
    _readable_extras(message, out["value"], max_chars)
    return out


def _readable_extras(message: Message, value: dict[str, Any], max_chars: int | None) -> None:
    if isinstance(message, pb.FetchResult) and message.body:
        try:
            body = zlib.decompress(message.body) if message.body_codec == "zlib" else message.body
            value["body_text"] = _cut(body.decode("utf-8", "replace"), max_chars)
        except zlib.error as exc:
            value["body_text"] = f"(body does not inflate: {exc})"
    elif isinstance(message, pb.DeadLetter):
        source = BY_NAME.get(message.source_topic) or next(
            (t for t in BY_NAME.values() if message.source_topic.endswith(t.name)), None)
        value["key_text"] = message.key.decode("utf-8", "replace")
        value["value_decoded"] = decode_value(message.value, source, max_chars)


def record_json(msg: Any, topic: Topic | None, max_chars: int | None = 200) -> dict[str, Any]:
    """One consumed record (a confluent-kafka Message) as a JSON-ready dict."""
    ts_kind, ts_ms = msg.timestamp()
    key = msg.key()
    out: dict[str, Any] = {
        "topic": msg.topic(),
        "partition": msg.partition(),
        "offset": msg.offset(),
        "timestamp": iso_ms(ts_ms) if ts_kind and ts_ms >= 0 else None,
        "key": None if key is None else key.decode("utf-8", "replace"),
        "size": len(msg.value() or b""),
    }
    out.update(decode_value(msg.value(), topic, max_chars))
    return out


def iso_ms(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

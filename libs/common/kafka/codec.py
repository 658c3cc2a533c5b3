"""Protobuf codecs: one message type per topic, keys as UTF-8 strings."""

from __future__ import annotations

from typing import Generic, TypeVar

from google.protobuf.message import DecodeError, Message

M = TypeVar("M", bound=Message)


class UndecodableMessage(ValueError):
    """The bytes on the topic are not a valid message of the topic's declared type."""


class ProtoCodec(Generic[M]):
    def __init__(self, message_type: type[M]) -> None:
        self.message_type = message_type

    def encode(self, message: M) -> bytes:
        if not isinstance(message, self.message_type):
            raise TypeError(f"expected {self.message_type.__name__}, got {type(message).__name__}")
        return message.SerializeToString()

    def decode(self, data: bytes | None) -> M:
        if data is None:
            raise UndecodableMessage("empty value (tombstone)")
        message = self.message_type()
        try:
            message.ParseFromString(data)
        except (DecodeError, RuntimeError, ValueError) as exc:
            raise UndecodableMessage(f"not a {self.message_type.__name__}: {exc}") from exc
        return message


def encode_key(key: str) -> bytes:
    return key.encode("utf-8")


def decode_key(raw: bytes | None) -> str:
    return "" if raw is None else raw.decode("utf-8", errors="replace")

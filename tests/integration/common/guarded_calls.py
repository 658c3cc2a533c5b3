"""Calling every method of a gRPC service by its descriptor, to check a server's token guard.

A test lists the methods from the service's descriptor, not by hand, so a method added to the
contract later is checked too (its test must then say which request it sends).
"""

from __future__ import annotations

from typing import Any

import grpc
from google.protobuf import message_factory
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor
from google.protobuf.message import Message

Metadata = tuple[tuple[str, str], ...]

# The metadata of calls that must be refused with UNAUTHENTICATED, by name.
NOT_AUTHENTICATED: dict[str, Metadata | None] = {
    "no-metadata": None,
    "wrong-token": (("authorization", "Bearer wrong-token"),),
    "wrong-scheme": (("authorization", "Basic test-token"),),
    "empty-token": (("authorization", "Bearer "),),
    "other-header": (("x-token", "test-token"),),
}


def methods(service: ServiceDescriptor) -> dict[str, MethodDescriptor]:
    return dict(service.methods_by_name)


def empty_request(method: MethodDescriptor) -> Message:
    request: Message = message_factory.GetMessageClass(method.input_type)()
    return request


async def call(
    channel: grpc.aio.Channel, method: MethodDescriptor, request: Message, metadata: Metadata | None,
    timeout: float = 10.0,
) -> tuple[grpc.StatusCode, Any]:
    """Calls ``method`` (unary) with ``request``: (the status it ended with, the answer or the details)."""
    response_class = message_factory.GetMessageClass(method.output_type)
    stub: grpc.aio.UnaryUnaryMultiCallable[Message, Any] = channel.unary_unary(
        f"/{method.containing_service.full_name}/{method.name}",
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=response_class.FromString,
    )
    try:
        answer = await stub(request, timeout=timeout, metadata=metadata)
    except grpc.aio.AioRpcError as exc:
        return exc.code(), exc.details()
    return grpc.StatusCode.OK, answer

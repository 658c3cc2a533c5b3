"""Calling a gRPC server as a client that is not Trawl's own: by descriptor, and by reflection alone.

:func:`call` calls any method of a service descriptor with a given request: a test lists the
methods from the descriptor, not by hand, so a method added to the contract later is checked
too. :func:`reflection_probe` runs a generic client, which knows nothing but the address.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
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


PROBE = Path(__file__).with_name("reflection_probe.py")


async def reflection_probe(address: str, *calls: str, token: str | None = None) -> dict[str, Any]:
    """Runs the generic client (``reflection_probe.py``) in its own process against ``address``.

    The process imports nothing of Trawl (its answer lists what it imported of it: nothing),
    so what it lists and calls it learnt from the server's reflection alone.
    """
    args = [sys.executable, "-I", str(PROBE), address, *calls, *(["--token", token] if token else [])]
    process = await asyncio.create_subprocess_exec(*args, stdout=asyncio.subprocess.PIPE,
                                                   stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode == 0, err.decode()
    answer: dict[str, Any] = json.loads(out)
    assert answer["trawl_modules"] == []
    return answer

"""Asks a service's standard gRPC health service whether it is serving."""

from __future__ import annotations

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


def check(address: str, timeout: float = 1.0) -> str:
    """'SERVING', 'NOT_SERVING', or 'UNREACHABLE'."""
    try:
        with grpc.insecure_channel(address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            reply = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=timeout)
            return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))
    except grpc.RpcError:
        return "UNREACHABLE"

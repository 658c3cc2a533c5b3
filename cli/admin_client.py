"""A small synchronous client of the scheduler's admin API."""

from __future__ import annotations

from types import TracebackType
from typing import Any

import grpc

from libs.common.wire import admin as admin_pb
from libs.common.wire import admin_grpc


class AdminClient:
    def __init__(self, address: str, timeout: float = 10.0) -> None:
        self._channel = grpc.insecure_channel(address)
        self._stub = admin_grpc.AdminServiceStub(self._channel)
        self._timeout = timeout

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._channel.close()

    def add_seeds(self, urls: list[str]) -> dict[str, Any]:
        reply = self._stub.AddSeeds(admin_pb.AddSeedsRequest(urls=urls), timeout=self._timeout)
        return {
            "accepted": reply.accepted,
            "already_known": reply.already_known,
            "rejected": [{"url": r.url, "reason": r.reason} for r in reply.rejected],
        }

    def pause(self, paused: bool) -> bool:
        if paused:
            return bool(self._stub.PauseCrawl(admin_pb.PauseCrawlRequest(), timeout=self._timeout).paused)
        return bool(self._stub.ResumeCrawl(admin_pb.ResumeCrawlRequest(), timeout=self._timeout).paused)

    def stats(self) -> dict[str, Any]:
        reply = self._stub.GetCrawlStats(admin_pb.GetCrawlStatsRequest(), timeout=self._timeout)
        return {
            "paused": reply.paused,
            "frontier": {c.status: c.count for c in reply.frontier},
            "in_flight": reply.in_flight,
            "hosts": reply.hosts,
            "fetched": reply.fetched_total,
            "failed": reply.failed_total,
            "robots_blocked": reply.robots_blocked_total,
            "queued_ready": reply.queued_ready,
        }

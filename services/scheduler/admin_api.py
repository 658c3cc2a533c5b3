"""The admin gRPC API (trawl.v1.AdminService): seeds, pause and resume, crawl stats."""

from __future__ import annotations

import logging
from collections.abc import Callable

import grpc

from libs.common.urls import InvalidUrl, normalize_url, url_fingerprint, url_host
from libs.common.wire import admin as admin_pb
from libs.common.wire import admin_grpc
from services.scheduler.frontier_store import FrontierStore, NewUrl

log = logging.getLogger(__name__)

SERVICE_NAME = "trawl.v1.AdminService"
MAX_SEEDS_PER_CALL = 100_000


class AdminApi(admin_grpc.AdminServiceServicer):
    def __init__(self, store: FrontierStore, on_change: Callable[[], None]) -> None:
        self._store = store
        self._on_change = on_change

    async def AddSeeds(
        self, request: admin_pb.AddSeedsRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> admin_pb.AddSeedsResponse:
        if len(request.urls) > MAX_SEEDS_PER_CALL:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"at most {MAX_SEEDS_PER_CALL} seeds per call")
        rows: list[NewUrl] = []
        rejected: list[admin_pb.RejectedSeed] = []
        for raw in request.urls:
            try:
                url = normalize_url(raw.strip())
            except InvalidUrl as exc:
                rejected.append(admin_pb.RejectedSeed(url=raw[:2048], reason=exc.reason))
                continue
            rows.append(NewUrl(url_fingerprint(url), url, url_host(url), 0, "seed"))
        unique = {r.url_fp: r for r in rows}
        accepted = await self._store.add_urls(list(unique.values()))
        log.info("seeds added: %s new, %s known, %s rejected", accepted, len(unique) - accepted, len(rejected))
        self._on_change()
        return admin_pb.AddSeedsResponse(
            accepted=accepted, already_known=len(unique) - accepted, rejected=rejected
        )

    async def PauseCrawl(
        self, request: admin_pb.PauseCrawlRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> admin_pb.CrawlState:
        await self._store.set_paused(True)
        log.info("crawl paused")
        return admin_pb.CrawlState(paused=True)

    async def ResumeCrawl(
        self, request: admin_pb.ResumeCrawlRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> admin_pb.CrawlState:
        await self._store.set_paused(False)
        self._on_change()
        log.info("crawl resumed")
        return admin_pb.CrawlState(paused=False)

    async def GetCrawlStats(
        self, request: admin_pb.GetCrawlStatsRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> admin_pb.CrawlStats:
        counts = await self._store.status_counts()
        return admin_pb.CrawlStats(
            paused=await self._store.is_paused(),
            frontier=[admin_pb.StatusCount(status=s, count=n) for s, n in sorted(counts.items())],
            in_flight=counts.get("in_flight", 0),
            hosts=await self._store.host_count(),
            fetched_total=counts.get("fetched", 0),
            failed_total=counts.get("failed", 0),
            robots_blocked_total=counts.get("blocked", 0),
            queued_ready=await self._store.ready_count(),
        )


def registrar(api: AdminApi) -> Callable[[grpc.aio.Server], None]:
    def register(server: grpc.aio.Server) -> None:
        admin_grpc.add_AdminServiceServicer_to_server(api, server)

    return register

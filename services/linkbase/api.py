"""gRPC ``trawl.v1.LinkbaseService``: URLs, their links and history, hosts, sites and seeds.

Requested URLs are normalised like every URL entering the system, so any spelling of a
known URL finds it. Errors: INVALID_ARGUMENT for a URL that cannot be crawled or a foreign
page token, NOT_FOUND for a URL, host or site the link base never saw, UNAVAILABLE while
the database is unreachable. ``UrlRecord.depth`` is -1 while the depth is unknown.

Every method, reads (the crawl's data) and writes (``AddSites``) alike, needs the admin
bearer token: the service's ``main`` serves the API with :func:`~libs.common.grpc_server.grpc_server_from`,
whose interceptor answers UNAUTHENTICATED before a method runs; health and reflection stay open.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn, TypeVar

import grpc
import psycopg

from libs.common.urls import InvalidUrl
from libs.common.wire import linkbase as lb_pb
from libs.common.wire import linkbase_grpc
from services.linkbase.graph import BadPageToken, GraphReader, LinkPage
from services.linkbase.history_reader import HistoryReader
from services.linkbase.rows import UrlRef, resolve
from services.linkbase.sites import BadSiteToken, SiteBook, SiteRequest

log = logging.getLogger(__name__)

SERVICE_NAME = "trawl.v1.LinkbaseService"
DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000
MAX_SITES_PER_CALL = 10_000

Context = grpc.aio.ServicerContext[Any, Any]
T = TypeVar("T")


def page_size(requested: int) -> int:
    """The page size to serve: the default when unset (or negative), capped at MAX_PAGE_SIZE."""
    if requested <= 0:
        return DEFAULT_PAGE_SIZE
    return min(requested, MAX_PAGE_SIZE)


def registrar(api: LinkbaseApi) -> Callable[[grpc.aio.Server], None]:
    """Registers ``api`` on a server (a :data:`~libs.common.grpc_server.Registrar`)."""

    def register(server: grpc.aio.Server) -> None:
        linkbase_grpc.add_LinkbaseServiceServicer_to_server(api, server)

    return register


class LinkbaseApi(linkbase_grpc.LinkbaseServiceServicer):
    def __init__(
        self, reader: GraphReader, history: HistoryReader, sites: SiteBook,
        on_seeds: Callable[[], None] = lambda: None,
    ) -> None:
        self._reader = reader
        self._history = history
        self._sites = sites
        self._on_seeds = on_seeds

    async def GetUrl(self, request: lb_pb.GetUrlRequest, context: Context) -> lb_pb.UrlRecord:
        ref = await _locate(request.url, context)
        record = await _query(context, lambda: self._reader.url_record(ref))
        if record is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"{ref.url} is not in the link base")
        return record

    async def GetInLinks(self, request: lb_pb.GetLinksRequest, context: Context) -> lb_pb.LinksPage:
        return await self._links(request, context, inbound=True)

    async def GetOutLinks(self, request: lb_pb.GetLinksRequest, context: Context) -> lb_pb.LinksPage:
        return await self._links(request, context, inbound=False)

    async def GetUrlHistory(self, request: lb_pb.GetUrlHistoryRequest, context: Context) -> lb_pb.UrlHistory:
        ref = await _locate(request.url, context)
        if await _query(context, lambda: self._reader.known(ref)) is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"{ref.url} is not in the link base")
        return await _query(context, lambda: self._history.history(ref, page_size(request.limit)))

    async def GetHost(self, request: lb_pb.GetHostRequest, context: Context) -> lb_pb.HostSummary:
        host = request.host.strip().lower().rstrip(".")
        summary = await _query(context, lambda: self._sites.host_summary(host))
        if summary is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"host {host[:200]!r} is not in the link base")
        return summary

    async def GetExternalLinks(self, request: lb_pb.GetExternalLinksRequest, context: Context) -> lb_pb.LinksPage:
        site = SiteRequest(request.site, page_size(request.page_size), request.page_token, request.target_domain,
                           request.anchor_contains, request.followable_only)
        try:
            found = await _query(context, lambda: self._sites.external_links(site))
        except BadSiteToken as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        if found is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"site {request.site[:200]!r} is not in the link base")
        links, token = found
        return lb_pb.LinksPage(links=links, next_page_token=token)

    async def AddSites(self, request: lb_pb.AddSitesRequest, context: Context) -> lb_pb.AddSitesResponse:
        if len(request.sites) > MAX_SITES_PER_CALL:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"at most {MAX_SITES_PER_CALL} sites per call")
        reply = await _query(context, lambda: self._sites.add_sites(list(request.sites)))
        self._on_seeds()  # announce the start URLs now, not at the outbox's next tick
        return reply

    async def _links(self, request: lb_pb.GetLinksRequest, context: Context, *, inbound: bool) -> lb_pb.LinksPage:
        ref = await _locate(request.url, context)
        size = page_size(request.page_size)
        page: LinkPage | None = None
        try:
            known = await _query(context, lambda: self._reader.known(ref))
            if known is not None:
                read = self._reader.in_links if inbound else self._reader.out_links
                page = await _query(context, lambda: read(ref, known, size, request.page_token))
        except BadPageToken as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        if page is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"{ref.url} is not in the link base")
        return lb_pb.LinksPage(links=page.links, next_page_token=page.next_token)


async def _locate(raw: str, context: Context) -> UrlRef:
    try:
        return resolve(raw)
    except InvalidUrl as exc:
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"not a crawlable URL ({exc.reason}): {raw[:200]}")


async def _query(context: Context, read: Callable[[], Awaitable[T]]) -> T:
    """Runs a read; a database outage becomes UNAVAILABLE."""
    try:
        return await read()
    except psycopg.OperationalError as exc:
        await _unavailable(context, exc)


async def _unavailable(context: Context, exc: Exception) -> NoReturn:
    log.warning("linkbase query failed: %s", exc)
    await context.abort(grpc.StatusCode.UNAVAILABLE, "the link base database is unavailable")

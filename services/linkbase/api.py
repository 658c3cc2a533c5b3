"""gRPC ``trawl.v1.LinkbaseService``: look up a URL, page through its in- and out-links.

Requested URLs are normalised like every URL entering the system, so any spelling of a
known URL finds it. Errors: INVALID_ARGUMENT for a URL that cannot be crawled or a
foreign page token, NOT_FOUND for a URL the link base never saw, UNAVAILABLE while the
database is unreachable. ``UrlRecord.depth`` is -1 while the depth is unknown.
"""

from __future__ import annotations

import logging
from typing import Any, NoReturn

import grpc
import psycopg

from libs.common.urls import InvalidUrl, normalize_url, url_fingerprint
from libs.common.wire import linkbase as lb_pb
from libs.common.wire import linkbase_grpc
from services.linkbase.graph import BadPageToken, GraphReader, LinkPage

log = logging.getLogger(__name__)

SERVICE_NAME = "trawl.v1.LinkbaseService"
DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000

Context = grpc.aio.ServicerContext[Any, Any]


def page_size(requested: int) -> int:
    """The page size to serve: the default when unset (or negative), capped at MAX_PAGE_SIZE."""
    if requested <= 0:
        return DEFAULT_PAGE_SIZE
    return min(requested, MAX_PAGE_SIZE)


class LinkbaseApi(linkbase_grpc.LinkbaseServiceServicer):
    def __init__(self, reader: GraphReader) -> None:
        self._reader = reader

    async def GetUrl(self, request: lb_pb.GetUrlRequest, context: Context) -> lb_pb.UrlRecord:
        url, fp = await self._locate(request.url, context)
        try:
            record = await self._reader.url_record(fp)
        except psycopg.OperationalError as exc:
            await _unavailable(context, exc)
        if record is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"{url} is not in the link base")
        return record

    async def GetInLinks(self, request: lb_pb.GetLinksRequest, context: Context) -> lb_pb.LinksPage:
        return await self._links(request, context, inbound=True)

    async def GetOutLinks(self, request: lb_pb.GetLinksRequest, context: Context) -> lb_pb.LinksPage:
        return await self._links(request, context, inbound=False)

    async def _links(self, request: lb_pb.GetLinksRequest, context: Context, *, inbound: bool) -> lb_pb.LinksPage:
        url, fp = await self._locate(request.url, context)
        size = page_size(request.page_size)
        page: LinkPage | None = None
        try:
            known = await self._reader.known(fp)
            if known is not None:
                read = self._reader.in_links if inbound else self._reader.out_links
                page = await read(fp, known, size, request.page_token)
        except BadPageToken as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        except psycopg.OperationalError as exc:
            await _unavailable(context, exc)
        if page is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"{url} is not in the link base")
        return lb_pb.LinksPage(links=page.links, next_page_token=page.next_token)

    @staticmethod
    async def _locate(raw: str, context: Context) -> tuple[str, int]:
        try:
            url = normalize_url(raw)
        except InvalidUrl as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"not a crawlable URL ({exc.reason}): {raw[:200]}")
        return url, url_fingerprint(url)


async def _unavailable(context: Context, exc: Exception) -> NoReturn:
    log.warning("linkbase query failed: %s", exc)
    await context.abort(grpc.StatusCode.UNAVAILABLE, "the link base database is unavailable")

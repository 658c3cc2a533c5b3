"""A cap on the informational (1xx) responses a server may send before its final response.

aiohttp reads every ``100 Continue``, ``102 Processing`` or ``103 Early Hints`` before the
final response and skips it, with no limit: a server that sends them endlessly keeps a
fetch busy until its total timeout, and since the connection's parser turns everything
one read brought into messages (each with its headers and a payload reader, about a
kilobyte) before the response gets to skip any, memory grows with the server's speed
(one such connection took a fetcher from 38 to 152 MiB, four to 495 MiB).

:class:`BoundedConnector` makes aiohttp's connections with :class:`BoundedResponseHandler`,
which counts the informational responses since the last final one and, past
``max_informational`` of them, drops the rest, stops reading the socket and fails the
request with :class:`TooManyInformationalResponses` (aiohttp raises it as the cause of a
``ClientResponseError``; :mod:`services.fetcher.http.http_client` makes that
:data:`ERROR_TOO_MANY_INFORMATIONAL`). The size of each one is already bounded by aiohttp's
header limits, so their count bounds their bytes.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any

import aiohttp
from aiohttp.client_proto import ResponseHandler
from aiohttp.http_exceptions import HttpProcessingError
from prometheus_client import Counter

logger = logging.getLogger(__name__)

__all__ = [
    "ERROR_TOO_MANY_INFORMATIONAL",
    "INFORMATIONAL_FLOODS",
    "BoundedConnector",
    "BoundedResponseHandler",
    "TooManyInformationalResponses",
]

ERROR_TOO_MANY_INFORMATIONAL = "protocol_error:too_many_informational_responses"
"""The error of a fetch whose server sent more informational responses than allowed."""

INFORMATIONAL_FLOODS = Counter(
    "trawl_fetcher_informational_floods_total",
    "Requests failed for more informational (1xx) responses before the final one than allowed.",
)


class TooManyInformationalResponses(HttpProcessingError):
    """More informational (1xx) responses than allowed came before the final response."""


def _informational(code: int) -> bool:
    return 100 <= code < 200 and code != 101  # 101 Switching Protocols is final


class BoundedResponseHandler(ResponseHandler):
    """aiohttp's connection protocol with a cap on informational responses (see the module docstring)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, max_informational: int) -> None:
        super().__init__(loop)
        self._max_informational = max_informational
        self._informational = 0
        self._flooded = False

    def feed_data(self, data: Any, size: int = 0) -> None:
        """Queue one parsed ``(message, payload)`` for the response reading it, unless it is one 1xx too many."""
        if self._flooded:
            return
        if _informational(data[0].code):
            self._informational += 1
            if self._informational > self._max_informational:
                self._flood()
                return
        else:
            self._informational = 0
        super().feed_data(data, size)

    def _flood(self) -> None:
        self._flooded = True
        INFORMATIONAL_FLOODS.inc()
        transport = self.transport
        if transport is not None and not transport.is_closing():
            transport.pause_reading()  # what is parsed from here on would be dropped anyway
        self.set_exception(TooManyInformationalResponses(
            message=f"more than {self._max_informational} informational responses"))


class BoundedConnector(aiohttp.TCPConnector):
    """A ``TCPConnector`` whose connections are :class:`BoundedResponseHandler` s.

    aiohttp has no public hook for the protocol its connector makes: the connector's
    ``_factory`` (what it makes each connection's protocol with, for TCP and TLS alike)
    is replaced, and a test pins that aiohttp still calls it.
    """

    def __init__(self, *, max_informational: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if max_informational < 0:
            raise ValueError("max_informational must be >= 0")
        self._factory = functools.partial(  # type: ignore[assignment]  # a ResponseHandler subclass
            BoundedResponseHandler, loop=self._loop, max_informational=max_informational
        )

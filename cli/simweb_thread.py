"""Serves a simulated web from a background thread of the calling process (for the end-to-end tests)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from libs.simweb import SimClock, SimWeb, SimWebServer
from libs.simweb.request_log import RequestRecord


class BackgroundSimWeb:
    def __init__(self, web: SimWeb, clock: SimClock | None = None, log_file: Path | None = None) -> None:
        self.web = web
        self.clock = clock or SimClock.frozen(web.start_time)
        self._server = SimWebServer(web, self.clock, log_file=log_file)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="simweb", daemon=True)

    def start(self) -> str:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._server.start(), self._loop).result(30)
        return self._server.url

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self._server.stop(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    @property
    def url(self) -> str:
        return self._server.url

    @property
    def request_log(self) -> list[RequestRecord]:
        return self._server.request_log

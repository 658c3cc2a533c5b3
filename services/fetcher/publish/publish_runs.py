"""Fetches published in runs: what finished is built and sent a few dozen at a time.

Building a fetch's result and outcome and handing them to the producer costs about 40 us
of the event loop when done as each fetch ends, between the HTTP client's callbacks, and
about 26 us when a run of them is done in a row (the same code, warm in the processor's
caches); the fetch path around it speeds up too. :class:`PublishRuns` keeps finished
fetches until ``batch`` of them wait, their bodies reach ``max_bytes`` or ``delay``
seconds have passed since the first, then publishes them in order. The bodies waiting
are thus at most ``max_bytes`` plus one body, whatever the pages' sizes.

Nothing is acknowledged before it is published: the producer drains the run before every
flush (:meth:`~libs.common.kafka.producer.TopicProducer.before_flush`), and consumers
commit their input only after a flush. A fetch whose publishing raises is logged and
counted, and the next flush raises, so the consumer does not commit it (it is fetched
again after a restart, as after any failed delivery).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from prometheus_client import Counter

from libs.common.wire import messages as pb
from services.fetcher.fetch_core import FetchAttempt

log = logging.getLogger(__name__)

Publish = Callable[[pb.FetchRequest, FetchAttempt], None]

PUBLISH_FAILURES = Counter(
    "trawl_fetcher_publish_failures_total", "Finished fetches whose result or outcome could not be published."
)


class PublishFailed(RuntimeError):
    """Finished fetches could not be published: their input must not be committed."""


class PublishRuns:
    """Calls ``publish(request, attempt)`` per finished fetch, in runs of up to ``batch`` fetches and ``max_bytes``
    of bodies, at most ``delay`` s late."""

    def __init__(self, publish: Publish, batch: int, delay: float, max_bytes: int = 4 << 20) -> None:
        if batch < 1 or delay < 0 or max_bytes < 0:
            raise ValueError(f"publish runs need batch >= 1, delay >= 0 and max_bytes >= 0, not {batch}, {delay}"
                             f" and {max_bytes}")
        self._publish = publish
        self._batch = batch
        self._delay = delay
        self._max_bytes = max_bytes
        self._bytes = 0
        self._pending: list[tuple[pb.FetchRequest, FetchAttempt]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._failed = 0

    @property
    def pending(self) -> int:
        return len(self._pending)

    def submit(self, request: pb.FetchRequest, attempt: FetchAttempt) -> None:
        """Queues one finished fetch; publishes the run now if it is full (at once with ``batch`` 1)."""
        self._pending.append((request, attempt))
        if attempt.response is not None:
            self._bytes += len(attempt.response.body)
        if len(self._pending) >= self._batch or self._bytes >= self._max_bytes:
            self.drain()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._delay, self.drain)

    def drain(self) -> None:
        """Publishes everything waiting, in order; a failure is logged and kept for :meth:`check`."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        run, self._pending = self._pending, []
        self._bytes = 0
        publish = self._publish
        for request, attempt in run:
            try:
                publish(request, attempt)
            except Exception:
                self._failed += 1
                PUBLISH_FAILURES.inc()
                log.exception("publishing a finished fetch failed; its request will not be committed")

    def before_flush(self) -> None:
        """Drains, then raises :class:`PublishFailed` if anything failed since the last call."""
        self.drain()
        failed, self._failed = self._failed, 0
        if failed:
            raise PublishFailed(f"{failed} finished fetch(es) could not be published")

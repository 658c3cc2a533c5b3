"""Tells the importance service of seeded URLs (``trawl.seeds``), so that AOPIC starts from them.

The importance service otherwise learns of a page from the page links of its crawl: a seed
would join with no cash at its own first crawl, and its links would get theirs only later,
from the virtual page's dividends and the replays that follow. Told of the seeds first, its
virtual page pays them (at the start of a crawl, all of its cash, the seeds alike), so a seed's
crawl passes cash on to its links with the batch that applies it.

The announcement is advice: a seed is accepted once the frontier holds it, and is crawled
whether or not the announcement reaches the broker. One the broker has not acknowledged within the
timeout is logged and counted (``trawl_scheduler_seed_announcements_failed_total``), and the seed's
links get their cash as any page's do. The producer keeps trying to deliver it meanwhile, and a
flush in the background waits for the outcome: the producer reports itself stalled (the service
exits to be restarted) only while messages stay unacknowledged, as for the scheduler's requests.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

from confluent_kafka import KafkaException
from prometheus_client import Counter

from libs.common.kafka.producer import DeliveryFailed, TopicProducer
from libs.common.topics import SEEDS
from libs.common.url_keys import key_text, normalized_fingerprint
from libs.common.wire import messages as pb

log = logging.getLogger(__name__)

ANNOUNCE_FAILED = Counter(
    "trawl_scheduler_seed_announcements_failed_total",
    "Seeded URLs the importance service could not be told of (the broker did not acknowledge them); they are "
    "crawled all the same.",
)


class SeedAnnouncer:
    def __init__(self, producer: TopicProducer, timeout: float = 10.0) -> None:
        """``timeout``: seconds to wait for the broker's acknowledgements before giving up on a call's seeds."""
        self._producer = producer
        self._timeout = timeout
        self._settling: asyncio.Task[None] | None = None

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        """Stops waiting for earlier seeds' acknowledgements (the producer's own stop flushes what is left)."""
        if self._settling is not None:
            self._settling.cancel()
            await asyncio.gather(self._settling, return_exceptions=True)
            self._settling = None

    async def announce(self, urls: Sequence[str]) -> bool:
        """Sends one ``Seed`` per normalised URL, keyed by its fingerprint, and waits for the broker; returns
        whether every one was acknowledged."""
        if not urls:
            return True
        now_ms = int(time.time() * 1000)
        try:
            for url in urls:
                self._producer.send(SEEDS, key_text(normalized_fingerprint(url)), pb.Seed(url=url, added_at_ms=now_ms))
            await self._producer.flush(self._timeout)
        except Exception as exc:  # the broker is away or refused them: the seeds are queued all the same
            ANNOUNCE_FAILED.inc(len(urls))
            log.warning("%s seeds not announced to the importance service (%s): their links get cash later",
                        len(urls), exc)
            if self._settling is None or self._settling.done():
                self._settling = asyncio.create_task(self._settle(), name="seed-announcements")
            return False
        return True

    async def _settle(self) -> None:
        """Flushes until what was sent is acknowledged or has failed for good (or the producer stopped)."""
        while True:
            try:
                await self._producer.flush(self._timeout)
                return
            except KafkaException:  # stopped
                return
            except DeliveryFailed:
                await asyncio.sleep(1.0)

"""Turns each fetch request into a fetch result and a fetch outcome.

The consumer runs many requests at once (one task each); the politeness layer makes
requests to the same host wait their turn. Results carry the (capped) body in the codec
of :mod:`services.fetcher.publish.result_body` (as fetched by default: the producer compresses
batches), always within the producer's largest message; outcomes are small and tell the
scheduler the host's next allowed time. The URLs a fetch was redirected through and to are
published as discoveries (:mod:`services.fetcher.publish.discoveries`). With ``publish_batch`` above
one, finished fetches are published in runs (:mod:`services.fetcher.publish.publish_runs`), always
before the producer's next flush.
With a :class:`~services.fetcher.partitions.handoff.Handoff`, requests of partitions this fetcher
does not (or no longer) own are not fetched but handed on: sent again to their
partition, stamped with the host's next allowed time.
"""

from __future__ import annotations

import logging
import time
from collections import Counter as Tally
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from prometheus_client import Counter, Gauge, Histogram

from libs.common.errors import PoisonMessage
from libs.common.kafka.consumer import Record
from libs.common.kafka.producer import TopicProducer
from libs.common.topics import FETCH_OUTCOMES, FETCH_REQUESTS, FETCH_RESULTS
from libs.common.wire import messages as pb
from services.fetcher.clock import Clock, from_unix_ms, to_unix_ms
from services.fetcher.fetch_core import FetchAttempt, FetchCore
from services.fetcher.http.http_response import HttpResponse
from services.fetcher.http.revisit_validators import Validators
from services.fetcher.partitions.handoff import Handoff
from services.fetcher.publish.discoveries import DiscoveryPublisher
from services.fetcher.publish.publish_runs import Publish, PublishRuns
from services.fetcher.publish.result_body import encode_body, was_cut

log = logging.getLogger(__name__)

FETCHES = Counter("trawl_fetches_total", "Fetch attempts by outcome and HTTP status class.", ["outcome", "status"])
FETCH_BYTES = Counter("trawl_fetch_bytes_total", "Decoded body bytes fetched.")
FETCH_SECONDS = Histogram(
    "trawl_fetch_seconds",
    "Time of a fetch (request to end of body).",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
IN_FLIGHT = Gauge("trawl_fetcher_in_flight", "Fetch requests in hand: waiting for their host's turn or fetching.")
HOSTS_IN_FLIGHT = Gauge("trawl_fetcher_hosts_in_flight", "Hosts with a fetch request in hand.")
HOST_IN_FLIGHT_MAX = Gauge("trawl_fetcher_host_in_flight_max", "Most fetch requests in hand for one host.")
PARKED_HOSTS = Gauge("trawl_fetcher_parked_hosts", "Hosts refusing requests after repeated failures.")
HANDED_ON = Counter("trawl_fetcher_handed_on_total", "Fetch requests handed on to a partition's next owner.")
FINISHED_BEFORE = Counter(
    "trawl_fetcher_finished_before_total",
    "Inherited fetch requests not fetched again: the partition's previous owner had published their outcome.",
)

STATUS = {
    "ok": pb.FETCH_STATUS_OK,
    "not_modified": pb.FETCH_STATUS_NOT_MODIFIED,
    "http_error": pb.FETCH_STATUS_HTTP_ERROR,
    "network_error": pb.FETCH_STATUS_NETWORK_ERROR,
    "robots_disallowed": pb.FETCH_STATUS_ROBOTS_DISALLOWED,
    "too_large": pb.FETCH_STATUS_TOO_LARGE,
    "invalid_url": pb.FETCH_STATUS_INVALID_URL,
    "unsupported_type": pb.FETCH_STATUS_UNSUPPORTED_TYPE,
    "redirect_disallowed": pb.FETCH_STATUS_REDIRECT,
    "host_parked": pb.FETCH_STATUS_NETWORK_ERROR,
    "politeness_timeout": pb.FETCH_STATUS_NETWORK_ERROR,
    "handed_over": pb.FETCH_STATUS_NETWORK_ERROR,
}


class FetchWorker:
    """Fetches requests and publishes their results, outcomes and redirect discoveries.

    ``body_codec`` is how results carry bodies (see :mod:`services.fetcher.publish.result_body`);
    ``max_message_bytes`` is the producer's largest message, which every result fits in.
    Without ``discoveries``, redirects are not announced. Finished fetches are published in
    runs of ``publish_batch`` (and at most ``publish_bytes`` of bodies), at most ``publish_delay``
    seconds late (1: each at once).
    """

    def __init__(
        self,
        core: FetchCore,
        producer: TopicProducer,
        clock: Clock,
        handoff: Handoff | None = None,
        *,
        discoveries: DiscoveryPublisher | None = None,
        body_codec: str = "identity",
        max_message_bytes: int | None = None,
        publish_batch: int = 1,
        publish_delay: float = 0.0,
        publish_bytes: int = 4 << 20,
    ) -> None:
        encode_body(b"", body_codec)  # an unknown codec fails here, not at the first fetch
        self._core = core
        self._producer = producer
        self._clock = clock
        self._handoff = handoff
        self._discoveries = discoveries
        self._body_codec = body_codec
        self._max_message_bytes = max_message_bytes
        self._hosts: Tally[str] = Tally()
        self._finished: Publish = self.publish
        if publish_batch > 1:
            runs = PublishRuns(self.publish, publish_batch, publish_delay, publish_bytes)
            producer.before_flush(runs.before_flush)
            self._finished = runs.submit

    @contextmanager
    def _in_hand(self, host: str) -> Iterator[None]:
        """Counts the request in the in-flight gauges while it waits for its host and is fetched."""
        self._hosts[host] += 1
        self._export_in_flight()
        try:
            yield
        finally:
            self._hosts[host] -= 1
            if self._hosts[host] <= 0:
                del self._hosts[host]
            self._export_in_flight()

    def _export_in_flight(self) -> None:
        IN_FLIGHT.set(self._hosts.total())
        HOSTS_IN_FLIGHT.set(len(self._hosts))
        HOST_IN_FLIGHT_MAX.set(max(self._hosts.values(), default=0))

    async def __call__(self, records: Sequence[Record[pb.FetchRequest]]) -> None:
        for record in records:
            await self.handle_record(record)

    async def handle_record(self, record: Record[pb.FetchRequest]) -> None:
        """Fetch one request of ``record``'s partition, or hand it on if the partition is not owned here."""
        request = record.value
        if not request.url or not request.request_id:
            raise PoisonMessage("fetch request without url or request id")
        if self._handoff is None:
            await self.handle(request)
            return
        try:
            if await self._handoff.finished_before(record):
                FINISHED_BEFORE.inc()
                log.info("finished by the partition's previous owner", extra={"url": request.url, "host": request.host})
                return
            if not await self._handoff.admit(record):
                self.hand_on(record, self._handoff.stamp_ms(request.host))
                return
            attempt = await self._fetch(request)
            if attempt.outcome == "handed_over":
                self.hand_on(record, self._handoff.stamp_ms(request.host))
                return
            self._finished(request, attempt)
        finally:
            self._handoff.finish(record)

    async def handle(self, request: pb.FetchRequest) -> None:
        """Fetch ``request`` (no partition ownership kept), not before the host time it is stamped with."""
        if not request.url or not request.request_id:
            raise PoisonMessage("fetch request without url or request id")
        if request.host_not_before_ms > 0:
            not_before = from_unix_ms(self._clock, request.host_not_before_ms)
            self._core.take_key(await self._core.politeness_key(request.host), not_before)
        self._finished(request, await self._fetch(request))

    async def _fetch(self, request: pb.FetchRequest) -> FetchAttempt:
        validators = None
        if request.etag or request.last_modified:  # a revisit of a page captured with validators
            validators = Validators(request.etag, request.last_modified, request.validated_at_ms / 1000.0)
        with self._in_hand(request.host):
            return await self._core.fetch(request.url, min_delay=request.min_delay_seconds, validators=validators)

    def hand_on(self, record: Record[Any], not_before_ms: int) -> None:
        """Send ``record``'s request again to its partition, for its next owner, stamped with the host's state."""
        request = pb.FetchRequest()
        request.CopyFrom(record.value)
        request.host_not_before_ms = max(int(request.host_not_before_ms), not_before_ms)
        self._producer.send(FETCH_REQUESTS, record.key, request)
        HANDED_ON.inc()
        log.info("handed on to the next owner", extra={"url": request.url, "host": request.host})

    def finished(self, request: pb.FetchRequest, attempt: FetchAttempt) -> None:
        """Publishes a finished fetch: at once, or in the next run (see ``publish_batch``)."""
        self._finished(request, attempt)

    def publish(self, request: pb.FetchRequest, attempt: FetchAttempt) -> None:
        response = attempt.response
        outcome = attempt.outcome
        status = STATUS[outcome]
        http_status = response.status if response else 0
        fetched_at_ms = int(time.time() * 1000)
        elapsed_ms = int(response.elapsed * 1000) if response else 0
        error = "" if outcome in ("ok", "not_modified") else (attempt.detail or (response.error if response else ""))
        _fetches(outcome, http_status).inc()
        level = logging.DEBUG if outcome in ("ok", "not_modified") else logging.INFO
        if log.isEnabledFor(level):
            log.log(level, "fetch %s: %s", outcome, error[:300] or http_status,
                    extra={"url": request.url, "host": request.host, "http_status": http_status,
                           "outcome": outcome})
        if response is not None:
            FETCH_SECONDS.observe(response.elapsed)
            FETCH_BYTES.inc(len(response.body))
            if outcome in ("ok", "too_large", "http_error"):  # a 304 (not_modified) leaves nothing to extract
                self._producer.send(FETCH_RESULTS, request.host, self.result_message(
                    request, response, status, error, fetched_at_ms, elapsed_ms))
            if self._discoveries is not None and (response.redirect_chain or response.error):
                self._discoveries.redirects(request.url, request.depth, response)
        validators = attempt.validators
        self._producer.send(
            FETCH_OUTCOMES,
            request.host,
            pb.FetchOutcome(
                request_id=request.request_id,
                url=request.url,
                host=request.host,
                status=status,
                http_status=http_status,
                error=error[:2000],
                retryable=attempt.retryable,
                fetched_at_ms=fetched_at_ms,
                elapsed_ms=elapsed_ms,
                final_url=response.final_url if response else "",
                attempt=request.attempt,
                body_size=len(response.body) if response else 0,
                host_next_allowed_at_ms=to_unix_ms(self._clock, attempt.host_next_allowed_at),
                etag=validators.etag if validators else "",
                last_modified=validators.last_modified if validators else "",
            ),
        )

    def result_message(self, request: pb.FetchRequest, response: HttpResponse, status: pb.FetchStatus.ValueType,
                error: str, fetched_at_ms: int, elapsed_ms: int) -> pb.FetchResult:
        """The fetch result, its body encoded within the room the rest of the message leaves."""
        result = pb.FetchResult(
            request_id=request.request_id,
            url=request.url,
            final_url=response.final_url,
            host=request.host,
            status=status,
            http_status=response.status,
            body_size=len(response.body),
            truncated=response.truncated,
            fetched_at_ms=fetched_at_ms,
            elapsed_ms=elapsed_ms,
            error=error,
            redirect_chain=response.redirect_chain,
            content_type=response.content_type,
            depth=request.depth,
            x_robots_tag=response.joined_header("X-Robots-Tag"),
        )
        add_header = result.headers.add
        for name, value in response.headers[:200]:
            add_header(name=name, value=value[:8192])
        room = None
        if self._max_message_bytes is not None:
            room = self._max_message_bytes - result.ByteSize() - 16  # the body field's tag, length and codec name
        body, codec = encode_body(response.body, self._body_codec, room)
        if was_cut(response.body, body, codec):
            result.truncated = True
            log.warning("body of %s cut to %d bytes to fit a message", request.url, len(body))
        result.body = body
        result.body_codec = codec
        return result


_FETCH_COUNTERS: dict[tuple[str, int], Counter] = {}


def _fetches(outcome: str, http_status: int) -> Counter:
    """The ``trawl_fetches_total`` child of ``outcome`` and ``http_status``'s class (looked up once each)."""
    key = (outcome, http_status // 100)
    child = _FETCH_COUNTERS.get(key)
    if child is None:
        child = _FETCH_COUNTERS[key] = FETCHES.labels(outcome, f"{key[1]}xx" if http_status else "none")
    return child

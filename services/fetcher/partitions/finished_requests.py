"""Requests a previous owner of a partition already finished: not to be fetched again.

A fetcher commits the requests it finished every ``TRAWL_FETCHER_COMMIT_INTERVAL``, after
their results and outcomes were acknowledged. One that is killed leaves the requests it
finished since its last commit to the partition's next owner, which would fetch them again
(the server sees the page twice; the scheduler ignores the second outcome). A burst of
fetches just before a crash (a fetcher that just took its partitions over releases every
held host at once) made that a few percent of a crawl's pages in the end-to-end kill test.

The next owner looks them up instead. Outcomes and results are keyed by host like the
requests (``libs.common.topics``), so a request's outcome and result are in the partition
of the same number. For a partition taken over, the first inherited request (produced
before the assignment) has this read, once per assignment, the partition's outcomes and
results from its production time (less a margin) to the end; an inherited request whose
outcome is there, and whose result too when its outcome has one, was finished by the
previous owner and is skipped. A previous owner is dead or settled by the time of the
assignment, so everything it produced is on the topics by then. Requests keyed
``host#group`` (large hosts) map to another partition and are fetched as before, and so is
every request when the read fails.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from google.protobuf.message import DecodeError

from libs.common.kafka.ends import offsets_since, read_to_end
from libs.common.kafka.settings import KafkaSettings
from libs.common.topics import FETCH_OUTCOMES, FETCH_REQUESTS, FETCH_RESULTS
from libs.common.wire import messages as pb

log = logging.getLogger(__name__)

MARGIN_MS = 10_000
"""How long before a request's production its outcome is looked for (clocks of scheduler, fetcher and broker)."""

WITH_RESULT = frozenset({pb.FETCH_STATUS_OK, pb.FETCH_STATUS_TOO_LARGE, pb.FETCH_STATUS_HTTP_ERROR})
"""Outcomes whose fetch also produced a result (the body for the extractor)."""

_Key = tuple[int, int]  # (partition, assignment time in ms)


class FinishedRequests:
    """Which inherited requests the previous owner of their partition finished (see the module docstring)."""

    def __init__(self, kafka: KafkaSettings, read_timeout: float = 10.0) -> None:
        if not FETCH_OUTCOMES.partitions == FETCH_RESULTS.partitions == FETCH_REQUESTS.partitions:
            raise ValueError("fetch requests, results and outcomes must have the same partition count")
        self._bootstrap = kafka.bootstrap
        self._outcomes = kafka.topic(FETCH_OUTCOMES.name)
        self._results = kafka.topic(FETCH_RESULTS.name)
        self._read_timeout = read_timeout
        self._reads: dict[_Key, tuple[int, asyncio.Future[frozenset[str]]]] = {}

    async def finished(self, partition: int, assigned_at_ms: int, request_id: str, produced_ms: int) -> bool:
        """Whether the request ``request_id`` of ``partition`` (owned since ``assigned_at_ms``) is already done."""
        key = (partition, assigned_at_ms)
        since_ms = produced_ms - MARGIN_MS
        known = self._reads.get(key)
        if known is None or known[0] > since_ms:
            for other in [k for k in self._reads if k[0] == partition and k != key]:
                del self._reads[other]  # an earlier assignment's read
            future = asyncio.ensure_future(asyncio.to_thread(self._read, partition, since_ms))
            known = self._reads[key] = (since_ms, future)
        try:
            done = await asyncio.shield(known[1])
        except Exception as exc:
            log.warning("could not read what partition %s's previous owner finished (fetching again): %s",
                        partition, exc)
            if self._reads.get(key) is known:
                del self._reads[key]
            return False
        return request_id in done

    def _read(self, partition: int, since_ms: int) -> frozenset[str]:
        wanted = [(self._outcomes, partition), (self._results, partition)]
        starts = offsets_since(self._bootstrap, wanted, since_ms, self._read_timeout, "finished-requests")
        outcomes: dict[str, int] = {}
        results: set[str] = set()

        def collect(message: Any) -> None:
            try:
                if message.topic() == self._outcomes:
                    outcome = pb.FetchOutcome.FromString(message.value())
                    outcomes[outcome.request_id] = outcome.status
                else:
                    results.add(pb.FetchResult.FromString(message.value()).request_id)
            except DecodeError:  # not ours to judge: its consumers dead-letter it
                pass

        ends = read_to_end(self._bootstrap, starts, timeout=self._read_timeout, on_message=collect,
                           purpose="finished-requests")
        if len(ends) < len(starts):
            raise TimeoutError(f"partition {partition} of the outcomes or results not read to its end")
        return frozenset(rid for rid, status in outcomes.items() if status not in WITH_RESULT or rid in results)

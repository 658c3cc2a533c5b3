"""What the scheduler does with each consumed message: admit URLs, set priorities, apply outcomes."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from libs.common.errors import PoisonMessage
from libs.common.followed_links import MAX_COUNTED_OCCURRENCES
from libs.common.kafka.consumer import Record, TopicHandler
from libs.common.topics import DISCOVERED_URLS, FETCH_OUTCOMES, IMPORTANCE_UPDATES, PAGE_LINK_COUNTS
from libs.common.url_keys import normalized_fingerprint, normalized_host
from libs.common.urls import InvalidUrl, normalize_url
from libs.common.wire import messages as pb
from services.scheduler.bandits.goal_sites import GoalSites
from services.scheduler.frontier.priority import crawl_priority
from services.scheduler.frontier.store import FrontierStore, NewUrl, Outcome, Priority, utc_from_ms
from services.scheduler.sent_urls import SentUrls
from services.scheduler.settings import SchedulerSettings

log = logging.getLogger(__name__)

_SOURCES = {
    pb.DISCOVERY_SOURCE_SEED: "seed",
    pb.DISCOVERY_SOURCE_LINK: "link",
    pb.DISCOVERY_SOURCE_REDIRECT: "redirect",
    pb.DISCOVERY_SOURCE_SITEMAP: "sitemap",
}


# The linkbase's trap penalty multiplies priorities by 1 - penalty; kept below 1 so that a
# penalty can be replaced later (see frontier/store.py, _reweigh_paths).
MAX_PATH_PENALTY = 0.99
_MAX_VALIDATOR = 1024  # the fetcher keeps no longer ETag; a bound on what a row keeps all the same (longer: none)


def frontier_status(outcome: pb.FetchOutcome) -> str:
    """The frontier status a fetch outcome leads to ('retry' means: again later, if attempts remain)."""
    status = outcome.status
    if status in (pb.FETCH_STATUS_OK, pb.FETCH_STATUS_TOO_LARGE, pb.FETCH_STATUS_NOT_MODIFIED):
        return "fetched"  # a 304 too: the page was fetched, and seen unchanged
    if status in (pb.FETCH_STATUS_ROBOTS_DISALLOWED, pb.FETCH_STATUS_REDIRECT):
        return "blocked"
    if status == pb.FETCH_STATUS_UNSUPPORTED_TYPE:
        return "skipped"
    if status == pb.FETCH_STATUS_INVALID_URL:
        return "failed"
    if status in (pb.FETCH_STATUS_HTTP_ERROR, pb.FETCH_STATUS_NETWORK_ERROR):
        return "retry" if outcome.retryable else "failed"
    raise PoisonMessage(f"fetch outcome with unknown status {status}")


def _checked(url: str) -> tuple[str, str, int]:
    try:
        norm = normalize_url(url)
    except InvalidUrl as exc:
        raise PoisonMessage(f"invalid URL {url[:200]!r}: {exc.reason}") from exc
    return norm, normalized_host(norm), normalized_fingerprint(norm)  # one normalisation, not three


class SchedulerHandler:
    """Consumer handlers for discovered URLs, importance updates, fetch outcomes and page link counts, one method
    per topic (:meth:`topic_handlers`)."""

    def __init__(
        self, store: FrontierStore, settings: SchedulerSettings, on_change: Callable[[], None] = lambda: None,
        sent: SentUrls | None = None, goal_sites: GoalSites | None = None,
    ) -> None:
        """``goal_sites``: where pages' external links are credited (None: a crawl that keeps no goal's statistics)."""
        self._store = store
        self._goal_sites = goal_sites
        self._settings = settings
        self._on_change = on_change
        self._sent = sent  # the dispatcher's requests: their outcomes' URLs are normalised already

    def topic_handlers(self) -> list[TopicHandler[Any]]:
        """What the consumer hands each input topic's records to."""
        return [
            TopicHandler(DISCOVERED_URLS, self.discovered_urls),
            TopicHandler(IMPORTANCE_UPDATES, self.importance_updates),
            TopicHandler(FETCH_OUTCOMES, self.fetch_outcomes),
            TopicHandler(PAGE_LINK_COUNTS, self.page_link_counts),
        ]

    async def discovered_urls(self, records: Sequence[Record[pb.DiscoveredUrl]]) -> None:
        """Admits new URLs to the frontier."""
        new: list[NewUrl] = []
        for record in records:
            msg = record.value
            url, host, fp = _checked(msg.url)
            new.append(NewUrl(fp, url, host, max(0, msg.depth), _SOURCES.get(msg.source, "link"),
                              discovered_from=msg.discovered_from, path_key=msg.path_key[:300],
                              path_penalty=min(max(msg.path_penalty, 0.0), MAX_PATH_PENALTY),
                              occurrences=min(max(msg.occurrences, 1), MAX_COUNTED_OCCURRENCES)))
        if new:
            await self._store.add_urls(new)
            self._on_change()  # URLs queued: dispatch now, not at the next tick

    async def importance_updates(self, records: Sequence[Record[pb.ImportanceUpdates]]) -> None:
        """Sets the priorities of known URLs (one message: one host's pages; a URL that is not valid spoils it)."""
        priorities: list[Priority] = []
        for record in records:
            for update in record.value.updates:
                url, host, fp = _checked(update.url)
                priorities.append(Priority(fp, url, host, crawl_priority(float(update.cash))))
        if priorities:
            await self._store.set_priorities(priorities)

    async def fetch_outcomes(self, records: Sequence[Record[pb.FetchOutcome]]) -> None:
        """Applies fetch outcomes: frees their hosts, and fetched, retried or failed their URLs."""
        outcomes: list[Outcome] = []
        for record in records:
            msg = record.value
            if not msg.request_id:
                raise PoisonMessage("fetch outcome without request id")
            known = self._sent.answered(msg.url) if self._sent is not None else None
            if known is not None:
                host, fp = known
            else:
                _, host, fp = _checked(msg.url)
            outcomes.append(
                Outcome(
                    url_fp=fp,
                    request_id=msg.request_id,
                    host=host,
                    status=frontier_status(msg),
                    http_status=msg.http_status,
                    outcome=pb.FetchStatus.Name(msg.status),
                    error=msg.error,
                    fetched_at=utc_from_ms(msg.fetched_at_ms or record.timestamp_ms),
                    host_next_allowed_at=utc_from_ms(msg.host_next_allowed_at_ms)
                    if msg.host_next_allowed_at_ms
                    else None,
                    etag=msg.etag if len(msg.etag) <= _MAX_VALIDATOR else "",
                    last_modified=msg.last_modified if len(msg.last_modified) <= _MAX_VALIDATOR else "",
                )
            )
        if outcomes:
            await self._store.apply_outcomes(
                outcomes, self._settings.max_attempts, self._settings.retry_base_seconds
            )
            self._on_change()  # hosts were freed: dispatch now, not at the next tick

    async def page_link_counts(self, records: Sequence[Record[pb.PageLinkCounts]]) -> None:
        """Credits pages' external links to their crawl goal's sites (a goal's reward)."""
        external: dict[int, tuple[str, int]] = {}  # page fp -> (host, external links)
        for record in records:
            msg = record.value
            _, host, fp = _checked(msg.url)
            external.setdefault(fp, (host, max(0, msg.external_links)))  # the first count of a page wins
        if external and self._goal_sites is not None:
            await self._goal_sites.credit_link_counts(external)

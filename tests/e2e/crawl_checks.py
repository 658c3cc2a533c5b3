"""What a finished crawl must show, whatever faults it went through.

- every reachable allowed page of the simulated web was requested, and how many
  page requests went beyond the first per URL (refetches);
- no discovered URL was lost: every URL the linkbase announced is in the frontier
  and ended fetched or with a recorded outcome, none is left pending, and every
  URL the linkbase keeps unannounced is the target of nofollow links only;
- politeness and robots.txt from the server's side;
- the importance service's cash is conserved.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli.crawl_report import politeness_check
from libs.common.urls import normalize_url
from libs.simweb import SimWeb
from libs.simweb.request_log import RequestRecord
from services.importance.cash_store import CONSERVATION_SQL
from tests.e2e.crawl_harness import CrawlStack

ENDED = ("fetched", "blocked", "failed", "skipped")


def expected_pages(web: SimWeb) -> set[str]:
    return {normalize_url(u) for u in web.reachable(web.home_pages())}


@dataclass(frozen=True)
class Refetches:
    pages: int  # distinct pages requested
    extra: int  # page requests beyond the first per URL
    urls: dict[str, int]  # the URLs requested more than once, with their count

    @property
    def share(self) -> float:
        return self.extra / max(1, self.pages)


def refetches(log: Sequence[RequestRecord]) -> Refetches:
    requested = Counter(r.url for r in log if r.path != "/robots.txt")
    again = {u: n for u, n in requested.items() if n > 1}
    return Refetches(len(requested), sum(n - 1 for n in again.values()), again)


def requested_pages(log: Sequence[RequestRecord]) -> set[str]:
    return {r.url for r in log if r.path != "/robots.txt"}


def lost_urls(stack: CrawlStack) -> dict[str, list[Any]]:
    """Discovered URLs that did not end fetched, or with an outcome the frontier records (empty: none lost)."""
    lost: dict[str, list[Any]] = {}
    lost["announced_not_in_frontier"] = stack.query(
        "SELECT u.url FROM linkbase.urls u LEFT JOIN scheduler.frontier f ON f.url_fp = u.url_fp"
        " WHERE u.announce_state = 2 AND f.url_fp IS NULL")
    lost["still_pending_announcement"] = stack.query("SELECT url FROM linkbase.urls WHERE announce_state = 1")
    lost["not_ended"] = stack.query(
        "SELECT url, status FROM scheduler.frontier WHERE status <> ALL(%s)", list(ENDED))
    lost["ended_without_reason"] = stack.query(
        "SELECT url, status FROM scheduler.frontier WHERE status IN ('blocked', 'failed', 'skipped')"
        " AND coalesce(last_outcome, '') = '' AND coalesce(last_error, '') = ''")
    lost["unannounced_with_a_followed_link"] = stack.query(
        "SELECT u.url FROM linkbase.urls u WHERE u.announce_state = 0 AND EXISTS"
        " (SELECT 1 FROM linkbase.links l WHERE l.target_fp = u.url_fp AND NOT l.nofollow)")
    return {what: rows for what, rows in lost.items() if rows}


def lease_expiries(stack: CrawlStack, extra_logs: Sequence[Path] = ()) -> int:
    """Requests the schedulers queued again because no outcome came within the lease (from their logs)."""
    logs = [stack.processes["scheduler"].log_path, *extra_logs]
    return sum(int(n) for path in logs for n in re.findall(r"(\d+) in-flight requests expired", path.read_text()))


def frontier_statuses(stack: CrawlStack) -> dict[str, int]:
    return {status: n for status, n in stack.query("SELECT status, count(*) FROM scheduler.frontier GROUP BY 1")}


def politeness_faults(log: Sequence[RequestRecord], web: SimWeb, min_delay: float) -> dict[str, Any]:
    """Robots violations, hosts served twice at once and gaps below the host's delay (empty: none)."""
    verdict = politeness_check(log, web, min_delay)
    faults = {key: verdict[key] for key in ("robots_violations", "hosts_with_two_in_flight",
                                            "hosts_with_gap_below_delay")}
    return {key: value for key, value in faults.items() if value}


def conserved_cash(stack: CrawlStack, timeout: float = 30.0) -> tuple[float, float]:
    """(cash accounted for, total) once every partition's audit is current (after an idle snapshot)."""
    deadline = time.monotonic() + timeout
    while True:
        ((accounted, total),) = stack.query(CONSERVATION_SQL)
        if accounted is not None:
            return float(accounted), float(total)
        assert time.monotonic() < deadline, "the importance partitions' audits never became current"
        time.sleep(0.5)

"""The whole loop on an accelerated clock: the scheduler learns when the simulated web's hubs publish
(daily cycle, quiet nights and weekends, per-hub shifts, bursts) and fetches busy hubs more often at
busy hours and less at quiet ones.

The simulated web and the scheduler run on the same clock, 1,800 times real time (half an hour a
second): the web's hubs publish on it, and the scheduler plans on it (``TRAWL_SCHEDULER_CLOCK_*``).
The crawl starts on a Tuesday evening with five days of articles already published; their publish
times train the first models, and the backlog is crawled by Wednesday afternoon. The test watches
until Thursday 16:00 and counts, from the web's own request log, how often each hub was fetched in
each simulated hour from the first models trained after that.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cli.simweb_thread import BackgroundSimWeb
from libs.simweb import SimClock, SimWeb, build_web
from libs.simweb.rhythm import rhythmic_config
from tests.e2e.crawl_harness import CrawlStack

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

SPEED = 1800.0
START = datetime(2026, 3, 3, 20, 0, tzinfo=UTC)  # a Tuesday evening
END = datetime(2026, 3, 5, 16, 0, tzinfo=UTC)  # Thursday 16:00
CRAWLED = START + timedelta(hours=18)  # the backlog is crawled by then
WEB = rhythmic_config(  # three hubs, with 49, 80 and 134 articles in the five days before START
    seed=14, hosts=4, pages=40, hub_host_ratio=0.75, hub_rate_per_hour=3.0, start_time=START,
    hub_backlog=timedelta(days=5), hub_horizon=timedelta(days=2), host_size_exponent=0.3,
    crawl_delay_values=(0.1,), robots_unavailable_ratio=0.0,
)
FRESHNESS = {
    "TRAWL_FRESHNESS_MIN_SAMPLES": "30",
    "TRAWL_FRESHNESS_RETRAIN_INTERVAL": "7200",  # two simulated hours: four real seconds
    "TRAWL_FRESHNESS_FIRST_INTERVAL": str(30 * 86400),  # other pages: no revisit within the test
    "TRAWL_FRESHNESS_HUB_INTERVAL": "3600",  # an hour per hub on average: well above the loop's latency
    "TRAWL_FRESHNESS_POLL_SECONDS": "1",
    "TRAWL_FRESHNESS_TREES": "50",
    # Five days of history give each hour of the week one sample: leaves of one hour keep the day and
    # night apart, where the default (2, for the 30 days of a running crawl) smooths them together.
    "TRAWL_FRESHNESS_MIN_SAMPLES_LEAF": "1",
    "TRAWL_FRESHNESS_KEEP_GENERATIONS": "1000",  # the test looks for the first generation with every model
}


def weight(web: SimWeb, hub: str, at: datetime) -> float:
    """The hub's rhythm at ``at`` (hour weight after its shift, times the weekday weight)."""
    return web._hubs[hub].rhythm.hour_weight(web.config, at) * web.config.hub_weekday_weights[at.weekday()]


@pytest.fixture(scope="module")
def watched(kafka_bootstrap: str, pg_dsn: str,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from tests.conftest import make_unique_name

    web = build_web(WEB)
    clock = SimClock(START, speed=SPEED, monotonic=time.time)  # wall time: another process can follow it
    simweb = BackgroundSimWeb(web, clock)
    proxy = simweb.start()
    prefix = make_unique_name("e2efresh") + "."
    stack = CrawlStack(kafka_bootstrap, pg_dsn, prefix, proxy, tmp_path_factory.mktemp("logs"))
    stack.processes["scheduler"].env.update({
        "TRAWL_SCHEDULER_CLOCK_SPEED": str(SPEED),
        "TRAWL_SCHEDULER_CLOCK_START": START.isoformat(),
        "TRAWL_SCHEDULER_CLOCK_ORIGIN": repr(clock.origin),
        **FRESHNESS,
    })
    try:
        stack.start()
        with stack.admin() as admin:
            admin.add_seeds(web.home_pages())
        deadline = time.monotonic() + (END - START).total_seconds() / SPEED + 120
        while clock.now() < END:
            assert time.monotonic() < deadline, "the simulated day did not pass"
            for name, process in stack.processes.items():
                assert process.alive(), f"{name} exited: see {process.log_path}"
            time.sleep(1.0)
        yield {"web": web, "stack": stack, "log": simweb.request_log, "clock": clock}
    finally:
        stack.stop()
        simweb.stop()


def first_models_at(stack: CrawlStack, hubs: int, after: datetime = START) -> datetime:
    """When (simulated) the first generation with a model for every hub was trained, from ``after`` on."""
    rows = stack.query(
        "SELECT g.trained_at FROM scheduler.freshness_generations g"
        " WHERE (SELECT count(*) FROM scheduler.freshness_models m WHERE m.generation = g.generation) >= %s"
        " AND g.trained_at >= %s ORDER BY g.generation LIMIT 1", hubs, after)
    assert rows, "no generation with a model for every hub"
    return rows[0][0]


def hub_fetches(watched: dict[str, Any], hub: str, since: datetime) -> list[datetime]:
    clock: SimClock = watched["clock"]
    path = hub.split("/", 3)[3]
    times = [clock.start + timedelta(seconds=SPEED * (r.wall_time - clock.origin))
             for r in watched["log"] if r.path == "/" + path and f"http://{r.host}/{path}" == hub]
    return [t for t in times if t >= since]


def test_the_scheduler_learned_a_model_per_hub_and_marked_the_hubs(watched: dict[str, Any]) -> None:
    web: SimWeb = watched["web"]
    stack: CrawlStack = watched["stack"]
    trained = first_models_at(stack, len(web.hub_urls()))
    assert START < trained < END
    hubs = dict(stack.query("SELECT url, hub_key FROM scheduler.freshness_pages WHERE hub_key IS NOT NULL"))
    for hub in web.hub_urls():
        assert hubs.get(hub) == hub.split("://", 1)[1].rstrip("/"), hubs
    policies = {url for (url,) in stack.query("SELECT url FROM scheduler.freshness_pages WHERE policy = 'learned'")}
    assert set(web.hub_urls()) <= policies


def test_busy_hours_get_more_fetches_than_quiet_ones(watched: dict[str, Any]) -> None:
    """Busy hours (weight >= 0.9) against quiet ones (<= 0.03), each hub in its own shifted day.

    Fetches follow sqrt(rate) (the waiting-time rule), so a day/night rate ratio of about 40
    would give about 6; a model of five days smooths some of it away and the loop's own latency
    (a few simulated minutes per fetch, more on a loaded machine) stretches busy intervals. Twice
    as many fetches per hub, two and a half times over all hubs, is what the learned rhythm must
    show at least.
    """
    web: SimWeb = watched["web"]
    since = first_models_at(watched["stack"], len(web.hub_urls()), CRAWLED) + timedelta(hours=1)
    first = since.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    hours = [first + timedelta(hours=h) for h in range(int((END - first).total_seconds() // 3600))]
    totals: dict[str, float] = {"busy": 0.0, "quiet": 0.0}
    rates = {}
    for hub in web.hub_urls():
        per_hour = Counter(t.replace(minute=0, second=0, microsecond=0) for t in hub_fetches(watched, hub, since))
        busy = [h for h in hours if weight(web, hub, h) >= 0.9]
        quiet = [h for h in hours if weight(web, hub, h) <= 0.03]
        # Three of each at least: on a loaded machine the first generation with every model can come
        # near midnight (training slows down with the rest), which leaves the earliest hub's night
        # three quiet hours before its dawn.
        assert len(busy) >= 3 and len(quiet) >= 3, (hub, since)
        busy_rate = sum(per_hour[h] for h in busy) / len(busy)
        quiet_rate = sum(per_hour[h] for h in quiet) / len(quiet)
        seen = [(h.strftime("%a %H"), per_hour[h]) for h in hours]
        assert busy_rate >= 2 * max(quiet_rate, 0.25), (hub, busy_rate, quiet_rate, seen)
        totals["busy"] += busy_rate
        totals["quiet"] += quiet_rate
        rates[hub] = (round(busy_rate, 2), round(quiet_rate, 2))
    assert totals["busy"] >= 2.5 * totals["quiet"], rates


def test_busier_hubs_are_fetched_more_often_at_busy_hours(watched: dict[str, Any]) -> None:
    web: SimWeb = watched["web"]
    since = first_models_at(watched["stack"], len(web.hub_urls()), CRAWLED) + timedelta(hours=1)
    published = {hub: sum(1 for _, at in web.hub_articles(hub) if at <= END) for hub in web.hub_urls()}
    busiest, quietest = max(published, key=published.__getitem__), min(published, key=published.__getitem__)
    assert published[busiest] > 2 * published[quietest]

    def busy_fetches(hub: str) -> int:
        return sum(1 for t in hub_fetches(watched, hub, since) if weight(web, hub, t) >= 0.9)

    assert busy_fetches(busiest) > busy_fetches(quietest)


def test_other_pages_are_fetched_once(watched: dict[str, Any]) -> None:
    web: SimWeb = watched["web"]
    hubs = set(web.hub_urls())
    counts = Counter(r.url for r in watched["log"] if r.path != "/robots.txt")
    again = [url for url, n in counts.items() if n > 1 and url not in hubs]
    assert again == []
    assert Path(watched["stack"].processes["scheduler"].log_path).read_text().count("freshness generation") >= 1

"""Hubs whose articles appear over time, and the clock that drives them."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from libs.simweb import SimClock, SimWeb, SimWebConfig, build_web

START = datetime(2026, 3, 2, tzinfo=UTC)  # a Monday


class FakeMonotonic:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def web() -> SimWeb:
    return build_web(SimWebConfig(seed=4, hosts=20, pages=400, hub_host_ratio=0.2, hub_rate_per_hour=2.0))


def test_clock_speeds() -> None:
    tick = FakeMonotonic()
    frozen = SimClock(START, speed=0, monotonic=tick)
    real = SimClock(START, speed=1, monotonic=tick)
    fast = SimClock(START, speed=3600, monotonic=tick)
    tick.now += 2.0
    assert frozen.now() == START
    assert real.now() == START + timedelta(seconds=2)
    assert fast.now() == START + timedelta(hours=2)
    frozen.advance(timedelta(days=1))
    assert frozen.now() == START + timedelta(days=1)
    assert SimClock.frozen(START).now() == START
    with pytest.raises(ValueError):
        SimClock(datetime(2026, 3, 2), speed=1)  # naive instants are refused


def test_hubs_exist_and_their_articles_are_pages(web: SimWeb) -> None:
    hubs = web.hub_urls()
    assert len(hubs) == 4
    config = web.config
    for hub in hubs:
        articles = web.hub_articles(hub)
        assert len(articles) > 50
        times = [at for _, at in articles]
        assert times == sorted(times)
        assert config.start_time - config.hub_backlog <= times[0]
        assert times[-1] <= config.start_time + config.hub_horizon
        for url, at in articles:
            page = web.pages[url]
            assert page.role == "article" and page.hub_url == hub
            assert page.published_at == page.appears_at == at
            assert f'<time datetime="{at:%Y-%m-%dT%H:%M:%S}Z">' in (web.html(url, at) or "")


def test_listing_grows_with_a_fast_clock(web: SimWeb) -> None:
    tick = FakeMonotonic()
    clock = SimClock(web.start_time, speed=6 * 3600, monotonic=tick)  # six hours per second
    hub = web.hub_urls()[0]
    seen_counts = []
    for _ in range(12):
        now = clock.now()
        visible = [url for url, at in web.hub_articles(hub) if at <= now]
        listing = web.hub_listing(hub, now)
        assert [url for url, _ in listing] == visible[::-1][: web.config.hub_list_size]
        assert all(web.page_at(url, now) is not None for url, _ in listing)
        seen_counts.append(len(visible))
        tick.now += 1.0
    assert seen_counts == sorted(seen_counts) and seen_counts[-1] > seen_counts[0]
    future = [url for url, at in web.hub_articles(hub) if at > clock.now()]
    assert future and web.page_at(future[0], clock.now()) is None
    assert web.html(future[0], clock.now()) is None


def test_frozen_clock_keeps_the_web_static(web: SimWeb) -> None:
    clock = SimClock.frozen(web.start_time)
    hub = web.hub_urls()[0]
    first = web.html(hub, clock.now())
    assert first is not None and first == web.html(hub, clock.now())
    assert web.pages_at(clock.now()) == web.pages_at(clock.now())
    later = web.start_time + timedelta(days=2)
    assert web.html(hub, later) != first
    assert len(web.pages_at(later)) > len(web.pages_at(clock.now()))


def test_articles_stay_reachable_after_leaving_the_listing(web: SimWeb) -> None:
    end = web.start_time + web.config.hub_horizon
    reached = web.reachable(web.home_pages(), now=end)
    for hub in web.hub_urls():
        articles = [url for url, _ in web.hub_articles(hub)]
        assert len(articles) > web.config.hub_list_size
        assert set(articles) <= reached
    early = web.reachable(web.home_pages())
    assert all(web.pages[url].exists_at(web.start_time) for url in early)


def test_hub_page_links_follow_the_listing(web: SimWeb) -> None:
    hub = web.hub_urls()[0]
    now = web.start_time + timedelta(days=1)
    listed = [link.target_url for link in web.links_at(hub, now) if link.placement == "article"]
    assert listed == [url for url, _ in web.hub_listing(hub, now)]
    assert web.last_modified(hub, now) == web.hub_listing(hub, now)[0][1]


def test_appearance_times_follow_the_hour_and_weekday_pattern() -> None:
    hours = tuple(1.0 if 9 <= h < 17 else 0.0 for h in range(24))
    weekdays = (1.0, 1.0, 1.0, 1.0, 1.0, 0.25, 0.0)
    config = SimWebConfig(seed=9, hosts=10, pages=100, hub_host_ratio=1.0, hub_rate_per_hour=3.0,
                          hub_hour_weights=hours, hub_weekday_weights=weekdays,
                          hub_backlog=timedelta(0), hub_horizon=timedelta(days=28))
    web = build_web(config)
    times = [at for hub in web.hub_urls() for _, at in web.hub_articles(hub)]
    assert len(times) > 1000
    assert all(9 <= at.hour < 17 for at in times)
    by_day = Counter(at.weekday() for at in times)
    assert by_day[6] == 0
    weekday_mean = sum(by_day[d] for d in range(5)) / 5
    assert 0.15 < by_day[5] / weekday_mean < 0.35


def test_default_pattern_is_busier_by_day_than_by_night() -> None:
    web = build_web(SimWebConfig(seed=9, hosts=10, pages=100, hub_host_ratio=1.0, hub_rate_per_hour=2.0,
                                 hub_horizon=timedelta(days=28)))
    hours = Counter(at.hour for hub in web.hub_urls() for _, at in web.hub_articles(hub))
    night = sum(hours[h] for h in range(0, 5))
    morning = sum(hours[h] for h in range(8, 13))
    assert morning > 8 * night


def test_no_hubs_means_a_static_web() -> None:
    web = build_web(SimWebConfig(seed=1, hosts=10, pages=100, hub_host_ratio=0.0))
    assert web.hub_urls() == []
    assert web.pages_at() == web.pages

"""A crawl goal's statistics in the real database: pulls from outcomes, new URLs from discoveries,
external links from page link counts."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from libs.common.kafka.consumer import Record
from libs.common.settings import load_settings
from libs.common.topics import PAGE_LINK_COUNTS
from libs.common.urls import url_fingerprint, url_host
from libs.common.wire import messages as pb
from services.scheduler.bandits.goal_sites import GoalSites
from services.scheduler.frontier.store import Dispatched, FrontierStore, NewUrl, Outcome
from services.scheduler.handlers import SchedulerHandler
from services.scheduler.settings import SchedulerSettings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

ALL = list(range(12))


def new(url: str, found_on: str = "") -> NewUrl:
    return NewUrl(url_fingerprint(url), url, url_host(url), 1, "link", found_on)


def ended(sent: Dispatched, status: str = "fetched", request_id: str | None = None) -> Outcome:
    return Outcome(
        sent.url_fp,
        request_id or sent.request_id,
        sent.host,
        status,
        200,
        "FETCH_STATUS_OK",
        "",
        datetime.now(UTC),
        None,
    )


async def fetch_all(frontier: FrontierStore, status: str = "fetched") -> list[Dispatched]:
    sent = await frontier.dispatch(100, ALL)
    await frontier.apply_outcomes([ended(s, status) for s in sent], 3, 60.0)
    return sent


async def test_pages_of_goal_sites_are_pulls_and_documents(
    frontier: FrontierStore, goal_sites: GoalSites
) -> None:
    await goal_sites.register(["a.example", "b.example"])
    await frontier.add_urls([new("http://a.example/"), new("http://b.example/"), new("http://c.example/")])
    sent = await frontier.dispatch(100, ALL)
    outcomes = [ended(s, "fetched" if s.host == "a.example" else "failed") for s in sent]
    await frontier.apply_outcomes(outcomes, 3, 60.0)
    await frontier.apply_outcomes(outcomes, 3, 60.0)  # redelivered: ignored
    states = {s.site: s for s in await goal_sites.states(["a.example", "b.example"], "documents", 32)}
    assert (states["a.example"].pulls, states["a.example"].reward_sum, states["a.example"].recent) == (1, 1.0, (1.0,))
    assert (states["b.example"].pulls, states["b.example"].reward_sum, states["b.example"].recent) == (1, 0.0, (0.0,))
    assert not states["a.example"].has_work and states["a.example"].in_flight == 0
    assert await goal_sites.states(["c.example"], "documents", 32) == []  # not an arm


async def test_a_retry_is_not_a_pull(frontier: FrontierStore, goal_sites: GoalSites) -> None:
    await goal_sites.register(["a.example"])
    await frontier.add_urls([new("http://a.example/")])
    await fetch_all(frontier, "retry")
    (a,) = await goal_sites.states(["a.example"], "documents", 32)
    assert a.pulls == 0 and a.has_work


async def test_new_urls_are_credited_once_to_the_page_they_were_found_on(
    frontier: FrontierStore, goal_sites: GoalSites
) -> None:
    await goal_sites.register(["a.example"])
    await frontier.add_urls([new("http://a.example/")])
    await fetch_all(frontier)
    found = [
        new("http://a.example/1", "http://a.example/"),
        new("http://x.example/", "http://A.example/#top"),
        new("http://a.example/2", "http://a.example/"),
    ]
    assert await frontier.add_urls(found) == 3
    assert await frontier.add_urls(found) == 0  # redelivered: nothing new, nothing credited
    await frontier.add_urls([new("http://a.example/3", "not a url"), new("http://a.example/4", "http://z.example/")])
    (a,) = await goal_sites.states(["a.example"], "new_urls", 32)
    assert (a.pulls, a.reward_sum, a.reward_max, a.recent, a.has_work) == (1, 3.0, 3.0, (3.0,), True)


async def test_a_discovery_before_its_page_s_outcome_still_counts_both(
    frontier: FrontierStore, goal_sites: GoalSites
) -> None:
    await goal_sites.register(["a.example"])
    await frontier.add_urls([new("http://a.example/")])
    sent = await frontier.dispatch(100, ALL)
    await frontier.add_urls([new("http://a.example/1", "http://a.example/")])  # links arrive first
    await frontier.apply_outcomes([ended(s) for s in sent], 3, 60.0)
    (a,) = await goal_sites.states(["a.example"], "new_urls", 32)
    assert (a.pulls, a.reward_sum, a.recent) == (1, 1.0, (1.0,))


async def test_recent_rewards_are_the_last_pages_oldest_first(
    frontier: FrontierStore, goal_sites: GoalSites
) -> None:
    await goal_sites.register(["a.example"])
    for i in range(4):
        await frontier.add_urls([new(f"http://a.example/{i}")])
        await fetch_all(frontier, "fetched" if i % 2 == 0 else "blocked")
    (a,) = await goal_sites.states(["a.example"], "documents", 3)
    assert a.pulls == 4 and a.recent == (0.0, 1.0, 0.0)


async def test_held_sites_are_not_dispatched(frontier: FrontierStore) -> None:
    await frontier.add_urls([new("http://a.example/"), new("http://b.example/")])
    sent = await frontier.dispatch(100, ALL, held=["a.example"])
    assert [s.host for s in sent] == ["b.example"]
    assert [s.host for s in await frontier.dispatch(100, ALL)] == ["a.example"]


def link_counts(url: str, external: int, host: str | None = None) -> Record[pb.PageLinkCounts]:
    counts = pb.PageLinkCounts(url=url, host=host or url_host(url), external_links=external)
    return Record(PAGE_LINK_COUNTS, 0, 0, counts.host, counts, 0, None, None)


async def test_external_links_are_credited_once_per_page(
    frontier: FrontierStore, goal_sites: GoalSites
) -> None:
    await goal_sites.register(["a.example", "b.example"])
    await frontier.add_urls([new("http://a.example/"), new("http://a.example/2"), new("http://b.example/")])
    pulled = {s.host: s.url for s in await fetch_all(frontier)}  # one page of a: one request per host at a time
    handler = SchedulerHandler(frontier, load_settings(SchedulerSettings, {}), goal_sites=goal_sites)
    batch = [link_counts("http://A.example/#top", 7), link_counts("http://a.example/2", 2),
             link_counts("http://a.example/", 9),  # the same page again in the batch: the first count wins
             link_counts("http://c.example/", 50)]  # not an arm: not recorded
    await handler.page_link_counts(batch)
    await handler.page_link_counts(batch)  # redelivered: nothing more
    await handler.page_link_counts([link_counts("http://a.example/2", 40)])  # counted again (a refetch): ignored
    states = {s.site: s for s in await goal_sites.states(["a.example", "b.example"], "external_links", 32)}
    a, b = states["a.example"], states["b.example"]
    # the other page of a is still queued: credited, not yet one of the recent pulls
    pulled_reward = 7.0 if pulled["a.example"] == "http://a.example/" else 2.0
    assert (a.pulls, a.reward_sum, a.reward_max, a.recent, a.has_work) == (1, 9.0, 7.0, (pulled_reward,), True)
    assert (b.pulls, b.reward_sum, b.reward_max, b.recent) == (1, 0.0, 0.0, (0.0,))  # fetched, no count yet
    (documents,) = await goal_sites.states(["a.example"], "documents", 32)
    assert documents.reward_sum == 1.0  # the goal decides which reward is read: one document fetched
    assert await goal_sites.states(["c.example"], "external_links", 32) == []


async def test_link_counts_before_their_page_s_outcome_still_count(
    frontier: FrontierStore, goal_sites: GoalSites
) -> None:
    await goal_sites.register(["a.example"])
    await frontier.add_urls([new("http://a.example/")])
    sent = await frontier.dispatch(100, ALL)
    await goal_sites.credit_link_counts({url_fingerprint("http://a.example/"): ("a.example", 5)})
    (a,) = await goal_sites.states(["a.example"], "external_links", 32)
    assert (a.pulls, a.in_flight, a.reward_sum, a.recent) == (0, 1, 5.0, ())  # not a pull until its outcome
    await frontier.apply_outcomes([ended(s) for s in sent], 3, 60.0)
    (a,) = await goal_sites.states(["a.example"], "external_links", 32)
    assert (a.pulls, a.reward_sum, a.reward_max, a.recent) == (1, 5.0, 5.0, (5.0,))

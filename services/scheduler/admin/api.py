"""The admin gRPC API (trawl.v1.AdminService): what an operator needs without touching the database.

Seeds and sites, pause, resume and drain, per-host policies, a URL's report, the top pages,
crawl, host and topic statistics, and the crawl goal. Every call needs the admin bearer
token (``libs/common/grpc_auth.py``, installed by the scheduler's ``main``). Changes are
stored in the scheduler's tables, so every replica's dispatcher applies them at its next
round; ``on_change`` wakes this replica's dispatcher at once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import grpc

from libs.common.db.pool import Database
from libs.common.settings import SettingsError
from libs.common.urls import InvalidUrl, normalize_url, url_fingerprint, url_host
from libs.common.wire import admin as admin_pb
from libs.common.wire import admin_grpc
from services.scheduler.admin import other_state as other
from services.scheduler.admin.messages import goal_message, goal_spec, host_message, ms, policy_changes, policy_message
from services.scheduler.admin.pause import PauseFlag
from services.scheduler.admin.seed_announcer import SeedAnnouncer
from services.scheduler.admin.store import HOST_ORDER, AdminStore
from services.scheduler.admin.topics import TopicRow
from services.scheduler.admin.url_report import url_report
from services.scheduler.bandits.allocator import RECENT_PAGES
from services.scheduler.bandits.goal import GoalStore, LiveGoal
from services.scheduler.bandits.goal_sites import GoalSites
from services.scheduler.frontier.host_policies import HostPolicyStore
from services.scheduler.frontier.store import FrontierStore, NewUrl
from services.scheduler.settings import SchedulerSettings

log = logging.getLogger(__name__)

SERVICE_NAME = "trawl.v1.AdminService"
MAX_SEEDS_PER_CALL = 100_000
MAX_LIST = 10_000
MAX_DRAIN_WAIT = 600.0
Context = grpc.aio.ServicerContext[object, object]
TopicStats = Callable[[], list[TopicRow]]  # blocking: run in a thread
Explain = Callable[[str], Awaitable[admin_pb.UrlExplanation]]  # a normalised URL's freshness plan


@dataclass(frozen=True)
class AdminState:
    """The stores the API reads and writes, built on one database pool."""

    frontier: FrontierStore
    reads: AdminStore
    policies: HostPolicyStore
    goals: GoalStore
    goal: LiveGoal
    goal_sites: GoalSites
    pause: PauseFlag

    @classmethod
    def on(cls, db: Database, frontier: FrontierStore, settings: SchedulerSettings, partitions: int) -> AdminState:
        goals, sites = GoalStore(db), GoalSites(db)
        live = LiveGoal(goals, sites, settings)
        return cls(frontier, AdminStore(db), HostPolicyStore(db, partitions), goals, live, sites, PauseFlag(db))


def _limit(asked: int, default: int, most: int) -> int:
    return min(asked, most) if asked > 0 else default


def _host_name(raw: str) -> str:
    """A host as the frontier keys it, from a host name or a URL."""
    text = raw.strip()
    try:
        return url_host(normalize_url(text if "://" in text else f"http://{text}/"))
    except InvalidUrl:
        return ""


class AdminApi(admin_grpc.AdminServiceServicer):
    def __init__(
        self, db: Database, state: AdminState, on_change: Callable[[], None], topic_stats: TopicStats | None = None,
        explain: Explain | None = None, seeds: SeedAnnouncer | None = None,
    ) -> None:
        """``seeds`` tells the importance service of seeded URLs (``seed_announcer.py``); without it (tests of
        other calls) it learns of them at their first crawl."""
        self._db = db
        self._seeds = seeds
        self._state = state
        self._store = state.frontier
        self._pause = state.pause
        self._goal_sites = state.goal_sites
        self._on_change = on_change
        self._topic_stats = topic_stats
        self._explain = explain

    # -- seeds and sites ----------------------------------------------------------------

    async def _normalised(
        self, raws: list[str], context: Context
    ) -> tuple[list[NewUrl], list[admin_pb.RejectedSeed]]:
        if len(raws) > MAX_SEEDS_PER_CALL:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"at most {MAX_SEEDS_PER_CALL} URLs per call")
        rows: list[NewUrl] = []
        rejected: list[admin_pb.RejectedSeed] = []
        for raw in raws:
            try:
                url = normalize_url(raw.strip())
            except InvalidUrl as exc:
                rejected.append(admin_pb.RejectedSeed(url=raw[:2048], reason=exc.reason))
                continue
            rows.append(NewUrl(url_fingerprint(url), url, url_host(url), 0, "seed"))
        return list({r.url_fp: r for r in rows}.values()), rejected

    async def AddSeeds(self, request: admin_pb.AddSeedsRequest, context: Context) -> admin_pb.AddSeedsResponse:
        unique, rejected = await self._normalised(list(request.urls), context)
        accepted = await self._store.add_urls(unique)
        await self._announce(unique)
        log.info("seeds added: %s new, %s known, %s rejected", accepted, len(unique) - accepted, len(rejected))
        self._on_change()
        return admin_pb.AddSeedsResponse(accepted=accepted, already_known=len(unique) - accepted, rejected=rejected)

    async def _announce(self, rows: list[NewUrl]) -> None:
        """The importance service is told of the seeds before the dispatcher is woken for them."""
        if self._seeds is not None:
            await self._seeds.announce([r.url for r in rows])

    async def RemoveSeeds(
        self, request: admin_pb.RemoveSeedsRequest, context: Context
    ) -> admin_pb.RemoveSeedsResponse:
        unique, rejected = await self._normalised(list(request.urls), context)
        removed, in_flight = await self._state.reads.remove_urls([r.url_fp for r in unique])
        log.info("URLs removed: %s removed, %s in flight, %s rejected", removed, len(in_flight), len(rejected))
        return admin_pb.RemoveSeedsResponse(
            removed=removed, not_found=len(unique) - removed - len(in_flight), in_flight=in_flight, rejected=rejected
        )

    async def ListSeeds(self, request: admin_pb.ListSeedsRequest, context: Context) -> admin_pb.ListSeedsResponse:
        host = _host_name(request.host) if request.host else ""
        rows, total = await self._state.reads.seeds(_limit(request.limit, 100, MAX_LIST), host)
        return admin_pb.ListSeedsResponse(
            seeds=[admin_pb.SeedEntry(url=r.url, status=r.status, added_at_ms=ms(r.added_at),
                                      fetched_at_ms=ms(r.fetched_at)) for r in rows],
            total=total,
        )

    async def AddSites(
        self, request: admin_pb.AddCrawlSitesRequest, context: Context
    ) -> admin_pb.AddCrawlSitesResponse:
        raws = [u if "://" in u.strip() else f"http://{u.strip()}/" for u in request.start_urls]
        unique, rejected = await self._normalised(raws, context)
        hosts = sorted({r.host for r in unique})
        await self._state.policies.add_sites(hosts)
        accepted = await self._store.add_urls(unique)
        await self._announce(unique)
        log.info("sites added: %s", ", ".join(hosts))
        self._on_change()
        return admin_pb.AddCrawlSitesResponse(hosts=hosts, urls_accepted=accepted, rejected=rejected)

    async def RemoveSites(
        self, request: admin_pb.RemoveCrawlSitesRequest, context: Context
    ) -> admin_pb.RemoveCrawlSitesResponse:
        hosts = sorted({h for h in (_host_name(raw) for raw in request.hosts) if h})
        if not hosts:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "no valid host name given")
        removed = await self._state.policies.remove_sites(hosts)
        log.info("sites removed: %s (%s queued URLs dropped)", ", ".join(hosts), removed)
        return admin_pb.RemoveCrawlSitesResponse(hosts=hosts, urls_removed=removed)

    async def ListSites(self, request: admin_pb.ListCrawlSitesRequest, context: Context) -> admin_pb.HostStatsList:
        rows = await self._state.reads.site_stats()
        policies = {p.host: p for p in await self._state.policies.policies([r.host for r in rows])}
        return admin_pb.HostStatsList(hosts=[host_message(r, policies.get(r.host)) for r in rows])

    # -- pause, resume, drain -----------------------------------------------------------

    async def _crawl_state(self) -> admin_pb.CrawlState:
        paused = await self._pause.is_paused()
        in_flight = await self._store.in_flight()
        return admin_pb.CrawlState(paused=paused, in_flight=in_flight, drained=paused and in_flight == 0)

    async def PauseCrawl(self, request: admin_pb.PauseCrawlRequest, context: Context) -> admin_pb.CrawlState:
        await self._pause.set_paused(True)
        log.info("crawl paused")
        return await self._crawl_state()

    async def ResumeCrawl(self, request: admin_pb.ResumeCrawlRequest, context: Context) -> admin_pb.CrawlState:
        await self._pause.set_paused(False)
        self._on_change()
        log.info("crawl resumed")
        return await self._crawl_state()

    async def DrainCrawl(self, request: admin_pb.DrainCrawlRequest, context: Context) -> admin_pb.CrawlState:
        await self._pause.set_paused(True)
        log.info("crawl draining: paused, waiting up to %.0fs for requests in flight", request.wait_seconds)
        deadline = time.monotonic() + min(max(request.wait_seconds, 0.0), MAX_DRAIN_WAIT)
        state = await self._crawl_state()
        while not state.drained and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
            state = await self._crawl_state()
        if state.drained:
            log.info("crawl drained: nothing in flight")
        return state

    # -- host policies --------------------------------------------------------------------

    async def SetHostPolicy(self, request: admin_pb.SetHostPolicyRequest, context: Context) -> admin_pb.HostPolicy:
        host = _host_name(request.policy.host)
        if not host:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"not a host name: {request.policy.host!r}")
        changes = policy_changes(request.policy)
        row = await self._state.policies.set_policy(host, changes, replace=request.replace)
        log.info("host policy of %s set: %s", host, ", ".join(f"{k}={v}" for k, v in changes.items()) or "cleared")
        self._on_change()
        return policy_message(row)

    async def ListHostPolicies(
        self, request: admin_pb.ListHostPoliciesRequest, context: Context
    ) -> admin_pb.ListHostPoliciesResponse:
        hosts = [h for h in (_host_name(raw) for raw in request.hosts) if h]
        rows = await self._state.policies.policies(hosts)
        return admin_pb.ListHostPoliciesResponse(policies=[policy_message(r) for r in rows])

    async def ClearHostPolicies(
        self, request: admin_pb.ClearHostPoliciesRequest, context: Context
    ) -> admin_pb.ClearHostPoliciesResponse:
        hosts = [h for h in (_host_name(raw) for raw in request.hosts) if h]
        cleared = await self._state.policies.clear(hosts)
        log.info("host policies cleared: %s", ", ".join(hosts))
        self._on_change()
        return admin_pb.ClearHostPoliciesResponse(cleared=cleared)

    # -- reports ----------------------------------------------------------------------------

    async def LookupUrl(self, request: admin_pb.LookupUrlRequest, context: Context) -> admin_pb.UrlReport:
        try:
            url = normalize_url(request.url.strip())
        except InvalidUrl as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"not a crawlable URL: {exc.reason}")
        fp = url_fingerprint(url)
        row = await self._state.reads.url(fp)
        host = row.host if row else url_host(url)
        policies = await self._state.policies.policies([host])
        goal_holds = False
        allocator = await self._state.goal.current()
        if row is not None and row.status == "queued" and allocator is not None and host in allocator.sites:
            states = await self._goal_sites.states(allocator.sites, allocator.goal, RECENT_PAGES)
            goal_holds = host in allocator.held(states)
        return await url_report(
            self._db, url, fp, row, policies[0] if policies else None, await self._pause.is_paused(), goal_holds,
            _limit(request.history_limit, 20, 1000),
        )

    async def ExplainUrl(self, request: admin_pb.ExplainUrlRequest, context: Context) -> admin_pb.UrlExplanation:
        try:
            url = normalize_url(request.url.strip())
        except InvalidUrl as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"not a crawlable URL: {exc.reason}")
        if self._explain is None:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "this scheduler plans no revisits")
        assert self._explain is not None
        return await self._explain(url)

    async def GetTopPages(self, request: admin_pb.GetTopPagesRequest, context: Context) -> admin_pb.TopPages:
        limit = _limit(request.limit, 20, 1000)
        host = _host_name(request.host) if request.host else ""
        ranked = await other.top_importance(self._db, limit, host)
        if ranked is not None:
            statuses = await self._state.reads.statuses([fp for fp, *_ in ranked])
            pages = [
                admin_pb.TopPage(url=u, host=h, importance=history + cash, cash=cash, history=history,
                                 status=statuses.get(fp, ""))
                for fp, u, h, cash, history in ranked
            ]
            return admin_pb.TopPages(pages=pages, source="importance")
        rows = await self._state.reads.top_by_priority(limit, host)
        return admin_pb.TopPages(
            pages=[admin_pb.TopPage(url=u, host=h, importance=p, cash=p, status=s) for u, h, p, s in rows],
            source="frontier",
        )

    async def GetCrawlStats(self, request: admin_pb.GetCrawlStatsRequest, context: Context) -> admin_pb.CrawlStats:
        counts = await self._store.status_counts()
        return admin_pb.CrawlStats(
            paused=await self._pause.is_paused(),
            frontier=[admin_pb.StatusCount(status=s, count=n) for s, n in sorted(counts.items())],
            in_flight=counts.get("in_flight", 0),
            hosts=await self._store.host_count(),
            fetched_total=counts.get("fetched", 0),
            failed_total=counts.get("failed", 0),
            robots_blocked_total=counts.get("blocked", 0),
            queued_ready=await self._store.ready_count(),
        )

    async def GetHostStats(self, request: admin_pb.GetHostStatsRequest, context: Context) -> admin_pb.HostStatsList:
        if request.order_by and request.order_by not in HOST_ORDER:
            known = ", ".join(HOST_ORDER)
            message = f"order_by is one of {known}, not {request.order_by!r}"
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, message)
        hosts = [h for h in (_host_name(raw) for raw in request.hosts) if h]
        rows = await self._state.reads.host_stats(hosts, _limit(request.limit, 20, 1000), request.order_by or "queued")
        policies = {p.host: p for p in await self._state.policies.policies([r.host for r in rows])} if rows else {}
        return admin_pb.HostStatsList(hosts=[host_message(r, policies.get(r.host)) for r in rows])

    async def GetTopicStats(self, request: admin_pb.GetTopicStatsRequest, context: Context) -> admin_pb.TopicStatsList:
        if self._topic_stats is None:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "this scheduler has no broker to ask")
        assert self._topic_stats is not None
        try:
            rows = await asyncio.to_thread(self._topic_stats)
        except Exception as exc:  # the broker is down or slow: say so, the API stays up
            log.warning("topic statistics failed: %s", exc)
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"the broker did not answer: {exc}")
        return admin_pb.TopicStatsList(topics=[
            admin_pb.TopicStats(
                topic=r.topic, partitions=r.partitions, messages=r.messages,
                groups=[admin_pb.GroupLag(group=g.group, lag=g.lag, partitions=g.partitions, clamped=g.clamped)
                        for g in r.groups],
            )
            for r in rows
        ])

    # -- crawl goal ---------------------------------------------------------------------------

    async def _goal_state(self) -> admin_pb.CrawlGoalState:
        spec, source = await self._state.goal.spec()
        out = admin_pb.CrawlGoalState(goal=goal_message(spec), source=source)
        allocator = spec.allocator() if spec.policy else None
        if allocator is None:
            return out
        await self._goal_sites.register(allocator.sites)
        states = await self._goal_sites.states(allocator.sites, allocator.goal, RECENT_PAGES)
        chosen = set(allocator.allowed(states))
        by_site = {s.site: s for s in states}
        for site in allocator.sites:
            state = by_site.get(site)
            out.sites.append(admin_pb.GoalSite(
                site=site, pulls=state.pulls if state else 0, in_flight=state.in_flight if state else 0,
                reward=state.reward_sum if state else 0.0, has_work=bool(state and state.has_work),
                chosen=site in chosen,
            ))
        out.spent = allocator.spent(states)
        return out

    async def GetCrawlGoal(self, request: admin_pb.GetCrawlGoalRequest, context: Context) -> admin_pb.CrawlGoalState:
        return await self._goal_state()

    async def SetCrawlGoal(self, request: admin_pb.SetCrawlGoalRequest, context: Context) -> admin_pb.CrawlGoalState:
        if request.reset:
            await self._state.goals.reset()
            log.info("crawl goal reset: the settings' goal applies")
        else:
            default, _source = await self._state.goal.spec()
            spec = goal_spec(request.goal, default)
            try:
                spec.allocator()
            except SettingsError as exc:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
            await self._state.goals.store(spec)
            log.info("crawl goal set: %s", spec.to_json())
        self._on_change()
        return await self._goal_state()


def registrar(api: AdminApi) -> Callable[[grpc.aio.Server], None]:
    def register(server: grpc.aio.Server) -> None:
        admin_grpc.add_AdminServiceServicer_to_server(api, server)

    return register

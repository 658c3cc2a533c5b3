"""The frontier's revisit hook: plans each fetched page's next fetch, inside the outcome's transaction.

:class:`~services.scheduler.frontier.store.FrontierStore` calls it on the connection of its own
transactions, as its revisit planner and one of its listeners (``frontier/listeners.py``):

- :meth:`RevisitHook.plan_fetched` before fetch outcomes move pages to ``fetched`` (the
  outcome's update writes the plan) and :meth:`RevisitHook.outcomes_applied` after, for those
  applied (:meth:`RevisitHook.fetched` plans and writes after the fact): the page's
  visit history moves on one fetch, and its next fetch is planned (``revisits``) with the
  current model generation: a hub with a model by its key's curve, a hub without one by its
  visits' change rate, any other page by the change rate of its content versions in the
  linkbase (which lag one fetch behind: the extractor stores a version after its outcome; a
  304, a fetch that saw the page unchanged, counts at once as a version equal to the last).
  The frontier row gets the time, the change probability and the expected gain, and the
  priority they make (``services/scheduler/frontier/priority.py``).
- :meth:`RevisitHook.discovered` when URLs found on a page were admitted: for a page whose
  last fetch was a re-fetch, they are the new items that fetch revealed; far more than the
  model predicted is a burst, and the next fetch is brought forward at once.

Times are the scheduler clock's (``services/scheduler/clock.py``). Rows are locked frontier row
first, then plan row, each in key order, in every transaction that takes both.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import psycopg

from services.scheduler.clock import SchedulerClock
from services.scheduler.freshness.bursts import BurstState, observe
from services.scheduler.freshness.estimator import VisitHistory, change_rate, history_of_versions
from services.scheduler.freshness.policy import Plan, WaitingTimePolicy, budget_target
from services.scheduler.freshness.rates import ConstantRate, RateCurve, expected_items
from services.scheduler.freshness.registry import ModelRegistry
from services.scheduler.freshness.revisits import HubState, RevisitPlanner, page_revisit
from services.scheduler.freshness.settings import FreshnessSettings
from services.scheduler.freshness.store import (
    Conn,
    PageState,
    page_states,
    save_page_states,
    save_page_states_unchanged,
    seen_page_states,
)
from services.scheduler.frontier.listeners import AppliedOutcomes, FetchedPage, RevisitPlan
from services.scheduler.frontier.priority import PriorityWeights, priority_sql
from services.scheduler.frontier.store import NEVER

log = logging.getLogger(__name__)
VERSIONS = 100  # newest content versions a page's change rate is estimated from

# The arrays go in binary: in text psycopg dumps them element by element (a batch's 2,000
# fingerprints: 6 ms in text, 0.5 ms in binary).
_VERSIONS_SQL = """
SELECT v.url_fp, v.fetched_at, v.content_fp
FROM linkbase.v_page_versions_v1 AS v
WHERE v.host = ANY(%b::text[]) AND v.url_fp = ANY(%b::bigint[])
ORDER BY v.url_fp, v.fetched_at
"""


def _seconds(at: datetime | None) -> float | None:
    return None if at is None else at.timestamp()


def _instant(seconds: float) -> datetime:
    return datetime.fromtimestamp(min(seconds, NEVER.timestamp()), UTC)


def _seen_unchanged(versions: dict[int, list[tuple[float, str]]],
                    pages: Sequence[FetchedPage]) -> dict[int, list[tuple[float, str]]]:
    """``versions`` with the visit of each page a 304 answered (``unchanged_at``): a version equal to the
    last one, unless the linkbase recorded that visit already (it does, from the same outcome). A hub
    needs nothing: a 304 reveals no new items, so its visit closes unchanged by itself."""
    for page in pages:
        rows = versions.get(page.url_fp)
        if page.unchanged_at is None or not rows:
            continue  # no capture to be equal to: nothing is known of the page's content yet
        at = page.unchanged_at.timestamp()
        if at > rows[-1][0] + 0.001:
            rows.append((at, rows[-1][1]))
    return versions


@dataclass(frozen=True)
class _Planned(RevisitPlan):
    """A plan with the page state it leads to and the version of the state's row it was made from."""

    state: PageState
    seen: str | None  # None: the page had no row


class RevisitHook:
    def __init__(self, registry: ModelRegistry, settings: FreshnessSettings, clock: SchedulerClock,
                 weights: PriorityWeights) -> None:
        self._registry = registry
        self._settings = settings
        self._clock = clock
        self._weights = weights

    def planner(self, target: float) -> RevisitPlanner:
        return RevisitPlanner(WaitingTimePolicy(target, self._settings.bounds), self._settings.bursts)

    def hub_curve(self, state: PageState) -> tuple[RateCurve, float, str] | None:
        """A hub's curve, the waiting target and the policy name, or None for a page that is no hub."""
        if state.hub_key is None:
            return None
        generation = self._registry.current
        curve = generation.curve(state.hub_key) if generation else None
        if generation is not None and curve is not None:
            return curve, generation.waiting_target, "learned"
        rate = change_rate(VisitHistory(state.visits, state.changes, state.span))
        if not rate:
            return None
        constant = ConstantRate(rate)
        target = generation.waiting_target if generation else budget_target(
            [constant.weekly_sqrt_integral()], self._settings.hub_interval)
        return constant, target, "estimator"

    async def fetched(self, conn: Conn, pages: Sequence[FetchedPage]) -> None:
        if not pages:
            return
        now = self._clock.now()
        at = now.timestamp()
        found = await page_states(conn, [p.url_fp for p in pages])
        states = {p.url_fp: found.get(p.url_fp) or PageState(p.url_fp, p.url, p.host) for p in pages}
        versions = _seen_unchanged(
            await self._versions(conn, [p for p in pages if states[p.url_fp].hub_key is None]), pages)
        planned: list[tuple[PageState, Plan, bool]] = []
        for page in pages:
            state = states[page.url_fp]
            plan = self._visited(state, now, at, versions.get(page.url_fp))
            planned.append((state, plan, state.hub_key is not None))
        await save_page_states(conn, [s for s, _, _ in planned])
        await self._write_plans(conn, planned)

    async def plan_fetched(self, conn: Conn, pages: Sequence[FetchedPage]) -> dict[int, RevisitPlan]:
        """Plans the next fetch of pages an outcome reports fetched, before it is applied; locks nothing.

        The frontier writes each plan in the outcome's own update; :meth:`save_fetched` then
        saves the page states of the outcomes that applied.
        """
        if not pages:
            return {}
        now = self._clock.now()
        at = now.timestamp()
        found = await seen_page_states(conn, [p.url_fp for p in pages])
        seen = {fp: version for fp, (_, version) in found.items()}
        states = {p.url_fp: found[p.url_fp][0] if p.url_fp in found else PageState(p.url_fp, p.url, p.host)
                  for p in pages}
        versions = _seen_unchanged(
            await self._versions(conn, [p for p in pages if states[p.url_fp].hub_key is None]), pages)
        plans: dict[int, RevisitPlan] = {}
        for page in pages:
            state = states[page.url_fp]
            plan = self._visited(state, now, at, versions.get(page.url_fp))
            due, p, gain = self._plan_row(plan, state.hub_key is not None)
            plans[page.url_fp] = _Planned(due, p, gain, state, seen.get(page.url_fp))
        return plans

    async def outcomes_applied(self, conn: Conn, applied: AppliedOutcomes) -> None:
        """The frontier applied outcomes: the pages now fetched keep the states their plans were made from."""
        if applied.fetched:
            await self.save_fetched(conn, applied.plans, applied.fetched)

    async def save_fetched(self, conn: Conn, plans: Mapping[int, RevisitPlan], pages: Sequence[FetchedPage]) -> None:
        """Saves the page states :meth:`plan_fetched` made, for the ``pages`` whose outcome applied.

        A page whose state another transaction wrote since it was read (or one planned elsewhere)
        is planned again from its state, read locked now, and its frontier row updated again.
        """
        saving: list[tuple[PageState, str | None]] = []
        for page in pages:
            planned = plans.get(page.url_fp)
            if isinstance(planned, _Planned):
                if planned.seen is None:
                    planned.state.url, planned.state.host = page.url, page.host
                saving.append((planned.state, planned.seen))
        saved = await save_page_states_unchanged(conn, saving)
        again = [p for p in pages if p.url_fp not in saved]
        if again:
            await self.fetched(conn, again)

    @staticmethod
    def _plan_row(plan: Plan, hub: bool) -> tuple[datetime, float, float]:
        """The frontier's next fetch time, change probability and freshness gain of a plan."""
        return _instant(plan.at), 1.0 - math.exp(-max(0.0, plan.expected_items)), plan.expected_items if hub else 0.0

    async def replan_hubs(self, conn: Conn) -> int:
        """Plans every fetched hub again from its last fetch (after a new generation); returns how many."""
        cur = await conn.execute(  # frontier rows first, in key order, as the outcome transactions lock them
            "SELECT p.url_fp FROM scheduler.freshness_pages p JOIN scheduler.frontier f ON f.url_fp = p.url_fp"
            " WHERE p.hub_key IS NOT NULL AND f.status = 'fetched' ORDER BY p.url_fp FOR UPDATE OF f"
        )
        states = await page_states(conn, [int(r[0]) for r in await cur.fetchall()])
        now = self._clock.now().timestamp()
        planned = []
        for state in states.values():
            plan = self._plan(state, _seconds(state.last_fetch_at) or now, None)
            planned.append((state, plan, True))
        await save_page_states(conn, [s for s, _, _ in planned])
        if planned:
            await self._write_plans(conn, planned)
        return len(planned)

    def _visited(self, state: PageState, now: datetime, at: float, versions: list[tuple[float, str]] | None) -> Plan:
        """Records a fetch of the page at ``now`` (``at`` in seconds) in its state and plans its next one."""
        self._close_visit(state)
        state.previous_fetch_at, state.last_fetch_at = state.last_fetch_at, now
        state.fetches += 1
        state.new_items = 0
        return self._plan(state, at, versions)

    @staticmethod
    def _close_visit(state: PageState) -> None:
        """A hub's last visit, ``(previous fetch, last fetch]``, is complete: changed if it revealed new items."""
        previous, last = _seconds(state.previous_fetch_at), _seconds(state.last_fetch_at)
        if state.hub_key is not None and previous is not None and last is not None and last > previous:
            state.visits += 1
            state.changes += state.new_items > 0
            state.span += last - previous

    def _plan(self, state: PageState, at: float, versions: list[tuple[float, str]] | None) -> Plan:
        state.generation = self._registry.current.generation if self._registry.current else None
        hub = self.hub_curve(state)
        if hub is not None:
            curve, target, policy = hub
            previous = _seconds(state.previous_fetch_at)
            state.predicted_items = expected_items(curve, previous, at) if previous is not None else 0.0
            burst = BurstState(state.boost, _seconds(state.boost_since) or 0.0)
            plan = self.planner(target).plan(curve, HubState(at, burst))
            state.policy, state.rate = policy, curve.rate(at)
        elif state.hub_key is not None:
            interval = self._settings.bounds.clamp(self._settings.hub_interval)
            plan = Plan(at + interval, 0.0, "hub without a model or visits yet: the budget's mean interval")
            state.policy, state.rate = "first-revisit", None
        else:
            history = history_of_versions([t for t, _ in versions or []], [fp for _, fp in versions or []])
            rate = change_rate(history)
            plan = page_revisit(rate, at, self._settings.page_changes_per_visit, self._settings.page_bounds,
                                self._settings.first_interval)
            state.policy, state.rate = "page", rate
            state.visits, state.changes, state.span = history.visits, history.changes, history.span
        state.reason, state.expected_items, state.planned_at = plan.reason, plan.expected_items, _instant(plan.at)
        return plan

    async def _write_plans(self, conn: Conn, planned: Sequence[tuple[PageState, Plan, bool]]) -> None:
        rows = sorted(planned, key=lambda p: p[0].url_fp)
        await conn.execute(
            "UPDATE scheduler.frontier AS f SET next_fetch_at = v.due, change_probability = v.p,"
            " freshness_gain = v.gain, priority = " + priority_sql(change_probability="v.p", freshness_gain="v.gain")
            + " FROM unnest(%(fps)s::bigint[], %(due)s::timestamptz[], %(p)s::float8[], %(gain)s::float8[])"
            "   AS v(url_fp, due, p, gain)"
            " WHERE f.url_fp = v.url_fp AND f.status = 'fetched'",
            {
                "fps": [s.url_fp for s, _, _ in rows],
                "due": [self._plan_row(plan, hub)[0] for _, plan, hub in rows],
                "p": [self._plan_row(plan, hub)[1] for _, plan, hub in rows],
                "gain": [self._plan_row(plan, hub)[2] for _, plan, hub in rows],
                "w_importance": self._weights.importance,
                "w_freshness": self._weights.freshness,
            },
        )

    async def discovered(self, conn: Conn, found: Mapping[int, tuple[str, int]]) -> None:
        """``found``: page fingerprint -> (its host, URLs first seen on it that were just admitted)."""
        if not found:
            return
        await conn.execute(  # the pages' frontier rows first, as the outcome transactions lock them
            "SELECT url_fp FROM scheduler.frontier WHERE url_fp = ANY(%s) ORDER BY url_fp FOR UPDATE",
            (sorted(found),),
        )
        states = await page_states(conn, found)
        changed: list[PageState] = []
        earlier: list[tuple[PageState, Plan]] = []
        for fp, state in states.items():
            if state.previous_fetch_at is None or state.last_fetch_at is None:
                continue  # children of a page's first fetch say nothing about when they appeared
            state.new_items += found[fp][1]
            changed.append(state)
            hub = self.hub_curve(state)
            if hub is None:
                continue
            curve, target, _policy = hub
            at = state.last_fetch_at.timestamp()
            before = BurstState(state.boost, _seconds(state.boost_since) or 0.0)
            after = observe(before, state.new_items, state.predicted_items, at, self._settings.bursts)
            if after == before:
                continue
            state.boost, state.boost_since = after.boost, _instant(after.since)
            plan = self.planner(target).plan(curve, HubState(at, after))
            plan = Plan(plan.at, plan.expected_items, f"burst: {state.new_items} new items where"
                        f" {state.predicted_items:.2f} were expected, rate x{after.boost:.1f} fading; {plan.reason}")
            if state.planned_at is None or plan.at < state.planned_at.timestamp():
                state.reason, state.expected_items, state.planned_at = plan.reason, plan.expected_items, \
                    _instant(plan.at)
                earlier.append((state, plan))
        await save_page_states(conn, changed)
        if earlier:
            log.info("bursts on %s hub(s): next fetches brought forward", len(earlier))
            await self._write_plans(conn, [(s, p, True) for s, p in earlier])

    async def _versions(self, conn: Conn, pages: Sequence[FetchedPage]) -> dict[int, list[tuple[float, str]]]:
        """Content versions (fetch time, fingerprint) of pages, oldest first, from the linkbase."""
        if not pages:
            return {}
        out: dict[int, list[tuple[float, str]]] = {}
        try:
            async with conn.transaction():  # a savepoint: a linkbase that is not there is no history
                cur = await conn.execute(_VERSIONS_SQL, (sorted({p.host for p in pages}),
                                                         sorted({p.url_fp for p in pages})))
                for fp, fetched_at, content_fp in await cur.fetchall():
                    out.setdefault(int(fp), []).append((fetched_at.timestamp(), str(content_fp)))
        except (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn,
                psycopg.errors.InsufficientPrivilege) as exc:
            log.debug("no content versions to estimate change rates from: %s", exc)
        return {fp: rows[-VERSIONS:] for fp, rows in out.items()}


"""The admin API's ``ExplainUrl``: why the scheduler fetches a URL when it does.

It reads the frontier row (status, the parts of its priority, next fetch time), the page's
plan (``scheduler.freshness_pages``: policy, reason, visits, burst) and the model generation
this replica plans with (the key's route and model, its 168 hourly rates), and puts them
side by side. A URL never fetched has no plan: its priority is its importance alone.
"""

from __future__ import annotations

from datetime import datetime

from libs.common.db.pool import Database
from libs.common.url_keys import section_key
from libs.common.urls import url_fingerprint
from libs.common.wire import admin as admin_pb
from services.scheduler.clock import SchedulerClock
from services.scheduler.freshness.bursts import BurstState
from services.scheduler.freshness.registry import ModelRegistry
from services.scheduler.freshness.store import PageState, page_states
from services.scheduler.frontier.priority import PriorityWeights
from services.scheduler.frontier.store import NEVER

_ROW = (
    "SELECT status, priority, cash, change_probability, freshness_gain, path_penalty, next_fetch_at"
    " FROM scheduler.frontier WHERE url_fp = %s"
)


def _ms(at: datetime | None) -> int:
    if at is None or at >= NEVER:
        return 0
    return int(at.timestamp() * 1000)


class FreshnessExplainer:
    def __init__(self, db: Database, registry: ModelRegistry, clock: SchedulerClock, weights: PriorityWeights,
                 boost_half_life: float) -> None:
        self._db = db
        self._registry = registry
        self._clock = clock
        self._weights = weights
        self._half_life = boost_half_life

    async def explain(self, url: str) -> admin_pb.UrlExplanation:
        """``url`` is normalised."""
        fp = url_fingerprint(url)
        now = self._clock.now()
        out = admin_pb.UrlExplanation(url=url, clock_now_ms=_ms(now), importance_weight=self._weights.importance,
                                      freshness_weight=self._weights.freshness)
        async with self._db.connection() as conn:
            cur = await conn.execute(_ROW, (fp,))
            row = await cur.fetchone()
            state = (await page_states(conn, [fp], lock=False)).get(fp)
        if row is not None:
            status, priority, cash, probability, gain, penalty, due = row
            out.known = True
            out.status = str(status)
            out.priority, out.cash, out.change_probability = float(priority), float(cash), float(probability)
            out.freshness_gain, out.path_penalty = float(gain), float(penalty)
            if status in ("queued", "fetched"):
                out.next_fetch_at_ms = _ms(due)
        self._plan(out, state, url, now)
        return out

    def _plan(self, out: admin_pb.UrlExplanation, state: PageState | None, url: str, now: datetime) -> None:
        generation = self._registry.current
        key = state.hub_key if state is not None and state.hub_key else section_key(url)
        out.key = key
        route = generation.routes.get(key) if generation is not None else None
        boost = 1.0
        if state is not None:
            out.hub, out.hub_items = state.hub_key is not None, state.hub_items
            out.policy, out.reason = state.policy or "", state.reason or ""
            out.visits, out.changes, out.new_items = state.visits, state.changes, state.new_items
            out.predicted_items, out.expected_items = state.predicted_items, state.expected_items or 0.0
            out.last_fetch_at_ms, out.previous_fetch_at_ms = _ms(state.last_fetch_at), _ms(state.previous_fetch_at)
            if state.boost_since is not None:
                boost = BurstState(state.boost, state.boost_since.timestamp()).factor(now.timestamp(), self._half_life)
                out.burst_since_ms = _ms(state.boost_since)
        out.burst_boost = boost
        if generation is not None:
            out.model_generation, out.model_trained_at_ms = generation.generation, _ms(generation.trained_at)
            out.waiting_target = generation.waiting_target
        if generation is not None and route is not None and (state is None or state.hub_key is not None):
            model = generation.models[route.model_key]
            out.model_key, out.model_share = route.model_key, route.share
            out.model_samples, out.model_r2_cv, out.model_r2_holdout = model.samples, model.r2_cv, model.r2_holdout
            out.model_rates_per_hour.extend(r * route.share for r in model.rates_per_hour)
            out.predicted_rate_per_hour = model.curve(route.share).rate(now.timestamp()) * 3600.0 * boost
        elif state is not None and state.rate is not None:
            out.predicted_rate_per_hour = state.rate * 3600.0 * boost
        if state is None or state.policy is None:
            out.reason = out.reason or "not fetched yet: its priority is its importance (AOPIC's greedy order)"

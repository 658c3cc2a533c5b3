"""Each hub's publishing rhythm: the shared daily and weekly cycle, the hub's own shift, and bursts.

Every hub publishes at ``hub_rate_per_hour * factor * hour weight * weekday weight`` (see
``hubs``). On top of the shared weights, a hub may have

- a shift of its daily cycle by whole hours (a site in another time zone, or an earlier
  newsroom), drawn within ``hub_hour_shift_spread``;
- bursts (breaking news: the stated weakness of seed 001's model): episodes of
  ``hub_burst_hours`` during which ``(burst factor - 1) * hub_rate_per_hour * factor`` more
  items per hour appear, starting about ``hub_bursts_per_week`` times a week at moments that
  follow the hub's own rhythm (editors burst when they are at work).

A hub's rhythm comes from its own random stream (seeded by the web's seed and the hub's
URL), so turning these knobs changes nothing else in the web, and with both off (the
defaults) the web is exactly what it was without them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from libs.simweb.config import DAYTIME_HOUR_WEIGHTS, QUIET_WEEKEND_WEIGHTS, SimWebConfig


@dataclass(frozen=True)
class Burst:
    start: datetime
    end: datetime
    extra_per_hour: float


@dataclass(frozen=True)
class HubRhythm:
    """A hub's shift (hours its daily cycle runs late) and its bursts, in time order."""

    shift_hours: int = 0
    bursts: tuple[Burst, ...] = ()

    def hour_weight(self, config: SimWebConfig, at: datetime) -> float:
        return config.hub_hour_weights[(at.hour - self.shift_hours) % 24]

    def burst_rate(self, at: datetime) -> float:
        return sum(b.extra_per_hour for b in self.bursts if b.start <= at < b.end)

    @property
    def peak_burst_rate(self) -> float:
        """The largest :meth:`burst_rate` (where bursts overlap, their extras add up)."""
        return max((self.burst_rate(b.start) for b in self.bursts), default=0.0)


def draw_rhythm(config: SimWebConfig, hub_url: str, factor: float) -> HubRhythm:
    """The rhythm of the hub at ``hub_url`` whose rate factor is ``factor`` (deterministic per web and hub)."""
    if config.hub_hour_shift_spread == 0 and config.hub_bursts_per_week <= 0:
        return HubRhythm()
    rng = random.Random(f"{config.seed}:rhythm:{hub_url}")
    spread = config.hub_hour_shift_spread
    shift = rng.randint(-spread, spread) if spread else 0
    bursts: list[Burst] = []
    if config.hub_bursts_per_week > 0:
        begin = config.start_time - config.hub_backlog
        span_hours = (config.hub_backlog + config.hub_horizon).total_seconds() / 3600.0
        peak = max(config.hub_hour_weights) * max(config.hub_weekday_weights)
        per_hour = config.hub_bursts_per_week / 168.0 / max(1e-9, _mean_weight(config) / peak)
        hours = 0.0
        while True:
            hours += rng.expovariate(per_hour)
            if hours > span_hours:
                break
            at = begin + timedelta(seconds=hours * 3600.0)
            weight = config.hub_hour_weights[(at.hour - shift) % 24] * config.hub_weekday_weights[at.weekday()]
            if rng.random() * peak >= weight:
                continue  # bursts follow the rhythm: rarely at night or at weekends
            low, high = config.hub_burst_hours
            length = timedelta(hours=rng.uniform(low, high))
            extra = (rng.uniform(*config.hub_burst_factor) - 1.0) * config.hub_rate_per_hour * factor
            bursts.append(Burst(at, at + length, extra))
    return HubRhythm(shift, tuple(bursts))


def _mean_weight(config: SimWebConfig) -> float:
    return (sum(config.hub_hour_weights) / 24.0) * (sum(config.hub_weekday_weights) / 7.0)


def rhythmic_config(**overrides: object) -> SimWebConfig:
    """A web whose hubs publish the way seed 001 saw news sections do, unless ``overrides`` say otherwise.

    Updates by day, nights and weekends nearly flat (``DAYTIME_HOUR_WEIGHTS``,
    ``QUIET_WEEKEND_WEIGHTS``), each hub's day shifted by up to two hours, a burst a week.
    """
    values: dict[str, object] = {
        "hub_hour_weights": DAYTIME_HOUR_WEIGHTS,
        "hub_weekday_weights": QUIET_WEEKEND_WEIGHTS,
        "hub_hour_shift_spread": 2,
        "hub_bursts_per_week": 1.0,
    }
    values.update(overrides)
    return SimWebConfig(**values)  # type: ignore[arg-type]  # field names and types are checked by the dataclass

"""One training run as a pure function: sightings in; routes, models, hubs and the waiting target out."""

from __future__ import annotations

import math
import random

from libs.common.settings import load_settings
from services.scheduler.freshness.history import Sighting
from services.scheduler.freshness.settings import FreshnessSettings
from services.scheduler.freshness.trainer import find_hubs, train_generation

T0 = 1772409600.0  # 2026-03-02T00:00:00Z, a Monday
DAYS = 14
SETTINGS = load_settings(FreshnessSettings, {}, min_samples=200, hub_min_items=10, trees=20, window_days=DAYS)


def office_sightings(host: str, section: str, per_hour: int, seed: int) -> list[Sighting]:
    rng = random.Random(seed)
    out = []
    for hour in range(DAYS * 24):
        if hour % 24 in range(9, 17) and (hour // 24) % 7 < 5:
            for n in range(per_hour):
                at = T0 + hour * 3600 + rng.uniform(1, 3599)
                out.append(Sighting(f"http://{host}/{section}/{hour}-{n}.html", f"http://{host}/{section}/",
                                    published_at=at))
    return out


def test_a_busy_section_gets_its_model_and_its_hub() -> None:
    sightings = office_sightings("a.test", "news", 5, 1) + office_sightings("b.test", "tiny", 1, 2)[:30]
    training = train_generation(sightings, T0, T0 + DAYS * 86400, SETTINGS)
    assert set(training.models) == {"a.test/news"}
    assert training.routes["a.test/news"].model_key == "a.test/news"
    assert "b.test/tiny" not in training.routes  # 30 items: not even its host gets a model
    assert {h.url for h in training.hubs} == {"http://a.test/news/", "http://b.test/tiny/"}
    assert 0 < training.waiting_target < math.inf
    assert training.items == len(sightings)
    rates = training.models["a.test/news"].rates_per_hour
    assert rates[10] > 3 and rates[2] < 0.5  # Monday 10:00 busy, Monday 02:00 quiet


def test_the_last_hour_is_left_out_of_the_models() -> None:
    sightings = office_sightings("a.test", "news", 5, 3)
    until = T0 + 3 * 86400 + 10.5 * 3600  # Thursday 10:30: the items of 09:00-10:30 are still coming in
    training = train_generation(sightings, T0, until, SETTINGS)
    assert training.samples["a.test/news"] == sum(1 for s in sightings if (s.published_at or 0) < until - 1.5 * 3600)


def test_no_hubs_no_budget() -> None:
    lone = [Sighting(f"http://c.test/x/{i}.html", None, published_at=T0 + 3600 * i + 5) for i in range(300)]
    training = train_generation(lone, T0, T0 + DAYS * 86400, SETTINGS)
    assert training.hubs == [] and training.waiting_target == math.inf
    assert find_hubs([], 1) == []

"""The simulated web's hub rhythms the freshness models learn: shifts, bursts, quiet nights and weekends.

(These test ``libs/simweb/rhythm.py`` and ``libs/simweb/history_export.py``; they live with the
freshness tests because they exist for them.)
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from pathlib import Path

from libs.common.url_keys import section_key
from libs.simweb import SimWebConfig, build_web
from libs.simweb.history_export import history_config, hub_history, main
from libs.simweb.rhythm import HubRhythm, rhythmic_config
from services.scheduler.freshness.history import read_history_csv

OFFICE = tuple(1.0 if 9 <= h < 17 else 0.0 for h in range(24))


def test_default_webs_have_no_shift_and_no_bursts() -> None:
    web = build_web(SimWebConfig(seed=4, hosts=20, pages=400, hub_host_ratio=0.2, hub_rate_per_hour=2.0))
    assert web.hub_urls()
    assert all(web._hubs[hub].rhythm == HubRhythm() for hub in web.hub_urls())


def test_each_hub_runs_on_its_own_shifted_day() -> None:
    config = SimWebConfig(seed=3, hosts=12, pages=12, hub_host_ratio=1.0, hub_rate_per_hour=4.0,
                          hub_hour_weights=OFFICE, hub_hour_shift_spread=4, hub_backlog=timedelta(0),
                          hub_horizon=timedelta(days=14))
    web = build_web(config)
    shifts = set()
    for hub in web.hub_urls():
        rhythm = web._hubs[hub].rhythm
        shifts.add(rhythm.shift_hours)
        hours = {at.hour for _, at in web.hub_articles(hub)}
        assert hours and all(9 <= (h - rhythm.shift_hours) % 24 < 17 for h in hours)
    assert len(shifts) > 1 and all(-4 <= s <= 4 for s in shifts)


def test_bursts_add_articles_inside_their_windows() -> None:
    config = SimWebConfig(seed=5, hosts=6, pages=6, hub_host_ratio=1.0, hub_rate_per_hour=3.0,
                          hub_bursts_per_week=3.0, hub_burst_factor=(8.0, 8.0), hub_backlog=timedelta(0),
                          hub_horizon=timedelta(days=21))
    web = build_web(config)
    inside = outside = 0.0
    for hub in web.hub_urls():
        bursts = web._hubs[hub].rhythm.bursts
        assert bursts
        times = [at for _, at in web.hub_articles(hub)]
        for burst in bursts:
            assert 7.0 * 3.0 * 0.5 <= burst.extra_per_hour <= 7.0 * 3.0 * 1.5  # (8 - 1) * rate * hub factor
            hours = (burst.end - burst.start).total_seconds() / 3600
            inside += sum(burst.start <= t < burst.end for t in times) / hours
            week_before = [t for t in times if burst.start - timedelta(days=7) <= t < burst.end - timedelta(days=7)]
            outside += len(week_before) / hours
    assert inside > 3 * outside


def test_rhythmic_webs_are_quiet_at_night_and_at_weekends() -> None:
    web = build_web(history_config(seed=2, hubs=4, days=28))
    times = [at for _, at in hub_history(web)]
    by_day = Counter(t.weekday() for t in times)
    weekday_mean = sum(by_day[d] for d in range(5)) / 5
    assert by_day[5] < 0.1 * weekday_mean and by_day[6] < 0.1 * weekday_mean
    night = sum(1 for t in times if 0 <= t.hour < 5)
    assert night < 0.03 * len(times)
    assert rhythmic_config(seed=9).hub_bursts_per_week == 1.0


def test_history_export_writes_the_evaluators_csv(tmp_path: Path) -> None:
    out = tmp_path / "history.csv"
    assert main(["--seed", "3", "--hubs", "2", "--days", "3", "--rate", "5", "--out", str(out)]) == 0
    history = read_history_csv(out)
    assert len(history) == 2 and all(times == sorted(times) for times in history.values())
    for key in history:
        assert key.endswith("/news") and section_key(f"http://{key}/story-0001.html") == key

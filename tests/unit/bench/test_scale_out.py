"""The scale-out projection: made-up CPU costs per page give the curve and the bottleneck worked out by hand."""

from __future__ import annotations

import pytest

from bench.scale_out import CORES_BOUND, Part, Run, curve, model_parts, project, stops_scaling


def _scaling(name: str, ms: float, **kw: float) -> Part:
    return Part(name, ms, "replicas", max_replicas=int(kw.pop("max_replicas", 12)), **kw)


def test_parts_that_all_scale_give_a_rate_in_proportion_to_cores() -> None:
    parts = [_scaling("fetcher", 1.0), _scaling("extractor", 3.0), Part("postgres backends", 1.0, "shared")]

    points = curve(parts, (2, 4, 8, 16))

    # 5 ms of CPU per page: 200 pages/s per core.
    assert [round(p.pages_per_second) for p in points] == [400, 800, 1600, 3200]
    assert {p.bottleneck for p in points} == {CORES_BOUND}
    # 1.6 and 4.8 cores of work: five extractors would own 3, 3, 2, 2 and 2 of the 12 partitions, and the
    # busiest one would need 1.2 cores; six own 2 each.
    assert points[2].replicas == {"fetcher": 2, "extractor": 6}
    stop = stops_scaling(parts)  # the extractor: 12 partitions of one core at 3 ms, 4,000 pages/s on 20 cores
    assert stop is not None and (stop.cores, stop.bottleneck) == (20, "extractor")
    assert stop.pages_per_second == pytest.approx(4000, rel=1e-3)


def test_a_serial_shared_part_stops_the_curve_at_its_one_core() -> None:
    parts = [_scaling("extractor", 8.0), Part("broker", 2.0, "shared", max_cores=1.0)]

    two, eight = project(parts, 2), project(parts, 8)

    assert two.pages_per_second == pytest.approx(200, rel=1e-3) and two.bottleneck == CORES_BOUND
    # 10 ms per page would allow 800 pages/s on 8 cores; the broker's one core allows 1000 / 2 = 500.
    assert eight.pages_per_second == pytest.approx(500, rel=1e-3) and eight.bottleneck == "broker"
    assert eight.pages_per_second / two.pages_per_second < 3.5
    stop = stops_scaling(parts)
    assert stop is not None and stop.cores == 5 and stop.bottleneck == "broker"


def test_a_shared_part_over_several_cores_and_one_that_spreads() -> None:
    parts = [_scaling("extractor", 8.0), Part("postgres background", 2.0, "shared", max_cores=2.0),
             Part("broker", 2.0, "shared")]

    assert project(parts, 8).pages_per_second == pytest.approx(666.7, rel=1e-3)  # 12 ms per page
    assert project(parts, 16).pages_per_second == pytest.approx(1000, rel=1e-3)  # 2 cores / 2 ms
    assert project(parts, 16).bottleneck == "postgres background"


def test_a_service_runs_out_of_partitions() -> None:
    parts = [_scaling("dedup", 5.0, max_replicas=2), _scaling("fetcher", 1.0)]

    point = project(parts, 16)

    assert point.pages_per_second == pytest.approx(400, rel=1e-3)  # two replicas of one core at 5 ms
    assert point.bottleneck == "dedup" and point.replicas["dedup"] == 2


def test_an_extractor_replica_uses_its_worker_processes() -> None:
    one_core = project([_scaling("extractor", 5.0, max_replicas=1)], 16)
    two_cores = project([_scaling("extractor", 5.0, max_replicas=1, cores_per_replica=2.0)], 16)

    assert one_core.pages_per_second == pytest.approx(200, rel=1e-3)
    assert two_cores.pages_per_second == pytest.approx(400, rel=1e-3)


def test_each_replica_costs_its_idle_cpu() -> None:
    # 2 ms per page and 100 ms per second idle per replica, plus 1 ms per page shared. On 4 cores:
    # 3 replicas carry up to 1,350 pages/s, and 300 + 3 x 1,233.3 = 4,000 ms per second.
    parts = [_scaling("fetcher", 2.0, idle_ms_per_second=100.0), Part("postgres backends", 1.0, "shared")]

    point = project(parts, 4)

    assert point.pages_per_second == pytest.approx(1233.3, rel=1e-3)
    assert point.replicas == {"fetcher": 3} and point.bottleneck == CORES_BOUND
    assert point.cpu_ms_per_page == pytest.approx(4000 / 1233.3, rel=1e-3)


def test_a_shared_part_idles_more_with_every_service_replica() -> None:
    # The broker on one core: 50 ms per second, 25 more per replica beyond the first, 1 ms per page.
    # At 875 pages/s the extractor needs 4 replicas (3.5 cores): 50 + 3 x 25 + 875 = 1,000.
    parts = [_scaling("extractor", 4.0),
             Part("broker", 1.0, "shared", idle_ms_per_second=50.0, idle_per_replica=25.0, max_cores=1.0)]

    point = project(parts, 64)

    assert point.pages_per_second == pytest.approx(875, rel=1e-3)
    assert point.bottleneck == "broker" and point.replicas == {"extractor": 4}


def test_a_ceiling_caps_the_rate_by_name() -> None:
    point = project([_scaling("fetcher", 1.0)], 8, ceilings={"web": 120.0})
    assert point.pages_per_second == pytest.approx(120, rel=1e-3) and point.bottleneck == "web"


def _run(replicas: int, work: dict[str, float], idle: dict[str, float], background: float = 0.5,
         busiest: float = 0.25) -> Run:
    processes = {s: (replicas if s in ("fetcher", "extractor", "dedup") else 1)
                 for s in ("scheduler", "importance", "linkbase", "fetcher", "extractor", "dedup")}
    return Run(replicas, 1000, 10.0, 100.0, 1.0, work, {}, background, ("walwriter", busiest), 2, 1, 0.2,
               processes=processes, window_seconds=10.0, idle_ms_per_second=idle, work_ms_per_page=work)


def test_model_parts_take_idle_cpu_per_replica_and_per_page_costs_from_the_runs() -> None:
    work = {"scheduler": 1.0, "importance": 0.5, "linkbase": 1.0, "fetcher": 1.0, "extractor": 3.0, "dedup": 1.5,
            "postgres": 3.0, "broker": 2.0}
    runs = [_run(1, work, {"fetcher": 20.0, "broker": 60.0, "postgres": 10.0}),
            _run(2, {**work, "broker": 4.0}, {"fetcher": 40.0, "broker": 90.0, "postgres": 5.0})]

    parts = {p.name: p for p in model_parts(runs, broker_cores=None)}

    assert parts["fetcher"].idle_ms_per_second == pytest.approx(20.0)  # 40 over its 2 replicas
    assert parts["extractor"].cores_per_replica == 2.0 and parts["scheduler"].scaling == "partitions"
    assert parts["postgres backends"].cpu_ms_per_page == pytest.approx(2.5)  # less its background's 0.5
    assert parts["postgres background"].max_cores == pytest.approx(2.0)  # 0.5 ms, the busiest 0.25
    # 3 more service processes in the second run: 30 ms per second more, 10 each; less idle is noise.
    assert parts["broker"].idle_ms_per_second == pytest.approx(60.0)
    assert parts["broker"].idle_per_replica == pytest.approx(10.0)
    assert parts["postgres backends"].idle_per_replica == 0.0
    assert parts["broker"].cpu_ms_per_page == pytest.approx(3.0) and parts["broker"].max_cores is None
    assert model_parts(runs, broker_cores=1.0)[-1].max_cores == 1.0

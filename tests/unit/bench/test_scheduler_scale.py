"""The scheduler scale benchmark's workload: Zipf-like host sizes, URLs already in normal form."""

from __future__ import annotations

import numpy as np
import pytest

from bench import scheduler_scale
from libs.common.url_keys import normalized_fingerprint
from libs.common.urls import normalize_url, url_fingerprint


def test_host_sizes_fall_with_rank() -> None:
    hosts = scheduler_scale.url_hosts(urls=20_000, hosts=1_000, zipf=1.0, seed=3)
    sizes = np.bincount(hosts, minlength=1_000)

    assert len(hosts) == 20_000 and hosts.min() >= 0 and hosts.max() < 1_000
    assert sizes[0] > sizes[9] > sizes[99] > 0  # rank 1 about 10x rank 10, 100x rank 100
    assert 5 < sizes[0] / sizes[9] < 20


def test_urls_are_in_normal_form_so_their_fingerprint_is_the_frontiers() -> None:
    url = scheduler_scale.url_of(12, 345)

    assert normalize_url(url) == url
    assert normalized_fingerprint(url) == url_fingerprint(url)


def test_the_timed_window_must_start_past_the_in_flight_budget(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.argv", ["scheduler_scale", "--in-flight", "10000", "--warmup", "8000"])

    with pytest.raises(SystemExit) as stopped:
        scheduler_scale.main()

    assert stopped.value.code == 2
    assert "--warmup must exceed --in-flight" in capsys.readouterr().err

"""Keys of seed 001: host + first path segment, folded into the host below the sample threshold."""

from __future__ import annotations

import pytest

from services.scheduler.freshness.keys import Route, model_counts, route_keys


def test_big_keys_get_their_own_model_small_ones_fold_into_the_host() -> None:
    counts = {
        "a.test/news": 1500, "a.test/sport": 300, "a.test/weather": 900, "a.test": 100,
        "b.test/blog": 400, "b.test/misc": 50,
        "c.test/big": 1000,
    }
    routes = route_keys(counts, 1000)
    assert routes["a.test/news"] == Route("a.test/news")
    assert routes["c.test/big"] == Route("c.test/big")
    # a.test folds sport, weather and its own items: 1300 >= 1000, a host model
    assert routes["a.test/sport"].model_key == "a.test"
    assert routes["a.test/sport"].share == pytest.approx(300 / 1300)
    assert routes["a.test/weather"].share == pytest.approx(900 / 1300)
    assert routes["a.test"] == Route("a.test", 1.0)
    # b.test is still too small: no model at all
    assert "b.test/blog" not in routes and "b.test/misc" not in routes
    assert model_counts(counts, routes) == {"a.test/news": 1500, "a.test": 1300, "c.test/big": 1000}

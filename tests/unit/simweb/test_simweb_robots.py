"""robots.txt variants of the simulated web, and ``allowed``/``crawl_delay`` against them."""

from __future__ import annotations

from collections import Counter

import pytest

from libs.simweb import SimWeb, SimWebConfig, build_web
from libs.simweb.robots import BLOCKED_AGENT
from services.fetcher.robots.robots_rules import RobotsRules


@pytest.fixture(scope="module")
def web() -> SimWeb:
    return build_web(SimWebConfig(seed=3, hosts=60, pages=1200))


def _hosts(web: SimWeb, variant: str) -> list[str]:
    return [name for name, spec in web.hosts.items() if spec.robots == variant]


def test_every_variant_is_present(web: SimWeb) -> None:
    counts = Counter(spec.robots for spec in web.hosts.values())
    assert set(counts) == {"allow_all", "disallow_private", "crawl_delay", "missing", "unavailable"}
    assert counts["allow_all"] > len(web.hosts) / 3


def test_variant_shares_follow_the_config() -> None:
    config = SimWebConfig(seed=3, hosts=100, pages=1000,
                          robots_unavailable_ratio=0.1, robots_missing_ratio=0.2,
                          private_host_ratio=0.0, crawl_delay_host_ratio=0.0)
    counts = Counter(spec.robots for spec in build_web(config).hosts.values())
    assert counts == {"unavailable": 10, "missing": 20, "allow_all": 70}


def test_robots_status_per_variant(web: SimWeb) -> None:
    for name, spec in web.hosts.items():
        status, body = web.robots_txt(name)
        expected = {"missing": 404, "unavailable": 503}.get(spec.robots, 200)
        assert status == expected
        assert ("User-agent: *" in body) == (status == 200)


def test_unavailable_robots_disallows_the_whole_host(web: SimWeb) -> None:
    for name in _hosts(web, "unavailable"):
        assert not web.allowed(f"http://{name}/")
        host_pages = [url for url, page in web.pages.items() if page.host == name]
        assert host_pages and not any(web.allowed(url) for url in host_pages)
        assert not set(host_pages) & web.reachable(web.home_pages())


def test_missing_robots_allows_everything(web: SimWeb) -> None:
    for name in _hosts(web, "missing"):
        assert web.allowed(f"http://{name}/private/x.html")
        assert web.allowed(f"http://{name}/", user_agent=BLOCKED_AGENT)
        assert web.crawl_delay(name) is None


def test_private_prefix_is_disallowed(web: SimWeb) -> None:
    for name in _hosts(web, "disallow_private"):
        assert not web.allowed(f"http://{name}/private/page-3.html")
        assert web.allowed(f"http://{name}/privateer.html")
        assert web.allowed(f"http://{name}/section-1/page-2.html")
        assert web.allowed(f"http://{name}/robots.txt")


def test_crawl_delay_hosts(web: SimWeb) -> None:
    delayed = _hosts(web, "crawl_delay")
    assert delayed
    for name in delayed:
        assert web.crawl_delay(name) in SimWebConfig().crawl_delay_values
        assert "Crawl-delay:" in web.robots_txt(name)[1]
    assert all(web.crawl_delay(name) is None for name in _hosts(web, "allow_all"))


def test_per_agent_group_and_odd_urls(web: SimWeb) -> None:
    name = _hosts(web, "allow_all")[0]
    assert web.allowed(f"http://{name}/a.html", "trawl")
    assert web.allowed(f"http://{name}/a.html", "TRAWL")
    assert not web.allowed(f"http://{name}/a.html", BLOCKED_AGENT)
    assert not web.allowed("mailto:x@y.test")
    assert not web.allowed("http://[::1")
    assert web.allowed("http://unknown-host.test/x")  # answers 404 to robots.txt too


def test_served_robots_txt_agrees_with_the_fetchers_reading(web: SimWeb) -> None:
    """The ground truth must match what the fetcher's robots.txt matcher reads in the served files."""
    paths = ["/", "/private/page-1.html", "/section-2/page-9.html", "/news/", "/privateer"]
    for name in web.hosts:
        status, body = web.robots_txt(name)
        if status != 200:
            continue
        for agent in ("trawl", BLOCKED_AGENT):
            rules = RobotsRules.parse(body.encode(), agent)
            for path in paths:
                url = f"http://{name}{path}"
                assert rules.allowed(url) == web.allowed(url, agent), (name, path, agent)
            assert rules.crawl_delay == web.crawl_delay(name, agent)

"""Webs of structured sites: their shape, page weight, robots.txt, links, and serving them."""

from __future__ import annotations

import urllib.request
from collections import deque
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from libs.simweb.process import SimWebProcess
from libs.simweb.site_tree import SiteGroup, TreeWeb, TreeWebConfig, branching, build_tree_web, tree_family


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.hrefs.append(dict(attrs).get("href") or "")


@pytest.fixture(scope="module")
def family() -> dict[str, TreeWeb]:
    return {name: build_tree_web(config) for name, config in tree_family(0.1).items()}


def test_the_family_at_full_scale_is_the_one_described() -> None:
    webs = tree_family()
    wide, narrow, deep, mixed = webs["wide"], webs["narrow"], webs["deep"], webs["mixed"]
    assert wide.hosts >= 300 and wide.groups[0].pages == (10, 100) and wide.groups[0].section_levels == 1
    assert [(g.count, g.pages) for g in narrow.groups] == [(1, (2000, 2000)), (500, (1, 1))]
    assert deep.groups[0].section_levels == 5
    assert set(mixed.crawl_delay_values) == {0.5, 1.0, 2.0} and mixed.crawl_delay_share >= 0.3
    small = tree_family(0.1)
    assert small["wide"].hosts == 32 and small["narrow"].groups[0].pages == (200, 200)
    assert small["deep"].groups[0].pages[0] >= 7  # home, five sections and an article at least


def test_levels_follow_the_tree(family: dict[str, TreeWeb]) -> None:
    assert max(family["wide"].levels.values()) == 2  # home, sections, articles
    assert max(family["deep"].levels.values()) == 6  # home, five levels of sections, articles
    narrow = family["narrow"]
    assert sum(1 for page in narrow.pages.values() if page.host == "big-000.test") == 200
    assert all(narrow.levels[url] == 0 for url, page in narrow.pages.items() if page.host.startswith("one-"))
    for web in family.values():
        for url, page in web.pages.items():
            level = web.levels[url]
            assert (page.role == "home") == (level == 0)
            if page.role == "article":
                assert page.path.endswith(".html") and page.path.count("/") == level


def test_every_page_is_reachable_from_its_own_home_page(family: dict[str, TreeWeb]) -> None:
    for web in family.values():
        for host in web.hosts:
            seen, queue = {f"http://{host}/"}, deque([f"http://{host}/"])
            while queue:
                for link in web.links_at(queue.popleft()):
                    if link.kind == "internal" and link.target_url not in seen:
                        seen.add(link.target_url)
                        queue.append(link.target_url)
            assert seen == {url for url, page in web.pages.items() if page.host == host}, host


def test_pages_weigh_20_to_100_kb(family: dict[str, TreeWeb]) -> None:
    for web in family.values():
        sizes = [len((web.html(url) or "").encode()) for url in web.pages]
        assert min(sizes) >= 20_000 and max(sizes) <= 100_000, web.tree.name
        html = web.html(next(iter(web.pages))) or ""
        assert "<style>" in html and "<script>" in html and "<footer>" in html


def test_every_anchor_is_a_link_of_the_page(family: dict[str, TreeWeb]) -> None:
    web = family["mixed"]
    for url in list(web.pages)[:200]:
        parser = _Anchors()
        parser.feed(web.html(url) or "")
        expected = sorted(link.target_url for link in web.links_at(url))
        assert sorted(urljoin(url, href) for href in parser.hrefs) == expected
    cross = [(page.host, link) for page in web.pages.values() for link in page.links if link.kind == "external"]
    assert len(cross) > 10 and all(urlsplit(link.target_url).hostname not in (host, None) for host, link in cross)
    assert all(link.target_url in web.pages for _, link in cross)


def test_crawl_delays_and_disallowed_hosts(family: dict[str, TreeWeb]) -> None:
    mixed = family["mixed"]
    delays = {host: mixed.crawl_delay(host) for host in mixed.hosts}
    assert {d for d in delays.values() if d} == {0.5, 1.0, 2.0}
    assert sum(1 for d in delays.values() if d) == 10  # half of 20 hosts
    host = next(h for h, d in delays.items() if d == 2.0)
    assert "Crawl-delay: 2" in mixed.robots_txt(host)[1]
    wide = family["wide"]
    blocked = [h for h, spec in wide.hosts.items() if spec.robots == "disallow_all"]
    assert len(blocked) == 1  # 5% of 32, rounded down
    assert wide.robots_txt(blocked[0]) == (200, f"# robots.txt for {blocked[0]}\nUser-agent: *\nDisallow: /\n")
    reachable = wide.reachable(wide.home_pages())
    assert not any(urlsplit(url).hostname == blocked[0] for url in reachable)
    assert len(reachable) == sum(1 for page in wide.pages.values() if page.host != blocked[0])
    assert not wide.allowed(f"http://{blocked[0]}/")


def test_a_build_is_a_function_of_its_config() -> None:
    config = TreeWebConfig("t", (SiteGroup("s", 3, (8, 20), 2),), seed=5)
    one, two = build_tree_web(config), build_tree_web(config)
    assert list(one.pages) == list(two.pages)
    url = list(one.pages)[-1]
    assert one.html(url) == two.html(url)
    assert list(build_tree_web(TreeWebConfig("t", config.groups, seed=6)).pages) != list(one.pages)


def test_pages_are_edited_as_the_config_asks_and_their_etags_follow() -> None:
    config = TreeWebConfig("t", (SiteGroup("s", 4, (20, 30), 2),), seed=5, page_edit_ratio=0.3)
    web = build_tree_web(config)
    later = web.start_time + web.config.page_edit_interval
    edited = {url for url in web.pages if web.etag(url) != web.etag(url, later)}
    assert 0.15 * len(web.pages) < len(edited) < 0.45 * len(web.pages)
    url = sorted(edited)[0]
    assert "Updated on" not in (web.html(url) or "") and "revision 1 of" in (web.html(url, later) or "")
    assert web.html(url) == build_tree_web(config).html(url)  # the unedited page is still served as it was
    still = build_tree_web(TreeWebConfig("t", config.groups, seed=5))
    assert all(still.etag(u) == still.etag(u, later) for u in still.pages)  # no edits unless asked


def test_branching_keeps_sections_small_and_leaves_room_for_articles() -> None:
    assert branching(10, 1) == 1
    assert branching(100, 1) == 4  # 95 articles over 4 sections
    assert branching(60, 5) == 1  # a chain of five sections
    assert branching(300, 5) == 2
    with pytest.raises(ValueError):
        TreeWebConfig("t", (SiteGroup("s", 1, (5, 5), 5),))  # five levels need seven pages


def test_the_web_process_serves_a_tree_web(tmp_path: Path) -> None:
    config = TreeWebConfig("t", (SiteGroup("s", 2, (6, 6), 1),), seed=3, latency_range=(0.0, 0.0))
    server = SimWebProcess(config, tmp_path / "log.jsonl", gzip=False)
    proxy = server.start()
    try:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy}))
        with opener.open("http://s-000.test/", timeout=10) as response:
            body = response.read().decode()
        expected = build_tree_web(config).html("http://s-000.test/")
        assert body == expected
    finally:
        server.stop()
    assert [(r.host, r.path, r.status) for r in server.request_log] == [("s-000.test", "/", 200)]

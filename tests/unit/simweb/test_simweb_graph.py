"""The simulated web's graph: determinism, shape, reachability and ground-truth flags."""

from __future__ import annotations

import statistics
from collections import Counter
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from libs.simweb import SimWeb, SimWebConfig, build_web, registered_domain
from libs.simweb.model import PRIVATE_PREFIX

SMALL = SimWebConfig(seed=11, hosts=40, pages=1500)


@pytest.fixture(scope="module")
def web() -> SimWeb:
    return build_web(SMALL)


def _in_degrees(web: SimWeb) -> Counter[str]:
    degrees: Counter[str] = Counter()
    for page in web.pages_at().values():
        for target in {link.target_url for link in page.links if link.kind != "bad"}:
            degrees[target] += 1
    return degrees


def test_same_seed_builds_the_same_web() -> None:
    first, second = build_web(SMALL), build_web(SMALL)
    assert first.hosts == second.hosts
    assert first.pages == second.pages
    sample = list(first.pages)[:20]
    assert [first.pages[url].text for url in sample] == [second.pages[url].text for url in sample]


def test_another_seed_builds_another_web(web: SimWeb) -> None:
    other = build_web(SimWebConfig(seed=12, hosts=40, pages=1500))
    assert other.hosts != web.hosts and other.pages != web.pages
    bases = {name for name in web.hosts if name.startswith("site-")}
    assert bases == {name for name in other.hosts if name.startswith("site-")}  # site-NNN are positional
    shared = set(other.pages) & set(web.pages)
    assert sum(other.pages[u].links == web.pages[u].links for u in shared) < len(shared) / 10


def test_default_web_has_the_requested_size() -> None:
    built = build_web()
    assert len(built.hosts) == 60
    ordinary = [p for p in built.pages.values() if p.role in ("home", "page", "private")]
    assert len(ordinary) == 5000


def test_host_names_and_subdomains(web: SimWeb) -> None:
    names = list(web.hosts)
    assert all(name.endswith(".test") for name in names)
    subdomains = [name for name in names if name.count(".") == 2]
    assert subdomains and len(subdomains) < len(names) / 2
    for name in subdomains:
        assert name.split(".", 1)[1] in web.hosts  # the parent domain is a host too
        assert web.hosts[name].registered_domain == registered_domain(name) == name.split(".", 1)[1]
    assert registered_domain("blog.site-007.test") == "site-007.test"


def test_hundreds_of_hosts_are_possible() -> None:
    big = build_web(SimWebConfig(seed=5, hosts=500, pages=6000, hub_host_ratio=0.0))
    assert len(big.hosts) == 500
    assert len(set(big.hosts)) == 500
    assert len(big.home_pages()) == 500


def test_in_degree_is_heavy_tailed(web: SimWeb) -> None:
    degrees = _in_degrees(web)
    values = [degrees.get(url, 0) for url in web.pages_at()]
    assert max(values) > 20 * statistics.median(values)
    ordinary = [degrees.get(u, 0) for u, p in web.pages.items() if p.role == "page"]
    assert max(ordinary) > 10 * statistics.median(ordinary)  # not only the menus make hubs


def test_links_are_well_formed(web: SimWeb) -> None:
    kinds: Counter[str] = Counter()
    for page in web.pages.values():
        for link in page.links:
            kinds[link.kind] += 1
            if link.kind == "bad":
                assert not link.target_url.startswith("http://site") or link.target_url == "http://[::1"
                continue
            assert link.target_url in web.pages, link
            same = registered_domain(link.target_url.split("/")[2]) == registered_domain(page.host)
            assert link.kind == ("internal" if same else "external")
            assert link.anchor
        article = [link for link in page.links if link.placement == "article"]
        owners: dict[str, str] = {}
        for link in article:
            assert owners.setdefault(link.anchor, link.target_url) == link.target_url  # distinct anchors
    assert kinds["internal"] > kinds["external"] > kinds["bad"] > 0
    bad = {link.target_url for page in web.pages.values() for link in page.links if link.kind == "bad"}
    assert bad == {"javascript:void(0)", "mailto:x@y.test", "http://[::1", "data:text/html,hello"}


def test_some_pages_have_no_links_and_mean_out_degree_is_moderate(web: SimWeb) -> None:
    pages = [p for p in web.pages.values() if p.role in ("page", "private")]
    empty = [p for p in pages if not p.links]
    assert 0.02 < len(empty) / len(pages) < 0.1
    article_links = [sum(link.placement == "article" for link in p.links) for p in pages if p.links]
    assert 5 < statistics.mean(article_links) < 14


def test_every_page_is_reachable_from_home_pages_ignoring_robots(web: SimWeb) -> None:
    reached = web.reachable(web.home_pages(), respect_robots=False, follow_nofollow=True)
    assert reached == set(web.pages_at())


def test_home_pages_reach_everything_robots_allows(web: SimWeb) -> None:
    reached = web.reachable(web.home_pages())
    allowed = {url for url in web.pages_at() if web.allowed(url)}
    assert reached == allowed
    assert allowed != set(web.pages_at())  # robots.txt does forbid something


def test_nofollow_pages_contribute_no_edges(web: SimWeb) -> None:
    nofollow = [p for p in web.pages.values() if p.nofollow and p.links and web.allowed(p.url)]
    assert nofollow
    page = nofollow[0]
    alone = web.reachable([page.url], respect_robots=False)
    assert alone == {page.url}
    assert len(web.reachable([page.url], respect_robots=False, follow_nofollow=True)) > 1


def test_private_pages_exist_and_are_linked(web: SimWeb) -> None:
    private = {url for url, page in web.pages.items() if page.path.startswith(PRIVATE_PREFIX)}
    assert private
    linked = {link.target_url for page in web.pages.values() for link in page.links}
    assert private <= linked
    assert all(web.hosts[web.pages[url].host].robots == "disallow_private" for url in private)


def test_exact_duplicates_copy_their_original(web: SimWeb) -> None:
    duplicates = [p for p in web.pages.values() if p.duplicate_of]
    assert len(duplicates) > 10
    for page in duplicates:
        original = web.pages[page.duplicate_of or ""]
        assert original.duplicate_of is None and original.host == page.host
        assert (page.title, page.text, page.published_at, page.links) == (
            original.title, original.text, original.published_at, original.links)
        assert web.html(page.url) == web.html(original.url)


def test_near_duplicates_differ_in_a_few_words(web: SimWeb) -> None:
    near = [p for p in web.pages.values() if p.near_duplicate_of]
    assert len(near) > 10
    for page in near[:10]:
        original = web.pages[page.near_duplicate_of or ""]
        assert page.title == original.title and page.published_at == original.published_at
        ours, theirs = page.text.split(), original.text.split()
        assert len(ours) == len(theirs)
        changed = sum(a != b for a, b in zip(ours, theirs, strict=True))
        assert 1 <= changed <= SMALL.near_duplicate_edits


def test_unrelated_pages_share_few_word_shingles(web: SimWeb) -> None:
    def shingles(text: str) -> set[tuple[str, ...]]:
        words = text.lower().split()
        return {tuple(words[i:i + 5]) for i in range(len(words) - 4)}

    pages = [p for p in web.pages.values() if p.role == "page" and not p.duplicate_of]
    pages = [p for p in pages if not p.near_duplicate_of]
    a, b = shingles(pages[0].text), shingles(pages[1].text)
    assert len(a & b) / len(a | b) < 0.05


def test_published_dates_are_before_the_start(web: SimWeb) -> None:
    static = [p for p in web.pages.values() if p.appears_at is None]
    assert all(SMALL.start_time - timedelta(days=61) < p.published_at < SMALL.start_time for p in static)
    assert all(p.published_at.year == 2026 for p in static if p.role == "page")


def test_config_rejects_impossible_values() -> None:
    with pytest.raises(ValueError):
        SimWebConfig(hosts=10, pages=5)
    with pytest.raises(ValueError):
        SimWebConfig(external_link_ratio=1.5)
    with pytest.raises(ValueError):
        SimWebConfig(robots_missing_ratio=0.6, private_host_ratio=0.6)
    with pytest.raises(ValueError):
        SimWebConfig(hub_hour_weights=(1.0,) * 23)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32), hosts=st.integers(1, 25), extra=st.integers(0, 300))
def test_any_small_web_is_fully_reachable(seed: int, hosts: int, extra: int) -> None:
    web = build_web(SimWebConfig(seed=seed, hosts=hosts, pages=hosts + extra, hub_horizon=timedelta(days=1)))
    assert len(web.hosts) == hosts
    assert web.reachable(web.home_pages(), respect_robots=False, follow_nofollow=True) == set(web.pages_at())
    assert web.reachable(web.home_pages()) == {url for url in web.pages_at() if web.allowed(url)}

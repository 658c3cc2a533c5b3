"""The web-like link graph mode of the simulated web: shape, reachability, determinism, file format."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from libs.simweb.webgraph import build_web_graph, web_like_config, write_graph

GRAPH = build_web_graph(web_like_config(20_000, seed=9))


def test_the_graph_is_deterministic_and_has_the_requested_size() -> None:
    again = build_web_graph(web_like_config(20_000, seed=9))
    assert again.urls == GRAPH.urls and again.out_links == GRAPH.out_links
    assert len(GRAPH.urls) == 20_000 and len(GRAPH.home_pages) == 200
    assert all(t != s and len(set(ts)) == len(ts) for s, ts in enumerate(GRAPH.out_links) for t in ts)


def test_sites_have_home_and_section_pages_and_very_unequal_sizes() -> None:
    sizes = Counter(url.split("/")[2] for url in GRAPH.urls)
    assert max(sizes.values()) > 20 * min(sizes.values())
    homes = {GRAPH.urls[h] for h in GRAPH.home_pages}
    assert all(url.endswith("/") and url.count("/") == 3 for url in homes)
    sections = [u for u in GRAPH.urls if u.endswith("/") and u.count("/") == 4]
    assert len(sections) > len(homes)
    # every page of a site links to its home page (navigation), except the pages without links
    home_of = {url.split("/")[2]: h for h in GRAPH.home_pages for url in [GRAPH.urls[h]]}
    linked = [home_of[GRAPH.urls[s].split("/")[2]] in ts for s, ts in enumerate(GRAPH.out_links)
              if ts and s not in GRAPH.home_pages]
    assert all(linked)


def test_about_three_percent_of_pages_have_no_links_and_all_are_reachable_from_home_pages() -> None:
    empty = sum(1 for ts in GRAPH.out_links if not ts)
    assert 0.02 < empty / len(GRAPH.urls) < 0.04
    seen = set(GRAPH.home_pages)
    stack = list(seen)
    while stack:
        for t in GRAPH.out_links[stack.pop()]:
            if t not in seen:
                seen.add(t)
                stack.append(t)
    assert len(seen) == len(GRAPH.urls)


def test_links_to_other_sites_favour_large_sites() -> None:
    size = Counter(url.split("/")[2] for url in GRAPH.urls)
    external: Counter[str] = Counter()
    for s, ts in enumerate(GRAPH.out_links):
        source = GRAPH.urls[s].split("/")[2]
        for t in ts:
            target = GRAPH.urls[t].split("/")[2]
            if target.split(".")[-2] != source.split(".")[-2]:
                external[target] += 1
    big = sorted(size, key=lambda h: -size[h])[:20]
    small = sorted(size, key=lambda h: size[h])[:20]
    assert sum(external[h] for h in big) > 5 * sum(external[h] for h in small)


def test_written_files_list_every_edge_and_the_seeds(tmp_path: Path) -> None:
    graph_file, seeds_file = tmp_path / "g.txt", tmp_path / "s.txt"
    write_graph(GRAPH, graph_file, seeds_file, GRAPH.home_pages[:3])
    lines = graph_file.read_text().splitlines()
    assert len(lines) == GRAPH.edges
    assert seeds_file.read_text().split() == [GRAPH.urls[h] for h in GRAPH.home_pages[:3]]

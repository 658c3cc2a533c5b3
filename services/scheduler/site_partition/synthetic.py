"""Deterministic site graphs with the path structure the partition paper measured (seed 004).

The paper's 211 sites: 74.36% of a page's links point to its own path, and 19.15% of the
paths (the key paths) hold 90% of the URLs. A generated site has ``paths`` paths besides the
root: the largest ``round(key_share * paths)`` share 90% of the pages, the others 10%, both
by a Zipf law (exponent 0.7) within their share. Each path has an index page
(``/name/``) and pages below it (``/name/<i>.html``) arranged as a tree of fan-out 6; one
tree link in ten comes from another path instead (sections are not perfectly nested). The
home page links to every key path's index and to three tail indexes in ten; a few root
pages sit beside it. Every page also has 3 to 9 further links: to a page of its own path
with probability ``same_path_links``, else to another path chosen by size (its index in
three cases out of ten). The default 0.76 gives about 74% of links within the path once
the tree links are counted (``SiteGraph.same_path_link_share`` measures it).
"""

from __future__ import annotations

import math
import random

TREE_FANOUT = 6
ROOT_PAGES = 4


def _sizes(total: int, count: int) -> list[int]:
    """``count`` sizes of at least 1 that sum to ``total``, by a Zipf law (largest remainders)."""
    weights = [1.0 / (i + 1) ** 0.7 for i in range(count)]
    spare = total - count
    shares = [spare * w / sum(weights) for w in weights]
    sizes = [1 + int(share) for share in shares]
    by_remainder = sorted(range(count), key=lambda i: (int(shares[i]) - shares[i], i))
    for i in by_remainder[: total - sum(sizes)]:
        sizes[i] += 1
    return sizes


def generate(
    seed: int,
    pages: int = 400,
    paths: int = 42,
    key_share: float = 0.19,
    same_path_links: float = 0.76,
    host: str = "site.example",
) -> tuple[str, list[tuple[str, str]]]:
    """(home page URL, links ``(source, target)`` sorted) of a generated site."""
    rng = random.Random(f"site-graph:{seed}")
    key_count = max(1, round(key_share * paths))
    tail_pages = max(paths - key_count, pages - ROOT_PAGES - math.ceil(0.905 * pages))
    key_pages = pages - ROOT_PAGES - tail_pages  # the key paths alone reach the 90% mark
    if key_pages < key_count:
        raise ValueError(f"{pages} pages are too few for {paths} paths")
    sizes = _sizes(key_pages, key_count) + _sizes(tail_pages, paths - key_count)
    names = [f"s{i:02d}" for i in range(paths)]
    rng.shuffle(names)
    home = f"http://{host}/"
    members: dict[str, list[str]] = {"": [home] + [f"http://{host}/about{i}.html" for i in range(1, ROOT_PAGES)]}
    for name, size in zip(names, sizes, strict=True):
        members[name] = [f"http://{host}/{name}/"] + [f"http://{host}/{name}/{i}.html" for i in range(1, size)]
    sections = [n for n in members if n]
    weights = [len(members[n]) for n in sections]
    links: set[tuple[str, str]] = set()
    for name in sections:
        urls = members[name]
        is_key = len(urls) >= sizes[key_count - 1]
        if is_key or rng.random() < 0.3:
            links.add((home, urls[0]))
        for i in range(1, len(urls)):
            parent = urls[(i - 1) // TREE_FANOUT]
            if rng.random() < 0.1:
                other = rng.choices(sections, weights=weights)[0]
                parent = rng.choice(members[other])
            links.add((parent, urls[i]))
    for page in members[""][1:]:
        links.add((home, page))
    for name, urls in members.items():
        for page in urls:
            for _ in range(rng.randint(3, 9)):
                if name and rng.random() < same_path_links:
                    target = rng.choice(urls)
                else:
                    other = rng.choices(sections, weights=weights)[0]
                    target = members[other][0] if rng.random() < 0.3 else rng.choice(members[other])
                if target != page:
                    links.add((page, target))
    return home, sorted(links)

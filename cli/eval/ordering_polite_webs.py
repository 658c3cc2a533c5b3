"""The polite crawl's webs as ordering graphs: families outside the suite.

    trawl eval ordering --family polite-deep [--partitions 12] [--policies aopic,opic,breadth_first]

The webs of ``bench.polite_crawl`` (``libs/simweb/site_tree.py``: sites of home, section and article
pages) at the size its figures are recorded at (``--scale 0.3``): the graph is every page reachable from
the home pages as a crawler obeying robots.txt may fetch them, every home page a seed, so the live
crawl's ordering and the evaluator's can be compared on one graph. The suite does not hold these
families: no default was chosen on them, and AOPIC misses the suite's rule on some of them
(``docs/evaluation.md``). ``--seed`` does not change a web.
"""

from __future__ import annotations

from cli.eval.ordering_graph import CrawlGraph
from libs.simweb.site_tree import build_tree_web, tree_family

SCALE = 0.3
"""Hosts and pages per host, times this: the polite crawl's recorded runs (``docs/benchmarks.md``)."""
PREFIX = "polite-"
NAMES = tuple(PREFIX + name for name in tree_family(SCALE))


def polite_web_graph(family: str) -> CrawlGraph:
    """The graph of the polite crawl's web ``family`` (``polite-wide``, ...): reachable pages, home pages as seeds."""
    web = build_tree_web(tree_family(SCALE)[family.removeprefix(PREFIX)])
    homes = web.home_pages()
    reachable = sorted(web.reachable(homes))
    index = {url: i for i, url in enumerate(reachable)}
    out = [[index[link.target_url] for link in web.links_at(url) if link.target_url in index and link.target_url != url]
           for url in reachable]
    return CrawlGraph(reachable, out, [index[url] for url in homes if url in index])

"""How early a crawl fetched the important pages: PageRank captured by its first pages.

A crawl's order is read from the simulated web's request log (pages answered 200, in the
order their requests started, each URL once). Against it stands the best order any crawler
could have taken: the reachable pages sorted by PageRank. For a share ``x`` of the reachable
pages (``k = x * N`` pages), the captured share is the PageRank of the crawl's first ``k``
pages over that of the ``k`` highest-ranked pages: 1.0 is the best possible order, and a
crawl that fetched fewer than ``k`` pages counts only those it fetched.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from libs.simweb.pagerank import pagerank
from libs.simweb.request_log import RequestRecord
from libs.simweb.web import SimWeb

SHARES = (0.1, 0.2, 0.3, 0.5)


def fetch_order(log: Iterable[RequestRecord]) -> list[str]:
    """URLs of the pages answered 200 (robots.txt aside), by request start, each once."""
    pages = sorted((r for r in log if r.is_page), key=lambda r: r.started_at)
    return list(dict.fromkeys(r.url for r in pages))


def reachable_pagerank(web: SimWeb, reachable: Iterable[str], tolerance: float = 1e-9) -> dict[str, float]:
    """PageRank of the graph of the ``reachable`` pages and the links among them."""
    nodes = set(reachable)
    graph = {url: [link.target_url for link in web.links_at(url) if link.target_url in nodes] for url in nodes}
    return pagerank(graph, tolerance=tolerance)


def pagerank_captured(order: Sequence[str], scores: Mapping[str, float],
                      shares: Sequence[float] = SHARES) -> dict[float, float]:
    """For each share ``x``: PageRank of the first ``x * N`` pages of ``order`` over that of the best
    ``x * N`` pages (``N = len(scores)``; URLs of ``order`` not in ``scores`` count 0)."""
    ranked = sorted(scores.values(), reverse=True)
    captured = {}
    for share in shares:
        k = max(1, round(share * len(ranked)))
        best = sum(ranked[:k])
        captured[share] = sum(scores.get(url, 0.0) for url in order[:k]) / best if best > 0 else 0.0
    return captured

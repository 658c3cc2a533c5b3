"""On-line Page Importance Computation (OPIC) with a virtual page, as pure functions.

Every page has cash C and history H; a visit moves C into H and gives it away in equal
shares to the page's out-links and to the virtual page (every page links to it, so pages
without out-links do not swallow cash). The virtual page gives its cash to the pages not
yet crawled (favouring discovery), equally, in O(1): ``Totals.dividend`` rises by
cash / uncrawled, and an uncrawled page's cash is ``cash + dividend - dividend_mark``.
When every known page has been crawled, it gives its cash to all of them instead, the
same way through ``Totals.crawled_dividend`` (a crawled page's mark is reset on each
visit). It always links back to some page, so it is never a sink and the graph stays
strongly connected: history keeps growing and the estimate keeps converging.

Invariant (tested): sum(cash) + sum over uncrawled pages of (dividend - mark)
+ sum over crawled pages of (crawled_dividend - mark) + virtual_cash == total_cash,
through any sequence of visits and discoveries.
Importance X(i) = (H(i) + C(i)) / (sum H + total_cash).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class PageCash:
    url_fp: int
    url: str
    host: str
    cash: float = 0.0
    history: float = 0.0
    crawled: bool = False
    dividend_mark: float = 0.0
    visits: int = 0
    last_visit_ms: int = 0


@dataclass
class Totals:
    virtual_cash: float
    dividend: float
    uncrawled: int
    history_total: float
    total_cash: float
    crawled: int = 0
    crawled_dividend: float = 0.0


def new_page(url_fp: int, url: str, host: str, totals: Totals) -> PageCash:
    """A page seen for the first time: no cash of its own, entitled to future dividends."""
    totals.uncrawled += 1
    return PageCash(url_fp, url, host, dividend_mark=totals.dividend)


def effective_cash(page: PageCash, totals: Totals) -> float:
    if page.crawled:
        return page.cash + (totals.crawled_dividend - page.dividend_mark)
    return page.cash + (totals.dividend - page.dividend_mark)


def visit(page: PageCash, targets: list[PageCash], totals: Totals, at_ms: int) -> float:
    """Crawls ``page``: its cash goes to history and is shared by ``targets`` and the virtual page.

    ``targets`` are distinct pages other than ``page``. Returns the cash that was given away.
    """
    cash = effective_cash(page, totals)
    if not page.crawled:
        page.crawled = True
        totals.uncrawled -= 1
        totals.crawled += 1
    page.cash = 0.0
    page.dividend_mark = totals.crawled_dividend
    page.history += cash
    page.visits += 1
    page.last_visit_ms = at_ms
    totals.history_total += cash
    share = cash / (len(targets) + 1)
    for target in targets:
        target.cash += share
    totals.virtual_cash += cash - share * len(targets)
    return cash


def distribute_virtual(totals: Totals) -> bool:
    """Gives the virtual page's cash to the uncrawled pages, or to all pages when every one
    was crawled; False when there is nothing to give or nobody to give it to."""
    if totals.virtual_cash == 0.0:
        return False
    if totals.uncrawled > 0:
        totals.dividend += totals.virtual_cash / totals.uncrawled
    elif totals.crawled > 0:
        totals.crawled_dividend += totals.virtual_cash / totals.crawled
    else:
        return False
    totals.virtual_cash = 0.0
    return True


def importance(page: PageCash, totals: Totals) -> float:
    return (page.history + effective_cash(page, totals)) / (totals.history_total + totals.total_cash)

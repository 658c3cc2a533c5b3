"""Where the virtual page sends the cash it gives to pages not crawled yet: discovery weights.

The virtual page (every page links to it, it links back) hands its cash to uncrawled
pages in proportion to a weight. Equal weights are textbook AOPIC; Trawl weighs by what
the crawl already knows about a URL, without fetching it:

* its kind, read from the URL: a site's home page (path ``/``), a directory index (a
  path ending in ``/``, such as a section page), or any other page;
* the other pages of its site known so far (URLs of the host seen in this partition, less
  the page itself).

A home or index page is what a site's navigation links to from its other pages, so its weight
is the number of those pages (times a base per kind, to the power ``site_size_exponent``): the
in-links it can expect from its own site, not yet crawled. A site of one known page gives its
home page no weight: nothing links to it yet, and a weight there would only pay it for the time
it waits in the frontier (on a graph of single-page sites, such as blogs, that turned the
estimates into a measure of waiting time). Other pages get a fixed weight (1 in textbook AOPIC)
and are otherwise ranked by the cash their in-links bring; with weight 0 they get none of the
virtual page's cash for discovery. When no uncrawled page has a weight, the virtual page pays
all known pages equally, as PageRank's random jump does. ``docs/evaluation.md`` gives the figures
behind the defaults, chosen on the ordering suite's tuning families.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from libs.common.url_keys import UrlKind


@dataclass(frozen=True)
class DiscoveryWeights:
    """Home and index pages: base of the kind x (other known pages of the site) ** exponent; others: ``page``."""

    home: float = 1.0
    index: float = 1.0
    site_size_exponent: float = 1.0
    page: float = 1.0

    def __post_init__(self) -> None:
        if self.home <= 0 or self.index <= 0 or self.site_size_exponent < 0 or self.page < 0:
            raise ValueError(f"discovery weights must be positive (page: >= 0), exponent >= 0: {self}")

    @property
    def uniform(self) -> bool:
        return self.home == 1.0 and self.index == 1.0 and self.site_size_exponent == 0.0 and self.page == 1.0

    @property
    def smallest(self) -> float:
        """The smallest positive weight a page can have (a home or index page with a weight has at least its base)."""
        return min(w for w in (self.home, self.index, self.page) if w > 0)

    def weight(self, kind: int, site_size: int) -> float:
        """The weight of a page of this kind on a site of ``site_size`` known URLs (the page included)."""
        if kind == UrlKind.PAGE:
            return self.page
        base = self.home if kind == UrlKind.HOME else self.index
        return base * math.pow(max(0, site_size - 1), self.site_size_exponent)


UNIFORM = DiscoveryWeights(home=1.0, index=1.0, site_size_exponent=0.0, page=1.0)
"""Textbook AOPIC: the virtual page gives every uncrawled page the same share."""

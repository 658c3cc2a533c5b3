"""``build_web``: a :class:`~libs.simweb.config.SimWebConfig` in, a :class:`~libs.simweb.web.SimWeb` out.

One ``random.Random(config.seed)`` stream feeds every step in a fixed order
(hosts, static pages and links, hub articles), so a config always yields the
same web, in any process, on any machine.
"""

from __future__ import annotations

import logging
import random
import time

from libs.simweb.config import SimWebConfig
from libs.simweb.graph import build_static
from libs.simweb.hosts import plan_hosts
from libs.simweb.hubs import build_hubs
from libs.simweb.web import SimWeb

logger = logging.getLogger(__name__)


def build_web(config: SimWebConfig | None = None) -> SimWeb:
    """Build the simulated web described by ``config`` (the defaults when omitted)."""
    config = config or SimWebConfig()
    began = time.perf_counter()
    rng = random.Random(config.seed)
    plans = plan_hosts(config, rng)
    hosts = {plan.spec.name: plan.spec for plan in plans}
    pages, site = build_static(config, plans, rng)
    articles, hubs = build_hubs(config, hosts, site, rng)
    pages.update(articles)
    logger.debug("built simulated web: %d hosts, %d pages, %d hubs in %.2fs",
                 len(hosts), len(pages), len(hubs), time.perf_counter() - began)
    return SimWeb(config, hosts, pages, hubs)

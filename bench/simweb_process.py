"""The simulated web of the end-to-end benchmarks, served by a process of its own.

Every crawler in a comparison reaches the same web the same way: through the server as an
HTTP proxy on loopback. The server runs in its own process (``libs.simweb.process``: its CPU
is nobody's crawl cost, and it is measured apart), renders every page before it says
``ready`` (the crawlers measure crawling, not page rendering), does not compress (so neither
crawler pays for inflating), and appends each request to a JSON-lines log, from which rates,
politeness and robots compliance are judged the same way for every crawler.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from libs.simweb import SimWeb, SimWebConfig, build_web
from libs.simweb.process import SimWebProcess, render_all


def web_config(seed: int, hosts: int, pages: int) -> SimWebConfig:
    """Sites of moderately unequal sizes (Zipf 0.3, as the demo's web), no hubs, no Crawl-delay, no
    robots.txt that answers 503: Scrapy honours neither Crawl-delay nor RFC 9309's "5xx means
    disallow all", so those would make the two crawlers do different work."""
    return SimWebConfig(seed=seed, hosts=hosts, pages=pages, host_size_exponent=0.3, hub_host_ratio=0.0,
                        crawl_delay_host_ratio=0.0, robots_unavailable_ratio=0.0)


def rendered_web(config: SimWebConfig) -> SimWeb:
    """The web with every page's HTML rendered and kept."""
    return render_all(build_web(config))


@dataclass(frozen=True)
class WebSpec:
    seed: int
    hosts: int
    pages: int

    @property
    def config(self) -> SimWebConfig:
        return web_config(self.seed, self.hosts, self.pages)


def served_web(spec: WebSpec, log_file: Path) -> SimWebProcess:
    """A server process for one crawl of ``spec``'s web: pre-rendered, uncompressed."""
    return SimWebProcess(spec.config, log_file, gzip=False, render=True)

"""A simulated web laid out by hand: given hosts, each page's path and the URLs it links to.

The generated webs of :func:`libs.simweb.build_web` draw link counts and site shapes at
random; some scenarios need exact ones (a site whose every page carries six external
links, a host whose paths form known sections). Pages are served by the ordinary simulated
web server, article links in the text, so the extractor reads them as on any page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta

from libs.common.urls import registered_domain
from libs.simweb import SimWeb, SimWebConfig
from libs.simweb.model import HostSpec, Page, RobotsVariant, SimLink
from libs.simweb.robots import groups_for
from libs.simweb.words import TextSpec

# path -> absolute URLs the page links to (in its article text)
SitePages = Mapping[str, Sequence[str]]


def handmade_web(sites: Mapping[str, SitePages], crawl_delays: Mapping[str, float] | None = None,
                 latencies: Mapping[str, float] | None = None) -> SimWeb:
    """A web serving exactly ``sites`` (host -> its pages); other hosts answer 404 to everything.

    ``crawl_delays``: a host's robots.txt Crawl-delay; ``latencies``: seconds a host waits before answering.
    """
    config = SimWebConfig(seed=1, hosts=len(sites), pages=sum(len(p) for p in sites.values()), hub_host_ratio=0.0)
    delays, waits = crawl_delays or {}, latencies or {}
    hosts: dict[str, HostSpec] = {}
    pages: dict[str, Page] = {}
    for number, (host, site_pages) in enumerate(sorted(sites.items())):
        delay = delays.get(host)
        variant: RobotsVariant = "crawl_delay" if delay else "allow_all"
        hosts[host] = HostSpec(name=host, registered_domain=registered_domain(host), brand=f"Site {number}",
                               robots=variant, robots_groups=groups_for(variant, delay),
                               latency=waits.get(host, 0.0))
        for index, (path, targets) in enumerate(site_pages.items()):
            url = f"http://{host}{path}"
            links = tuple(
                SimLink(target, f"link {i} of page {index}",
                        "internal" if registered_domain(target.split("/")[2]) == registered_domain(host)
                        else "external")
                for i, target in enumerate(targets)
            )
            pages[url] = Page(url=url, host=host, path=path, title=f"Page {index} of {host}", links=links,
                              published_at=config.start_time - timedelta(days=index + 1), role="page",
                              text_spec=TextSpec(seed=number * 10_000 + index, paragraphs=8))
    return SimWeb(config, hosts, pages, {})


def tree_site(host: str, pages: int, fanout: int, external: Sequence[Sequence[str]] = ()) -> dict[str, list[str]]:
    """``pages`` pages of ``host`` in a tree (page i links to pages fanout*i+1 ..), page i also linking to
    ``external[i]`` (when given)."""
    paths = ["/"] + [f"/p{i}" for i in range(1, pages)]
    site: dict[str, list[str]] = {}
    for i, path in enumerate(paths):
        children = [f"http://{host}{paths[c]}" for c in range(fanout * i + 1, min(pages, fanout * i + fanout + 1))]
        site[path] = children + list(external[i] if i < len(external) else ())
    return site

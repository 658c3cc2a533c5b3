"""Host names of the simulated web and what each one is like.

``site-NNN.test`` hosts are registered domains; a share of the hosts are
subdomains of them (``www.site-007.test``, ``blog.site-007.test``), internal to
their parent because the registered domain of an unknown TLD is its last two
labels. Each host gets a page budget from a Zipf law (a few big sites, a long
tail of small ones), one robots.txt variant, an optional latency and its hubs.
Variants are handed out by slicing a shuffled host list, so every variant whose
share is positive is present even in a small web.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from libs.simweb import robots, words
from libs.simweb.config import SimWebConfig
from libs.simweb.model import HostSpec, RobotsVariant

SUBDOMAIN_PREFIXES = ("www", "blog", "news", "shop", "docs", "forum")


@dataclass(frozen=True)
class HostPlan:
    """A host and the number of ordinary pages (home included) it will hold."""

    spec: HostSpec
    page_count: int


def registered_domain(host: str) -> str:
    """Last two labels of ``host``: how the crawler treats TLDs it does not know, such as ``.test``."""
    return ".".join(host.rstrip(".").split(".")[-2:])


def _share(ratio: float, total: int) -> int:
    return 0 if ratio <= 0 else max(1, round(ratio * total))


def _names(config: SimWebConfig, rng: random.Random) -> list[str]:
    subdomains = round(config.hosts * config.subdomain_ratio)
    subdomains = min(subdomains, config.hosts * len(SUBDOMAIN_PREFIXES) // (len(SUBDOMAIN_PREFIXES) + 1))
    base = config.hosts - subdomains
    width = max(3, len(str(base - 1)))
    domains = [f"site-{i:0{width}d}.test" for i in range(base)]
    weights = [1.0 / (i + 1) ** 0.5 for i in range(base)]
    used: dict[str, list[str]] = {domain: [] for domain in domains}
    names = list(domains)
    while len(names) < config.hosts:
        domain = rng.choices(domains, weights=weights)[0]
        free = [prefix for prefix in SUBDOMAIN_PREFIXES if prefix not in used[domain]]
        if not free:
            continue
        prefix = rng.choice(free)
        used[domain].append(prefix)
        names.append(f"{prefix}.{domain}")
    return sorted(names, key=lambda name: (registered_domain(name), name != registered_domain(name), name))


def _page_counts(config: SimWebConfig, names: list[str], rng: random.Random) -> dict[str, int]:
    """One page (the home page) each, the rest shared by a Zipf law over a random popularity order."""
    order = list(names)
    rng.shuffle(order)
    weights = [1.0 / (rank + 1) ** config.host_size_exponent for rank in range(len(order))]
    spare = config.pages - len(order)
    total = sum(weights)
    exact = [spare * w / total for w in weights]
    counts = [int(x) for x in exact]
    by_fraction = sorted(range(len(order)), key=lambda i: (counts[i] - exact[i], i))
    for i in by_fraction[: spare - sum(counts)]:
        counts[i] += 1
    return {name: 1 + counts[i] for i, name in enumerate(order)}


def _variants(config: SimWebConfig, names: list[str], counts: dict[str, int],
              rng: random.Random) -> dict[str, RobotsVariant]:
    order = list(names)
    rng.shuffle(order)
    variants: dict[str, RobotsVariant] = {}
    plan: list[tuple[RobotsVariant, float]] = [
        ("unavailable", config.robots_unavailable_ratio),
        ("missing", config.robots_missing_ratio),
        ("disallow_private", config.private_host_ratio),
        ("crawl_delay", config.crawl_delay_host_ratio),
    ]
    for variant, ratio in plan:
        free = [name for name in order if name not in variants]
        if variant == "disallow_private":  # hosts big enough to hold a private page come first
            free.sort(key=lambda name: counts[name] < 3)
        for name in free[: _share(ratio, len(names))]:
            variants[name] = variant
    return {name: variants.get(name, "allow_all") for name in names}


def hub_path(index: int) -> str:
    return "/news/" if index == 0 else f"/news-{index + 1}/"


def plan_hosts(config: SimWebConfig, rng: random.Random) -> list[HostPlan]:
    """Every host of the web, in name order, with its spec and page budget."""
    names = _names(config, rng)
    counts = _page_counts(config, names, rng)
    variants = _variants(config, names, counts, rng)
    hub_candidates = [name for name in names if variants[name] != "unavailable"]
    rng.shuffle(hub_candidates)
    hub_count = _share(config.hub_host_ratio, len(names)) if config.hubs_per_host else 0
    hub_hosts = set(hub_candidates[:hub_count])
    brands = {name: words.brand(rng.getrandbits(32)) for name in names if name == registered_domain(name)}
    plans = []
    low, high = config.latency_range
    for name in names:
        domain = registered_domain(name)
        prefix = name[: -len(domain) - 1]
        brand = brands[domain] if prefix in ("", "www") else f"{brands[domain]} {prefix.capitalize()}"
        delay = rng.choice(config.crawl_delay_values) if variants[name] == "crawl_delay" else None
        hub_total = config.hubs_per_host if name in hub_hosts else 0
        hubs = tuple(f"http://{name}{hub_path(i)}" for i in range(hub_total))
        spec = HostSpec(
            name=name,
            registered_domain=domain,
            brand=brand,
            robots=variants[name],
            robots_groups=robots.groups_for(variants[name], delay),
            latency=rng.uniform(low, high) if high > 0 else 0.0,
            hubs=hubs,
        )
        plans.append(HostPlan(spec=spec, page_count=counts[name]))
    return plans

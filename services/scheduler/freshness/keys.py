"""Model keys (seed 001): host + first path segment, folded into the host when too small.

A URL's key is its section key (:func:`libs.common.url_keys.section_key`): ``host/segment``
when its path has a first directory (``/news/story-1.html`` -> ``site.test/news``), else the
host (``/about.html`` -> ``site.test``). The separator is ``/`` rather than the paper's ``-``
because host names contain hyphens and never slashes.

Routing (:func:`route_keys`): a key with at least ``min_samples`` items in the window gets
its own model; the items of smaller keys are folded into their host's key, which gets a
model if the folded total reaches ``min_samples``; a host still too small gets none. A
folded key uses its host's model scaled by its share of the host's items, so a small
section's hub is not fetched as if it published everything its host does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass


def key_host(key: str) -> str:
    return key.split("/", 1)[0]


def is_host_key(key: str) -> bool:
    return "/" not in key


@dataclass(frozen=True)
class Route:
    """Which model a key uses, and which part of that model's rate is the key's."""

    model_key: str
    share: float = 1.0


def route_keys(counts: Mapping[str, int], min_samples: int) -> dict[str, Route]:
    """The model every key with a model uses; keys absent from the result get none."""
    routes: dict[str, Route] = {}
    folded: Counter[str] = Counter()
    for key, count in counts.items():
        if count >= min_samples and not is_host_key(key):
            routes[key] = Route(key)
        else:
            folded[key_host(key)] += count
    for key, count in counts.items():
        if key in routes:
            continue
        host = key_host(key)
        total = folded[host]
        if total < min_samples or total <= 0:
            continue
        routes[key] = Route(host, 1.0 if is_host_key(key) else count / total)
    return routes


def model_counts(counts: Mapping[str, int], routes: Mapping[str, Route]) -> dict[str, int]:
    """Items per model key: a section model's own items, a host model's folded items."""
    out: Counter[str] = Counter()
    for key, count in counts.items():
        route = routes.get(key)
        if route is not None:
            out[route.model_key] += count
    return dict(out)

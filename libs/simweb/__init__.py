"""A simulated web on loopback, standing in for the internet in tests, benchmarks and the demo.

``build_web(SimWebConfig(seed=...))`` builds a deterministic web (hosts with
robots.txt variants, a scale-free link graph, duplicates, hubs whose articles
appear over time) with its ground truth; ``SimWebServer`` serves it, as an HTTP
proxy or by ``Host`` header, and records every request for ``log_checks``.
Run ``python -m libs.simweb --help`` to serve one from the command line.
"""

from __future__ import annotations

from libs.simweb.build import build_web
from libs.simweb.clock import SimClock
from libs.simweb.config import SimWebConfig
from libs.simweb.hosts import registered_domain
from libs.simweb.model import HostSpec, LinkKind, Page, RobotsGroup, RobotsVariant, SimLink
from libs.simweb.request_log import RequestRecord, read_log_file
from libs.simweb.server import SimWebServer
from libs.simweb.web import SimWeb

__all__ = [
    "HostSpec",
    "LinkKind",
    "Page",
    "RequestRecord",
    "RobotsGroup",
    "RobotsVariant",
    "SimClock",
    "SimLink",
    "SimWeb",
    "SimWebConfig",
    "SimWebServer",
    "build_web",
    "read_log_file",
    "registered_domain",
]

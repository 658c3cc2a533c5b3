"""The simulated web of the end-to-end benchmarks, served by a process of its own.

Every crawler in a comparison reaches the same web the same way: through the server as an
HTTP proxy on loopback. The server runs in its own process (its CPU is nobody's crawl
cost, and it is measured apart), renders every page before it says ``ready`` (the crawlers
measure crawling, not page rendering), does not compress (so neither crawler pays for
inflating), and appends each request to a JSON-lines log, from which rates, politeness and
robots compliance are judged the same way for every crawler.

    python -m bench.simweb_process --seed 7 --hosts 400 --pages 4000 --log-file F   (prints the address)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from libs.simweb import SimClock, SimWeb, SimWebConfig, SimWebServer, build_web
from libs.simweb import web as simweb_pages
from libs.simweb.request_log import RequestRecord, read_log_file

REPO = Path(__file__).resolve().parents[1]


def web_config(seed: int, hosts: int, pages: int) -> SimWebConfig:
    """Sites of moderately unequal sizes (Zipf 0.3, as the demo's web), no hubs, no Crawl-delay, no
    robots.txt that answers 503: Scrapy honours neither Crawl-delay nor RFC 9309's "5xx means
    disallow all", so those would make the two crawlers do different work."""
    return SimWebConfig(seed=seed, hosts=hosts, pages=pages, host_size_exponent=0.3, hub_host_ratio=0.0,
                        crawl_delay_host_ratio=0.0, robots_unavailable_ratio=0.0)


def rendered_web(config: SimWebConfig) -> SimWeb:
    """The web with every page's HTML rendered and kept."""
    web = build_web(config)
    simweb_pages.HTML_CACHE_SIZE = len(web.pages) + 1
    for url in web.pages:
        web.html(url)
    return web


@dataclass(frozen=True)
class WebSpec:
    seed: int
    hosts: int
    pages: int

    @property
    def config(self) -> SimWebConfig:
        return web_config(self.seed, self.hosts, self.pages)


class ServedWeb:
    """A server process for one crawl: ``start()`` returns the proxy address; ``log()`` reads its requests."""

    def __init__(self, spec: WebSpec, log_file: Path) -> None:
        self.spec = spec
        self.log_file = log_file
        self.proc: subprocess.Popen[str] | None = None
        self.proxy = ""

    def start(self) -> str:
        self.log_file.unlink(missing_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.simweb_process", "--seed", str(self.spec.seed), "--hosts",
             str(self.spec.hosts), "--pages", str(self.spec.pages), "--log-file", str(self.log_file)],
            cwd=REPO, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.startswith("http://"):
            self.stop()
            raise RuntimeError(f"the simulated web did not start: {line!r}")
        self.proxy = line
        return line

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def log(self) -> list[RequestRecord]:
        return read_log_file(self.log_file)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--hosts", type=int, required=True)
    parser.add_argument("--pages", type=int, required=True)
    parser.add_argument("--log-file", type=Path, required=True)
    args = parser.parse_args()

    async def serve() -> None:
        web = rendered_web(web_config(args.seed, args.hosts, args.pages))
        server = SimWebServer(web, SimClock.frozen(web.start_time), gzip=False, log_file=args.log_file)
        await server.start()
        print(server.url, flush=True)
        await asyncio.Event().wait()

    asyncio.run(serve())


if __name__ == "__main__":
    main()

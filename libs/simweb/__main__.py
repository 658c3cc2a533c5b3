"""Serve a simulated web until SIGINT or SIGTERM.

    python -m libs.simweb --port 8080 --seed 7 --hosts 60 --pages 5000 [--speed 0] [--rhythmic] [--log-file F]

Prints the address once listening. Point a crawler at it as an HTTP proxy, or
map every ``*.test`` host to 127.0.0.1 and this port; ``--seeds-file`` writes the
home page URLs (one per line) to start a crawl from.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

from libs.simweb.build import build_web
from libs.simweb.clock import SimClock
from libs.simweb.config import SimWebConfig
from libs.simweb.process import stop_on_signals
from libs.simweb.rhythm import rhythmic_config
from libs.simweb.server import SimWebServer

logger = logging.getLogger(__name__)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m libs.simweb", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on; 0.0.0.0 inside a container, so that other containers reach it")
    parser.add_argument("--port", type=int, default=8080, help="port to listen on; 0 picks a free one")
    parser.add_argument("--seed", type=int, default=SimWebConfig.seed)
    parser.add_argument("--hosts", type=int, default=SimWebConfig.hosts)
    parser.add_argument("--pages", type=int, default=SimWebConfig.pages)
    parser.add_argument("--speed", type=float, default=0.0,
                        help="simulated seconds per real second: 0 freezes time (a static web), 3600 = 1 h/s")
    parser.add_argument("--start", type=datetime.fromisoformat, default=None,
                        help="simulated start instant, ISO 8601 with offset (default: the web's start_time)")
    parser.add_argument("--no-hubs", action="store_true", help="build the web without hub pages")
    parser.add_argument("--rhythmic", action="store_true",
                        help="hubs publish by day with quiet nights and weekends, per-hub shifts and bursts")
    parser.add_argument("--hub-rate", type=float, default=SimWebConfig.hub_rate_per_hour,
                        help="articles per hour of a hub at its busiest weights")
    parser.add_argument("--backlog-days", type=float, default=SimWebConfig.hub_backlog.days,
                        help="days of hub articles already published when the clock starts")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds of delay per request")
    parser.add_argument("--log-file", type=Path, default=None, help="append one JSON line per request here")
    parser.add_argument("--seeds-file", type=Path, default=None, help="write the home page URLs here")
    parser.add_argument("--no-gzip", action="store_true", help="never compress responses")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    if args.start is not None and args.start.tzinfo is None:
        parser.error("--start needs a UTC offset, e.g. 2026-03-02T00:00:00+00:00")
    return args


async def serve(args: argparse.Namespace) -> None:
    values = {
        "seed": args.seed,
        "hosts": args.hosts,
        "pages": args.pages,
        "hub_host_ratio": 0.0 if args.no_hubs else SimWebConfig.hub_host_ratio,
        "latency_range": (args.latency, args.latency),
        "hub_rate_per_hour": args.hub_rate,
        "hub_backlog": timedelta(days=args.backlog_days),
    }
    config = rhythmic_config(**values) if args.rhythmic else SimWebConfig(**values)
    web = build_web(config)
    gc.freeze()  # the web's objects live as long as the server: no full collection walks them (pauses of ~45 ms)
    # On wall-clock time, so that a scheduler given the same start, speed and origin runs in step.
    clock = SimClock(args.start or web.start_time, speed=args.speed, monotonic=time.time)
    if args.seeds_file is not None:
        args.seeds_file.write_text("".join(f"{url}\n" for url in web.home_pages()), encoding="utf-8")
    server = SimWebServer(web, clock, host=args.host, port=args.port, log_file=args.log_file,
                          gzip=not args.no_gzip)
    stop = stop_on_signals()
    await server.start()
    try:
        print(f"simulated web: {len(web.hosts)} hosts, {len(web.pages)} pages, clock x{args.speed:g} from "
              f"{clock.now().isoformat()}; serving at {server.url} (HTTP proxy or Host header)", flush=True)
        if args.speed > 0:
            print(f"a scheduler in step: TRAWL_SCHEDULER_CLOCK_START={clock.start.isoformat()}"
                  f" TRAWL_SCHEDULER_CLOCK_SPEED={args.speed:g} TRAWL_SCHEDULER_CLOCK_ORIGIN={clock.origin!r}",
                  flush=True)
        await stop.wait()
    finally:
        await server.stop()
        print("simulated web stopped", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        asyncio.run(serve(args))
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

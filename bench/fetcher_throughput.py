"""Fetcher throughput, politeness on, against a bare aiohttp loop fetching the same URLs (the upper bound).

A simulated web of many hosts is served by its own process (every page rendered once
before the runs: the contenders measure fetching, not page rendering), through the
simulated web's proxy, as the tests and the demo reach it. Both contenders fetch the same
allowed page URLs with the same number of requests in flight. The bare loop takes them in
order (round-robin over hosts); Trawl takes, as the scheduler's dispatcher hands them out,
the next URL of the host whose next allowed time comes first (the same round-robin while
no gap binds), so that a request slot does not sit on one host's gap while others are
free (``--in-order``: strictly in order, a slot waiting out its host's gap):

* Trawl: :class:`~services.fetcher.fetch_core.FetchCore` as the service wires it:
  robots.txt checked for every URL, per-host politeness (minimum delay, k = 10 times the
  response time, one request in flight per host), the body read and decoded within the
  cap and the minimum rate, the SSRF guard with the simulated web allow-listed. With
  ``--path service`` (the default) each fetch then goes through the service's
  :class:`~services.fetcher.worker.FetchWorker` publishing step: the fetch result (body
  in the ``--codec`` of ``TRAWL_FETCHER_BODY_CODEC``, within the largest message), the
  fetch outcome and any redirect discoveries produced to a local Tansu broker with the
  service's producer settings (lz4 batches, the fetcher's linger), flushed at the end of
  the timed pass (decoding the fetch requests from the broker is not included: they are
  built before the pass); with
  ``--path encode`` only the body encoding, without a broker; with ``--path fetch`` the
  fetching alone. ``--warc`` adds the WARC archive;
* baseline: one ``aiohttp.ClientSession``, ``GET`` and ``read()`` per URL, nothing else.

Each Trawl repetition starts a fresh fetcher and first fetches every host's robots.txt
and lets its gap pass (untimed: a crawl's steady state, robots.txt cached and hosts
free); the figure is 2xx pages per second of the page pass, median of interleaved
repetitions. Both contenders run on the event loop the fetcher service runs on
(``--loop``, by default ``TRAWL_FETCHER_EVENT_LOOP``). Printed beside it: the rate
counting that robots.txt pass too, the time requests spent waiting for their host's gap
(0 means politeness did not bind), the client CPU per page of both (the process's,
librdkafka's and the WARC writer's threads included, and the event loop's thread alone;
the machine may be shared: CPU per page is steadier than wall time), the broker's CPU
per page, the simulated web's CPU per page for each contender (at one core's worth it
bounds the rate) and the machine's load.

Trawl runs with the collector policy every service applies once started
(``libs/common/collector.py``: what is alive frozen out of the passes, young passes
every ``TRAWL_GC_YOUNG_THRESHOLD`` objects), put back to Python's defaults after each of
its repetitions; the bare loop runs with Python's defaults (``--gc``: ``default`` for
both on Python's defaults, ``both`` for both on the service's policy).

    .venv/bin/python -m bench.fetcher_throughput [--hosts 3000 --pages-per-host 4 --concurrency 64]
        [--path service|encode|fetch] [--codec identity|zlib] [--linger-ms 100] [--warc]
        [--loop uvloop|asyncio] [--gc service|default|both]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import heapq
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter, deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp

from bench.harness import Comparison, base_parser, interleaved, report
from libs.common.collector import tune_collector
from libs.common.kafka.producer import TopicProducer
from libs.common.kafka.settings import KafkaSettings
from libs.common.service import RuntimeSettings
from libs.common.settings import load_settings
from libs.common.topics import DISCOVERED_URLS, FETCH_OUTCOMES, FETCH_RESULTS
from libs.common.wire import messages as pb
from libs.localinfra import LocalBroker, create_topics
from libs.localinfra.ports import free_port
from libs.simweb import SimClock, SimWebConfig, SimWebServer, build_web
from libs.simweb import web as simweb_pages
from services.fetcher.clock import SystemClock
from services.fetcher.event_loop import EVENT_LOOPS, install_event_loop
from services.fetcher.fetch_core import FetchCore, polite_robots_fetch
from services.fetcher.http.address_guard import AddressPolicy
from services.fetcher.http.http_client import HttpFetcher
from services.fetcher.politeness.politeness import HostPoliteness
from services.fetcher.publish.discoveries import DiscoveryPublisher
from services.fetcher.publish.result_body import BODY_CODECS, encode_body
from services.fetcher.robots.robots import RobotsCache
from services.fetcher.settings import FetcherSettings
from services.fetcher.warc.warc_archive import WarcArchive
from services.fetcher.warc.warc_process import WarcProcessArchive
from services.fetcher.worker import FetchWorker

MIN_DELAY = 0.25
RESPONSE_TIME_FACTOR = 10.0
USER_AGENT = "TrawlBot/0.1 (+https://trawl.invalid/bot)"


def web_config(seed: int, hosts: int, pages_per_host: int) -> SimWebConfig:
    """Hosts of equal size, no Crawl-delay (so that the politeness ceiling stays far above both)."""
    return SimWebConfig(seed=seed, hosts=hosts, pages=hosts * pages_per_host, host_size_exponent=0.0,
                        hub_host_ratio=0.0, crawl_delay_host_ratio=0.0, robots_unavailable_ratio=0.0)


def page_urls(config: SimWebConfig) -> list[str]:
    """Every allowed page, round-robin over hosts."""
    web = build_web(config)
    by_host: dict[str, list[str]] = {}
    for url, page in sorted(web.pages.items()):
        if web.allowed(url):
            by_host.setdefault(page.host, []).append(url)
    queues = list(by_host.values())
    return [q[i] for i in range(max(len(q) for q in queues)) for q in queues if i < len(q)]


async def run_all(urls: list[str], concurrency: int, fetch_one: Callable[[str], Awaitable[bool]]) -> float:
    """Fetch every URL with ``concurrency`` workers; pages per second of the 2xx pages."""
    queue = iter(urls)
    ok = 0

    async def worker() -> None:
        nonlocal ok
        for url in queue:
            fetched = await fetch_one(url)  # awaited first: "ok += await ..." would read ok before the await
            ok += fetched

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return ok / (time.perf_counter() - started)


def host_queues(urls: list[str]) -> dict[str, deque[str]]:
    """``urls`` by host, each host's in the order of ``urls`` (the hosts in order of their first URL)."""
    queues: dict[str, deque[str]] = {}
    for url in urls:
        queues.setdefault(urlsplit(url).hostname or "", deque()).append(url)
    return queues


async def run_dispatched(queues: dict[str, deque[str]], concurrency: int, fetch_one: Callable[[str], Awaitable[bool]],
                         ready_at: Callable[[str], float], now: Callable[[], float]) -> float:
    """Fetch every URL of ``queues`` (:func:`host_queues`, which it empties) with ``concurrency``
    workers, each taking the next URL of the host whose turn comes first (its next allowed time,
    then the order of the hosts), as the scheduler's dispatcher hands out a host's URL only once
    its gap has passed: a worker does not sit on a host's gap while other hosts are free. Pages
    per second of the 2xx pages."""
    turns = [(ready_at(host), n, host) for n, host in enumerate(queues)]
    heapq.heapify(turns)
    ok = 0
    in_flight = 0

    async def worker() -> None:
        nonlocal ok, in_flight
        while turns or in_flight:
            if not turns or turns[0][0] > now():
                await asyncio.sleep(max(0.001, turns[0][0] - now()) if turns else 0.005)
                continue
            _, order, host = heapq.heappop(turns)
            in_flight += 1
            try:
                fetched = await fetch_one(queues[host].popleft())
            finally:
                in_flight -= 1
            ok += fetched
            if queues[host]:
                heapq.heappush(turns, (ready_at(host), order, host))

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return ok / (time.perf_counter() - started)


async def bare_loop(urls: list[str], concurrency: int, proxy: str) -> float:
    connector = aiohttp.TCPConnector(limit=concurrency * 2)
    async with aiohttp.ClientSession(connector=connector, headers={"User-Agent": USER_AGENT}) as session:

        async def fetch_one(url: str) -> bool:
            async with session.get(url, proxy=proxy) as response:
                await response.read()
                return 200 <= response.status < 300

        return await run_all(urls, concurrency, fetch_one)


@dataclass
class TrawlRun:
    """One Trawl repetition: the page pass, and what else it cost."""

    rate: float
    rate_with_robots: float
    politeness_wait: float
    cpu_ms_per_page: float
    main_cpu_ms_per_page: float
    broker_cpu_ms_per_page: float
    server_cpu_ms_per_page: float
    failures: Counter[str]
    flush_seconds: float


@dataclass(frozen=True)
class Publishing:
    """Where Trawl's fetches go after the fetch: ``path`` (service, encode or fetch) and the body codec."""

    path: str
    codec: str
    linger_ms: int
    broker: LocalBroker | None = None


@asynccontextmanager
async def worker_for(core: FetchCore, clock: SystemClock, publishing: Publishing) -> AsyncIterator[
        tuple[FetchWorker | None, TopicProducer | None]]:
    """The service's worker and producer on fresh topics of the broker (service path), else nothing."""
    if publishing.path != "service" or publishing.broker is None:
        yield None, None
        return
    kafka = KafkaSettings(bootstrap=publishing.broker.bootstrap, topic_prefix=f"bench_{uuid.uuid4().hex[:8]}.",
                          lag_metrics_interval_ms=0, linger_ms=publishing.linger_ms)
    create_topics(kafka.bootstrap, [(kafka.topic(t.name), t.partitions)
                                    for t in (FETCH_RESULTS, FETCH_OUTCOMES, DISCOVERED_URLS)])
    producer = TopicProducer(kafka, "bench-fetcher")
    await producer.start()
    try:
        settings = load_settings(FetcherSettings, os.environ)
        yield FetchWorker(core, producer, clock, discoveries=DiscoveryPublisher(producer),
                          body_codec=publishing.codec, max_message_bytes=kafka.max_message_bytes,
                          publish_batch=settings.publish_batch, publish_delay=settings.publish_delay,
                          publish_bytes=settings.publish_run_bytes), producer
    finally:
        await producer.stop()


def broker_cpu(broker: LocalBroker | None) -> float:
    """CPU seconds the broker process has used so far (0 without one)."""
    return process_cpu(broker.pid() if broker is not None else None)


def process_cpu(pid: int | None) -> float:
    """CPU seconds process ``pid`` has used so far (0 without one)."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime and stime


async def trawl_fetcher(urls: list[str], concurrency: int, proxy: str, *, publishing: Publishing,
                        warc_dir: Path | None, dispatched: bool = True, server_pid: int | None = None) -> TrawlRun:
    clock = SystemClock()
    archive: WarcArchive | WarcProcessArchive | None = None
    if warc_dir is not None:  # as the service writes it
        in_process = not load_settings(FetcherSettings, os.environ).warc_process
        archive = (WarcArchive if in_process else WarcProcessArchive)(warc_dir)
    if archive is not None:
        await archive.start()
    http = HttpFetcher(
        user_agent=USER_AGENT, connect_timeout=5.0, total_timeout=30.0, max_body_bytes=2 * 1024 * 1024,
        max_redirects=5, proxy=proxy, connection_limit=concurrency * 2, min_bytes_per_second=256.0,
        address_policy=AddressPolicy.parse(["*.test"]), observer=archive.submit if archive else None, clock=clock,
    )
    await http.start()
    politeness = HostPoliteness(clock, min_delay=MIN_DELAY, max_crawl_delay=30.0,
                                response_time_factor=RESPONSE_TIME_FACTOR, max_backoff=600.0, park_after_failures=10)
    robots = RobotsCache(polite_robots_fetch(http, politeness), user_agent_token="trawl", clock=clock)
    core = FetchCore(http, robots, politeness, clock)
    # The requests as the service's consumer hands them over (decoding them is not counted).
    requests = {url: pb.FetchRequest(url=url, host=urlsplit(url).hostname or "", request_id=f"r{n}", attempt=1)
                for n, url in enumerate(urls)}
    failures: Counter[str] = Counter()

    async def fetch_robots(origin: str) -> bool:
        return (await robots.policy(origin)).kind != "disallow_all"

    try:
        async with worker_for(core, clock, publishing) as (worker, producer):

            async def fetch_one(url: str) -> bool:
                attempt = await core.fetch(url)
                if worker is not None:  # what FetchWorker.handle does after the fetch
                    worker.finished(requests[url], attempt)
                elif publishing.path == "encode" and attempt.response is not None:
                    encode_body(attempt.response.body, publishing.codec)
                if attempt.outcome != "ok":
                    failures[attempt.outcome + (f" {attempt.detail[:40]}" if attempt.detail else "")] += 1
                return attempt.outcome == "ok"

            hosts = sorted({urlsplit(u).hostname or "" for u in urls})
            started = time.perf_counter()
            await run_all([f"http://{h}" for h in hosts], concurrency, fetch_robots)
            await asyncio.sleep(max(0.0, max(politeness.next_allowed_at(h) for h in hosts) - clock.now()))
            warm_up = time.perf_counter() - started
            queues = host_queues(urls)  # as the scheduler holds them: not counted in the page pass's CPU
            waited, server = politeness.stats.wait_seconds, process_cpu(server_pid)
            broker = broker_cpu(publishing.broker)
            cpu, main_cpu = time.process_time(), time.thread_time()
            wall = time.perf_counter()
            if dispatched:
                rate = await run_dispatched(queues, concurrency, fetch_one, politeness.next_allowed_at, clock.now)
            else:
                rate = await run_all(urls, concurrency, fetch_one)
            ok = rate * (time.perf_counter() - wall)
            fetched = time.perf_counter()
            if producer is not None:
                await producer.flush()  # the service flushes before it commits its input offsets
            elapsed = time.perf_counter() - wall
            cpu, main_cpu = time.process_time() - cpu, time.thread_time() - main_cpu
            broker = broker_cpu(publishing.broker) - broker
            server = process_cpu(server_pid) - server
            rate = ok / elapsed
            return TrawlRun(rate, len(urls) / (warm_up + len(urls) / rate), politeness.stats.wait_seconds - waited,
                            cpu / len(urls) * 1000, main_cpu / len(urls) * 1000, broker / len(urls) * 1000,
                            server / len(urls) * 1000, failures,
                            time.perf_counter() - fetched)
    finally:
        await http.stop()
        if archive is not None:
            await archive.stop()


def serve(args: argparse.Namespace) -> None:
    """The server process: the simulated web on loopback until killed."""

    async def serve_forever() -> None:
        web = build_web(web_config(args.seed, args.hosts, args.pages_per_host))
        # Every page rendered once before the runs: the contenders measure fetching, not page rendering.
        simweb_pages.HTML_CACHE_SIZE = len(web.pages) + 1
        for url in web.pages:
            web.html(url)
        server = SimWebServer(web, SimClock.frozen(web.start_time), port=args.port, gzip=False)
        await server.start()
        # The web and its pages stay as they are: out of the collector's passes, whose walks of them
        # otherwise stalled the server for 0.2-0.6 s at random moments of either contender's run.
        gc.collect()
        gc.freeze()
        print("ready", flush=True)
        await asyncio.Event().wait()

    asyncio.run(serve_forever())


def parse_args() -> argparse.Namespace:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=3000)
    parser.add_argument("--pages-per-host", type=int, default=4)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--concurrency", type=int, default=64, help="Requests in flight, for both contenders.")
    parser.add_argument("--path", choices=("service", "encode", "fetch"), default="service",
                        help="After the fetch: publish as the service does (to a local broker), encode only, nothing.")
    parser.add_argument("--codec", choices=BODY_CODECS, default=load_settings(FetcherSettings, os.environ).body_codec,
                        help="Body codec of the fetch results (TRAWL_FETCHER_BODY_CODEC).")
    parser.add_argument("--linger-ms", type=int, default=load_settings(FetcherSettings, os.environ).producer_linger_ms,
                        help="The producer's linger (TRAWL_FETCHER_PRODUCER_LINGER_MS).")
    parser.add_argument("--warc", action="store_true", help="Also write every response to WARC files.")
    parser.add_argument("--loop", choices=EVENT_LOOPS, default=load_settings(FetcherSettings, os.environ).event_loop,
                        help="The event loop both contenders run on (TRAWL_FETCHER_EVENT_LOOP).")
    parser.add_argument("--in-order", action="store_true",
                        help="Trawl takes the URLs strictly in order, a worker waiting out its host's gap, instead of "
                             "the next host whose gap has passed (as the scheduler dispatches).")
    parser.add_argument("--gc", choices=("service", "default", "both"), default="service",
                        help="Collector policy: the service's for Trawl and Python's defaults for the bare loop "
                             "(service), Python's defaults for both (default), the service's for both (both).")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    return parser.parse_args()


@contextmanager
def collector_policy(tuned: bool) -> Iterator[None]:
    """The services' collector policy inside the block when ``tuned``, Python's defaults put back after it."""
    if not tuned:
        yield
        return
    threshold = gc.get_threshold()
    tune_collector(load_settings(RuntimeSettings, os.environ).gc_young_threshold)
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


async def compare(args: argparse.Namespace, proxy: str, urls: list[str], warc_root: Path | None,
                  broker: LocalBroker | None, server_pid: int | None = None) -> Comparison:
    runs: list[TrawlRun] = []
    bare_cpu: list[float] = []
    bare_main_cpu: list[float] = []
    bare_server_cpu: list[float] = []
    loads: list[float] = []
    publishing = Publishing(args.path, args.codec, args.linger_ms, broker)

    async def contender() -> float:
        folder = warc_root / f"run-{len(runs)}" if warc_root is not None else None
        loads.append(os.getloadavg()[0])
        with collector_policy(args.gc != "default"):
            runs.append(await trawl_fetcher(urls, args.concurrency, proxy, publishing=publishing, warc_dir=folder,
                                            dispatched=not args.in_order, server_pid=server_pid))
        return runs[-1].rate

    async def baseline() -> float:
        cpu, main_cpu, server = time.process_time(), time.thread_time(), process_cpu(server_pid)
        with collector_policy(args.gc == "both"):
            rate = await bare_loop(urls, args.concurrency, proxy)
        bare_server_cpu.append((process_cpu(server_pid) - server) / len(urls) * 1000)
        bare_cpu.append((time.process_time() - cpu) / len(urls) * 1000)
        bare_main_cpu.append((time.thread_time() - main_cpu) / len(urls) * 1000)
        return rate

    await bare_loop(urls[: args.concurrency * 4], args.concurrency, proxy)  # untimed warm-up
    extras = {"service": f" + publish ({args.codec} bodies, lz4 batches, linger {args.linger_ms} ms) to a broker",
              "encode": f" + {args.codec} result encoding", "fetch": ""}[args.path] + (" + WARC" if warc_root else "")
    trawl, bare = await interleaved(contender, baseline, args.repeat,
                                    (f"Trawl FetchCore, politeness on{extras}", "bare aiohttp loop"))
    hosts = len({urlsplit(u).hostname for u in urls})
    return Comparison(
        benchmark="fetcher throughput", unit="pages/s", contender=trawl, baseline=bare,
        workload={"hosts": hosts, "pages": len(urls), "concurrency": args.concurrency, "min_delay": MIN_DELAY,
                  "response_time_factor": RESPONSE_TIME_FACTOR, "server": "simulated web, own process, no gzip",
                  "path": args.path, "codec": args.codec, "linger_ms": args.linger_ms, "warc": warc_root is not None,
                  "loop": args.loop, "gc": args.gc},
        notes=[
            f"Trawl counting its robots.txt pass ({hosts} requests and each host's first gap): "
            f"{statistics.median(r.rate_with_robots for r in runs):,.1f} pages/s",
            "time Trawl's requests waited for their host's gap in the page pass: "
            f"{statistics.median(r.politeness_wait for r in runs):,.1f} s (median over repetitions)",
            f"client CPU per page: Trawl {statistics.median(r.cpu_ms_per_page for r in runs):.3f} ms, "
            f"bare loop {statistics.median(bare_cpu):.3f} ms (event loop thread alone: Trawl "
            f"{statistics.median(r.main_cpu_ms_per_page for r in runs):.3f} ms, bare loop "
            f"{statistics.median(bare_main_cpu):.3f} ms); broker CPU per Trawl page "
            f"{statistics.median(r.broker_cpu_ms_per_page for r in runs):.3f} ms",
            "the simulated web's CPU per page (its own process, one core at most): Trawl's pages "
            f"{statistics.median(r.server_cpu_ms_per_page for r in runs):.3f} ms, the bare loop's "
            f"{statistics.median(bare_server_cpu):.3f} ms",
            f"1-minute load at the start of Trawl's repetitions: {min(loads):.1f} to {max(loads):.1f} "
            f"on {os.cpu_count()} CPUs",
            "time the final flush waited for the broker's acknowledgements: "
            + ", ".join(f"{r.flush_seconds:.1f} s" for r in runs),
            "Trawl's page fetches that did not end ok, per repetition: "
            + "; ".join(", ".join(f"{k}: {v}" for k, v in r.failures.most_common(4)) or "none" for r in runs),
        ],
    )


def main() -> None:
    args = parse_args()
    if args.serve:
        serve(args)
        return
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "bench.fetcher_throughput", "--serve", "--port", str(port), "--seed", str(args.seed),
         "--hosts", str(args.hosts), "--pages-per-host", str(args.pages_per_host)],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    warc_root = Path(tempfile.mkdtemp(prefix="trawl-bench-warc-", dir="/var/tmp")) if args.warc else None
    broker_root = Path(tempfile.mkdtemp(prefix="trawl-bench-broker-", dir="/var/tmp"))
    broker = LocalBroker(broker_root / "broker", free_port()) if args.path == "service" else None
    try:
        if broker is not None:
            broker.ensure_started()
        assert server.stdout is not None and server.stdout.readline().strip() == "ready", "server did not start"
        urls = page_urls(web_config(args.seed, args.hosts, args.pages_per_host))
        install_event_loop(args.loop)  # as the service does
        result = asyncio.run(compare(args, f"http://127.0.0.1:{port}", urls, warc_root, broker, server.pid))
        report(result, args.json)
    finally:
        server.terminate()
        server.wait(10)
        if broker is not None:
            broker.stop()
        shutil.rmtree(broker_root, ignore_errors=True)
        if warc_root is not None:
            shutil.rmtree(warc_root, ignore_errors=True)


if __name__ == "__main__":
    main()

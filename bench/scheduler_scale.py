"""Scheduler at scale: fetch requests emitted per second and the scheduler's memory, 100k to 10M queued URLs.

The frontier holds ``--sizes`` queued URLs (100,000, 1 million and 10 million) over
``--hosts`` hosts (100,000), host sizes Zipf-like (the host of rank r has weight 1/r^s,
``--zipf``), priorities random. Each size is one database on one durable PostgreSQL sized for
the machine (``bench.linkbase_scale.TUNING``), migrated with the scheduler's own migrations
and bulk-loaded once per run (COPY with the frontier's secondary indexes dropped and rebuilt,
then the host heads computed as migration 0020 does); between measurements a database is put
back to its loaded state (every URL queued, every host free), not reloaded.

A measurement runs the scheduler service itself (``python -m services.scheduler``, its shipped
code path: dispatcher, frontier store, consumer, admin server, freshness hook) against a local
Tansu broker, with ``TRAWL_SCHEDULER_DISPATCH_BATCH`` and ``TRAWL_SCHEDULER_MAX_IN_FLIGHT`` set
by ``--batch`` and ``--in-flight``. A stand-in fetcher (its own process) reads the fetch
requests topic and answers every request at once with a successful FetchOutcome, so hosts free
up as a fast fleet of fetchers would free them. "Emitted" means produced and received: the
figure is requests per second the stand-in fetcher received between its ``--warmup``-th and its
``--requests``-th request. The warm-up must be longer than the in-flight budget: the first
``--in-flight`` requests need no outcome applied before they go out, so a window that starts
inside them times a burst the scheduler cannot sustain (the rate of the first 20,000 requests
with a budget of 20,000 was about 1.6 times the rate after them). The rate of every window of
``WINDOW`` requests in the measured span is reported too, as a check that the rate is steady.
The scheduler's memory is its peak resident set (VmHWM) over the run. CPU per request is each
process's CPU time over the timed span divided by its requests: the scheduler, PostgreSQL (the
postmaster and its backends, autovacuum included), the broker and the stand-in fetcher.

The floor (``--floor 1,2``, in the same run, on the same databases): ``bench/scheduler_floor.py``
stands in for the scheduler, handing out queued URLs best first with nothing per host and applying
their outcomes with one frontier write per request (or two: marked in flight, then the outcome).
Its rate is what PostgreSQL and Kafka allow here; the scheduler's share of it says how much of the
cost is the scheduler's own (host state, selection, revisit plans, its Python).

The baseline, in the same run at the smallest size only (it is too slow for the others): the
naive dispatch loop of ``bench/frontier_dispatch.py`` (the free hosts, then one ``SELECT ...
LIMIT 1`` per host, one ``UPDATE`` per URL) with the store's ``apply_outcomes``, in this
process, without Kafka, in rounds of ``--batch``. Sizes and the baseline alternate their order
between repetitions.

    .venv/bin/python -m bench.scheduler_scale [--sizes 100000,1000000,10000000] [--repeat 3] [--floor 1,2] [--json]
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from bench.frontier_dispatch import dispatch_per_host, outcomes_for
from bench.harness import REPO, add_postgres_options, base_parser, machine
from bench.linkbase_scale import tuned_postgres
from bench.proc_usage import Sampler, peak_rss_kib
from libs.common.db.migrations import apply_migrations
from libs.common.db.pool import Database
from libs.common.db.settings import DatabaseSettings
from libs.common.kafka.codec import encode_key
from libs.common.kafka.partitioner import partition_for
from libs.common.kafka.settings import KafkaSettings
from libs.common.topics import ALL_TOPICS, FETCH_OUTCOMES, FETCH_REQUESTS
from libs.common.url_keys import normalized_fingerprint
from libs.common.wire import messages as pb
from libs.localinfra import LocalBroker, LocalPostgres, create_database, create_topics, drop_database, free_port
from services.scheduler.bandits.goal_sites import GoalSites
from services.scheduler.frontier.host_heads import BACKFILL
from services.scheduler.frontier.store import FrontierStore
from services.scheduler.settings import SchedulerSettings

MIGRATIONS = REPO / "services" / "scheduler" / "migrations"
WINDOW = 5000  # requests per window of the steadiness check
WARM = "warm"  # the stand-in fetcher's line when the timed span starts
PARTITIONS = FETCH_REQUESTS.partitions
LOADED_AT = "2000-01-01T00:00:00Z"  # next_fetch_at and next_allowed_at of the loaded frontier: long due
COPY_CHUNK = 200_000


def host_name(h: int) -> str:
    return f"h{h}.test"


def url_of(h: int, i: int) -> str:
    return f"http://{host_name(h)}/p/{i}"  # already in normal form (normalize_url leaves it as it is)


def url_hosts(urls: int, hosts: int, zipf: float, seed: int) -> np.ndarray:
    """The host of each URL: host ranks drawn with weight 1/rank^zipf, rank r named h{r}."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, hosts + 1, dtype=np.float64) ** zipf
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    return np.minimum(np.searchsorted(cdf, rng.random(urls)), hosts - 1)


def _copy_lines(rows: Iterator[str]) -> bytes:
    return ("\n".join(rows) + "\n").encode()


def load(server: LocalPostgres, name: str, urls: int, hosts: int, zipf: float) -> dict[str, Any]:
    """Database ``name``: migrated, ``urls`` queued URLs over ``hosts`` hosts (all in scheduler.hosts)."""
    started = time.perf_counter()
    admin = server.dsn("postgres")
    drop_database(admin, name)
    create_database(admin, name)
    dsn = server.dsn(name)
    apply_migrations(dsn, "scheduler", MIGRATIONS)
    host_of = url_hosts(urls, hosts, zipf, seed=urls)
    priorities = np.random.default_rng(urls + 1).random(urls)
    with psycopg.connect(dsn, autocommit=True) as conn:
        indexes = [
            (str(n), str(d)) for n, d in conn.execute(
                "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'scheduler' AND tablename = 'frontier'"
                " AND indexname <> 'frontier_pkey'"
            ).fetchall()
        ]
        for index, _ in indexes:
            conn.execute(f"DROP INDEX scheduler.{index}".encode())
        conn.execute("ALTER TABLE scheduler.frontier DROP CONSTRAINT frontier_pkey")
        conn.execute("ALTER TABLE scheduler.frontier DISABLE TRIGGER USER")
        with conn.cursor().copy("COPY scheduler.hosts (host, partition, next_allowed_at) FROM STDIN") as copy:
            copy.write(_copy_lines(
                f"{host_name(h)}\t{partition_for(host_name(h), PARTITIONS)}\t{LOADED_AT}" for h in range(hosts)
            ))
        columns = "url_fp, url, host, status, priority, cash, next_fetch_at, depth"
        with conn.cursor().copy(f"COPY scheduler.frontier ({columns}) FROM STDIN".encode()) as copy:
            for start in range(0, urls, COPY_CHUNK):
                lines = []
                for i in range(start, min(urls, start + COPY_CHUNK)):
                    h = int(host_of[i])
                    url = url_of(h, i)
                    p = float(priorities[i])
                    lines.append(f"{normalized_fingerprint(url)}\t{url}\t{host_name(h)}\tqueued\t{p!r}\t{p!r}"
                                 f"\t{LOADED_AT}\t1")
                copy.write(_copy_lines(iter(lines)))
        conn.execute("ALTER TABLE scheduler.frontier ADD CONSTRAINT frontier_pkey PRIMARY KEY (url_fp)")
        for _, definition in indexes:
            conn.execute(definition.encode())
        conn.execute("ALTER TABLE scheduler.frontier ENABLE TRIGGER USER")
        conn.execute(BACKFILL)
        conn.execute("VACUUM ANALYZE scheduler.frontier")
        conn.execute("VACUUM ANALYZE scheduler.hosts")
        size = conn.execute("SELECT pg_database_size(current_database())").fetchone()
    return {"urls": urls, "hosts_with_urls": int(np.unique(host_of).size),
            "largest_host": int(np.bincount(host_of).max()), "load_s": round(time.perf_counter() - started, 1),
            "database_mb": round((size[0] if size else 0) / 2**20)}


def reset(dsn: str) -> None:
    """Puts a measured database back to its loaded state: every URL queued and due, every host free."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "UPDATE scheduler.frontier SET status = 'queued', attempts = 0, request_id = NULL, dispatched_at = NULL,"
            " fetched_at = NULL, fetch_seq = NULL, http_status = NULL, last_outcome = NULL, last_error = NULL,"
            " change_probability = 1, freshness_gain = 0, priority = cash, next_fetch_at = %s"
            " WHERE status <> 'queued'",
            (LOADED_AT,),
        )
        conn.execute("UPDATE scheduler.hosts SET in_flight = 0, next_allowed_at = %s, fetched = 0, errors = 0,"
                     " gap_seconds = NULL WHERE in_flight <> 0 OR fetched <> 0 OR errors <> 0", (LOADED_AT,))
        conn.execute("TRUNCATE scheduler.host_heads_stale, scheduler.freshness_pages, scheduler.bandit_pages")
        conn.execute(BACKFILL)
        conn.execute("VACUUM ANALYZE scheduler.frontier")
        conn.execute("VACUUM ANALYZE scheduler.hosts")


# -- the stand-in fetcher (its own process) ------------------------------------------------


def serve_fetcher(bootstrap: str, prefix: str, requests: int, warmup: int, timeout: float,
                  on_warm: Callable[[], None] = lambda: None) -> dict[str, Any]:
    """Answers every fetch request with a successful outcome; times requests warmup..requests.

    ``on_warm`` is called when the ``warmup``-th request came (the timed span starts).
    """
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    kafka = KafkaSettings(bootstrap=bootstrap, topic_prefix=prefix)
    consumer = Consumer(kafka.consumer_config(f"{prefix}bench-fetcher", "bench-fetcher"))
    topic = kafka.topic(FETCH_REQUESTS.name)
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(FETCH_REQUESTS.partitions)])
    producer = Producer({**kafka.producer_config("bench-fetcher"), "linger.ms": 20})
    outcomes = kafka.topic(FETCH_OUTCOMES.name)
    received, first_at, warm_at, done_at = 0, 0.0, 0.0, 0.0
    marks: list[float] = []  # when each WINDOW-th request of the measured span came
    deadline = time.monotonic() + timeout
    while received < requests and time.monotonic() < deadline:
        for msg in consumer.consume(5000, 0.005):  # what came: a batch consume waits for all 5,000 otherwise
            value = msg.value()
            if msg.error() is not None or value is None:
                continue
            req = pb.FetchRequest.FromString(value)
            answer = pb.FetchOutcome(request_id=req.request_id, url=req.url, host=req.host, status=pb.FETCH_STATUS_OK,
                                     http_status=200, fetched_at_ms=int(time.time() * 1000), attempt=req.attempt)
            while True:
                try:
                    producer.produce(outcomes, key=encode_key(req.host), value=answer.SerializeToString())
                    break
                except BufferError:
                    producer.poll(0.05)
            received += 1
            if received == 1:
                first_at = time.perf_counter()
            if received == warmup:
                warm_at = time.perf_counter()
                on_warm()
            if warmup <= received <= requests and not (received - warmup) % WINDOW:
                marks.append(time.perf_counter())
            if received == requests:
                done_at = time.perf_counter()
        producer.poll(0)
    producer.flush(10)
    consumer.close()
    measured = requests - warmup
    rate = measured / (done_at - warm_at) if done_at and warm_at and done_at > warm_at else 0.0
    windows = [WINDOW / (b - a) for a, b in itertools.pairwise(marks) if b > a]
    return {"received": received, "rate": rate, "first_s": first_at, "complete": received >= requests,
            "windows": windows}


# -- one measurement ------------------------------------------------------------------------


@dataclass
class Sample:
    rate: float
    peak_rss_mb: float
    startup_s: float
    windows: list[float] = field(default_factory=list)  # rates of the measured span's windows
    cpu_us: dict[str, float] = field(default_factory=dict)  # CPU per request in the measured span, by process


@dataclass
class SizeSeries:
    label: str
    samples: list[Sample] = field(default_factory=list)

    @property
    def rates(self) -> list[float]:
        return [s.rate for s in self.samples]


def service_run(dsn: str, bootstrap: str, args: Any, run: int, servers: dict[str, tuple[int, bool]],
                floor_writes: int = 0) -> Sample:
    """The scheduler service on ``dsn`` until the stand-in fetcher got ``args.requests`` requests.

    ``servers``: PostgreSQL's and the broker's root pids (PostgreSQL's with its children), sampled
    with the scheduler and the stand-in fetcher for their CPU per request over the timed span.

    With ``floor_writes`` (1 or 2) the floor process of ``bench/scheduler_floor.py`` stands in for
    the scheduler, with the same budget, round size and outcome batch.
    """
    prefix = f"bench{uuid.uuid4().hex[:8]}."
    kafka = KafkaSettings(bootstrap=bootstrap, topic_prefix=prefix)
    create_topics(bootstrap, [(kafka.topic(t.name), t.partitions) for t in ALL_TOPICS])
    env = {
        **os.environ,
        "TRAWL_DATABASE_URL": dsn,
        "TRAWL_KAFKA_BOOTSTRAP": bootstrap,
        "TRAWL_TOPIC_PREFIX": prefix,
        "TRAWL_SCHEDULER_GROUP": f"{prefix}scheduler",
        "TRAWL_SCHEDULER_DISPATCH_BATCH": str(args.batch),
        "TRAWL_SCHEDULER_MAX_IN_FLIGHT": str(args.in_flight),
        "TRAWL_GRPC_ADDRESS": f"127.0.0.1:{free_port()}",
        "TRAWL_LOG_LEVEL": "WARNING",
    }
    fetcher = subprocess.Popen(
        [sys.executable, "-m", "bench.scheduler_scale", "--serve-fetcher", bootstrap, prefix,
         str(args.requests), str(args.warmup), str(args.timeout)],
        cwd=REPO, stdout=subprocess.PIPE, text=True, bufsize=1,
    )
    started = time.perf_counter()
    profile = ["-m", "cProfile", "-o", f"{args.profile}.{run}"] if args.profile else []
    command = [*profile, "-m", "services.scheduler"]
    if floor_writes:
        command = ["-m", "bench.scheduler_floor", dsn, bootstrap, prefix, str(args.requests + args.in_flight),
                   str(args.in_flight), str(args.batch), str(SchedulerSettings().consumer_batch), str(floor_writes)]
    scheduler = subprocess.Popen([sys.executable, *command], cwd=REPO, env=env,
                                 stdout=subprocess.DEVNULL, stderr=open(args.log, "a"))  # noqa: SIM115
    peak = 0
    sampler = Sampler({"scheduler": (scheduler.pid, False), "fetcher": (fetcher.pid, False), **servers})
    lines: list[str] = []

    def follow() -> None:  # the fetcher says "warm" when the timed span starts: CPU counts from there
        assert fetcher.stdout is not None
        for line in fetcher.stdout:
            if line.strip() == WARM:
                sampler.mark()
            lines.append(line)

    reader = threading.Thread(target=follow, name="bench-fetcher-output", daemon=True)
    sampler.start()
    reader.start()
    try:
        while fetcher.poll() is None:
            peak = max(peak, peak_rss_kib(scheduler.pid))
            if scheduler.poll() is not None:
                raise RuntimeError(f"the scheduler exited with {scheduler.returncode}; see {args.log}")
            time.sleep(0.2)
        peak = max(peak, peak_rss_kib(scheduler.pid))
        reader.join(10)
        usage = sampler.stop()
    finally:
        if fetcher.poll() is None:
            fetcher.kill()
        scheduler.send_signal(signal.SIGTERM)
        try:
            scheduler.wait(30)
        except subprocess.TimeoutExpired:
            scheduler.kill()
            scheduler.wait()
    if not lines:
        raise RuntimeError(f"run {run}: the stand-in fetcher exited with {fetcher.returncode} and printed nothing")
    result = json.loads(lines[-1])
    if not result["complete"]:
        raise RuntimeError(f"run {run}: the fetcher got {result['received']} of {args.requests} requests in time")
    measured = args.requests - args.warmup
    return Sample(result["rate"], peak / 1024, 0.0 if not result["first_s"] else result["first_s"] - started,
                  result["windows"], {name: part.cpu_seconds * 1e6 / measured for name, part in usage.items()})


async def baseline_run(dsn: str, args: Any) -> Sample:
    """The naive per-host dispatch loop with apply_outcomes, in rounds of ``args.batch``, in this process.

    The clock starts after the first round and stops once ``args.baseline_requests`` URLs were
    dispatched, after at least one more round.
    """
    settings = SchedulerSettings()
    db = Database(DatabaseSettings(dsn=dsn), "bench-scheduler-baseline")
    await db.start()
    try:
        store = FrontierStore(db, PARTITIONS, listeners=[GoalSites(db)])
        done, rounds, started, first = 0, 0, 0.0, 0
        while done < args.baseline_requests or rounds < 2:
            rows = await dispatch_per_host(db, store, args.batch)
            applied = await store.apply_outcomes(outcomes_for(rows), settings.max_attempts, settings.retry_base_seconds)
            if not rows or applied != len(rows):
                raise AssertionError(f"baseline: dispatched {len(rows)}, applied {applied}")
            done += len(rows)
            rounds += 1
            if rounds == 1:
                started, first = time.perf_counter(), done
        rate = (done - first) / (time.perf_counter() - started)
    finally:
        await db.stop()
    return Sample(rate, 0.0, 0.0)


# -- the run --------------------------------------------------------------------------------


def _spread(values: list[float]) -> str:
    return f"median {statistics.median(values):,.0f}  min {min(values):,.0f}  max {max(values):,.0f}"


def cpu_per_request(samples: list[Sample]) -> dict[str, float]:
    """Median CPU microseconds per request of each process over the samples, and their total."""
    parts = sorted({name for sample in samples for name in sample.cpu_us})
    cpu = {name: round(statistics.median(s.cpu_us.get(name, 0.0) for s in samples), 1) for name in parts}
    return {**cpu, "total": round(sum(cpu.values()), 1)} if cpu else {}


def _cpu_line(cpu: dict[str, float]) -> str:
    return ", ".join(f"{name} {value:,.1f}" for name, value in cpu.items())


async def measure(args: Any) -> dict[str, Any]:
    sizes = [int(s) for s in args.sizes.split(",")]
    root = Path(tempfile.mkdtemp(prefix="trawl-bench-scheduler-", dir="/var/tmp"))
    broker = LocalBroker(root / "broker", free_port())
    loads: dict[int, dict[str, Any]] = {}
    series = {n: SizeSeries(f"{n:,} URLs") for n in sizes}
    floors = {(n, w): SizeSeries(f"{n:,} URLs, floor with {w} write{'s' if w > 1 else ''} per request")
              for n in sizes for w in args.floor}
    base = SizeSeries(f"baseline at {sizes[0]:,} URLs")
    try:
        broker.ensure_started()
        with tuned_postgres(args.fast) as server:
            for n in sizes:
                loads[n] = load(server, f"bench_sched_{n}", n, args.hosts, args.zipf)
                print(f"  loaded {n:,} URLs: {loads[n]}", file=sys.stderr, flush=True)
            dsns = {n: server.dsn(f"bench_sched_{n}") for n in sizes}
            servers = {"postgres": (server.pid() or 0, True), "broker": (broker.pid() or 0, False)}
            # (size, floor writes): 0 is the scheduler service; size None the baseline.
            order: list[tuple[int | None, int]] = [(n, w) for n in sizes for w in (0, *args.floor)]
            if not args.no_baseline:
                order.append((None, 0))
            run = 0
            for rep in range(args.repeat):
                for entry, writes in (order if rep % 2 == 0 else list(reversed(order))):
                    run += 1
                    target = sizes[0] if entry is None else entry
                    reset(dsns[target])
                    if entry is None:
                        sample = await baseline_run(dsns[target], args)
                        chosen = base
                    else:
                        sample = await asyncio.to_thread(service_run, dsns[entry], broker.bootstrap, args, run,
                                                         servers, writes)
                        chosen = floors[entry, writes] if writes else series[entry]
                    chosen.samples.append(sample)
                    name = chosen.label
                    print(f"  repetition {rep + 1}/{args.repeat}: {name}: {sample.rate:,.0f} requests/s,"
                          f" scheduler peak RSS {sample.peak_rss_mb:,.0f} MB", file=sys.stderr, flush=True)
    finally:
        broker.stop()
        shutil.rmtree(root, ignore_errors=True)
    smallest = statistics.median(series[sizes[0]].rates)
    return {
        "benchmark": "scheduler_scale",
        "unit": "fetch requests emitted per second (produced to Kafka and received)",
        "sizes": {
            str(n): {
                "rates": [round(r) for r in series[n].rates],
                "window_rates": {"min": round(min(w)), "median": round(statistics.median(w)), "max": round(max(w))}
                if (w := [x for sample in series[n].samples for x in sample.windows]) else None,
                "median": round(statistics.median(series[n].rates)),
                "vs_smallest": round(statistics.median(series[n].rates) / smallest, 3),
                "peak_rss_mb": [round(s.peak_rss_mb) for s in series[n].samples],
                "cpu_us_per_request": cpu_per_request(series[n].samples),
                "load": loads[n],
            }
            for n in sizes
        },
        "floors": {
            f"{n}/{w}": {"size": n, "writes_per_request": w, "rates": [round(r) for r in floors[n, w].rates],
                         "median": round(statistics.median(floors[n, w].rates)),
                         "cpu_us_per_request": cpu_per_request(floors[n, w].samples),
                         "scheduler_share": round(statistics.median(series[n].rates)
                                                  / statistics.median(floors[n, w].rates), 3)}
            for n, w in floors
        },
        "baseline": {"name": "per-host SELECT ... LIMIT 1 loop + apply_outcomes (in process, no Kafka)",
                     "size": sizes[0], "rates": [round(r) for r in base.rates],
                     "median": round(statistics.median(base.rates)) if base.rates else None},
        "workload": {"hosts": args.hosts, "zipf": args.zipf, "batch": args.batch, "in_flight": args.in_flight,
                     "requests_per_run": args.requests, "warmup": args.warmup,
                     "postgres": "fsync off" if args.fast else "durable (fsync on), tuned"},
        "machine": machine(),
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def print_table(result: dict[str, Any]) -> None:
    print(f"{result['benchmark']}: {result['unit']}")
    print(f"  workload: {', '.join(f'{k}={v}' for k, v in result['workload'].items())}")
    for n, s in result["sizes"].items():
        windows = s["window_rates"]
        steadiness = (f"  {WINDOW:,}-request windows {windows['min']:,}-{windows['max']:,}"
                      f" (median {windows['median']:,})" if windows else "")
        print(f"  {int(n):>12,} URLs  {_spread(s['rates'])}  ({s['vs_smallest']:.2f}x the smallest){steadiness}"
              f"  peak RSS MB {s['peak_rss_mb']}  load {s['load']}")
        print(f"  {'':>12}       CPU us per request: {_cpu_line(s['cpu_us_per_request'])}")
    for f in result["floors"].values():
        print(f"  {f['size']:>12,} URLs  floor, {f['writes_per_request']} frontier write(s) per request:"
              f" {_spread(f['rates'])}  (the scheduler at {f['scheduler_share']:.2f} of it)")
        print(f"  {'':>12}       CPU us per request: {_cpu_line(f['cpu_us_per_request'])}")
    b = result["baseline"]
    if b["rates"]:
        print(f"  baseline at {b['size']:,} URLs: {b['name']}: {_spread(b['rates'])}")
    info = result["machine"]
    print(f"  machine: {info['cpus']} cpus, Python {info['python']}, load {info['load_average_1m_at_end']}")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--serve-fetcher":
        bootstrap, prefix, requests, warmup, timeout = sys.argv[2:7]
        print(json.dumps(serve_fetcher(bootstrap, prefix, int(requests), int(warmup), float(timeout),
                                       on_warm=lambda: print(WARM, flush=True))))
        return
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000,10000000", help="Queued URLs of each frontier.")
    parser.add_argument("--hosts", type=int, default=100_000, help="Hosts of every frontier.")
    parser.add_argument("--zipf", type=float, default=1.0, help="Exponent of the host sizes (rank^-s).")
    parser.add_argument("--batch", type=int, default=5000, help="TRAWL_SCHEDULER_DISPATCH_BATCH of the scheduler.")
    parser.add_argument("--in-flight", type=int, default=10_000, help="TRAWL_SCHEDULER_MAX_IN_FLIGHT.")
    parser.add_argument("--requests", type=int, default=55_000, help="Requests per measurement.")
    parser.add_argument("--warmup", type=int, default=15_000,
                        help="Requests before the clock starts: more than --in-flight (see the module's notes).")
    parser.add_argument("--timeout", type=float, default=300.0, help="Longest a measurement may take (s).")
    parser.add_argument("--baseline-requests", type=int, default=10_000,
                        help="Requests per baseline measurement (its first round is the warm-up).")
    parser.add_argument("--no-baseline", action="store_true", help="Measure the scheduler service only.")
    parser.add_argument("--floor", default="", type=lambda v: sorted({int(w) for w in v.split(",") if w}),
                        help="Also measure the floor (bench/scheduler_floor.py) with 1 and/or 2 frontier writes"
                             " per request, side by side: e.g. 1,2.")
    parser.add_argument("--log", default="/tmp/bench-scheduler-scale.log", help="The scheduler's stderr.")
    parser.add_argument("--profile", default="", help="Profile the scheduler with cProfile into PATH.<run>.")
    add_postgres_options(parser)
    args = parser.parse_args()
    if set(args.floor) - {1, 2}:
        parser.error("--floor takes 1 and/or 2 (frontier writes per request)")
    if args.warmup <= args.in_flight or args.requests <= args.warmup:
        parser.error("--warmup must exceed --in-flight, and --requests --warmup: the window times steady dispatch")
    result = asyncio.run(measure(args))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)


if __name__ == "__main__":
    main()

"""Link transfers per second the importance service applies with its real state store; memory per million URLs.

A link transfer is one share of a crawled page's cash moving over one followed out-link.
Contender: the service's own path, ``ImportanceHandler`` over ``OwnedPartitions`` (state
in memory per partition, each topic's records of a consumed batch committed to PostgreSQL as changelog deltas,
cash for other partitions' pages written to the outbox and sent as cash-transfer
messages), one instance owning all 12 partitions, on a throwaway PostgreSQL (durable by
default; ``--fast`` turns fsync off) and a local Tansu broker. The transfers it sends are
read back from their topic and handed to it, as its consumer would, so a share counts
once the partition that owns its target applied it. Baseline: Trawl's first layout
(``bench.importance_rowstore``: one row per URL, loaded and upserted per batch), on the
same batches, database server and broker. Both send the importance updates. With
``--baseline links`` the baseline is the service path itself on page-links messages without
the followed-link lists (read one ``Link`` at a time, as before the lists existed).

The batches are page links of a web-like graph (``libs.simweb.webgraph``) crawled
breadth-first from its home pages, as the extractor sends them (with the followed-link
lists), cut into consumer batches of ``--batch`` records. Each instance loads its partitions
and fetches the metadata of the topics it writes before the clock starts, as a running
instance has them. Besides the wall-clock rate it prints the CPU time the service processes
spent per link transfer, which a loaded machine disturbs much less.
Memory: bytes per URL of an ``OpicEngine`` holding a million URLs (tracemalloc), against
one Python object per URL in a dict, and the size of its snapshot in PostgreSQL.

    .venv/bin/python -m bench.importance_transfers [--pages 30000 --batch 2000 --repeat 3] [--replicas 2]
        [--baseline rowstore|links] [--warm] [--memory-urls 0] [--fast] [--json]
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import multiprocessing
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from bench.harness import (
    REPO,
    Comparison,
    add_postgres_options,
    base_parser,
    fresh_database,
    interleaved,
    report,
    throwaway_postgres,
)
from bench.importance_rowstore import RowStoreHandler
from libs.common.db.migrations import apply_migrations
from libs.common.db.pool import Database
from libs.common.db.settings import DatabaseSettings
from libs.common.followed_links import fill_followed, followed
from libs.common.kafka.consumer import Record, by_topic
from libs.common.kafka.partitioner import fingerprint_partitions
from libs.common.kafka.producer import TopicProducer
from libs.common.kafka.settings import KafkaSettings
from libs.common.topics import CASH_TRANSFERS, IMPORTANCE_UPDATES, PAGE_LINKS
from libs.common.url_keys import UrlKind, key_text, normalized_fingerprint
from libs.common.wire import messages as pb
from libs.localinfra import LocalBroker, LocalPostgres, create_topics, free_port
from libs.simweb.webgraph import build_web_graph, web_like_config
from services.importance.cash_store import CashStore
from services.importance.engine import OpicEngine
from services.importance.handler import ImportanceHandler
from services.importance.owned_partitions import OwnedPartitions
from services.importance.settings import ImportanceSettings
from services.importance.state_codec import encode_snapshot

MIGRATIONS = REPO / "services" / "importance" / "migrations"
PARTITIONS = PAGE_LINKS.partitions
FETCHED_AT_MS = 1_700_000_000_000
CPU_PER_LINK: dict[bool, list[float]] = {True: [], False: []}
SLOTS = 4
"""Per instance in the shared array: cash sent, cash received, pages left, and whether it last saw all settled."""
REPLAYED: list[int] = []
"""Per service-path run: the shares replays passed over kept out-links (counted as link transfers)."""
KEPT_LINKS = 12
"""Followed out-links kept per crawled page in the memory figure (the generated webs' mean is about 12)."""
"""CPU seconds per link transfer of the service processes (all instances), per run, by message form."""


@dataclass
class Workload:
    records: list[tuple[int, int, str, bytes]]
    """(partition, offset, key, page-links message as bytes), in crawl order."""
    transfers: int
    pages: int


def build_workload(pages: int, seed: int, followed_lists: bool = True) -> Workload:
    """Every page of a generated web, breadth-first from its home pages, as the extractor would send them."""
    graph = build_web_graph(web_like_config(pages, seed))
    seen = set(graph.home_pages)
    order = list(graph.home_pages)
    for node in order:
        for t in graph.out_links[node]:
            if t not in seen:
                seen.add(t)
                order.append(t)
    offsets = [0] * PARTITIONS
    records = []
    transfers = 0
    page_owner = fingerprint_partitions([normalized_fingerprint(graph.urls[n]) for n in order], PARTITIONS)
    for node, part in zip(order, page_owner, strict=True):
        url = graph.urls[node]
        host = url.split("/")[2]
        links = [pb.Link(url=graph.urls[t], link_class=pb.LINK_CLASS_INTERNAL
                         if graph.urls[t].split("/")[2] == host else pb.LINK_CLASS_EXTERNAL)
                 for t in graph.out_links[node]]
        msg = pb.PageLinks(url=url, host=host, fetched_at_ms=FETCHED_AT_MS + node, links=links)
        if followed_lists:
            fill_followed(msg)  # as the extractor sends them
        transfers += len(followed(msg, normalized_fingerprint(url), True)[0])
        records.append((part, offsets[part], key_text(normalized_fingerprint(url)), msg.SerializeToString()))
        offsets[part] += 1
    return Workload(records, transfers, len(order))


def decoded(raw: list[tuple[int, int, str, bytes]]) -> list[Record[Any]]:
    """Records as the consumer hands them over (decoded here, in the timed loop, as the consumer does)."""
    return [Record(PAGE_LINKS, p, o, k, pb.PageLinks.FromString(v), FETCHED_AT_MS, k.encode("ascii"), v)
            for p, o, k, v in raw]


class TransferFeed:
    """The cash-transfers topic read back as records, without a consumer group."""

    def __init__(self, bootstrap: str, topic: str, partitions: set[int]) -> None:
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex}",
                                   "enable.auto.commit": False, "fetch.wait.max.ms": 10})
        self._consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(partitions)])

    def take(self, timeout: float) -> list[Record[Any]]:
        out = []
        for msg in self._consumer.consume(100_000, timeout):
            if msg.error() is None:
                value = msg.value() or b""
                out.append(Record(CASH_TRANSFERS, int(msg.partition() or 0), int(msg.offset() or 0), "",
                                  pb.CashTransfer.FromString(value), 0, msg.key(), value))
        return out

    def close(self) -> None:
        self._consumer.close()


@dataclass(frozen=True)
class ReplicaJob:
    index: int
    replicas: int
    dsn: str
    bootstrap: str
    prefix: str
    pages: int
    seed: int
    batch: int
    followed_lists: bool = True
    warm: bool = False
    replays: float | None = None


def replica(job: ReplicaJob, ready: Any, start: Any, shared: Any, results: Any) -> None:
    """One importance instance owning every ``replicas``-th partition (a process of its own)."""
    results.put((job.index, asyncio.run(_replica(job, ready, start, shared))))


async def _replica(job: ReplicaJob, ready: Any, start: Any, shared: Any) -> tuple[float, float, int]:
    mine = {p for p in range(PARTITIONS) if p % job.replicas == job.index}
    raw = [r for r in build_workload(job.pages, job.seed, job.followed_lists).records if r[0] in mine]
    kafka = KafkaSettings(bootstrap=job.bootstrap, topic_prefix=job.prefix)
    db = Database(DatabaseSettings(dsn=job.dsn), f"bench-importance-{job.index}")
    await db.start()
    producer = TopicProducer(kafka, f"bench-importance-{job.index}")
    await producer.start()
    settings = ImportanceSettings()
    if job.replays is not None:
        settings = dataclasses.replace(settings, replays_per_visit=job.replays)
    owned = OwnedPartitions(CashStore(db, PARTITIONS, settings.total_cash), producer,
                            settings.opic_config(PARTITIONS), kafka.topic(CASH_TRANSFERS.name),
                            kafka.topic(IMPORTANCE_UPDATES.name), snapshot_idle=3600.0)
    owned.owned = lambda: mine
    handlers = {h.topic.name: h.handle for h in ImportanceHandler(owned).topic_handlers()}
    feed = TransferFeed(job.bootstrap, kafka.topic(CASH_TRANSFERS.name), mine)
    for p in mine:
        await owned.get(p)  # loaded before the clock starts, as right after an assignment
    # The producer knows the topics it writes, as in a running instance: librdkafka otherwise holds the
    # first message for a topic it has no metadata for about half a second, inside the timed run.
    client = producer._require()
    for name in (CASH_TRANSFERS.name, IMPORTANCE_UPDATES.name):
        await asyncio.to_thread(client.list_topics, kafka.topic(name), 30)
    if job.warm:  # read every message once, untimed, as a process that has been running has
        for record in decoded(raw):
            followed(record.value, 0, True)
    ready.put(job.index)
    await asyncio.to_thread(start.wait)
    size = job.batch
    waiting: list[Record[Any]] = []
    started, cpu = time.perf_counter(), time.process_time()
    try:
        while True:  # as the consumer does: batches of what arrived, each topic's records to its handler
            waiting += await asyncio.to_thread(feed.take, 0.0 if raw else 0.05)
            batch, waiting = waiting[:size], waiting[size:]
            room = size - len(batch)
            batch += decoded(raw[:room])
            del raw[:room]
            groups = by_topic(batch)
            for name, handle in handlers.items():  # in the handlers' order, as the consumer does
                if name in groups:
                    await handle(groups[name])
            states = owned.states.values()
            base = SLOTS * job.index
            shared[base] = sum(s.engine.totals.sent for s in states)
            shared[base + 1] = sum(s.engine.totals.received for s in states)
            shared[base + 2] = float(len(raw))
            if batch:
                shared[base + 3] = 0.0
                continue
            # pages left first: an instance publishes them after what it sent, so once its pages read
            # as done, its sent cash read next includes its last visits' (read the other way round, an
            # instance could stop before the other's last transfers to it arrived, and the other wait forever)
            left = sum(shared[SLOTS * i + 2] for i in range(job.replicas))
            sent = sum(shared[SLOTS * i] for i in range(job.replicas))
            received = sum(shared[SLOTS * i + 1] for i in range(job.replicas))
            balanced = left == 0 and abs(sent - received) <= 1e-9 * max(1.0, sent)
            # every page applied, every share sent applied, as seen by every instance: none stops while
            # another may still send it something (a replay earned earlier runs when cash arrives)
            if balanced and all(shared[SLOTS * i + 3] for i in range(job.replicas)):
                replayed = sum(s.shard.replayed_links for s in owned.states.values())
                return time.perf_counter() - started, time.process_time() - cpu, replayed
            shared[base + 3] = 1.0 if balanced else 0.0
    finally:
        feed.close()
        if owned._task is not None:
            owned._task.cancel()
        await producer.stop()
        await db.stop()


async def service_path(server: LocalPostgres, bootstrap: str, pages: int, seed: int, batch: int, replicas: int,
                       transfers: int, run: int, followed_lists: bool = True, warm: bool = False,
                       replays: float | None = None) -> float:
    """Link transfers per second of ``replicas`` instances of the service's path (see module doc).

    The shares the instances' replays pass over kept out-links count as link transfers too.
    """
    with fresh_database(server, f"bench_importance_{run}") as dsn:
        apply_migrations(dsn, "importance", MIGRATIONS)
        prefix = f"bench{uuid.uuid4().hex[:8]}."
        kafka = KafkaSettings(bootstrap=bootstrap, topic_prefix=prefix)
        create_topics(bootstrap, [(kafka.topic(t.name), t.partitions) for t in (CASH_TRANSFERS, IMPORTANCE_UPDATES)])
        db = Database(DatabaseSettings(dsn=dsn), "bench-importance")
        await db.start()
        await CashStore(db, PARTITIONS, ImportanceSettings().total_cash).ensure_partitions()
        await db.stop()
        context = multiprocessing.get_context("spawn")
        ready, results, start = context.Queue(), context.Queue(), context.Event()
        shared = context.Array("d", SLOTS * replicas, lock=False)
        for i in range(replicas):
            shared[SLOTS * i + 2] = 1.0
        procs = [context.Process(target=replica, args=(ReplicaJob(i, replicas, dsn, bootstrap, prefix, pages, seed,
                                                                  batch, followed_lists, warm, replays), ready, start,
                                                        shared,
                                                        results))
                 for i in range(replicas)]
        for proc in procs:
            proc.start()
        try:
            for _ in procs:
                await asyncio.to_thread(ready.get, True, 300)
            start.set()
            done = [(await asyncio.to_thread(results.get, True, 600))[1] for _ in procs]
        finally:
            for proc in procs:
                proc.join(timeout=30)
                if proc.is_alive():
                    proc.kill()
    total = transfers + sum(replayed for _, _, replayed in done)
    REPLAYED.append(total - transfers)
    CPU_PER_LINK[followed_lists].append(sum(cpu for _, cpu, _ in done) / total)
    return float(total / max(elapsed for elapsed, _, _ in done))


async def row_store(server: LocalPostgres, bootstrap: str, workload: Workload, batch: int, run: int) -> float:
    with fresh_database(server, f"bench_rowstore_{run}") as dsn:
        kafka = KafkaSettings(bootstrap=bootstrap, topic_prefix=f"bench{uuid.uuid4().hex[:8]}.")
        create_topics(bootstrap, [(kafka.topic(IMPORTANCE_UPDATES.name), IMPORTANCE_UPDATES.partitions)])
        db = Database(DatabaseSettings(dsn=dsn), "bench-rowstore")
        await db.start()
        producer = TopicProducer(kafka, "bench-rowstore")
        await producer.start()
        handler = RowStoreHandler(db, producer)
        await handler.setup()
        try:
            raw = list(workload.records)
            started = time.perf_counter()
            while raw:
                await handler(decoded(raw[:batch]))
                del raw[:batch]
            elapsed = time.perf_counter() - started
        finally:
            await producer.stop()
            await db.stop()
    return workload.transfers / elapsed


@dataclass(slots=True)
class PageObject:
    """The baseline of the memory figure: one object per URL."""

    cash: float
    history: float
    mark_new: float
    mark_all: float
    weight: float
    last_visit: float
    visits: int
    host: int
    flags: int


def memory_per_url(count: int) -> dict[str, float]:
    """Bytes per URL: the engine (URLs included), one object per URL in a dict, the snapshot; kept out-links.

    ``kept_links`` is the memory of the out-links kept for replays, per crawled page with
    ``KEPT_LINKS`` of them (measured over every tenth page crawled).
    """
    hosts = [f"site-{i:05d}.example" for i in range(max(1, count // 100))]

    def url(i: int) -> str:
        if i < len(hosts):
            return f"http://{hosts[i]}/"
        return f"http://{hosts[i % len(hosts)]}/section-{i % 7}/page-{i}.html"

    gc.collect()
    tracemalloc.start()
    engine = OpicEngine(ImportanceSettings().opic_config(PARTITIONS), 100.0)
    for i in range(count):
        kind = UrlKind.HOME if i < len(hosts) else UrlKind.PAGE
        engine.add(normalized_fingerprint(url(i)), hosts[i % len(hosts)], kind, url(i))
    engine_bytes = tracemalloc.get_traced_memory()[0]
    crawled = range(0, count, 10)
    for s in crawled:
        targets = [engine.keys[(s + 7919 * k) % count] for k in range(1, KEPT_LINKS + 1)]
        engine.keep_links(s, targets, fingerprint_partitions(targets, PARTITIONS))
    links_bytes = tracemalloc.get_traced_memory()[0] - engine_bytes
    tracemalloc.stop()
    snapshot_bytes = sum(len(c) for c in encode_snapshot(engine))
    del engine
    gc.collect()
    tracemalloc.start()
    objects = {normalized_fingerprint(url(i)): PageObject(0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0, i % len(hosts), 2)
               for i in range(count)}
    object_bytes = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del objects
    return {"engine": engine_bytes / count, "objects": object_bytes / count, "snapshot": snapshot_bytes / count,
            "kept_links": links_bytes / max(1, len(crawled))}


async def main_async(argv: list[str]) -> None:
    parser = base_parser(__doc__ or "")
    add_postgres_options(parser)
    parser.add_argument("--pages", type=int, default=30_000, help="Pages of the generated web (all crawled).")
    parser.add_argument("--batch", type=int, default=5000, help="Records per consumed batch.")
    parser.add_argument("--replicas", type=int, default=1, help="Importance instances, each in its own process.")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--memory-urls", type=int, default=1_000_000, help="URLs for the memory figure (0: skip).")
    parser.add_argument("--no-baseline", action="store_true", help="Measure the service path only.")
    parser.add_argument("--replays", type=float, default=None,
                        help="Replays per crawl applied (default: TRAWL_IMPORTANCE_REPLAYS_PER_VISIT's default);"
                             " their shares count as link transfers.")
    parser.add_argument("--baseline", choices=("rowstore", "links"), default="rowstore",
                        help="rowstore: one PostgreSQL row per URL; links: the service path on page-links messages"
                             " without the followed lists (the links read one Link object at a time).")
    parser.add_argument("--warm", action="store_true",
                        help="Each instance decodes and reads every message once before the clock starts, as a"
                             " process that has been running has (its allocator holds the memory already).")
    args = parser.parse_args(argv)
    workload = build_workload(args.pages, args.seed)
    root = Path(tempfile.mkdtemp(prefix="trawl-bench-broker-", dir="/var/tmp"))
    broker = LocalBroker(root / "broker", free_port())
    try:
        broker.ensure_started()
        with throwaway_postgres(args.fast) as server:
            runs = iter(range(10_000))

            async def contender() -> float:
                return await service_path(server, broker.bootstrap, args.pages, args.seed, args.batch, args.replicas,
                                          workload.transfers, next(runs), warm=args.warm, replays=args.replays)

            async def baseline() -> float:
                if args.no_baseline:
                    return float("nan")
                if args.baseline == "links":
                    return await service_path(server, broker.bootstrap, args.pages, args.seed, args.batch,
                                              args.replicas, workload.transfers, next(runs), followed_lists=False,
                                              warm=args.warm, replays=args.replays)
                return await row_store(server, broker.bootstrap, workload, args.batch, next(runs))

            name = f"service path, {args.replicas} instance(s): partitions in memory + changelog"
            other = "one row per URL" if args.baseline == "rowstore" else "service path, links read one by one"
            a, b = await interleaved(contender, baseline, args.repeat, (name, other))
    finally:
        broker.stop()
        shutil.rmtree(root, ignore_errors=True)
    memory = memory_per_url(args.memory_urls) if args.memory_urls else {}
    notes = [f"{workload.pages:,} pages, {workload.transfers:,} link transfers, batches of {args.batch:,} records",
             "durable PostgreSQL (fsync on)" if not args.fast else "PostgreSQL with fsync off"]
    if REPLAYED:
        replays = ImportanceSettings().replays_per_visit if args.replays is None else args.replays
        notes.append(f"replays per crawl {replays:g}: their shares over kept out-links, counted as link transfers"
                     f" of the service path: {', '.join(f'{r:,}' for r in REPLAYED)} per run")
    for lists, label in ((True, "with the followed lists"), (False, "links read one by one")):
        if CPU_PER_LINK[lists]:
            notes.append(f"service processes' CPU per link transfer, {label}: median"
                         f" {statistics.median(CPU_PER_LINK[lists]) * 1e6:.2f} us"
                         f" ({', '.join(f'{c * 1e6:.2f}' for c in CPU_PER_LINK[lists])})")
    if memory:
        notes.append(
            f"memory per URL at {args.memory_urls:,} URLs: engine {memory['engine']:.0f} B,"
            f" one object per URL {memory['objects']:.0f} B; snapshot {memory['snapshot']:.0f} B per URL"
            f" = {memory['engine'] * 1e6 / 2**20:.0f} MiB per million URLs in memory (URLs included);"
            f" out-links kept for replays {memory['kept_links']:.0f} B per crawled page with {KEPT_LINKS} links"
        )
    report(Comparison("importance_transfers", "link transfers/s", a, b,
                      {"pages": workload.pages, "transfers": workload.transfers, "batch": args.batch,
                       "replicas": args.replicas, "partitions": PARTITIONS, "memory_bytes_per_url": memory},
                      notes), args.json)


def main() -> None:
    asyncio.run(main_async(sys.argv[1:]))


if __name__ == "__main__":
    main()

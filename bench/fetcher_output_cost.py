"""CPU per page of what the fetcher does with a page after fetching it: the fetch result and
outcome produced to a broker, and the WARC records. CPU time, not wall time, so that a shared
machine disturbs the figures less; the two ways of each step interleaved in one run.

* ``--step publish``: :meth:`FetchWorker.publish` of each page (fetch result and outcome)
  to a local Tansu broker, flushed at the end; the service's way (bodies as fetched, lz4
  batches, the fetcher's producer linger) against the way before (bodies zlib level 1 in
  the fetcher, linger 5 ms). CPU of this process (librdkafka's threads included) per page,
  the broker's CPU per page printed beside it.
* ``--step warc``: :class:`WarcArchive` writing each page's response and request records
  against warcio's own gzip writer as the archive used it before (the body spooled to
  compute its digests, every record compressed at level 9); bytes written per page beside.

Pages: the simulated web's pages (seed 7), as the fetcher throughput benchmark serves them.

    .venv/bin/python -m bench.fetcher_output_cost --step publish|warc [--pages 2000 --repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import shutil
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from warcio.statusandheaders import StatusAndHeaders
from warcio.timeutils import datetime_to_iso_date
from warcio.warcwriter import WARCWriter

from bench.fetcher_throughput import web_config
from bench.harness import Comparison, base_parser, interleaved, report
from libs.common.kafka.producer import TopicProducer
from libs.common.kafka.settings import KafkaSettings
from libs.common.topics import DISCOVERED_URLS, FETCH_OUTCOMES, FETCH_RESULTS
from libs.common.wire import messages as pb
from libs.localinfra import LocalBroker, create_topics
from libs.localinfra.ports import free_port
from libs.simweb import build_web
from services.fetcher.clock import SystemClock
from services.fetcher.fetch_core import FetchAttempt
from services.fetcher.http.http_response import HttpExchange, HttpResponse
from services.fetcher.settings import FetcherSettings
from services.fetcher.warc.warc_archive import WarcArchive
from services.fetcher.worker import FetchWorker

HEADERS = [("Content-Type", "text/html; charset=utf-8"), ("Date", "Sun, 22 Nov 2026 06:00:00 GMT"),
           ("Server", "simweb"), ("Cache-Control", "max-age=600")]


def pages(count: int) -> list[tuple[str, bytes]]:
    web = build_web(web_config(7, max(1, count // 4), 4))
    found = ((url, web.html(url)) for url in sorted(web.pages))
    return [(url, html.encode()) for url, html in found if html is not None][:count]


def broker_cpu(broker: LocalBroker) -> float:
    pid = broker.pid()
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def publish_cost(broker: LocalBroker, items: list[tuple[str, bytes]], codec: str, linger_ms: int,
                       broker_ms: list[float]) -> float:
    """Pages per CPU second of publishing ``items`` (this process's CPU)."""
    kafka = KafkaSettings(bootstrap=broker.bootstrap, topic_prefix=f"cost_{uuid.uuid4().hex[:8]}.",
                          linger_ms=linger_ms, lag_metrics_interval_ms=0)
    create_topics(kafka.bootstrap, [(kafka.topic(t.name), t.partitions)
                                    for t in (FETCH_RESULTS, FETCH_OUTCOMES, DISCOVERED_URLS)])
    producer = TopicProducer(kafka, "cost")
    await producer.start()
    worker = FetchWorker(cast(Any, None), producer, SystemClock(), body_codec=codec,  # no fetching here
                         max_message_bytes=kafka.max_message_bytes)
    attempts = []
    for n, (url, body) in enumerate(items):
        host = url.split("/")[2]
        response = HttpResponse(url=url, final_url=url, status=200, headers=HEADERS, body=body,
                                content_type="text/html", elapsed=0.05)
        attempts.append((pb.FetchRequest(url=url, host=host, request_id=f"r{n}", attempt=1),
                         FetchAttempt(url, "ok", response, False, 0.0, "status 200")))
    cpu, broker_before = time.process_time(), broker_cpu(broker)
    for n, (request, attempt) in enumerate(attempts):
        worker.publish(request, attempt)
        if n % 64 == 0:
            await asyncio.sleep(0.002)  # pages arrive over time, as fetches end: the producer lingers
    await producer.flush()
    cpu = time.process_time() - cpu
    broker_ms.append((broker_cpu(broker) - broker_before) / len(items) * 1000)
    await producer.stop()
    return len(items) / cpu


def exchange(url: str, body: bytes) -> HttpExchange:
    return HttpExchange(url=url, method="GET", request_headers=[("User-Agent", "TrawlBot/0.1"), ("Accept", "*/*")],
                        started_at=time.time(), status=200, reason="OK", http_version="1.1", headers=HEADERS,
                        raw_body=body, truncated="", remote_address="")


def warc_now(folder: Path, items: list[tuple[str, bytes]], sizes: list[float]) -> float:
    archive = WarcArchive(folder, gzip_level=FetcherSettings().warc_gzip_level)
    folder.mkdir(parents=True)
    cpu = time.process_time()
    for url, body in items:
        archive._write(exchange(url, body))  # what the writer thread does with each exchange
    archive._close_file()
    cpu = time.process_time() - cpu
    sizes.append(sum(p.stat().st_size for p in folder.glob("*.warc.gz")) / len(items))
    return len(items) / cpu


def warc_before(folder: Path, items: list[tuple[str, bytes]], sizes: list[float]) -> float:
    """The archive's writing as it was: warcio's gzip writer (level 9), no length given (the body spooled)."""
    folder.mkdir(parents=True)
    cpu = time.process_time()
    with (folder / "before.warc.gz").open("wb") as out:
        writer = WARCWriter(out, gzip=True, warc_version="1.1")
        for url, body in items:
            date = datetime_to_iso_date(datetime.now(UTC), use_micros=True)
            http = StatusAndHeaders("200 OK", HEADERS, protocol="HTTP/1.1")
            record = writer.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http,
                                               warc_headers_dict={"WARC-Date": date})
            writer.write_record(record)
            request = StatusAndHeaders("GET / HTTP/1.1", [("User-Agent", "TrawlBot/0.1"), ("Accept", "*/*")],
                                       is_http_request=True)
            writer.write_record(writer.create_warc_record(
                url, "request", payload=io.BytesIO(b""), http_headers=request,
                warc_headers_dict={"WARC-Date": date, "WARC-Concurrent-To": record.rec_headers["WARC-Record-ID"]}))
    cpu = time.process_time() - cpu
    sizes.append((folder / "before.warc.gz").stat().st_size / len(items))
    return len(items) / cpu


async def compare(args: argparse.Namespace, items: list[tuple[str, bytes]], root: Path) -> Comparison:
    notes: list[str] = []
    runs = iter(range(1 << 30))
    if args.step == "publish":
        broker = LocalBroker(root / "broker", free_port())
        broker.ensure_started()
        now_ms: list[float] = []
        before_ms: list[float] = []
        linger = FetcherSettings().producer_linger_ms
        try:
            new, old = await interleaved(
                lambda: publish_cost(broker, items, "identity", linger, now_ms),
                lambda: publish_cost(broker, items, "zlib", 5, before_ms),
                args.repeat, (f"publish: bodies as fetched, lz4 batches, linger {linger} ms",
                              "publish before: zlib level 1 bodies, lz4 batches, linger 5 ms"))
        finally:
            broker.stop()
        notes.append(f"broker CPU per page: {sorted(now_ms)[len(now_ms) // 2]:.3f} ms now, "
                     f"{sorted(before_ms)[len(before_ms) // 2]:.3f} ms before")
    else:
        now_sizes: list[float] = []
        before_sizes: list[float] = []

        async def now() -> float:
            return warc_now(root / f"now-{next(runs)}", items, now_sizes)

        async def before() -> float:
            return warc_before(root / f"before-{next(runs)}", items, before_sizes)

        new, old = await interleaved(now, before, args.repeat,
                                     ("WarcArchive: warcio records, one gzip member each at level 1",
                                      "warcio's gzip writer as before (level 9, body spooled)"))
        notes.append(f"bytes per page written: {now_sizes[0]:,.0f} now, {before_sizes[0]:,.0f} before")
    mean = sum(len(b) for _, b in items) / len(items)
    notes.append(f"mean page {mean:,.0f} bytes; 1-minute load at the end {os.getloadavg()[0]:.1f} "
                 f"on {os.cpu_count()} CPUs")
    return Comparison(f"fetcher output cost ({args.step})", "pages per CPU second", new, old,
                      {"pages": len(items), "step": args.step}, notes)


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--step", choices=("publish", "warc"), default="publish")
    parser.add_argument("--pages", type=int, default=2000)
    args = parser.parse_args()
    items = pages(args.pages)
    root = Path(tempfile.mkdtemp(prefix="trawl-bench-output-", dir="/var/tmp"))
    try:
        report(asyncio.run(compare(args, items, root)), args.json)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

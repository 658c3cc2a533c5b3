"""One fetcher service in process on the real broker, a simulated web with hostile hosts, and its outputs.

The fetcher is built by its own factory (``services.fetcher.main.build``) from
environment settings, reaches the web through the static host map (every
simulated and hostile host pinned to 127.0.0.1, allowed by name through the SSRF
guard), and writes WARC files to a temporary folder. Requests are produced to
its input topic; outcomes, results and discoveries are collected from its
output topics by one consumer group.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from libs.common.kafka.consumer import Record, TopicConsumer, TopicHandler
from libs.common.kafka.producer import TopicProducer
from libs.common.kafka.settings import KafkaSettings
from libs.common.service import Service
from libs.common.topics import ALL_TOPICS, DISCOVERED_URLS, FETCH_OUTCOMES, FETCH_REQUESTS, FETCH_RESULTS
from libs.common.wire import messages as pb
from libs.localinfra import create_topics
from libs.simweb import SimClock, SimWeb, SimWebServer
from libs.simweb.hostile import HOSTILE_HOSTS, HostileWeb, hostile_host
from libs.simweb.request_log import RequestRecord
from libs.simweb.tls import self_signed_context
from services.fetcher.main import build

RIG_SETTINGS = {
    "TRAWL_FETCHER_MIN_DELAY": "0.1",
    "TRAWL_FETCHER_RESPONSE_TIME_FACTOR": "0",
    "TRAWL_FETCHER_TOTAL_TIMEOUT": "4",
    "TRAWL_FETCHER_CONNECT_TIMEOUT": "2",
    "TRAWL_FETCHER_MAX_BODY_BYTES": str(1024 * 1024),
    "TRAWL_FETCHER_MIN_BYTES_PER_SECOND": "100",
    "TRAWL_FETCHER_RATE_GRACE": "1",
    "TRAWL_FETCHER_MAX_BACKOFF": "4",
    "TRAWL_FETCHER_PARK_AFTER_FAILURES": "3",
    "TRAWL_FETCHER_HANDOFF_DELAY": "0.2",
    "TRAWL_KAFKA_SESSION_TIMEOUT_MS": "3000",
    "TRAWL_KAFKA_HEARTBEAT_INTERVAL_MS": "500",
    "TRAWL_KAFKA_LAG_METRICS_INTERVAL_MS": "0",
}


class Collector:
    """Keeps every record of the output topics."""

    def __init__(self) -> None:
        self.records: list[Record[Any]] = []

    async def __call__(self, records: Sequence[Record[Any]]) -> None:
        self.records.extend(records)

    def values(self, topic_name: str) -> list[Any]:
        return [r.value for r in self.records if r.topic.name == topic_name]


class FetcherRig:
    """See the module docstring; ``web`` is the ordinary simulated web served beside the hostile hosts."""

    def __init__(self, bootstrap: str, web: SimWeb, folder: Path, env: Mapping[str, str] | None = None) -> None:
        prefix = f"fetcher_{uuid.uuid4().hex[:10]}."
        self.kafka = KafkaSettings(bootstrap=bootstrap, topic_prefix=prefix, session_timeout_ms=3000,
                                   heartbeat_interval_ms=500, lag_metrics_interval_ms=0)
        self.web = web
        self.warc_dir = folder / "warc"
        self.server = SimWebServer(web, SimClock.frozen(web.start_time), hostile=HostileWeb(),
                                   tls=self_signed_context(folder / "tls"))
        self._extra_env = dict(env or {})
        self._prefix = prefix
        self.collector = Collector()
        self.service: Service | None = None
        self._producer = TopicProducer(self.kafka, "rig")
        self._outputs: TopicConsumer | None = None

    @property
    def port(self) -> int:
        return self.server.port

    def url(self, part: str, path: str = "/", *, https: bool = False) -> str:
        """The URL of ``path`` on the hostile host playing ``part``."""
        if https:
            return f"https://{hostile_host(part)}:{self.server.tls_port}{path}"
        return f"http://{hostile_host(part)}:{self.port}{path}"

    def env(self) -> dict[str, str]:
        hosts = [*self.web.hosts, *(hostile_host(p) for p in HOSTILE_HOSTS if p != "no-such-host")]
        return {
            **RIG_SETTINGS,
            "TRAWL_KAFKA_BOOTSTRAP": self.kafka.bootstrap,
            "TRAWL_TOPIC_PREFIX": self._prefix,
            "TRAWL_FETCHER_GROUP": f"{self._prefix}fetcher",
            "TRAWL_GRPC_ADDRESS": "127.0.0.1:0",
            "TRAWL_FETCHER_HOST_MAP": ",".join(f"{h}=127.0.0.1" for h in hosts),
            "TRAWL_FETCHER_SSRF_ALLOW": "*.test",
            "TRAWL_FETCHER_WARC_DIR": str(self.warc_dir),
            **self._extra_env,
        }

    async def start(self) -> None:
        create_topics(self.kafka.bootstrap, [(self.kafka.topic(t.name), t.partitions) for t in ALL_TOPICS])
        await self.server.start()
        await self._producer.start()
        self._outputs = TopicConsumer(
            self.kafka, service="rig", group_id=f"{self._prefix}rig",
            handlers=[TopicHandler(t, self.collector) for t in (FETCH_OUTCOMES, FETCH_RESULTS, DISCOVERED_URLS)],
            producer=self._producer,
        )
        await self._outputs.start()
        self.service = await build(self.env())
        await self.service.start()

    async def stop(self) -> None:
        if self.service is not None:
            await self.service.stop()
        if self._outputs is not None:
            await self._outputs.stop(drain_timeout=5.0)
        await self._producer.stop()
        await self.server.stop()

    async def fetch(self, urls: Iterable[str], timeout: float = 60.0) -> dict[str, pb.FetchOutcome]:
        """Request every URL (in order, one request id each) and wait for all their outcomes, by URL."""
        ids = {}
        for url in urls:
            request_id = uuid.uuid4().hex
            ids[request_id] = url
            host = url.split("/")[2].rsplit(":", 1)[0]
            self._producer.send(FETCH_REQUESTS, host, pb.FetchRequest(
                request_id=request_id, url=url, host=host, attempt=1, scheduled_at_ms=int(time.time() * 1000)))
        await self._producer.flush()
        deadline = time.monotonic() + timeout
        while True:
            outcomes = {o.request_id: o for o in self.collector.values(FETCH_OUTCOMES.name) if o.request_id in ids}
            if len(outcomes) == len(ids):
                return {ids[rid]: outcome for rid, outcome in outcomes.items()}
            assert time.monotonic() < deadline, f"outcomes missing for {sorted(set(ids.values()))}"
            await asyncio.sleep(0.1)

    def result(self, url: str) -> pb.FetchResult | None:
        found = [r for r in self.collector.values(FETCH_RESULTS.name) if r.url == url]
        return found[-1] if found else None

    def log(self, part: str) -> list[RequestRecord]:
        """What the server saw for the hostile host playing ``part``, robots.txt included."""
        return [r for r in self.server.request_log if r.host == hostile_host(part)]

    async def settled_log(self, part: str, requests: int, timeout: float = 10.0) -> list[RequestRecord]:
        """:meth:`log` once it holds ``requests`` records or ``timeout`` has passed.

        The server records a request when its handler ends, and a handler dripping a body the
        fetcher gave up on ends only at its next write, which may come after the outcome.
        """
        deadline = asyncio.get_running_loop().time() + timeout
        while len(records := self.log(part)) < requests and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
        return records

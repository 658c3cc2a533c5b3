"""The fetcher and the extractor as service processes on the real broker, against the hostile simulated web.

The simulated web (every hostile host of :mod:`libs.simweb.hostile`) is served
from a thread of the test process; the two services run as their own processes
(``python -m services.fetcher``, ``python -m services.extractor``), configured
like a deployment except for shorter timeouts: every memory bound (body cap,
concurrency, batch size, HTML cap, link cap) keeps its default. The fetcher
reaches the web through a static host map (every hostile host pinned to
127.0.0.1, allowed by name through the SSRF guard). Requests are produced to the
fetcher's input topic, and hand-made fetch results straight to the extractor's;
every output topic is read back. :func:`peak_rss_bytes` reads a process's peak
resident set (``VmHWM``) from ``/proc``.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from cli.stack import health
from cli.stack.processes import ServiceProcess
from libs.common.topics import (
    ALL_TOPICS,
    DEAD_LETTERS,
    DOCUMENTS,
    FETCH_OUTCOMES,
    FETCH_REQUESTS,
    FETCH_RESULTS,
    PAGE_LINKS,
    Topic,
)
from libs.common.wire import messages as pb
from libs.localinfra import create_topics
from libs.localinfra.ports import free_port
from libs.simweb import SimClock, SimWebConfig, SimWebServer, build_web
from libs.simweb.hostile import HOSTILE_HOSTS, HostileWeb, hostile_host
from libs.simweb.request_log import RequestRecord

SERVICE_SETTINGS = {
    "TRAWL_FETCHER_MIN_DELAY": "0.1",
    "TRAWL_FETCHER_RESPONSE_TIME_FACTOR": "0",
    "TRAWL_FETCHER_TOTAL_TIMEOUT": "4",
    "TRAWL_FETCHER_CONNECT_TIMEOUT": "2",
    "TRAWL_FETCHER_MIN_BYTES_PER_SECOND": "100",
    "TRAWL_FETCHER_RATE_GRACE": "1",
    "TRAWL_FETCHER_HANDOFF_DELAY": "0",
    "TRAWL_KAFKA_SESSION_TIMEOUT_MS": "3000",
    "TRAWL_KAFKA_HEARTBEAT_INTERVAL_MS": "500",
    "TRAWL_KAFKA_LAG_METRICS_INTERVAL_MS": "0",
    "TRAWL_LOG_LEVEL": "INFO",
}
OUTPUT_TOPICS = (FETCH_OUTCOMES, FETCH_RESULTS, PAGE_LINKS, DOCUMENTS, DEAD_LETTERS)


def peak_rss_bytes(pid: int) -> int:
    """The process's peak resident set size (``VmHWM`` of ``/proc/<pid>/status``), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmHWM for process {pid}")


class _WebThread:
    """The hostile simulated web, served by an event loop in a thread of its own."""

    def __init__(self) -> None:
        web = build_web(SimWebConfig(seed=3, hosts=2, pages=10, hub_host_ratio=0.0))
        hostile = HostileWeb()
        hostile.prepare()
        self.server = SimWebServer(web, SimClock.frozen(web.start_time), hostile=hostile)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="hostile-web", daemon=True)

    def start(self) -> int:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self._loop).result(30)
        return self.server.port

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


class Outputs:
    """Every record of the output topics, read from the beginning without a consumer group."""

    def __init__(self, bootstrap: str, prefix: str) -> None:
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{prefix}reader",
                                   "enable.auto.commit": False, "fetch.max.bytes": 16 * 1024 * 1024})
        self._types = {prefix + t.name: t.message_type for t in OUTPUT_TOPICS}
        self._consumer.assign([TopicPartition(prefix + t.name, p, OFFSET_BEGINNING)
                               for t in OUTPUT_TOPICS for p in range(t.partitions)])
        self._prefix = prefix
        self.by_topic: dict[str, list[Any]] = defaultdict(list)

    def poll(self, seconds: float = 0.5) -> None:
        for msg in self._consumer.consume(1000, seconds):
            if msg.error() is None:
                value = self._types[msg.topic() or ""]()
                value.ParseFromString(msg.value() or b"")
                self.by_topic[(msg.topic() or "")[len(self._prefix):]].append(value)

    def values(self, topic: Topic) -> list[Any]:
        return self.by_topic[topic.name]

    def close(self) -> None:
        self._consumer.close()


class HostileRig:
    """See the module docstring. ``start``/``stop``; ``fetch`` requests URLs and waits for their outcomes."""

    def __init__(self, bootstrap: str, logs: Path) -> None:
        self.bootstrap = bootstrap
        self.prefix = f"hostile_{uuid.uuid4().hex[:10]}."
        self.web = _WebThread()
        self.port = 0
        self.logs = logs
        self.processes: dict[str, ServiceProcess] = {}
        self.outputs: Outputs | None = None
        self._producer = Producer({"bootstrap.servers": bootstrap, "message.max.bytes": 8 * 1024 * 1024})
        self._requests: dict[str, str] = {}

    def url(self, part: str, path: str = "/") -> str:
        return f"http://{hostile_host(part)}:{self.port}{path}"

    def _env(self, name: str, grpc_port: int) -> dict[str, str]:
        hosts = [hostile_host(p) for p in HOSTILE_HOSTS if p != "no-such-host"]
        return {
            **SERVICE_SETTINGS,
            "TRAWL_KAFKA_BOOTSTRAP": self.bootstrap,
            "TRAWL_TOPIC_PREFIX": self.prefix,
            "TRAWL_FETCHER_GROUP": f"{self.prefix}fetcher",
            "TRAWL_EXTRACTOR_GROUP": f"{self.prefix}extractor",
            "TRAWL_GRPC_ADDRESS": f"127.0.0.1:{grpc_port}",
            "TRAWL_FETCHER_HOST_MAP": ",".join(f"{h}=127.0.0.1" for h in hosts),
            "TRAWL_FETCHER_SSRF_ALLOW": "*.hostile.test",
        }

    def start(self, timeout: float = 60.0) -> None:
        create_topics(self.bootstrap, [(self.prefix + t.name, t.partitions) for t in ALL_TOPICS])
        self.port = self.web.start()
        self.outputs = Outputs(self.bootstrap, self.prefix)
        ports = {name: free_port() for name in ("fetcher", "extractor")}
        for name, port in ports.items():
            self.processes[name] = ServiceProcess(name, self._env(name, port), self.logs / f"{name}.log")
            self.processes[name].start()
        deadline = time.monotonic() + timeout
        for name, port in ports.items():
            while health.check(f"127.0.0.1:{port}") != "SERVING":
                assert self.processes[name].alive(), f"{name} exited: see {self.processes[name].log_path}"
                assert time.monotonic() < deadline, f"{name} not serving within {timeout}s"
                time.sleep(0.2)

    def stop_services(self) -> dict[str, int | None]:
        """SIGTERM to both services (they drain); their exit codes."""
        return {name: process.stop(timeout=30) for name, process in self.processes.items()}

    def stop(self) -> None:
        self.stop_services()
        if self.outputs is not None:
            self.outputs.close()
        self.web.stop()

    def request(self, urls: Iterable[str]) -> None:
        """Asks the fetcher for every URL (one request id each)."""
        for url in urls:
            request_id = uuid.uuid4().hex
            self._requests[request_id] = url
            host = url.split("/")[2].rsplit(":", 1)[0]
            request = pb.FetchRequest(request_id=request_id, url=url, host=host, attempt=1, depth=1,
                                      scheduled_at_ms=int(time.time() * 1000))
            self._producer.produce(self.prefix + FETCH_REQUESTS.name, key=host.encode(),
                                   value=request.SerializeToString())
        assert self._producer.flush(30) == 0

    def send_results(self, results: Iterable[pb.FetchResult]) -> None:
        """Hands fetch results straight to the extractor."""
        for result in results:
            self._producer.produce(self.prefix + FETCH_RESULTS.name, key=result.host.encode(),
                                   value=result.SerializeToString())
        assert self._producer.flush(30) == 0

    def outcomes(self) -> dict[str, pb.FetchOutcome]:
        """The outcome of every requested URL received so far, by URL."""
        assert self.outputs is not None
        return {self._requests[o.request_id]: o for o in self.outputs.values(FETCH_OUTCOMES)
                if o.request_id in self._requests}

    def wait(self, done: Any, timeout: float, what: Callable[[], str]) -> None:
        """Reads the outputs until ``done()`` is true."""
        assert self.outputs is not None
        deadline = time.monotonic() + timeout
        while not done():
            for name, process in self.processes.items():
                assert process.alive(), f"the {name} died: see {process.log_path}"
            assert time.monotonic() < deadline, f"{what()} not there within {timeout}s"
            self.outputs.poll()

    def peak_rss(self) -> dict[str, int]:
        return {name: peak_rss_bytes(p.pid) for name, p in self.processes.items() if p.pid is not None}

    def request_log(self) -> list[RequestRecord]:
        return self.web.server.request_log

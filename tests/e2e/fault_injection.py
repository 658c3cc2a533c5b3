"""Faults for the end-to-end tests: services killed on a seeded schedule, replicas, a PostgreSQL outage, poison.

- :class:`ServiceChaos`: one thread per service kills its process with SIGKILL a
  number of times, each at a random moment after the process serves again
  (delays drawn up front, seeded per service, logged), and restarts it after a
  random pause; every kill is logged with the crawl's progress at that moment.
- :class:`Replicas`: more processes of a service in the same consumer group.
- :class:`PostgresOutage`: restarts a test's own PostgreSQL server or keeps it
  away for a while, and measures how long it was away.
- :class:`BrokerRestart`: kills a test's own broker with SIGKILL and starts it again on
  the same port (Tansu's memory-only build: it comes back empty).
- :func:`supervised`: the local stack's supervisor over a test's service processes, in a
  thread, restarting those that exit.
- :func:`inject_poison` / :func:`read_dead_letters`: undecodable bytes on topics,
  and what the dead-letter topic holds.
- :func:`wait_until_quiet`: the crawl is over when the frontier is idle, every
  consumer group has consumed every topic to its end and the linkbase's outbox is
  empty, all holding for a while (the admin API alone would call a crawl whose
  linkbase is restarting done).
"""

from __future__ import annotations

import logging
import os
import random
import signal
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from prometheus_client.parser import text_string_to_metric_families

from cli.stack import health
from cli.stack.processes import ServiceProcess, Supervisor
from libs.common.kafka.ends import read_to_end
from libs.common.kafka.lag import committed_offsets, group_lag
from libs.common.topics import DEAD_LETTERS, Topic
from libs.common.wire import messages as pb
from libs.localinfra import LocalBroker, LocalPostgres
from libs.localinfra.ports import free_port
from tests.e2e.crawl_harness import CrawlStack

log = logging.getLogger(__name__)


POISON = b"\xff" * 12 + b"poison"
"""Not a protobuf message of any type: a varint longer than ten bytes."""


def fetched_count(dsn: str) -> int:
    """Pages the frontier holds as fetched (-1 while the database cannot be reached)."""
    try:
        with psycopg.connect(dsn, connect_timeout=2) as conn:
            row = conn.execute("SELECT count(*) FROM scheduler.frontier WHERE status = 'fetched'").fetchone()
            return int(row[0]) if row else 0
    except psycopg.Error:
        return -1


def wait_serving(address: str, process: ServiceProcess, timeout: float) -> float:
    """Waits until the process answers SERVING; returns how long that took."""
    started = time.monotonic()
    while health.check(address) != "SERVING":
        assert process.alive(), f"{process.name} exited: see {process.log_path}"
        assert time.monotonic() - started < timeout, f"{process.name} not serving within {timeout}s"
        time.sleep(0.2)
    return time.monotonic() - started


def wait_fetched(dsn: str, count: int, timeout: float = 240.0, alive: Callable[[], None] | None = None) -> None:
    """Waits until ``count`` pages are fetched; ``alive`` (asserting every process runs) cuts a doomed wait short."""
    deadline = time.monotonic() + timeout
    while fetched_count(dsn) < count:
        assert time.monotonic() < deadline, f"fewer than {count} pages fetched in {timeout}s"
        if alive is not None:
            alive()
        time.sleep(0.25)


# -- services killed ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Kill:
    service: str
    pid: int
    at: float  # seconds since the chaos started
    wall: float  # time.time() of the kill, to compare with the simulated web's request log
    uptime: float  # seconds the process had been serving when it was killed
    down: float  # seconds before it was started again
    fetched: int  # pages fetched when it was killed


class ServiceChaos:
    """Kills each service ``kills`` times at random moments and restarts it (see the module docstring).

    ``processes`` and ``addresses`` name each service's process and gRPC address.
    A process is killed ``uptime`` seconds (uniform in the range, from its
    service's own ``random.Random(f"{seed}:{service}")``) after it answered
    SERVING, so that each incarnation works for a while before it dies (a
    restart costs about ten seconds on a loaded machine: kills at fixed times
    would mostly hit processes still starting), and started again ``down``
    seconds after the kill. The delays are drawn up front and written to the
    journal, and so is every kill. Services run their schedules at the same
    time, so kills of different services overlap.
    """

    def __init__(self, processes: Mapping[str, ServiceProcess], addresses: Mapping[str, str], dsn: str, *,
                 seed: int, kills: int, uptime: tuple[float, float], down: tuple[float, float],
                 journal: Path, start_timeout: float = 120.0) -> None:
        self._processes = processes
        self._addresses = addresses
        self._dsn = dsn
        self._journal = journal
        self._start_timeout = start_timeout
        self._lock = threading.Lock()
        self._errors: list[str] = []
        self._halt = threading.Event()  # the test is ending: restart nothing more
        self.kills: list[Kill] = []
        self._started = 0.0
        self.schedule: dict[str, list[tuple[float, float]]] = {}
        for name in processes:
            rng = random.Random(f"{seed}:{name}")
            self.schedule[name] = [(rng.uniform(*uptime), rng.uniform(*down)) for _ in range(kills)]
        with journal.open("a") as out:
            for name, plan in self.schedule.items():
                out.write(f"schedule {name}: " + ", ".join(f"{up:.2f}s serving, down {d:.2f}s" for up, d in plan)
                          + "\n")

    def run(self) -> list[Kill]:
        """Runs every service's schedule to its end; returns the kills in time order."""
        self._started = time.monotonic()
        threads = [threading.Thread(target=self._run_service, args=(name,), name=f"chaos-{name}", daemon=True)
                   for name in self._processes]
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        finally:
            self._halt.set()
        assert not self._errors, self._errors
        return sorted(self.kills, key=lambda k: k.at)

    def _record(self, kill: Kill) -> None:
        line = (f"{kill.at:7.2f}s (wall {kill.wall:.3f}) kill {kill.service} (pid {kill.pid})"
                f" after {kill.uptime:.2f}s serving, down {kill.down:.2f}s, {kill.fetched} pages fetched")
        log.warning("chaos: %s", line)
        with self._lock:
            self.kills.append(kill)
            with self._journal.open("a") as out:
                out.write(line + "\n")

    def _run_service(self, name: str) -> None:
        process = self._processes[name]
        try:
            for uptime, down in self.schedule[name]:
                wait_serving(self._addresses[name], process, self._start_timeout)
                if self._halt.wait(uptime):
                    return
                pid = process.pid
                assert pid is not None and process.alive(), f"{name} died on its own: see {process.log_path}"
                process.kill()
                self._record(Kill(name, pid, time.monotonic() - self._started, time.time(), uptime, down,
                                  fetched_count(self._dsn)))
                if self._halt.wait(down):
                    return
                process.start()
            wait_serving(self._addresses[name], process, self._start_timeout)
        except AssertionError as exc:
            with self._lock:
                self._errors.append(str(exc))


# -- replicas ---------------------------------------------------------------------------------------


class Replicas:
    """More processes of the stack's services, each in its service's consumer group, with a metrics port."""

    def __init__(self, stack: CrawlStack, logs: Path) -> None:
        self._stack = stack
        self._logs = logs
        self.processes: dict[str, ServiceProcess] = {}
        self.addresses: dict[str, str] = {}
        self.metrics_ports: dict[str, int] = {}

    def start(self, service: str, name: str) -> None:
        address, metrics_port = f"127.0.0.1:{free_port()}", free_port()
        env = {**self._stack.processes[service].env, "TRAWL_GRPC_ADDRESS": address,
               "TRAWL_METRICS_PORT": str(metrics_port)}
        process = ServiceProcess(name, env, self._logs / f"{name}.log", module=f"services.{service}")
        process.start()
        self.processes[name], self.addresses[name], self.metrics_ports[name] = process, address, metrics_port

    def wait_serving(self, timeout: float = 120.0) -> None:
        for name, process in self.processes.items():
            wait_serving(self.addresses[name], process, timeout)

    def stop_all(self) -> None:
        for process in self.processes.values():
            process.stop(timeout=60)


def committed_topics(bootstrap: str, group: str, timeout: float = 10.0) -> set[str]:
    """The topics a consumer group has committed offsets of: those it consumes, once it consumed anything."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    return {topic for topic, _partition in committed_offsets(admin, group, None, timeout)}


def dead_letter_metric(metrics_port: int) -> dict[tuple[str, str, str], float]:
    """``trawl_dead_letters_total`` of one process: (service, topic, reason) -> count, where not 0.

    (Every consumer exports each of its topics and reasons from the start, at 0.)
    """
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    counts: dict[tuple[str, str, str], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "trawl_dead_letters_total" and sample.value:
                labels = sample.labels
                counts[(labels["service"], labels["topic"], labels["reason"])] = sample.value
    return counts


# -- poison messages --------------------------------------------------------------------------------


def inject_poison(bootstrap: str, prefix: str, topics: Sequence[Topic], key: str = "poison.test") -> None:
    """Produces :data:`POISON` once on each topic and waits until the broker has them."""
    producer = Producer({"bootstrap.servers": bootstrap})
    for topic in topics:
        producer.produce(prefix + topic.name, key=key.encode(), value=POISON)
    assert producer.flush(30) == 0, "poison messages not delivered"


def read_dead_letters(bootstrap: str, prefix: str, timeout: float = 20.0) -> list[pb.DeadLetter]:
    """Every letter on the crawl's dead-letter topic, in order."""
    letters: list[pb.DeadLetter] = []
    topic = prefix + DEAD_LETTERS.name
    starts = {(topic, p): 0 for p in range(DEAD_LETTERS.partitions)}
    ends = read_to_end(bootstrap, starts, timeout=timeout, purpose="dead-letters",
                       on_message=lambda m: letters.append(pb.DeadLetter.FromString(m.value())))
    assert len(ends) == len(starts), "the end of the dead-letter topic was not reached"
    return letters


# -- PostgreSQL away ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outage:
    kind: str
    away: float  # seconds from the stop to the server accepting sessions again
    fetched_before: int


class PostgresOutage:
    """Faults of a PostgreSQL server that belongs to the test alone (it is stopped here)."""

    def __init__(self, server: LocalPostgres) -> None:
        self._server = server
        self.outages: list[Outage] = []

    def restart(self, dsn: str) -> Outage:
        """A crash and restart: every session is cut at once (``immediate``), the server recovers and comes back."""
        return self._away("restart", dsn, 0.0, "immediate")

    def refuse(self, dsn: str, seconds: float) -> Outage:
        """The server is down for ``seconds``: sessions are cut, and every new connection is refused."""
        return self._away(f"refuse {seconds:.0f}s", dsn, seconds, "fast")

    def _away(self, kind: str, dsn: str, seconds: float, mode: str) -> Outage:
        fetched = fetched_count(dsn)
        started = time.monotonic()
        self._server.stop(mode)  # type: ignore[arg-type]  # one of the StopMode literals
        assert fetched_count(dsn) == -1, "the database still answers after the stop"
        time.sleep(seconds)
        self._server.ensure_started()
        outage = Outage(kind, time.monotonic() - started, fetched)
        log.warning("postgres: %s, away %.2fs, %d pages fetched before", kind, outage.away, fetched)
        self.outages.append(outage)
        return outage


# -- the broker restarted ------------------------------------------------------------------------------


@dataclass(frozen=True)
class BrokerBounce:
    killed_at: float  # time.time() of the SIGKILL
    back_at: float  # time.time() the broker answered again
    fetched_before: int  # pages the frontier held as fetched at the kill


class BrokerRestart:
    """A broker that belongs to the test alone, killed as a crash would and started again on its port."""

    def __init__(self, broker: LocalBroker) -> None:
        self._broker = broker
        self.bounces: list[BrokerBounce] = []

    def bounce(self, dsn: str, down: float) -> BrokerBounce:
        pid = self._broker.pid()
        assert pid is not None, "the test's broker is not running"
        fetched = fetched_count(dsn)
        os.kill(pid, signal.SIGKILL)
        killed = time.time()
        time.sleep(down)
        self._broker.ensure_started()
        bounce = BrokerBounce(killed, time.time(), fetched)
        log.warning("broker: killed with %d pages fetched, back after %.2fs", fetched, bounce.back_at - killed)
        self.bounces.append(bounce)
        return bounce


@contextmanager
def supervised(processes: Sequence[ServiceProcess]) -> Iterator[Supervisor]:
    """Restarts the (already started) processes that exit, as ``trawl up``'s supervisor does, until the block ends."""
    supervisor = Supervisor(list(processes))
    thread = threading.Thread(target=supervisor.run, kwargs={"install_signals": False, "start": False,
                                                             "stop": False}, name="supervisor", daemon=True)
    thread.start()
    try:
        yield supervisor
    finally:
        supervisor.request_stop()
        thread.join(timeout=5)


# -- the end of a crawl ----------------------------------------------------------------------------------


def crawl_quiet(stack: CrawlStack) -> str | None:
    """None when nothing is left to do, else what is still busy."""
    try:
        with psycopg.connect(stack.dsn, connect_timeout=2) as conn:
            busy = conn.execute(
                "SELECT count(*) FROM scheduler.frontier WHERE status IN ('queued', 'in_flight')").fetchone()
            pending = conn.execute("SELECT count(*) FROM linkbase.urls WHERE announce_state = 1").fetchone()
    except psycopg.Error as exc:
        return f"database: {exc}"
    if busy and busy[0]:
        return f"{busy[0]} URLs queued or in flight"
    if pending and pending[0]:
        return f"{pending[0]} discoveries not announced"
    for service, group in CrawlStack.groups(stack.prefix).items():
        try:
            topics = sorted(committed_topics(stack.bootstrap, group))
            behind = sum(p.lag for p in group_lag(stack.bootstrap, group, topics))
        except Exception as exc:  # the broker's admin API may time out under load: not quiet yet
            return f"lag of {group}: {exc}"
        if behind:
            return f"{service} is {behind} messages behind"
    return None


def wait_until_quiet(stack: CrawlStack, timeout: float = 240.0, settle: float = 3.0,
                     alive: Callable[[], None] = lambda: None) -> float:
    """Waits until :func:`crawl_quiet` holds for ``settle`` seconds; returns the seconds waited.

    ``alive`` is called at every check (assert there that no process died).
    """
    started = time.monotonic()
    quiet_since: float | None = None
    busy: str | None = "not checked"
    while True:
        alive()
        busy = crawl_quiet(stack)
        now = time.monotonic()
        if busy is None:
            quiet_since = quiet_since or now
            if now - quiet_since >= settle:
                return now - started
        else:
            quiet_since = None
        assert now - started < timeout, f"crawl not done within {timeout}s: {busy}"
        time.sleep(0.5)

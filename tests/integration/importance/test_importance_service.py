"""The importance service as processes: killed with SIGKILL mid-crawl and rebalanced, it loses and creates no cash."""

from __future__ import annotations

import asyncio
import random
import signal
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from confluent_kafka import Producer

from cli.stack.processes import ServiceProcess
from libs.common.db.pool import Database
from libs.common.db.settings import DatabaseSettings
from libs.common.topics import CASH_TRANSFERS, DEAD_LETTERS, IMPORTANCE_UPDATES, PAGE_LINKS
from libs.common.url_keys import key_text, normalized_fingerprint
from libs.localinfra import create_topics
from libs.localinfra.ports import free_port
from tests.integration.importance.importance_web import PARTITIONS, TOTAL, WEB, audit, crawl_order, page_links

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def produce(bootstrap: str, topic: str, nodes: list[int]) -> dict[int, int]:
    """Sends the page links of ``nodes``; returns how many went to each partition."""
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random", "linger.ms": 5})
    counts: dict[int, int] = {}

    def delivered(err: Any, msg: Any) -> None:
        assert err is None, err
        counts[msg.partition()] = counts.get(msg.partition(), 0) + 1

    for node in nodes:
        msg = page_links(node)
        producer.produce(topic, key=key_text(normalized_fingerprint(msg.url)).encode(), value=msg.SerializeToString(),
                         on_delivery=delivered)
    assert producer.flush(30) == 0
    return counts


def progress(dsn: str) -> tuple[dict[int, int], float]:
    """Page links applied per partition, and the cash in flight (sent minus received), as committed."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT partition, applied, totals FROM importance.partitions").fetchall()
    # Stored per incarnation of the topic ("trawl.page-links@<id>": libs/common/kafka/stored_offsets.py).
    applied = {int(p): max((int(v) for k, v in a.items() if k.partition("@")[0] == PAGE_LINKS.name), default=0)
               for p, a, _ in rows}
    in_flight = sum(float(t["sent"]) - float(t["received"]) for _, _, t in rows)
    return applied, in_flight


def wait_until_applied(dsn: str, produced: dict[int, int], processes: list[ServiceProcess],
                       timeout: float = 150.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            applied, in_flight = progress(dsn)
        except psycopg.errors.UndefinedTable:
            applied, in_flight = {}, 1.0
        if all(applied.get(p, 0) >= n for p, n in produced.items()) and abs(in_flight) < 1e-9:
            return
        for process in processes:
            assert process.alive(), f"{process.name} exited: see {process.log_path}"
        assert time.monotonic() < deadline, f"not applied within {timeout}s: {applied} of {produced}"
        time.sleep(0.3)


def merged(a: dict[int, int], b: dict[int, int]) -> dict[int, int]:
    return {p: a.get(p, 0) + b.get(p, 0) for p in set(a) | set(b)}


def test_sigkill_and_rebalances_lose_no_cash_and_apply_each_page_once(
    kafka_bootstrap: str, fresh_db: str, unique_name: Any, tmp_path: Path
) -> None:
    prefix = unique_name("impsvc") + "."
    create_topics(kafka_bootstrap, [(prefix + t.name, t.partitions)
                                    for t in (PAGE_LINKS, CASH_TRANSFERS, IMPORTANCE_UPDATES, DEAD_LETTERS)])
    env = {
        "TRAWL_KAFKA_BOOTSTRAP": kafka_bootstrap,
        "TRAWL_DATABASE_URL": fresh_db,
        "TRAWL_TOPIC_PREFIX": prefix,
        "TRAWL_IMPORTANCE_GROUP": prefix + "importance",
        "TRAWL_KAFKA_SESSION_TIMEOUT_MS": "6000",
        "TRAWL_KAFKA_HEARTBEAT_INTERVAL_MS": "500",
        "TRAWL_IMPORTANCE_BATCH_SIZE": "25",
        "TRAWL_IMPORTANCE_SNAPSHOT_IDLE_SECONDS": "0.5",
    }

    def process(name: str) -> ServiceProcess:
        return ServiceProcess("importance", {**env, "TRAWL_GRPC_ADDRESS": f"127.0.0.1:{free_port()}"},
                              tmp_path / f"{name}.log")

    order = crawl_order()
    thirds = [order[: len(order) // 3], order[len(order) // 3 : 2 * len(order) // 3], order[2 * len(order) // 3 :]]
    topic = prefix + PAGE_LINKS.name
    a, b = process("a"), process("b")
    running = [a, b]
    try:
        a.start()
        b.start()
        produced = produce(kafka_bootstrap, topic, thirds[0])
        wait_until_applied(fresh_db, produced, running)

        produced = merged(produced, produce(kafka_bootstrap, topic, thirds[1]))
        time.sleep(random.Random(7).uniform(0.05, 0.4))  # somewhere in the middle of applying it
        a.signal(signal.SIGKILL)
        running.remove(a)
        c = process("c")
        c.start()
        running.append(c)
        wait_until_applied(fresh_db, produced, running)

        produced = merged(produced, produce(kafka_bootstrap, topic, thirds[2]))
        b.signal(signal.SIGKILL)
        running.remove(b)
        d = process("d")
        d.start()
        running.append(d)
        wait_until_applied(fresh_db, produced, running)
    finally:
        for p in running:
            p.stop(timeout=30)
        a.kill()
        b.kill()

    result = asyncio.run(_audit(fresh_db))
    assert abs(result.total - TOTAL) <= 1e-9 * TOTAL, result
    assert result.visits == len(WEB.urls)  # every page's links applied exactly once
    assert sum(produced.values()) == len(WEB.urls)


async def _audit(dsn: str) -> Any:
    db = Database(DatabaseSettings(dsn=dsn), "importance-audit")
    await db.start()
    try:
        return await audit(db)
    finally:
        await db.stop()


assert PARTITIONS == PAGE_LINKS.partitions == CASH_TRANSFERS.partitions

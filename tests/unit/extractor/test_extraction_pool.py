"""Extraction spread over worker processes: the same results as in process, in order; workers that die."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from libs.common.errors import PoisonMessage
from libs.common.wire import messages as pb
from services.extractor.extraction_pool import WORKERS_LOST, ExtractionPool, ExtractionWorkerLost, split_runs
from services.extractor.page_extractor import Extracted, ExtractionOptions, extract_pages
from tests.corpus.loader import load_corpus

pytestmark = pytest.mark.timeout(120)

REPO = Path(__file__).resolve().parents[3]
ENV = {"TRAWL_URL_SORT_QUERY": "true", "TRAWL_EXTRACTOR_LINK_CONTEXT_CHARS": "40"}


def _result(n: int, size: int) -> pb.FetchResult:
    return pb.FetchResult(url=f"http://a.test/{n}", host="a.test", status=pb.FETCH_STATUS_OK, body=b"x" * size)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead: its parent has not read its status yet
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_runs_keep_the_order_and_share_the_bytes() -> None:
    results = [_result(n, size) for n, size in enumerate([100, 100, 100, 100, 100, 100, 100, 100])]
    runs = split_runs(results, 2)
    assert [r.url for run in runs for r in run] == [r.url for r in results]
    assert [len(run) for run in runs] == [4, 4]
    uneven = [_result(n, size) for n, size in enumerate([1000, 10, 10, 10, 10, 10])]
    assert [len(run) for run in split_runs(uneven, 2)] == [1, 5]  # the big page alone
    assert [len(run) for run in split_runs(results[:3], 8)] == [1, 1, 1]  # never an empty run
    assert split_runs([], 4) == []
    assert split_runs(results, 1) == [results]


def test_a_pool_needs_two_processes() -> None:
    with pytest.raises(ValueError):
        ExtractionPool({}, 1)


@pytest.fixture
async def pool() -> AsyncIterator[ExtractionPool]:
    pool = ExtractionPool(ENV, 2)
    await pool.start()
    try:
        yield pool
    finally:
        await pool.stop()


async def test_the_pool_extracts_what_the_service_process_would(pool: ExtractionPool) -> None:
    results = [case.fetch_result() for case in load_corpus()]
    poison = pb.FetchResult(url="javascript:void(0)", host="x.test", status=pb.FETCH_STATUS_OK, body=b"<p>x</p>")
    batch = [*results[:5], poison, *results[5:]]
    expected = extract_pages(batch, ExtractionOptions.from_env(ENV))

    got = await pool.extract(batch)

    assert len(pool.worker_pids()) == 2
    assert len(got) == len(expected) == len(batch)
    assert isinstance(got[5], PoisonMessage) and str(got[5]) == str(expected[5])
    for mine, theirs in zip(got, expected, strict=True):
        if isinstance(theirs, Extracted):
            assert isinstance(mine, Extracted)
            assert mine.document == theirs.document
            assert mine.links == theirs.links
    # the settings reached the workers: sorted query parameters, 40 characters of context
    sorted_facet = "https://www.rheintaler-bote.example.de/lokales/?ort=mainz&sort=datum"
    assert any(link.url == sorted_facet for page in got if isinstance(page, Extracted) for link in page.links.links)


async def test_a_dead_worker_fails_the_batch_and_the_pool_starts_again(pool: ExtractionPool) -> None:
    results = [case.fetch_result() for case in load_corpus()][:6]
    lost_before = WORKERS_LOST._value.get()
    victim = pool.worker_pids()[0]
    os.kill(victim, signal.SIGKILL)
    while _alive(victim):
        await asyncio.sleep(0.05)

    # The executor learns of the death from its management thread: until it has, a surviving worker may take the
    # whole batch (nothing is lost); the first batch after that fails, counted, and the pool starts again.
    deadline = time.monotonic() + 10.0
    with pytest.raises(ExtractionWorkerLost):
        while time.monotonic() < deadline:
            done = await pool.extract(results)
            assert all(isinstance(page, Extracted) for page in done)
            await asyncio.sleep(0.05)

    assert WORKERS_LOST._value.get() == lost_before + 1
    again = await pool.extract(results)
    assert all(isinstance(page, Extracted) for page in again)
    assert victim not in pool.worker_pids()


async def test_stop_ends_every_worker() -> None:
    pool = ExtractionPool(ENV, 2)
    await pool.start()
    pids = pool.worker_pids()
    assert len(pids) == 2 and all(_alive(pid) for pid in pids)
    await pool.stop()
    assert not any(_alive(pid) for pid in pids)


def test_workers_die_with_a_killed_service() -> None:
    """SIGKILL gives the service no chance to stop its pool: the workers must go by themselves."""
    script = (
        "import asyncio, sys\n"
        "from services.extractor.extraction_pool import ExtractionPool\n"
        "async def main():\n"
        "    pool = ExtractionPool({}, 2)\n"
        "    await pool.start()\n"
        "    print(*pool.worker_pids(), flush=True)\n"
        "    await asyncio.sleep(60)\n"
        "if __name__ == '__main__':\n"
        "    asyncio.run(main())\n"
    )
    service = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert service.stdout is not None
        pids = [int(p) for p in service.stdout.readline().split()]
        assert len(pids) == 2 and all(_alive(pid) for pid in pids)
        service.send_signal(signal.SIGKILL)
        service.wait(10)
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(pid) for pid in pids), [Path(f"/proc/{p}/status").read_text()[:300] for p in pids]
    finally:
        if service.poll() is None:
            service.kill()


async def test_workers_take_the_services_collector_policy() -> None:
    pool = ExtractionPool({**ENV, "TRAWL_GC_YOUNG_THRESHOLD": "1234"}, 2)
    await pool.start()
    try:
        loop, executor = asyncio.get_running_loop(), pool._executor
        thresholds = await asyncio.gather(*(loop.run_in_executor(executor, gc.get_threshold) for _ in range(4)))
        frozen = await asyncio.gather(*(loop.run_in_executor(executor, gc.get_freeze_count) for _ in range(4)))
    finally:
        await pool.stop()
    assert {t[0] for t in thresholds} == {1234}  # young passes every 1,234 objects, not Python's 700
    assert min(frozen) > 10_000  # trafilatura, lxml and the options: out of every old-generation pass

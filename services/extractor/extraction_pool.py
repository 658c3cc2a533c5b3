"""Extraction in worker processes: a batch's pages split over ``processes`` workers, one core each.

Parsing and trafilatura are CPU-bound Python: in the service's own process a batch uses
one core at most, however many the machine has. With a pool, each consumed batch is cut
into ``processes`` runs of about equal HTML size, in order, and each run is extracted by
:func:`~services.extractor.page_extractor.extract_pages` in a worker process; the results
come back in the batch's order, the same objects the in-process path returns.

Workers are started with ``spawn`` (the service's own process runs librdkafka's threads,
which a fork would copy mid-flight), build the extraction options once from the service's
settings (the options hold compiled URL rules, which do not pickle), and die with the
service: each asks the kernel for SIGKILL when its parent goes
(``PR_SET_PDEATHSIG``), so a service killed with SIGKILL leaves no worker behind. A worker
that dies (a crash in a native parser, the kernel's OOM killer) breaks the pool: the batch
fails with :class:`ExtractionWorkerLost`, a new pool is started, and the consumer retries
the batch and then isolates the page that kills a worker, which is dead-lettered.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import multiprocessing
import os
import signal
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from prometheus_client import Counter

from libs.common.collector import tune_collector
from libs.common.errors import PoisonMessage
from libs.common.service import RuntimeSettings
from libs.common.settings import load_settings
from libs.common.wire import messages as pb
from services.extractor.page_extractor import Extracted, ExtractionOptions, extract_pages

log = logging.getLogger(__name__)

WORKERS_LOST = Counter("trawl_extractor_workers_lost_total", "Extraction worker pools broken by a worker's death.")

_PR_SET_PDEATHSIG = 1
_options: ExtractionOptions | None = None


class ExtractionWorkerLost(RuntimeError):
    """A worker process died while extracting a batch (the pool has been started again)."""


def _start_worker(env: dict[str, str], parent: int) -> None:
    """In each worker, once: die with the parent, leave SIGINT (a terminal's Ctrl-C) to it, build the options,
    tune the garbage collector as the service's own process is (``libs.common.collector``).

    SIGTERM keeps its default: the pool terminates the workers left when one has died."""
    global _options
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: workers still end when the pool's pipes close
        pass
    if os.getppid() != parent:  # the service died before the request above: nobody would send the signal
        os._exit(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _options = ExtractionOptions.from_env(env)
    # The service's collector policy: trafilatura and lxml are loaded, and stay out of every old pass.
    tune_collector(load_settings(RuntimeSettings, env).gc_young_threshold)


# What crosses between processes: serialized messages (the generated message classes do not pickle).
_Done = tuple[bytes, bytes] | PoisonMessage


def _extract_run(results: list[bytes]) -> list[_Done]:
    assert _options is not None, "worker started without options"
    pages = extract_pages([pb.FetchResult.FromString(r) for r in results], _options)
    return [p if isinstance(p, PoisonMessage) else (p.document.SerializeToString(), p.links.SerializeToString())
            for p in pages]


def _received(done: _Done) -> Extracted | PoisonMessage:
    if isinstance(done, PoisonMessage):
        return done
    return Extracted(pb.Document.FromString(done[0]), pb.PageLinks.FromString(done[1]))


def split_runs(results: Sequence[pb.FetchResult], parts: int) -> list[list[pb.FetchResult]]:
    """``results`` cut, in order, into at most ``parts`` runs of about equal body size (none empty)."""
    if not results:
        return []
    parts = max(1, min(parts, len(results)))
    total = sum(len(r.body) + 1 for r in results)
    runs: list[list[pb.FetchResult]] = [[]]
    filled = 0
    for result in results:
        share = total * len(runs) / parts  # where the current run should end
        if runs[-1] and filled >= share and len(runs) < parts:
            runs.append([])
        runs[-1].append(result)
        filled += len(result.body) + 1
    return runs


class ExtractionPool:
    """``processes`` extraction workers; :meth:`extract` is :func:`extract_pages` spread over them,
    with the options ``ExtractionOptions.from_env(env)`` gives."""

    def __init__(self, env: Mapping[str, str], processes: int) -> None:
        if processes < 2:
            raise ValueError(f"a pool needs at least 2 processes, not {processes}")
        self._env = {k: v for k, v in env.items() if k.startswith("TRAWL_")}
        self._processes = processes
        self._executor: ProcessPoolExecutor | None = None

    @property
    def processes(self) -> int:
        return self._processes

    async def start(self) -> None:
        self._executor = self._new_executor()
        # Start every worker now (imports and parser set-up), not on the first batch.
        loop = asyncio.get_running_loop()
        await asyncio.gather(*(loop.run_in_executor(self._executor, _extract_run, [])
                               for _ in range(self._processes)))

    async def stop(self) -> None:
        executor, self._executor = self._executor, None
        if executor is not None:
            await asyncio.to_thread(executor.shutdown, True, cancel_futures=True)

    def worker_pids(self) -> list[int]:
        """The workers' process ids (for tests and diagnostics)."""
        processes = getattr(self._executor, "_processes", None) or {}
        return sorted(processes)

    async def extract(self, results: Sequence[pb.FetchResult]) -> list[Extracted | PoisonMessage]:
        executor = self._executor
        if executor is None:
            raise RuntimeError("ExtractionPool.start() has not been called")
        loop = asyncio.get_running_loop()
        runs = [[r.SerializeToString() for r in run] for run in split_runs(results, self._processes)]
        try:
            done = await asyncio.gather(*(loop.run_in_executor(executor, _extract_run, run) for run in runs))
        except BrokenProcessPool as exc:
            WORKERS_LOST.inc()
            log.error("an extraction worker died; starting the pool again (%d pages in the batch)", len(results))
            if self._executor is executor:
                self._executor = self._new_executor()
                await asyncio.to_thread(executor.shutdown, True, cancel_futures=True)
            raise ExtractionWorkerLost(f"an extraction worker died with {len(results)} pages in hand") from exc
        return [_received(item) for part in done for item in part]

    def _new_executor(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=self._processes,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_worker,
            initargs=(self._env, os.getpid()),
        )

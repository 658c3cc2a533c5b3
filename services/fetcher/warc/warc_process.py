"""The WARC archive written by a process of its own.

:class:`WarcArchive` writes from a thread of the fetcher's process, and warcio builds each
record in Python holding the interpreter's lock: on a busy machine the kernel preempts that
thread while it holds the lock and the fetcher's event loop waits a whole time slice.
:class:`WarcProcessArchive` has the same interface (``start``, ``submit``, ``stop``) and the
same files, written by a :class:`WarcArchive` in a child process: exchanges travel over a
``multiprocessing`` queue (pickled by the queue's feeder thread, mostly a copy of the body),
and the child acknowledges each one, so that at most ``queue_records`` wait and a full queue
makes fetches wait rather than grow memory, as with the thread.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import threading
from pathlib import Path
from typing import Any

from services.fetcher.http.http_response import HttpExchange
from services.fetcher.warc.warc_archive import WarcArchive

logger = logging.getLogger(__name__)

_DONE = -1


def _write_forever(folder: str, options: dict[str, Any], exchanges: Any, acks: Any) -> None:
    """The child process: write every exchange received, acknowledge each, close the file at the end."""
    archive = WarcArchive(folder, **options)
    try:
        while True:
            exchange = exchanges.get()
            if exchange is None:
                return
            try:
                archive.write_now(exchange)
            except Exception:
                logger.exception("could not archive the response of %s", exchange.url)
            finally:
                acks.put(1)
    finally:
        archive.close_now()
        acks.put(_DONE)


class WarcProcessArchive:
    """Writes exchanges to rotating WARC files in ``folder`` from a child process (see the module doc)."""

    def __init__(self, folder: str | Path, *, queue_records: int = 10_000, **options: Any) -> None:
        if queue_records <= 0:
            raise ValueError("queue_records must be positive")
        WarcArchive(folder, queue_records=queue_records, **options)  # the options are checked here, not in the child
        self._folder = Path(folder)
        self._capacity = queue_records
        self._options = options
        self._context = multiprocessing.get_context("spawn")  # no fork of a process with threads
        self._exchanges: Any = None
        self._acks: Any = None
        self._process: Any = None
        self._reader: threading.Thread | None = None
        self._room: asyncio.Semaphore | None = None

    @property
    def folder(self) -> Path:
        return self._folder

    async def start(self) -> None:
        """Create the folder and start the writer process."""
        if self._process is not None:
            return
        self._folder.mkdir(parents=True, exist_ok=True)
        loop = asyncio.get_running_loop()
        room = self._room = asyncio.Semaphore(self._capacity)
        self._exchanges, acks = self._context.Queue(), self._context.Queue()
        self._acks = acks
        self._process = self._context.Process(
            target=_write_forever, args=(str(self._folder), self._options, self._exchanges, acks),
            name="warc-writer", daemon=True,
        )
        await loop.run_in_executor(None, self._process.start)

        def read_acks() -> None:
            while acks.get() != _DONE:
                if not loop.is_closed():
                    loop.call_soon_threadsafe(room.release)

        self._reader = threading.Thread(target=read_acks, name="warc-acks", daemon=True)
        self._reader.start()

    async def stop(self) -> None:
        """Write what is queued, close the current file and stop the process."""
        process, self._process = self._process, None
        if process is None:
            return
        self._exchanges.put(None)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, process.join)
        if self._reader is not None:
            await loop.run_in_executor(None, self._reader.join, 5.0)
        self._exchanges.close()
        self._acks.close()

    async def submit(self, exchange: HttpExchange) -> None:
        """Queue ``exchange`` for writing; waits while ``queue_records`` are waiting."""
        if self._room is None or self._process is None:
            raise RuntimeError("WarcProcessArchive.start() has not been called")
        await self._room.acquire()
        self._exchanges.put(exchange)

"""Every response the fetcher receives, with its request, in rotating gzip WARC 1.1 files.

:class:`WarcArchive` is the HTTP client's exchange observer. Exchanges are
queued and written by one background thread with warcio (compression and disk
writes never run on the event loop); a full queue makes fetches wait rather
than grow memory. Each exchange becomes a ``response`` record (the body as
received, content coding kept; ``WARC-Payload-Digest`` and
``WARC-Block-Digest`` computed by warcio; ``WARC-Truncated`` when the body was
cut) followed by its ``request`` record (``WARC-Concurrent-To`` the response).
A 200 response whose payload digest was already archived by this process
becomes a ``revisit`` record (profile identical-payload-digest) pointing at the
first capture. A 304 to a conditional revisit becomes a ``revisit`` record of
profile server-not-modified (``WARC-Refers-To-Target-URI`` the URL, and
``WARC-Refers-To-Date`` the capture the validators came from, when known).
The transfer coding is removed by the client, so the
``Transfer-Encoding`` header is dropped from the archived headers.

warcio builds each record (uncompressed, its length and payload digest given so it does
not spool the body to compute them); the record is then written as a gzip member of its
own at ``gzip_level``: warcio's writer compresses at level 9, which took two thirds of the
archive's CPU for 7% smaller files than level 1 on HTML. zlib compresses without the
interpreter's lock, so the fetcher's event loop can run meanwhile.

Files are named ``<prefix>-<UTC time>-<serial>-<hostname>-<pid>.warc.gz`` and
begin with a ``warcinfo`` record; a file being written ends in ``.open`` and is
renamed once closed (past ``max_file_bytes``, or on stop), so that whatever
picks files up from the folder only sees complete ones.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import logging
import os
import queue
import socket
import threading
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from warcio.statusandheaders import StatusAndHeaders
from warcio.timeutils import datetime_to_iso_date
from warcio.warcwriter import WARCWriter

from services.fetcher.http.http_response import HttpExchange

logger = logging.getLogger(__name__)

__all__ = ["WarcArchive", "WarcStats", "payload_digest", "warc_date"]

_DROPPED_HEADERS = frozenset({"transfer-encoding"})
NOT_MODIFIED_PROFILE = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"


def warc_date(timestamp: float) -> str:
    """``2026-11-27T07:38:54.581156Z``: the UTC time in the W3C form WARC-Date takes, to the microsecond.

    (warcio's ``datetime_to_iso_date`` expects a naive UTC time: an aware one gets ``+00:00Z``,
    which readers of the archive, indexers among them, refuse.)
    """
    return str(datetime_to_iso_date(datetime.fromtimestamp(timestamp, UTC).replace(tzinfo=None), use_micros=True))


def payload_digest(payload: bytes) -> str:
    """``sha1:<base32>``, the form warcio writes in WARC-Payload-Digest."""
    return "sha1:" + base64.b32encode(hashlib.sha1(payload).digest()).decode("ascii")


@dataclass
class WarcStats:
    """Counters of the archive's work."""

    responses: int = 0
    revisits: int = 0
    requests: int = 0
    files: int = 0
    errors: int = 0


class WarcArchive:
    """Writes exchanges to rotating WARC files in ``folder`` from a background thread (see the module doc).

    ``revisit_memory`` bounds how many payload digests are remembered for revisit records;
    ``gzip_level`` is the compression level of each record.
    """

    def __init__(
        self,
        folder: str | Path,
        *,
        max_file_bytes: int = 1024 * 1024 * 1024,
        queue_records: int = 10_000,
        prefix: str = "trawl",
        software: str = "Trawl fetcher",
        revisit_memory: int = 200_000,
        gzip_level: int = 1,
    ) -> None:
        if max_file_bytes <= 0 or queue_records <= 0:
            raise ValueError("max_file_bytes and queue_records must be positive")
        if not 0 <= gzip_level <= 9:
            raise ValueError("gzip_level must be 0 to 9")
        self._gzip_level = gzip_level
        self._folder = Path(folder)
        self._max_file_bytes = max_file_bytes
        self._capacity = queue_records
        self._prefix = prefix
        self._software = software
        self._revisit_memory = revisit_memory
        self._queue: queue.SimpleQueue[HttpExchange | None] = queue.SimpleQueue()
        self._room: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._file: IO[bytes] | None = None
        self._path: Path | None = None
        self._writer: Any = None
        self._serial = 0
        self._seen: OrderedDict[str, tuple[str, str]] = OrderedDict()
        self.stats = WarcStats()

    @property
    def folder(self) -> Path:
        return self._folder

    async def start(self) -> None:
        """Create the folder and start the writer thread."""
        if self._thread is not None:
            return
        self._folder.mkdir(parents=True, exist_ok=True)
        self._loop = asyncio.get_running_loop()
        self._room = asyncio.Semaphore(self._capacity)
        self._thread = threading.Thread(target=self._run, name="warc-writer", daemon=True)
        self._thread.start()

    async def stop(self) -> None:
        """Write what is queued, close the current file and stop the thread."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._queue.put(None)
        await asyncio.get_running_loop().run_in_executor(None, thread.join)

    async def submit(self, exchange: HttpExchange) -> None:
        """Queue ``exchange`` for writing; waits while the queue is full."""
        if self._room is None or self._thread is None:
            raise RuntimeError("WarcArchive.start() has not been called")
        await self._room.acquire()
        self._queue.put(exchange)

    def write_now(self, exchange: HttpExchange) -> None:
        """Write ``exchange`` at once, in the calling thread (the writer thread's, or a writer process's, work)."""
        self._write(exchange)

    def close_now(self) -> None:
        """Close the current file at once (see :meth:`write_now`)."""
        self._close_file()

    # writer thread ---------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while True:
                exchange = self._queue.get()
                if exchange is None:
                    return
                try:
                    self._write(exchange)
                except Exception:
                    self.stats.errors += 1
                    logger.exception("could not archive the response of %s", exchange.url)
                finally:
                    if self._loop is not None and self._room is not None and not self._loop.is_closed():
                        self._loop.call_soon_threadsafe(self._room.release)
        finally:
            self._close_file()

    def _write(self, exchange: HttpExchange) -> None:
        writer = self._current_writer()
        date = warc_date(exchange.started_at)
        digest = payload_digest(exchange.raw_body)
        http_headers = StatusAndHeaders(
            f"{exchange.status} {exchange.reason}".strip(),
            [(k, v) for k, v in exchange.headers if k.lower() not in _DROPPED_HEADERS],
            protocol=f"HTTP/{exchange.http_version}",
        )
        warc_headers = {"WARC-Date": date}
        if exchange.remote_address:
            warc_headers["WARC-IP-Address"] = exchange.remote_address
        if exchange.truncated:
            warc_headers["WARC-Truncated"] = exchange.truncated
        first = self._seen.get(digest) if exchange.status == 200 and exchange.raw_body else None
        if exchange.status == 304 and exchange.revisit_of is not None:
            record = self._not_modified_record(writer, exchange, http_headers, warc_headers)
            self.stats.revisits += 1
        elif first is not None:
            record = writer.create_revisit_record(
                exchange.url, digest, first[0], first[1], http_headers=http_headers, warc_headers_dict=warc_headers
            )
            self.stats.revisits += 1
        else:
            record = writer.create_warc_record(
                exchange.url, "response", payload=io.BytesIO(exchange.raw_body), length=len(exchange.raw_body),
                http_headers=http_headers, warc_headers_dict={**warc_headers, "WARC-Payload-Digest": digest},
            )
            self.stats.responses += 1
            if exchange.status == 200 and exchange.raw_body and not exchange.truncated:
                self._remember(digest, exchange.url, date)
        self._write_record(writer, record)
        self._write_record(writer, self._request_record(writer, exchange, date, record.rec_headers["WARC-Record-ID"]))
        self.stats.requests += 1
        assert self._file is not None
        if self._file.tell() >= self._max_file_bytes:
            self._close_file()

    @staticmethod
    def _not_modified_record(writer: Any, exchange: HttpExchange, http_headers: StatusAndHeaders,
                             warc_headers: dict[str, str]) -> Any:
        """A server-not-modified revisit: the 304's headers, no payload, pointing at the URL's earlier capture."""
        refers = {"WARC-Profile": NOT_MODIFIED_PROFILE, "WARC-Refers-To-Target-URI": exchange.url}
        if exchange.revisit_of:
            refers["WARC-Refers-To-Date"] = warc_date(exchange.revisit_of)
        return writer.create_warc_record(
            exchange.url, "revisit", payload=io.BytesIO(b""), length=0, http_headers=http_headers,
            warc_headers_dict={**warc_headers, **refers},
        )

    @staticmethod
    def _request_record(writer: Any, exchange: HttpExchange, date: str, response_id: str) -> Any:
        parts = urlsplit(exchange.url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        headers = StatusAndHeaders(
            f"{exchange.method} {target} HTTP/{exchange.http_version}",
            list(exchange.request_headers),
            is_http_request=True,
        )
        return writer.create_warc_record(
            exchange.url, "request", payload=io.BytesIO(b""), length=0, http_headers=headers,
            warc_headers_dict={"WARC-Date": date, "WARC-Concurrent-To": response_id},
        )

    def _write_record(self, writer: Any, record: Any) -> None:
        """``record`` as one gzip member (warcio's writer makes the record, uncompressed)."""
        assert self._file is not None
        buffer = io.BytesIO()
        writer._write_warc_record(buffer, record)  # the writer's own record serialiser, into a buffer
        packer = zlib.compressobj(self._gzip_level, zlib.DEFLATED, 31)
        self._file.write(packer.compress(buffer.getbuffer()))
        self._file.write(packer.flush())

    def _remember(self, digest: str, url: str, date: str) -> None:
        self._seen[digest] = (url, date)
        while len(self._seen) > self._revisit_memory:
            self._seen.popitem(last=False)

    def _current_writer(self) -> Any:
        if self._writer is not None:
            return self._writer
        self._serial += 1
        stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S%f")[:17]
        name = f"{self._prefix}-{stamp}-{self._serial:05d}-{socket.gethostname()}-{os.getpid()}.warc.gz"
        self._path = self._folder / name
        self._file = (self._folder / f"{name}.open").open("wb")
        self._writer = WARCWriter(self._file, gzip=False, warc_version="1.1")
        info = {"software": self._software, "format": "WARC File Format 1.1",
                "hostname": socket.gethostname(), "isPartOf": self._prefix}
        self._write_record(self._writer, self._writer.create_warcinfo_record(name, info))
        self.stats.files += 1
        return self._writer

    def _close_file(self) -> None:
        file, path = self._file, self._path
        self._file = self._writer = self._path = None
        if file is None or path is None:
            return
        file.close()
        os.replace(path.with_name(path.name + ".open"), path)
        logger.info("closed WARC file %s", path)

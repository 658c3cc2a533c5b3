"""What the simulated web's server answered, request by request.

The log is how tests see a crawler from the outside: politeness (gaps and
concurrency per host) and robots compliance are checked on it with
:mod:`libs.simweb.log_checks`. Records stay in memory and can also be appended
to a JSON-lines file, flushed per record, so another process (a benchmark
driver watching a server started by the command) can read them.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RequestRecord:
    """One request served.

    ``started_at`` and ``finished_at`` are ``time.monotonic()`` readings (when the
    handler began, and right before the response's body was handed to the socket, or
    when a hostile answer written as it goes ended); ``wall_time`` is ``time.time()``
    at the start, for correlating with other processes. ``path`` includes the query
    string, as received.
    """

    started_at: float
    finished_at: float
    wall_time: float
    host: str
    path: str
    status: int
    user_agent: str
    method: str = "GET"
    bytes_sent: int = 0
    """Bytes of the response as written to the connection (status line, headers, body as coded)."""

    @property
    def url(self) -> str:
        """The URL requested, as the crawler named it (``http://`` host and path with its query)."""
        return f"http://{self.host}{self.path}"

    @property
    def is_robots(self) -> bool:
        """A request of the host's robots.txt (with or without a query)."""
        return self.path.split("?", 1)[0] == "/robots.txt"

    @property
    def is_page(self) -> bool:
        """A page answered 200, robots.txt aside: what a crawl counts as fetched."""
        return self.status == 200 and not self.is_robots

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, line: str) -> RequestRecord:
        data = json.loads(line)
        return cls(
            started_at=float(data["started_at"]),
            finished_at=float(data["finished_at"]),
            wall_time=float(data["wall_time"]),
            host=str(data["host"]),
            path=str(data["path"]),
            status=int(data["status"]),
            user_agent=str(data["user_agent"]),
            method=str(data.get("method", "GET")),
            bytes_sent=int(data.get("bytes_sent", 0)),
        )


class RequestLog:
    """Append-only record of requests, in memory and optionally in a JSON-lines file."""

    def __init__(self, path: str | Path | None = None) -> None:
        self._records: list[RequestRecord] = []
        self._path = Path(path) if path is not None else None
        self._file: IO[str] | None = None

    def open(self) -> None:
        if self._path is not None and self._file is None:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self._path.open("a", encoding="utf-8")

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def append(self, record: RequestRecord) -> None:
        self._records.append(record)
        if self._file is not None:
            try:
                self._file.write(record.to_json() + "\n")
                self._file.flush()
            except OSError:
                logger.exception("could not append to request log file %s", self._path)

    def records(self) -> list[RequestRecord]:
        """A copy of every record so far, in the order requests finished."""
        return list(self._records)

    def clear(self) -> None:
        """Forget the in-memory records (the file, if any, keeps them)."""
        self._records.clear()


def read_log_file(path: str | Path) -> list[RequestRecord]:
    """Records of a JSON-lines log file written by a server; a torn last line is skipped."""
    records = []
    with Path(path).open(encoding="utf-8") as handle:
        for line in handle:
            try:
                records.append(RequestRecord.from_json(line))
            except (ValueError, KeyError):
                logger.warning("skipping unreadable request log line in %s", path)
    return records

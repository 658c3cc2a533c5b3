"""The values and refusals of the per-host politeness layer (:mod:`services.fetcher.politeness.politeness`)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

logger = logging.getLogger(__name__)

__all__ = [
    "HostParkedError",
    "HostReleasedError",
    "ParkedHost",
    "PolitenessRefusedError",
    "PolitenessStats",
    "PolitenessTimeoutError",
]


class PolitenessRefusedError(Exception):
    """A request to ``host`` was refused; ``retry_at`` is the clock time worth trying again."""

    def __init__(self, host: str, reason: str, retry_at: float) -> None:
        super().__init__(f"{host}: {reason}")
        self.host = host
        self.reason = reason
        self.retry_at = retry_at


class HostParkedError(PolitenessRefusedError):
    """The host is parked after too many consecutive failures."""


class PolitenessTimeoutError(PolitenessRefusedError):
    """The host would not be free within ``max_wait``."""


class HostReleasedError(PolitenessRefusedError):
    """The host moved to another fetcher: requests waiting for it, or cut short, stop here."""


@dataclass(frozen=True)
class ParkedHost:
    """A host refusing requests until ``until`` (clock time), and why."""

    host: str
    until: float
    reason: str
    consecutive_failures: int


@dataclass
class PolitenessStats:
    """Counters for metrics."""

    granted: int = 0
    refused_parked: int = 0
    refused_timeout: int = 0
    refused_released: int = 0
    aborted_released: int = 0
    failures: int = 0
    parked: int = 0
    wait_seconds: float = 0.0

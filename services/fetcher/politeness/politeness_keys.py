"""What politeness is kept per: the host name (default) or the host's IP address (an option).

Many small sites often share one server; with ``by_ip`` the fetcher spaces
requests to an address rather than to a name, so that a hundred virtual hosts
on one machine get one request at a time between them. Kafka partitions are
keyed by host, so this holds within one fetcher instance: hosts of one address
owned by two instances are spaced by each of them separately.

An address that cannot be resolved here (a name only the proxy knows) falls
back to the host name. Resolutions are cached for ``ttl`` seconds.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable

logger = logging.getLogger(__name__)

__all__ = ["AddressLookup", "PolitenessKeys"]

AddressLookup = Callable[[str], Awaitable[str | None]]
"""The first address of a host name, or None if it does not resolve."""


class PolitenessKeys:
    """Maps a host to the key of its politeness state (``host`` or ``ip:<address>``)."""

    def __init__(
        self, lookup: AddressLookup | None = None, *, ttl: float = 300.0, max_entries: int = 100_000
    ) -> None:
        self._lookup = lookup
        self._ttl = ttl
        self._max_entries = max_entries
        self._cache: OrderedDict[str, tuple[float, str]] = OrderedDict()

    @property
    def by_ip(self) -> bool:
        return self._lookup is not None

    async def key(self, host: str) -> str:
        """The politeness key of ``host`` now (resolving it when keyed by address)."""
        host = host.lower()
        if self._lookup is None:
            return host
        cached = self._cache.get(host)
        now = time.monotonic()
        if cached is not None and cached[0] > now:
            self._cache.move_to_end(host)
            return cached[1]
        address = await self._lookup(host)
        key = f"ip:{address}" if address else host
        self._cache[host] = (now + self._ttl, key)
        while len(self._cache) > self._max_entries:
            self._cache.popitem(last=False)
        return key

    def known_key(self, host: str) -> str:
        """The last key ``host`` was given (the host itself if never resolved); never resolves."""
        host = host.lower()
        cached = self._cache.get(host)
        return cached[1] if cached is not None else host

"""A DNS resolver with a static host-to-address map in front, like /etc/hosts.

Used by the HTTP client so that a deployment (or the simulated web) can pin
host names to addresses without touching the system's DNS configuration.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from collections.abc import Mapping

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

logger = logging.getLogger(__name__)

__all__ = ["StaticHostResolver", "validate_host_map"]


def validate_host_map(host_map: Mapping[str, str]) -> dict[str, str]:
    """The map with lowercased host keys; raises ValueError for a value that is not an IP address."""
    checked: dict[str, str] = {}
    for host, address in host_map.items():
        try:
            ipaddress.ip_address(address)
        except ValueError:
            raise ValueError(f"host map entry {host!r}: {address!r} is not an IP address") from None
        checked[host.lower().rstrip(".")] = address
    return checked


class StaticHostResolver(AbstractResolver):
    """Answers hosts found in ``host_map`` from it; asks ``fallback`` about every other host.

    Keys are host names (compared case-insensitively, without a trailing
    dot); values are IPv4 or IPv6 address literals. Invalid addresses are
    rejected when the resolver is built.
    """

    def __init__(self, host_map: Mapping[str, str], fallback: AbstractResolver | None = None) -> None:
        self._map = validate_host_map(host_map)
        self._fallback = fallback if fallback is not None else DefaultResolver()

    def lookup(self, host: str) -> str | None:
        """The mapped address of ``host``, or None if it is not in the map."""
        return self._map.get(host.lower().rstrip("."))

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        """Resolve ``host`` from the map, else through the fallback resolver."""
        address = self.lookup(host)
        if address is None:
            return await self._fallback.resolve(host, port, family)
        ip_family = socket.AF_INET6 if ipaddress.ip_address(address).version == 6 else socket.AF_INET
        return [
            ResolveResult(
                hostname=host,
                host=address,
                port=port,
                family=ip_family,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
        ]

    async def close(self) -> None:
        """Close the fallback resolver."""
        await self._fallback.close()

"""The SSRF guard: never fetch from private, loopback, link-local or multicast addresses.

A crawler follows links anybody can write, so a page linking to
``http://169.254.169.254/`` or to a name resolving to ``10.0.0.5`` must not turn
it against its own cluster. The guard judges addresses *after* name resolution:

* :class:`GuardedResolver` filters what the connection pool resolves (direct
  mode), so the address checked is the address connected to;
* :meth:`TargetGuard.check` judges a target before it is requested (and a
  redirect target before robots.txt is asked about it): IP-literal hosts
  (which aiohttp never sends through a resolver) and the fetcher's own
  resolution of the name, cached a while. In proxy mode that is the only
  check (the proxy resolves the name again); a name that does not resolve
  here is then left to the proxy, which must enforce its own rules, unless
  ``proxy_unresolved`` is off.

An explicit allow-list (:class:`AddressPolicy`) of networks (``127.0.0.0/8``) and
host names (``site.test``, ``*.test``) permits exceptions, such as the simulated
web in tests and the demo. The configured proxy itself is always allowed.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from aiohttp.abc import AbstractResolver, ResolveResult

logger = logging.getLogger(__name__)

__all__ = [
    "ERROR_BLOCKED_ADDRESS",
    "AddressPolicy",
    "BlockedAddressError",
    "GuardedResolver",
    "TargetGuard",
    "special_purpose",
]

ERROR_BLOCKED_ADDRESS = "blocked_address"

IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class BlockedAddressError(OSError):
    """``host`` resolves only to addresses the policy refuses."""

    def __init__(self, host: str, address: str, reason: str) -> None:
        super().__init__(f"{host} -> {address} ({reason})")
        self.host = host
        self.address = address
        self.reason = reason


def special_purpose(address: str) -> str | None:
    """Why ``address`` is not a public unicast address (``"loopback"``, ``"private"``...), or None if it is."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return "not an address"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    checks = (
        ("unspecified", ip.is_unspecified),
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("private", ip.is_private),
        ("reserved", ip.is_reserved),
        ("not global", not ip.is_global),
    )
    return next((name for name, hit in checks if hit), None)


@dataclass(frozen=True)
class AddressPolicy:
    """Which targets may be fetched: every public address, plus the allow-listed networks and names."""

    networks: tuple[IpNetwork, ...] = ()
    names: tuple[str, ...] = ()
    """Exact host names, or ``*.suffix`` for every name below ``suffix``."""

    @classmethod
    def parse(cls, entries: Iterable[str]) -> AddressPolicy:
        """Build from entries such as ``127.0.0.0/8``, ``::1``, ``site.test``, ``*.test``; ValueError if malformed."""
        networks: list[IpNetwork] = []
        names: list[str] = []
        for entry in (e.strip().lower().rstrip(".") for e in entries):
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
                continue
            except ValueError:
                pass
            label = entry[2:] if entry.startswith("*.") else entry
            if not label or any(not part or " " in part or "/" in part for part in label.split(".")):
                raise ValueError(f"allow-list entry {entry!r} is neither a network nor a host name")
            names.append(entry)
        return cls(tuple(networks), tuple(names))

    def name_allowed(self, host: str) -> bool:
        """Whether ``host`` is allow-listed by name."""
        host = host.lower().rstrip(".")
        return any(host == n or (n.startswith("*.") and host.endswith(n[1:])) for n in self.names)

    def refusal(self, address: str) -> str | None:
        """Why ``address`` may not be fetched from, or None if it may."""
        reason = special_purpose(address)
        if reason is None:
            return None
        try:
            ip = ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            return reason
        if any(ip.version == net.version and ip in net for net in self.networks):
            return None
        return reason


class GuardedResolver(AbstractResolver):
    """Resolves through ``inner`` and drops refused addresses; raises :class:`BlockedAddressError` if none is left.

    Names allow-listed by the policy, and ``exempt`` names (the proxy), are not filtered.
    """

    def __init__(self, inner: AbstractResolver, policy: AddressPolicy, exempt: Iterable[str] = ()) -> None:
        self._inner = inner
        self._policy = policy
        self._exempt = frozenset(h.lower().rstrip(".") for h in exempt)

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        results = await self._inner.resolve(host, port, family)
        if host.lower().rstrip(".") in self._exempt or self._policy.name_allowed(host):
            return results
        kept = [r for r in results if self._policy.refusal(r["host"]) is None]
        if not kept and results:
            address = results[0]["host"]
            raise BlockedAddressError(host, address, self._policy.refusal(address) or "refused")
        return kept

    async def close(self) -> None:
        await self._inner.close()


class TargetGuard:
    """Judges a request's target host before it is sent (see the module docstring).

    ``resolver`` answers for names; its verdicts are cached for ``ttl``
    seconds (at most ``max_entries`` names). ``proxy`` says the requests go
    through a proxy (a name that does not resolve here is then judged by
    ``proxy_unresolved``; without a proxy the connection fails anyway).
    """

    def __init__(
        self,
        policy: AddressPolicy,
        resolver: AbstractResolver | None,
        *,
        proxy: bool = False,
        proxy_unresolved: bool = True,
        ttl: float = 300.0,
        max_entries: int = 10_000,
    ) -> None:
        self._policy = policy
        self._resolver = resolver
        self._proxy = proxy
        self._proxy_unresolved = proxy_unresolved
        self._ttl = ttl
        self._max_entries = max_entries
        self._cache: OrderedDict[str, tuple[float, str | None]] = OrderedDict()

    def known(self, host: str) -> tuple[bool, str | None]:
        """``(True, verdict)`` when :meth:`check`'s verdict on ``host`` is cached, else ``(False, None)``.

        The common case without a coroutine: the fetch path awaits :meth:`check` only on a miss.
        """
        cached = self._cache.get(host)
        if cached is not None and cached[0] > time.monotonic():
            return True, cached[1]
        return False, None

    async def check(self, host: str) -> str | None:
        """An error (``blocked_address:...`` or ``dns_error:...``) if ``host`` may not be fetched, else None."""
        known, cached = self.known(host)
        if known:
            return cached
        now = time.monotonic()
        asked = host
        host = host.lower().rstrip(".").strip("[]")
        verdict: str | None
        if self._policy.name_allowed(host):
            verdict = None
        elif _is_ip_literal(host):
            reason = self._policy.refusal(host)
            verdict = None if reason is None else f"{ERROR_BLOCKED_ADDRESS}:{host} ({reason})"
        elif self._resolver is None:
            verdict = None  # the connection pool's GuardedResolver judges it when connecting
        else:
            verdict = await self._resolve_verdict(host)
        self._cache[asked] = (now + self._ttl, verdict)
        while len(self._cache) > self._max_entries:
            self._cache.popitem(last=False)
        return verdict

    async def _resolve_verdict(self, host: str) -> str | None:
        assert self._resolver is not None
        try:
            results = await self._resolver.resolve(host, 0, socket.AF_UNSPEC)
        except OSError as exc:
            if not self._proxy or self._proxy_unresolved:
                return None
            return f"dns_error:{host}: {exc}"
        for result in results:
            reason = self._policy.refusal(result["host"])
            if reason is not None:
                return f"{ERROR_BLOCKED_ADDRESS}:{host} -> {result['host']} ({reason})"
        return None


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True

"""Operator policies per host (``scheduler.host_policies``), and what they mean for a dispatch round.

A policy is set through the admin API; a NULL column is "not set". The dispatcher reads the
table once a round (it is small: one row per host an operator named) and gets
:class:`PolicyRules`:

- ``held``: hosts it must skip this round: removed sites, hosts blocked until a later time,
  hosts at their concurrency limit (0 holds the host), hosts whose budget is spent (pages
  fetched plus requests in flight);
- ``delays``: a minimum delay per host, sent in each fetch request (the fetcher keeps it as a
  gap after each response, like a Crawl-delay) and kept by the scheduler between the starts
  of two requests (``space_starts``), so a delay above the fetcher's Crawl-delay cap holds too;
- ``groups``: hosts split by path across fetchers (keys ``host#group``), whose request slots
  the table ``scheduler.hosts`` must match (``apply_slots``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from psycopg import AsyncConnection

from libs.common.db.pool import Database
from libs.common.kafka.partitioner import partition_for

COLUMNS = ("min_delay_seconds", "max_concurrency", "budget", "blocked_until", "partition_groups", "note")
UNLIMITED = -1  # lifts a concurrency limit or a budget


@dataclass(frozen=True)
class HostPolicyRow:
    host: str
    min_delay_seconds: float | None = None
    max_concurrency: int | None = None
    budget: int | None = None
    blocked_until: datetime | None = None
    partition_groups: int | None = None
    note: str | None = None
    removed: bool = False
    site_added_at: datetime | None = None
    updated_at: datetime | None = None
    fetched: int = 0  # pages fetched from the host so far (scheduler.hosts), what the budget counts


@dataclass(frozen=True)
class PolicyRules:
    held: tuple[str, ...] = ()
    delays: Mapping[str, float] = field(default_factory=dict)
    groups: Mapping[str, int] = field(default_factory=dict)


def normalised(changes: Mapping[str, object]) -> dict[str, object]:
    """Column values as stored: a lifted limit, a zero delay or block, one group are NULL."""
    out: dict[str, object] = {}
    for name, value in changes.items():
        if name not in COLUMNS:
            raise ValueError(f"unknown host policy field {name}")
        lifted = (
            (name == "min_delay_seconds" and isinstance(value, (int, float)) and value <= 0)
            or (name in ("max_concurrency", "budget") and isinstance(value, int) and value < 0)
            or (name == "partition_groups" and isinstance(value, int) and value < 2)
            or (name == "note" and value == "")
        )
        if lifted:
            value = None
        out[name] = value
    return out


_SELECT = (
    "SELECT p.host, p.min_delay_seconds, p.max_concurrency, p.budget, p.blocked_until, p.partition_groups,"
    " p.note, p.removed, p.site_added_at, p.updated_at, coalesce(h.fetched, 0)"
    " FROM scheduler.host_policies p LEFT JOIN scheduler.hosts h ON h.host = p.host"
)

_RULES = (
    "SELECT p.host,"
    "  p.removed OR coalesce(p.blocked_until > now(), false)"
    "   OR coalesce(coalesce(h.in_flight, 0) >= p.max_concurrency, false)"
    "   OR coalesce(coalesce(h.fetched, 0) + coalesce(h.in_flight, 0) >= p.budget, false),"
    "  p.min_delay_seconds, p.partition_groups"
    " FROM scheduler.host_policies p LEFT JOIN scheduler.hosts h ON h.host = p.host"
)


class HostPolicyStore:
    def __init__(self, db: Database, partitions: int) -> None:
        self._db = db
        self._partitions = partitions

    async def _ensure_hosts(self, conn: AsyncConnection, hosts: Sequence[str]) -> None:
        names = sorted(set(hosts))
        await conn.execute(
            "INSERT INTO scheduler.hosts (host, partition) SELECT * FROM unnest(%s::text[], %s::int[])"
            " ON CONFLICT (host) DO NOTHING",
            (names, [partition_for(h, self._partitions) for h in names]),
        )

    async def set_policy(self, host: str, changes: Mapping[str, object], replace: bool = False) -> HostPolicyRow:
        """Sets the named fields of ``host``'s policy (``replace``: every other field is cleared)."""
        values = normalised(changes)
        if replace:
            values = {name: values.get(name) for name in COLUMNS}
        names = list(values)
        async with self._db.transaction() as conn:
            await self._ensure_hosts(conn, [host])
            assignments = "".join(f", {n} = excluded.{n}" for n in names)
            columns = "".join(f", {n}" for n in names)
            marks = "".join(f", %({n})s" for n in names)
            await conn.execute(
                f"INSERT INTO scheduler.host_policies AS p (host{columns}) VALUES (%(host)s{marks})"
                f" ON CONFLICT (host) DO UPDATE SET updated_at = now(){assignments}",
                {"host": host, **values},
            )
        (row,) = await self.policies([host])
        return row

    async def policies(self, hosts: Sequence[str] = ()) -> list[HostPolicyRow]:
        """The policies of ``hosts`` (every policy when empty), by host name."""
        async with self._db.connection() as conn:
            if hosts:
                cur = await conn.execute(_SELECT + " WHERE p.host = ANY(%s) ORDER BY p.host", (list(hosts),))
            else:
                cur = await conn.execute(_SELECT + " ORDER BY p.host")
            return [HostPolicyRow(*row) for row in await cur.fetchall()]

    async def clear(self, hosts: Sequence[str]) -> int:
        """Forgets the policies of ``hosts`` (a removed site stays removed: add it again to lift that)."""
        async with self._db.transaction() as conn:
            cur = await conn.execute(
                "UPDATE scheduler.host_policies SET min_delay_seconds = NULL, max_concurrency = NULL, budget = NULL,"
                " blocked_until = NULL, partition_groups = NULL, note = NULL, updated_at = now()"
                " WHERE host = ANY(%s) AND (removed OR site_added_at IS NOT NULL)",
                (list(hosts),),
            )
            kept = cur.rowcount
            cur = await conn.execute(
                "DELETE FROM scheduler.host_policies WHERE host = ANY(%s) AND NOT removed AND site_added_at IS NULL",
                (list(hosts),),
            )
            return kept + cur.rowcount

    async def add_sites(self, hosts: Sequence[str]) -> None:
        """Marks ``hosts`` as sites and lifts an earlier removal."""
        async with self._db.transaction() as conn:
            await self._ensure_hosts(conn, hosts)
            await conn.execute(
                "INSERT INTO scheduler.host_policies AS p (host, site_added_at)"
                " SELECT unnest(%s::text[]), now()"
                " ON CONFLICT (host) DO UPDATE SET removed = false, updated_at = now(),"
                "   site_added_at = coalesce(p.site_added_at, now())",
                (sorted(set(hosts)),),
            )

    async def remove_sites(self, hosts: Sequence[str]) -> int:
        """Holds ``hosts`` as removed sites and drops their queued URLs; returns how many were dropped."""
        names = sorted(set(hosts))
        async with self._db.transaction() as conn:
            await self._ensure_hosts(conn, names)
            await conn.execute(
                "INSERT INTO scheduler.host_policies AS p (host, removed) SELECT unnest(%s::text[]), true"
                " ON CONFLICT (host) DO UPDATE SET removed = true, updated_at = now()",
                (names,),
            )
            cur = await conn.execute(
                "DELETE FROM scheduler.frontier WHERE host = ANY(%s) AND status = 'queued'", (names,)
            )
            return cur.rowcount

    async def rules(self) -> PolicyRules:
        """What the policies mean for the dispatch round starting now."""
        async with self._db.connection() as conn:
            rows = await (await conn.execute(_RULES)).fetchall()
        return PolicyRules(
            held=tuple(str(host) for host, held, _delay, _groups in rows if held),
            delays={str(host): float(delay) for host, _held, delay, _groups in rows if delay},
            groups={str(host): int(groups) for host, _held, _delay, groups in rows if groups},
        )

    async def space_starts(self, hosts: Sequence[str]) -> None:
        """Pushes the next allowed time of dispatched ``hosts`` with a delay one delay past now."""
        if not hosts:
            return
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE scheduler.hosts h SET next_allowed_at ="
                "  greatest(h.next_allowed_at, now() + make_interval(secs => p.min_delay_seconds))"
                " FROM scheduler.host_policies p"
                " WHERE p.host = h.host AND p.min_delay_seconds IS NOT NULL AND h.host = ANY(%s)",
                (sorted(set(hosts)),),
            )

    async def apply_slots(self, groups: Mapping[str, int], default_slots: Mapping[str, int]) -> None:
        """Gives partitioned hosts one request slot per group; hosts no longer partitioned by a
        policy go back to ``default_slots`` (the settings' large hosts) or one slot."""
        async with self._db.transaction() as conn:
            names = sorted(groups)
            await self._ensure_hosts(conn, names)
            await conn.execute(
                "UPDATE scheduler.hosts h SET slots = t.slots FROM unnest(%s::text[], %s::int[]) AS t(host, slots)"
                " WHERE h.host = t.host AND h.slots <> t.slots",
                (names, [groups[n] for n in names]),
            )
            defaults = sorted(default_slots)
            await conn.execute(
                "UPDATE scheduler.hosts h SET slots = coalesce(d.slots, 1)"
                " FROM scheduler.hosts x"
                " LEFT JOIN unnest(%s::text[], %s::int[]) AS d(host, slots) ON d.host = x.host"
                " WHERE h.host = x.host AND h.slots > 1 AND h.host <> ALL(%s::text[])"
                "   AND h.slots <> coalesce(d.slots, 1)",
                (defaults, [default_slots[n] for n in defaults], names),
            )

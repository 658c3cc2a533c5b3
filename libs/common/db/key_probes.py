"""Statements that join a batch's keys to a hash-partitioned table, planned as index probes.

Planned freely, a statement joined to a batch of keys is a hash join over a scan of every partition
of the table, whatever the batch's size, and more as the table grows: in the link base, marking 8
URLs fetched among 17,600 took 3.4 ms (in the polite crawl's full-size wide web, its costliest
statement, 8.1 s of PostgreSQL's 42); in dedup, a batch's band candidates joined to 16,000 indexed
documents 5.5 ms. With hash and merge joins off for that one statement it is a nested loop of
primary-key probes, each in the partition that holds its key (0.45 and 1.5 ms). The statements stay
joined on the keys, not on row ids, so that a row another transaction updated meanwhile is still
found; the planner's settings are put back for the statements after it in the transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg import AsyncConnection

Conn = AsyncConnection[Any]

_PROBES_ON = (
    "SELECT current_setting('enable_hashjoin'), current_setting('enable_mergejoin'),"
    " set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true)"
)
_PROBES_OFF = "SELECT set_config('enable_hashjoin', %s, true), set_config('enable_mergejoin', %s, true)"


async def by_key_probes(conn: Conn, statement: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Runs ``statement`` (in a transaction) planned as one index probe per key; its rows, if it returns any."""
    cur = await conn.execute(_PROBES_ON)
    before = await cur.fetchone()
    hashjoin, mergejoin = (str(before[0]), str(before[1])) if before else ("on", "on")
    cur = await conn.execute(statement.encode(), params)
    rows = await cur.fetchall() if cur.description is not None else []
    await conn.execute(_PROBES_OFF, (hashjoin, mergejoin))
    return rows

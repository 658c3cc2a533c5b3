"""Updates joined to a batch of URL keys are planned as a probe per key, on the real PostgreSQL server."""

from __future__ import annotations

import random

import pytest

from libs.common.db.key_probes import by_key_probes
from libs.common.db.pool import Database
from services.linkbase import seen
from services.linkbase.rows import UrlRef

pytestmark = pytest.mark.integration


async def _fill(db: Database, hosts: int, per_host: int) -> list[tuple[int, int, str]]:
    rng = random.Random(7)
    rows = [(h, rng.getrandbits(62), f"http://h{h}.test/{i}") for h in range(1, hosts + 1) for i in range(per_host)]
    async with db.transaction() as conn:
        async with conn.cursor().copy("COPY linkbase.urls (host_id, url_fp, url) FROM STDIN") as copy:
            for row in rows:
                await copy.write_row(row)
    async with db.connection() as conn:
        await conn.execute("ANALYZE linkbase.urls")
    return rows


async def test_a_batch_is_marked_fetched_by_key_probes_and_the_plan_settings_come_back(linkbase_db: Database) -> None:
    rows = await _fill(linkbase_db, 100, 40)
    picked = random.Random(3).sample(rows, 8)
    hosts, fps = [r[0] for r in picked], [r[1] for r in picked]
    async with linkbase_db.transaction() as conn:
        free = await conn.execute(("EXPLAIN " + seen._MARK_FETCHED).encode(), (hosts, fps))
        assert "Hash Join" in "\n".join(r[0] for r in await free.fetchall())  # planned freely: every partition read
        plan = await by_key_probes(conn, "EXPLAIN " + seen._MARK_FETCHED, (hosts, fps))
        text = "\n".join(r[0] for r in plan)
        assert "Nested Loop" in text and "Index Scan" in text  # a probe per key, in the partition holding it
        assert "Hash Join" not in text and "Merge Join" not in text
        settings = await conn.execute("SELECT current_setting('enable_hashjoin'), current_setting('enable_mergejoin')")
        assert await settings.fetchone() == ("on", "on")  # the statements after it are planned as before
        refs = [UrlRef(fp, url, f"h{h}.test", h, (h, fp)) for h, fp, url in picked]
        marked = await seen.ensure_urls(conn, refs, fetched=True)
    assert marked == set(fps)
    async with linkbase_db.connection() as conn:
        cur = await conn.execute("SELECT count(*) FILTER (WHERE fetched), count(*) FROM linkbase.urls")
        assert await cur.fetchone() == (8, len(rows))

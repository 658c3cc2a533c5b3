"""The baseline of ``bench.importance_transfers``: OPIC state as one PostgreSQL row per URL (Trawl's first layout).

Per consumed batch, one transaction locks the totals row, loads the rows of every page
the batch touches ``FOR UPDATE``, applies the visits in Python (the same sharing rule:
equal shares over the out-links, 15% to a virtual page paid out as O(1) dividends to
uncrawled pages) and upserts every touched row with one statement over arrays, then
sends an importance update per touched page. It is kept here, not in the service, only
to be measured against.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from libs.common.db.pool import Database
from libs.common.followed_links import followed
from libs.common.kafka.consumer import Record
from libs.common.kafka.producer import TopicProducer
from libs.common.topics import IMPORTANCE_UPDATES
from libs.common.url_keys import normalized_fingerprint, normalized_host
from libs.common.urls import normalize_url
from libs.common.wire import messages as pb

SCHEMA = """
CREATE TABLE IF NOT EXISTS rowstore_pages (
    url_fp bigint PRIMARY KEY, url text NOT NULL, host text NOT NULL, cash float8 NOT NULL DEFAULT 0,
    history float8 NOT NULL DEFAULT 0, crawled boolean NOT NULL DEFAULT false, mark float8 NOT NULL DEFAULT 0,
    visits integer NOT NULL DEFAULT 0, last_visit float8 NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS rowstore_totals (
    id smallint PRIMARY KEY, virtual float8 NOT NULL, dividend float8 NOT NULL, uncrawled bigint NOT NULL,
    history float8 NOT NULL);
INSERT INTO rowstore_totals VALUES (1, 100, 0, 0, 0) ON CONFLICT DO NOTHING;
"""


@dataclass
class Row:
    fp: int
    url: str
    host: str
    cash: float = 0.0
    history: float = 0.0
    crawled: bool = False
    mark: float = 0.0
    visits: int = 0
    last_visit: float = 0.0


class RowStoreHandler:
    def __init__(self, db: Database, producer: TopicProducer, virtual_share: float = 0.15) -> None:
        self._db = db
        self._producer = producer
        self._share = virtual_share

    async def setup(self) -> None:
        async with self._db.transaction() as conn:
            await conn.execute(SCHEMA)

    async def __call__(self, records: list[Record[Any]]) -> None:
        visits = []
        for record in records:
            msg: pb.PageLinks = record.value
            url = normalize_url(msg.url)
            fp = normalized_fingerprint(url)
            keys, urls = followed(msg, fp, True)
            visits.append((fp, url, keys, urls, msg.fetched_at_ms / 1000.0))
        async with self._db.transaction() as conn:
            cur = await conn.execute("SELECT virtual, dividend, uncrawled, history FROM rowstore_totals"
                                     " WHERE id = 1 FOR UPDATE")
            virtual, dividend, uncrawled, history = await cur.fetchone()  # type: ignore[misc]
            wanted = sorted({v[0] for v in visits} | {k for v in visits for k in v[2]})
            cur = await conn.execute(
                "SELECT url_fp, url, host, cash, history, crawled, mark, visits, last_visit FROM rowstore_pages"
                " WHERE url_fp = ANY(%s) ORDER BY url_fp FOR UPDATE", (wanted,))
            rows = {r[0]: Row(*r) for r in await cur.fetchall()}
            touched: dict[int, Row] = {}

            def get(fp: int, url: str) -> Row:
                nonlocal uncrawled
                row = rows.get(fp)
                if row is None:
                    row = rows[fp] = Row(fp, url, normalized_host(url), mark=dividend)
                    uncrawled += 1
                touched[fp] = row
                return row

            for fp, url, keys, urls, at in visits:
                page = get(fp, url)
                cash = page.cash + (0.0 if page.crawled else dividend - page.mark)
                if not page.crawled:
                    page.crawled = True
                    uncrawled -= 1
                page.cash, page.history, page.visits, page.last_visit = 0.0, page.history + cash, page.visits + 1, at
                history += cash
                n = len(keys)
                to_virtual = cash * self._share if n else cash
                share = (cash - to_virtual) / n if n else 0.0
                for key, target in zip(keys, urls, strict=True):
                    get(key, target).cash += share
                virtual += to_virtual
                if uncrawled > 0:
                    dividend += virtual / uncrawled
                    virtual = 0.0
            out = sorted(touched.values(), key=lambda r: r.fp)
            await conn.execute(
                "INSERT INTO rowstore_pages AS p (url_fp, url, host, cash, history, crawled, mark, visits, last_visit)"
                " SELECT * FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::float8[], %s::float8[],"
                "   %s::bool[], %s::float8[], %s::int[], %s::float8[])"
                " ON CONFLICT (url_fp) DO UPDATE SET cash = excluded.cash, history = excluded.history,"
                "   crawled = excluded.crawled, mark = excluded.mark, visits = excluded.visits,"
                "   last_visit = excluded.last_visit",
                ([r.fp for r in out], [r.url for r in out], [r.host for r in out], [r.cash for r in out],
                 [r.history for r in out], [r.crawled for r in out], [r.mark for r in out],
                 [r.visits for r in out], [r.last_visit for r in out]),
            )
            await conn.execute("UPDATE rowstore_totals SET virtual = %s, dividend = %s, uncrawled = %s, history = %s"
                               " WHERE id = 1", (virtual, dividend, uncrawled, history))
        by_host: dict[str, pb.ImportanceUpdates] = {}
        for r in out:
            cash = r.cash + (0.0 if r.crawled else dividend - r.mark)
            message = by_host.setdefault(r.host, pb.ImportanceUpdates(host=r.host))
            message.updates.add(url=r.url, host=r.host, cash=cash, history=r.history, importance=0.0)
        for host, message in by_host.items():
            self._producer.send(IMPORTANCE_UPDATES, host, message)
        await self._producer.flush()

"""Link base at scale: insert rate and "seen" checks with 1 million and then 10 million links stored.

One throwaway PostgreSQL (durable unless ``--fast``; shared buffers and WAL sized for the
machine, :data:`TUNING`, unless ``--untuned``), one migrated database. The stored
graph is bulk-loaded (COPY with the indexes dropped, then rebuilt: only the preload takes
this shortcut; then its indexes and URL rows are read into shared buffers, where a server
that grew the graph by crawling has them, unless ``--cold``), one database with ``--small``
and one with ``--large`` links, with the shape a crawl leaves: 20,000 hosts, 50 links per
fetched page, half of them to the host's 25 navigation pages and half to URLs seen nowhere
else. At each size it measures, through the service's own code:

- inserts: fresh page-links batches (``--pages`` pages of 50 links each; the pages are
  stored, never-fetched URLs; half of their links go to URLs already stored, half to new
  ones) through the handler's path, ``write_pipelined`` (rows of the next chunks built while
  one is written), once with the service's host groups written side by side
  (``TRAWL_LINKBASE_WRITE_GROUPS``) and once with one writer, the two taking turns going
  first: links per second of wall time, and per CPU-second of this process and of the
  PostgreSQL server's processes (read from /proc; less at the mercy of the machine's load
  than wall time); also other batches through ``LinkStore.write`` alone, rows built
  beforehand (the database side);
- seen checks: :func:`services.linkbase.seen.seen` on batches of 10,000 URLs, half stored
  and half not, URL checks per second (the plan is printed: primary-key index probes).

The baseline is the same measurement on the smaller graph, in the same run: the two graphs
are two databases on one server, preloaded first, then measured in alternation (small then
large, large then small, ...), so that a drift of the shared machine's speed falls on both;
the figure to read is how each rate holds up from the small to the large graph.

    .venv/bin/python -m bench.linkbase_scale [--small 1000000 --large 10000000] [--fast] [--cold] [--json]
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

from bench.harness import REPO, add_postgres_options, base_parser, fresh_database, machine, throwaway_postgres
from libs.common.db.migrations import apply_migrations
from libs.common.db.pool import Database
from libs.common.db.settings import DatabaseSettings
from libs.common.kafka.consumer import Record
from libs.common.settings import load_settings
from libs.common.topics import PAGE_LINKS
from libs.common.url_keys import normalized_fingerprint
from libs.common.wire import messages as pb
from libs.localinfra import LocalPostgres
from services.linkbase.batch import build_batch
from services.linkbase.handler import write_pipelined
from services.linkbase.host_budget import HostBudget
from services.linkbase.rows import UrlRef, host_id, resolve
from services.linkbase.seen import (
    SEEN_SQL,  # the query the service runs
    seen,
)
from services.linkbase.settings import LinkbaseSettings
from services.linkbase.store import LinkStore

MIGRATIONS = REPO / "services" / "linkbase" / "migrations"
HOSTS = 20_000
NAV = 25
LINKS_PER_PAGE = 50
SEEN_BATCH = 10_000
_SETTINGS = load_settings(LinkbaseSettings, os.environ)  # as the service reads them
CHUNK = _SETTINGS.write_chunk
GROUPS = _SETTINGS.write_groups
FETCHED_AT_MS = 1_700_000_000_000

# A server sized like a production one for this machine (24 GiB): the defaults (128 MB of
# shared buffers, checkpoints every 1 GB of WAL) make any random-key index of millions of rows
# spend its time evicting pages and writing full-page images after each checkpoint.
TUNING = {"shared_buffers": "2GB", "max_wal_size": "8GB", "checkpoint_timeout": "30min",
          "maintenance_work_mem": "512MB", "effective_cache_size": "8GB"}


@contextmanager
def tuned_postgres(fast: bool, tuned: bool = True) -> Iterator[LocalPostgres]:
    """The harness's throwaway server, restarted once with :data:`TUNING` (unless ``tuned`` is off)."""
    with throwaway_postgres(fast) as server:
        if tuned:
            with psycopg.connect(server.dsn("postgres"), autocommit=True) as conn:
                for name, value in TUNING.items():
                    conn.execute(f"ALTER SYSTEM SET {name} = '{value}'".encode())
            server.stop()
            server.ensure_started()
        yield server


# Indexes dropped during the bulk preload and rebuilt after it (names from migration 0003).
_DROP = [
    "ALTER TABLE linkbase.links DROP CONSTRAINT links_pk",
    "DROP INDEX linkbase.links_to_target",
    "ALTER TABLE linkbase.urls DROP CONSTRAINT urls_pk",
]
_REBUILD = [
    "ALTER TABLE linkbase.urls ADD CONSTRAINT urls_pk PRIMARY KEY (host_id, url_fp)",
    "ALTER TABLE linkbase.links ADD CONSTRAINT links_pk PRIMARY KEY (source_host_id, source_fp, target_fp)",
    "CREATE INDEX links_to_target ON linkbase.links (target_fp, source_fp)",
    "ANALYZE linkbase.urls",
    "ANALYZE linkbase.links",
]

# What a server that grew its link base by crawling has in shared buffers and the preload's
# shortcut leaves out (an index built by CREATE INDEX is written past them): every index, and
# the URL rows (link targets are probed there). Links' rows are only appended to: left out.
_PREWARM = """
SELECT count(pg_prewarm(c.oid)) FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
WHERE n.nspname = 'linkbase' AND (c.relkind = 'i' OR (c.relkind = 'r' AND c.relname NOT LIKE 'links%'))
"""


def host_name(h: int) -> str:
    return f"h{h}.test"


def page_url(h: int, page: int) -> str:
    return f"http://{host_name(h)}/p/{page}"


def nav_url(h: int, i: int) -> str:
    return f"http://{host_name(h)}/nav/{i}"


def new_url(h: int, page: int, i: int) -> str:
    return f"http://{host_name(h)}/a/{page}/{i}"


def stored_graph(first_page: int, pages: int) -> Iterator[tuple[int, int, list[int]]]:
    """Pages ``first_page`` .. of the stored graph: (host, page number, target fingerprints)."""
    for n in range(first_page, first_page + pages):
        h = n % HOSTS
        targets = [normalized_fingerprint(nav_url(h, i)) for i in range(NAV)]
        targets += [normalized_fingerprint(new_url(h, n, i)) for i in range(LINKS_PER_PAGE - NAV)]
        yield h, n, targets


def bulk_load(dsn: str, first_page: int, pages: int, prewarm: bool = True) -> float:
    """Adds ``pages`` fetched pages and their links and targets; returns the seconds it took.

    With ``prewarm``, then reads the indexes and URL rows into shared buffers (:data:`_PREWARM`).
    """
    started = time.perf_counter()
    hids = [host_id(host_name(h)) for h in range(HOSTS)]
    with psycopg.connect(dsn, autocommit=True) as conn, psycopg.connect(dsn, autocommit=True) as second:
        for statement in _DROP:
            conn.execute(statement.encode())
        if first_page == 0:
            with conn.cursor().copy("COPY linkbase.hosts (host_id, host, registered_domain) FROM STDIN") as copy:
                for h in range(HOSTS):
                    copy.write_row((hids[h], host_name(h), host_name(h)))
            with conn.cursor().copy(
                "COPY linkbase.urls (host_id, url_fp, url, depth, announce_state) FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["int8", "int8", "text", "int4", "int2"])
                for h in range(HOSTS):
                    for i in range(NAV):
                        copy.write_row((hids[h], normalized_fingerprint(nav_url(h, i)), nav_url(h, i), 1, 2))
        with conn.cursor().copy(
            "COPY linkbase.urls (host_id, url_fp, url, depth, announce_state, fetched, links_at) FROM STDIN"
            " (FORMAT BINARY)"
        ) as urls, second.cursor().copy(  # one COPY at a time per connection: links go through a second one
            "COPY linkbase.links (source_host_id, source_fp, target_fp, target_host_id, anchor, link_class)"
            " FROM STDIN (FORMAT BINARY)"
        ) as links:
            urls.set_types(["int8", "int8", "text", "int4", "int2", "bool", "timestamptz"])
            links.set_types(["int8", "int8", "int8", "int8", "text", "int2"])
            fetched = dt.datetime.fromtimestamp(FETCHED_AT_MS / 1000, tz=dt.UTC)
            for h, n, targets in stored_graph(first_page, pages):
                hid, source = hids[h], normalized_fingerprint(page_url(h, n))
                urls.write_row((hid, source, page_url(h, n), 1, 2, True, fetched))
                for i in range(NAV, LINKS_PER_PAGE):
                    urls.write_row((hid, targets[i], new_url(h, n, i - NAV), 2, 2, False, None))
                for target in targets:
                    links.write_row((hid, source, target, hid, "", 1))
        for statement in _REBUILD:
            conn.execute(statement.encode())
        if prewarm:
            conn.execute(b"CREATE EXTENSION IF NOT EXISTS pg_prewarm")
            conn.execute(_PREWARM.encode())
    return time.perf_counter() - started


def insert_batches(first_page: int, batches: int, pages: int, revisit: bool = False) -> list[list[Record[Any]]]:
    """Fresh page-links batches of stored, never-fetched URLs; half their links to stored URLs, half new.

    Spread (the default): page k fetches the first new target of stored page ``first_page + k``,
    so every page is on another host. ``revisit``: every batch has one page on each of the
    hosts 0 .. ``pages - 1`` (batch b fetches the b-th new target of the host's first stored
    page), as a crawl comes back to the sites it crawls: their navigation links recur.
    """
    out: list[list[Record[Any]]] = []
    n = first_page
    for b in range(batches):
        records: list[Record[Any]] = []
        for p in range(pages):
            h = p if revisit else n % HOSTS
            url = new_url(h, h, b) if revisit else new_url(h, n, 0)
            targets = [nav_url(h, i) for i in range(NAV)]
            targets += [f"http://{host_name(h)}/fresh/{n}/{i}" for i in range(LINKS_PER_PAGE - NAV)]
            links = [pb.Link(url=t, anchor="a", link_class=pb.LINK_CLASS_INTERNAL) for t in targets]
            records.append(Record(PAGE_LINKS, 0, p, "", pb.PageLinks(url=url, depth=2, links=links,
                                                                     fetched_at_ms=FETCHED_AT_MS), 0, None, None))
            n += 1
        out.append(records)
    return out


def seen_batches(stored_pages: int, batches: int, salt: int) -> list[list[UrlRef]]:
    """Batches of URLs to check, half stored (pages and their new targets), half never seen."""
    out: list[list[UrlRef]] = []
    step = max(1, stored_pages // (batches * SEEN_BATCH))
    n = salt % step
    for b in range(batches):
        refs: list[UrlRef] = []
        for i in range(SEEN_BATCH // 2):
            h = n % HOSTS
            refs.append(resolve(page_url(h, n) if i % 2 else new_url(h, n, 3)))
            refs.append(resolve(f"http://{host_name(h)}/never/{salt}/{b}/{i}"))
            n = (n + step) % stored_pages
        out.append(refs)
    return out


def _cpu_seconds(stat: str) -> float:
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) ": state, ppid, ...; utime, stime are 12, 13
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def postgres_cpu_seconds(postmaster: int) -> float:
    """CPU-seconds used so far by the server's processes (backends, WAL writer, checkpointer, ...)."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # the process ended
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        if ppid == postmaster or int(entry.name) == postmaster:
            total += _cpu_seconds(stat)
    return total


class Size:
    """One stored graph (its own database) and the figures measured on it."""

    def __init__(self, dsn: str, stored_pages: int, rounds: int, pages: int, seen_rounds: int, revisit: bool) -> None:
        self.stored_pages = stored_pages
        self.db = Database(DatabaseSettings(dsn=dsn, pool_max=GROUPS + 1), "bench-scale")
        self.store = LinkStore(self.db, HostBudget(_SETTINGS.max_urls_per_host))  # as the service wires it
        first = stored_pages - (3 * rounds + 1) * pages
        self.warm, *self.inserts = insert_batches(first, 3 * rounds + 1, pages, revisit)
        self.warm_seen, *self.checks = seen_batches(stored_pages, seen_rounds + 1, stored_pages + 7)
        self.rates: list[float] = []
        self.one_writer_rates: list[float] = []
        self.write_rates: list[float] = []
        self.cpu_rates: list[float] = []
        self.pg_cpu_rates: list[float] = []
        self.one_writer_pg_cpu_rates: list[float] = []
        self.check_rates: list[float] = []
        self.found = 0
        self.postmaster = 0

    async def warm_up(self) -> None:
        """Untimed: first connections, plans, caches."""
        await self.db.start()
        await write_pipelined(self.store, self.warm, CHUNK, GROUPS)
        async with self.db.connection() as conn:
            await seen(conn, self.warm_seen)
            cur = await conn.execute("SELECT pg_backend_pid()")
            row = await cur.fetchone()
            assert row is not None
        stat = (Path("/proc") / str(row[0]) / "stat").read_text()
        self.postmaster = int(stat[stat.rindex(")") + 2 :].split()[1])

    async def _handler_path(self, records: list[Record[Any]], groups: int) -> tuple[float, float, float]:
        """Links per second of wall time, per CPU-second of this process and of PostgreSQL."""
        resolve.cache_clear()
        links = sum(len(r.value.links) for r in records)
        pg_started = postgres_cpu_seconds(self.postmaster)
        started, cpu_started = time.perf_counter(), time.process_time()
        await write_pipelined(self.store, records, CHUNK, groups)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        pg_cpu = postgres_cpu_seconds(self.postmaster) - pg_started
        return links / elapsed, links / cpu, links / max(pg_cpu, 1e-9)

    async def insert(self, round_no: int) -> None:
        """One batch through the handler's path with host groups, one with one writer, one through the store alone.

        The two handler paths take turns going first.
        """
        grouped, single, alone = self.inserts[3 * round_no : 3 * round_no + 3]
        for groups in (GROUPS, 1) if round_no % 2 == 0 else (1, GROUPS):
            rate, cpu_rate, pg_rate = await self._handler_path(grouped if groups > 1 else single, groups)
            if groups > 1:
                self.rates.append(rate)
                self.cpu_rates.append(cpu_rate)
                self.pg_cpu_rates.append(pg_rate)
            else:
                self.one_writer_rates.append(rate)
                self.one_writer_pg_cpu_rates.append(pg_rate)
        batch = build_batch(alone)
        started = time.perf_counter()
        await self.store.write(batch)
        self.write_rates.append(sum(len(r.value.links) for r in alone) / (time.perf_counter() - started))
        print(f"  {self.stored_pages * LINKS_PER_PAGE:,} stored: insert {self.rates[-1]:,.0f} links/s with {GROUPS}"
              f" host groups, {self.one_writer_rates[-1]:,.0f} with one writer (store alone"
              f" {self.write_rates[-1]:,.0f}); load {os.getloadavg()[0]:.1f}", file=sys.stderr)

    async def check(self, round_no: int) -> None:
        refs = self.checks[round_no]
        async with self.db.connection() as conn:
            started = time.perf_counter()
            known = await seen(conn, refs)
            self.check_rates.append(len(refs) / (time.perf_counter() - started))
        self.found += len(known)

    async def figures(self) -> dict[str, Any]:
        refs = self.checks[0]
        async with self.db.connection() as conn:
            cur = await conn.execute(b"EXPLAIN " + SEEN_SQL.encode(), ([r.host_id for r in refs], [r.fp for r in refs]))
            plan = [row[0] for row in await cur.fetchall()]
            cur = await conn.execute(
                "SELECT (SELECT count(*) FROM linkbase.links), (SELECT count(*) FROM linkbase.urls)")
            row = await cur.fetchone()
            assert row is not None
        await self.db.stop()
        return {
            "stored_links": int(row[0]),
            "stored_urls": int(row[1]),
            "insert_links_per_s": _spread(self.rates),
            "insert_one_writer_links_per_s": _spread(self.one_writer_rates),
            "store_write_links_per_s": _spread(self.write_rates),
            "insert_links_per_cpu_second": statistics.median(self.cpu_rates),
            "insert_links_per_postgres_cpu_second": statistics.median(self.pg_cpu_rates),
            "insert_one_writer_links_per_postgres_cpu_second": statistics.median(self.one_writer_pg_cpu_rates),
            "seen_checks_per_s": {**_spread(self.check_rates),
                                  "found_share": self.found / (len(self.check_rates) * SEEN_BATCH)},
            "seen_plan_uses_index": any("Index" in line for line in plan)
            and not any("Seq Scan" in line for line in plan),
        }


def _spread(rates: list[float]) -> dict[str, float]:
    return {"median": statistics.median(rates), "min": min(rates), "max": max(rates), "count": len(rates)}


async def run(
    small: int, large: int, rounds: int, pages: int, seen_rounds: int, fast: bool, tuned: bool, revisit: bool,
    prewarm: bool = True,
) -> dict[str, Any]:
    results: dict[str, Any] = {"benchmark": "linkbase_scale", "workload": {
        "hosts": HOSTS, "links_per_page": LINKS_PER_PAGE, "insert_batches": rounds, "pages_per_batch": pages,
        "seen_batch": SEEN_BATCH, "write_chunk": CHUNK, "write_groups": GROUPS,
        "postgres": "fsync off" if fast else "durable (fsync on)",
        "tuning": TUNING if tuned else "defaults", "hosts_of_inserted_pages": "revisited" if revisit else "spread",
        "shared_buffers_after_preload": "prewarmed" if prewarm else "cold"},
        "sizes": []}
    with tuned_postgres(fast, tuned) as server, fresh_database(server, "bench_scale_small") as small_dsn, \
            fresh_database(server, "bench_scale_large") as large_dsn:
        sizes: list[Size] = []
        for dsn, links in ((small_dsn, small), (large_dsn, large)):
            apply_migrations(dsn, "linkbase", MIGRATIONS)
            seconds = await asyncio.to_thread(bulk_load, dsn, 0, links // LINKS_PER_PAGE, prewarm)
            print(f"  preloaded {links:,} links in {seconds:.0f} s", file=sys.stderr)
            sizes.append(Size(dsn, links // LINKS_PER_PAGE, rounds, pages, seen_rounds, revisit))
            results.setdefault("preload_seconds", []).append(round(seconds, 1))
        for size in sizes:
            await size.warm_up()
        # Alternate the two graphs (small, large; then large, small; ...) so that a drift of the
        # machine's speed (it is shared) falls on both alike.
        for round_no in range(max(rounds, seen_rounds)):
            order = sizes if round_no % 2 == 0 else sizes[::-1]
            for size in order:
                if round_no < rounds:
                    await size.insert(round_no)
                if round_no < seen_rounds:
                    await size.check(round_no)
        results["sizes"] = [await size.figures() for size in sizes]
    first, last = results["sizes"][0], results["sizes"][-1]
    results["insert_ratio_large_to_small"] = (last["insert_links_per_s"]["median"]
                                              / first["insert_links_per_s"]["median"])
    results["seen_ratio_large_to_small"] = last["seen_checks_per_s"]["median"] / first["seen_checks_per_s"]["median"]
    results["machine"] = machine()
    return results


def print_table(results: dict[str, Any]) -> None:
    print("linkbase_scale: inserts and seen checks as the stored graph grows (medians; baseline: the smaller graph)")
    print(f"  workload: {', '.join(f'{k}={v}' for k, v in results['workload'].items())}")
    print(f"  {'stored links':>14}  {'stored URLs':>12}  {'insert links/s':>15}  {'one writer':>11}"
          f"  {'store alone':>12}  {'links/CPU-s':>12}  {'links/PG CPU-s':>15}  {'seen checks/s':>14}  index plan")
    for size in results["sizes"]:
        inserts, checks = size["insert_links_per_s"], size["seen_checks_per_s"]["median"]
        one, alone = size["insert_one_writer_links_per_s"]["median"], size["store_write_links_per_s"]["median"]
        print(f"  {size['stored_links']:>14,}  {size['stored_urls']:>12,}  {inserts['median']:>15,.0f}  {one:>11,.0f}"
              f"  {alone:>12,.0f}  {size['insert_links_per_cpu_second']:>12,.0f}"
              f"  {size['insert_links_per_postgres_cpu_second']:>15,.0f}  {checks:>14,.0f}"
              f"  {'yes' if size['seen_plan_uses_index'] else 'NO'}")
        print(f"  {'':>14}  {'':>12}  {inserts['min']:>7,.0f}-{inserts['max']:<7,.0f}")
    print(f"  large / small: inserts {results['insert_ratio_large_to_small']:.2f}x, "
          f"seen checks {results['seen_ratio_large_to_small']:.2f}x")
    info = results["machine"]
    print(f"  machine: {info['cpus']} cpus, Python {info['python']}, load {info['load_average_1m_at_end']}")


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=1_000_000, help="Links stored at the first measurement.")
    parser.add_argument("--large", type=int, default=10_000_000, help="Links stored at the second measurement.")
    parser.add_argument("--rounds", type=int, default=5, help="Timed insert batches at each size.")
    parser.add_argument("--pages", type=int, default=500, help="Pages (of 50 links) per insert batch.")
    parser.add_argument("--seen-rounds", type=int, default=20, help="Timed seen-check batches at each size.")
    parser.add_argument("--untuned", action="store_true", help="Keep PostgreSQL's default memory and WAL settings.")
    parser.add_argument("--revisit", action="store_true",
                        help="Insert batches revisit the same hosts (their navigation links recur) instead of "
                             "putting every page on another host.")
    parser.add_argument("--cold", action="store_true",
                        help="Leave the preloaded graph out of shared buffers (no pg_prewarm after the preload).")
    add_postgres_options(parser)
    args = parser.parse_args()
    results = asyncio.run(run(args.small, args.large, args.rounds, args.pages, args.seen_rounds, args.fast,
                              not args.untuned, args.revisit, not args.cold))
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print_table(results)


if __name__ == "__main__":
    main()

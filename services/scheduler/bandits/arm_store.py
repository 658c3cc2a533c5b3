"""Persisted statistics of a crawl goal's sites (``scheduler.bandit_sites`` and ``bandit_pages``).

A site is an arm while it has a row in ``bandit_sites`` (the dispatcher registers the goal's
sites at start); pages of other hosts are never recorded, so a crawl without a goal pays one
empty join per batch. Three feeds, all idempotent and all inside the frontier's own
transactions:

- fetch outcomes (:func:`record_pulls`): a page whose fetch ended is one pull of its site,
  and a document if it was fetched; a redelivered outcome was already ignored by the
  frontier (it no longer matches the request), and a page is pulled at most once here;
- discoveries (:func:`credit_discoveries`): a URL that enters the frontier for the first
  time and names the page it was found on adds one new URL to that page's reward.
  The frontier admits a URL once, so a redelivered discovery adds nothing;
- link counts (:func:`credit_link_counts`): the external links a page carries (its reward
  under the goal ``external_links``), counted once per page: a redelivered count, or the
  count of a page fetched again, finds the page already counted and adds nothing.

``bandit_pages`` keeps every recorded page's rewards and pull order, from which the last
page rewards of a site (the recency mean) are read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from psycopg import AsyncConnection

from services.scheduler.bandits.allocator import ArmState


async def register_sites(conn: AsyncConnection, sites: Sequence[str]) -> None:
    await conn.execute(
        "INSERT INTO scheduler.bandit_sites (site) SELECT unnest(%s::text[]) ON CONFLICT (site) DO NOTHING",
        (sorted(set(sites)),),
    )


async def record_pulls(conn: AsyncConnection, pages: Sequence[tuple[int, str, bool]]) -> None:
    """``pages``: (URL fingerprint, host, fetched) of fetches that ended."""
    if not pages:
        return
    rows = sorted(pages)
    await conn.execute(
        "WITH t AS (SELECT * FROM unnest(%b::bigint[], %b::text[], %b::smallint[]) AS t(fp, site, doc)),"
        " pulled AS ("
        "  INSERT INTO scheduler.bandit_pages AS p (url_fp, site, seq, document)"
        "  SELECT t.fp, t.site, nextval('scheduler.bandit_seq'), t.doc"
        "  FROM t JOIN scheduler.bandit_sites s ON s.site = t.site ORDER BY t.fp"
        "  ON CONFLICT (url_fp) DO UPDATE SET seq = excluded.seq, document = excluded.document"
        "  WHERE p.seq IS NULL"
        "  RETURNING p.site, p.document"
        ")"
        " UPDATE scheduler.bandit_sites s SET pulls = s.pulls + a.n, documents = s.documents + a.d,"
        "   updated_at = now()"
        " FROM (SELECT site, count(*) AS n, sum(document) AS d FROM pulled GROUP BY site) a"
        " WHERE s.site = a.site",
        ([r[0] for r in rows], [r[1] for r in rows], [1 if r[2] else 0 for r in rows]),
    )


async def credit_discoveries(conn: AsyncConnection, found_on: Mapping[int, tuple[str, int]]) -> None:
    """``found_on``: page fingerprint -> (its host, new URLs first discovered on it)."""
    if not found_on:
        return
    fps = sorted(found_on)
    await conn.execute(
        "WITH t AS (SELECT * FROM unnest(%s::bigint[], %s::text[], %s::int[]) AS t(fp, site, n)),"
        " credited AS ("
        "  INSERT INTO scheduler.bandit_pages AS p (url_fp, site, new_urls)"
        "  SELECT t.fp, t.site, t.n FROM t JOIN scheduler.bandit_sites s ON s.site = t.site ORDER BY t.fp"
        "  ON CONFLICT (url_fp) DO UPDATE SET new_urls = p.new_urls + excluded.new_urls"
        "  RETURNING p.url_fp, p.site, p.new_urls"
        ")"
        " UPDATE scheduler.bandit_sites s SET new_urls = s.new_urls + a.n,"
        "   new_urls_max = greatest(s.new_urls_max, a.mx), updated_at = now()"
        " FROM (SELECT c.site, sum(t.n) AS n, max(c.new_urls) AS mx"
        "       FROM credited c JOIN t ON t.fp = c.url_fp GROUP BY c.site) a"
        " WHERE s.site = a.site",
        (fps, [found_on[fp][0] for fp in fps], [found_on[fp][1] for fp in fps]),
    )


async def credit_link_counts(conn: AsyncConnection, external: Mapping[int, tuple[str, int]]) -> None:
    """``external``: page fingerprint -> (its host, external links on it)."""
    if not external:
        return
    fps = sorted(external)
    await conn.execute(
        "WITH t AS (SELECT * FROM unnest(%s::bigint[], %s::text[], %s::int[]) AS t(fp, site, n)),"
        " counted AS ("
        "  INSERT INTO scheduler.bandit_pages AS p (url_fp, site, external_links)"
        "  SELECT t.fp, t.site, t.n FROM t JOIN scheduler.bandit_sites s ON s.site = t.site ORDER BY t.fp"
        "  ON CONFLICT (url_fp) DO UPDATE SET external_links = excluded.external_links"
        "  WHERE p.external_links IS NULL"
        "  RETURNING p.site, p.external_links"
        ")"
        " UPDATE scheduler.bandit_sites s SET external_links = s.external_links + a.n,"
        "   external_links_max = greatest(s.external_links_max, a.mx), updated_at = now()"
        " FROM (SELECT site, sum(external_links) AS n, max(external_links) AS mx FROM counted GROUP BY site) a"
        " WHERE s.site = a.site",
        (fps, [external[fp][0] for fp in fps], [max(0, external[fp][1]) for fp in fps]),
    )


# Per goal: the site's reward total, its largest page reward, and a page's reward (bandit_pages p).
REWARD_COLUMNS: dict[str, tuple[str, str, str]] = {
    "documents": ("s.documents", "least(s.documents, 1)", "p.document"),
    "new_urls": ("s.new_urls", "s.new_urls_max", "p.new_urls"),
    "external_links": ("s.external_links", "s.external_links_max", "coalesce(p.external_links, 0)"),
}


async def arm_states(conn: AsyncConnection, sites: Sequence[str], goal: str, recent: int) -> list[ArmState]:
    """The registered ``sites`` with their pulls, pages in flight, ``goal`` rewards and last page rewards."""
    total, largest, page = REWARD_COLUMNS[goal]  # a fixed SQL expression per goal, never the caller's text
    cur = await conn.execute(
        "SELECT s.site, s.pulls, coalesce(h.in_flight, 0),"
        f"  {total}, {largest},"
        "  EXISTS (SELECT 1 FROM scheduler.frontier f WHERE f.host = s.site AND f.status = 'queued'),"
        f"  ARRAY(SELECT {page}"
        "        FROM scheduler.bandit_pages p"
        "        WHERE p.site = s.site AND p.seq IS NOT NULL ORDER BY p.seq DESC LIMIT %(recent)s)"
        " FROM scheduler.bandit_sites s LEFT JOIN scheduler.hosts h ON h.host = s.site"
        " WHERE s.site = ANY(%(sites)s)",
        {"recent": recent, "sites": list(sites)},
    )
    return [
        ArmState(
            site=str(site),
            pulls=int(pulls),
            in_flight=int(in_flight),
            reward_sum=float(reward),
            reward_max=float(largest_reward),
            recent=tuple(float(r) for r in reversed(last)),
            has_work=bool(has_work),
        )
        for site, pulls, in_flight, reward, largest_reward, has_work, last in await cur.fetchall()
    ]

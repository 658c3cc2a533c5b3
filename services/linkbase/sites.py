"""Sites: BeeBot's seeds (name, short name, start URL), a host's summary, a site's external links.

A seed site is registered with its start URL; the start URL gets a row at depth 0 and is
announced on trawl.discovered-urls (as a seed) by the outbox. A host's summary counts its
links up to :data:`COUNT_CAP` (a host's rows are one partition, but a huge host has
millions). External links are paged by primary key (source host, source page, target), so
each page costs one index range scan per host of the site.
"""

from __future__ import annotations

from dataclasses import dataclass

from libs.common.db.pool import Database
from libs.common.urls import InvalidUrl, registered_domain
from libs.common.wire import linkbase as lb_pb
from libs.common.wire import messages as pb
from services.linkbase.rows import TEXT_LIMIT, clean_text, host_id, resolve

COUNT_CAP = 1_000_000
TOP_PATHS = 10

_UPSERT_HOST = """
INSERT INTO linkbase.hosts (host_id, host, registered_domain) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING
"""
_UPSERT_SEED = """
INSERT INTO linkbase.seeds (host_id, name, short_name, start_url) VALUES (%s, %s, %s, %s)
ON CONFLICT (host_id) DO UPDATE SET name = excluded.name, short_name = excluded.short_name,
                                    start_url = excluded.start_url
"""
_SEED_URL = """
INSERT INTO linkbase.urls AS u (host_id, url_fp, url, depth, announce_state) VALUES (%s, %s, %s, 0, 1)
ON CONFLICT (host_id, url_fp) DO UPDATE SET depth = 0, announce_state = GREATEST(u.announce_state, 1)
WHERE u.depth IS DISTINCT FROM 0 OR u.announce_state = 0
"""

_HOST = f"""
SELECT h.host, h.registered_domain, h.available, (extract(epoch FROM h.availability_at) * 1000)::bigint,
       (extract(epoch FROM h.first_seen) * 1000)::bigint, h.pages_fetched,
       (SELECT count(*) FROM (SELECT 1 FROM linkbase.urls WHERE host_id = h.host_id LIMIT {COUNT_CAP}) AS u),
       (SELECT count(*) FILTER (WHERE link_class = 1) FROM (SELECT link_class FROM linkbase.links
            WHERE source_host_id = h.host_id LIMIT {COUNT_CAP}) AS l),
       (SELECT count(*) FILTER (WHERE link_class = 2) FROM (SELECT link_class FROM linkbase.links
            WHERE source_host_id = h.host_id LIMIT {COUNT_CAP}) AS l),
       (SELECT count(*) FROM (SELECT 1 FROM linkbase.bad_links WHERE source_host_id = h.host_id
            LIMIT {COUNT_CAP}) AS b),
       (SELECT count(*) FILTER (WHERE dup_state = 1) FROM linkbase.urls WHERE host_id = h.host_id AND fetched),
       (SELECT count(*) FILTER (WHERE dup_state = 2) FROM linkbase.urls WHERE host_id = h.host_id AND fetched),
       s.name, s.short_name, s.start_url
FROM linkbase.hosts AS h LEFT JOIN linkbase.seeds AS s ON s.host_id = h.host_id
WHERE h.host_id = %s
"""
_PATHS = """
SELECT path_key, judged, duplicates FROM linkbase.path_stats WHERE host_id = %s AND duplicates > 0
ORDER BY duplicates DESC, path_key LIMIT %s
"""
_SITE_HOSTS = "SELECT host_id FROM linkbase.hosts WHERE host_id = %s OR registered_domain = %s"

_EXTERNAL = """
SELECT l.source_host_id, l.source_fp, l.target_fp, s.url, t.url, l.anchor, l.nofollow, l.context
FROM linkbase.links AS l
JOIN linkbase.urls AS s ON s.host_id = l.source_host_id AND s.url_fp = l.source_fp
JOIN linkbase.urls AS t ON t.host_id = l.target_host_id AND t.url_fp = l.target_fp
{target_join}
WHERE l.source_host_id = ANY(%(hosts)s) AND l.link_class = 2
  AND (l.source_host_id, l.source_fp, l.target_fp) > (%(h)s, %(s)s, %(t)s)
  {filters}
ORDER BY l.source_host_id, l.source_fp, l.target_fp
LIMIT %(limit)s
"""


class BadSiteToken(ValueError):
    """The page token was not produced by GetExternalLinks."""


@dataclass(frozen=True)
class SiteRequest:
    site: str
    page_size: int
    token: str
    target_domain: str
    anchor_contains: str
    followable_only: bool


class SiteBook:
    """Seed registration and the per-host / per-site reads."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add_sites(self, sites: list[lb_pb.Site]) -> lb_pb.AddSitesResponse:
        reply = lb_pb.AddSitesResponse()
        rows = []
        for site in sites:
            try:
                ref = resolve(site.start_url)
            except InvalidUrl as exc:
                reply.rejected.append(lb_pb.RejectedSite(start_url=site.start_url[:2048], reason=exc.reason))
                continue
            name = clean_text(site.name, TEXT_LIMIT) or ref.host
            short = clean_text(site.short_name, 200) or name
            rows.append((ref, name, short))
        async with self._db.transaction() as conn:
            for ref, name, short in sorted(rows, key=lambda r: r[0].key):
                await conn.execute(_UPSERT_HOST, (ref.host_id, ref.host, registered_domain(ref.host)))
                await conn.execute(_UPSERT_SEED, (ref.host_id, name, short, ref.url))
                await conn.execute(_SEED_URL, (ref.host_id, ref.fp, ref.url))
        reply.accepted = len(rows)
        return reply

    async def host_summary(self, host: str) -> lb_pb.HostSummary | None:
        hid = host_id(host)
        async with self._db.connection() as conn:
            cur = await conn.execute(_HOST, (hid,))
            row = await cur.fetchone()
            if row is None:
                return None
            cur = await conn.execute(_PATHS, (hid, TOP_PATHS))
            paths = await cur.fetchall()
        (name, domain, available, availability_ms, first_seen_ms, pages, urls, internal, external, bad, exact, near,
         seed_name, seed_short, seed_url) = row
        summary = lb_pb.HostSummary(
            host=name, registered_domain=domain, available=available, availability_at_ms=availability_ms or 0,
            first_seen_ms=first_seen_ms or 0, pages_fetched=pages, urls_known=urls, internal_links=internal,
            external_links=external, bad_links=bad, duplicates=exact, near_duplicates=near,
            paths=[lb_pb.PathDuplicates(path_key=p, judged=j, duplicates=d) for p, j, d in paths],
        )
        if seed_url:
            summary.seed.CopyFrom(lb_pb.Site(name=seed_name, short_name=seed_short, start_url=seed_url))
        return summary

    async def external_links(self, request: SiteRequest) -> tuple[list[lb_pb.GraphLink], str] | None:
        """One page of the site's external links and the next token; None for an unknown site."""
        after = _parse_token(request.token)
        site = request.site.strip().lower().rstrip(".")
        filters, params = [], {}
        target_join = ""
        if request.target_domain:
            target_join = "JOIN linkbase.hosts AS th ON th.host_id = l.target_host_id"
            filters.append("AND th.registered_domain = %(domain)s")
            params["domain"] = request.target_domain.strip().lower()
        if request.anchor_contains:
            filters.append("AND (strpos(lower(l.anchor), %(needle)s) > 0 OR strpos(lower(l.context), %(needle)s) > 0)")
            params["needle"] = request.anchor_contains.lower()
        if request.followable_only:
            filters.append("AND NOT l.nofollow")
        async with self._db.connection() as conn:
            cur = await conn.execute(_SITE_HOSTS, (host_id(site), site))
            hosts = sorted(h for (h,) in await cur.fetchall())
            if not hosts:
                return None
            sql = _EXTERNAL.format(target_join=target_join, filters=" ".join(filters))
            cur = await conn.execute(sql, {"hosts": hosts, "h": after[0], "s": after[1], "t": after[2],
                                           "limit": request.page_size + 1, **params})
            rows = await cur.fetchall()
        links = [
            lb_pb.GraphLink(source_url=src, target_url=dst, anchor=anchor, link_class=pb.LINK_CLASS_EXTERNAL,
                            nofollow=nofollow, context=context)
            for _h, _s, _t, src, dst, anchor, nofollow, context in rows[: request.page_size]
        ]
        token = ""
        if len(rows) > request.page_size:
            last = rows[request.page_size - 1]
            token = f"{last[0]}:{last[1]}:{last[2]}"
        return links, token


_START = (-(2**63), -(2**63), -(2**63))


def _parse_token(token: str) -> tuple[int, int, int]:
    if not token:
        return _START
    try:
        h, s, t = (int(part) for part in token.split(":"))
    except ValueError:
        raise BadSiteToken(f"bad page token {token[:100]!r}") from None
    if not all(-(2**63) <= v < 2**63 for v in (h, s, t)):
        raise BadSiteToken(f"bad page token {token[:100]!r}")
    return h, s, t

"""Reads of the link base behind the gRPC API: one URL, and its in- and out-links by keyset pages.

Pages are ordered by fingerprint and continue after the last fingerprint returned, so
each page costs one index range scan however deep the client pages. Out-links list the
page's internal and external links first, then its bad links (token ``bad:<hash>``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from libs.common.db.pool import Database
from libs.common.url_keys import trap_path_key
from libs.common.wire import linkbase as lb_pb
from libs.common.wire import messages as pb
from services.linkbase.rows import UrlRef

# Counting a hub's in-links exactly would scan millions of index entries: count up to this.
IN_LINK_COUNT_CAP = 1_000_000
_BAD_TOKEN = "bad:"

# Every query names the URL's host, so it reads one partition; in-links are the exception
# (indexed by target in every partition).
_SELECT_URL = f"""
SELECT u.url, COALESCE(h.host, ''), u.depth, u.fetched, u.http_status,
       (extract(epoch FROM u.fetched_at) * 1000)::bigint, u.content_fp, COALESCE(u.duplicate_of, u.near_duplicate_of),
       (extract(epoch FROM u.published_at) * 1000)::bigint, u.title,
       (extract(epoch FROM u.first_seen) * 1000)::bigint, u.last_fetch_status,
       (SELECT count(*) FROM (SELECT 1 FROM linkbase.links WHERE target_fp = u.url_fp
                              LIMIT {IN_LINK_COUNT_CAP}) AS i),
       (SELECT count(*) FROM linkbase.links WHERE source_host_id = u.host_id AND source_fp = u.url_fp)
       + (SELECT count(*) FROM linkbase.bad_links WHERE source_host_id = u.host_id AND source_fp = u.url_fp),
       u.dup_state, u.similarity, src.url
FROM linkbase.urls AS u
LEFT JOIN linkbase.hosts AS h ON h.host_id = u.host_id
LEFT JOIN linkbase.urls AS src ON src.host_id = u.discovered_from_host_id AND src.url_fp = u.discovered_from_fp
WHERE u.host_id = %s AND u.url_fp = %s
"""

_URL_EXISTS = "SELECT url FROM linkbase.urls WHERE host_id = %s AND url_fp = %s"

_IN_LINKS = """
SELECT l.source_fp, s.url, l.anchor, l.link_class, l.nofollow, l.context
FROM linkbase.links AS l JOIN linkbase.urls AS s ON s.host_id = l.source_host_id AND s.url_fp = l.source_fp
WHERE l.target_fp = %s {after}
ORDER BY l.source_fp LIMIT %s
"""

_OUT_LINKS = """
SELECT l.target_fp, t.url, l.anchor, l.link_class, l.nofollow, l.context
FROM linkbase.links AS l JOIN linkbase.urls AS t ON t.host_id = l.target_host_id AND t.url_fp = l.target_fp
WHERE l.source_host_id = %s AND l.source_fp = %s {after}
ORDER BY l.target_fp LIMIT %s
"""

_BAD_LINKS = """
SELECT href_hash, href, anchor, reason FROM linkbase.bad_links
WHERE source_host_id = %s AND source_fp = %s {after}
ORDER BY href_hash LIMIT %s
"""

_DUPLICATE_KINDS = {None: pb.DUPLICATE_KIND_UNSPECIFIED, 0: pb.DUPLICATE_KIND_UNSPECIFIED,
                    1: pb.DUPLICATE_KIND_EXACT, 2: pb.DUPLICATE_KIND_NEAR}


class BadPageToken(ValueError):
    """The page token was not produced by this API."""


@dataclass(frozen=True)
class LinkPage:
    links: list[lb_pb.GraphLink]
    next_token: str


def _after(column: str, token: int | None) -> tuple[str, tuple[int, ...]]:
    return ("", ()) if token is None else (f"AND {column} > %s", (token,))


def parse_fp(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise BadPageToken(f"bad page token {text!r}") from None
    if not -(2**63) <= value < 2**63:
        raise BadPageToken(f"bad page token {text!r}")
    return value


class GraphReader:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def url_record(self, ref: UrlRef) -> lb_pb.UrlRecord | None:
        async with self._db.connection() as conn:
            cur = await conn.execute(_SELECT_URL, ref.key)
            row = await cur.fetchone()
        if row is None:
            return None
        (url, host, depth, fetched, http_status, fetched_ms, content_fp, duplicate_of, published_ms, title,
         first_seen_ms, last_status, in_count, out_count, dup_state, similarity, source) = row
        return lb_pb.UrlRecord(
            url=url,
            host=host,
            depth=-1 if depth is None else depth,
            fetched=fetched,
            http_status=http_status or 0,
            fetched_at_ms=fetched_ms or 0,
            content_fingerprint=content_fp or "",
            duplicate_of=duplicate_of or "",
            published_at_ms=published_ms or 0,
            title=title or "",
            first_seen_ms=first_seen_ms or 0,
            in_link_count=in_count,
            out_link_count=out_count,
            last_fetch_status=last_status or pb.FETCH_STATUS_UNSPECIFIED,
            duplicate_kind=_DUPLICATE_KINDS.get(dup_state, pb.DUPLICATE_KIND_UNSPECIFIED),
            similarity=similarity or 0.0,
            discovered_from=source or "",
            path_key=trap_path_key(url),
        )

    async def known(self, ref: UrlRef) -> str | None:
        """The stored URL of ``ref``, or None when the link base never saw it."""
        async with self._db.connection() as conn:
            cur = await conn.execute(_URL_EXISTS, ref.key)
            row = await cur.fetchone()
        return None if row is None else str(row[0])

    async def in_links(self, ref: UrlRef, url: str, page_size: int, token: str) -> LinkPage:
        after = parse_fp(token) if token else None
        clause, args = _after("l.source_fp", after)
        async with self._db.connection() as conn:
            cur = await conn.execute(_IN_LINKS.format(after=clause), (ref.fp, *args, page_size + 1))
            rows = await cur.fetchall()
        links = [
            lb_pb.GraphLink(source_url=src, target_url=url, anchor=anchor, link_class=cls, nofollow=nofollow,
                            context=context)
            for _fp, src, anchor, cls, nofollow, context in rows[:page_size]
        ]
        return LinkPage(links, str(rows[page_size - 1][0]) if len(rows) > page_size else "")

    async def out_links(self, ref: UrlRef, url: str, page_size: int, token: str) -> LinkPage:
        in_bad_phase = token.startswith(_BAD_TOKEN)
        links: list[lb_pb.GraphLink] = []
        async with self._db.connection() as conn:
            last_good: int | None = None
            if not in_bad_phase:
                clause, args = _after("l.target_fp", parse_fp(token) if token else None)
                cur = await conn.execute(_OUT_LINKS.format(after=clause), (*ref.key, *args, page_size + 1))
                rows = await cur.fetchall()
                if len(rows) > page_size:
                    return LinkPage(_good_links(url, rows[:page_size]), str(rows[page_size - 1][0]))
                links = _good_links(url, rows)
                last_good = rows[-1][0] if rows else None
            bad_after = parse_fp(token.removeprefix(_BAD_TOKEN)) if in_bad_phase else None
            room = page_size - len(links)
            clause, args = _after("href_hash", bad_after)
            cur = await conn.execute(_BAD_LINKS.format(after=clause), (*ref.key, *args, room + 1))
            bad_rows = await cur.fetchall()
        included = bad_rows[:room]
        links.extend(
            lb_pb.GraphLink(source_url=url, target_url=href, anchor=anchor, link_class=pb.LINK_CLASS_BAD,
                            bad_reason=reason)
            for _hash, href, anchor, reason in included
        )
        if len(bad_rows) <= room:
            return LinkPage(links, "")
        if included:
            return LinkPage(links, f"{_BAD_TOKEN}{included[-1][0]}")
        return LinkPage(links, str(last_good))


def _good_links(url: str, rows: list[tuple[Any, ...]]) -> list[lb_pb.GraphLink]:
    return [
        lb_pb.GraphLink(source_url=url, target_url=target, anchor=anchor, link_class=cls, nofollow=nofollow,
                        context=context)
        for _fp, target, anchor, cls, nofollow, context in rows
    ]

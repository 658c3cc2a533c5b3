-- The link base's read views: what other services may read of its state (they share the
-- database, never the tables, whose layout is the link base's own to change). Every read
-- view is named v_<what>_v<version>: its columns are only ever added; a change of meaning
-- makes a new version beside it, and the old one goes when no reader is left.
ALTER VIEW linkbase.urls_v1 RENAME TO v_urls_v1;

-- Fetch outcomes of a URL (the scheduler's URL report). Filter by host and url_fp: the
-- host finds the partition.
CREATE VIEW linkbase.v_fetch_history_v1 AS
SELECT h.host, f.url_fp, f.request_id, f.attempt, f.status, f.http_status, f.fetched_at, f.elapsed_ms, f.error
FROM linkbase.fetch_history AS f
JOIN linkbase.hosts AS h ON h.host_id = f.host_id;

-- Content versions of a page (the scheduler's change rates). Filter by host and url_fp.
CREATE VIEW linkbase.v_page_versions_v1 AS
SELECT h.host, v.url_fp, v.fetched_at, v.content_fp, v.published_at
FROM linkbase.page_versions AS v
JOIN linkbase.hosts AS h ON h.host_id = v.host_id;

-- Pages with an extracted publish date, with the URL of the page each was discovered from
-- (null for a seed): the appearance history of items found on a hub's first fetch.
CREATE VIEW linkbase.v_published_pages_v1 AS
SELECT u.url, u.published_at, src.url AS discovered_from
FROM linkbase.urls AS u
LEFT JOIN linkbase.urls AS src ON src.host_id = u.discovered_from_host_id AND src.url_fp = u.discovered_from_fp
WHERE u.published_at IS NOT NULL;

-- Children a re-fetch of a hub revealed, with the hub's previous and current fetch times
-- and the child's extracted publish date: the publish-time history.
CREATE VIEW linkbase.v_revealed_children_v1 AS
SELECT hub.url AS hub_url, child.url AS child_url, child.published_at AS child_published_at,
       p.previous_fetch_at, p.fetched_at
FROM linkbase.publish_history AS p
JOIN linkbase.urls AS hub ON hub.host_id = p.hub_host_id AND hub.url_fp = p.hub_fp
JOIN linkbase.urls AS child ON child.host_id = p.child_host_id AND child.url_fp = p.child_fp;

-- The scheduler's read views: what operators' tools and other services may read of its state
-- (they share the database, never the tables). Every read view is named v_<what>_v<version>:
-- its columns are only ever added; a change of meaning makes a new version beside it.

-- Each known URL's place in the frontier: its status ('queued', 'in_flight', 'fetched',
-- 'blocked', 'failed', 'dropped') and, once fetched, the order of its first fetch.
CREATE VIEW scheduler.v_frontier_v1 AS
SELECT f.url_fp, f.url, f.host, f.status, f.fetch_seq, f.http_status
FROM scheduler.frontier AS f;

-- The hosts the scheduler knows.
CREATE VIEW scheduler.v_hosts_v1 AS
SELECT h.host
FROM scheduler.hosts AS h;

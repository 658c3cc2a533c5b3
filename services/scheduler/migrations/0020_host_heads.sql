-- Host heads: each host row names its best queued URL (priority DESC, url_fp; whatever its
-- next_fetch_at), so that a dispatch round reads the free hosts' heads best first through one
-- index (hosts_heads) instead of probing every free host's queued URLs and sorting them all.
--
-- Heads are kept exact by the dispatch round (services/scheduler/frontier/store.py): it
-- recomputes the heads of the hosts it dispatched, and of the hosts named in host_heads_stale.
-- Every other change to a host's queued URLs (a URL queued, requeued, re-weighed, deleted)
-- names the host there, through the statement triggers below, whoever writes the frontier:
-- an insert only, so writers never wait on a host row for it.
ALTER TABLE scheduler.hosts ADD COLUMN head_fp bigint;
ALTER TABLE scheduler.hosts ADD COLUMN head_priority double precision;
ALTER TABLE scheduler.hosts ADD COLUMN head_due_at timestamptz;
CREATE INDEX hosts_heads ON scheduler.hosts (head_priority DESC, head_fp) WHERE head_fp IS NOT NULL AND in_flight = 0;
-- Heads not yet due (a retry's backoff) are few: their hosts' due URLs are probed one by one.
CREATE INDEX hosts_heads_due ON scheduler.hosts (head_due_at) WHERE head_fp IS NOT NULL;

CREATE TABLE scheduler.host_heads_stale (
    host       text NOT NULL,
    partition  integer NOT NULL
);

CREATE FUNCTION scheduler.heads_stale_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO scheduler.host_heads_stale (host, partition)
    SELECT h.host, h.partition FROM scheduler.hosts h
    WHERE h.host IN (SELECT n.host FROM new_rows n WHERE n.status = 'queued');
    RETURN NULL;
END $$;

-- A URL taken by a dispatch round (queued -> in_flight) is left out: the round refreshes its hosts.
CREATE FUNCTION scheduler.heads_stale_after_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO scheduler.host_heads_stale (host, partition)
    SELECT h.host, h.partition FROM scheduler.hosts h
    WHERE h.host IN (
        SELECT n.host FROM new_rows n JOIN old_rows o ON o.url_fp = n.url_fp
        WHERE (n.status = 'queued' OR o.status = 'queued')
          AND NOT (o.status = 'queued' AND n.status = 'in_flight')
          AND (n.status <> o.status OR n.priority <> o.priority OR n.next_fetch_at <> o.next_fetch_at
               OR n.host <> o.host)
        UNION
        SELECT o.host FROM new_rows n JOIN old_rows o ON o.url_fp = n.url_fp
        WHERE o.status = 'queued' AND n.host <> o.host
    );
    RETURN NULL;
END $$;

CREATE FUNCTION scheduler.heads_stale_after_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO scheduler.host_heads_stale (host, partition)
    SELECT h.host, h.partition FROM scheduler.hosts h
    WHERE h.host IN (SELECT o.host FROM old_rows o WHERE o.status = 'queued');
    RETURN NULL;
END $$;

CREATE TRIGGER frontier_heads_insert AFTER INSERT ON scheduler.frontier
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION scheduler.heads_stale_after_insert();
CREATE TRIGGER frontier_heads_update AFTER UPDATE ON scheduler.frontier
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION scheduler.heads_stale_after_update();
CREATE TRIGGER frontier_heads_delete AFTER DELETE ON scheduler.frontier
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION scheduler.heads_stale_after_delete();

-- The heads of what is queued already.
UPDATE scheduler.hosts h SET head_fp = b.url_fp, head_priority = b.priority, head_due_at = b.next_fetch_at
FROM (
    SELECT DISTINCT ON (host) host, url_fp, priority, next_fetch_at FROM scheduler.frontier
    WHERE status = 'queued' ORDER BY host, priority DESC, url_fp
) b
WHERE h.host = b.host;

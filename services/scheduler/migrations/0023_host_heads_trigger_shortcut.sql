-- The update trigger of 0020 joins its two transition tables whatever the statement: applying a
-- batch of fetch outcomes (in_flight -> fetched, failed, ...) paid a hash join of every row to
-- find none. A URL's host can only go stale when the URL is queued before or after the update,
-- so a statement with no queued row on either side names no host: the join is skipped.
CREATE OR REPLACE FUNCTION scheduler.heads_stale_after_update() RETURNS trigger LANGUAGE plpgsql
SET enable_nestloop = off AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM new_rows WHERE status = 'queued')
       AND NOT EXISTS (SELECT 1 FROM old_rows WHERE status = 'queued') THEN
        RETURN NULL;
    END IF;
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

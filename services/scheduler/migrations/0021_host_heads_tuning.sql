-- The update trigger of 0020 joins its two transition tables, which have no statistics: the
-- planner's nested loop made a 5,000-row dispatch statement spend seconds there. A hash join.
ALTER FUNCTION scheduler.heads_stale_after_update() SET enable_nestloop = off;
-- Free hosts are found through hosts_heads now: hosts_free only cost every host update an index entry.
DROP INDEX scheduler.hosts_free;

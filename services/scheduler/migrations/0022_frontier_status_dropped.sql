-- Every status change of a URL added an entry to frontier_status, the index of every URL by status,
-- and no frequent query reads it: dispatch rounds, leases and the in-flight count read the partial
-- indexes frontier_ready, frontier_revisits and frontier_in_flight; counts of all statuses (metrics,
-- the admin API, reports) read the table.
DROP INDEX IF EXISTS scheduler.frontier_status;

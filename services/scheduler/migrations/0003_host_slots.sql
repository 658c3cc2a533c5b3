-- Large hosts split across fetchers (site partitioning): a host with slots > 1 may have that
-- many requests in flight (one per path group, each keyed host#group), their starts spaced
-- at least gap_seconds apart over all groups (the host's politeness gap, as the fetcher
-- last reported it). Every other host keeps slots = 1: one request in flight, as before.
ALTER TABLE scheduler.hosts ADD COLUMN slots integer NOT NULL DEFAULT 1;
ALTER TABLE scheduler.hosts ADD COLUMN gap_seconds double precision;  -- NULL until an outcome reported it
CREATE INDEX hosts_shared ON scheduler.hosts (partition, next_allowed_at) WHERE slots > 1;
